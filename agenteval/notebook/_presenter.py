"""agenteval's own :class:`~agenteval._presentation.Presenter`: the notebook views and the plots.

Each drawing module is imported when first used, so registering this presenter loads none of
them (nor pandas, matplotlib or ipywidgets).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from agenteval.compare import Comparison
    from agenteval.notebook._html import HTML
    from agenteval.report import EvaluationReport

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

    def plot_report(self, report: EvaluationReport) -> Figure:
        """A report's overview figure (see :func:`agenteval.plotting.plot_report`)."""
        from agenteval.plotting import plot_report

        return plot_report(report)

    def export_report(self, report: EvaluationReport, path: Path) -> Path:
        """A report as one self-contained page (see :func:`agenteval.notebook.html_export.export_html`)."""
        from agenteval.notebook.html_export import export_html

        return export_html(report, path)

    def comparison_html(self, comparison: Comparison) -> str:
        """A comparison's view (see :func:`agenteval.notebook.comparison_view.comparison_html`)."""
        from agenteval.notebook.comparison_view import comparison_html

        return comparison_html(comparison)

    def export_comparison(self, comparison: Comparison, path: Path) -> Path:
        """A comparison as one self-contained page."""
        from agenteval.notebook.comparison_view import export_comparison_html

        return export_comparison_html(comparison, path)
