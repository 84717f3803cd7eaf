"""Show a figure at the end of the notebook cell that made it, as pyplot's inline backend does.

agenteval's figures are made without pyplot (no GUI backend, no global list of figures), so Jupyter
shows one only when it is the value of a cell: ``fig = report.plot()`` followed by more code would
show nothing. In a kernel, each new figure waits here until its cell has run, and is then shown
unless it was shown already (as the cell's value, or by ``display(fig)``).
"""

from __future__ import annotations

import weakref
from typing import Any

from agenteval.notebook._env import running_in_notebook

__all__ = ["note_displayed", "show_at_end_of_cell"]

_pending: list[Any] = []
"""The figures made in the running cell (held until the cell ends, as pyplot holds its figures)."""
_displayed: weakref.WeakSet[Any] = weakref.WeakSet()
"""The figures IPython has displayed."""


def show_at_end_of_cell(figure: Any) -> None:
    """Show ``figure`` once the running cell ends, unless it is displayed before then; nothing outside a kernel."""
    if not running_in_notebook():
        return
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return
    # post_execute, as matplotlib's inline backend: it runs after the cell's value was displayed.
    if _show_pending not in shell.events.callbacks["post_execute"]:
        shell.events.register("post_execute", _show_pending)
    _pending.append(figure)


def note_displayed(figure: Any) -> None:
    """Record that IPython displayed ``figure`` (so the end of the cell does not show it again)."""
    _displayed.add(figure)


def _show_pending() -> None:
    import IPython.display

    show: Any = IPython.display.display  # untyped
    figures = list(_pending)
    _pending.clear()
    for figure in figures:
        if figure not in _displayed:
            show(figure)
