"""A report as the command prints it: a table for people, and a JSON document for scripts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval._util.terminal import printable
from agenteval.analysis._headline import pass_k_text
from agenteval.analysis.passk import parse_case_pass_nc
from agenteval.analysis.report import CaseSummary, EvaluationReport
from agenteval.cli._output import one_line, table
from agenteval.status import EvalStatus

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
    found: dict[tuple[str, float, str], FailedMetric] = {}
    for number, run in enumerate(case.runs, 1):
        for result in run.overall_eval_metric_results:
            if result.eval_status != EvalStatus.FAILED:
                continue
            reason = one_line(result.shown_reason)
            key = (result.metric_name, result.score, reason)
            found.setdefault(key, FailedMetric(result.metric_name, result.score, reason)).runs.append(
                run.run_id or number
            )
    return list(found.values())


def case_errors(case: CaseSummary) -> list[str]:
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
    for case in report.case_summaries:
        scores = {m.metric_name: f"{m.score:.2f} {m.eval_status or ''}".strip() for m in case.metric_results}
        rows.append(
            [
                case.eval_id,
                str(case.overall_status),
                *(scores.get(name, "-") for name in metric_names),
                "; ".join(case_errors(case)),
            ]
        )
        reasons.append([_failure_line(case.eval_id, failed, report.num_runs) for failed in failed_metrics(case)])
    header, rule, *case_lines = table(rows)
    passed = sum(1 for case in report.case_summaries if case.overall_status == "passed")
    lines = [
        f"eval set {report.eval_set_id} ({report.num_runs} run{'s' if report.num_runs != 1 else ''}, "
        f"{report.execution_time:.2f}s)",
        header,
        rule,
        *(line for case_line, why in zip(case_lines, reasons, strict=True) for line in (case_line, *why)),
        f"{passed}/{len(report.case_summaries)} cases passed; overall {report.overall_status}",
    ]
    if headline := pass_k_text(report):
        lines.append(headline)
    if reused := report.reuse_summary:
        lines.append(reused)
    if report.result.eval_set_result_id:
        lines.append(f"result saved as {report.result.eval_set_result_id}")
    return "\n".join(lines)


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
        "evalSetResultId": report.result.eval_set_result_id,
        "resultFile": str(result_file) if result_file is not None else None,
        **{name: str(path) for name, path in files.items()},
        "overallStatus": str(report.overall_status),
        "numRuns": report.num_runs,
        "executionTime": report.execution_time,
        "passK": _pass_k(report),
        "cases": [_case_json(case) for case in report.case_summaries],
    }


def _pass_k(report: EvaluationReport) -> dict[str, Any] | None:
    """Per-case pass@1 and pass^k, k the fewest runs a case passed or failed (as the headline); ``None`` if none did."""
    counted = [case for case in parse_case_pass_nc(report.result) if case.runs]
    if not counted:
        return None
    k = min(case.runs for case in counted)
    return {"passAt1": report.pass_at_k(1), "k": k, "passHatK": report.pass_hat_k(k)}


def _case_json(case: CaseSummary) -> dict[str, Any]:
    return {
        "evalId": case.eval_id,
        "status": str(case.overall_status),
        "score": case.score,
        "metrics": {
            result.metric_name: {
                "score": result.score,
                "status": str(result.eval_status) if result.eval_status is not None else None,
            }
            for result in case.metric_results
        },
        "errors": case_errors(case),
        "failedMetrics": [
            {"metricName": failed.metric_name, "score": failed.score, "reason": failed.reason, "runs": failed.runs}
            for failed in failed_metrics(case)
        ],
    }
