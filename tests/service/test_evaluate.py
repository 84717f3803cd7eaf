"""Tests for the EVALUATE phase of ``LocalService`` (spec §2.1, §2.2, §2.5; test ideas 53-64).

Covered: 53 (per-turn vs overall results, typed value, userId), 54 (failed inference), 55 (unknown evaluator
skipped), 56 (registry error), 57 (per-case failures with exact messages), 58 (execution traces and context
messages), 46/47 (expected-runner cases), 30/31 (trace-mode expecteds), scenario placeholders, case-level rubrics,
``evaluatorName`` routing, criterion materialisation, non-finite scores, 62 (metric extension resolution:
unknown compare names and ``None`` metrics raise ``resolve metric extensions``; a registered compare is used),
63 (a ``None`` inference result raises ``inference result is nil`` after the after-set callbacks ran) and 64
(nothing is saved). Go panics on a nil evaluator result or a nil per-invocation entry; here those, and entries
of the wrong type, fail the case. Aggregation (59-61) lives in ``test_aggregation.py``, callbacks in
``test_callbacks.py`` and parallel evaluation (52) in ``test_parallel_evaluation.py``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agenteval.aggregation import AggregationInput, AggregationResult
from agenteval.errors import ConfigError, NotFoundError
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.local import LocalEvalResultManager
from agenteval.evalresult.memory import InMemoryEvalResultManager
from agenteval.evalresult.models import (
    EvalCaseResult,
    EvalMetricResultDetails,
    RubricScore,
    ScoreKind,
    ScoreValue,
)
from agenteval.evalset.message import Message
from agenteval.evalset.models import (
    ConversationScenario,
    EvalCase,
    EvalCaseRubric,
    EvalMode,
    Invocation,
    RubricContent,
    Tool,
)
from agenteval.evaluators.base import EvaluateResult, EvaluatorFunction, MetricEvaluator
from agenteval.evaluators.registry import EvaluatorRegistry, default_registry
from agenteval.metric.criterion import (
    Criterion,
    FinalResponseCriterion,
    JudgeTemplateOptions,
    LLMCriterion,
    Rubric,
    TextCriterion,
)
from agenteval.metric.models import EvalMetric
from agenteval.metric.registry import MetricRegistry
from agenteval.runner import TurnResult
from agenteval.service.callbacks import AfterEvaluateSetArgs, Callbacks
from agenteval.service.options import ServiceOptions
from agenteval.service.types import EvaluateConfig, EvaluateRequest
from agenteval.status import EvalStatus
from tests.service._fakes import (
    APP,
    CREATED,
    FAILED,
    NOT_EVALUATED,
    PASSED,
    SESSION,
    SET,
    USER,
    AsyncFakeEvaluator,
    FakeEvaluator,
    RecordingRunner,
    evaluate_request,
    inference_request,
    make_case,
    make_manager,
    make_service,
    passed_inference,
    per_invocation,
    trace,
    turn,
    uniform_result,
)

# ----------------------------------------------------------------------------- helpers


def only_case(results: Sequence[EvalCaseResult]) -> EvalCaseResult:
    assert len(results) == 1
    return results[0]


def assert_failed_case(case_result: EvalCaseResult, message: str, *, user_id: str = "") -> None:
    assert case_result.final_eval_status == FAILED
    assert case_result.error_message == message
    assert case_result.score == 0
    assert case_result.overall_eval_metric_results == []
    assert case_result.eval_metric_result_per_invocation == []
    assert case_result.user_id == user_id
    assert case_result.session_id == SESSION


async def evaluate_one(
    inference: InferenceResult,
    metrics: Sequence[EvalMetric],
    evaluators: Mapping[str, MetricEvaluator | EvaluatorFunction],
    case: EvalCase,
) -> EvalCaseResult:
    """Store ``case``, evaluate ``inference`` with ``metrics`` and return the only case result."""
    service = make_service(await make_manager(case), dict(evaluators))
    result = await service.evaluate(evaluate_request(inference, metrics=metrics))
    return only_case(result.eval_case_results)


def judge_metric(name: str = "judge", *rubric_ids: str, evaluator_name: str = "") -> EvalMetric:
    rubrics = [Rubric(id=rubric_id, content=RubricContent(text=f"text of {rubric_id}")) for rubric_id in rubric_ids]
    return EvalMetric(
        metric_name=name,
        evaluator_name=evaluator_name,
        threshold=0.5,
        criterion=Criterion(llm_judge=LLMCriterion(rubrics=rubrics)),
    )


def case_rubric(metric_name: str, text: str | None, rubric_id: str = "", **fields: str) -> EvalCaseRubric:
    content = None if text is None else RubricContent(text=text)
    return EvalCaseRubric(metric_name=metric_name, id=rubric_id, content=content, **fields)


# ----------------------------------------------------------------------------- request validation and shape


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"app_name": ""}, "app name is empty"),
        ({"eval_set_id": ""}, "eval set id is empty"),
        ({"evaluate_config": None}, "evaluate config is nil"),
    ],
)
async def test_invalid_request_raises_config_error(change: dict[str, object], message: str) -> None:
    service = make_service(await make_manager())
    bad = dataclasses.replace(evaluate_request(), **change)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=f"^{message}$"):
        await service.evaluate(bad)


@pytest.mark.asyncio
async def test_none_request_raises_config_error() -> None:
    service = make_service(await make_manager())
    with pytest.raises(ConfigError, match="^evaluate request is nil$"):
        await service.evaluate(None)  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_empty_inference_results_give_empty_list() -> None:
    service = make_service(await make_manager())
    result = await service.evaluate(evaluate_request())
    assert result.app_name == APP
    assert result.eval_set_id == SET
    assert result.eval_case_results == []


@pytest.mark.asyncio
async def test_output_follows_inference_result_order() -> None:
    manager = await make_manager(make_case("a", "prompt"), make_case("b", "prompt"), make_case("c", "prompt"))
    service = make_service(manager, {"m": FakeEvaluator()})
    inferences = [passed_inference(case_id) for case_id in ("c", "a", "b")]
    result = await service.evaluate(evaluate_request(*inferences, metrics=[EvalMetric(metric_name="m")]))
    assert [r.eval_id for r in result.eval_case_results] == ["c", "a", "b"]


# ----------------------------------------------------------------------------- item 53: success


@pytest.mark.asyncio
async def test_success_per_turn_details_keep_value_and_overall_never_has_one() -> None:
    evaluator = FakeEvaluator(
        result=EvaluateResult(
            overall_score=0.8,
            overall_status=PASSED,
            per_invocation_results=[
                per_invocation(
                    0.8,
                    PASSED,
                    EvalMetricResultDetails(
                        reason="category matched",
                        score=0.8,
                        value=ScoreValue(kind=ScoreKind.CATEGORICAL, categorical="correct"),
                    ),
                )
            ],
        )
    )
    inference = passed_inference(
        "calc", turn("calc add 1 2", "generated", final="calc result: 3"), user_id="other-user"
    )
    metric = EvalMetric(metric_name="custom_metric", threshold=0.5)
    case_result = await evaluate_one(
        inference, [metric], {"custom_metric": evaluator}, make_case("calc", "calc add 1 2")
    )

    assert case_result.eval_id == "calc"
    assert case_result.eval_set_id == SET
    assert case_result.final_eval_status == PASSED
    assert case_result.score == 1.0
    assert case_result.error_message == ""
    assert case_result.run_id == 0
    assert case_result.session_id == SESSION
    assert case_result.user_id == USER  # from the case's sessionInput, not the inference result

    overall = case_result.overall_eval_metric_results
    assert len(overall) == 1
    assert overall[0].metric_name == "custom_metric"
    assert overall[0].score == 0.8
    assert overall[0].eval_status == PASSED
    assert overall[0].threshold == 0.5
    assert overall[0].details is not None
    assert overall[0].details.value is None
    assert overall[0].details.reason == "category matched"
    assert overall[0].details.score == 0.8

    assert len(case_result.eval_metric_result_per_invocation) == 1
    per_turn = case_result.eval_metric_result_per_invocation[0]
    assert len(per_turn.eval_metric_results) == 1
    turn_result = per_turn.eval_metric_results[0]
    assert turn_result.metric_name == "custom_metric"
    assert turn_result.threshold == 0.5
    assert turn_result.score == 0.8
    assert turn_result.eval_status == PASSED
    assert turn_result.details is not None
    assert turn_result.details.value == ScoreValue(kind=ScoreKind.CATEGORICAL, categorical="correct")
    assert turn_result.details.reason == "category matched"


@pytest.mark.asyncio
async def test_overall_reason_joins_turn_reasons_and_concatenates_rubric_scores() -> None:
    r1, r2, r3 = (RubricScore(id=f"r{i}", reason=f"why {i}", score=i / 4) for i in (1, 2, 3))
    evaluator = FakeEvaluator(
        result=EvaluateResult(
            overall_score=0.5,
            overall_status=FAILED,
            per_invocation_results=[
                per_invocation(1.0, PASSED, EvalMetricResultDetails(reason="first", score=1.0, rubric_scores=[r1])),
                per_invocation(0.0, FAILED, None),
                per_invocation(0.5, FAILED, EvalMetricResultDetails(reason="", score=0.5, rubric_scores=[r2, r3])),
                per_invocation(0.5, FAILED, EvalMetricResultDetails(reason="last", score=0.25)),
            ],
        )
    )
    inference = passed_inference("c", *(turn(f"p{i}", f"a{i}", final="x") for i in range(4)))
    case_result = await evaluate_one(
        inference,
        [EvalMetric(metric_name="m", threshold=0.9)],
        {"m": evaluator},
        make_case("c", "p0", "p1", "p2", "p3"),
    )

    overall = case_result.overall_eval_metric_results[0]
    assert overall.details is not None
    # Only turns that had details contribute, empty reasons included.
    assert overall.details.reason == "first;;last"
    assert overall.details.score == 0.5
    assert overall.details.value is None
    assert overall.details.rubric_scores == [r1, r2, r3]
    assert overall.eval_status == FAILED
    assert case_result.final_eval_status == FAILED

    per_turn = [p.eval_metric_results[0] for p in case_result.eval_metric_result_per_invocation]
    assert [r.score for r in per_turn] == [1.0, 0.0, 0.5, 0.5]
    assert [r.eval_status for r in per_turn] == [PASSED, FAILED, FAILED, FAILED]
    assert per_turn[1].details is None
    assert per_turn[2].details is not None
    assert per_turn[2].details.rubric_scores == [r2, r3]
    assert per_turn[3].details is not None
    assert per_turn[3].details.score == 0.25


@pytest.mark.asyncio
async def test_overall_details_exist_even_without_turn_details() -> None:
    inference = passed_inference("c")
    case_result = await evaluate_one(
        inference, [EvalMetric(metric_name="m")], {"m": FakeEvaluator()}, make_case("c", "prompt")
    )
    overall = case_result.overall_eval_metric_results[0]
    assert overall.details == EvalMetricResultDetails(reason="", score=1.0)
    assert case_result.eval_metric_result_per_invocation[0].eval_metric_results[0].details is None


@pytest.mark.asyncio
async def test_per_turn_entries_pair_actual_and_expected_and_keep_metric_order() -> None:
    case = make_case("c", "p1", "p2")
    actuals = [turn("p1", "a1", final="r1"), turn("p2", "a2", final="r2")]
    first, second = FakeEvaluator(), FakeEvaluator()
    metrics = [EvalMetric(metric_name="second", threshold=1), EvalMetric(metric_name="first", threshold=0.1)]
    case_result = await evaluate_one(passed_inference("c", *actuals), metrics, {"first": first, "second": second}, case)

    assert [r.metric_name for r in case_result.overall_eval_metric_results] == ["second", "first"]
    for index, per_turn in enumerate(case_result.eval_metric_result_per_invocation):
        assert per_turn.actual_invocation == actuals[index]
        assert per_turn.expected_invocation == case.conversation[index]
        assert [r.metric_name for r in per_turn.eval_metric_results] == ["second", "first"]
        assert [r.threshold for r in per_turn.eval_metric_results] == [1, 0.1]
    # Default mode: the expecteds are the case's conversation, the actuals the inferences.
    assert first.calls[0].expecteds == case.conversation
    assert first.calls[0].actuals == actuals


@pytest.mark.asyncio
async def test_plain_and_async_function_evaluators() -> None:
    seen: list[str] = []

    def plain(actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric) -> EvaluateResult:
        seen.append(metric.metric_name)
        return uniform_result(len(actuals), 0.7, PASSED)

    async def asynchronous(
        actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> EvaluateResult:
        seen.append(metric.metric_name)
        return uniform_result(len(actuals), 0.3, FAILED)

    registry = EvaluatorRegistry({"plain": plain, "async": asynchronous})
    manager = await make_manager(make_case("c", "prompt"))
    service = make_service(manager, registry=registry)
    metrics = [EvalMetric(metric_name="plain"), EvalMetric(metric_name="async"), EvalMetric(metric_name="obj")]
    registry.register("obj", AsyncFakeEvaluator())
    result = await service.evaluate(evaluate_request(passed_inference("c"), metrics=metrics))
    case_result = only_case(result.eval_case_results)
    assert seen == ["plain", "async"]
    assert [(r.metric_name, r.score) for r in case_result.overall_eval_metric_results] == [
        ("plain", 0.7),
        ("async", 0.3),
        ("obj", 1.0),
    ]
    assert case_result.final_eval_status == FAILED


# ----------------------------------------------------------------------------- item 54: failed inference


class RecordingAggregator:
    def __init__(self) -> None:
        self.inputs: list[AggregationInput] = []

    def aggregate(self, data: AggregationInput) -> AggregationResult:
        self.inputs.append(data)
        return AggregationResult(score=1.0, status=PASSED)


@pytest.mark.asyncio
@pytest.mark.parametrize("status", [FAILED, None, NOT_EVALUATED, EvalStatus.UNKNOWN])
async def test_inference_not_passed_gives_failed_case_without_evaluation(status: EvalStatus | None) -> None:
    evaluator = FakeEvaluator()
    aggregator = RecordingAggregator()
    manager = await make_manager(make_case("c", "prompt"))
    service = make_service(manager, {"m": evaluator}, aggregator=aggregator)
    inference = passed_inference("c", status=status, error_message="run failed", user_id="inference-user")
    result = await service.evaluate(evaluate_request(inference, metrics=[EvalMetric(metric_name="m")]))
    case_result = only_case(result.eval_case_results)
    assert_failed_case(case_result, "run failed", user_id="inference-user")
    assert case_result.eval_id == "c"
    assert case_result.eval_set_id == SET
    assert evaluator.calls == []
    assert aggregator.inputs == []


@pytest.mark.asyncio
async def test_inference_failure_from_the_inference_phase_carries_over() -> None:
    runner = RecordingRunner(fail_on=["prompt"])
    evaluator = FakeEvaluator()
    manager = await make_manager(make_case("c", "prompt"))
    service = make_service(manager, {"m": evaluator}, runner=runner)
    inferences = await service.inference(inference_request())
    assert inferences[0].status == FAILED
    result = await service.evaluate(evaluate_request(*inferences, metrics=[EvalMetric(metric_name="m")]))
    case_result = only_case(result.eval_case_results)
    assert case_result.final_eval_status == FAILED
    assert case_result.error_message == inferences[0].error_message
    assert "runner run: RuntimeError: boom" in case_result.error_message
    assert case_result.user_id == USER  # the inference result's userId (set from the sessionInput)
    assert evaluator.calls == []


# ----------------------------------------------------------------------------- items 55, 56: evaluator lookup


@pytest.mark.asyncio
async def test_unknown_evaluator_is_skipped() -> None:
    inference = passed_inference("c")
    case_result = await evaluate_one(
        inference, [EvalMetric(metric_name="missing_metric", threshold=1)], {}, make_case("c", "prompt")
    )
    assert case_result.final_eval_status == NOT_EVALUATED
    assert case_result.score == 0
    assert case_result.error_message == ""
    assert case_result.overall_eval_metric_results == []
    assert len(case_result.eval_metric_result_per_invocation) == 1
    assert case_result.eval_metric_result_per_invocation[0].eval_metric_results == []


@pytest.mark.asyncio
async def test_unknown_evaluator_is_skipped_next_to_known_ones() -> None:
    aggregator = RecordingAggregator()
    manager = await make_manager(make_case("c", "prompt"))
    service = make_service(manager, {"known": FakeEvaluator()}, aggregator=aggregator)
    metrics = [EvalMetric(metric_name="missing"), EvalMetric(metric_name="known")]
    result = await service.evaluate(evaluate_request(passed_inference("c"), metrics=metrics))
    case_result = only_case(result.eval_case_results)
    assert [r.metric_name for r in case_result.overall_eval_metric_results] == ["known"]
    assert [m.metric_name for m in aggregator.inputs[0].eval_metrics] == ["known"]


class FailingRegistry(EvaluatorRegistry):
    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error
        self.asked: list[str] = []

    def get(self, name: str) -> MetricEvaluator:
        self.asked.append(name)
        raise self.error


@pytest.mark.asyncio
async def test_registry_error_other_than_not_found_fails_the_case() -> None:
    registry = FailingRegistry(RuntimeError("registry failed"))
    manager = await make_manager(make_case("c", "prompt"))
    service = make_service(manager, registry=registry)
    metric = EvalMetric(metric_name="metric-x", evaluator_name="impl")
    result = await service.evaluate(evaluate_request(passed_inference("c"), metrics=[metric]))
    assert_failed_case(
        only_case(result.eval_case_results), "get evaluator for metric impl: RuntimeError: registry failed"
    )
    assert registry.asked == ["impl"]


@pytest.mark.asyncio
async def test_registry_not_found_error_skips_the_metric() -> None:
    registry = FailingRegistry(NotFoundError("get evaluator impl: not registered"))
    manager = await make_manager(make_case("c", "prompt"))
    service = make_service(manager, registry=registry)
    result = await service.evaluate(evaluate_request(passed_inference("c"), metrics=[EvalMetric(metric_name="impl")]))
    case_result = only_case(result.eval_case_results)
    assert case_result.final_eval_status == NOT_EVALUATED
    assert case_result.error_message == ""


# ----------------------------------------------------------------------------- item 57: per-case failures


@pytest.mark.asyncio
async def test_evaluator_exception_fails_the_case() -> None:
    evaluator = FakeEvaluator(error=RuntimeError("evaluation failed"))
    case_result = await evaluate_one(
        passed_inference("c", user_id="u-inf"),
        [EvalMetric(metric_name="m")],
        {"m": evaluator},
        make_case("c", "prompt"),
    )
    assert_failed_case(case_result, "run evaluation for metric m: RuntimeError: evaluation failed", user_id="u-inf")


@pytest.mark.asyncio
async def test_evaluator_agenteval_error_is_not_prefixed_with_its_type() -> None:
    evaluator = FakeEvaluator(error=ConfigError("final response criterion not configured"))
    case_result = await evaluate_one(
        passed_inference("c"), [EvalMetric(metric_name="m")], {"m": evaluator}, make_case("c", "prompt")
    )
    assert_failed_case(case_result, "run evaluation for metric m: final response criterion not configured")


@pytest.mark.asyncio
async def test_later_metrics_do_not_run_after_an_evaluator_error() -> None:
    failing, later = FakeEvaluator(error=ValueError("bad")), FakeEvaluator()
    metrics = [EvalMetric(metric_name="failing"), EvalMetric(metric_name="later")]
    case_result = await evaluate_one(
        passed_inference("c"), metrics, {"failing": failing, "later": later}, make_case("c", "prompt")
    )
    assert case_result.error_message == "run evaluation for metric failing: ValueError: bad"
    assert later.calls == []


@pytest.mark.asyncio
async def test_evaluator_returning_a_wrong_type_fails_the_case() -> None:
    def broken(actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric) -> EvaluateResult:
        return None  # type: ignore[return-value]

    case_result = await evaluate_one(
        passed_inference("c"), [EvalMetric(metric_name="m")], {"m": broken}, make_case("c", "prompt")
    )
    assert case_result.final_eval_status == FAILED
    assert case_result.error_message.startswith("run evaluation for metric m: ")


@pytest.mark.asyncio
async def test_per_invocation_count_mismatch_fails_the_case() -> None:
    evaluator = FakeEvaluator(result=EvaluateResult(overall_score=1, overall_status=PASSED, per_invocation_results=[]))
    case_result = await evaluate_one(
        passed_inference("c"), [EvalMetric(metric_name="m")], {"m": evaluator}, make_case("c", "prompt")
    )
    assert_failed_case(case_result, "metric m returned 0 per-invocation results, expected 1")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("turns", "message"),
    [
        (
            [None, per_invocation()],
            "the evaluator returned no result for turn 1; return a PerInvocationResult for every turn",
        ),
        (
            [per_invocation(), None],
            "the evaluator returned no result for turn 2; return a PerInvocationResult for every turn",
        ),
        (
            [per_invocation(), 0.5],
            "the evaluator returned float for turn 2; return a PerInvocationResult for every turn",
        ),
        (
            [per_invocation(), EvalCaseResult(eval_id="c")],
            "the evaluator returned EvalCaseResult for turn 2; return a PerInvocationResult for every turn",
        ),
        (None, "per_invocation_results is NoneType; return a list with one PerInvocationResult per turn"),
        (
            {"turn": per_invocation()},
            "per_invocation_results is dict; return a list with one PerInvocationResult per turn",
        ),
    ],
    ids=["none-first", "none-second", "number", "other-model", "none-list", "dict"],
)
async def test_malformed_per_invocation_results_fail_only_that_case(turns: object, message: str) -> None:
    bad = EvaluateResult(overall_score=1.0, overall_status=PASSED, per_invocation_results=turns)  # type: ignore[arg-type]

    def evaluator(actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric) -> EvaluateResult:
        return bad if actuals[0].invocation_id.startswith("bad") else uniform_result(len(actuals))

    manager = await make_manager(make_case("bad", "p1", "p2"), make_case("good", "p1", "p2"))
    service = make_service(manager, {"m": evaluator})
    inferences = [
        passed_inference(case_id, turn("p1", f"{case_id}-1", final="x"), turn("p2", f"{case_id}-2", final="y"))
        for case_id in ("bad", "good")
    ]
    result = await service.evaluate(evaluate_request(*inferences, metrics=[EvalMetric(metric_name="m")]))
    bad_case, good_case = result.eval_case_results
    assert_failed_case(bad_case, f"run evaluation for metric m: {message}")
    assert good_case.final_eval_status == PASSED


@pytest.mark.asyncio
async def test_actual_expected_count_mismatch_fails_the_case() -> None:
    evaluator = FakeEvaluator()
    inference = passed_inference("c", turn("p", "a1", final="x"), turn("p", "a2", final="y"))
    case_result = await evaluate_one(inference, [EvalMetric(metric_name="m")], {"m": evaluator}, make_case("c", "p"))
    assert_failed_case(
        case_result,
        "prepare case evaluation inputs (evalCaseID=c): "
        "inference count 2 does not match expected conversation length 1",
    )
    assert evaluator.calls == []


@pytest.mark.asyncio
async def test_passed_inference_without_turns_is_a_count_mismatch() -> None:
    inference = passed_inference("c", inferences=[])
    case_result = await evaluate_one(inference, [], {}, make_case("c", "p"))
    assert_failed_case(
        case_result,
        "prepare case evaluation inputs (evalCaseID=c): "
        "inference count 0 does not match expected conversation length 1",
    )


@pytest.mark.asyncio
async def test_missing_eval_case_fails_the_case() -> None:
    case_result = await evaluate_one(passed_inference("missing"), [], {}, make_case("c", "prompt"))
    assert case_result.final_eval_status == FAILED
    assert case_result.error_message.startswith("get eval case (app=app, evalSetID=set, evalCaseID=missing): ")
    assert "not found" in case_result.error_message


@pytest.mark.asyncio
async def test_case_lookup_uses_the_inference_results_app_and_set() -> None:
    inference = passed_inference("c", eval_set_id="other-set")
    case_result = await evaluate_one(inference, [], {}, make_case("c", "prompt"))
    assert case_result.final_eval_status == FAILED
    assert case_result.error_message.startswith("get eval case (app=app, evalSetID=other-set, evalCaseID=c): ")


@pytest.mark.asyncio
async def test_missing_session_input_fails_the_case() -> None:
    case = make_case("c", "prompt", session_input=None)
    case_result = await evaluate_one(passed_inference("c"), [], {}, case)
    assert_failed_case(case_result, "prepare case evaluation inputs (evalCaseID=c): session input is nil")


@pytest.mark.asyncio
async def test_empty_default_conversation_fails_the_case() -> None:
    case = make_case("c", conversation=[])
    case_result = await evaluate_one(passed_inference("c"), [], {}, case)
    assert_failed_case(
        case_result,
        "prepare case evaluation inputs (evalCaseID=c): build expecteds for eval (evalCaseID=c): invalid eval case",
    )


@pytest.mark.asyncio
async def test_trace_case_without_any_conversation_fails_the_case() -> None:
    case = make_case("c", conversation=[], eval_mode=EvalMode.TRACE)
    case_result = await evaluate_one(passed_inference("c"), [], {}, case)
    assert case_result.error_message == (
        "prepare case evaluation inputs (evalCaseID=c): build expecteds for eval (evalCaseID=c): invalid eval case"
    )


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "bad_score",
    [
        {"overall_score": math.nan},
        {"overall_score": math.inf},
        {"turn_score": -math.inf},
        {"turn_score": math.nan},
    ],
    ids=["overall-nan", "overall-inf", "turn-neg-inf", "turn-nan"],
)
async def test_non_finite_evaluator_score_fails_the_case(bad_score: dict[str, float]) -> None:
    result = EvaluateResult(
        overall_score=bad_score.get("overall_score", 1.0),
        overall_status=PASSED,
        per_invocation_results=[per_invocation(bad_score.get("turn_score", 1.0), PASSED)],
    )
    case_result = await evaluate_one(
        passed_inference("c"),
        [EvalMetric(metric_name="m")],
        {"m": FakeEvaluator(result=result)},
        make_case("c", "prompt"),
    )
    assert case_result.final_eval_status == FAILED
    assert case_result.error_message.startswith("run evaluation for metric m: ")
    assert "finite" in case_result.error_message
    assert case_result.overall_eval_metric_results == []


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("overall", "turn_score", "message"),
    [
        (
            math.nan,
            1.0,
            "run evaluation for metric m: scores must be finite numbers (int or float), "
            "got overall_score = nan (float)",
        ),
        (
            1.0,
            np.float32("inf"),
            "run evaluation for metric m: scores must be finite numbers (int or float), "
            "got per_invocation_results[0].score = np.float32(inf) (float32)",
        ),
        (
            1.0,
            "1",
            "run evaluation for metric m: scores must be finite numbers (int or float), "
            "got per_invocation_results[0].score = '1' (str)",
        ),
        (
            True,
            1.0,
            "run evaluation for metric m: scores must be finite numbers (int or float), "
            "got overall_score = True (bool)",
        ),
    ],
    ids=["nan", "numpy-inf", "str", "bool"],
)
async def test_a_bad_evaluator_score_is_named_with_its_type(overall: Any, turn_score: Any, message: str) -> None:
    result = EvaluateResult(
        overall_score=overall, overall_status=PASSED, per_invocation_results=[per_invocation(turn_score)]
    )
    case_result = await evaluate_one(
        passed_inference("c"),
        [EvalMetric(metric_name="m")],
        {"m": FakeEvaluator(result=result)},
        make_case("c", "prompt"),
    )
    assert (case_result.final_eval_status, case_result.error_message) == (FAILED, message)


@pytest.mark.asyncio
@pytest.mark.parametrize("score", [np.float32(1.0), np.float64(1.0), np.int64(1)], ids=repr)
async def test_numpy_evaluator_scores_are_stored_as_floats(score: Any) -> None:
    result = EvaluateResult(overall_score=score, overall_status=PASSED, per_invocation_results=[per_invocation(score)])
    case_result = await evaluate_one(
        passed_inference("c"),
        [EvalMetric(metric_name="m")],
        {"m": FakeEvaluator(result=result)},
        make_case("c", "prompt"),
    )
    assert (case_result.final_eval_status, case_result.error_message) == (PASSED, "")
    overall = case_result.overall_eval_metric_results[0]
    per_turn = case_result.eval_metric_result_per_invocation[0].eval_metric_results[0]
    assert overall.details is not None
    scores = [overall.score, overall.details.score, per_turn.score]
    assert scores == [1.0, 1.0, 1.0]
    assert all(type(stored) is float for stored in scores)
    EvalCaseResult.from_json(case_result.to_json())
    # The evaluator's own result is left as it returned it.
    assert result.overall_score is score
    assert result.per_invocation_results[0].score is score


# ----------------------------------------------------------------------------- item 58: traces, context messages


@pytest.mark.asyncio
async def test_execution_traces_are_attached_to_actuals() -> None:
    evaluator = FakeEvaluator()
    first = trace("first")
    own = trace("own")
    actuals = [turn("p1", "a1", final="r1"), turn("p2", "a2", final="r2").model_copy(update={"execution_trace": own})]
    inference = passed_inference("c", *actuals, execution_traces=[first, None])
    case_result = await evaluate_one(
        inference, [EvalMetric(metric_name="m")], {"m": evaluator}, make_case("c", "p1", "p2")
    )

    seen = evaluator.calls[0].actuals
    assert seen[0].execution_trace == first
    assert seen[1].execution_trace is None  # aligned: a None entry overrides, as the reference assigns traces[i]
    stored = [p.actual_invocation for p in case_result.eval_metric_result_per_invocation]
    assert stored[0] is not None and stored[0].execution_trace == first


@pytest.mark.asyncio
async def test_without_execution_traces_actuals_keep_their_own() -> None:
    evaluator = FakeEvaluator()
    own = trace("own")
    inference = passed_inference("c", turn("p", "a1", final="r").model_copy(update={"execution_trace": own}))
    await evaluate_one(inference, [EvalMetric(metric_name="m")], {"m": evaluator}, make_case("c", "p"))
    assert evaluator.calls[0].actuals[0].execution_trace == own


@pytest.mark.asyncio
async def test_execution_trace_count_mismatch_fails_the_case() -> None:
    inference = passed_inference(
        "c", turn("p1", "a1", final="r"), turn("p2", "a2", final="r"), execution_traces=[trace("only-one")]
    )
    case_result = await evaluate_one(inference, [], {}, make_case("c", "p1", "p2"))
    assert_failed_case(
        case_result,
        "prepare case evaluation inputs (evalCaseID=c): execution trace count 1 does not match inference count 2",
    )


@pytest.mark.asyncio
async def test_context_messages_are_attached_only_to_invocations_without_their_own() -> None:
    case_context = [Message.system("case context")]
    own_expected = [Message.system("own expected context")]
    own_actual = [Message.system("own actual context")]
    case = make_case("c", "p1", "p2", context_messages=case_context)
    case.conversation[0].context_messages = own_expected
    actuals = [
        turn("p1", "a1", final="r1").model_copy(update={"context_messages": own_actual}),
        turn("p2", "a2", final="r2"),
    ]
    evaluator = FakeEvaluator()
    case_result = await evaluate_one(
        passed_inference("c", *actuals), [EvalMetric(metric_name="m")], {"m": evaluator}, case
    )

    call = evaluator.calls[0]
    assert [a.context_messages for a in call.actuals] == [own_actual, case_context]
    assert [e.context_messages for e in call.expecteds] == [own_expected, case_context]
    stored = case_result.eval_metric_result_per_invocation[1]
    assert stored.actual_invocation is not None and stored.actual_invocation.context_messages == case_context
    assert stored.expected_invocation is not None and stored.expected_invocation.context_messages == case_context


@pytest.mark.asyncio
async def test_no_case_context_messages_leaves_invocations_untouched() -> None:
    evaluator = FakeEvaluator()
    await evaluate_one(passed_inference("c"), [EvalMetric(metric_name="m")], {"m": evaluator}, make_case("c", "prompt"))
    assert evaluator.calls[0].actuals[0].context_messages == []
    assert evaluator.calls[0].expecteds[0].context_messages == []


# ----------------------------------------------------------------------------- expected runner, trace, scenario


@pytest.mark.asyncio
async def test_expected_runner_case_uses_the_precomputed_expected_inferences() -> None:
    expected_runner = RecordingRunner(lambda request: TurnResult(final_response=Message.assistant("expected reply")))
    evaluator = FakeEvaluator()
    manager = await make_manager(make_case("c", "p1", expected_runner_enabled=True))
    service = make_service(manager, {"m": evaluator}, expected_runner=expected_runner)
    inferences = await service.inference(inference_request())
    assert len(expected_runner.requests) == 1
    assert expected_runner.requests[0].session_id == f"{SESSION}-expected"

    result = await service.evaluate(evaluate_request(*inferences, metrics=[EvalMetric(metric_name="m")]))
    assert len(expected_runner.requests) == 1  # Evaluate never runs the expected runner
    assert only_case(result.eval_case_results).final_eval_status == PASSED
    expecteds = evaluator.calls[0].expecteds
    assert [e.final_response for e in expecteds] == [Message.assistant("expected reply")]
    assert expecteds == inferences[0].expected_inferences


@pytest.mark.asyncio
async def test_expected_runner_case_without_expected_inferences_fails() -> None:
    case = make_case("c", "prompt", expected_runner_enabled=True)
    case_result = await evaluate_one(passed_inference("c"), [], {}, case)
    assert_failed_case(case_result, "prepare case evaluation inputs (evalCaseID=c): expected inferences are empty")


def assert_user_only(placeholders: Sequence[Invocation], sources: Sequence[Invocation]) -> None:
    assert len(placeholders) == len(sources)
    for placeholder, source in zip(placeholders, sources, strict=True):
        assert placeholder.invocation_id == source.invocation_id
        assert placeholder.user_content == source.user_content
        assert placeholder.final_response is None
        assert placeholder.tools == []
        assert placeholder.intermediate_responses == []
        assert placeholder.tool_mock is None


def traced_turn(invocation_id: str, prompt: str, answer: str) -> Invocation:
    return Invocation(
        invocation_id=invocation_id,
        user_content=Message.user(prompt),
        final_response=Message.assistant(answer),
        tools=[Tool(id="t1", name="lookup", arguments={"q": prompt}, result="ok")],
        intermediate_responses=[Message.assistant("thinking")],
        creation_timestamp=CREATED,
    )


@pytest.mark.asyncio
async def test_trace_mode_with_only_conversation_uses_user_only_expecteds() -> None:
    conversation = [traced_turn("t1", "hello", "answer")]
    case = make_case("c", eval_mode=EvalMode.TRACE, conversation=conversation)
    runner = RecordingRunner()
    evaluator = FakeEvaluator()
    service = make_service(await make_manager(case), {"m": evaluator}, runner=runner)
    inferences = await service.inference(inference_request())
    result = await service.evaluate(evaluate_request(*inferences, metrics=[EvalMetric(metric_name="m")]))

    assert runner.requests == []
    assert only_case(result.eval_case_results).final_eval_status == PASSED
    call = evaluator.calls[0]
    assert [a.final_response for a in call.actuals] == [Message.assistant("answer")]
    assert_user_only(call.expecteds, conversation)


@pytest.mark.asyncio
async def test_trace_mode_with_both_conversations_uses_conversation_as_expecteds() -> None:
    conversation = [traced_turn("e1", "hello", "expected")]
    actual_conversation = [traced_turn("a1", "hello", "actual")]
    case = make_case("c", eval_mode=EvalMode.TRACE, conversation=conversation, actual_conversation=actual_conversation)
    evaluator = FakeEvaluator()
    service = make_service(await make_manager(case), {"m": evaluator})
    inferences = await service.inference(inference_request())
    await service.evaluate(evaluate_request(*inferences, metrics=[EvalMetric(metric_name="m")]))

    call = evaluator.calls[0]
    assert call.actuals == actual_conversation
    assert call.expecteds == conversation
    assert call.expecteds[0].final_response == Message.assistant("expected")


@pytest.mark.asyncio
async def test_trace_mode_with_only_actual_conversation_uses_user_only_expecteds() -> None:
    actual_conversation = [traced_turn("a1", "hello", "actual"), traced_turn("a2", "again", "actual 2")]
    case = make_case("c", eval_mode=EvalMode.TRACE, conversation=[], actual_conversation=actual_conversation)
    evaluator = FakeEvaluator()
    service = make_service(await make_manager(case), {"m": evaluator})
    inferences = await service.inference(inference_request())
    await service.evaluate(evaluate_request(*inferences, metrics=[EvalMetric(metric_name="m")]))

    call = evaluator.calls[0]
    assert call.actuals == actual_conversation
    assert_user_only(call.expecteds, actual_conversation)


@pytest.mark.asyncio
async def test_scenario_case_uses_user_only_placeholders_of_the_actuals() -> None:
    scenario = ConversationScenario(conversation_plan="ask twice", stop_signal="DONE")
    case = make_case("c", conversation=[], conversation_scenario=scenario)
    actuals = [traced_turn("a1", "first", "reply 1"), traced_turn("a2", "second", "reply 2")]
    evaluator = FakeEvaluator()
    case_result = await evaluate_one(
        passed_inference("c", *actuals), [EvalMetric(metric_name="m")], {"m": evaluator}, case
    )

    assert case_result.final_eval_status == PASSED
    assert evaluator.calls[0].actuals == actuals
    assert_user_only(evaluator.calls[0].expecteds, actuals)
    stored = [p.expected_invocation for p in case_result.eval_metric_result_per_invocation]
    assert_user_only([e for e in stored if e is not None], actuals)


# ----------------------------------------------------------------------------- case-level rubrics


@pytest.mark.asyncio
async def test_case_rubrics_are_merged_into_the_named_metric() -> None:
    metric = judge_metric("judge", "metric-rubric")
    snapshot = metric.model_dump()
    case = make_case(
        "c",
        "prompt",
        rubrics=[
            case_rubric("judge", "  Mention the refund.  ", description="shown to humans", type=" policy "),
            case_rubric("judge", "Be polite.", rubric_id=" custom "),
        ],
    )
    evaluator = FakeEvaluator()
    case_result = await evaluate_one(passed_inference("c"), [metric], {"judge": evaluator}, case)

    assert case_result.final_eval_status == PASSED
    effective = evaluator.calls[0].metric
    assert effective is not metric
    assert effective.criterion is not None and effective.criterion.llm_judge is not None
    rubrics = effective.criterion.llm_judge.rubrics
    assert [r.id for r in rubrics] == ["metric-rubric", "case_rubric_1", "custom"]
    assert rubrics[1].content == RubricContent(text="Mention the refund.")
    assert rubrics[1].type == "policy"
    assert rubrics[1].description == "shown to humans"
    assert rubrics[2].content == RubricContent(text="Be polite.")
    # The results record the effective criterion, per turn and overall.
    overall = case_result.overall_eval_metric_results[0]
    assert overall.criterion == effective.criterion
    assert case_result.eval_metric_result_per_invocation[0].eval_metric_results[0].criterion == effective.criterion
    # The caller's metric is untouched.
    assert metric.model_dump() == snapshot
    assert metric.criterion is not None and metric.criterion.llm_judge is not None
    assert [r.id for r in metric.criterion.llm_judge.rubrics] == ["metric-rubric"]


@pytest.mark.asyncio
async def test_case_rubric_auto_id_counts_every_case_rubric() -> None:
    judge, other = judge_metric("judge"), judge_metric("other")
    case = make_case("c", "prompt", rubrics=[case_rubric("other", "for other"), case_rubric("judge", "for judge")])
    judge_evaluator, other_evaluator = FakeEvaluator(), FakeEvaluator()
    await evaluate_one(
        passed_inference("c"), [judge, other], {"judge": judge_evaluator, "other": other_evaluator}, case
    )

    def ids(evaluator: FakeEvaluator) -> list[str]:
        criterion = evaluator.calls[0].metric.criterion
        assert criterion is not None and criterion.llm_judge is not None
        return [r.id for r in criterion.llm_judge.rubrics]

    assert ids(judge_evaluator) == ["case_rubric_2"]
    assert ids(other_evaluator) == ["case_rubric_1"]


@pytest.mark.asyncio
async def test_case_rubrics_bind_by_metric_name_when_evaluator_name_differs() -> None:
    metric = judge_metric("judge-a", evaluator_name="impl")
    untouched = judge_metric("judge-b", evaluator_name="impl")
    case = make_case("c", "prompt", rubrics=[case_rubric("judge-a", "only for a")])
    evaluator = FakeEvaluator()
    await evaluate_one(passed_inference("c"), [metric, untouched], {"impl": evaluator}, case)

    first, second = (call.metric for call in evaluator.calls)
    assert first.criterion is not None and first.criterion.llm_judge is not None
    assert [r.id for r in first.criterion.llm_judge.rubrics] == ["case_rubric_1"]
    assert second is untouched  # no case rubric: the configured metric itself is used


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (case_rubric("  ", "text"), "case rubric c[1]: metricName is empty"),
        (case_rubric("judge", None), "case rubric c[1]: content is nil"),
        (case_rubric("judge", "   "), "case rubric c[1]: content.text is empty"),
        (case_rubric("nope", "text"), "case rubric c[1]: metric nope not found"),
    ],
    ids=["blank-metric-name", "no-content", "blank-text", "unknown-metric"],
)
async def test_case_rubric_validation_fails_the_case(bad: EvalCaseRubric, message: str) -> None:
    case = make_case("c", "prompt", rubrics=[case_rubric("judge", "fine"), bad])
    evaluator = FakeEvaluator()
    case_result = await evaluate_one(passed_inference("c"), [judge_metric("judge")], {"judge": evaluator}, case)
    assert_failed_case(case_result, message)
    assert evaluator.calls == []


@pytest.mark.asyncio
async def test_case_rubric_validation_ignores_metrics_with_blank_names() -> None:
    case = make_case("c", "prompt", rubrics=[case_rubric(" ", "text")])
    case_result = await evaluate_one(passed_inference("c"), [EvalMetric(metric_name=" ")], {}, case)
    assert case_result.error_message == "case rubric c[0]: metricName is empty"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("metric_rubrics", "case_rubrics", "duplicate"),
    [
        (["metric-rubric"], [case_rubric("judge", "x", rubric_id="metric-rubric")], "metric-rubric"),
        ([], [case_rubric("judge", "x", rubric_id="dup"), case_rubric("judge", "y", rubric_id=" dup ")], "dup"),
        (["same", "same"], [case_rubric("judge", "x")], "same"),
    ],
    ids=["case-vs-metric", "case-vs-case", "metric-vs-metric"],
)
async def test_duplicate_rubric_ids_fail_the_case(
    metric_rubrics: list[str], case_rubrics: list[EvalCaseRubric], duplicate: str
) -> None:
    case = make_case("c", "prompt", rubrics=case_rubrics)
    metric = judge_metric("judge", *metric_rubrics)
    case_result = await evaluate_one(passed_inference("c"), [metric], {"judge": FakeEvaluator()}, case)
    assert_failed_case(case_result, f"case rubric c: duplicate rubric id {duplicate}")


@pytest.mark.asyncio
@pytest.mark.parametrize("criterion", [None, Criterion()], ids=["no-criterion", "no-llm-judge"])
async def test_case_rubric_needs_an_llm_judge_container(criterion: Criterion | None) -> None:
    case = make_case("c", "prompt", rubrics=[case_rubric("judge", "x")])
    metric = EvalMetric(metric_name="judge", criterion=criterion)
    case_result = await evaluate_one(passed_inference("c"), [metric], {"judge": FakeEvaluator()}, case)
    assert_failed_case(case_result, "case rubric c: metric judge llmJudge criterion is required as rubric container")


@pytest.mark.asyncio
async def test_case_rubric_for_a_metric_without_evaluator_is_skipped() -> None:
    case = make_case("c", "prompt", rubrics=[case_rubric("judge", "x")])
    metric = EvalMetric(metric_name="judge")  # no llmJudge either: never checked, the metric is skipped first
    case_result = await evaluate_one(passed_inference("c"), [metric], {}, case)
    assert case_result.final_eval_status == NOT_EVALUATED
    assert case_result.error_message == ""


# ----------------------------------------------------------------------------- routing, materialisation, purity


@pytest.mark.asyncio
async def test_evaluator_name_routes_several_metrics_to_one_evaluator() -> None:
    evaluator = FakeEvaluator(factory=lambda actuals, metric: uniform_result(len(actuals), metric.threshold, PASSED))
    metrics = [
        EvalMetric(metric_name="a", evaluator_name="shared", threshold=0.2),
        EvalMetric(metric_name="b", evaluator_name="shared", threshold=0.4),
        EvalMetric(metric_name="shared", threshold=0.6),
    ]
    case_result = await evaluate_one(passed_inference("c"), metrics, {"shared": evaluator}, make_case("c", "prompt"))
    assert [call.metric.metric_name for call in evaluator.calls] == ["a", "b", "shared"]
    assert [(r.metric_name, r.score, r.threshold) for r in case_result.overall_eval_metric_results] == [
        ("a", 0.2, 0.2),
        ("b", 0.4, 0.4),
        ("shared", 0.6, 0.6),
    ]


@pytest.mark.asyncio
async def test_metric_name_is_not_looked_up_when_evaluator_name_is_set() -> None:
    metrics = [EvalMetric(metric_name="m", evaluator_name="missing")]
    case_result = await evaluate_one(passed_inference("c"), metrics, {"m": FakeEvaluator()}, make_case("c", "prompt"))
    assert case_result.final_eval_status == NOT_EVALUATED
    assert case_result.overall_eval_metric_results == []


def template_metric(prompt: str = "{{template}}") -> EvalMetric:
    return EvalMetric(
        metric_name="m",
        threshold=0.5,
        criterion=Criterion(llm_judge=LLMCriterion(template=JudgeTemplateOptions(prompt=prompt))),
    )


class MaterializingEvaluator(FakeEvaluator):
    def __init__(self, error: Exception | None = None) -> None:
        super().__init__()
        self.materialize_error = error
        self.seen: list[tuple[list[str], list[str]]] = []

    def materialize_criterion(
        self, metric: EvalMetric, actuals: Sequence[Invocation], expecteds: Sequence[Invocation]
    ) -> Criterion | None:
        self.seen.append(([a.invocation_id for a in actuals], [e.invocation_id for e in expecteds]))
        if self.materialize_error is not None and len(actuals) == 2:
            raise self.materialize_error
        return Criterion(llm_judge=LLMCriterion(template=JudgeTemplateOptions(prompt=f"rendered turn {len(actuals)}")))


@pytest.mark.asyncio
async def test_materializing_evaluator_stores_per_turn_criterion_and_overall_keeps_configured() -> None:
    metric = template_metric()
    evaluator = MaterializingEvaluator()
    inference = passed_inference("c", turn("p1", "a1", final="r"), turn("p2", "a2", final="r"))
    case_result = await evaluate_one(inference, [metric], {"m": evaluator}, make_case("c", "p1", "p2"))

    assert evaluator.seen == [(["a1"], ["c-1"]), (["a1", "a2"], ["c-1", "c-2"])]
    prompts = []
    for per_turn in case_result.eval_metric_result_per_invocation:
        criterion = per_turn.eval_metric_results[0].criterion
        assert criterion is not None and criterion.llm_judge is not None and criterion.llm_judge.template is not None
        prompts.append(criterion.llm_judge.template.prompt)
    assert prompts == ["rendered turn 1", "rendered turn 2"]
    overall = case_result.overall_eval_metric_results[0]
    assert overall.criterion == metric.criterion
    assert overall.criterion is not metric.criterion


@pytest.mark.asyncio
async def test_materialize_error_fails_the_case() -> None:
    evaluator = MaterializingEvaluator(ValueError("cannot render"))
    inference = passed_inference("c", turn("p1", "a1", final="r"), turn("p2", "a2", final="r"))
    case_result = await evaluate_one(inference, [template_metric()], {"m": evaluator}, make_case("c", "p1", "p2"))
    assert_failed_case(case_result, "materialize criterion for metric m invocation 1: ValueError: cannot render")


@pytest.mark.asyncio
async def test_plain_evaluator_gets_a_copy_of_the_configured_criterion_per_turn() -> None:
    metric = template_metric()
    case_result = await evaluate_one(passed_inference("c"), [metric], {"m": FakeEvaluator()}, make_case("c", "prompt"))
    per_turn = case_result.eval_metric_result_per_invocation[0].eval_metric_results[0]
    assert per_turn.criterion == metric.criterion
    assert per_turn.criterion is not metric.criterion


@pytest.mark.asyncio
async def test_caller_metrics_are_never_mutated() -> None:
    metrics = [
        judge_metric("judge", "metric-rubric"),
        template_metric().model_copy(update={"extension": {"weight": 0.5}}),
    ]
    snapshots = [m.model_dump() for m in metrics]
    case = make_case("c", "prompt", rubrics=[case_rubric("judge", "case rule")])
    request_object = evaluate_request(passed_inference("c"), metrics=metrics)
    service = make_service(await make_manager(case), {"judge": FakeEvaluator(), "m": MaterializingEvaluator()})
    result = await service.evaluate(request_object)

    assert only_case(result.eval_case_results).final_eval_status == PASSED
    assert request_object.evaluate_config.eval_metrics[0] is metrics[0]
    assert [m.model_dump() for m in metrics] == snapshots


# ----------------------------------------------------------------------------- item 62: metric extensions


def compare_metric(name: str, compare_name: str) -> EvalMetric:
    return EvalMetric(
        metric_name=name,
        evaluator_name="final_response_avg_score",
        threshold=1.0,
        criterion=Criterion(final_response=FinalResponseCriterion(text=TextCriterion(compare_name=compare_name))),
    )


def builtin_final_response() -> dict[str, MetricEvaluator]:
    return {"final_response_avg_score": default_registry().get("final_response_avg_score")}


def set_probe(seen: list[AfterEvaluateSetArgs]) -> Callbacks:
    return Callbacks().register_after_evaluate_set("probe", lambda context, args: seen.append(args))


@pytest.mark.asyncio
async def test_unknown_compare_name_raises_resolve_metric_extensions_naming_the_index() -> None:
    seen: list[AfterEvaluateSetArgs] = []
    evaluator = FakeEvaluator()
    service = make_service(
        await make_manager(make_case("c", "prompt")),
        {"m": evaluator, **builtin_final_response()},
        metric_registry=MetricRegistry(),
        callbacks=set_probe(seen),
    )
    metrics = [EvalMetric(metric_name="m"), compare_metric("loose", "casefold")]
    with pytest.raises(ConfigError) as caught:
        await service.evaluate(evaluate_request(passed_inference("c"), metrics=metrics))
    assert str(caught.value) == (
        "resolve metric extensions (app=app, evalSetID=set): resolve metric at index 1: "
        'metric "loose": criterion.finalResponse.text.compareName "casefold" is not registered as a text compare'
    )
    assert evaluator.calls == []
    assert seen == []  # resolution fails before the after-set callbacks are due, as in the reference


@pytest.mark.asyncio
async def test_none_metric_raises_resolve_metric_extensions() -> None:
    service = make_service(await make_manager(make_case("c", "prompt")), {"m": FakeEvaluator()})
    metrics = [None, EvalMetric(metric_name="m")]
    with pytest.raises(ConfigError) as caught:
        await service.evaluate(evaluate_request(passed_inference("c"), metrics=metrics))  # type: ignore[arg-type]
    assert str(caught.value) == (
        "resolve metric extensions (app=app, evalSetID=set): resolve metric at index 0: eval metric is nil"
    )


@pytest.mark.asyncio
async def test_registered_compare_is_resolved_and_used() -> None:
    """The reference fills the caller's metric with the compare; the port looks it up while scoring instead."""
    registry = MetricRegistry()
    registry.register_text_compare("casefold", lambda actual, expected: actual.casefold() == expected.casefold())
    metric = compare_metric("loose", "casefold")
    snapshot = metric.model_dump()
    service = make_service(
        await make_manager(make_case("c", "prompt")), builtin_final_response(), metric_registry=registry
    )
    inference = passed_inference("c", turn("prompt", "c-1", final="EXPECTED PROMPT"))
    result = await service.evaluate(evaluate_request(inference, metrics=[metric]))
    case_result = only_case(result.eval_case_results)
    assert case_result.final_eval_status == PASSED
    assert [m.score for m in case_result.overall_eval_metric_results] == [1.0]
    assert metric.model_dump() == snapshot


# ----------------------------------------------------------------------------- item 63: a None inference result

NIL_INFERENCE = (
    "evaluate case results (app=app, evalSetID=set): evaluate case (app=app, evalSetID=set, evalCaseID=): "
    "inference result is nil"
)


@pytest.mark.asyncio
@pytest.mark.parametrize("parallel", [False, True])
async def test_none_inference_result_raises_after_the_after_set_callbacks_ran(parallel: bool) -> None:
    seen: list[AfterEvaluateSetArgs] = []
    evaluator = FakeEvaluator()
    service = make_service(
        await make_manager(make_case("a", "prompt")),
        {"m": evaluator},
        callbacks=set_probe(seen),
        parallel_evaluation=parallel,
    )
    inferences = [passed_inference("a", turn("prompt", "a-1", final="answer")), None]
    with pytest.raises(ConfigError) as caught:
        await service.evaluate(evaluate_request(*inferences, metrics=[EvalMetric(metric_name="m")]))  # type: ignore[arg-type]
    assert str(caught.value).startswith(NIL_INFERENCE)
    assert "pass only the InferenceResult objects returned by inference()" in str(caught.value)
    assert len(evaluator.calls) == 1  # the case before it was evaluated
    (args,) = seen
    assert args.result is None
    assert args.error is caught.value


@pytest.mark.asyncio
async def test_none_inference_result_stops_later_cases_in_serial_mode() -> None:
    evaluator = FakeEvaluator()
    service = make_service(await make_manager(make_case("a", "prompt")), {"m": evaluator})
    inferences = [None, passed_inference("a")]
    with pytest.raises(ConfigError, match="inference result is nil"):
        await service.evaluate(evaluate_request(*inferences, metrics=[EvalMetric(metric_name="m")]))  # type: ignore[arg-type]
    assert evaluator.calls == []


# ----------------------------------------------------------------------------- item 64: nothing is saved


@pytest.mark.asyncio
async def test_evaluate_never_saves(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    async def refuse(*args: object, **kwargs: object) -> str:
        raise AssertionError("evaluate must not save results")

    monkeypatch.setattr(InMemoryEvalResultManager, "save", refuse)
    monkeypatch.setattr(LocalEvalResultManager, "save", refuse)
    monkeypatch.chdir(tmp_path)
    assert not any("result" in f.name for f in dataclasses.fields(ServiceOptions))

    service = make_service(await make_manager(make_case("c", "prompt")), {"m": FakeEvaluator()})
    result = await service.evaluate(evaluate_request(passed_inference("c"), metrics=[EvalMetric(metric_name="m")]))
    assert only_case(result.eval_case_results).final_eval_status == PASSED
    assert list(tmp_path.iterdir()) == []


@pytest.mark.asyncio
async def test_evaluate_is_repeatable_on_the_same_request() -> None:
    service = make_service(await make_manager(make_case("c", "prompt")), {"m": FakeEvaluator()})
    evaluate_request = EvaluateRequest(
        app_name=APP,
        eval_set_id=SET,
        inference_results=[passed_inference("c", execution_traces=[trace("t")])],
        evaluate_config=EvaluateConfig(eval_metrics=[EvalMetric(metric_name="m")]),
    )
    first = await service.evaluate(evaluate_request)
    second = await service.evaluate(evaluate_request)
    assert first.eval_case_results == second.eval_case_results
