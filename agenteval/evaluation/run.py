"""An evaluation running in the background on the caller's event loop: :class:`EvaluationRun`.

``Evaluator.start`` schedules the evaluation as a task on the running loop (in Jupyter, the kernel's)
and returns at once; the run records each case as it finishes, so the cell that started it returns and
later cells can look at what is done, wait for it, or stop it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from agenteval._presentation import EVALUATION, FinishedReport, RunState, presenter
from agenteval.analysis._frames import cases_frame_of, metrics_frame_of
from agenteval.errors import AgentEvalError, report_of
from agenteval.evalresult.models import EvalCaseResult
from agenteval.evalresult.summarize import RunRow
from agenteval.evaluation.ledger import RunLedger, RunProgress

if TYPE_CHECKING:
    import pandas as pd

    from agenteval.analysis.report import EvaluationReport

__all__ = ["EvaluationRun", "RunProgress"]


class EvaluationRun:
    """An evaluation started with :meth:`~agenteval.Evaluator.start`, running as a task on the event loop.

    Look at it while it runs (:attr:`cases`, :attr:`metrics`, :attr:`progress`, :attr:`eta`), wait for
    it (``report = await run``, or :meth:`result` once :attr:`done`), or stop it (:meth:`cancel`: the
    cases finished so far are saved as a partial result, as after Ctrl-C, and :attr:`report` holds its
    report, which ``ev.evaluate(..., resume=run.report)`` carries on). Displayed in a notebook cell, it
    shows a live board.

    What it says of the evaluation so far, it reads from the evaluation's record, :attr:`ledger`, which
    a progress display of the same evaluation reads too.

    Args:
        ledger: The evaluation's record, which the evaluation feeds.
    """

    def __init__(self, ledger: RunLedger) -> None:
        self.ledger = ledger
        """The evaluation's record, which every view of the running evaluation reads."""
        self._task: asyncio.Task[EvaluationReport] | None = None
        self._end_recorded = False
        self._listeners: list[Callable[[EvaluationRun], object]] = []
        self.report: EvaluationReport | None = None
        """The final report once done; after :meth:`cancel`, the partial one (empty when no case had finished,
        ``None`` when the evaluation never began: cancelled before the event loop first ran it); after a
        failure, the partial one, or ``None`` when no case had finished."""
        self.error: BaseException | None = None
        """What stopped the run (``asyncio.CancelledError`` after :meth:`cancel`); else ``None``."""
        self.ledger.listen(_Relay(self))

    # ------------------------------------------------------------------ wiring (Evaluator.start)

    def attach(self, task: asyncio.Task[EvaluationReport]) -> None:
        """Follow ``task``, the evaluation itself."""
        self._task = task
        task.add_done_callback(self._ended)

    def listen(self, listener: Callable[[EvaluationRun], object]) -> None:
        """Call ``listener(run)`` whenever a case finishes and when the run ends (a live board's refresh)."""
        self._listeners.append(listener)

    # ------------------------------------------------------------------ what is done so far

    @property
    def title(self) -> str:
        """What is evaluated (``app / eval set``), for displays."""
        return self.ledger.title

    @property
    def num_runs(self) -> int:
        """Runs of each case."""
        return self.ledger.num_runs

    @property
    def metric_names(self) -> list[str]:
        """The metrics, in order."""
        return self.ledger.metric_names

    @property
    def started_at(self) -> float:
        """When the run started, in the seconds of the ledger's clock."""
        return self.ledger.started_at

    @property
    def reused(self) -> int:
        """Case-runs taken whole (turns and scores) from the cache or a resumed result; they do not set the pace."""
        return self.ledger.reused

    @property
    def finished_results(self) -> list[EvalCaseResult]:
        """The case results finished so far, in the order they finished (each read from what the run holds of it)."""
        return self.ledger.results

    @property
    def finished_rows(self) -> list[RunRow]:
        """The rows of the case results finished so far (what tables show of them), in the order they finished.

        Cheaper than :attr:`finished_results`, which reads each case result's model from what the run holds.
        """
        return [record.row for record in self.ledger.records]

    @property
    def cases(self) -> pd.DataFrame:
        """One row per finished (run, case), as :attr:`~agenteval.EvaluationReport.cases` has them."""
        return cases_frame_of(self.finished_rows, None)

    @property
    def metrics(self) -> pd.DataFrame:
        """One row per finished (run, case, metric), as :attr:`~agenteval.EvaluationReport.metrics` has them."""
        return metrics_frame_of(self.finished_rows, None)

    @property
    def progress(self) -> dict[int, RunProgress]:
        """Per run: cases finished out of its cases."""
        return self.ledger.progress()

    @property
    def finished(self) -> int:
        """Case-runs finished, over all runs."""
        return self.ledger.finished

    @property
    def total(self) -> int:
        """Case-runs in all, over all runs."""
        return self.ledger.total

    @property
    def counts(self) -> dict[str, int]:
        """Finished case-runs by status (``passed``, ``failed``, ``not_evaluated``)."""
        return self.ledger.counts

    @property
    def done(self) -> bool:
        """Whether the evaluation ended (finished, failed or was cancelled)."""
        # Once the end is recorded (report, error), not when the task is: its done callbacks run a turn later.
        return self._task is not None and self._task.done() and self._end_recorded

    @property
    def elapsed(self) -> float:
        """Seconds since the run started (until it ended, once it has)."""
        return self.ledger.elapsed

    @property
    def eta(self) -> float | None:
        """Seconds left at the pace of the cases run so far (``None`` before the first finishes; ``0.0`` once done).

        Cases taken from the cache or a resumed result (:attr:`reused`) cost no time, so they do not set the pace.
        It is the ETA of :attr:`ledger`, which a progress display of the evaluation shows too.
        """
        return 0.0 if self.done else self.ledger.eta

    # ------------------------------------------------------------------ the outcome

    def result(self) -> EvaluationReport:
        """The report, once the run is done.

        Raises:
            AgentEvalError: The run is still going (``await run`` waits for it).
            BaseException: What stopped the run (``asyncio.CancelledError`` after :meth:`cancel`); its
                ``report`` attribute holds the partial report, as :attr:`report` does.
        """
        if self._task is None or not self._task.done():
            raise AgentEvalError("the evaluation is still running: `report = await run` waits for it")
        if self.error is not None:
            raise self.error
        return self._task.result()

    def cancel(self) -> bool:
        """Stop the evaluation: cases in flight are abandoned, finished ones are saved as a partial result.

        Returns:
            Whether the run was still going.
        """
        return self._task is not None and self._task.cancel()

    def __await__(self) -> Generator[Any, None, EvaluationReport]:
        return self._wait().__await__()

    async def _wait(self) -> EvaluationReport:
        if self._task is None:
            raise AgentEvalError("this run was never started: use Evaluator.start(...)")
        try:
            report = await self._task
        except BaseException:
            if self._task.done():
                self._ended(self._task)  # recorded now, if its done callback has not run yet
            # A cancelled task raises a new CancelledError; the one the evaluation raised holds the report.
            if self.error is not None:
                raise self.error from None
            raise
        # A task already done is awaited without a turn of the loop: its done callback may not have run yet.
        self._ended(self._task)
        return report

    def _ended(self, task: asyncio.Task[EvaluationReport]) -> None:
        if self._end_recorded:
            return
        self._end_recorded = True
        if task.cancelled():
            # A cancelled task keeps no exception; the evaluation attached the partial report to the
            # CancelledError it raised, which the task re-raises from result().
            try:
                task.result()
            except BaseException as exc:
                self.error = exc
        else:
            self.error = task.exception()
        self.report = task.result() if self.error is None else report_of(self.error)
        # The evaluation ended its ledger already, unless it was cancelled before it began.
        self.ledger.end(report=self.report, error=self.error)
        self._changed()

    def _changed(self) -> None:
        for listener in list(self._listeners):
            listener(self)

    # ------------------------------------------------------------------ display

    def _ipython_display_(self) -> None:
        presenter().show_run(self)

    def __repr__(self) -> str:
        state = "done" if self.done else "running"
        if self.error is not None:
            state = f"stopped by {type(self.error).__name__}"
        return f"EvaluationRun({self.title!r}, {state}, {self.finished}/{self.total} case runs, {self.elapsed:.1f} s)"


class _Relay:
    """Tells a run's listeners what its ledger tells it: a run's scoring began, a case was scored."""

    def __init__(self, run: EvaluationRun) -> None:
        self._run = run

    def run_added(self, run: RunState) -> None:
        """Nothing to tell: a new run shows once its cases do."""

    def phase_began(self, run: RunState) -> None:
        """The run's count of cases is known once its scoring begins."""
        if run.phase == EVALUATION:
            self._run._changed()

    def case_inferred(self, run: RunState) -> None:
        """Nothing to tell: a case shows once scored."""

    def inference_ended(self, run: RunState) -> None:
        """Nothing to tell."""

    def case_scored(self, run: RunState) -> None:
        """A case finished."""
        self._run._changed()

    def run_ended(self, run: RunState) -> None:
        """Nothing to tell: the run's last case told already."""

    def ended(self, report: FinishedReport | None, error: BaseException | None) -> None:
        """Nothing to tell yet: the task's end tells, once :attr:`EvaluationRun.done` says so."""
