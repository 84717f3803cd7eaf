"""What the progress displays share; the displays themselves only draw.

They draw a :class:`~agenteval._presentation.ProgressSource`: the record of a running evaluation
(:class:`~agenteval.evaluation.ledger.RunLedger`), which keeps the accounting, the rates and the ETA. A display
made on its own keeps its own record, fed by its :meth:`~ProgressBase.callbacks`; one made for an
evaluation (:meth:`~agenteval._presentation.Presenter.progress`) follows that evaluation's record. Either
way the record tells the display what changed, on the evaluation's event loop, where it draws.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from agenteval._presentation import CANCELLED, EVALUATION, INFERENCE, FinishedReport, ProgressSource, RunState
from agenteval.errors import ProgressWarning, describe_exception
from agenteval.evaluation.ledger import Clock, RunLedger, is_interrupt
from agenteval.service.callbacks import Callbacks
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    from agenteval.analysis.report import EvaluationReport

__all__ = [
    "CANCELLED",
    "EVALUATION",
    "INFERENCE",
    "Clock",
    "EvaluationProgress",
    "ProgressBase",
    "RunState",
    "plural",
]


class EvaluationProgress(Protocol):
    """What the evaluator drives: ``start``, then the callbacks during the run, then ``finish``."""

    def start(self, *, title: str, num_runs: int, cases_per_run: int, metric_names: list[str]) -> None:
        """Reset and show an empty display for ``num_runs`` runs of ``cases_per_run`` cases."""

    def callbacks(self) -> Callbacks:
        """The lifecycle callbacks that update the display."""

    def finish(self, *, report: EvaluationReport | None = None, error: BaseException | None = None) -> None:
        """Show the outcome: the report's summary, or the error that stopped the evaluation."""


def plural(count: int, word: str, plural: str = "") -> str:
    return f"{count} {word if count == 1 else plural or word + 's'}"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _counts(passed: int, failed: int, errors: int, not_evaluated: int) -> str:
    parts = [f"{passed} passed", f"{failed} failed", plural(errors, "error")]
    if not_evaluated:
        parts.append(f"{not_evaluated} not evaluated")
    return ", ".join(parts)


class ProgressBase:
    """What the widget and the text bar share; subclasses only draw.

    Args:
        clock: The time source of the display's own record (a followed record has its own).
        refresh: Seconds between redraws of the clocks while nothing else happens; ``None`` never.
        min_interval: Minimum seconds between two redraws for arriving cases.
        source: The record of an evaluation to follow; ``None`` keeps one of its own, fed by :meth:`callbacks`.
    """

    def __init__(
        self, *, clock: Clock, refresh: float | None, min_interval: float, source: ProgressSource | None = None
    ) -> None:
        self._refresh = refresh
        self._min_interval = min_interval
        self._tick: asyncio.TimerHandle | None = None
        self._broken = False
        self._own: RunLedger | None = None
        if source is None:
            self._own = source = RunLedger(clock=clock)
        self.source: ProgressSource = source
        """The record the display draws."""
        # "" while running, then "passed", "failed", "not evaluated" or "interrupted"; summary is the final line.
        self.outcome = ""
        self.summary = ""
        self._last_draw = -math.inf
        self.source.listen(self)

    # ------------------------------------------------------------------ what the record says

    @property
    def title(self) -> str:
        """What is evaluated."""
        return self.source.title

    @property
    def cases_per_run(self) -> int:
        """The cases of each run, as planned."""
        return self.source.cases_per_run

    @property
    def metric_names(self) -> list[str]:
        """The metrics, in order."""
        return self.source.metric_names

    @property
    def runs(self) -> list[RunState]:
        """Where each run stands, in run order."""
        return self.source.runs

    # ------------------------------------------------------------------ the protocol

    def start(self, *, title: str, num_runs: int, cases_per_run: int, metric_names: list[str]) -> None:
        """Reset the display's own record and show an empty display; call it before every evaluation.

        A display that follows an evaluation's record (made with ``source=``) shows that record as it
        stands instead, whatever the arguments say.

        Args:
            title: What is evaluated, usually the eval-set id.
            num_runs: Rows to show; more appear if more runs are seen.
            cases_per_run: The expected number of cases; corrected once a run knows its cases.
            metric_names: Shown once, as a static line.
        """
        if self._own is not None:
            self._own.reset(title=title, num_runs=num_runs, cases_per_run=cases_per_run, metric_names=metric_names)
        self.show()

    def show(self) -> None:
        """Show the record as it stands, as a new display (an evaluation's display starts so)."""
        self._broken = False
        self.outcome = ""
        self.summary = ""
        self._last_draw = -math.inf
        self._stop_ticking()
        self._safely(self._draw_start)
        if any(run.phase in (INFERENCE, EVALUATION) and not run.finished for run in self.runs):
            self._start_ticking()

    def callbacks(self) -> Callbacks:
        """The eight lifecycle callbacks that feed the display's own record (none for a followed one)."""
        return self._own.callbacks() if self._own is not None else Callbacks()

    def finish(self, *, report: EvaluationReport | None = None, error: BaseException | None = None) -> None:
        """End the record, which turns the display green or red and shows the final line.

        Args:
            report: The evaluation's report, when it completed.
            error: What stopped the evaluation (``KeyboardInterrupt`` shows as interrupted).
        """
        self.source.end(report=report, error=error)

    # ------------------------------------------------------------------ what the record tells

    def run_added(self, run: RunState) -> None:
        """A run beyond those announced by ``start`` appeared: it gets a row."""
        self._safely(self._draw_new_run, run)

    def phase_began(self, run: RunState) -> None:
        """A run entered a phase: draw at once, and keep the clocks going."""
        self._start_ticking()
        self._safely(self._update, force=True)

    def case_inferred(self, run: RunState) -> None:
        """A case was answered."""
        self._safely(self._update)

    def inference_ended(self, run: RunState) -> None:
        """A run's cases were all answered."""
        self._safely(self._update)

    def case_scored(self, run: RunState) -> None:
        """A case was scored."""
        self._safely(self._update)

    def run_ended(self, run: RunState) -> None:
        """A run ended: its line (text bar), then a redraw."""
        self._safely(self._run_ended, run)

    def ended(self, report: FinishedReport | None, error: BaseException | None) -> None:
        """The evaluation ended: the outcome and the final line."""
        self._stop_ticking()
        failed = error is not None or any(run.failing for run in self.runs)
        if report is not None and report.overall_status == EvalStatus.FAILED:
            failed = True
        if is_interrupt(error):
            self.outcome = "interrupted"
        elif failed:
            self.outcome = "failed"
        elif report is not None and report.overall_status == EvalStatus.NOT_EVALUATED:
            self.outcome = "not evaluated"
        else:
            self.outcome = "passed"
        self._safely(self._finish, report, error)

    def _finish(self, report: FinishedReport | None, error: BaseException | None) -> None:
        self.summary = self._summary(report, error)
        self._draw_finish(error)

    def _safely(self, function: Callable[..., None], *args: Any, **kwargs: Any) -> None:
        if self._broken:
            return
        try:
            function(*args, **kwargs)
        except Exception as exc:
            self._broken = True
            self._stop_ticking()
            # Even under ``-W error`` a display problem must not fail the evaluation.
            with contextlib.suppress(Exception):
                warnings.warn(
                    f"progress display switched off: {describe_exception(exc)}", ProgressWarning, stacklevel=2
                )

    def _run_ended(self, run: RunState) -> None:
        if all(run.finished for run in self.runs):
            self._stop_ticking()
        self._draw_run_end(run)
        self._update(force=True)

    def _update(self, *, force: bool = False) -> None:
        # Throttled like tqdm: every trait change is a comm message, every text redraw a write.
        now = self.source.clock()
        if force or now - self._last_draw >= self._min_interval:
            self._last_draw = now
            self._draw()

    # ------------------------------------------------------------------ periodic refresh

    def _start_ticking(self) -> None:
        # Without events nothing would redraw, so a hung case would freeze the clock; tick instead.
        if self._refresh is None or self._refresh <= 0 or self._tick is not None or self.source.ended_at is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # driven by hand, outside an event loop
            return
        self._tick = loop.call_later(self._refresh, self._on_tick)

    def _on_tick(self) -> None:
        self._tick = None
        if self.source.ended_at is not None or self._broken:
            return
        self._safely(self._update, force=True)
        self._start_ticking()

    def _stop_ticking(self) -> None:
        if self._tick is not None:
            self._tick.cancel()
            self._tick = None

    # ------------------------------------------------------------------ text shared by both displays

    def _heading(self) -> str:
        return f"{self.title or 'evaluation'}: {plural(self.cases_per_run, 'case')} × {plural(len(self.runs), 'run')}"

    def _metrics_text(self) -> str:
        return "metrics: " + (", ".join(self.metric_names) or "none")

    def run_text(self, run: RunState) -> str:
        """One run's counts, elapsed time and rate, e.g. ``4 passed, 1 failed, 0 errors · 1.2 s · 4.1 cases/s``.

        Cases taken whole from the cache or a resumed result are said (``3 reused``) and left out of the rate.
        """
        now = self.source.now()
        parts = [_counts(run.passed, run.failed, run.errors, run.not_evaluated)]
        if run.reused:
            parts.append(f"{run.reused} reused")
        if run.started is not None:
            parts.append(_duration((run.ended if run.ended is not None else now) - run.started))
            rate = self.source.run_rate(run)
            if rate is not None:
                parts.append(f"{rate:.1f} cases/s")
        if run.error:
            parts.append(run.error if run.error == CANCELLED else f"error: {run.error}")
        elif self.outcome == "interrupted" and not run.finished:
            parts.append("interrupted")
        return " · ".join(parts)

    def _totals(self) -> tuple[int, int, int, int]:
        return (
            sum(run.passed for run in self.runs),
            sum(run.failed for run in self.runs),
            sum(run.errors for run in self.runs),
            sum(run.not_evaluated for run in self.runs),
        )

    def _steps(self) -> tuple[int, int]:
        done = sum(run.inference_done + run.evaluation_done for run in self.runs)
        total = sum(run.inference_total + run.evaluation_total for run in self.runs)
        return done, max(total, done)

    def _waiting_on(self, now: float) -> str:
        oldest: tuple[float, str, str, int] | None = None
        for run in self.runs:
            for (phase, case_id), since in run.running.items():
                if oldest is None or since < oldest[0]:
                    oldest = (since, case_id, phase, run.run)
        if oldest is None:
            return ""
        since, case_id, phase, run_number = oldest
        return f"waiting on {case_id} (run {run_number} {phase}, {_duration(now - since)})"

    def live_text(self) -> str:
        """The running totals: counts over all runs, elapsed time, rate, ETA, and the oldest case in flight.

        The rate and the ETA are the record's (:attr:`~agenteval._presentation.ProgressSource.eta`), the
        ones an :class:`~agenteval.evaluation.run.EvaluationRun` of the evaluation gives.
        """
        source = self.source
        parts = [_counts(*self._totals()), _duration(source.elapsed)]
        rate = source.rate
        if rate is not None:
            parts.append(f"{rate:.1f} cases/s")
        eta = source.eta
        if eta:
            parts.append(f"ETA {_duration(eta)}")
        waiting = self._waiting_on(source.now())
        if waiting:
            parts.append(waiting)
        return " · ".join(parts)

    def _summary(self, report: FinishedReport | None, error: BaseException | None) -> str:
        marker = self.outcome.upper()
        head = f"{marker} {self.title}:" if self.title else f"{marker}:"
        passed, failed, errors, not_evaluated = self._totals()
        elapsed = _duration(self.source.elapsed)
        if report is not None and error is None:
            # The statuses alone: a report's case_summaries would read every case's record to count them.
            statuses = list(report.case_statuses.values())
            parts = [
                f"{plural(len(statuses), 'case')} × {plural(report.num_runs, 'run')}",
                f"{statuses.count(EvalStatus.PASSED)} passed",
                f"{statuses.count(EvalStatus.FAILED)} failed",
            ]
            if statuses.count(EvalStatus.NOT_EVALUATED):
                parts.append(f"{statuses.count(EvalStatus.NOT_EVALUATED)} not evaluated")
            if errors:
                parts.append(plural(errors, "error") + " in case runs")
            if report.reuse_summary:
                parts.append(report.reuse_summary)
            return f"{head} {', '.join([*parts, elapsed])}"
        total = sum(run.evaluation_total for run in self.runs)
        done = sum(run.evaluation_done for run in self.runs)
        progress = f"{done} of {plural(total, 'case run')}" if done < total else plural(done, "case run")
        text = f"{head} {progress}, {_counts(passed, failed, errors, not_evaluated)}, {elapsed}"
        if error is not None and not is_interrupt(error):
            text += f"; {describe_exception(error)}"
        return text

    # ------------------------------------------------------------------ drawing (subclasses)

    def _draw_start(self) -> None:
        raise NotImplementedError

    def _draw(self) -> None:
        raise NotImplementedError

    def _draw_new_run(self, run: RunState) -> None:
        """A run beyond those announced by ``start`` appeared."""

    def _draw_run_end(self, run: RunState) -> None:
        """A run ended; the live display is redrawn right after."""

    def _draw_finish(self, error: BaseException | None) -> None:
        raise NotImplementedError
