"""One case side by side: per turn, the user message, expected vs actual replies and tool calls, and the metrics."""

from __future__ import annotations

import html
import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import zip_longest
from typing import TYPE_CHECKING, Protocol

from agenteval.analysis.report import case_views
from agenteval.errors import ConfigError, NotFoundError
from agenteval.evalresult.models import EvalCaseResult, EvalMetricResult, RubricScore
from agenteval.evalset.models import Invocation
from agenteval.notebook._html import CSS, badge, bound, clip, fmt_score, fold
from agenteval.notebook._trajectory_diff import cell, trajectory_rows
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    from agenteval.analysis.report import EvaluationReport

__all__ = [
    "ShownCase",
    "case_html",
    "case_turns",
    "find_case",
    "metrics_table",
    "pick_run",
    "responses",
    "shown_case_html",
    "text_block",
    "word_diff",
]

_TEXT_PREVIEW = 300  # characters of a long text shown before it is folded
_REASON_PREVIEW = 200
_DIFF_LIMIT = 2_000  # tokens per side; SequenceMatcher is quadratic
_Turn = tuple[Invocation | None, Invocation | None, list[EvalMetricResult]]


class _CaseRuns(Protocol):
    """A case and its full result in each run, in run order (a :class:`ShownCase` or a ``CaseSummary``)."""

    @property
    def eval_id(self) -> str: ...
    @property
    def runs(self) -> Sequence[EvalCaseResult]: ...


@dataclass(frozen=True, slots=True)
class ShownCase:
    """The case a case view shows: its outcome across runs and its full result in each run, in run order."""

    eval_id: str
    overall_status: EvalStatus
    score: float
    runs: list[EvalCaseResult]


def find_case(report: EvaluationReport, eval_id: str) -> ShownCase:
    """The case ``eval_id`` of ``report``, with its own records only: the other cases' stay unread.

    Raises:
        NotFoundError: The report has no such case (the message lists its cases).
    """
    runs = report.case_results(eval_id)
    case = next(case for case in case_views(report) if case.eval_id == eval_id)
    return ShownCase(case.eval_id, case.overall_status, case.score, runs)


def pick_run(summary: _CaseRuns, run_id: int | None) -> EvalCaseResult:
    # A str or float run id would match no run and read as "no run 1; its runs are: 1, 2".
    if run_id is not None and (isinstance(run_id, bool) or not isinstance(run_id, numbers.Integral)):
        raise ConfigError(
            f"run_id must be an int, the run's number (run_id=1 for the first run), got {run_id!r}"
            f" of type {type(run_id).__name__}"
        )
    if not summary.runs:
        raise NotFoundError(f"case {summary.eval_id!r} has no results")
    if run_id is None:
        failing = [run for run in summary.runs if run.final_eval_status is EvalStatus.FAILED]
        return (failing or summary.runs)[0]
    for run in summary.runs:
        if run.run_id == run_id:
            return run
    runs = ", ".join(str(run.run_id) for run in summary.runs)
    raise NotFoundError(f"case {summary.eval_id!r} has no run {run_id}; its runs are: {runs}")


def _mark(tokens: Sequence[str]) -> str:
    text = html.escape("".join(tokens))
    return f'<mark class="ae-hl">{text}</mark>' if text else ""


def word_diff(expected: str, actual: str) -> tuple[str, str]:
    """Both texts escaped, with the differing words marked when the texts are alike enough to align."""
    left = re.findall(r"\s+|\w+|[^\w\s]", expected)
    right = re.findall(r"\s+|\w+|[^\w\s]", actual)
    plain = html.escape(expected), html.escape(actual)
    if len(left) > _DIFF_LIMIT or len(right) > _DIFF_LIMIT:
        return plain
    matcher = SequenceMatcher(None, left, right, autojunk=False)
    if matcher.ratio() < 0.4:  # mostly different: word marks would only add noise
        return plain
    out_left: list[str] = []
    out_right: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out_left.append(html.escape("".join(left[i1:i2])))
            out_right.append(html.escape("".join(right[j1:j2])))
        else:
            out_left.append(_mark(left[i1:i2]))
            out_right.append(_mark(right[j1:j2]))
    return "".join(out_left), "".join(out_right)


def text_block(text: str, markup: str | None = None) -> str:
    """A message (``markup`` when it carries marks, else ``text`` escaped), folded when long."""
    body = html.escape(bound(text)) if markup is None else markup
    return fold(text, f"<div class='ae-text'>{body}</div>", _TEXT_PREVIEW)


def responses(expected: Invocation | None, actual: Invocation | None) -> str:
    want = expected.final_response if expected else None
    got = actual.final_response if actual else None
    if want is None and got is None:
        return ""
    if want is None or got is None:
        left = cell("Final response", "<div class='ae-muted'>— none expected</div>", "ae-absent")
        right = cell("Final response", "<div class='ae-muted'>— no response</div>", "ae-absent")
        if want is not None:
            left = cell("Final response", text_block(want.content))
        if got is not None:
            right = cell("Final response", text_block(got.content))
        return left + right
    differs = want.content.strip() != got.content.strip()
    if differs:
        left_text, right_text = word_diff(bound(want.content), bound(got.content))
    else:
        left_text, right_text = html.escape(bound(want.content)), html.escape(bound(got.content))
    css = "ae-mismatch" if differs else ""
    label = "Final response (differs)" if differs else "Final response"
    return cell(label, text_block(want.content, left_text), css) + cell(label, text_block(got.content, right_text), css)


def _by_reason(metrics: list[EvalMetricResult], notes: Mapping[str, str]) -> list[list[EvalMetricResult]]:
    """The metrics grouped by what their reason cell shows, in order of first appearance.

    A metric with a note in ``notes`` shows the note; one with no reason or with rubrics stays alone.
    """
    groups: dict[tuple[str, str] | int, list[EvalMetricResult]] = {}
    for index, metric in enumerate(metrics):
        note = notes.get(metric.metric_name)
        reason = metric.shown_reason
        key: tuple[str, str] | int
        if note is not None:
            key = ("note", note)
        elif not reason or (metric.details is not None and bool(metric.details.rubric_scores)):
            key = index
        else:
            key = ("reason", reason)
        groups.setdefault(key, []).append(metric)
    return list(groups.values())


def _reason_cell(metric: EvalMetricResult, rows: int, note: str | None) -> str:
    """The reason of ``metric`` and its rubric scores (or ``note``), spanning the ``rows`` metrics that share it."""
    span = f' rowspan="{rows}"' if rows > 1 else ""
    if note is not None:
        return f'<td{span}><div class="ae-muted">{html.escape(note)}</div></td>'
    reason = metric.shown_reason
    rubrics = metric.details.rubric_scores if metric.details else []
    extra = "".join(
        f'<div class="ae-reason">{clip(f"• {r.id} {r.score:.2f}: {r.reason}", _REASON_PREVIEW)}</div>' for r in rubrics
    )
    return f'<td{span}><div class="ae-reason">{clip(reason, _REASON_PREVIEW) or "—"}</div>{extra}</td>'


def metrics_table(metrics: list[EvalMetricResult], notes: Mapping[str, str] | None = None) -> str:
    """Each metric's score and verdict; a reason several metrics share shows once, next to all of them.

    A metric named in ``notes`` shows its note in place of its reason.
    """
    if not metrics:
        return '<p class="ae-muted">No metric results.</p>'
    notes = notes or {}
    rows = []
    for group in _by_reason(metrics, notes):
        for position, metric in enumerate(group):
            rows.append(
                f'<tr class="ae-row-{html.escape(str(metric.eval_status or "not_evaluated"))}">'
                f'<td class="ae-id">{html.escape(metric.metric_name)}</td>'
                f'<td class="ae-num">{fmt_score(metric.score)}</td><td class="ae-num">{metric.threshold:g}</td>'
                f"<td>{badge(metric.eval_status)}</td>"
                + (_reason_cell(metric, len(group), notes.get(metric.metric_name)) if position == 0 else "")
                + "</tr>"
            )
    return (
        "<table class='ae-table'><thead><tr><th>Metric</th><th class='ae-num'>Score</th>"
        "<th class='ae-num'>Threshold</th><th>Status</th><th>Reason</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _said_by_turns(metrics: list[EvalMetricResult], turns: list[_Turn]) -> dict[str, str]:
    """For each case metric whose reason and rubric scores only repeat its turns': a note naming those turns.

    The case's reason joins the turns' reasons, so showing it again above the turns says nothing
    new; a reason that adds to them (a custom evaluator's summary, say) is shown.
    """
    notes: dict[str, str] = {}
    for metric in metrics:
        rubrics = metric.details.rubric_scores if metric.details else []
        rest = metric.details.reason if metric.details else ""
        if not rest.strip() and not rubrics:
            continue
        said: list[int] = []
        turn_rubrics: list[RubricScore] = []
        for number, (_, _, results) in enumerate(turns, start=1):
            for result in results:
                reason = result.shown_reason
                found = result.details.rubric_scores if result.details else []
                if result.metric_name != metric.metric_name or not (reason or found):
                    continue
                said.append(number)
                turn_rubrics += found
                rest = rest.replace(reason, "", 1) if reason else rest
        if said and not rest.strip("; \n\t") and all(rubric in turn_rubrics for rubric in rubrics):
            notes[metric.metric_name] = f"see turn{'s' if len(said) > 1 else ''} {', '.join(map(str, said))} below"
    return notes


def _turn_html(
    number: int, expected: Invocation | None, actual: Invocation | None, metrics: list[EvalMetricResult]
) -> str:
    status = None
    if metrics:
        statuses = {m.eval_status for m in metrics}
        status = next((s for s in _STATUS_ORDER if s in statuses), EvalStatus.NOT_EVALUATED)
    user = (actual.user_content if actual else None) or (expected.user_content if expected else None)
    user_html = text_block(user.content) if user else "<div class='ae-text ae-muted'>—</div>"
    expected_user = expected.user_content if expected else None
    if expected_user and user and expected_user.content != user.content:
        user_html += (
            f"<div class='ae-muted'>{clip(f'expected user message: {expected_user.content}', _TEXT_PREVIEW)}</div>"
        )
    tools = trajectory_rows(expected.tools if expected else [], actual.tools if actual else [], metrics)
    grid = responses(expected, actual) + tools
    return (
        f'<div class="ae-turn"><div class="ae-turn-head">Turn {number} {badge(status) if status else ""}</div>'
        f'<div class="ae-user"><span class="ae-label">User</span>{user_html}</div>'
        f'<div class="ae-grid"><div class="ae-colhead">Expected</div><div class="ae-colhead">Actual</div>{grid}</div>'
        f"<h4>Metrics for turn {number}</h4>{metrics_table(metrics)}</div>"
    )


_STATUS_ORDER = (EvalStatus.FAILED, EvalStatus.PASSED, EvalStatus.NOT_EVALUATED)


def case_turns(report: EvaluationReport, run: EvalCaseResult) -> list[_Turn]:
    if run.eval_metric_result_per_invocation:
        return [
            (turn.expected_invocation, turn.actual_invocation, turn.eval_metric_results)
            for turn in run.eval_metric_result_per_invocation
        ]
    # Not scored (the inference failed): show what was expected and whatever the agent did.
    expected: list[Invocation] = []
    if report.eval_set is not None:
        case = next((c for c in report.eval_set.eval_cases if c.eval_id == run.eval_id), None)
        expected = list(case.conversation or []) if case is not None else []
    actual: list[Invocation] = []
    if 0 < run.run_id <= len(report.inference_results):
        inference = next((r for r in report.inference_results[run.run_id - 1] if r.eval_case_id == run.eval_id), None)
        actual = list(inference.inferences) if inference is not None else []
    return [(want, got, []) for want, got in zip_longest(expected, actual)]


def _runs_strip(summary: ShownCase, shown: EvalCaseResult, run_id: int | None, page: bool) -> str:
    if len(summary.runs) < 2:
        return ""
    chips = []
    for run in summary.runs:
        status = str(run.final_eval_status or "not_evaluated")
        mark = {"passed": "✓", "failed": "✗"}.get(status, "–")
        current = " ae-current" if run is shown else ""
        chips.append(f'<span class="ae-run ae-run-{html.escape(status)}{current}">run {run.run_id} {mark}</span>')
    why = (
        "" if run_id is not None else " (the first failing run)" if shown.final_eval_status is EvalStatus.FAILED else ""
    )
    # A page has no kernel to pass run_id to: say where the other runs are instead.
    other = "the Data tables below hold every run" if page else "pass <code>run_id=</code> for another"
    note = f"showing run {shown.run_id}{why}; {other}"
    return (
        f'<div class="ae-runs"><span class="ae-muted">Runs:</span> {" ".join(chips)} '
        f'<span class="ae-muted">{note}</span></div>'
    )


def _head(summary: ShownCase, run: EvalCaseResult) -> str:
    """The case's title with its overall status and, with several runs, the status of the run shown, each labelled."""
    title = f'<span class="ae-title">Case <span class="ae-id">{html.escape(summary.eval_id)}</span></span>'
    if len(summary.runs) < 2:
        return f'<div class="ae-head">{badge(summary.overall_status)} {title}</div>'
    return (
        f'<div class="ae-head">{title} <span>overall: {badge(summary.overall_status)}</span> '
        f"<span>run {run.run_id}: {badge(run.final_eval_status)}</span></div>"
    )


def _meta(summary: ShownCase, run: EvalCaseResult) -> str:
    if len(summary.runs) < 2:
        meta = [f"run <b>{run.run_id}</b>", f"score <b>{fmt_score(run.score)}</b>"]
    else:
        meta = [
            f"overall score <b>{fmt_score(summary.score)}</b>",
            f"run {run.run_id} score <b>{fmt_score(run.score)}</b>",
        ]
    meta += [f"session <span class='ae-id'>{html.escape(run.session_id)}</span>"] if run.session_id else []
    meta += [f"user <span class='ae-id'>{html.escape(run.user_id)}</span>"] if run.user_id else []
    return f"<div class='ae-meta'>{' '.join(f'<span>{m}</span>' for m in meta)}</div>"


def case_html(
    report: EvaluationReport, eval_id: str, run_id: int | None = None, *, style: bool = True, page: bool = False
) -> str:
    """One case side by side: per turn, the user message, expected vs actual, and each metric's verdict.

    Expected is on the left, actual on the right. Final responses that differ are framed in red with
    the differing words marked. Tool calls are lined up as the turn's tool-trajectory metric paired
    them (in order, in any order or as a subset; by name and arguments in any order without one, a
    note above them says which): a call present on one side only (missing or inserted) is framed
    with a dashed red border, a call of another tool in place of the expected one (substituted) or
    one made out of order is framed in red, and for a call of the right tool with other arguments or
    result the keys whose values differ are marked and a table lists every differing JSON path with
    both values. Messages, tool arguments and reasons that are long are folded to their start (one
    click unfolds them), and a reason several metrics share shows once, next to all of them.

    With several runs one run is shown, by default the first run in which the case failed (or run 1
    when it never failed), because that is the one worth reading; the head gives the case's overall
    status (the case aggregator's verdict across runs) and the shown run's, each labelled, and a
    strip shows every run's status. The metrics above the turns are the shown run's; a reason there
    shows only when it says more than the turns' reasons below it.

    Of a report that has not read its records, it reads this case's only (the expected turns of a
    run that was not scored come from the eval set, which a loaded or derived report reads with
    every record).

    Args:
        report: The report holding the case.
        eval_id: The case id.
        run_id: The run to show (1-based); ``None`` picks as described above.
        style: Include the ``<style>`` block (leave it out when the page already has it).
        page: The view is part of an exported page, which has no kernel: it says where the other
            runs are rather than how to show them.

    Returns:
        A self-contained HTML fragment.

    Raises:
        NotFoundError: The report has no such case (the message lists its cases), or no such run.
        ConfigError: ``run_id`` is not an int.
    """
    return shown_case_html(report, find_case(report, eval_id), run_id, style=style, page=page)


def shown_case_html(
    report: EvaluationReport, summary: ShownCase, run_id: int | None = None, *, style: bool = True, page: bool = False
) -> str:
    """:func:`case_html` of a case found already (:func:`find_case`), for a page that shows every case.

    Raises:
        NotFoundError: The case has no run ``run_id``.
        ConfigError: ``run_id`` is not an int.
    """
    run = pick_run(summary, run_id)
    body = _head(summary, run) + _runs_strip(summary, run, run_id, page) + _meta(summary, run)
    if run.error_message:
        error = clip(run.short_error, _REASON_PREVIEW)
        body += f'<div class="ae-error"><span class="ae-label">Error</span><div class="ae-reason">{error}</div></div>'
    turns = case_turns(report, run)
    if len(turns) != 1 or not turns[0][2]:  # with one scored turn, the case's metrics are that turn's
        heading = "Metrics for the case" + (f", run {run.run_id}" if len(summary.runs) > 1 else "")
        notes = _said_by_turns(run.overall_eval_metric_results, turns)
        body += f"<h4>{heading}</h4>{metrics_table(run.overall_eval_metric_results, notes)}"
    body += "".join(_turn_html(number, *turn) for number, turn in enumerate(turns, start=1))
    if not turns:
        body += '<p class="ae-muted">No turns were recorded.</p>'
    css = f"<style>{CSS}</style>" if style else ""
    return f'<div class="agenteval">{css}{body}</div>'
