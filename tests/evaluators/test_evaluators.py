"""The two deterministic evaluators, end to end on the reference framework's example files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

import agenteval as ae
from agenteval.errors import ConfigError
from agenteval.evalresult.models import EvalSetResult, ScoreKind
from agenteval.evalset.message import Message
from agenteval.evalset.models import EvalSet, Invocation, Tool
from agenteval.evaluators.base import EvaluateResult, MetricEvaluator
from agenteval.evaluators.builtin import builtin_evaluators
from agenteval.evaluators.final_response_evaluator import FinalResponseEvaluator
from agenteval.evaluators.tool_trajectory_evaluator import ToolTrajectoryEvaluator
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus

EXAMPLES = Path(__file__).resolve().parents[1] / "interop" / "trpc-examples"
MATH = EXAMPLES / "local" / "data" / "math-eval-app"
RESULT_FILES = sorted(EXAMPLES.glob("*/output/*/*.evalset_result.json"))

TRAJECTORY: dict[str, Any] = {"toolTrajectory": {}}
TEXT_EXACT: dict[str, Any] = {"finalResponse": {"text": {}}}


def _metric(criterion: dict[str, Any] | None, threshold: float = 1.0, name: str = "m") -> EvalMetric:
    return EvalMetric.model_validate({"metricName": name, "threshold": threshold, "criterion": criterion})


def _turn(content: str | None = None, *tools: Tool) -> Invocation:
    return Invocation(final_response=None if content is None else Message.assistant(content), tools=list(tools))


EVALUATORS: list[tuple[MetricEvaluator, dict[str, Any]]] = [
    (ToolTrajectoryEvaluator(), TRAJECTORY),
    (FinalResponseEvaluator(), TEXT_EXACT),
]


def _evaluate(
    evaluator: MetricEvaluator, actuals: list[Invocation], expecteds: list[Invocation], metric: EvalMetric
) -> EvaluateResult:
    result = evaluator.evaluate(actuals, expecteds, metric)
    assert isinstance(result, EvaluateResult)
    return result


CONFIG_ERRORS: list[tuple[FinalResponseEvaluator | ToolTrajectoryEvaluator, dict[str, Any] | None, str]] = [
    (ToolTrajectoryEvaluator(), None, "tool trajectory criterion not configured"),
    (ToolTrajectoryEvaluator(), {"finalResponse": {"text": {}}}, "tool trajectory criterion not configured"),
    (FinalResponseEvaluator(), None, "final response criterion not configured"),
    (FinalResponseEvaluator(), TRAJECTORY, "final response criterion not configured"),
    (FinalResponseEvaluator(), {"finalResponse": {}}, "must configure text, json, rouge, or xml"),
    (FinalResponseEvaluator(), {"finalResponse": {"rouge": {}}}, "rouge.rougeType is required"),
    (FinalResponseEvaluator(), {"finalResponse": {"xml": {}}}, "xml match strategy is empty"),
    (ToolTrajectoryEvaluator(), {"toolTrajectory": {"compareName": "x"}}, '"x" is not registered as a tool'),
    (FinalResponseEvaluator(), {"finalResponse": {"compareName": "x"}}, '"x" is not registered as a final'),
]


@pytest.mark.parametrize(("evaluator", "criterion", "message"), CONFIG_ERRORS)
def test_configuration_errors(evaluator: MetricEvaluator, criterion: dict[str, Any] | None, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        evaluator.evaluate([], [], _metric(criterion))


@pytest.mark.parametrize(("evaluator", "criterion", "message"), CONFIG_ERRORS)
def test_check_metric_rejects_what_evaluate_rejects(
    evaluator: FinalResponseEvaluator | ToolTrajectoryEvaluator, criterion: dict[str, Any] | None, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        evaluator.check_metric(_metric(criterion))


NOT_CONFIGURED: list[tuple[FinalResponseEvaluator | ToolTrajectoryEvaluator, str, EvalMetric, dict[str, Any]]] = [
    (
        ToolTrajectoryEvaluator(),
        "tool trajectory criterion not configured: build the metric with ae.EvalMetric.tool_trajectory(), or give "
        "it criterion=ae.criteria.Criterion(tool_trajectory=ae.criteria.ToolTrajectoryCriterion()) (in a metrics "
        'file: "criterion": {"toolTrajectory": {}})',
        ae.EvalMetric.tool_trajectory(),
        {"tool_trajectory": ae.criteria.ToolTrajectoryCriterion()},
    ),
    (
        FinalResponseEvaluator(),
        'final response criterion not configured: build the metric with ae.EvalMetric.final_response("exact"), or '
        "give it criterion=ae.criteria.Criterion(final_response=ae.criteria.FinalResponseCriterion("
        'text=ae.criteria.TextCriterion())) (in a metrics file: "criterion": {"finalResponse": {"text": {}}})',
        ae.EvalMetric.final_response("exact"),
        {"final_response": ae.criteria.FinalResponseCriterion(text=ae.criteria.TextCriterion())},
    ),
]


@pytest.mark.parametrize(("evaluator", "message", "built", "criterion"), NOT_CONFIGURED)
def test_a_missing_criterion_says_what_to_write_and_each_suggestion_works(
    evaluator: FinalResponseEvaluator | ToolTrajectoryEvaluator,
    message: str,
    built: EvalMetric,
    criterion: dict[str, Any],
) -> None:
    with pytest.raises(ConfigError) as caught:
        evaluator.check_metric(_metric(None))
    assert str(caught.value) == message

    in_a_metrics_file = message.rpartition('(in a metrics file: "criterion": ')[2].removesuffix(")")
    for metric in (
        built,
        _metric(None).model_copy(update={"criterion": ae.criteria.Criterion(**criterion)}),
        _metric(json.loads(in_a_metrics_file)),
    ):
        evaluator.check_metric(metric)


@pytest.mark.parametrize(
    ("evaluator", "criterion", "message"),
    [
        (
            FinalResponseEvaluator(),
            {"finalResponse": {"json": {"numberTolerance": -1}}},
            "criterion.finalResponse.json: numberTolerance must be a non-negative number, got -1",
        ),
        (
            ToolTrajectoryEvaluator(),
            {"toolTrajectory": {"toolStrategy": {"calc": {"arguments": {"onlyTree": {"a": "x"}}}}}},
            'criterion.toolTrajectory.toolStrategy.calc.arguments: onlyTree.a must be a bool or an object, got "x"',
        ),
    ],
)
def test_a_bad_json_criterion_fails_before_any_turn_is_compared(
    evaluator: FinalResponseEvaluator | ToolTrajectoryEvaluator, criterion: dict[str, Any], message: str
) -> None:
    metric = _metric(criterion)
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}$"):
        evaluator.check_metric(metric)
    # Even with no turns to compare, evaluate rejects it the same way.
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}$"):
        evaluator.evaluate([], [], metric)


@pytest.mark.parametrize(("evaluator", "criterion"), EVALUATORS)
def test_check_metric_accepts_a_usable_criterion(evaluator: MetricEvaluator, criterion: dict[str, Any]) -> None:
    assert isinstance(evaluator, FinalResponseEvaluator | ToolTrajectoryEvaluator)
    evaluator.check_metric(_metric(criterion))


@pytest.mark.parametrize(("evaluator", "criterion"), EVALUATORS)
def test_turn_count_mismatch(evaluator: MetricEvaluator, criterion: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=r"actual invocations \(2\) and expected invocations \(1\) count mismatch"):
        evaluator.evaluate([_turn("a"), _turn("a")], [_turn("a")], _metric(criterion))


@pytest.mark.parametrize(("evaluator", "criterion"), EVALUATORS)
def test_zero_turns_not_evaluated(evaluator: MetricEvaluator, criterion: dict[str, Any]) -> None:
    result = _evaluate(evaluator, [], [], _metric(criterion))
    assert result.overall_status == EvalStatus.NOT_EVALUATED
    assert result.overall_score == 0.0
    assert result.per_invocation_results == []


TWO_TURNS = [
    (
        ToolTrajectoryEvaluator(),
        TRAJECTORY,
        [_turn(None, Tool(name="calc", arguments={"a": 1})), _turn(None, Tool(name="calc", arguments={"a": 1}))],
        [_turn(None, Tool(name="calc", arguments={"a": 1})), _turn(None, Tool(name="calc", arguments={"a": 2}))],
        'tool trajectory mismatch: expected tools[0] "calc" has no matching actual call: closest is actual '
        'tools[0] "calc": arguments mismatch: $.a: actual 1 and expected 2 do not match',
    ),
    (
        FinalResponseEvaluator(),
        TEXT_EXACT,
        [_turn("yes"), _turn("no")],
        [_turn("yes"), _turn("yes")],
        'final response mismatch: text mismatch: actual "no" and expected "yes" do not match',
    ),
]


@pytest.mark.parametrize(("evaluator", "criterion", "actuals", "expecteds", "reason"), TWO_TURNS)
@pytest.mark.parametrize(
    ("threshold", "overall"), [(1.0, EvalStatus.FAILED), (0.5, EvalStatus.PASSED), (0.0, EvalStatus.PASSED)]
)
def test_two_turns_one_passing(
    evaluator: MetricEvaluator,
    criterion: dict[str, Any],
    actuals: list[Invocation],
    expecteds: list[Invocation],
    reason: str,
    threshold: float,
    overall: EvalStatus,
) -> None:
    before = [turn.model_dump() for turn in actuals + expecteds]
    metric = _metric(criterion, threshold)
    result = _evaluate(evaluator, actuals, expecteds, metric)
    assert result.overall_score == 0.5
    assert result.overall_status == overall
    first, second = result.per_invocation_results
    assert (first.score, second.score) == (1.0, 0.0)
    assert first.status == EvalStatus.PASSED
    assert second.status == (EvalStatus.PASSED if threshold == 0.0 else EvalStatus.FAILED)
    assert first.details is not None and second.details is not None
    assert first.details.reason == ""
    assert second.details.reason == reason
    assert second.details.score == 0.0
    assert second.details.value is not None
    assert second.details.value.kind == ScoreKind.NUMERIC
    assert second.details.value.numeric == 0.0
    assert first.details.value is not None and first.details.value.numeric == 1.0
    assert first.actual_invocation is actuals[0]
    assert second.expected_invocation is expecteds[1]
    assert [turn.model_dump() for turn in actuals + expecteds] == before
    assert metric.criterion is not None and metric.criterion.to_dict() == _metric(criterion).criterion.to_dict()  # type: ignore[union-attr]


def test_final_response_missing_actual() -> None:
    result = _evaluate(
        FinalResponseEvaluator(), [_turn(None), _turn(None)], [_turn("hi"), _turn(None)], _metric(TEXT_EXACT)
    )
    first, second = result.per_invocation_results
    assert first.score == 0.0
    assert first.details is not None
    assert first.details.reason == 'final response mismatch: the agent gave no final response (expected "hi")'
    assert second.score == 1.0


def test_each_turn_records_what_its_criterion_measured() -> None:
    criterion = {"finalResponse": {"json": {}, "rouge": {"rougeType": "rougeL", "threshold": {"f1": 0.9}}}}
    result = _evaluate(
        FinalResponseEvaluator(),
        [_turn('{"total": 5}'), _turn('{"total": 7}'), _turn("[1]")],
        [_turn('{"total": 5}'), _turn('{"total": 4.5}'), _turn('{"total": 1}')],
        _metric(criterion),
    )

    details = [turn.details for turn in result.per_invocation_results]
    assert [d.measures if d else None for d in details] == [
        {"json_max_number_difference": 0.0, "rougeL_f1": 1.0, "rougeL_precision": 1.0, "rougeL_recall": 1.0},
        {
            "json_max_number_difference": 2.5,
            "rougeL_f1": pytest.approx(0.4),
            "rougeL_precision": 0.5,
            "rougeL_recall": pytest.approx(1 / 3),
        },
        # The shapes differ: no number difference, only ROUGE.
        {"rougeL_f1": pytest.approx(2 / 3), "rougeL_precision": 1.0, "rougeL_recall": 0.5},
    ]
    assert [turn.score for turn in result.per_invocation_results] == [1.0, 0.0, 0.0]
    assert [d.value.numeric if d and d.value else None for d in details] == [1.0, 0.0, 0.0]


def test_the_measures_are_written_per_turn_and_omitted_when_empty() -> None:
    json_metric = _metric({"finalResponse": {"json": {}}})
    (measured,) = _evaluate(FinalResponseEvaluator(), [_turn("1.5")], [_turn("1")], json_metric).per_invocation_results
    (plain,) = _evaluate(
        FinalResponseEvaluator(), [_turn("a")], [_turn("a")], _metric(TEXT_EXACT)
    ).per_invocation_results
    (trajectory,) = _evaluate(
        ToolTrajectoryEvaluator(), [_turn()], [_turn()], _metric(TRAJECTORY)
    ).per_invocation_results

    assert measured.details is not None and plain.details is not None and trajectory.details is not None
    assert json.loads(measured.details.to_json())["measures"] == {"json_max_number_difference": 0.5}
    assert "measures" not in json.loads(plain.details.to_json())
    assert trajectory.details.measures == {}


def test_builtin_evaluators() -> None:
    builtins = builtin_evaluators()
    assert set(builtins) == {
        "tool_trajectory_avg_score",
        "final_response_avg_score",
        "llm_final_response",
        "llm_rubric_response",
        "llm_rubric_critic",
        "llm_rubric_reference_critic",
        "llm_rubric_knowledge_recall",
        "llm_hallucinations",
        "llm_judge_template",
        "llm_verifier_pairwise",
    }
    assert isinstance(builtins["tool_trajectory_avg_score"], ToolTrajectoryEvaluator)
    assert isinstance(builtins["final_response_avg_score"], FinalResponseEvaluator)
    assert all(evaluator is not builtins[name] for name, evaluator in builtin_evaluators().items())
    for name, evaluator in builtins.items():
        assert isinstance(evaluator, MetricEvaluator)
        assert getattr(evaluator, "name") == name  # noqa: B009


# --- the reference's math example ------------------------------------------------------------


def _math() -> tuple[EvalSet, list[EvalMetric]]:
    eval_set = EvalSet.from_json((MATH / "math-basic.evalset.json").read_text(encoding="utf-8"))
    metrics = TypeAdapter(list[EvalMetric]).validate_json(
        (MATH / "math-basic.metrics.json").read_text(encoding="utf-8")
    )
    return eval_set, metrics


def _score_case(eval_set: EvalSet, metrics: list[EvalMetric], actual_for: Any) -> dict[tuple[str, str], EvaluateResult]:
    scores = {}
    evaluators = builtin_evaluators()
    for case in eval_set.eval_cases:
        actuals = [actual_for(turn) for turn in case.conversation]
        for metric in metrics:
            evaluator = evaluators[metric.evaluator]
            scores[case.eval_id, metric.metric_name] = _evaluate(evaluator, actuals, case.conversation, metric)
    return scores


def _with_final_response_metric(metrics: list[EvalMetric]) -> list[EvalMetric]:
    return [*metrics, _metric(TEXT_EXACT, name="final_response_avg_score")]


def test_math_example_all_pass() -> None:
    eval_set, metrics = _math()
    assert [m.metric_name for m in metrics] == ["tool_trajectory_avg_score"]
    scores = _score_case(eval_set, _with_final_response_metric(metrics), lambda turn: turn.model_copy(deep=True))
    assert len(scores) == 4
    for result in scores.values():
        assert result.overall_score == 1.0
        assert result.overall_status == EvalStatus.PASSED
        assert [r.details.reason for r in result.per_invocation_results if r.details] == [""]


def test_math_example_wrong_argument() -> None:
    eval_set, metrics = _math()

    def wrong(turn: Invocation) -> Invocation:
        actual = turn.model_copy(deep=True)
        actual.tools[0].arguments["b"] += 1
        actual.tools[0].id = "other-id"
        assert actual.final_response is not None
        actual.final_response.content = "calc result: 0"
        return actual

    originals = [case.model_dump() for case in eval_set.eval_cases]
    scores = _score_case(eval_set, _with_final_response_metric(metrics), wrong)
    assert [case.model_dump() for case in eval_set.eval_cases] == originals
    trajectory = scores["calc_add", "tool_trajectory_avg_score"]
    assert trajectory.overall_score == 0.0
    assert trajectory.overall_status == EvalStatus.FAILED
    details = trajectory.per_invocation_results[0].details
    assert details is not None
    assert details.reason == (
        'tool trajectory mismatch: expected tools[0] "calculator" has no matching actual call: closest is actual '
        'tools[0] "calculator": arguments mismatch: $.b: actual 4 and expected 3 do not match'
    )
    multiply = scores["calc_multiply", "tool_trajectory_avg_score"].per_invocation_results[0].details
    assert multiply is not None and "$.b: actual 8 and expected 7" in multiply.reason
    final = scores["calc_add", "final_response_avg_score"].per_invocation_results[0].details
    assert final is not None
    assert final.reason == (
        'final response mismatch: text mismatch: actual "calc result: 0" and expected "calc result: 5" do not match'
    )


# --- the reference's recorded results --------------------------------------------------------


def _recorded() -> list[tuple[str, Any]]:
    rows = []
    for path in RESULT_FILES:
        result = EvalSetResult.from_json(path.read_text(encoding="utf-8"))
        for case in result.eval_case_results:
            for turn in case.eval_metric_result_per_invocation:
                for metric_result in turn.eval_metric_results:
                    criterion = metric_result.criterion
                    if criterion and (criterion.tool_trajectory or criterion.final_response):
                        label = f"{path.parent.parent.parent.name}/{case.eval_id}/{metric_result.metric_name}"
                        rows.append((label, (turn, metric_result)))
    return rows


RECORDED = _recorded()


def test_recorded_results_found() -> None:
    assert len(RECORDED) >= 10
    assert any("length mismatch" in row[1][1].details.reason for row in RECORDED if row[1][1].details)


@pytest.mark.parametrize("row", [r[1] for r in RECORDED], ids=[r[0] for r in RECORDED])
def test_reproduces_recorded_results(row: Any) -> None:
    turn, recorded = row
    metric = EvalMetric(metric_name=recorded.metric_name, threshold=recorded.threshold, criterion=recorded.criterion)
    assert metric.criterion is not None
    evaluator = ToolTrajectoryEvaluator() if metric.criterion.tool_trajectory else FinalResponseEvaluator()
    result = _evaluate(evaluator, [turn.actual_invocation], [turn.expected_invocation], metric)
    (mine,) = result.per_invocation_results
    assert mine.score == recorded.score
    assert mine.status == recorded.eval_status
    assert mine.details is not None
    assert mine.details.reason == (recorded.details.reason if recorded.details else "")
