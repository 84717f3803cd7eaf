"""The one seam between results and how they are shown.

Reports and comparisons offer ``_repr_html_``, ``show_case``, ``plot`` and ``to_html``, but the code
that draws them (``agenteval.notebook``, ``agenteval.notebook.plotting``) depends on the results, never the
reverse: it registers a :class:`Presenter` here when ``agenteval`` is imported, and the results ask
for it when they are shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

__all__ = ["Presenter", "presenter", "register_presenter"]


class Presenter(Protocol):
    """Draws reports and comparisons (the argument is the report or comparison to draw)."""

    def report_html(self, report: Any) -> str:
        """A report's HTML summary."""
        ...

    def case_view(self, report: Any, eval_id: str, run_id: int | None) -> Any:
        """One case side by side, as an object that renders in Jupyter and prints as text."""
        ...

    def plot_report(self, report: Any, measure: bool) -> Any:
        """A report's overview figure (with ``measure``, each metric's measure drawn where it records one)."""
        ...

    def plot_flakiness(self, report: Any) -> Any:
        """A report's cases by flip rate across runs."""
        ...

    def plot_failures(self, report: Any, by: str) -> Any:
        """A report's failures counted per metric or per category, stacked."""
        ...

    def export_report(self, report: Any, path: Path) -> Path:
        """Write a report as one self-contained HTML file."""
        ...

    def explore(self, report: Any) -> Any:
        """A widget that decides a report's cases again under other thresholds and case rules."""
        ...

    def show_run(self, run: Any) -> None:
        """Show a running evaluation: a live board in Jupyter, a line of text elsewhere."""
        ...

    def comparison_html(self, comparison: Any) -> str:
        """A comparison's HTML view."""
        ...

    def export_comparison(self, comparison: Any, path: Path) -> Path:
        """Write a comparison as one self-contained HTML file."""
        ...

    def plot_comparison_failures(self, comparison: Any, by: str) -> Any:
        """Both reports' failures counted side by side."""
        ...

    def comparison_case_view(self, comparison: Any, eval_id: str, run_id: int | None) -> Any:
        """One case in both reports, against what was expected, as an object that renders in Jupyter."""
        ...


_registered: list[Presenter] = []


def register_presenter(presenter: Presenter) -> None:
    """Make ``presenter`` the one that draws results (``agenteval`` registers its own on import)."""
    _registered[:] = [presenter]


def presenter() -> Presenter:
    """The registered presenter.

    Raises:
        RuntimeError: None is registered (``agenteval`` registers one on import, so only a partial
            import can see this).
    """
    if not _registered:
        raise RuntimeError("no presenter is registered: import agenteval, which registers its own")
    return _registered[0]
