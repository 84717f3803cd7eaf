"""Tool calls drawn as the tool-trajectory metric paired them: aligned rows, marked, with per-argument JSON diffs.

Each row lines an expected call up with an actual one (:mod:`agenteval.analysis.diagnostics.alignment`);
its cells carry ``data-call`` (the row's kind) so that the markup can be checked as well as read.
Everything from the report is escaped: tool names and arguments come from agents.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agenteval.analysis.diagnostics.alignment import (
    AlignedCall,
    CallKind,
    TrajectoryAlignment,
    align_tool_calls,
    default_trajectory_criterion,
    trajectory_criterion,
)
from agenteval.errors import ConfigError
from agenteval.evalresult.models import EvalMetricResult
from agenteval.evalset.models import Tool
from agenteval.metric.json_match import JSONDifference
from agenteval.notebook._html import TEXT_LIMIT, bound, clip, compact_json, fold, pretty_json

__all__ = [
    "TurnAlignment",
    "align_turn",
    "call_cell",
    "cell",
    "differences_table",
    "tool_body",
    "trajectory_rows",
]

_JSON_PREVIEW = 160
_VALUE_PREVIEW = 120
_DIFFERENCES_SHOWN = 30


def cell(label: str, body: str, css: str = "", *, call: str = "") -> str:
    """A cell of the side-by-side grid: a label above ``body`` (markup); ``call`` names the row's kind."""
    data = f' data-call="{html.escape(call)}"' if call else ""
    return f'<div class="ae-cell {css}"{data}><span class="ae-label">{html.escape(label)}</span>{body}</div>'


def _json_block(value: Any, other: Any, compare: bool) -> str:
    """Pretty JSON, folded to one line when long; against ``other``, keys whose values differ are marked."""
    return fold(compact_json(value), _json_markup(value, other, compare), _JSON_PREVIEW)


def _json_markup(value: Any, other: Any, compare: bool) -> str:
    text = pretty_json(value)
    # Keys are marked one by one only in values short enough to show whole: a longer one is cut.
    if (
        compare
        and isinstance(value, dict)
        and isinstance(other, dict)
        and value
        and len(text) <= TEXT_LIMIT
        and len(pretty_json(other)) <= TEXT_LIMIT
    ):
        lines = ["{"]
        items = list(value.items())
        for index, (key, item) in enumerate(items):
            text = f"{json.dumps(str(key), ensure_ascii=False)}: " + pretty_json(item).replace("\n", "\n  ")
            text += "," if index < len(items) - 1 else ""
            escaped = html.escape(bound(text))
            differs = key not in other or other[key] != item
            lines.append("  " + (f'<span class="ae-hl">{escaped}</span>' if differs else escaped))
        missing = [html.escape(json.dumps(str(key), ensure_ascii=False)) for key in other if key not in value]
        lines += [f'  <span class="ae-hl ae-muted">(no {key})</span>' for key in missing]
        lines.append("}")
        return '<pre class="ae-json">' + "\n".join(lines) + "</pre>"
    escaped = html.escape(bound(text))
    if compare and value != other:
        escaped = f'<span class="ae-hl">{escaped}</span>'
    return f'<pre class="ae-json">{escaped}</pre>'


def tool_body(tool: Tool, number: int, expected: Tool | None = None, other: Tool | None = None) -> str:
    """A call's name, number (1-based), arguments and result.

    Against ``other`` (the call it is paired with), the argument and result keys that differ are
    marked; a result is compared only when the expected call (``expected``) states one.
    """
    compare = other is not None
    other_arguments, other_result = (other.arguments, other.result) if other is not None else (None, None)
    body = (
        f'<div class="ae-tool-name">{html.escape(tool.name or "(unnamed)")}'
        f'<span class="ae-muted"> · call {number}</span></div>'
    )
    body += '<span class="ae-label">arguments</span>' + _json_block(tool.arguments, other_arguments, compare)
    # An expected call that states no result says nothing about it: nothing to show or compare.
    if tool.result is not None:
        compare_result = compare and expected is not None and expected.result is not None
        body += '<span class="ae-label">result</span>' + _json_block(tool.result, other_result, compare_result)
    return body


def _value(value: Any, present: bool) -> str:
    if not present:
        return '<span class="ae-muted">(absent)</span>'
    return clip(compact_json(value), _VALUE_PREVIEW)


def _difference_row(part: str, difference: JSONDifference) -> str:
    where = f'<td class="ae-id">{html.escape(part)} {html.escape(difference.path)}</td>'
    data = f'<tr data-diff="{html.escape(difference.kind)}" data-path="{html.escape(difference.path)}">'
    if difference.kind in ("invalid", "schema", "compare"):  # the whole value, judged as one
        return f'{data}{where}<td colspan="2" class="ae-reason">{clip(difference.reason, _VALUE_PREVIEW)}</td></tr>'
    expected = _value(difference.expected, difference.kind != "extra_key")
    actual = _value(difference.actual, difference.kind != "missing_key")
    return f'{data}{where}<td>{expected}</td><td><span class="ae-hl">{actual}</span></td></tr>'


def differences_table(call: AlignedCall) -> str:
    """Where the arguments and result of a ``differs`` pair differ, one row per JSON path (``""`` if nowhere)."""
    found = [("arguments", d) for d in call.argument_differences] + [("result", d) for d in call.result_differences]
    if not found:
        return ""
    rows = "".join(_difference_row(part, difference) for part, difference in found[:_DIFFERENCES_SHOWN])
    more = (
        f'<p class="ae-muted">… and {len(found) - _DIFFERENCES_SHOWN} more</p>'
        if len(found) > _DIFFERENCES_SHOWN
        else ""
    )
    return (
        '<span class="ae-label">differences from expected</span>'
        "<table class='ae-table ae-json-diff'><thead><tr><th>Where</th><th>Expected</th><th>Actual</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>{more}"
    )


@dataclass(frozen=True, slots=True)
class TurnAlignment:
    """A turn's calls lined up, and how (for the note above them)."""

    alignment: TrajectoryAlignment
    note: str
    """Which pairing this is, in words (plain text)."""


def align_turn(actual: Sequence[Tool], expected: Sequence[Tool], metrics: Sequence[EvalMetricResult]) -> TurnAlignment:
    """The calls lined up as the turn's first tool-trajectory metric paired them.

    Without such a metric, or when its pairing cannot be shown (a registered compare decided), they
    are lined up by name and arguments in any order, and the note says so.
    """
    why = "no tool-trajectory metric scored this turn"
    for result in metrics:
        criterion = trajectory_criterion(result)
        if criterion is None:
            continue
        try:
            alignment = align_tool_calls(actual, expected, criterion)
        except ConfigError as exc:
            why = f"{result.metric_name} cannot be followed: {exc}"
            break
        return TurnAlignment(alignment, f"Tool calls as {result.metric_name} paired them: {alignment.mode}")
    alignment = align_tool_calls(actual, expected, default_trajectory_criterion())
    return TurnAlignment(alignment, f"Tool calls paired by name and arguments, in any order ({why})")


_EXPECTED_LABELS: dict[CallKind, str] = {
    "matched": "Tool call",
    "differs": "Tool call (differs)",
    "substituted": "Tool call (substituted)",
    "reordered": "Tool call (out of order)",
    "missing": "Tool call (not in actual)",
}
_ACTUAL_LABELS: dict[CallKind, str] = {
    "matched": "Tool call",
    "differs": "Tool call (differs)",
    "substituted": "Tool call (called instead)",
    "reordered": "Tool call (out of order)",
    "extra": "Tool call (not expected)",
}


def call_cell(call: AlignedCall, note: str = "") -> str:
    """The actual side of a row: the call made, marked by how it lines up with the expected one.

    ``note`` (markup) ends the cell.
    """
    kind = call.kind
    if call.actual is None or call.actual_index is None:
        return cell("Tool call", "<div class='ae-muted'>— not called</div>" + note, "ae-absent", call=kind)
    compare = kind == "differs"
    body = tool_body(call.actual, call.actual_index + 1, call.expected, call.expected if compare else None)
    if compare:
        body += differences_table(call)
    body += note
    if kind == "extra" and call.allowed:
        return cell("Tool call (extra, allowed)", body, call=kind)
    css = {"matched": "", "extra": "ae-only"}.get(kind, "ae-mismatch")
    return cell(_ACTUAL_LABELS[kind], body, css, call=kind)


def _expected_cell(call: AlignedCall) -> str:
    kind = call.kind
    if call.expected is None or call.expected_index is None:
        return cell("Tool call", "<div class='ae-muted'>— not expected</div>", "ae-absent", call=kind)
    other = call.actual if kind == "differs" else None
    body = tool_body(call.expected, call.expected_index + 1, call.expected, other)
    css = {"matched": "", "missing": "ae-only"}.get(kind, "ae-mismatch")
    return cell(_EXPECTED_LABELS[kind], body, css, call=kind)


def trajectory_rows(expected: Sequence[Tool], actual: Sequence[Tool], metrics: Sequence[EvalMetricResult]) -> str:
    """The grid cells of a turn's tool calls, expected left and actual right, as its metric paired them.

    Returns:
        A note saying how the calls are paired, then two cells per row; ``""`` without calls.
    """
    if not expected and not actual:
        return ""
    aligned = align_turn(actual, expected, metrics)
    note = f'<div class="ae-muted ae-align" style="grid-column:1/-1">{html.escape(aligned.note)}</div>'
    return note + "".join(_expected_cell(call) + call_cell(call) for call in aligned.alignment.calls)
