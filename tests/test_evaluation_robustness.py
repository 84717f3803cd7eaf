"""The facade keeps what users rely on when an agent misbehaves or an evaluation is cut short."""

from __future__ import annotations

import asyncio
import logging
import math

import pytest

import agenteval as ae
from agenteval.evalset.message import Message
from agenteval.evaluators.base import EvaluateResult, PerInvocationResult
from agenteval.evaluators.registry import default_registry
from agenteval.service.callbacks import AfterEvaluateSetArgs, AfterInferenceSetArgs
from agenteval.testing import ScriptedChatModel
from tests.test_evaluation import (
    APP,
    SET,
    RecordingResultManager,
    echo,
    fill,
    final_response,
    make_case,
    turn,
)

# Many tests here run cases without metrics on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::agenteval.errors.NoMetricsWarning")


def state_case(eval_id: str) -> ae.EvalCase:
    case = make_case(eval_id, turn(f"say {eval_id}", eval_id), turn(f"say {eval_id}", eval_id))
    assert case.session_input is not None
    case.session_input.state = {"count": 0}
    return case


def test_what_an_agent_does_to_state_and_messages_never_reaches_the_next_run_or_the_report() -> None:
    seen: list[int] = []

    def meddling(text: str, t: ae.Turn) -> str:
        seen.append(t.state["count"])
        t.state["count"] += 1
        t.message.content = "overwritten"
        return text.removeprefix("say ")

    eval_set = ae.EvalSet(eval_set_id=SET, eval_cases=[state_case("a")])
    report = ae.Evaluator(APP, meddling).evaluate(eval_set, num_runs=3, metrics=[final_response()])

    # Changes to the state last for the case's turns, and start afresh in every run.
    assert seen == [0, 1, 0, 1, 0, 1]
    assert report.eval_set is not None
    stored = report.eval_set.eval_cases[0]
    assert stored.session_input is not None and stored.session_input.state == {"count": 0}
    assert stored.conversation[0].user_content == Message.user("say a")
    assert eval_set.eval_cases[0].conversation[0].user_content == Message.user("say a")
    assert set(report.cases["status"]) == {"passed"}


def test_an_eval_set_object_hashes_the_same_every_time_and_is_left_unchanged() -> None:
    eval_set = ae.EvalSet(eval_set_id=SET, eval_cases=[make_case("a"), make_case("b")])
    before = eval_set.model_dump()
    ev = ae.Evaluator(APP, echo)

    first, second = ev.evaluate(eval_set), ev.evaluate(eval_set)

    assert first.provenance is not None and second.provenance is not None
    assert first.provenance.eval_set_hash == second.provenance.eval_set_hash
    assert eval_set.model_dump() == before


def test_concurrent_runs_share_one_parallelism_limit() -> None:
    active = peak = 0

    async def agent(text: str) -> str:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        return text.removeprefix("say ")

    ev = ae.Evaluator(APP, agent, eval_set_manager=fill([make_case(f"c{i}") for i in range(6)]))
    report = ev.evaluate(SET, num_runs=3, parallel_runs=True, parallel_inference=True, parallelism=2)

    assert peak == 2
    assert len(report.result.eval_case_results) == 18


def failing_in_run(run_to_fail: int) -> ae.Callbacks:
    runs = 0

    def after_inference_set(context: ae.EvalContext, args: AfterInferenceSetArgs) -> None:
        nonlocal runs
        runs += 1
        if runs == run_to_fail:
            raise RuntimeError("disk full")

    return ae.Callbacks().register_after_inference_set("fails", after_inference_set)


def test_a_failure_in_run_two_saves_run_one_as_a_partial_result(caplog: pytest.LogCaptureFixture) -> None:
    results = RecordingResultManager()
    ev = ae.Evaluator(
        APP, echo, eval_set_manager=fill([make_case("a"), make_case("b")]), result_manager=results, num_runs=3
    )

    with caplog.at_level(logging.WARNING, logger="agenteval"), pytest.raises(ae.AgentEvalError) as raised:
        ev.evaluate(SET, metrics=[final_response()], callbacks=failing_in_run(2))

    partial: ae.EvaluationReport = raised.value.report  # type: ignore[attr-defined]
    cases = partial.result.eval_case_results
    # Each case is scored as its inference ends, so run two's cases were scored before its inference set failed.
    assert [(case.run_id, case.eval_id, case.final_eval_status) for case in cases] == [
        (1, "a", ae.EvalStatus.PASSED),
        (1, "b", ae.EvalStatus.PASSED),
        (2, "a", ae.EvalStatus.PASSED),
        (2, "b", ae.EvalStatus.PASSED),
    ]
    assert cases[2].error_message == ""
    assert partial.case_table["status"].tolist() == ["passed", "passed"]
    assert len(results.saved) == 1
    result_id = partial.result.eval_set_result_id
    assert result_id and partial.result.eval_set_result_name == f"{result_id} (partial)"
    assert results.saved[0].eval_set_result_name == f"{result_id} (partial)"
    assert partial.num_runs == 2
    assert partial.provenance is not None
    assert partial.provenance.derived_from == "partial: stopped by CallbackError"
    assert f"the 4 finished case results were saved as {result_id}" in caplog.text
    reloaded = ae.EvaluationReport.load(results, APP, result_id, eval_set=partial.eval_set)
    assert reloaded.cases["eval_id"].tolist() == ["a", "b", "a", "b"]
    rescored = ae.Evaluator(APP).rescore(reloaded, metrics=[final_response()])
    assert set(rescored.cases["status"]) == {"passed"}


def test_a_partial_result_keeps_what_run_ones_after_evaluate_set_callback_left() -> None:
    # The partial result held run one's cases as each was scored, without the set callback's later edits.
    def edit_run_one(context: ae.EvalContext, args: AfterEvaluateSetArgs) -> None:
        if args.request.run_id == 1 and args.result is not None:
            cases = args.result.eval_case_results
            cases[:] = [case for case in cases if case.eval_id != "a"]
            cases[0].user_id = "edited in run 1"

    callbacks = failing_in_run(2).merged(ae.Callbacks().register_after_evaluate_set("edit", edit_run_one))
    ev = ae.Evaluator(APP, echo, eval_set_manager=fill([make_case("a"), make_case("b")]), num_runs=2)

    with pytest.raises(ae.AgentEvalError) as raised:
        ev.evaluate(SET, metrics=[final_response()], callbacks=callbacks)

    partial: ae.EvaluationReport = raised.value.report  # type: ignore[attr-defined]
    cases = partial.result.eval_case_results
    assert [(case.run_id, case.eval_id, case.user_id) for case in cases] == [
        (1, "b", "edited in run 1"),
        (2, "a", "user"),
        (2, "b", "user"),
    ]


def test_a_partial_result_keeps_the_order_run_ones_after_evaluate_set_callback_left() -> None:
    def reverse_run_one(context: ae.EvalContext, args: AfterEvaluateSetArgs) -> None:
        if args.request.run_id == 1 and args.result is not None:
            args.result.eval_case_results.reverse()

    callbacks = failing_in_run(2).merged(ae.Callbacks().register_after_evaluate_set("reverse", reverse_run_one))
    ev = ae.Evaluator(APP, echo, eval_set_manager=fill([make_case("a"), make_case("b")]), num_runs=2)

    with pytest.raises(ae.AgentEvalError) as raised:
        ev.evaluate(SET, metrics=[final_response()], callbacks=callbacks)

    partial: ae.EvaluationReport = raised.value.report  # type: ignore[attr-defined]
    assert [(case.run_id, case.eval_id) for case in partial.result.eval_case_results] == [
        (1, "b"),
        (1, "a"),
        (2, "a"),
        (2, "b"),
    ]


def test_a_result_an_after_evaluate_set_callback_broke_leaves_the_cases_as_scored(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # What the callback left cannot be summarized (a case result without a run id): neither the result nor a
    # partial result of it can be saved, so the partial result holds the cases as each was scored.
    def add_broken(context: ae.EvalContext, args: AfterEvaluateSetArgs) -> None:
        if args.result is not None:
            cases = args.result.eval_case_results
            cases.append(cases[0].model_copy(update={"eval_id": "extra", "run_id": 0}))

    results = RecordingResultManager()
    callbacks = ae.Callbacks().register_after_evaluate_set("add", add_broken)
    ev = ae.Evaluator(APP, echo, eval_set_manager=fill([make_case("a"), make_case("b")]), result_manager=results)

    with caplog.at_level(logging.WARNING, logger="agenteval"), pytest.raises(ae.AgentEvalError) as raised:
        ev.evaluate(SET, metrics=[final_response()], callbacks=callbacks)

    partial: ae.EvaluationReport = raised.value.report  # type: ignore[attr-defined]
    assert [(case.run_id, case.eval_id) for case in partial.result.eval_case_results] == [(1, "a"), (1, "b")]
    assert len(results.saved) == 1
    assert "the 2 finished case results were saved" in caplog.text


def test_a_keyboard_interrupt_in_run_two_keeps_run_one() -> None:
    results = RecordingResultManager()
    calls = 0

    def agent(text: str) -> str:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise KeyboardInterrupt
        return text.removeprefix("say ")

    ev = ae.Evaluator(APP, agent, eval_set_manager=fill([make_case("a"), make_case("b")]), result_manager=results)

    with pytest.raises(KeyboardInterrupt) as raised:
        ev.evaluate(SET, num_runs=2)

    partial: ae.EvaluationReport = raised.value.report  # type: ignore[attr-defined]
    assert [(case.run_id, case.eval_id) for case in partial.result.eval_case_results] == [(1, "a"), (1, "b")]
    assert [result.eval_case_results[0].run_id for result in results.saved] == [1]


def test_nothing_is_saved_when_no_case_finished() -> None:
    results = RecordingResultManager()
    ev = ae.Evaluator(APP, echo, eval_set_manager=fill([make_case("a")]), result_manager=results)

    def refuse(context: ae.EvalContext, args: object) -> None:
        raise RuntimeError("not today")

    with pytest.raises(ae.AgentEvalError) as raised:
        ev.evaluate(SET, callbacks=ae.Callbacks().register_before_inference_set("refuse", refuse))

    assert results.saved == []
    assert not hasattr(raised.value, "report")


def test_none_resets_an_optional_option_for_one_call() -> None:
    judge = ScriptedChatModel([])
    ev = ae.Evaluator(APP, echo, eval_set_manager=fill([make_case("a")]), judge=judge)

    with_judge, without = ev.evaluate(SET), ev.evaluate(SET, judge=None)

    assert with_judge.provenance is not None and with_judge.provenance.judge == "agenteval.testing.ScriptedChatModel"
    assert without.provenance is not None and without.provenance.judge == ""
    assert ev.options.judge is judge


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_a_non_finite_score_from_an_evaluator_fails_the_case_not_the_evaluation(bad: float) -> None:
    def fixed(actuals: object, expecteds: object, metric: ae.EvalMetric) -> EvaluateResult:
        return EvaluateResult(
            overall_score=bad,
            overall_status=ae.EvalStatus.PASSED,
            per_invocation_results=[PerInvocationResult(score=bad, status=ae.EvalStatus.PASSED)],
        )

    registry = default_registry()
    registry.register("fixed", fixed)
    ev = ae.Evaluator(APP, echo, eval_set_manager=fill([make_case("a")]), registry=registry)

    report = ev.evaluate(SET, metrics=[ae.EvalMetric(metric_name="m", evaluator_name="fixed", threshold=0.5)])

    assert report.cases["status"].tolist() == ["failed"]
    assert "scores must be finite" in report.cases["error_message"][0]


def test_with_thresholds_accepts_ints_and_rejects_non_numbers() -> None:
    ev = ae.Evaluator(APP, echo, eval_set_manager=fill([make_case("a", turn("say a", "b"))]))
    report = ev.evaluate(SET, metrics=[final_response()])

    assert report.with_thresholds({"final_response_avg_score": 0}).cases["status"].tolist() == ["passed"]
    for bad in ("0.5", math.nan, True):
        with pytest.raises(ae.ConfigError, match="the threshold of final_response_avg_score must be a finite number"):
            report.with_thresholds({"final_response_avg_score": bad})  # type: ignore[dict-item]


def test_saving_a_rescored_report_gives_it_the_stores_id() -> None:
    ev = ae.Evaluator(APP, echo, eval_set_manager=fill([make_case("a")]))
    rescored = ev.rescore(ev.evaluate(SET, metrics=[final_response()]))
    assert rescored.result.eval_set_result_id == ""

    result_id = rescored.save(ae.InMemoryEvalResultManager())

    assert rescored.result.eval_set_result_id == result_id
    assert rescored.result.eval_set_result_name == result_id


def test_a_metric_going_from_failed_to_not_evaluated_is_changed_not_unchanged() -> None:
    def not_evaluated(actuals: object, expecteds: object, metric: ae.EvalMetric) -> EvaluateResult:
        return EvaluateResult(
            overall_score=0.0,
            overall_status=ae.EvalStatus.NOT_EVALUATED,
            per_invocation_results=[PerInvocationResult(score=0.0, status=ae.EvalStatus.NOT_EVALUATED)],
        )

    registry = default_registry()
    registry.register("skips", not_evaluated)
    ev = ae.Evaluator(APP, echo, eval_set_manager=fill([make_case("a", turn("say a", "wrong"))]), registry=registry)
    failed = ev.evaluate(SET, metrics=[final_response()])
    skipped = ev.rescore(failed, metrics=[final_response().model_copy(update={"evaluator_name": "skips"})])

    comparison = ae.compare(failed, skipped)

    assert skipped.cases["status"].tolist() == ["not_evaluated"]
    assert comparison.cases["change"].tolist() == ["changed"]
    assert comparison.summary["cases"]["changed"] == 1
    assert comparison.regressions.empty and comparison.fixes.empty
