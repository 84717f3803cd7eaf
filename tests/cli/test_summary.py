"""The errors a case's row shows: one line each, without what repeats the row."""

from __future__ import annotations

from agenteval.analysis.report import CaseSummary
from agenteval.cli._summary import case_errors
from agenteval.evalresult.models import EvalCaseResult
from agenteval.status import EvalStatus


def test_a_case_row_shows_each_distinct_error_on_one_line_with_the_aggregators() -> None:
    def run(run_id: int, message: str) -> EvalCaseResult:
        return EvalCaseResult(eval_id="a", run_id=run_id, session_id=f"s{run_id}", error_message=message)

    case = CaseSummary(
        eval_id="a",
        overall_status=EvalStatus.FAILED,
        score=0.0,
        runs=[
            run(1, "inference eval case (evalCaseID=a, sessionID=s1): runner run: ValueError: boom\nTraceback ..."),
            run(2, "inference eval case (evalCaseID=a, sessionID=s2): runner run: ValueError: boom\nTraceback ..."),
            run(3, ""),
        ],
        metric_results=[],
        error_message="aggregate eval case result: KeyError: 'weight'",
    )

    assert case_errors(case) == ["ValueError: boom …", "aggregate eval case result: KeyError: 'weight'"]


def test_a_failed_metrics_reason_is_shown_without_the_separators_of_the_turns_that_passed() -> None:
    from agenteval.cli._summary import failed_metrics
    from agenteval.evalresult.models import EvalMetricResult, EvalMetricResultDetails

    failed = EvalMetricResult(
        metric_name="tool_trajectory_avg_score",
        score=0.5,
        eval_status=EvalStatus.FAILED,
        details=EvalMetricResultDetails(reason="; tool trajectory mismatch: turn 2 …"),
    )
    run = EvalCaseResult(eval_id="a", run_id=1, overall_eval_metric_results=[failed])
    case = CaseSummary(
        eval_id="a", overall_status=EvalStatus.FAILED, score=0.0, runs=[run], metric_results=[failed], error_message=""
    )

    assert [metric.reason for metric in failed_metrics(case)] == ["tool trajectory mismatch: turn 2 …"]
