"""HTML views of a report for Jupyter: the summary (``_repr_html_``) and one case side by side.

Everything taken from a report is escaped: case ids, messages, tool arguments and reasons come from
agents and users and may contain markup.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agenteval.analysis._headline import pass_k_estimates
from agenteval.analysis.report import CaseSummary, case_views, run_views
from agenteval.evalresult.models import EvalCaseResult
from agenteval.notebook._case_view import case_html
from agenteval.notebook._html import CSS, HTML, badge, clip, fmt_duration, fmt_score
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    from agenteval.analysis._frames import CaseAcrossRuns, RunView
    from agenteval.analysis.report import EvaluationReport

__all__ = ["HTML", "case_html", "report_html"]

_ORDER = {EvalStatus.FAILED: 0, EvalStatus.NOT_EVALUATED: 1, EvalStatus.PASSED: 2}
_REASON_LIMIT = 240
_REASONS_PER_CASE = 3


@dataclass(slots=True)
class _Tally:
    passed: int = 0
    failed: int = 0
    scores: float = 0.0

    def add(self, status: EvalStatus | None, score: float) -> None:
        if status is EvalStatus.PASSED:
            self.passed += 1
        elif status is EvalStatus.FAILED:
            self.failed += 1
        else:
            return
        self.scores += score

    @property
    def evaluated(self) -> int:
        return self.passed + self.failed


def _thresholds(report: EvaluationReport, runs: Sequence[RunView]) -> dict[str, float]:
    found = {metric.metric_name: metric.threshold for metric in report.eval_metrics}
    for case in runs:
        for metric in case.overall_eval_metric_results:
            found.setdefault(metric.metric_name, metric.threshold)
    return found


def _rate_cell(tally: _Tally, *, bar: bool) -> str:
    if not tally.evaluated:
        return '<td class="ae-num ae-muted">—</td>'
    rate = tally.passed / tally.evaluated
    meter = f'<span class="ae-bar"><span style="width:{rate * 100:.1f}%"></span></span>' if bar else ""
    title = f"{tally.passed} of {tally.evaluated} passed"
    counts = f'<span class="ae-muted">({tally.passed}/{tally.evaluated})</span>'
    return f'<td class="ae-num" title="{title}">{meter}{rate:.0%} {counts}</td>'


def _metrics_table(report: EvaluationReport) -> str:
    names = report.metric_names
    if not names:
        return '<p class="ae-muted">No metric results.</p>'
    cases = run_views(report)
    thresholds = _thresholds(report, cases)
    runs = sorted({case.run_id for case in cases})
    total = {name: _Tally() for name in names}
    per_run = {(name, run): _Tally() for name in names for run in runs}
    for case in cases:
        for metric in case.overall_eval_metric_results:
            total[metric.metric_name].add(metric.eval_status, metric.score)
            per_run[(metric.metric_name, case.run_id)].add(metric.eval_status, metric.score)
    several = len(runs) > 1
    head = "<th>Metric</th><th class='ae-num'>Threshold</th><th class='ae-num'>Mean score</th><th>Pass rate</th>"
    if several:
        head += "".join(f"<th class='ae-num'>Run {run}</th>" for run in runs)
    rows = []
    for name in names:
        tally = total[name]
        mean = tally.scores / tally.evaluated if tally.evaluated else None
        status = "failed" if tally.failed else "passed" if tally.passed else "not_evaluated"
        cells = (
            f'<td class="ae-id">{html.escape(name)}</td>'
            f'<td class="ae-num">{thresholds.get(name, 0.0):g}</td>'
            f'<td class="ae-num">{fmt_score(mean)}</td>' + _rate_cell(tally, bar=True)
        )
        if several:
            cells += "".join(_rate_cell(per_run[(name, run)], bar=False) for run in runs)
        rows.append(f'<tr class="ae-row-{status}">{cells}</tr>')
    caption = "Pass rate per metric (each run separately on the right)" if several else "Pass rate per metric"
    return (
        f"<h4>{caption}</h4><table class='ae-table'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _case_reasons(runs: Iterable[EvalCaseResult]) -> list[tuple[list[str], str, list[int]]]:
    """Why a case did not pass: ``(labels, reason, run ids)``, errors first, then failing metrics.

    Each reason shows once: with the labels (``error``, or a metric with its score) of every
    metric it was given for, in the same runs.
    """
    found: dict[tuple[str, str], list[int]] = {}
    for run in runs:
        if run.error_message:
            # The message names the run's session; without it the same error in every run reads as one.
            message = run.short_error.replace(run.session_id, "…") if run.session_id else run.short_error
            found.setdefault(("error", message.strip()), []).append(run.run_id)
        for metric in run.overall_eval_metric_results:
            if metric.eval_status is EvalStatus.FAILED:
                reason = metric.shown_reason
                # A custom evaluator may fail a score above its threshold: never print a false "<".
                relation = " <" if metric.score < metric.threshold else ", threshold"
                label = f"{metric.metric_name} ({metric.score:.2f}{relation} {metric.threshold:g})"
                found.setdefault((label, reason), []).append(run.run_id)
    shared: dict[tuple[str, tuple[int, ...]], list[str]] = {}
    for (label, reason), run_ids in found.items():
        shared.setdefault((reason, tuple(run_ids)), []).append(label)
    return [(labels, reason, list(run_ids)) for (reason, run_ids), labels in shared.items()]


def _has_reasons(case: CaseAcrossRuns) -> bool:
    """Whether :func:`_case_reasons` finds a reason in the case's runs: an error or a failed metric."""
    return any(
        run.error_message or any(metric.eval_status is EvalStatus.FAILED for metric in run.overall_eval_metric_results)
        for run in case.runs
    )


def _case_records(report: EvaluationReport, cases: Sequence[CaseAcrossRuns]) -> Mapping[str, Sequence[EvalCaseResult]]:
    """The full result in each run of each of ``cases``: the reasons are in the records, not in the rows."""
    read = [case for case in cases if isinstance(case, CaseSummary)]
    if len(read) == len(cases):  # the report has read its records: the cases hold them
        return {case.eval_id: case.runs for case in read}
    return {case.eval_id: report.case_results(case.eval_id) for case in cases}


def _reasons_cell(runs: Iterable[EvalCaseResult], several_runs: bool) -> str:
    reasons = _case_reasons(runs)
    if not reasons:
        return '<td class="ae-muted">—</td>'
    parts = []
    for labels, reason, run_ids in reasons[:_REASONS_PER_CASE]:
        where = f" [run {', '.join(map(str, run_ids))}]" if several_runs else ""
        label = ", ".join(labels) + where
        text = f"{label}: {reason}" if reason else label
        parts.append(f'<div class="ae-reason">{clip(text, _REASON_LIMIT)}</div>')
    if len(reasons) > _REASONS_PER_CASE:
        parts.append(f'<div class="ae-muted">+{len(reasons) - _REASONS_PER_CASE} more</div>')
    return f"<td>{''.join(parts)}</td>"


_ACROSS_RUNS = (
    "<p class='ae-muted'>Overall status and score: the case aggregator's verdict across the runs "
    "(<code>status</code> and <code>score</code> in <code>report.case_table</code>). Runs: how many runs passed "
    "on their own (<code>runs_passed</code> of <code>num_runs</code>).</p>"
)


def _runs_passed(summary: CaseAcrossRuns) -> str:
    passed = sum(1 for run in summary.runs if run.final_eval_status is EvalStatus.PASSED)
    return f"passed {passed}/{len(summary.runs)} run{'s' if len(summary.runs) != 1 else ''}"


def _cases_table(report: EvaluationReport, max_cases: int | None, link_cases: bool) -> str:
    summaries = sorted(case_views(report), key=lambda s: _ORDER.get(s.overall_status, 1))
    if not summaries:
        return '<p class="ae-muted">No cases.</p>'
    several = report.num_runs > 1
    shown = summaries if max_cases is None else summaries[:max_cases]
    records = _case_records(report, [summary for summary in shown if _has_reasons(summary)])
    if several:
        head = "<th>Overall status</th><th>Case</th><th class='ae-num'>Overall score</th><th class='ae-num'>Runs</th>"
    else:
        head = "<th>Status</th><th>Case</th><th class='ae-num'>Score</th>"
    rows = []
    for summary in shown:
        name = html.escape(summary.eval_id)
        if link_cases:
            name = f'<a href="#{case_anchor(summary.eval_id)}">{name}</a>'
        cells = f'<td>{badge(summary.overall_status)}</td><td class="ae-id">{name}</td>'
        cells += f'<td class="ae-num">{fmt_score(summary.score)}</td>'
        if several:
            cells += f'<td class="ae-num">{_runs_passed(summary)}</td>'
        cells += _reasons_cell(records.get(summary.eval_id, ()), several)
        rows.append(f'<tr class="ae-row-{html.escape(str(summary.overall_status))}">{cells}</tr>')
    more = ""
    if len(shown) < len(summaries):
        more = (
            f'<p class="ae-muted">… and {len(summaries) - len(shown)} more cases '
            "(all of them are in <code>report.cases</code>).</p>"
        )
    return (
        f"<h4>Cases <span class='ae-muted'>(failing first)</span></h4>{_ACROSS_RUNS if several else ''}"
        f"<table class='ae-table'><thead><tr>{head}<th>Reason</th></tr></thead><tbody>{''.join(rows)}</tbody>"
        f"</table>{more}"
    )


def case_anchor(eval_id: str) -> str:
    """The HTML id of a case's section in an exported report (safe for any case id)."""
    return "case-" + "".join(ch if ch.isalnum() or ch in "-_" else f"_{ord(ch):x}_" for ch in eval_id)


def _header(report: EvaluationReport) -> str:
    summaries = case_views(report)
    counts = {status: sum(1 for s in summaries if s.overall_status is status) for status in _ORDER}
    tally = f"<b>{len(summaries)}</b> cases: {counts[EvalStatus.PASSED]} passed, {counts[EvalStatus.FAILED]} failed"
    if counts[EvalStatus.NOT_EVALUATED]:
        tally += f", {counts[EvalStatus.NOT_EVALUATED]} not evaluated"
    meta = [
        f"App <b class='ae-id'>{html.escape(report.app_name)}</b>",
        f"Eval set <b class='ae-id'>{html.escape(report.eval_set_id)}</b>",
        tally,
        f"<b>{report.num_runs}</b> run{'s' if report.num_runs != 1 else ''}",
        f"Duration <b>{fmt_duration(report.execution_time) if report.execution_time > 0 else 'unknown'}</b>",
    ]
    meta += [
        f"<span title='{html.escape(estimate.description, quote=True)}'>{html.escape(estimate.label)}"
        f" <b>{estimate.value:.2f}</b></span>"
        for estimate in pass_k_estimates(report)
    ]
    if report.partial:
        meta.append(
            "<b>partial</b>: only the cases that finished before the evaluation stopped (resume= carries it on)"
        )
    if report.reuse_summary:
        meta.append(f"<span class='ae-muted'>{html.escape(report.reuse_summary)}</span>")
    result_id = report.result_id
    ident = f"<div class='ae-muted ae-id'>result {html.escape(result_id)}</div>" if result_id else ""
    return (
        f"<div class='ae-head'>{badge(report.overall_status)} <span class='ae-title'>Evaluation report</span></div>"
        f"<div class='ae-meta'>{' '.join(f'<span>{item}</span>' for item in meta)}</div>{ident}"
    )


def report_html(
    report: EvaluationReport, *, max_cases: int | None = 50, link_cases: bool = False, style: bool = True
) -> str:
    """The HTML summary of a report (its ``_repr_html_``).

    It shows the overall status, the app, eval set, runs and duration (with several runs, pass@1
    and pass^k per case: each case's estimate from its own runs, averaged over the cases; the
    duration reads "unknown" when the report does not know it), each metric's pass rate (also per
    run), then the cases, failing first, each with its status and
    score (the case aggregator's verdict across runs: ``case_table``'s ``status`` and ``score``),
    with several runs how many of them passed on their own ("passed 2/3 runs"), and the reasons it
    failed (a reason given for several metrics shows once, naming them; a long one is folded to its
    start, one click unfolds it). Styles are inline and scoped; nothing external is loaded and no
    script runs. Of a report that has not read its records, it reads those of the cases it gives
    reasons for (at most ``max_cases``), not the others'.

    Args:
        report: The report to show.
        max_cases: Most case rows to show (failing ones come first); ``None`` shows all.
        link_cases: Link case ids to ``#case-…`` anchors, for the exported page.
        style: Include the ``<style>`` block (leave it out when the page already has it).

    Returns:
        A self-contained HTML fragment.
    """
    body = _header(report) + _metrics_table(report) + _cases_table(report, max_cases, link_cases)
    css = f"<style>{CSS}</style>" if style else ""
    return f'<div class="agenteval">{css}{body}</div>'
