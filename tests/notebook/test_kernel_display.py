"""In a real Jupyter kernel, a report, a case view and a plot display as HTML and images."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from typing import Any

import pytest
from jupyter_client.manager import KernelManager

SETUP = """
import agenteval as ae
from agenteval.examples.math import APP_NAME, DATA_DIR, EVAL_SET_ID, calculator_agent
report = ae.Evaluator(
    APP_NAME, calculator_agent,
    eval_set_manager=ae.LocalEvalSetManager(DATA_DIR),
    metric_manager=ae.LocalMetricManager(DATA_DIR),
    progress=False,
).evaluate(EVAL_SET_ID)
"""


@pytest.fixture(scope="module")
def kernel() -> Iterator[Any]:
    manager = KernelManager()
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    try:
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _run(client: Any, code: str) -> list[dict[str, Any]]:
    """Execute ``code`` and return the display data and results it produced."""
    msg_id = client.execute(code)
    outputs: list[dict[str, Any]] = []
    while True:
        try:
            message = client.get_iopub_msg(timeout=60)
        except queue.Empty:  # pragma: no cover - a hung kernel
            pytest.fail("the kernel did not finish executing the cell")
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        kind = message["msg_type"]
        if kind == "error":
            pytest.fail("\n".join(message["content"]["traceback"]))
        if kind in ("display_data", "execute_result"):
            outputs.append(message["content"]["data"])
        if kind == "status" and message["content"]["execution_state"] == "idle":
            return outputs


def test_report_case_view_and_plot_render_in_a_kernel(kernel: Any) -> None:
    assert _run(kernel, SETUP) == []
    (summary,) = _run(kernel, "report")
    assert "text/html" in summary and "calc_power" in summary["text/html"]
    (case,) = _run(kernel, 'report.show_case("calc_power")')
    assert "text/html" in case and "Expected" in case["text/html"]
    (figure,) = _run(kernel, "report.plot()")
    assert "image/png" in figure, f"the figure showed as {sorted(figure)} only"


CELLS = {
    "report.plot()": 1,
    "fig = report.plot()\nx = 1": 1,
    "fig = report.plot()\nfig": 1,
    "fig = report.plot()\ndisplay(fig)\nx = 1": 1,
    "fig": 1,  # asked for again in a later cell
    "report.plot()\nreport.plot_flakiness()\nx = 1": 2,
    "figures = [report.plot(), report.plot_failures()]": 2,
    "x = 2": 0,  # nothing left over from the cells before
    "import tempfile, pathlib\npage = report.to_html(pathlib.Path(tempfile.mkdtemp()) / 'r.html')": 0,
}


def _images(client: Any, code: str) -> int:
    return sum("image/png" in output for output in _run(client, code))


@pytest.mark.parametrize("pyplot", [False, True], ids=["without-pyplot", "with-pyplot-inline"])
def test_a_figure_shows_once_at_the_end_of_its_cell_or_as_its_value(kernel: Any, pyplot: bool) -> None:
    _run(kernel, SETUP)
    if pyplot:  # matplotlib's inline backend then draws every Figure shown, by its own PNG printer
        _run(kernel, "%matplotlib inline\nimport matplotlib.pyplot as plt")

    shown = {code: _images(kernel, code) for code in CELLS}

    assert shown == CELLS
