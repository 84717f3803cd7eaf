"""The live board of a run started with ``Evaluator.start``: widget state as results arrive, clicks, throttling."""

from __future__ import annotations

import asyncio
import html
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import agenteval as ae
from agenteval._presentation import presenter
from agenteval.errors import ProgressWarning
from agenteval.evaluation.run import EvaluationRun
from agenteval.notebook import _env
from agenteval.notebook._live_board import COLOURS, LiveBoard
from agenteval.notebook._score_histogram import ScoreHistogram
from tests.notebook._kernel import cell_messages, cell_outputs
from tests.notebook.test_html_export import find_chromium

APP = "board-app"
METRICS = [ae.EvalMetric.final_response()]
GREEN, RED, GREY = COLOURS["passed"], COLOURS["failed"], COLOURS["pending"]
EMBED_JS = Path(sys.prefix) / "share" / "agenteval" / "html-manager" / "embed.js"
"""The ipywidgets HTML manager, fetched by scripts/widget_embed.sh (the browser test needs it, offline)."""


def words(count: int) -> ae.EvalSet:
    return ae.EvalSet.of(
        "words", [ae.EvalCase.of(f"c{index}", f"w{index}", expect=f"W{index}") for index in range(count)]
    )


def agent(delay: float = 0.0, wrong: tuple[str, ...] = ()) -> object:
    """Upper-cases the message (the expected reply) after ``delay``; answers ``nope`` to the messages in ``wrong``."""

    async def answer(message: str) -> str:
        await asyncio.sleep(delay)
        return "nope" if message in wrong else message.upper()

    return answer


def start(answer: object, cases: int, **options: Any) -> EvaluationRun:
    parallelism = options.pop("parallelism", 2)
    evaluator = ae.Evaluator(APP, answer, progress=False, parallelism=parallelism)  # type: ignore[arg-type]
    return evaluator.start(words(cases), metrics=METRICS, **options)


async def until(condition: Any, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


def status_text(markup: str) -> str:
    """The status line's text, after its progress bar."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def colour(board: LiveBoard, position: int) -> str:
    """The colour the board's style sheet gives the square at ``position`` of the grid."""
    rules: list[tuple[str, str]] = re.findall(
        r"toggle-button:is\(([^)]*\)[^{]*)\)\{background:(#\w+)\}", board.colours.value
    )
    for squares, found in rules:
        if f":nth-child({position + 1})" in squares.split(","):
            return found
    return GREY


def colours(board: LiveBoard) -> list[str]:
    return [colour(board, position) for position in range(len(board.grid.options))]


def click(board: LiveBoard, eval_id: str, run_id: int) -> None:
    """What the frontend does when the square is clicked: it selects that option."""
    position = board.cell(eval_id, run_id)
    assert position is not None, f"{eval_id} run {run_id} is not on the page"
    board.grid.index = position


@pytest.mark.asyncio
async def test_the_grid_fills_in_as_cases_finish_and_shows_failing_cases_first_at_the_end() -> None:
    run = start(agent(0.02, wrong=("w3", "w4")), 6, num_runs=2, parallelism=1)
    board = LiveBoard(run, interval=0.01)

    assert board.order == [] and board.grid.options == ()
    assert status_text(board.status.value).startswith("running · 0/12 case runs: 0 passed, 0 failed")
    await until(lambda: run.finished >= 3)
    await until(lambda: len(board.order) >= 3)  # the next redraw, at most `interval` later
    seen = list(dict.fromkeys(result.eval_id for result in run.finished_results))
    assert board.order == seen[: len(board.order)]  # cases in the order they first finished
    finished = {(result.eval_id, result.run_id) for result in run.finished_results[: sum(board.counts.values())]}
    first = board.order[0]
    assert board.cell(first, 1) == 0 and board.cell(first, 2) == 1  # a case's runs side by side
    assert colour(board, 0) in (GREEN, RED) and board.cell_status(0) in ("passed", "failed")
    if (first, 2) not in finished:
        assert colour(board, 1) == GREY and board.cell_status(1) == "pending"
        assert board.grid.tooltips[1] == f"{first} · run 2: not finished"
    assert not run.done

    await run

    assert board.order == ["c3", "c4", "c0", "c1", "c2", "c5"]  # failing first, then in eval-set order
    assert colours(board) == [RED] * 4 + [GREEN] * 8  # each case's two runs side by side
    assert [board.cell_status(position) for position in range(12)] == ["failed"] * 4 + ["passed"] * 8
    assert board.grid.options[3] == ("2:c4", ("c4", 2))
    assert board.grid.tooltips[1] == "c3 · run 2: failed, score 0.00"
    assert board.grid.tooltips[4] == "c0 · run 1: passed, score 1.00"
    assert board.grid.index is None  # nothing clicked yet
    assert board.counts == {"passed": 8, "failed": 4, "not_evaluated": 0}
    assert status_text(board.status.value).startswith("done · 12/12 case runs: 8 passed, 4 failed · ")
    assert "ETA" not in board.status.value
    assert f'<div style="width:100.0%;height:100%;background:{RED}">' in board.status.value  # the progress bar
    assert board.page_label.value == "cases 1–6 of 6"


@pytest.mark.asyncio
async def test_the_histograms_count_every_metric_score_by_verdict() -> None:
    run = start(agent(wrong=("w1",)), 5, num_runs=2)
    board = LiveBoard(run)
    await run

    histogram = board.histograms["final_response_avg_score"]
    assert histogram.passed == [0] * 9 + [8] and histogram.failed == [2] + [0] * 9
    assert (histogram.low, histogram.high, histogram.threshold, histogram.total) == (0.0, 1.0, 1.0, 10)
    assert "final_response_avg_score" in board.histogram.value
    assert "10 scores, threshold 1" in board.histogram.value
    assert 'title="0.90–1.00: 8 passed, 0 failed"' in board.histogram.value


def test_a_histogram_bins_scores_and_widens_to_hold_one_out_of_range() -> None:
    histogram = ScoreHistogram("m", threshold=0.5, bins=4)
    for score, passed in [(0.0, False), (0.3, False), (0.5, True), (0.99, True), (1.0, True), (float("nan"), True)]:
        histogram.add(score, passed)

    assert (histogram.failed, histogram.passed, histogram.total) == ([1, 1, 0, 0], [0, 0, 1, 2], 5)

    histogram.add(3.0, True)

    assert (histogram.low, histogram.high) == (0.0, 3.0)
    assert histogram.edges() == [0.0, 0.75, 1.5, 2.25, 3.0]
    assert (histogram.failed, histogram.passed) == ([2, 0, 0, 0], [1, 2, 0, 1])
    assert 'title="threshold 0.5"' in histogram.to_html()


@pytest.mark.asyncio
async def test_a_burst_of_finished_cases_is_drawn_a_few_times_then_once_more_at_the_end() -> None:
    run = start(agent(), 300, parallelism=20)
    calls: list[bool] = []
    run.listen(lambda run: calls.append(run.done))
    board = LiveBoard(run, interval=0.2)
    redraws: list[str] = []
    board.status.observe(lambda change: redraws.append(change["new"]), "value")

    await run

    # Every redraw rewrites the elapsed time, so each shows as a change of the status line.
    assert len(calls) >= 301 and calls[-1]
    assert 1 <= len(redraws) <= run.elapsed / 0.2 + 2
    assert status_text(redraws[-1]).startswith("done · 300/300 case runs: 300 passed, 0 failed")
    assert f'<div style="width:100.0%;height:100%;background:{GREEN}">' in redraws[-1]
    assert board.counts["passed"] == 300


@pytest.mark.asyncio
async def test_clicking_a_cell_while_the_run_goes_shows_that_case_from_its_result() -> None:
    run = start(agent(0.05, wrong=("w0",)), 40, parallelism=1)
    board = LiveBoard(run, interval=0.01)
    try:
        await until(lambda: board.cell("c0", 1) is not None)
        click(board, "c0", 1)

        assert not run.done
        assert board.selected == ("c0", 1)
        view = board.case_view.value
        assert 'Case <span class="ae-id">c0</span>' in view
        assert "nope" in view and "W0" in view and 'class="ae-badge ae-failed"' in view
    finally:
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
    assert re.match(r"cancelled · \d+/40 case runs: \d+ passed, 1 failed · ", status_text(board.status.value))


@pytest.mark.asyncio
async def test_clicking_a_cell_of_a_finished_run_shows_the_report_s_case_view() -> None:
    run = start(agent(wrong=("w2",)), 4, num_runs=2)
    board = LiveBoard(run)
    report = await run

    click(board, "c2", 2)

    assert board.case_view.value == report.show_case("c2", 2).html
    assert "showing run 2" in board.case_view.value


@pytest.mark.asyncio
async def test_the_grid_pages_through_many_cases() -> None:
    run = start(agent(), 7)
    report = await run
    board = LiveBoard(run, page_size=3)  # made after the run ended: it shows the end at once

    assert board.page_label.value == "cases 1–3 of 7" and board.previous.disabled and not board.next.disabled
    assert len(board.grid.options) == 3 and board.cell("c3", 1) is None
    click(board, "c1", 1)
    board.next.click()
    board.next.click()
    assert board.page_label.value == "cases 7–7 of 7" and board.next.disabled
    assert board.grid.options == (("1:c6", ("c6", 1)),) and board.grid.index is None
    assert board.case_view.value == report.show_case("c1", 1).html  # turning the page is not a click
    board.previous.click()
    board.previous.click()
    assert board.grid.index == board.cell("c1", 1) == 1  # the square last clicked is still marked
    board.next.click()
    board.next.click()
    click(board, "c6", 1)
    assert board.case_view.value == report.show_case("c6", 1).html


@pytest.mark.asyncio
async def test_a_board_that_breaks_switches_itself_off_and_the_run_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    run = start(agent(0.01), 5)
    board = LiveBoard(run, interval=0.0)

    def broken() -> None:
        raise RuntimeError("no frontend")

    monkeypatch.setattr(board, "_draw_grid", broken)
    with pytest.warns(ProgressWarning, match="live board switched off: RuntimeError: no frontend"):
        report = await run

    assert report.passed and len(report.cases) == 5


@pytest.mark.asyncio
async def test_displaying_a_run_outside_a_notebook_prints_where_it_stands(capsys: pytest.CaptureFixture[str]) -> None:
    run = start(agent(wrong=("w0",)), 3)
    await run

    run._ipython_display_()

    line = capsys.readouterr().out
    assert line.startswith(f"{APP} / words: done · 3/3 case runs: 2 passed, 1 failed · ")
    assert line.count("\n") == 1


@pytest.mark.asyncio
async def test_displaying_a_run_in_a_notebook_shows_a_live_board(monkeypatch: pytest.MonkeyPatch) -> None:
    import IPython.display

    shown: list[Any] = []
    monkeypatch.setattr(_env, "running_in_notebook", lambda: True)
    monkeypatch.setattr(IPython.display, "display", shown.append)
    run = start(agent(0.01), 4)

    presenter().show_run(run)
    await run

    [board] = shown
    assert isinstance(board, LiveBoard) and board.run is run
    assert "application/vnd.jupyter.widget-view+json" in board._repr_mimebundle_()
    assert board.counts["passed"] == 4


@pytest.mark.asyncio
async def test_the_exported_board_renders_in_headless_chromium(tmp_path: Path) -> None:
    browser = find_chromium()
    if browser is None:
        pytest.skip("Chromium is not installed")
    if not EMBED_JS.is_file():
        pytest.skip(f"the ipywidgets HTML manager is not at {EMBED_JS}: scripts/widget_embed.sh fetches it")
    from ipywidgets.embed import embed_minimal_html
    from matplotlib.image import imread

    run = start(agent(wrong=("w1", "w2")), 30, num_runs=2)
    board = LiveBoard(run)
    await run
    click(board, "c1", 1)
    page, png = tmp_path / "board.html", tmp_path / "board.png"
    embed_minimal_html(
        page, views=[board.container], title="board", requirejs=False, embed_url=EMBED_JS.as_uri(), cors=False
    )

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
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--screenshot={png}",
        "--window-size=1000,1000",
        "--virtual-time-budget=3000",  # lets the widget manager render the views before the screenshot
        page.as_uri(),
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, stderr = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail("Chromium did not render the board within 30 s")
    assert png.is_file(), f"Chromium wrote no screenshot (exit {process.returncode}): {stderr.decode()[-2000:]}"

    pixels = imread(str(png))[..., :3]
    assert pixels.std() > 0.1  # not a blank page
    red, green, blue = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    failed = (abs(red - 0xCF / 255) < 0.05) & (abs(green - 0x22 / 255) < 0.05) & (abs(blue - 0x2E / 255) < 0.05)
    passed = (abs(red - 0x1A / 255) < 0.05) & (abs(green - 0x7F / 255) < 0.05) & (abs(blue - 0x37 / 255) < 0.05)
    # The grid's squares are 18 px: 4 failed and 56 passed case runs (the histogram's bars add to both).
    assert failed.sum() > 4 * 18 * 18
    assert passed.sum() > 40 * 18 * 18
    ink = pixels.min(axis=2) < 0.5
    assert ink[500:].mean() > 0.005  # the case view, below the board, has text


KERNEL_CELL = """
import asyncio
import agenteval as ae

async def agent(message):
    await asyncio.sleep(0.01)
    return message.upper()

cases = ae.EvalSet.of("words", [ae.EvalCase.of(f"c{i}", f"w{i}", expect=f"W{i}") for i in range(5)])
run = ae.Evaluator("kernel-app", agent, progress=False).start(cases, metrics=[ae.EvalMetric.final_response()])
run
"""


def test_a_run_displayed_in_a_real_kernel_shows_the_board_and_goes_on_in_the_background(kernel: Any) -> None:
    (board,) = cell_outputs(kernel, KERNEL_CELL)
    assert "application/vnd.jupyter.widget-view+json" in board, f"the run showed as {sorted(board)} only"

    (done,) = cell_outputs(kernel, "report = await run\nrun.done, report.passed, len(run.cases)")

    assert done["text/plain"] == "(True, True, 5)"


@pytest.mark.asyncio
async def test_beside_the_widget_the_board_is_plain_html_of_where_the_run_stands() -> None:
    run = start(agent(wrong=("w1",)), 3, num_runs=2)
    board = LiveBoard(run)
    await run

    bundle = board._repr_mimebundle_()

    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"].startswith(f"{APP} / words: done · 6/6 case runs: 4 passed, 2 failed · ")
    static = bundle["text/html"]
    assert "done · 6/6 case runs: 4 passed, 2 failed · " in status_text(static)
    squares = re.findall(r'<span title="([^"]*)" style="[^"]*background:(#\w+)"', static)
    # Failing case first, as the widget shows them once the run ended.
    assert [tip.split(":")[0] for tip, _ in squares] == [
        f"{case} · run {r}" for case in ("c1", "c0", "c2") for r in (1, 2)
    ]
    assert [found for _, found in squares] == [RED, RED, GREEN, GREEN, GREEN, GREEN]
    assert "final_response_avg_score" in static  # the histogram


def outputs_of(client: Any, code: str) -> list[tuple[str, dict[str, Any], str]]:
    """Execute ``code``: each display message it sent, as (kind, data, display id)."""
    return [
        (kind, content["data"], content.get("transient", {}).get("display_id", ""))
        for kind, content in cell_messages(client, code)
        if kind in ("display_data", "update_display_data")
    ]


def test_in_a_kernel_the_run_s_end_writes_the_final_board_into_the_output_a_saved_notebook_keeps(kernel: Any) -> None:
    cell = KERNEL_CELL.replace("run\n", "display(run)\nreport = await run\n")

    (shown, first, display_id), (updated, last, same_id) = outputs_of(kernel, cell)

    assert (shown, updated) == ("display_data", "update_display_data")
    assert display_id and same_id == display_id
    assert "running · " in status_text(first["text/html"])
    assert "application/vnd.jupyter.widget-view+json" in last
    assert "done · 5/5 case runs: 5 passed, 0 failed · " in status_text(last["text/html"])
    assert last["text/plain"].startswith("kernel-app / words: done · 5/5 case runs: 5 passed, 0 failed")


@pytest.mark.asyncio
async def test_a_square_s_tooltip_gives_the_agent_s_error_without_the_prefix_that_repeats_its_case() -> None:
    async def failing(message: str) -> str:
        raise ValueError("no model")

    run = start(failing, 1)
    board = LiveBoard(run)
    await run

    assert board.grid.tooltips[0].startswith("c0 · run 1: failed, score 0.00 · ValueError: no model (raised at ")
