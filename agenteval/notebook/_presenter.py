"""agenteval's own :class:`~agenteval._presentation.Presenter`: the notebook views and the plots.

Each drawing module is imported when first used, so registering this presenter loads none of
them (nor pandas, matplotlib or ipywidgets).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from agenteval._presentation import ProgressSource
    from agenteval.analysis.compare import Comparison
    from agenteval.analysis.report import EvaluationReport
    from agenteval.evaluation.run import EvaluationRun
    from agenteval.notebook._explorer import WhatIfExplorer
    from agenteval.notebook._html import HTML

__all__ = ["NotebookPresenter"]


class NotebookPresenter:
    """Draws reports and comparisons as HTML (in Jupyter and in files) and as matplotlib figures."""

    def report_html(self, report: EvaluationReport) -> str:
        """A report's summary (see :func:`agenteval.notebook.display.report_html`)."""
        from agenteval.notebook.display import report_html

        return report_html(report)

    def case_view(self, report: EvaluationReport, eval_id: str, run_id: int | None) -> HTML:
        """One case side by side (see :func:`agenteval.notebook.display.case_html`)."""
        from agenteval.notebook._html import HTML
        from agenteval.notebook.display import case_html

        return HTML(case_html(report, eval_id, run_id))

    def plot_report(self, report: EvaluationReport, measure: bool) -> Figure:
        """A report's overview figure (see :func:`agenteval.notebook.plotting.plot_report`)."""
        from agenteval.notebook.plotting import plot_report

        return plot_report(report, measure=measure)

    def plot_flakiness(self, report: EvaluationReport) -> Figure:
        """A report's cases by flip rate (see :func:`agenteval.notebook.plotting.plot_flakiness`)."""
        from agenteval.notebook.plotting import plot_flakiness

        return plot_flakiness(report)

    def plot_failures(self, report: EvaluationReport, by: str) -> Figure:
        """A report's failures counted (see :func:`agenteval.notebook.plotting.plot_failures`)."""
        from agenteval.notebook.plotting import plot_failures

        return plot_failures(report, by=by)

    def show_run(self, run: EvaluationRun) -> None:
        """A live board in Jupyter (see :class:`agenteval.notebook._live_board.LiveBoard`); a status line elsewhere."""
        from agenteval.notebook._env import running_in_notebook, widgets_available
        from agenteval.notebook._live_board import LiveBoard, status_line

        if running_in_notebook() and widgets_available():
            import IPython.display

            show: Any = IPython.display.display  # untyped
            show(LiveBoard(run))
        else:
            print(status_line(run))

    def progress(self, source: ProgressSource, option: bool | None) -> None:
        """A widget in Jupyter or a text bar on a terminal that follows ``source``, as ``option`` asks.

        See :func:`~agenteval.notebook.progress.create_progress`. The display draws what ``source`` tells it
        until the evaluation ends; ``source`` keeps it.
        """
        from agenteval.notebook.progress import create_progress

        create_progress(option, source)

    def export_report(self, report: EvaluationReport, path: Path) -> Path:
        """A report as one self-contained page (see :func:`agenteval.notebook.html_export.export_html`)."""
        from agenteval.notebook.html_export import export_html

        return export_html(report, path)

    def explore(self, report: EvaluationReport) -> WhatIfExplorer:
        """The what-if explorer of a report (see :class:`agenteval.notebook._explorer.WhatIfExplorer`)."""
        from agenteval.notebook._explorer import WhatIfExplorer

        return WhatIfExplorer(report)

    def comparison_html(self, comparison: Comparison) -> str:
        """A comparison's view (see :func:`agenteval.notebook.comparison_view.comparison_html`)."""
        from agenteval.notebook.comparison_view import comparison_html

        return comparison_html(comparison)

    def export_comparison(self, comparison: Comparison, path: Path) -> Path:
        """A comparison as one self-contained page."""
        from agenteval.notebook.comparison_view import export_comparison_html

        return export_comparison_html(comparison, path)

    def plot_comparison_failures(self, comparison: Comparison, by: str) -> Figure:
        """Both reports' failures side by side (see :func:`agenteval.notebook.plotting.plot_failure_comparison`)."""
        from agenteval.notebook.plotting import plot_failure_comparison

        return plot_failure_comparison(comparison.baseline, comparison.candidate, by=by)

    def comparison_case_view(self, comparison: Comparison, eval_id: str, run_id: int | None) -> HTML:
        """One case in both reports (see :func:`agenteval.notebook._comparison_case.comparison_case_html`)."""
        from agenteval.notebook._comparison_case import comparison_case_html
        from agenteval.notebook._html import HTML

        return HTML(comparison_case_html(comparison, eval_id, run_id))
