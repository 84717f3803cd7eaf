"""Tests for the self-contained HTML export, including a headless-Chromium rendering of the page."""

from __future__ import annotations

import base64
import html
import json
import os
import re
import shutil
import signal
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from agenteval import (
    EvalCase,
    EvalMetric,
    EvalSet,
    EvaluationReport,
    Evaluator,
    Invocation,
    LocalEvalResultManager,
    LocalEvalSetManager,
    LocalMetricManager,
    Message,
    SessionInput,
    Tool,
    Turn,
)
from agenteval.evalresult.local import load_result_file
from agenteval.evalresult.models import EvalSetResult
from agenteval.examples.math import APP_NAME, DATA_DIR, EVAL_SET_ID, calculator_agent
from agenteval.metric.criterion import Criterion, FinalResponseCriterion, TextCriterion
from agenteval.notebook.html_export import export_html, report_page
from tests.notebook.sample_reports import NUM_CASES, NUM_RUNS, big_report

SCREENSHOT_TIMEOUT = 20.0
"""Seconds Chromium may take; it normally renders the page in one or two."""


def hostile_agent(message: str, turn: Turn) -> str:
    if "power" in message:
        return '<script>alert("owned")</script><img src="https://example.com/x.png">'
    return calculator_agent(message, turn)


class Tags(HTMLParser):
    """Every start tag of a page with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, attrs))


@pytest.fixture(scope="module")
def report() -> EvaluationReport:
    ev = Evaluator(
        APP_NAME,
        hostile_agent,
        eval_set_manager=LocalEvalSetManager(DATA_DIR),
        metric_manager=LocalMetricManager(DATA_DIR),
        num_runs=3,
    )
    return ev.evaluate(EVAL_SET_ID)


@pytest.fixture(scope="module")
def exported(report: EvaluationReport, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_html(report, tmp_path_factory.mktemp("export") / "nested" / "report.html")


def test_export_writes_one_html_file(exported: Path) -> None:
    assert exported.name == "report.html"
    assert exported.is_file()
    page = exported.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert page.rstrip().endswith("</html>")
    assert "<title>agenteval report: math-eval-app / math-basic</title>" in page


def test_export_references_nothing_outside_itself(exported: Path) -> None:
    page = exported.read_text(encoding="utf-8")

    tags = Tags()
    tags.feed(page)
    tags.close()

    assert {"html", "style", "img", "a", "details", "table"} <= {tag for tag, _ in tags.found}
    assert not {"script", "link", "iframe", "object", "embed", "base"} & {tag for tag, _ in tags.found}
    ids = {value for _, attrs in tags.found for name, value in attrs if name == "id"}
    for tag, attrs in tags.found:
        for name, value in attrs:
            assert not re.match(r"\s*(?:[a-z]+:)?//", value or "", re.IGNORECASE), (tag, name, value)
            if name == "src":
                assert (value or "").startswith("data:image/png;base64,")
            if name == "href":
                assert (value or "").startswith("#") and (value or "")[1:] in ids
    assert "@import" not in page and "url(" not in page
    # The agent's hostile reply is there, as text.
    assert "&lt;script&gt;alert(&quot;owned&quot;)&lt;/script&gt;" in page
    assert "&lt;img src=&quot;https://example.com/x.png&quot;&gt;" in page


def test_export_embeds_the_plots_as_png(exported: Path) -> None:
    images = re.findall(
        r'<img [^>]*src="data:image/png;base64,([A-Za-z0-9+/=]+)"', exported.read_text(encoding="utf-8")
    )

    assert len(images) == 1
    png = base64.b64decode(images[0], validate=True)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(png) > 20_000


def test_export_holds_summary_cases_provenance_and_tables(report: EvaluationReport, exported: Path) -> None:
    page = exported.read_text(encoding="utf-8")
    provenance = report.provenance
    assert provenance is not None

    assert provenance.eval_set_hash in page
    assert provenance.metrics_hash in page
    assert provenance.agenteval_version in page
    assert provenance.agent_code_hash and provenance.agent_code_hash in page
    assert f"pandas {provenance.library_versions['pandas']}" in page
    assert provenance.git_revision in page
    assert report.result.eval_set_result_id in page
    assert f'<td class="ae-id">{html.escape(provenance.agent)}</td>' in page and "hostile_agent" in provenance.agent
    assert "Metric configuration" in page
    assert page.count("<style>") == 1
    for case in ("calc_add", "calc_multiply", "calc_divide_by_zero", "calc_follow_up", "calc_power"):
        assert f'<details class="ae-case" id="case-{case}"' in page
        assert f'<a href="#case-{case}">{case}</a>' in page
    assert '<details class="ae-case" id="case-calc_power" open>' in page
    assert '<details class="ae-case" id="case-calc_add">' in page
    assert page.index('id="case-calc_power"') < page.index('id="case-calc_add"')
    for table in ("report.cases", "report.metrics", "report.invocations"):
        assert f"<code>{table}</code>" in page
    assert "report.rubric_scores" not in page  # no LLM judge, no rubric table
    assert "<th>error_message</th>" in page and "<th>expected_response</th>" in page
    for run in (1, 2, 3):
        assert f"Run {run}</th>" in page


def test_report_page_is_what_export_writes(report: EvaluationReport, tmp_path: Path) -> None:
    path = export_html(report, str(tmp_path / "r.html"), title="Nightly <run>")

    assert path == tmp_path / "r.html"
    page = path.read_text(encoding="utf-8")
    assert "<title>Nightly &lt;run&gt;</title>" in page
    expected = report_page(report, title="Nightly <run>")

    # Only the generation time and the plot bytes may differ between two renderings.
    def strip(text: str) -> str:
        return re.sub(r"base64,[^\"]+|on \d{4}-\d\d-\d\d \d\d:\d\d UTC", "", text).strip()

    assert strip(page) == strip(expected)


def test_the_page_says_where_the_other_runs_are_not_how_to_pass_run_id(
    report: EvaluationReport, exported: Path
) -> None:
    page = exported.read_text(encoding="utf-8")

    assert "run_id=" not in page  # a file has no kernel to pass it to
    power = page[page.index('id="case-calc_power"') : page.index('id="case-calc_add"')]
    assert "showing run 1 (the first failing run); the Data tables below hold every run" in power
    assert 'Case <span class="ae-id">calc_power</span></span> <span>overall: ' in power
    assert "pass <code>run_id=</code> for another" in report.show_case("calc_power").html


def find_chromium() -> str | None:
    if Path("/usr/bin/chromium").is_file():
        return "/usr/bin/chromium"
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    return None


def screenshot(browser: str, page: Path, png: Path, profile: Path) -> None:
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--screenshot={png}",
        "--window-size=1280,2000",
        page.as_uri(),
    ]
    # Its own session, so a hung browser is killed with every helper process it started.
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, stderr = process.communicate(timeout=SCREENSHOT_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"Chromium did not render the page within {SCREENSHOT_TIMEOUT:.0f} s")
    assert png.is_file(), f"Chromium wrote no screenshot (exit {process.returncode}): {stderr.decode()[-2000:]}"


def test_exported_page_renders_in_headless_chromium(exported: Path, tmp_path: Path) -> None:
    browser = find_chromium()
    if browser is None:
        pytest.skip("Chromium is not installed")
    from matplotlib.image import imread

    png = tmp_path / "page.png"
    screenshot(browser, exported, png, tmp_path / "profile")

    assert png.stat().st_size > 50_000
    pixels = imread(str(png))[..., :3]
    assert pixels.shape[:2] == (2000, 1280)
    assert pixels.std() > 0.1  # not a blank page
    ink = pixels.min(axis=2) < 0.85
    # The summary (header, metric and case tables) fills the top of the page with text and lines.
    assert ink[:700].mean() > 0.02
    assert ink[:700, :640].mean() > 0.02
    # Saturated colour in bulk comes from the embedded plot (the heat map and the bars), not from
    # the few small status badges of the summary.
    colour = (pixels.max(axis=2) - pixels.min(axis=2)) > 0.3
    assert colour[:700].sum() < 30_000
    assert colour.sum() > 100_000
    plot_rows = colour.sum(axis=1) > 200
    assert plot_rows[700:].sum() > 200


def test_an_empty_report_exports(tmp_path: Path) -> None:
    report = EvaluationReport.from_result(EvalSetResult(eval_set_id="empty"), app_name=APP_NAME)

    page = export_html(report, tmp_path / "empty.html").read_text(encoding="utf-8")
    assert "No cases." in page
    assert "data:image/png;base64," in page


def dollar_report() -> EvaluationReport:
    """A report whose case id, metric name, app and eval set hold pairs of ``$`` (mathtext to matplotlib)."""
    conversation = [Invocation(user_content=Message.user("hi"), final_response=Message.assistant("ok"))]
    case = EvalCase(eval_id="price_$5_vs_$10", conversation=conversation, session_input=SessionInput(user_id="u"))
    metric = EvalMetric(
        metric_name="cost_$x$",
        evaluator_name="final_response_avg_score",
        threshold=1.0,
        criterion=Criterion(final_response=FinalResponseCriterion(text=TextCriterion())),
    )
    return Evaluator("app_$1_$2", lambda message: "ok").evaluate(
        EvalSet(eval_set_id="set_$a$", eval_cases=[case]), metrics=[metric]
    )


def test_dollars_in_ids_still_give_the_plots(tmp_path: Path) -> None:
    page = export_html(dollar_report(), tmp_path / "dollars.html").read_text(encoding="utf-8")

    assert "data:image/png;base64," in page
    assert "could not be drawn" not in page
    assert "price_$5_vs_$10" in page


def test_a_plot_that_fails_leaves_a_note_and_the_rest_of_the_page(
    report: EvaluationReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(report: EvaluationReport, *, dpi: int) -> None:
        raise ValueError("no room for the legend")

    monkeypatch.setattr("agenteval.notebook.plotting.report_png", broken)

    page = export_html(report, tmp_path / "report.html").read_text(encoding="utf-8")

    assert '<p class="ae-error">The plots could not be drawn: ValueError: no room for the legend</p>' in page
    assert "data:image/png;base64," not in page
    assert "<code>report.metrics</code>" in page and 'id="provenance"' in page


@pytest.fixture(scope="module")
def big_export(tmp_path_factory: pytest.TempPathFactory) -> tuple[EvaluationReport, Path]:
    report = big_report()
    return report, export_html(report, tmp_path_factory.mktemp("big") / "big.html")


def test_the_raw_tables_are_folded_saying_how_many_rows_they_hold(
    big_export: tuple[EvaluationReport, Path],
) -> None:
    report, path = big_export
    page = path.read_text(encoding="utf-8")

    folded = re.findall(
        r'<details class="ae-fold"( open)?><summary><code>(report\.\w+)</code> '
        r'<span class="ae-muted">\((\d+) rows: [^<]*\)</span></summary><table class=\'ae-table ae-data\'>',
        page,
    )
    assert [name for _, name, _ in folded] == ["report.cases", "report.metrics", "report.invocations"]
    assert all(not opened for opened, _, _ in folded)
    rows = {name: int(count) for _, name, count in folded}
    assert rows["report.metrics"] == len(report.metrics) == 162
    assert rows["report.cases"] == len(report.cases) == NUM_CASES * NUM_RUNS


def test_long_cells_of_the_raw_tables_are_folded(big_export: tuple[EvaluationReport, Path]) -> None:
    report, path = big_export
    page = path.read_text(encoding="utf-8")
    tables = page[page.index('<section id="tables">') :]

    reason = next(reason for reason in report.metrics["reason"] if len(reason) > 300)
    assert f'<details class="ae-clip"><summary><span class="ae-peek">{html.escape(reason[:120])}…' in tables
    assert f"</span></summary>{html.escape(reason)}</details>" in tables


def page_heights(browser: str, page: Path, profile: Path) -> dict[str, int]:
    """The page's height in px (``body``) and each section's, as laid out by headless Chromium at 1280 px wide.

    The page runs no script, so a copy with one that records the heights once laid out is loaded.
    """
    probe = (
        "<script>addEventListener('load', () => {document.body.dataset.heights = JSON.stringify(Object.fromEntries("
        "[['body', document.body.scrollHeight], ...[...document.querySelectorAll('section')].map("
        "s => [s.id, s.offsetHeight])]))})</script>"
    )
    copy = page.with_name(f"probe-{page.name}")
    copy.write_text(page.read_text(encoding="utf-8").replace("</body>", probe + "</body>"), encoding="utf-8")
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        "--window-size=1280,2000",
        "--virtual-time-budget=5000",
        "--dump-dom",
        copy.as_uri(),
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        dom, stderr = process.communicate(timeout=SCREENSHOT_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"Chromium did not lay the page out within {SCREENSHOT_TIMEOUT:.0f} s")
    found = re.search(rb'data-heights="([^"]+)"', dom)
    assert found, f"Chromium reported no heights (exit {process.returncode}): {stderr.decode()[-2000:]}"
    heights: dict[str, int] = json.loads(html.unescape(found.group(1).decode()))
    return heights


def test_folding_keeps_a_big_report_short_in_headless_chromium(
    big_export: tuple[EvaluationReport, Path], tmp_path: Path
) -> None:
    browser = find_chromium()
    if browser is None:
        pytest.skip("Chromium is not installed")
    _, path = big_export
    unfolded = tmp_path / "unfolded.html"
    unfolded.write_text(re.sub(r"<details ", "<details open ", path.read_text(encoding="utf-8")), encoding="utf-8")

    folded = page_heights(browser, path, tmp_path / "profile")
    everything = page_heights(browser, unfolded, tmp_path / "profile")

    assert folded["tables"] < 300  # three summary lines
    assert everything["tables"] > 5_000
    assert folded["body"] < everything["body"] / 2
    assert folded["plots"] == everything["plots"] > 500  # the plots stay open


def test_a_huge_reply_is_clipped_in_the_page_and_kept_whole_in_the_result(tmp_path: Path) -> None:
    reply = "The start of the reply. " + "x" * 5_000_000
    metrics = [EvalMetric.final_response("contains", name=f"contains_{index}") for index in range(20)]
    results = LocalEvalResultManager(tmp_path / "results")
    evaluator = Evaluator("app", lambda message: reply, result_manager=results, progress=False)
    report = evaluator.evaluate(EvalSet.of("set", [EvalCase.of("c1", "hi", expect="x")]), metrics=metrics)

    page = export_html(report, tmp_path / "report.html").read_text(encoding="utf-8")

    assert len(page.encode()) < 1_000_000
    # In the case view and in each metric's row of the raw tables, clipped: not 20 times 5 MB, nor 20 times 20 kB.
    assert sum(len(run) for run in re.findall("x{100,}", page)) < 100_000
    assert "The start of the reply. xxxx" in page
    assert "… [5.0 MB more; full text in the saved result]" in page
    saved = load_result_file(tmp_path / "results" / "app" / f"{report.result.eval_set_result_id}.evalset_result.json")
    [turn] = saved.eval_case_results[0].eval_metric_result_per_invocation
    assert turn.actual_invocation is not None and turn.actual_invocation.final_response is not None
    assert turn.actual_invocation.final_response.content == reply


def test_a_huge_tool_argument_is_clipped_in_the_case_view(tmp_path: Path) -> None:
    arguments = {f"key_{index}": "value" for index in range(200_000)}  # many short lines

    def agent(message: str, turn: Turn) -> str:
        turn.record_tool("search", arguments)
        return "done"

    expected = Invocation.of("hi", "done", tools=[Tool(name="search", arguments={"key_0": "other"})])
    eval_set = EvalSet.of("set", [EvalCase.of("c1", expected)])
    report = Evaluator("app", agent, progress=False).evaluate(eval_set, metrics=[EvalMetric.tool_trajectory()])

    page = report_page(report)

    assert len(page.encode()) < 1_000_000
    assert "key_199999" not in page
    assert "more; full text in the saved result]" in page
