"""One case in two reports, turn by turn: expected, baseline and candidate side by side, and what changed.

Each version's tool calls are lined up with the expected ones as that report's tool-trajectory metric
paired them, so a row shows one expected call and what each version made of it; each candidate cell
says when it differs from the baseline's. Everything from the reports is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import zip_longest
from typing import TYPE_CHECKING

from agenteval.analysis.diagnostics.alignment import AlignedCall, CallKind
from agenteval.errors import NotFoundError
from agenteval.evalresult.models import EvalCaseResult, EvalMetricResult
from agenteval.evalset.models import Invocation, Tool
from agenteval.notebook._case_view import case_turns, find_case, pick_run, text_block, word_diff
from agenteval.notebook._html import CSS, badge, bound, clip, fmt_score
from agenteval.notebook._trajectory_diff import align_turn, call_cell, cell, tool_body
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    from agenteval.analysis.compare import Comparison
    from agenteval.analysis.report import EvaluationReport

__all__ = ["comparison_case_html"]

_TEXT_PREVIEW = 300
_GRID = ' style="grid-template-columns:repeat(3,minmax(0,1fr))"'
_SPAN = ' style="grid-column:1/-1"'
_KIND_WORDS: dict[CallKind, str] = {
    "matched": "matched",
    "differs": "other arguments or result",
    "substituted": "another tool",
    "reordered": "out of order",
    "missing": "not called",
    "extra": "not expected",
}


_Turn = tuple[Invocation | None, Invocation | None, list[EvalMetricResult]]
"""A turn of one version: expected, actual and the metric results."""


@dataclass(frozen=True, slots=True)
class _Version:
    """One report's side of the case: the run shown and its turns (``run`` is ``None`` without the case)."""

    role: str
    run: EvalCaseResult | None
    turns: list[_Turn]


def _version(role: str, report: EvaluationReport, eval_id: str, run_id: int | None) -> _Version:
    if eval_id not in report.case_statuses:
        return _Version(role, None, [])
    run = pick_run(find_case(report, eval_id), run_id)
    return _Version(role, run, case_turns(report, run))


def _head(eval_id: str, versions: Sequence[_Version]) -> str:
    parts = [f'<span class="ae-title">Case <span class="ae-id">{html.escape(eval_id)}</span></span>']
    for version in versions:
        if version.run is None:
            parts.append(f'<span>{version.role}: <span class="ae-muted">not in this report</span></span>')
        else:
            status = badge(version.run.final_eval_status)
            score = fmt_score(version.run.score)
            parts.append(f"<span>{version.role} (run {version.run.run_id}): {status} score <b>{score}</b></span>")
    body = f'<div class="ae-head">{parts[0]}</div><div class="ae-meta">{" ".join(parts[1:])}</div>'
    for version in versions:
        if version.run is not None and version.run.error_message:
            error = clip(version.run.short_error, _TEXT_PREVIEW)
            body += (
                f'<div class="ae-error"><span class="ae-label">{version.role} error</span>'
                f'<div class="ae-reason">{error}</div></div>'
            )
    return body


def _response_cell(expected: Invocation | None, actual: Invocation | None, present: bool) -> str:
    if not present:
        return cell("Final response", "<div class='ae-muted'>— no such turn</div>", "ae-absent")
    got = actual.final_response if actual else None
    want = expected.final_response if expected else None
    if got is None:
        return cell("Final response", "<div class='ae-muted'>— no response</div>", "ae-absent")
    if want is None or want.content.strip() == got.content.strip():
        return cell("Final response", text_block(got.content))
    _, marked = word_diff(bound(want.content), bound(got.content))
    return cell("Final response (differs)", text_block(got.content, marked), "ae-mismatch")


def _responses(expected: Invocation | None, sides: Sequence[_Turn | None]) -> str:
    want = expected.final_response if expected else None
    left = cell("Final response", text_block(want.content) if want else "<div class='ae-muted'>— none expected</div>")
    return left + "".join(
        _response_cell(side[0], side[1], True) if side else _response_cell(None, None, False) for side in sides
    )


def _calls(side: _Turn | None) -> list[AlignedCall] | None:
    if side is None:
        return None
    expected, actual, metrics = side
    return list(align_turn(actual.tools if actual else [], expected.tools if expected else [], metrics).alignment.calls)


def _same(before: AlignedCall | None, after: AlignedCall | None) -> bool:
    if before is None or after is None:
        return before is after
    return before.kind == after.kind and _made(before.actual) == _made(after.actual)


def _made(tool: Tool | None) -> object:
    return None if tool is None else (tool.name, tool.arguments, tool.result)


def _version_cell(call: AlignedCall | None, baseline: AlignedCall | None, present: bool, candidate: bool) -> str:
    if not present:
        return cell("Tool call", "<div class='ae-muted'>— no such turn</div>", "ae-absent")
    if call is None:
        return cell("Tool call", "<div class='ae-muted'>— not called</div>", "ae-absent")
    note = ""
    if candidate and not _same(baseline, call):
        was = _KIND_WORDS[baseline.kind] if baseline is not None else "no such call"
        note = f'<div class="ae-muted ae-change">changed: the baseline\'s was {html.escape(was)}</div>'
    if call.kind == "missing":  # here the version's cell, not the expected one, says it is missing
        body = "<div class='ae-muted'>— not called</div>" + note
        return cell("Tool call (not called)", body, "ae-only", call="missing")
    return call_cell(call, note)


def _tool_rows(expected: Invocation | None, sides: Sequence[_Turn | None]) -> str:
    """A row per expected call (what each version made of it), then a row per version's extra call."""
    aligned = [_calls(side) for side in sides]
    expected_tools = expected.tools if expected else []
    by_expected = [
        {call.expected_index: call for call in calls if call.expected_index is not None} if calls is not None else {}
        for calls in aligned
    ]
    extras = [[call for call in calls if call.kind == "extra"] if calls is not None else [] for calls in aligned]
    if not expected_tools and not any(extras):
        return ""
    rows = [f'<div class="ae-muted ae-align"{_SPAN}>Tool calls as each report\'s metric paired them</div>']
    for i, tool in enumerate(expected_tools):
        calls = [found.get(i) for found in by_expected]
        rows.append(cell("Tool call", tool_body(tool, i + 1, tool)))
        rows += [
            _version_cell(call, calls[0], side is not None, position > 0)
            for position, (call, side) in enumerate(zip(calls, sides, strict=True))
        ]
    for before, after in _paired_extras(extras[0], extras[1]):
        rows.append(cell("Tool call", "<div class='ae-muted'>— not expected</div>", "ae-absent"))
        rows.append(_version_cell(before, None, True, False) if before else _nothing(sides[0] is not None))
        rows.append(_version_cell(after, before, True, True) if after else _nothing(sides[1] is not None))
    return "".join(rows)


def _nothing(present: bool) -> str:
    """The cell of a version that has no extra call in this row (or not the turn at all)."""
    return cell("Tool call", f"<div class='ae-muted'>—{'' if present else ' no such turn'}</div>", "ae-absent")


def _paired_extras(
    before: list[AlignedCall], after: list[AlignedCall]
) -> list[tuple[AlignedCall | None, AlignedCall | None]]:
    """The extra calls of both versions, a baseline's beside the candidate's first unused one of the same tool."""
    unused = list(after)
    pairs: list[tuple[AlignedCall | None, AlignedCall | None]] = []
    for call in before:
        name = call.actual.name if call.actual else ""
        match = next((other for other in unused if other.actual is not None and other.actual.name == name), None)
        if match is not None:
            unused.remove(match)
        pairs.append((call, match))
    return pairs + [(None, call) for call in unused]


def _status_change(before: EvalMetricResult | None, after: EvalMetricResult | None) -> str:
    if before is None or after is None:
        return "new" if before is None else "removed"
    if before.eval_status == after.eval_status:
        return "unchanged"
    if after.eval_status is EvalStatus.PASSED:
        return "fixed"
    return "regressed" if before.eval_status is EvalStatus.PASSED else "changed"


def _metrics(sides: Sequence[_Turn | None]) -> str:
    by_side = [{m.metric_name: m for m in side[2]} if side else {} for side in sides]
    names = list(dict.fromkeys([*by_side[0], *by_side[1]]))
    if not names:
        return '<p class="ae-muted">No metric results.</p>'
    rows = []
    for name in names:
        before, after = by_side[0].get(name), by_side[1].get(name)
        change = _status_change(before, after)
        css = {"regressed": "ae-down", "fixed": "ae-up"}.get(change, "")
        cells = "".join(
            f'<td class="ae-num">{fmt_score(m.score) if m else "—"}</td><td>{badge(m.eval_status) if m else ""}</td>'
            for m in (before, after)
        )
        rows.append(
            f'<tr data-change="{change}"><td class="ae-id">{html.escape(name)}</td>{cells}'
            f'<td class="{css}">{change}</td></tr>'
        )
    return (
        "<table class='ae-table'><thead><tr><th>Metric</th><th class='ae-num'>Baseline</th><th></th>"
        "<th class='ae-num'>Candidate</th><th></th><th>Change</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _turn_html(number: int, sides: Sequence[_Turn | None]) -> str:
    expected = next((side[0] for side in reversed(sides) if side is not None and side[0] is not None), None)
    actuals = [side[1] for side in sides if side is not None and side[1] is not None]
    user = next((a.user_content for a in reversed(actuals) if a.user_content), None)
    user = user or (expected.user_content if expected else None)
    user_html = text_block(user.content) if user else "<div class='ae-text ae-muted'>—</div>"
    expected_tools = [side[0].tools for side in sides if side is not None and side[0] is not None]
    note = ""
    if len(expected_tools) == 2 and expected_tools[0] != expected_tools[1]:
        note = (
            "<div class='ae-note'>The expected tool calls differ between the reports (the eval set changed): "
            "the rows follow the candidate's; the baseline's calls are lined up with its own.</div>"
        )
    heads = "".join(f'<div class="ae-colhead">{head}</div>' for head in ("Expected", "Baseline", "Candidate"))
    grid = _responses(expected, sides) + _tool_rows(expected, sides)
    return (
        f'<div class="ae-turn"><div class="ae-turn-head">Turn {number}</div>'
        f'<div class="ae-user"><span class="ae-label">User</span>{user_html}</div>{note}'
        f'<div class="ae-grid"{_GRID}>{heads}{grid}</div>'
        f"<h4>Metrics for turn {number}</h4>{_metrics(sides)}</div>"
    )


def comparison_case_html(comparison: Comparison, eval_id: str, run_id: int | None = None, *, style: bool = True) -> str:
    """One case in both reports: per turn, the expected calls and reply beside each version's.

    Each version's tool calls are lined up with the expected ones as that report's tool-trajectory
    metric paired them, one row per expected call and then the calls nobody expected, marked as the
    report's case view marks them (:func:`~agenteval.notebook.display.case_html`); a candidate cell
    that differs from the baseline's says what the baseline's was. Each turn ends with both
    reports' metric verdicts and the change (fixed, regressed, …).

    Args:
        comparison: The two reports.
        eval_id: The case.
        run_id: The run to show in both; ``None`` shows each report's first failing run (or run 1).
        style: Include the ``<style>`` block.

    Returns:
        A self-contained HTML fragment.

    Raises:
        NotFoundError: Neither report has the case, or one has no run ``run_id``.
        ConfigError: ``run_id`` is not an int.
    """
    versions = [
        _version("Baseline", comparison.baseline, eval_id, run_id),
        _version("Candidate", comparison.candidate, eval_id, run_id),
    ]
    if all(version.run is None for version in versions):
        reports = (comparison.baseline, comparison.candidate)
        known = dict.fromkeys(known_id for report in reports for known_id in report.case_statuses)
        listed = ", ".join(map(repr, list(known)[:30])) + (", …" if len(known) > 30 else "")
        raise NotFoundError(f"no case {eval_id!r} in either report; their cases are: {listed or '(none)'}")
    body = _head(eval_id, versions)
    turns = list(zip_longest(*(version.turns for version in versions)))
    body += "".join(_turn_html(number, sides) for number, sides in enumerate(turns, start=1))
    if not turns:
        body += '<p class="ae-muted">No turns were recorded.</p>'
    css = f"<style>{CSS}</style>" if style else ""
    return f'<div class="agenteval">{css}{body}</div>'
