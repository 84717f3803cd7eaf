"""In a real Jupyter kernel, a report, a case view and a plot display as HTML and images."""

from __future__ import annotations

from typing import Any

import pytest

from tests.notebook._kernel import cell_outputs

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


def test_report_case_view_and_plot_render_in_a_kernel(kernel: Any) -> None:
    assert cell_outputs(kernel, SETUP) == []
    (summary,) = cell_outputs(kernel, "report")
    assert "text/html" in summary and "calc_power" in summary["text/html"]
    (case,) = cell_outputs(kernel, 'report.show_case("calc_power")')
    assert "text/html" in case and "Expected" in case["text/html"]
    (figure,) = cell_outputs(kernel, "report.plot()")
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
    return sum("image/png" in output for output in cell_outputs(client, code))


@pytest.mark.parametrize("pyplot", [False, True], ids=["without-pyplot", "with-pyplot-inline"])
def test_a_figure_shows_once_at_the_end_of_its_cell_or_as_its_value(kernel: Any, pyplot: bool) -> None:
    cell_outputs(kernel, SETUP)
    if pyplot:  # matplotlib's inline backend then draws every Figure shown, by its own PNG printer
        cell_outputs(kernel, "%matplotlib inline\nimport matplotlib.pyplot as plt")

    shown = {code: _images(kernel, code) for code in CELLS}

    assert shown == CELLS
