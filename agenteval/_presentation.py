"""The one seam between results and how they are shown.

Reports and comparisons offer ``_repr_html_``, ``show_case``, ``plot`` and ``to_html``, and an evaluation
shows its progress, but the code that draws them (``agenteval.notebook``, ``agenteval.notebook.plotting``)
depends on the results, never the reverse: it registers a :class:`Presenter` here when ``agenteval`` is
imported, and the results ask for it when they are shown.

The seam sits below everything it serves, so it names none of their types. What crosses it is typed
here instead: the objects a presenter returns (:class:`HTMLView`, :class:`WhatIfView`), and the
vocabulary of a running evaluation's progress, which the evaluation's record
(:class:`agenteval.evaluation.ledger.RunLedger`) speaks and the progress displays read
(:class:`RunState`, :class:`ProgressSource`, :class:`ProgressListener`, :class:`FinishedReport`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from agenteval.status import EvalStatus

__all__ = [
    "CANCELLED",
    "EVALUATION",
    "INFERENCE",
    "FinishedReport",
    "HTMLView",
    "Presenter",
    "ProgressListener",
    "ProgressSource",
    "RunState",
    "WhatIfView",
    "presenter",
    "register_presenter",
]

INFERENCE = "inference"
"""The phase in which a run's agent answers its cases."""
EVALUATION = "evaluation"
"""The phase in which a run's answers are scored."""
CANCELLED = "cancelled"
""":attr:`RunState.error` of a run that was stopped by a cancellation or Ctrl-C."""


@dataclass(slots=True, kw_only=True, eq=False)
class RunState:
    """Where one run of a running evaluation stands. Compared by identity: two runs are never equal.

    Its evaluation's record (:class:`ProgressSource`) keeps one per run and changes it on the evaluation's
    event loop, where progress displays read it.
    """

    run: int
    """The run, 1-based."""
    inference_total: int = 0
    inference_done: int = 0
    evaluation_total: int = 0
    evaluation_done: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    """Cases with an error message, from inference or evaluation."""
    not_evaluated: int = 0
    inference_reused: int = 0
    """Inferences taken from the cache or a resumed result instead of running the agent."""
    reused: int = 0
    """Cases taken whole (turns and scores) from the cache or a resumed result: no part of the rate."""
    error: str = ""
    """Why the whole run stopped (a set-level failure, or :data:`CANCELLED`); empty otherwise."""
    phase: str = "pending"
    """``pending``, ``inference``, ``evaluation`` or ``done``."""
    started: float | None = None
    phase_started: float | None = None
    ended: float | None = None
    running: dict[tuple[str, str], float] = field(default_factory=dict)
    """``(phase, case id)`` → start time of every case in flight."""
    errored_cases: set[str] = field(default_factory=set)
    reused_inferences: set[str] = field(default_factory=set)
    """The cases of :attr:`inference_reused`."""

    @property
    def failing(self) -> bool:
        """Whether a case failed or erred, or the run itself stopped on an error."""
        return bool(self.failed or self.errors or self.error)

    @property
    def finished(self) -> bool:
        """Whether the run ended, cleanly or not."""
        return self.ended is not None


class FinishedReport(Protocol):
    """What a progress display reads of the report an evaluation ended with (an ``EvaluationReport``)."""

    @property
    def overall_status(self) -> EvalStatus: ...

    @property
    def num_runs(self) -> int: ...

    @property
    def reuse_summary(self) -> str: ...

    @property
    def case_statuses(self) -> Mapping[str, EvalStatus]:
        """Each case's overall status across its runs, by case id (read without the case results' records)."""


class ProgressListener(Protocol):
    """Told by a :class:`ProgressSource` what changed, on the evaluation's event loop. It must never raise."""

    def run_added(self, run: RunState) -> None:
        """A run beyond those planned appeared."""

    def phase_began(self, run: RunState) -> None:
        """``run`` entered the inference or the evaluation phase (:attr:`RunState.phase`)."""

    def case_inferred(self, run: RunState) -> None:
        """The agent finished a case of ``run``."""

    def inference_ended(self, run: RunState) -> None:
        """Every case of ``run`` was answered (a failed inference phase ends the run instead)."""

    def case_scored(self, run: RunState) -> None:
        """A case of ``run`` was scored."""

    def run_ended(self, run: RunState) -> None:
        """``run`` ended, cleanly or on an error (:attr:`RunState.error`)."""

    def ended(self, report: FinishedReport | None, error: BaseException | None) -> None:
        """The evaluation ended, with its report or the error that stopped it."""


class ProgressSource(Protocol):
    """A running evaluation as progress displays follow it (:class:`agenteval.evaluation.ledger.RunLedger`)."""

    @property
    def title(self) -> str:
        """What is evaluated (``app / eval set``)."""

    @property
    def cases_per_run(self) -> int:
        """The cases of each run, as planned."""

    @property
    def metric_names(self) -> list[str]:
        """The metrics, in order."""

    @property
    def runs(self) -> list[RunState]:
        """Every run so far, in run order."""

    @property
    def ended_at(self) -> float | None:
        """When the evaluation ended (:meth:`clock` time), ``None`` while it runs."""

    @property
    def elapsed(self) -> float:
        """Seconds since the evaluation began, until it ended."""

    @property
    def rate(self) -> float | None:
        """Case runs scored per second, counting only work done here; ``None`` before there is any."""

    @property
    def eta(self) -> float | None:
        """Seconds left at :attr:`rate` (``None`` before there is a rate, ``0.0`` once ended)."""

    def clock(self) -> float:
        """The time now, in the seconds of every other time here."""

    def now(self) -> float:
        """The time now, or when the evaluation ended once it has."""

    def run_rate(self, run: RunState) -> float | None:
        """``run``'s cases per second in its current phase (over the whole run once it ended)."""

    def listen(self, listener: ProgressListener) -> None:
        """Tell ``listener`` of every change from now on."""

    def end(self, *, report: FinishedReport | None = None, error: BaseException | None = None) -> None:
        """Mark the evaluation ended (the first call counts) and tell the listeners."""


class HTMLView(Protocol):
    """A piece of HTML that renders in Jupyter and prints as text (``agenteval.notebook.display.HTML``)."""

    @property
    def html(self) -> str:
        """The markup."""

    def _repr_html_(self) -> str: ...


class WhatIfView(Protocol):
    """The what-if explorer of a report: an ipywidgets widget whose controls code can set and read.

    The widgets are ipywidgets objects (untyped); ``what_if``, ``settings`` and ``outcome`` are the
    ``WhatIf``, ``WhatIfSettings`` and ``WhatIfOutcome`` of ``agenteval.analysis``, which this seam,
    below the analysis, cannot name.
    """

    what_if: Any
    rule: Any
    k: Any
    minimum: Any
    thresholds: dict[str, Any]
    weights: dict[str, Any]
    reset: Any
    summary: Any
    runs_table: Any
    metric_table: Any
    flips: Any
    metrics_json: Any
    python_code: Any
    outcome: Any

    @property
    def settings(self) -> Any:
        """The settings the controls hold."""


class Presenter(Protocol):
    """Draws reports and comparisons (the argument is the report or comparison to draw), and progress."""

    def report_html(self, report: Any) -> str:
        """A report's HTML summary."""
        ...

    def case_view(self, report: Any, eval_id: str, run_id: int | None) -> HTMLView:
        """One case side by side, as an object that renders in Jupyter and prints as text."""
        ...

    def plot_report(self, report: Any, measure: bool) -> Figure:
        """A report's overview figure (with ``measure``, each metric's measure drawn where it records one)."""
        ...

    def plot_flakiness(self, report: Any) -> Figure:
        """A report's cases by flip rate across runs."""
        ...

    def plot_failures(self, report: Any, by: str) -> Figure:
        """A report's failures counted per metric or per category, stacked."""
        ...

    def export_report(self, report: Any, path: Path) -> Path:
        """Write a report as one self-contained HTML file."""
        ...

    def explore(self, report: Any) -> WhatIfView:
        """A widget that decides a report's cases again under other thresholds and case rules."""
        ...

    def show_run(self, run: Any) -> None:
        """Show a running evaluation: a live board in Jupyter, a line of text elsewhere."""
        ...

    def progress(self, source: ProgressSource, option: bool | None) -> None:
        """Show ``source``'s evaluation as it goes, until it ends, as the ``progress`` option asks.

        Args:
            source: The evaluation's record.
            option: ``None``: a widget in Jupyter, a text bar on a terminal, else nothing; ``True``: a
                widget in Jupyter, a text bar anywhere else; ``False``: nothing.
        """
        ...

    def comparison_html(self, comparison: Any) -> str:
        """A comparison's HTML view."""
        ...

    def export_comparison(self, comparison: Any, path: Path) -> Path:
        """Write a comparison as one self-contained HTML file."""
        ...

    def plot_comparison_failures(self, comparison: Any, by: str) -> Figure:
        """Both reports' failures counted side by side."""
        ...

    def comparison_case_view(self, comparison: Any, eval_id: str, run_id: int | None) -> HTMLView:
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
