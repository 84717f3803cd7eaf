"""A report as the command prints it: a table for people, and a JSON document for scripts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval._util.terminal import printable
from agenteval.analysis._headline import pass_k_text
from agenteval.analysis.passk import CaseRuns, case_pass_nc
from agenteval.analysis.report import CaseSummary, EvaluationReport, case_views, run_views
from agenteval.cli._output import one_line, table
from agenteval.evalresult.models import EvalCaseResult, EvalMetricResult
from agenteval.evalresult.summarize import AveragedMetric, averaged_metrics
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    from agenteval.analysis._frames import CaseAcrossRuns

__all__ = ["summary_json", "summary_text"]


@dataclass(slots=True)
class FailedMetric:
    """A metric that failed a case, with why, and the runs it failed in that way."""

    metric_name: str
    score: float
    reason: str
    """The first line of the metric's reason (``""`` when its evaluator gave none)."""
    runs: list[int] = field(default_factory=list)


def failed_metrics(case: CaseSummary) -> list[FailedMetric]:
    """Why a failed case failed: each metric that failed it, once per distinct score and reason; none if it passed."""
    if case.overall_status != EvalStatus.FAILED:
        return []
    return _failed_in(case.runs)


def _failed_metrics(report: EvaluationReport, case: CaseAcrossRuns) -> list[FailedMetric]:
    """:func:`failed_metrics` of a case of ``report``, its results read in full only if a metric failed it."""
    if case.overall_status != EvalStatus.FAILED:
        return []
    results = (result for run in case.runs for result in run.overall_eval_metric_results)
    if not any(result.eval_status == EvalStatus.FAILED for result in results):
        return []
    # The reasons are in the case's full results: read this case's alone, not the whole report's.
    return _failed_in(case.runs if isinstance(case, CaseSummary) else report.case_results(case.eval_id))


def _failed_in(runs: Sequence[EvalCaseResult]) -> list[FailedMetric]:
    found: dict[tuple[str, float, str], FailedMetric] = {}
    for number, run in enumerate(runs, 1):
        for result in run.overall_eval_metric_results:
            if result.eval_status != EvalStatus.FAILED:
                continue
            reason = one_line(result.shown_reason)
            key = (result.metric_name, result.score, reason)
            found.setdefault(key, FailedMetric(result.metric_name, result.score, reason)).runs.append(
                run.run_id or number
            )
    return list(found.values())


def case_errors(case: CaseAcrossRuns) -> list[str]:
    """The distinct errors of the case's runs (and of deciding it across runs), a line each.

    A run's error is shown without the prefix that repeats the case's id (:attr:`EvalCaseResult.short_error`).
    """
    errors = {one_line(run.short_error) for run in case.runs if run.error_message}
    if case.error_message:
        errors.add(one_line(case.error_message))
    return sorted(errors)


def summary_text(report: EvaluationReport) -> str:
    """A plain-text summary of a report: one line per case, then the metrics and the verdict.

    Under a failed case, a line per metric that failed it says why (its reason, on one line).
    """
    metric_names = [metric.metric_name for metric in report.eval_metrics]
    rows = [["case", "status", *metric_names, "error"]]
    reasons: list[list[str]] = []
    cases = case_views(report)
    for case in cases:
        scores = {m.metric_name: f"{m.score:.2f} {m.eval_status or ''}".strip() for m in _metric_results(case)}
        rows.append(
            [
                case.eval_id,
                str(case.overall_status),
                *(scores.get(name, "-") for name in metric_names),
                "; ".join(case_errors(case)),
            ]
        )
        reasons.append(
            [_failure_line(case.eval_id, failed, report.num_runs) for failed in _failed_metrics(report, case)]
        )
    header, rule, *case_lines = table(rows)
    passed = sum(1 for case in cases if case.overall_status == "passed")
    lines = [
        f"eval set {report.eval_set_id} ({report.num_runs} run{'s' if report.num_runs != 1 else ''}, "
        f"{report.execution_time:.2f}s)",
        header,
        rule,
        *(line for case_line, why in zip(case_lines, reasons, strict=True) for line in (case_line, *why)),
        f"{passed}/{len(cases)} cases passed; overall {report.overall_status}",
    ]
    if headline := pass_k_text(report):
        lines.append(headline)
    if reused := report.reuse_summary:
        lines.append(reused)
    if result_id := report.result_id:
        lines.append(f"result saved as {result_id}")
    return "\n".join(lines)


def _counted(report: EvaluationReport) -> list[CaseRuns]:
    """Each case's passed and failed runs (:func:`~agenteval.analysis.passk.case_pass_nc`), for the cases with any."""
    return [case for case in case_pass_nc(run_views(report)) if case.runs]


def _metric_results(case: CaseAcrossRuns) -> list[AveragedMetric] | list[EvalMetricResult]:
    """The case's :attr:`CaseSummary.metric_results`, from the rows of its runs when its records are unread."""
    return case.metric_results if isinstance(case, CaseSummary) else averaged_metrics(case.runs)


def _failure_line(eval_id: str, failed: FailedMetric, num_runs: int) -> str:
    """``  calc_power: final_response_avg_score 0.00 — final response mismatch: …`` (which runs, with several)."""
    runs = ""
    if num_runs > 1:
        runs = f" (run{'s' if len(failed.runs) > 1 else ''} {', '.join(map(str, failed.runs))})"
    why = f" — {failed.reason}" if failed.reason else ""
    return printable(f"  {eval_id}{runs}: {failed.metric_name} {failed.score:.2f}{why}")


def summary_json(report: EvaluationReport, result_file: Path | None, **files: Path) -> dict[str, Any]:
    """The report as ``agenteval run --json`` prints it (per eval set); ``files`` are the other files written."""
    return {
        "appName": report.app_name,
        "evalSetId": report.eval_set_id,
        "evalSetResultId": report.result_id,
        "resultFile": str(result_file) if result_file is not None else None,
        **{name: str(path) for name, path in files.items()},
        "overallStatus": str(report.overall_status),
        "numRuns": report.num_runs,
        "executionTime": report.execution_time,
        "passK": _pass_k(report),
        "cases": [_case_json(report, case) for case in case_views(report)],
    }


def _pass_k(report: EvaluationReport) -> dict[str, Any] | None:
    """Per-case pass@1 and pass^k, k the fewest runs a case passed or failed (as the headline); ``None`` if none did."""
    counted = _counted(report)
    if not counted:
        return None
    k = min(case.runs for case in counted)
    return {"passAt1": report.pass_at_k(1), "k": k, "passHatK": report.pass_hat_k(k)}


def _case_json(report: EvaluationReport, case: CaseAcrossRuns) -> dict[str, Any]:
    return {
        "evalId": case.eval_id,
        "status": str(case.overall_status),
        "score": case.score,
        "metrics": {
            result.metric_name: {
                "score": result.score,
                "status": str(result.eval_status) if result.eval_status is not None else None,
            }
            for result in _metric_results(case)
        },
        "errors": case_errors(case),
        "failedMetrics": [
            {"metricName": failed.metric_name, "score": failed.score, "reason": failed.reason, "runs": failed.runs}
            for failed in _failed_metrics(report, case)
        ],
    }
