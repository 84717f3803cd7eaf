"""Tests for the multi-run summary and the facade's per-case aggregation across runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from agenteval._util.sync_bridge import run_sync
from agenteval.aggregation import AllPassAggregator, decide_case
from agenteval.errors import AgentEvalError, ConfigError
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalCaseResult, EvalMetricResult, EvalSetResult
from agenteval.evalresult.summarize import CaseOutcome, summarize_multi_run
from agenteval.evalresult.summary import EvalStatusCounts
from agenteval.evalset.models import EvalCase
from agenteval.metric.criterion import Criterion
from agenteval.status import EvalStatus
from tests.conftest import REFERENCE_EXAMPLES

PASSED = EvalStatus.PASSED
FAILED = EvalStatus.FAILED
NOT_EVALUATED = EvalStatus.NOT_EVALUATED

REFERENCE_RESULTS = sorted(
    [
        *REFERENCE_EXAMPLES.glob("*/output/*/*.evalset_result.json"),
        *REFERENCE_EXAMPLES.glob("llm/*/output/*/*.evalset_result.json"),
    ]
)


def _example_name(path: Path) -> str:
    parts = path.relative_to(REFERENCE_EXAMPLES).parts
    return "/".join(parts[: parts.index("output")])


SUMMARISED_RESULTS = [path for path in REFERENCE_RESULTS if EvalSetResult.from_json(path.read_bytes()).summary]


def metric(
    name: str = "m",
    score: float = 1.0,
    status: EvalStatus | None = PASSED,
    threshold: float = 1.0,
    criterion: Criterion | None = None,
) -> EvalMetricResult:
    return EvalMetricResult(metric_name=name, score=score, eval_status=status, threshold=threshold, criterion=criterion)


def case(
    eval_id: str = "A",
    run_id: int = 1,
    status: EvalStatus | None = PASSED,
    metrics: list[EvalMetricResult] | None = None,
    error: str = "",
) -> EvalCaseResult:
    return EvalCaseResult(
        eval_set_id="set",
        eval_id=eval_id,
        run_id=run_id,
        final_eval_status=status,
        error_message=error,
        overall_eval_metric_results=metrics or [],
    )


# summarize_multi_run: validation


def test_negative_expected_num_runs_raises() -> None:
    with pytest.raises(ConfigError, match=r"^expected num runs is negative: -1$"):
        summarize_multi_run([case()], -1)


def test_empty_eval_id_raises() -> None:
    with pytest.raises(AgentEvalError, match=r"^eval id at index 1 is empty$"):
        summarize_multi_run([case(), case(eval_id="")], 1)


@pytest.mark.parametrize("run_id", [0, -3])
def test_unset_run_id_raises(run_id: int) -> None:
    with pytest.raises(AgentEvalError, match=r"^run id at index 0 is not set$"):
        summarize_multi_run([case(run_id=run_id)], 1)


def test_run_id_above_expected_raises() -> None:
    with pytest.raises(AgentEvalError, match=r"^run id 2 at index 0 exceeds expected num runs 1$"):
        summarize_multi_run([case(run_id=2)], 1)


@pytest.mark.parametrize("status", [EvalStatus.UNKNOWN, None])
def test_unexpected_case_status_raises(status: EvalStatus | None) -> None:
    with pytest.raises(AgentEvalError, match=r"^unexpected eval status"):
        summarize_multi_run([case(status=status)], 1)


def test_unexpected_metric_status_raises() -> None:
    with pytest.raises(AgentEvalError, match=r"^unexpected eval status unknown$"):
        summarize_multi_run([case(metrics=[metric(status=EvalStatus.UNKNOWN)])], 1)


# summarize_multi_run: run counts


def test_empty_results_use_expected_num_runs() -> None:
    summary = summarize_multi_run([], 2)
    assert summary.num_runs == 2
    assert summary.overall_status == NOT_EVALUATED
    assert summary.run_status_counts == EvalStatusCounts(not_evaluated=2)
    assert summary.eval_case_summaries == []
    assert [(run.run_id, run.overall_status) for run in summary.run_summaries] == [
        (1, NOT_EVALUATED),
        (2, NOT_EVALUATED),
    ]
    for run in summary.run_summaries:
        assert run.case_status_counts is None
        assert run.metric_summaries == []
    assert summary.to_dict() == {
        "overallStatus": "not_evaluated",
        "numRuns": 2,
        "runStatusCounts": {"notEvaluated": 2},
        "runSummaries": [
            {"runId": 1, "overallStatus": "not_evaluated"},
            {"runId": 2, "overallStatus": "not_evaluated"},
        ],
    }


def test_empty_results_with_expected_zero_give_one_run() -> None:
    summary = summarize_multi_run([], 0)
    assert summary.num_runs == 1
    assert summary.run_status_counts == EvalStatusCounts(not_evaluated=1)


def test_expected_zero_uses_highest_run_id() -> None:
    summary = summarize_multi_run([case(run_id=3)], 0)
    assert summary.num_runs == 3
    assert summary.run_status_counts == EvalStatusCounts(passed=1, not_evaluated=2)


def test_expected_above_highest_run_id_fills_missing_runs() -> None:
    summary = summarize_multi_run([case()], 3)
    assert summary.num_runs == 3
    assert len(summary.run_summaries) == 3
    assert summary.run_status_counts == EvalStatusCounts(passed=1, not_evaluated=2)


def test_run_status_counts_count_runs_not_cases() -> None:
    cases = [
        case("A", 1, PASSED),
        case("B", 1, PASSED),
        case("A", 2, PASSED),
        case("B", 2, FAILED),
        case("A", 3, NOT_EVALUATED),
    ]
    summary = summarize_multi_run(cases, 3)
    assert summary.run_status_counts == EvalStatusCounts(passed=1, failed=1, not_evaluated=1)
    assert [run.case_status_counts for run in summary.run_summaries] == [
        EvalStatusCounts(passed=2),
        EvalStatusCounts(passed=1, failed=1),
        EvalStatusCounts(not_evaluated=1),
    ]


# summarize_multi_run: metrics and statuses


def test_not_evaluated_metrics_are_counted_but_not_averaged() -> None:
    cases = [
        case("A", metrics=[metric(score=0.0, status=NOT_EVALUATED)]),
        case("B", metrics=[metric(score=2.0, status=PASSED)]),
    ]
    summary = summarize_multi_run(cases, 1)
    run = summary.run_summaries[0]
    assert run.overall_status == PASSED
    assert run.case_status_counts == EvalStatusCounts(passed=2)
    assert len(run.metric_summaries) == 1
    metric_summary = run.metric_summaries[0]
    assert metric_summary.metric_name == "m"
    assert metric_summary.average_score == 2.0
    assert metric_summary.eval_status == PASSED
    assert metric_summary.threshold == 1.0
    assert metric_summary.status_counts == EvalStatusCounts(passed=1, not_evaluated=1)


def test_never_evaluated_metric_summary_is_not_evaluated_with_first_threshold() -> None:
    cases = [
        case("A", run_id=1, metrics=[metric(score=5.0, status=NOT_EVALUATED, threshold=0.3)]),
        case("A", run_id=2, metrics=[metric(score=7.0, status=NOT_EVALUATED, threshold=0.9)]),
    ]
    summary = summarize_multi_run(cases, 2)
    (metric_summary,) = summary.eval_case_summaries[0].metric_summaries
    assert metric_summary.average_score == 0.0
    assert metric_summary.eval_status == NOT_EVALUATED
    assert metric_summary.threshold == 0.3
    assert metric_summary.status_counts == EvalStatusCounts(not_evaluated=2)
    assert summary.eval_case_summaries[0].overall_status == NOT_EVALUATED


def test_threshold_comes_from_first_occurrence_even_if_not_evaluated() -> None:
    cases = [
        case("A", run_id=1, metrics=[metric(score=0.0, status=NOT_EVALUATED, threshold=0.5)]),
        case("A", run_id=2, metrics=[metric(score=0.6, status=FAILED, threshold=0.9)]),
    ]
    summary = summarize_multi_run(cases, 2)
    (metric_summary,) = summary.eval_case_summaries[0].metric_summaries
    assert metric_summary.threshold == 0.5
    assert metric_summary.average_score == 0.6
    assert metric_summary.eval_status == PASSED
    assert summary.eval_case_summaries[0].overall_status == PASSED


@pytest.mark.parametrize("expected", [1, 2])
def test_run_error_turns_not_evaluated_into_failed(expected: int) -> None:
    summary = summarize_multi_run([case(status=NOT_EVALUATED, error="boom")], expected)
    assert summary.overall_status == FAILED
    (case_summary,) = summary.eval_case_summaries
    assert case_summary.eval_id == "A"
    assert case_summary.overall_status == FAILED
    assert case_summary.metric_summaries == []
    assert case_summary.run_summaries[0].error_message == "boom"
    # The run itself is still not evaluated: only case summaries apply the error rule.
    assert summary.run_summaries[0].overall_status == NOT_EVALUATED


AGGREGATION_ERROR = "aggregate eval case result: ValueError: boom"


def test_metrics_of_runs_that_errored_in_every_run_are_ignored_and_the_case_fails() -> None:
    # The port keeps the metric results of a run whose aggregator raised; the reference has none.
    cases = [
        case("A", run_id, FAILED, [metric(score=1.0, status=PASSED)], error=AGGREGATION_ERROR) for run_id in (1, 2)
    ]
    summary = summarize_multi_run(cases, 2)
    assert summary.overall_status == FAILED
    (case_summary,) = summary.eval_case_summaries
    assert case_summary.overall_status == FAILED
    assert case_summary.metric_summaries == []
    assert [run.metric_results for run in case_summary.run_summaries] == [[], []]
    assert [run.error_message for run in case_summary.run_summaries] == [AGGREGATION_ERROR] * 2
    assert [run.metric_summaries for run in summary.run_summaries] == [[], []]
    assert summary.run_status_counts == EvalStatusCounts(failed=2)


def test_metric_averages_exclude_errored_runs() -> None:
    cases = [
        case("A", 1, FAILED, [metric(score=0.0, status=FAILED, threshold=0.2)], error=AGGREGATION_ERROR),
        case("A", 2, PASSED, [metric(score=1.0, status=PASSED, threshold=0.5)]),
    ]
    summary = summarize_multi_run(cases, 2)
    (case_summary,) = summary.eval_case_summaries
    (metric_summary,) = case_summary.metric_summaries
    assert (metric_summary.average_score, metric_summary.eval_status) == (1.0, PASSED)
    assert metric_summary.threshold == 0.5
    assert metric_summary.status_counts == EvalStatusCounts(passed=1)
    assert case_summary.overall_status == PASSED
    assert [len(run.metric_summaries) for run in summary.run_summaries] == [0, 1]


def test_single_run_case_status_wins_over_failed_metric() -> None:
    metrics = [
        metric("important", score=1.0, status=PASSED),
        metric("minor", score=0.0, status=FAILED),
    ]
    summary = summarize_multi_run([case(status=PASSED, metrics=metrics)], 1)
    assert summary.overall_status == PASSED
    assert summary.run_status_counts == EvalStatusCounts(passed=1)
    (case_summary,) = summary.eval_case_summaries
    assert case_summary.overall_status == PASSED
    assert case_summary.run_status_counts == EvalStatusCounts(passed=1)
    assert [(m.metric_name, m.eval_status) for m in case_summary.metric_summaries] == [
        ("important", PASSED),
        ("minor", FAILED),
    ]


def test_multi_run_average_decides() -> None:
    cases = [
        case("A", 1, FAILED, [metric(score=0.5, status=FAILED)]),
        case("A", 2, PASSED, [metric(score=1.5, status=PASSED)]),
    ]
    summary = summarize_multi_run(cases, 2)
    assert summary.overall_status == PASSED
    assert summary.run_status_counts == EvalStatusCounts(passed=1, failed=1)
    (case_summary,) = summary.eval_case_summaries
    assert case_summary.overall_status == PASSED
    assert case_summary.run_status_counts == EvalStatusCounts(passed=1, failed=1)
    (metric_summary,) = case_summary.metric_summaries
    assert metric_summary.metric_name == "m"
    assert metric_summary.average_score == 1.0
    assert metric_summary.eval_status == PASSED
    assert metric_summary.status_counts == EvalStatusCounts(passed=1, failed=1)


def test_multi_run_ignores_case_statuses() -> None:
    # Both runs say passed, but the averaged metric misses its threshold.
    cases = [
        case("A", 1, PASSED, [metric(score=0.2)]),
        case("A", 2, PASSED, [metric(score=0.4)]),
    ]
    summary = summarize_multi_run(cases, 2)
    assert summary.eval_case_summaries[0].overall_status == FAILED
    assert summary.overall_status == FAILED
    assert summary.run_status_counts == EvalStatusCounts(passed=2)


def test_multi_run_case_without_metrics_is_not_evaluated() -> None:
    summary = summarize_multi_run([case("A", 1, PASSED), case("A", 2, PASSED)], 2)
    assert summary.eval_case_summaries[0].overall_status == NOT_EVALUATED
    assert summary.overall_status == NOT_EVALUATED


def test_metric_results_and_summaries_sorted_by_name() -> None:
    metrics = [metric("b"), metric("a"), metric("c", status=NOT_EVALUATED)]
    summary = summarize_multi_run([case(metrics=metrics)], 1)
    (case_summary,) = summary.eval_case_summaries
    assert [m.metric_name for m in case_summary.run_summaries[0].metric_results] == ["a", "b", "c"]
    assert [m.metric_name for m in case_summary.metric_summaries] == ["a", "b", "c"]
    assert [m.metric_name for m in summary.run_summaries[0].metric_summaries] == ["a", "b", "c"]


def test_case_summaries_sorted_by_eval_id_with_runs_in_order() -> None:
    cases = [
        case("b", 2, FAILED),
        case("a", 2, PASSED),
        case("b", 1, PASSED),
        case("a", 1, PASSED),
    ]
    summary = summarize_multi_run(cases, 2)
    assert [c.eval_id for c in summary.eval_case_summaries] == ["a", "b"]
    assert [(r.run_id, r.final_eval_status) for r in summary.eval_case_summaries[1].run_summaries] == [
        (1, PASSED),
        (2, FAILED),
    ]


def test_full_document() -> None:
    cases = [
        case("A", 1, FAILED, [metric("m", 0.5, FAILED), metric("n", 1.0, NOT_EVALUATED, 0.5)], error=""),
        case("A", 2, PASSED, [metric("m", 1.5, PASSED), metric("n", 1.0, PASSED, 0.5)]),
    ]
    assert summarize_multi_run(cases, 2).to_dict() == {
        "overallStatus": "passed",
        "numRuns": 2,
        "runStatusCounts": {"passed": 1, "failed": 1},
        "runSummaries": [
            {
                "runId": 1,
                "overallStatus": "failed",
                "caseStatusCounts": {"failed": 1},
                "metricSummaries": [
                    {
                        "metricName": "m",
                        "averageScore": 0.5,
                        "evalStatus": "failed",
                        "threshold": 1,
                        "statusCounts": {"failed": 1},
                    },
                    {
                        "metricName": "n",
                        "evalStatus": "not_evaluated",
                        "threshold": 0.5,
                        "statusCounts": {"notEvaluated": 1},
                    },
                ],
            },
            {
                "runId": 2,
                "overallStatus": "passed",
                "caseStatusCounts": {"passed": 1},
                "metricSummaries": [
                    {
                        "metricName": "m",
                        "averageScore": 1.5,
                        "evalStatus": "passed",
                        "threshold": 1,
                        "statusCounts": {"passed": 1},
                    },
                    {
                        "metricName": "n",
                        "averageScore": 1,
                        "evalStatus": "passed",
                        "threshold": 0.5,
                        "statusCounts": {"passed": 1},
                    },
                ],
            },
        ],
        "evalCaseSummaries": [
            {
                "evalId": "A",
                "overallStatus": "passed",
                "runStatusCounts": {"passed": 1, "failed": 1},
                "metricSummaries": [
                    {
                        "metricName": "m",
                        "averageScore": 1,
                        "evalStatus": "passed",
                        "threshold": 1,
                        "statusCounts": {"passed": 1, "failed": 1},
                    },
                    {
                        "metricName": "n",
                        "averageScore": 1,
                        "evalStatus": "passed",
                        "threshold": 0.5,
                        "statusCounts": {"passed": 1, "notEvaluated": 1},
                    },
                ],
                "runSummaries": [
                    {
                        "runId": 1,
                        "finalEvalStatus": "failed",
                        "metricResults": [
                            {"metricName": "m", "score": 0.5, "evalStatus": "failed", "threshold": 1},
                            {"metricName": "n", "score": 1, "evalStatus": "not_evaluated", "threshold": 0.5},
                        ],
                    },
                    {
                        "runId": 2,
                        "finalEvalStatus": "passed",
                        "metricResults": [
                            {"metricName": "m", "score": 1.5, "evalStatus": "passed", "threshold": 1},
                            {"metricName": "n", "score": 1, "evalStatus": "passed", "threshold": 0.5},
                        ],
                    },
                ],
            }
        ],
    }


def test_input_is_not_modified() -> None:
    cases = [
        case("A", 1, FAILED, [metric(score=0.5, status=FAILED)]),
        case("A", 2, PASSED, [metric(score=1.5, status=PASSED)], error="late"),
    ]
    before = [c.to_dict() for c in cases]
    summarize_multi_run(cases, 2)
    assert [c.to_dict() for c in cases] == before


@pytest.mark.parametrize("path", SUMMARISED_RESULTS, ids=_example_name)
def test_reproduces_reference_summary(path: Path) -> None:
    result = EvalSetResult.from_json(path.read_bytes())
    assert result.summary is not None
    assert summarize_multi_run(result.eval_case_results, 1).to_dict() == result.summary.to_dict()


def test_reference_results_with_summaries_are_found() -> None:
    names = {_example_name(path) for path in SUMMARISED_RESULTS}
    assert "caseaggregation" in names
    assert len(SUMMARISED_RESULTS) >= 8


def test_case_aggregation_example_keeps_the_aggregator_verdict() -> None:
    # The example's custom case aggregator passes the case although a metric failed.
    (path,) = REFERENCE_EXAMPLES.glob("caseaggregation/output/*/*.evalset_result.json")
    result = EvalSetResult.from_json(path.read_bytes())
    summary = summarize_multi_run(result.eval_case_results, 1)
    case_statuses = {c.eval_id: c.final_eval_status for c in result.eval_case_results}
    assert {c.eval_id: c.overall_status for c in summary.eval_case_summaries} == case_statuses


# decide_case with the default aggregator: the reference's aggregateCaseRuns


def aggregate_case_runs(runs: list[EvalCaseResult]) -> CaseOutcome:
    return run_sync(
        decide_case(
            runs,
            len(runs),
            AllPassAggregator(),
            app_name="app",
            eval_set_id="set",
            eval_case=EvalCase(eval_id="A"),
            inference=InferenceResult(eval_case_id="A"),
            metrics=[],
        )
    )


def test_aggregate_no_runs_is_not_evaluated() -> None:
    outcome = aggregate_case_runs([])
    assert (outcome.status, outcome.metric_results) == (NOT_EVALUATED, [])


def test_aggregate_average_across_runs() -> None:
    first = Criterion.model_validate({"finalResponse": {"text": {"ignore": True}}})
    last = Criterion.model_validate({"finalResponse": {"text": {"ignore": False}}})
    runs = [
        case("A", 1, FAILED, [metric(score=0.5, status=FAILED, criterion=first)]),
        case("A", 2, PASSED, [metric(score=1.5, status=PASSED, threshold=9.0, criterion=last)]),
    ]
    aggregate = aggregate_case_runs(runs)
    assert aggregate.status == PASSED
    (result,) = aggregate.metric_results
    assert result.metric_name == "m"
    assert result.score == 1.0
    assert result.eval_status == PASSED
    assert result.threshold == 1.0
    assert result.criterion == last
    assert result.details is None


def test_aggregate_skips_not_evaluated_occurrences() -> None:
    criterion = Criterion.model_validate({"finalResponse": {"text": {"ignore": True}}})
    runs = [
        case("A", 1, PASSED, [metric(score=0.0, status=NOT_EVALUATED, threshold=0.1)]),
        case("A", 2, PASSED, [metric(score=0.8, status=PASSED, threshold=0.7, criterion=criterion)]),
        case("A", 3, PASSED, [metric(score=0.0, status=NOT_EVALUATED, threshold=0.1)]),
    ]
    (result,) = aggregate_case_runs(runs).metric_results
    assert result.score == 0.8
    assert result.threshold == 0.7
    assert result.criterion == criterion


def test_aggregate_drops_never_evaluated_metrics_and_keeps_first_appearance_order() -> None:
    runs = [
        case("A", 1, PASSED, [metric("z", status=NOT_EVALUATED), metric("b"), metric("gone", status=NOT_EVALUATED)]),
        case("A", 2, PASSED, [metric("b"), metric("z"), metric("a")]),
    ]
    aggregate = aggregate_case_runs(runs)
    assert [m.metric_name for m in aggregate.metric_results] == ["z", "b", "a"]


def test_aggregate_single_run_uses_case_status() -> None:
    runs = [case(status=PASSED, metrics=[metric("important"), metric("minor", score=0.0, status=FAILED)])]
    aggregate = aggregate_case_runs(runs)
    assert aggregate.status == PASSED
    assert [(m.metric_name, m.eval_status) for m in aggregate.metric_results] == [
        ("important", PASSED),
        ("minor", FAILED),
    ]


def test_aggregate_multi_run_uses_metric_statuses() -> None:
    runs = [
        case("A", 1, PASSED, [metric(score=0.2)]),
        case("A", 2, PASSED, [metric(score=0.4)]),
    ]
    assert aggregate_case_runs(runs).status == FAILED
    assert aggregate_case_runs([case("A", 1, FAILED), case("A", 2, FAILED)]).status == NOT_EVALUATED


@pytest.mark.parametrize("num_runs", [1, 2])
def test_aggregate_run_error_turns_not_evaluated_into_failed(num_runs: int) -> None:
    runs = [case("A", 1, NOT_EVALUATED, error="boom")] + [case("A", 2, NOT_EVALUATED)] * (num_runs - 1)
    outcome = aggregate_case_runs(runs)
    assert (outcome.status, outcome.metric_results) == (FAILED, [])


def test_aggregate_ignores_metrics_of_errored_runs() -> None:
    errored = [case("A", run_id, FAILED, [metric()], error=AGGREGATION_ERROR) for run_id in (1, 2)]
    outcome = aggregate_case_runs(errored)
    assert (outcome.status, outcome.metric_results) == (FAILED, [])
    mixed = [
        case("A", 1, FAILED, [metric(score=0.0, status=FAILED)], error=AGGREGATION_ERROR),
        case("A", 2, PASSED, [metric(score=1.0)]),
    ]
    aggregate = aggregate_case_runs(mixed)
    assert [(m.score, m.eval_status) for m in aggregate.metric_results] == [(1.0, PASSED)]
    assert aggregate.status == PASSED


def test_aggregate_single_run_unknown_status_raises() -> None:
    with pytest.raises(AgentEvalError, match=r"^unexpected eval status unknown$"):
        aggregate_case_runs([case(status=EvalStatus.UNKNOWN)])


def test_aggregate_multi_run_ignores_unknown_case_status() -> None:
    runs = [case("A", 1, EvalStatus.UNKNOWN, [metric()]), case("A", 2, PASSED, [metric()])]
    assert aggregate_case_runs(runs).status == PASSED


def test_aggregate_input_is_not_modified() -> None:
    runs = [case("A", 1, FAILED, [metric(score=0.5, status=FAILED)]), case("A", 2, PASSED, [metric(score=1.5)])]
    before = [run.to_dict() for run in runs]
    aggregate_case_runs(runs)
    assert [run.to_dict() for run in runs] == before
