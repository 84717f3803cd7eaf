"""Live progress of an evaluation, drawn from lifecycle callbacks: a widget in Jupyter, a text bar elsewhere.

Each run gets two bars, one for inference and one for evaluation, so a run stuck in one phase shows
which one (and the footer names the oldest case still running). Next to them: passed / failed /
errors so far, the run's elapsed time and the rate of its current phase in cases per second. An
*error* is a case with an ``error_message`` (from inference or evaluation); it is counted once and
not also as failed. A run's bars turn red as soon as one of its cases fails or errs, green when it
ends clean; on :meth:`~EvaluationProgress.finish` the overall bar does the same.

The run accounting, the rates and the ETA live in the evaluation's record
(:class:`~agenteval.evaluation.ledger.RunLedger`), which an :class:`~agenteval.evaluation.run.EvaluationRun`
reads too; what the displays share is in ``_progress_base``, the two displays in ``_progress_widget`` and
``_progress_text``; this module picks one.
"""

from __future__ import annotations

import sys

from agenteval._presentation import ProgressSource, RunState
from agenteval.errors import warn_user
from agenteval.notebook._env import running_in_notebook, stream_is_terminal, widgets_available
from agenteval.notebook._progress_base import EvaluationProgress, ProgressBase
from agenteval.notebook._progress_text import TextProgress
from agenteval.notebook._progress_widget import RunRow, WidgetProgress

__all__ = [
    "EvaluationProgress",
    "RunRow",
    "RunState",
    "TextProgress",
    "WidgetProgress",
    "create_progress",
]


def create_progress(progress: bool | None, source: ProgressSource | None = None) -> EvaluationProgress | None:
    """The progress display for an evaluation's ``progress`` option.

    Args:
        progress: ``None`` for automatic: a widget inside a Jupyter kernel (when ipywidgets imports),
            else a text bar when stderr is a terminal, else nothing. ``True``: a widget in a kernel,
            a text bar anywhere else. ``False``: nothing.
        source: The record of a running evaluation for the display to follow, shown at once; ``None``
            for a display with its own record, fed by its callbacks between ``start`` and ``finish``.

    Returns:
        The display, or ``None`` for no display.
    """
    if progress is False:
        return None
    display: ProgressBase
    if running_in_notebook() and widgets_available():
        display = WidgetProgress(source=source)
    elif progress is True or stream_is_terminal(sys.stderr):
        display = TextProgress(source=source)
    else:
        return None
    if source is not None:
        display.show()
    return display


def former_name(module: str, name: str) -> object:
    """``RunProgress``, the per-run row's former name (EvaluationRun's counts are RunProgress), with a warning."""
    if name != "RunProgress":
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warn_user(
        f"{module}.RunProgress is now RunState (agenteval.evaluation.run.RunProgress is a run's counts)",
        DeprecationWarning,
    )
    return RunState


def __getattr__(name: str) -> object:
    return former_name(__name__, name)
