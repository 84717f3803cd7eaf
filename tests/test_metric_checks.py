"""Metrics that would fail every case stop ``Evaluator.evaluate`` and ``rescore`` before anything runs."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pytest

import agenteval as ae
from agenteval._util.sync_bridge import run_sync
from agenteval.errors import ConfigError
from agenteval.evalset import EvalCaseRubric
from agenteval.evalset.memory import InMemoryEvalSetManager
from agenteval.evaluators.base import EvaluateResult, PerInvocationResult
from agenteval.evaluators.registry import default_registry
from agenteval.llm.base import ChatResponse
from agenteval.metric import MetricRegistry
from agenteval.metric.memory import InMemoryMetricManager
from agenteval.service._metric_checks import check_metrics
from agenteval.service.local import LocalService
from agenteval.service.options import ServiceOptions
from agenteval.service.types import EvaluateConfig, EvaluateRequest, InferenceRequest
from agenteval.testing import FunctionChatModel, verifier_reply

APP = "checks-app"
FINAL = "final_response_avg_score"
TRAJECTORY = "tool_trajectory_avg_score"
TEMPLATE = "llm_judge_template"
QUESTION = {"templateVariable": "q", "source": {"scope": "actual", "field": "userContent"}}
RUBRICS = [{"id": "r1", "content": {"text": "The reply answers the question."}}]
RUBRIC_REPLY = '{"rubricScores": [{"id": "r1", "score": 1, "reason": "answers it"}]}'


class CountingAgent:
    """Echoes ``say X`` as ``X`` and counts its turns."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, message: str) -> str:
        self.calls += 1
        return message.removeprefix("say ")


def _eval_set() -> ae.EvalSet:
    def turn(word: str) -> ae.Invocation:
        return ae.Invocation(user_content=ae.Message.user(f"say {word}"), final_response=ae.Message.assistant(word))

    return ae.EvalSet(
        eval_set_id="checks",
        eval_cases=[
            ae.EvalCase(
                eval_id=eval_id,
                conversation=[turn(f"{eval_id}1"), turn(f"{eval_id}2")],
                session_input=ae.SessionInput(user_id="user"),
            )
            for eval_id in ("a", "b")
        ],
    )


def _metric(name: str, evaluator: str, criterion: dict[str, Any] | None, threshold: float = 0.5) -> ae.EvalMetric:
    return ae.EvalMetric.model_validate(
        {"metricName": name, "evaluatorName": evaluator, "threshold": threshold, "criterion": criterion}
    )


def _template(llm_judge: dict[str, Any] | None = None, **template: Any) -> dict[str, Any]:
    fields = {"prompt": "{{q}}", "responseScorerName": "single_score", "variableBindings": [QUESTION], **template}
    return {"llmJudge": {"template": fields, **(llm_judge or {})}}


def _judge(reply: str | ChatResponse = '{"score": 1, "reason": "fine"}') -> FunctionChatModel:
    return FunctionChatModel(lambda request: reply)


VALID_FIRST = _metric("exact", FINAL, {"finalResponse": {"text": {}}}, threshold=1.0)

# (metric name, evaluator, criterion, judge override given, what the error says)
MISCONFIGURED: list[tuple[str, str, dict[str, Any] | None, bool, str]] = [
    (
        "scorer_typo",
        TEMPLATE,
        _template(responseScorerName="singel_score"),
        True,
        "response scorer 'singel_score' is not registered",
    ),
    ("rouge_without_type", FINAL, {"finalResponse": {"rouge": {}}}, False, "rougeType is required"),
    ("xml_without_strategy", FINAL, {"finalResponse": {"xml": {"valid": True}}}, False, "xml match strategy is empty"),
    (
        "invalid_schema",
        FINAL,
        {"finalResponse": {"json": {"schema": {"type": 123}}}},
        False,
        "criterion.finalResponse.json.schema is not a valid JSON Schema",
    ),
    (
        "both_trees",
        FINAL,
        {"finalResponse": {"json": {"onlyTree": {"a": True}, "ignoreTree": {"b": True}}}},
        False,
        "criterion.finalResponse.json: onlyTree and ignoreTree cannot be set at the same time",
    ),
    (
        "tool_both_trees",
        TRAJECTORY,
        {"toolTrajectory": {"defaultStrategy": {"arguments": {"onlyTree": {"a": True}, "ignoreTree": {"b": True}}}}},
        False,
        "criterion.toolTrajectory.defaultStrategy.arguments: onlyTree and ignoreTree cannot be set at the same time",
    ),
    (
        "non_bool_leaf",
        FINAL,
        {"finalResponse": {"json": {"onlyTree": {"a": "yes"}}}},
        False,
        'criterion.finalResponse.json: onlyTree.a must be a bool or an object, got "yes"',
    ),
    (
        "tool_non_bool_leaf",
        TRAJECTORY,
        {"toolTrajectory": {"toolStrategy": {"calc": {"result": {"onlyTree": {"a": {"b": 1}}}}}}},
        False,
        "criterion.toolTrajectory.toolStrategy.calc.result: onlyTree.a.b must be a bool or an object, got 1",
    ),
    (
        "negative_tolerance",
        FINAL,
        {"finalResponse": {"json": {"numberTolerance": -1}}},
        False,
        "criterion.finalResponse.json: numberTolerance must be a non-negative number, got -1",
    ),
    (
        "tool_negative_tolerance",
        TRAJECTORY,
        {"toolTrajectory": {"defaultStrategy": {"arguments": {"numberTolerance": -0.5}}}},
        False,
        "criterion.toolTrajectory.defaultStrategy.arguments: numberTolerance must be a non-negative number, got -0.5",
    ),
    (
        "min_over_max",
        FINAL,
        {"finalResponse": {"text": {"length": {"min": 5, "max": 1}}}},
        False,
        "criterion.finalResponse.text.length: min (5) must be less than or equal to max (1)",
    ),
    (
        "empty_length",
        FINAL,
        {"finalResponse": {"text": {"length": {}}}},
        False,
        "criterion.finalResponse.text.length must configure min or max",
    ),
    (
        "tool_name_empty_length",
        TRAJECTORY,
        {"toolTrajectory": {"defaultStrategy": {"name": {"length": {}}}}},
        False,
        "criterion.toolTrajectory.defaultStrategy.name.length must configure min or max",
    ),
    (
        "unknown_sample_aggregator",
        TEMPLATE,
        _template(sampleAggregatorName="median"),
        True,
        "samples aggregator 'median' is not registered",
    ),
    (
        "unbound_placeholder",
        TEMPLATE,
        _template(prompt="{{q}} {{answer}} {{note?}}"),
        True,
        "template prompt: placeholders {{answer}} have no variableBindings entry",
    ),
    (
        "duplicate_variable",
        TEMPLATE,
        _template(variableBindings=[QUESTION, QUESTION]),
        True,
        'templateVariable "q" is duplicated',
    ),
    (
        "expected_user_content",
        TEMPLATE,
        _template(
            variableBindings=[{"templateVariable": "q", "source": {"scope": "expected", "field": "userContent"}}]
        ),
        True,
        'resolve template variable "q": unsupported source expected.userContent',
    ),
    (
        "trace_without_node",
        TEMPLATE,
        _template(
            variableBindings=[{"templateVariable": "q", "source": {"scope": "actual", "field": "traceStepInput"}}]
        ),
        True,
        'resolve template variable "q": trace selector nodeID is required',
    ),
    (
        "categorical_without_options",
        TEMPLATE,
        _template(responseScorerName="categorical"),
        True,
        "template.responseScorerOptions is required for the categorical scorer",
    ),
    (
        "categorical_schema_without_options",
        TEMPLATE,
        _template(structuredOutputName="categorical_result"),
        True,
        "template.responseScorerOptions is required for the categorical scorer",
    ),
    (
        "sample_parallelism",
        TEMPLATE,
        _template({"sampleParallelismEnabled": True, "sampleParallelism": -1}),
        True,
        "sample parallelism must be non-negative",
    ),
    (
        "negative_num_samples",
        "llm_final_response",
        {"llmJudge": {"judgeModel": {"providerName": "openai", "modelName": "m", "numSamples": -1}}},
        False,
        "num samples must be greater than 0, got -1",
    ),
    (
        "unknown_provider",
        "llm_rubric_response",
        {"llmJudge": {"judgeModel": {"providerName": "anthropic", "modelName": "claude"}, "rubrics": RUBRICS}},
        False,
        "judgeModel.providerName 'anthropic' is not supported",
    ),
    (
        "empty_model_name",
        "llm_hallucinations",
        {"llmJudge": {"judgeModel": {"providerName": "openai", "modelName": ""}}},
        False,
        "judgeModel.modelName is empty",
    ),
    (
        "no_judge",
        "llm_rubric_critic",
        {"llmJudge": {"rubrics": RUBRICS}},
        False,
        "needs criterion.llmJudge.judgeModel, or pass judge=<ChatModel> to the Evaluator",
    ),
    ("no_llm_judge", "llm_final_response", None, True, "has no criterion.llmJudge"),
    (
        "no_criterion",
        FINAL,
        None,
        False,
        'final response criterion not configured: build the metric with ae.EvalMetric.final_response("exact"), or '
        "give it criterion=ae.criteria.Criterion(final_response=ae.criteria.FinalResponseCriterion("
        'text=ae.criteria.TextCriterion())) (in a metrics file: "criterion": {"finalResponse": {"text": {}}})',
    ),
    (
        "no_trajectory_criterion",
        TRAJECTORY,
        {"finalResponse": {"text": {}}},
        False,
        "tool trajectory criterion not configured: build the metric with ae.EvalMetric.tool_trajectory(), or give "
        "it criterion=ae.criteria.Criterion(tool_trajectory=ae.criteria.ToolTrajectoryCriterion()) (in a metrics "
        'file: "criterion": {"toolTrajectory": {}})',
    ),
    (
        "empty_final_response",
        FINAL,
        {"finalResponse": {}},
        False,
        "final response criterion must configure text, json, rouge, or xml: for an exact match give it "
        "ae.criteria.FinalResponseCriterion(text=ae.criteria.TextCriterion()) (in a metrics file: "
        '"finalResponse": {"text": {}})',
    ),
]


def _error_pattern(name: str, fragment: str) -> str:
    return rf"^resolve metric at index 1 \({name}\): .*{re.escape(fragment)}"


@pytest.mark.parametrize(("name", "evaluator", "criterion", "with_judge", "fragment"), MISCONFIGURED)
def test_a_misconfigured_metric_stops_evaluate_before_the_agent_runs(
    name: str, evaluator: str, criterion: dict[str, Any] | None, with_judge: bool, fragment: str
) -> None:
    agent = CountingAgent()
    judge = _judge()
    ev = ae.Evaluator(APP, agent, progress=False, num_runs=3)

    with pytest.raises(ConfigError, match=_error_pattern(name, fragment)):
        ev.evaluate(
            _eval_set(),
            metrics=[VALID_FIRST, _metric(name, evaluator, criterion)],
            judge=judge if with_judge else None,
        )

    assert agent.calls == 0
    assert judge.requests == []


@pytest.mark.parametrize(("name", "evaluator", "criterion", "with_judge", "fragment"), MISCONFIGURED)
def test_rescore_checks_the_new_metrics_before_scoring(
    name: str, evaluator: str, criterion: dict[str, Any] | None, with_judge: bool, fragment: str
) -> None:
    agent = CountingAgent()
    ev = ae.Evaluator(APP, agent, progress=False)
    report = ev.evaluate(_eval_set(), metrics=[VALID_FIRST])
    judge = _judge()

    with pytest.raises(ConfigError, match=_error_pattern(name, fragment)):
        ev.rescore(
            report, metrics=[VALID_FIRST, _metric(name, evaluator, criterion)], judge=judge if with_judge else None
        )

    assert agent.calls == 4
    assert judge.requests == []


def test_the_reported_template_typo_in_a_metric_file_fails_before_the_first_turn() -> None:
    metric = ae.EvalMetric.model_validate_json(
        '{"metricName":"t","evaluatorName":"llm_judge_template","threshold":0.5,"criterion":{"llmJudge":{"template":'
        '{"prompt":"{{q}}","responseScorerName":"singel_score","variableBindings":[{"templateVariable":"q",'
        '"source":{"scope":"actual","field":"userContent"}}]}}}}'
    )
    metrics = InMemoryMetricManager()
    run_sync(metrics.add(APP, "checks", metric))
    agent = CountingAgent()
    ev = ae.Evaluator(APP, agent, metric_manager=metrics, progress=False, num_runs=3, judge=_judge())

    with pytest.raises(ConfigError) as caught:
        ev.evaluate(_eval_set())

    assert str(caught.value) == (
        "resolve metric at index 0 (t): metric t: response scorer 'singel_score' is not registered; registered: "
        "['boolean', 'categorical', 'rubric_scores', 'single_score']"
    )
    assert agent.calls == 0


# (evaluator, criterion, the judge's reply)
VALID: list[tuple[str, dict[str, Any], str | ChatResponse]] = [
    (FINAL, {"finalResponse": {"text": {"length": {"max": 10}}, "json": {"ignore": True, "numberTolerance": -1}}}, ""),
    (FINAL, {"finalResponse": {"json": {"matchStrategy": "skip", "onlyTree": {"a": "yes"}}, "text": {}}}, ""),
    (FINAL, {"finalResponse": {"text": {"compareName": "", "length": {"ignore": True}}}}, ""),
    (TRAJECTORY, {"toolTrajectory": {"defaultStrategy": {"arguments": {"numberTolerance": 0}}}}, ""),
    ("llm_final_response", {"llmJudge": {}}, "reasoning: same answer\nis_the_agent_response_valid: valid"),
    ("llm_rubric_response", {"llmJudge": {"rubrics": RUBRICS}}, RUBRIC_REPLY),
    ("llm_rubric_critic", {"llmJudge": {"rubrics": RUBRICS}}, RUBRIC_REPLY),
    ("llm_rubric_reference_critic", {"llmJudge": {"rubrics": RUBRICS}}, RUBRIC_REPLY),
    ("llm_rubric_knowledge_recall", {"llmJudge": {"rubrics": RUBRICS}}, RUBRIC_REPLY),
    ("llm_verifier_pairwise", {"llmJudge": {"rubrics": RUBRICS}}, verifier_reply("A", "A")),
    (
        "llm_hallucinations",
        # The judge's unknown provider does not matter: the evaluation's judge replaces it.
        {"llmJudge": {"judgeModel": {"providerName": "anthropic"}}},
        "<sentence>the reply</sentence>\nID: 1\nReason: said by the user\nLabel: supported\nVerdict: yes",
    ),
    (
        TEMPLATE,
        _template(prompt="{{q}} {{extra?}}", sampleAggregatorName="majority_vote"),
        '{"score": 1, "reason": "ok"}',
    ),
    (
        TEMPLATE,
        _template(
            responseScorerName="categorical",
            responseScorerOptions={"categories": [{"label": "good", "score": 1}, {"label": "bad", "score": 0}]},
        ),
        '{"category": "good", "reason": "ok"}',
    ),
    (
        TEMPLATE,
        _template(
            {"sampleParallelismEnabled": True, "sampleParallelism": 0, "rubrics": RUBRICS},
            prompt="{{q}} {{rubrics}}",
            responseScorerName="rubric_scores",
            variableBindings=[
                QUESTION,
                {"templateVariable": "rubrics", "source": {"scope": "metric", "field": "rubrics"}},
            ],
        ),
        RUBRIC_REPLY,
    ),
]


@pytest.mark.parametrize(("evaluator", "criterion", "reply"), VALID)
def test_a_valid_metric_of_each_evaluator_still_runs(
    evaluator: str, criterion: dict[str, Any], reply: str | ChatResponse
) -> None:
    agent = CountingAgent()
    judge = _judge(reply)
    ev = ae.Evaluator(APP, agent, progress=False, judge=judge)

    report = ev.evaluate(_eval_set(), metrics=[_metric("m", evaluator, criterion)])

    assert agent.calls == 4
    assert [(case.eval_id, case.error_message) for case in report.result.eval_case_results] == [("a", ""), ("b", "")]
    assert report.overall_status == ae.EvalStatus.PASSED
    assert len(judge.requests) == (0 if evaluator in (FINAL, TRAJECTORY) else 4 * (2 if "halluc" in evaluator else 1))


# (threshold, the fix the message ends with)
OUT_OF_RANGE: list[tuple[float, str]] = [
    (80, "scores are fractions, so write e.g. threshold=0.8 for 80%"),
    (1.5, "scores are fractions, so write e.g. threshold=0.015 for 1.5%"),
    (250, "scores are fractions, so write a threshold from 0 to 1"),
    (-0.5, "scores are fractions, so write a threshold from 0 to 1"),
]
BUILTIN_EVALUATORS = sorted({evaluator for evaluator, _, _ in VALID})


def test_every_builtin_evaluator_is_checked_for_its_threshold() -> None:
    assert default_registry().names() == BUILTIN_EVALUATORS


@pytest.mark.parametrize(("threshold", "fix"), OUT_OF_RANGE)
@pytest.mark.parametrize(("evaluator", "criterion", "reply"), VALID)
def test_a_threshold_outside_the_score_range_stops_evaluate_before_the_agent_runs(
    evaluator: str, criterion: dict[str, Any], reply: str, threshold: float, fix: str
) -> None:
    agent = CountingAgent()
    judge = _judge(reply)
    ev = ae.Evaluator(APP, agent, progress=False, judge=judge)
    metric = _metric("m", evaluator, criterion, threshold=threshold)

    with pytest.raises(ConfigError) as caught:
        ev.evaluate(_eval_set(), metrics=[VALID_FIRST, metric])

    assert str(caught.value) == (
        f"resolve metric at index 1 (m): threshold {threshold:g} is outside the score range of {evaluator} "
        f"(0 to 1): {fix}"
    )
    assert agent.calls == 0
    assert judge.requests == []


@pytest.mark.parametrize("threshold", [0.0, 1.0])
@pytest.mark.parametrize(("evaluator", "criterion", "reply"), VALID)
def test_the_ends_of_the_score_range_are_valid_thresholds(
    evaluator: str, criterion: dict[str, Any], reply: str, threshold: float
) -> None:
    options = ServiceOptions(judge=_judge(reply))
    check_metrics([_metric("m", evaluator, criterion, threshold=threshold)], options)


def test_check_metrics_refuses_a_percentage_threshold_naming_the_evaluator_the_metric_runs() -> None:
    metric = ae.EvalMetric.final_response("exact", name="percent").model_copy(update={"threshold": 90.0})

    with pytest.raises(ConfigError) as caught:
        check_metrics([VALID_FIRST, metric], ServiceOptions())

    assert str(caught.value) == (
        "resolve metric at index 1 (percent): threshold 90 is outside the score range of final_response_avg_score "
        "(0 to 1): scores are fractions, so write e.g. threshold=0.9 for 90%"
    )


class _Stars:
    """A user evaluator scoring 1 to 5 stars that declares its range."""

    score_range = (1.0, 5.0)

    def evaluate(
        self, actuals: Sequence[ae.Invocation], expecteds: Sequence[ae.Invocation], metric: ae.EvalMetric
    ) -> EvaluateResult:
        return EvaluateResult(
            overall_score=5.0,
            overall_status=ae.EvalStatus.PASSED,
            per_invocation_results=[PerInvocationResult(score=5.0, status=ae.EvalStatus.PASSED) for _ in actuals],
        )


def test_a_user_evaluator_threshold_is_checked_only_against_a_declared_range() -> None:
    registry = default_registry()
    registry.register("stars", _Stars())
    registry.register("plain", _constant)
    options = ServiceOptions(registry=registry)
    stars = ae.EvalMetric(metric_name="s", evaluator_name="stars", threshold=4.0)

    check_metrics([stars, ae.EvalMetric(metric_name="p", evaluator_name="plain", threshold=80.0)], options)
    with pytest.raises(ConfigError) as caught:
        check_metrics([stars.model_copy(update={"threshold": 0.5})], options)

    assert str(caught.value) == (
        "resolve metric at index 0 (s): threshold 0.5 is outside the score range of stars (1 to 5): "
        "write a threshold from 1 to 5"
    )


def test_template_rubrics_may_come_from_the_cases() -> None:
    # A metric without rubrics is fine ahead: each case may add its own.
    criterion = _template(
        prompt="{{rubrics}}",
        responseScorerName="rubric_scores",
        variableBindings=[{"templateVariable": "rubrics", "source": {"scope": "metric", "field": "rubrics"}}],
    )
    eval_set = _eval_set()
    for case in eval_set.eval_cases:
        case.rubrics = [EvalCaseRubric.model_validate({"metricName": "m", "id": "r1", "content": {"text": "ok"}})]
    agent = CountingAgent()

    report = ae.Evaluator(APP, agent, progress=False, judge=_judge(RUBRIC_REPLY)).evaluate(
        eval_set, metrics=[_metric("m", TEMPLATE, criterion)]
    )

    assert report.overall_status == ae.EvalStatus.PASSED
    assert agent.calls == 4


def _constant(actuals: Sequence[ae.Invocation], expecteds: Sequence[ae.Invocation], metric: ae.EvalMetric) -> Any:
    return EvaluateResult(
        overall_score=1.0,
        overall_status=ae.EvalStatus.PASSED,
        per_invocation_results=[PerInvocationResult(score=1.0, status=ae.EvalStatus.PASSED) for _ in actuals],
    )


class _Weighted:
    """A user evaluator with a check: its metric needs a weight."""

    def __init__(self) -> None:
        self.checked: list[str] = []

    def check_metric(self, metric: ae.EvalMetric) -> None:
        self.checked.append(metric.metric_name)
        if not isinstance(metric.extension, dict) or "weight" not in metric.extension:
            raise ValueError("extension.weight is required")

    def evaluate(
        self, actuals: Sequence[ae.Invocation], expecteds: Sequence[ae.Invocation], metric: ae.EvalMetric
    ) -> EvaluateResult:
        result: EvaluateResult = _constant(actuals, expecteds, metric)
        return result


def test_a_user_evaluator_check_runs_before_the_agent() -> None:
    weighted = _Weighted()
    registry = default_registry()
    registry.register("weighted", weighted)
    agent = CountingAgent()
    ev = ae.Evaluator(APP, agent, progress=False, registry=registry)
    unweighted = ae.EvalMetric(metric_name="w", evaluator_name="weighted", threshold=1.0)

    with pytest.raises(
        ConfigError, match=r"^resolve metric at index 0 \(w\): ValueError: extension.weight is required$"
    ):
        ev.evaluate(_eval_set(), metrics=[unweighted])
    report = ev.evaluate(_eval_set(), metrics=[unweighted.model_copy(update={"extension": {"weight": 2}})])

    assert weighted.checked == ["w", "w"]
    assert agent.calls == 4
    assert report.overall_status == ae.EvalStatus.PASSED


def test_user_evaluators_without_a_check_and_unregistered_evaluators_still_work() -> None:
    registry = default_registry()
    registry.register("plain", _constant)
    agent = CountingAgent()
    ev = ae.Evaluator(APP, agent, progress=False, registry=registry)

    with pytest.warns(ae.SkippedMetricWarning, match=r"^metric 'skipped' names evaluator 'nobody', which is not regis"):
        report = ev.evaluate(
            _eval_set(),
            metrics=[
                ae.EvalMetric(metric_name="p", evaluator_name="plain", threshold=1.0),
                ae.EvalMetric(metric_name="skipped", evaluator_name="nobody", threshold=1.0),
            ],
        )

    assert agent.calls == 4
    assert report.overall_status == ae.EvalStatus.PASSED
    assert {
        result.metric_name for case in report.result.eval_case_results for result in case.overall_eval_metric_results
    } == {"p"}


def test_named_compares_are_looked_up_in_the_evaluations_metric_registry() -> None:
    metric_registry = MetricRegistry()
    metric_registry.register_text_compare("loose", lambda actual, expected: True)
    criterion = {"toolTrajectory": {"defaultStrategy": {"name": {"compareName": "loose", "length": {}}}}}
    ev = ae.Evaluator(APP, CountingAgent(), progress=False)

    with pytest.raises(ConfigError, match='compareName "loose" is not registered'):
        ev.evaluate(_eval_set(), metrics=[_metric("m", TRAJECTORY, criterion)])
    # A registered compare replaces the length check, so nothing else is checked.
    report = ev.evaluate(_eval_set(), metrics=[_metric("m", TRAJECTORY, criterion)], metric_registry=metric_registry)

    assert report.overall_status == ae.EvalStatus.PASSED


@pytest.mark.asyncio
async def test_the_local_service_still_fails_the_cases_as_the_reference() -> None:
    eval_set = _eval_set()
    sets = InMemoryEvalSetManager()
    await sets.create(APP, eval_set.eval_set_id)
    for case in eval_set.eval_cases:
        await sets.add_case(APP, eval_set.eval_set_id, case)
    agent = CountingAgent()
    service = LocalService(agent, eval_set_manager=sets)
    inferences = await service.inference(InferenceRequest(app_name=APP, eval_set_id=eval_set.eval_set_id))
    metric = _metric("t", TEMPLATE, _template(responseScorerName="singel_score"))

    result = await service.evaluate(
        EvaluateRequest(
            app_name=APP,
            eval_set_id=eval_set.eval_set_id,
            inference_results=inferences,
            evaluate_config=EvaluateConfig(eval_metrics=[metric]),
        )
    )

    assert agent.calls == 4
    assert [case.final_eval_status for case in result.eval_case_results] == [ae.EvalStatus.FAILED] * 2
    assert all(
        "response scorer 'singel_score' is not registered" in case.error_message for case in result.eval_case_results
    )
