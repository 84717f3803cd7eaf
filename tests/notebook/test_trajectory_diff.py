"""The trajectory diff: tool calls lined up as the metric paired them, in the case view, the export and a comparison."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

import agenteval as ae
from agenteval.notebook.html_export import export_html
from tests.notebook.test_html_export import find_chromium, screenshot

HOSTILE = '<img src=x onerror="alert(1)">'

EXPECTED = [
    ae.Tool(name="search", arguments={"q": "Paris"}),
    ae.Tool(name="book", arguments={"hotel": "Ritz", "nights": 2}),
    ae.Tool(name="pay", arguments={"amount": 100, "currency": "EUR"}),
    ae.Tool(name="mail", arguments={"to": "me"}),
]
MADE = [
    ("book", {"hotel": "Ritz", "nights": 2}),
    ("search", {"q": "Paris"}),
    ("pay", {"amount": 120, "currency": "EUR"}),
    ("refund", {"amount": 5}),
    ("log", {"line": HOSTILE}),
]
"""Booked before searching, paid too much, refunded instead of mailing, and logged: one mistake of each kind."""


@dataclass
class Cell:
    kind: str
    css: list[str]
    label: str = ""


@dataclass
class Markup(HTMLParser):
    """The cells marked with ``data-call`` (in document order), the JSON-diff rows and every tag."""

    cells: list[Cell] = field(default_factory=list)
    diffs: list[dict[str, str]] = field(default_factory=list)
    tags: set[str] = field(default_factory=set)
    _label: Cell | None = None
    _diff: dict[str, str] | None = None
    _cell_texts: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__()

    @classmethod
    def of(cls, markup: str) -> Markup:
        parsed = cls()
        parsed.feed(markup)
        parsed.close()
        return parsed

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        self.tags.add(tag)
        if "data-call" in found:
            self.cells.append(Cell(found["data-call"], found.get("class", "").split()))
        elif tag == "span" and found.get("class") == "ae-label" and self.cells and not self.cells[-1].label:
            self._label = self.cells[-1]
        elif tag == "tr" and "data-diff" in found:
            self._diff = {"kind": found["data-diff"], "path": found["data-path"]}
            self._cell_texts = []
        elif tag == "td" and self._diff is not None:
            self._cell_texts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "span":
            self._label = None
        elif tag == "tr" and self._diff is not None:
            self._diff["cells"] = " | ".join(text.strip() for text in self._cell_texts)
            self.diffs.append(self._diff)
            self._diff = None

    def handle_data(self, data: str) -> None:
        if self._label is not None:
            self._label.label += data
        elif self._diff is not None and self._cell_texts:
            self._cell_texts[-1] += data


def mixed_agent(message: str, turn: ae.Turn) -> str:
    for name, arguments in MADE:
        turn.record_tool(name, arguments)
    return "done"


def evaluate(agent: object, eval_set: ae.EvalSet, metric: ae.EvalMetric) -> ae.EvaluationReport:
    return ae.Evaluator("app", agent, progress=False).evaluate(eval_set, metrics=[metric])  # type: ignore[arg-type]


TRIP = ae.EvalSet.of("trips", [ae.EvalCase.of("trip", "Plan my trip.", tools=EXPECTED)])
IN_ORDER = ae.EvalMetric.tool_trajectory(order_sensitive=True)


@pytest.fixture(scope="module")
def mixed() -> ae.EvaluationReport:
    return evaluate(mixed_agent, TRIP, IN_ORDER)


def test_rows_follow_the_calls_made_each_marked_as_the_metric_paired_it(mixed: ae.EvaluationReport) -> None:
    markup = Markup.of(mixed.show_case("trip").html)

    pairs = [(left.kind, right.kind) for left, right in zip(markup.cells[::2], markup.cells[1::2], strict=True)]
    assert pairs == [
        ("reordered", "reordered"),
        ("matched", "matched"),
        ("differs", "differs"),
        ("substituted", "substituted"),
        ("extra", "extra"),
    ]
    labels = [(cell.label, cell.css[1:]) for cell in markup.cells]
    assert labels == [
        ("Tool call (out of order)", ["ae-mismatch"]),
        ("Tool call (out of order)", ["ae-mismatch"]),
        ("Tool call", []),
        ("Tool call", []),
        ("Tool call (differs)", ["ae-mismatch"]),
        ("Tool call (differs)", ["ae-mismatch"]),
        ("Tool call (substituted)", ["ae-mismatch"]),
        ("Tool call (called instead)", ["ae-mismatch"]),
        ("Tool call", ["ae-absent"]),
        ("Tool call (not expected)", ["ae-only"]),
    ]
    # The per-argument diff of the pair with other arguments: one row, the path and both values.
    assert markup.diffs == [{"kind": "value", "path": "$.amount", "cells": "arguments $.amount | 100 | 120"}]


def test_the_note_says_how_the_metric_paired_the_calls(mixed: ae.EvaluationReport) -> None:
    assert "Tool calls as tool_trajectory_avg_score paired them: in order" in str(mixed.show_case("trip"))


def test_a_call_not_made_is_missing_and_an_any_order_metric_keeps_the_expected_order() -> None:
    def agent(message: str, turn: ae.Turn) -> str:
        turn.record_tool("pay", {"amount": 100, "currency": "EUR"})
        turn.record_tool("search", {"q": "Paris"})
        return "done"

    report = evaluate(agent, TRIP, ae.EvalMetric.tool_trajectory())
    markup = Markup.of(report.show_case("trip").html)

    assert [cell.kind for cell in markup.cells[::2]] == ["matched", "missing", "matched", "missing"]
    assert [cell.label for cell in markup.cells[1::2]] == ["Tool call", "Tool call", "Tool call", "Tool call"]
    assert [cell.css[1:] for cell in markup.cells[::2]] == [[], ["ae-only"], [], ["ae-only"]]
    assert "in any order" in str(report.show_case("trip"))


def test_every_id_and_argument_is_escaped() -> None:
    case = ae.EvalCase.of(
        f"case {HOSTILE}", "hi", tools=[ae.Tool(name=HOSTILE, arguments={HOSTILE: 1, "<script>": "</pre>"})]
    )

    def agent(message: str, turn: ae.Turn) -> str:
        turn.record_tool(HOSTILE, {HOSTILE: 2, "<script>": "</table>"})
        return "done"

    report = evaluate(agent, ae.EvalSet.of("s", [case]), ae.EvalMetric.tool_trajectory())
    markup = Markup.of(report.show_case(f"case {HOSTILE}").html)

    assert not markup.tags & {"img", "script"}
    assert [cell.kind for cell in markup.cells] == ["differs", "differs"]
    assert [diff["path"] for diff in markup.diffs] == [f"$[{json.dumps(HOSTILE)}]", '$["<script>"]']
    assert markup.diffs[1]["cells"] == 'arguments $["<script>"] | "</pre>" | "</table>"'


def test_the_export_shows_the_same_aligned_rows(mixed: ae.EvaluationReport, tmp_path: Path) -> None:
    page = export_html(mixed, tmp_path / "report.html").read_text(encoding="utf-8")

    markup = Markup.of(page)
    assert [cell.kind for cell in markup.cells[1::2]] == ["reordered", "matched", "differs", "substituted", "extra"]
    assert markup.diffs == [{"kind": "value", "path": "$.amount", "cells": "arguments $.amount | 100 | 120"}]


def test_a_comparison_shows_what_each_version_made_of_each_expected_call() -> None:
    def baseline_agent(message: str, turn: ae.Turn) -> str:
        turn.record_tool("search", {"q": "Paris"})
        return "done"

    def candidate_agent(message: str, turn: ae.Turn) -> str:
        for name, arguments in [("search", {"q": "Paris"}), ("book", {"hotel": "Ritz", "nights": 3}), ("log", {})]:
            turn.record_tool(name, arguments)
        return "done"

    two = ae.EvalSet.of("trips", [ae.EvalCase.of("trip", "Plan my trip.", tools=EXPECTED[:2])])
    metric = ae.EvalMetric.tool_trajectory()
    comparison = ae.compare(evaluate(baseline_agent, two, metric), evaluate(candidate_agent, two, metric))

    view = comparison.show_case("trip")
    markup = Markup.of(view.html)

    # Per expected call: the baseline's cell, then the candidate's; then the candidate's extra call.
    assert [(cell.kind, cell.label) for cell in markup.cells] == [
        ("matched", "Tool call"),
        ("matched", "Tool call"),
        ("missing", "Tool call (not called)"),
        ("differs", "Tool call (differs)"),
        ("extra", "Tool call (not expected)"),
    ]
    assert markup.diffs == [{"kind": "value", "path": "$.nights", "cells": "arguments $.nights | 2 | 3"}]
    assert '<div class="ae-colhead">Expected</div><div class="ae-colhead">Baseline</div>' in view.html
    text = str(view)
    assert "changed: the baseline's was not called" in text
    assert "changed: the baseline's was no such call" in text
    with pytest.raises(ae.NotFoundError, match="no case 'nope' in either report"):
        comparison.show_case("nope")


def test_the_trajectory_diff_renders_in_headless_chromium(mixed: ae.EvaluationReport, tmp_path: Path) -> None:
    browser = find_chromium()
    if browser is None:
        pytest.skip("Chromium is not installed")
    from matplotlib.image import imread

    page = tmp_path / "case.html"
    page.write_text(
        f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{mixed.show_case("trip").html}</body></html>',
        encoding="utf-8",
    )
    png = tmp_path / "case.png"
    screenshot(browser, page, png, tmp_path / "profile")

    pixels = imread(str(png))[..., :3]
    assert png.stat().st_size > 20_000
    assert pixels.std() > 0.05  # not a blank page
    # The red frames of the marked calls and the highlighted value: strong red in bulk.
    red = (pixels[..., 0] > 0.6) & (pixels[..., 1] < 0.35) & (pixels[..., 2] < 0.4)
    assert red.sum() > 500
