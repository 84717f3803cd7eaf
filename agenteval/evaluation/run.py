"""An evaluation running in the background on the caller's event loop: :class:`EvaluationRun`.

``Evaluator.start`` schedules the evaluation as a task on the running loop (in Jupyter, the kernel's)
and returns at once; the run records each case as it finishes, so the cell that started it returns and
later cells can look at what is done, wait for it, or stop it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from agenteval._presentation import presenter
from agenteval.analysis._frames import cases_frame, metrics_frame
from agenteval.errors import AgentEvalError
from agenteval.evalresult.models import EvalCaseResult, EvalSetResult
from agenteval.service.callbacks import AfterEvaluateCaseArgs, AfterInferenceCaseArgs, BeforeEvaluateSetArgs, Callbacks
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    import pandas as pd

    from agenteval.analysis.report import EvaluationReport
    from agenteval.context import EvalContext

__all__ = ["EvaluationRun", "RunProgress"]


class RunProgress:
    """How far one run of an evaluation is: cases finished (scored) out of its cases."""

    __slots__ = ("finished", "run_id", "total")

    def __init__(self, run_id: int, total: int) -> None:
        self.run_id = run_id
        self.finished = 0
        self.total = total

    def __repr__(self) -> str:
        return f"run {self.run_id}: {self.finished}/{self.total}"


class EvaluationRun:
    """An evaluation started with :meth:`~agenteval.Evaluator.start`, running as a task on the event loop.

    Look at it while it runs (:attr:`cases`, :attr:`metrics`, :attr:`progress`, :attr:`eta`), wait for
    it (``report = await run``, or :meth:`result` once :attr:`done`), or stop it (:meth:`cancel`: the
    cases finished so far are saved as a partial result, as after Ctrl-C, and :attr:`report` holds its
    report, which ``ev.evaluate(..., resume=run.report)`` carries on). Displayed in a notebook cell, it
    shows a live board.

    Args:
        title: What is evaluated (``app / eval set``), for displays.
        num_runs: Runs of each case.
        cases_per_run: Cases in each run.
        metric_names: The metrics, in order.
    """

    def __init__(self, *, title: str, num_runs: int, cases_per_run: int, metric_names: list[str]) -> None:
        self.title = title
        self.num_runs = num_runs
        self.metric_names = metric_names
        self.started_at = time.monotonic()
        self._progress = {run_id: RunProgress(run_id, cases_per_run) for run_id in range(1, num_runs + 1)}
        self._finished: list[EvalCaseResult] = []
        self._reused_inferences: set[tuple[int, str]] = set()
        self.reused = 0
        """Case-runs taken whole (turns and scores) from the cache or a resumed result; they do not set the pace."""
        self._finished_at: float | None = None
        self._task: asyncio.Task[EvaluationReport] | None = None
        self._listeners: list[Any] = []
        self.report: EvaluationReport | None = None
        """The final report once done; after :meth:`cancel`, the partial one (empty when no case had finished,
        ``None`` when the evaluation never began: cancelled before the event loop first ran it); after a
        failure, the partial one, or ``None`` when no case had finished."""
        self.error: BaseException | None = None
        """What stopped the run (``asyncio.CancelledError`` after :meth:`cancel`); else ``None``."""

    # ------------------------------------------------------------------ wiring (Evaluator.start)

    def callbacks(self) -> Callbacks:
        """The callbacks through which the evaluation tells this run what finished."""

        def began(context: EvalContext, args: BeforeEvaluateSetArgs) -> None:
            self._progress[args.run_id].total = len(args.request.inference_results)
            self._changed()

        def inferred(context: EvalContext, args: AfterInferenceCaseArgs) -> None:
            if args.reused:
                self._reused_inferences.add((args.run_id, args.result.eval_case_id))

        def scored(context: EvalContext, args: AfterEvaluateCaseArgs) -> None:
            if args.result is not None:
                self._finished.append(args.result)
                self._progress[args.run_id].finished += 1
                if args.reused and (args.run_id, args.inference_result.eval_case_id) in self._reused_inferences:
                    self.reused += 1
                self._changed()

        return (
            Callbacks()
            .register_before_evaluate_set("agenteval.run", began)
            .register_after_inference_case("agenteval.run", inferred)
            .register_after_evaluate_case("agenteval.run", scored)
        )

    def attach(self, task: asyncio.Task[EvaluationReport]) -> None:
        """Follow ``task``, the evaluation itself."""
        self._task = task
        task.add_done_callback(self._ended)

    def listen(self, listener: Any) -> None:
        """Call ``listener(run)`` whenever a case finishes and when the run ends (a live board's refresh)."""
        self._listeners.append(listener)

    # ------------------------------------------------------------------ what is done so far

    @property
    def finished_results(self) -> list[EvalCaseResult]:
        """The case results finished so far, in the order they finished."""
        return list(self._finished)

    @property
    def cases(self) -> pd.DataFrame:
        """One row per finished (run, case), as :attr:`~agenteval.EvaluationReport.cases` has them."""
        return cases_frame(EvalSetResult.trusted(eval_case_results=self.finished_results))

    @property
    def metrics(self) -> pd.DataFrame:
        """One row per finished (run, case, metric), as :attr:`~agenteval.EvaluationReport.metrics` has them."""
        return metrics_frame(EvalSetResult.trusted(eval_case_results=self.finished_results))

    @property
    def progress(self) -> dict[int, RunProgress]:
        """Per run: cases finished out of its cases."""
        return dict(self._progress)

    @property
    def finished(self) -> int:
        """Case-runs finished, over all runs."""
        return sum(run.finished for run in self._progress.values())

    @property
    def total(self) -> int:
        """Case-runs in all, over all runs."""
        return sum(run.total for run in self._progress.values())

    @property
    def counts(self) -> dict[str, int]:
        """Finished case-runs by status (``passed``, ``failed``, ``not_evaluated``)."""
        counts = {status.value: 0 for status in (EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED)}
        for result in self._finished:
            status = str(result.final_eval_status or EvalStatus.NOT_EVALUATED)
            counts[status] = counts.get(status, 0) + 1
        return counts

    @property
    def done(self) -> bool:
        """Whether the evaluation ended (finished, failed or was cancelled)."""
        return self._task is not None and self._task.done()

    @property
    def elapsed(self) -> float:
        """Seconds since the run started (until it ended, once it has)."""
        end = self._finished_at if self._finished_at is not None else time.monotonic()
        return end - self.started_at

    @property
    def eta(self) -> float | None:
        """Seconds left at the pace of the cases run so far (``None`` before the first finishes; ``0.0`` once done).

        Cases taken from the cache or a resumed result (:attr:`reused`) cost no time, so they do not set the pace.
        """
        if self.done:
            return 0.0
        finished, total = self.finished, self.total
        run_here = finished - self.reused
        if run_here <= 0:
            return None
        return self.elapsed / run_here * max(total - finished, 0)

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
            return await self._task
        except BaseException:
            # A cancelled task raises a new CancelledError; the one the evaluation raised holds the report.
            if self.error is not None:
                raise self.error from None
            raise

    def _ended(self, task: asyncio.Task[EvaluationReport]) -> None:
        self._finished_at = time.monotonic()
        if task.cancelled():
            # A cancelled task keeps no exception; the evaluation attached the partial report to the
            # CancelledError it raised, which the task re-raises from result().
            try:
                task.result()
            except BaseException as exc:
                self.error = exc
        else:
            self.error = task.exception()
        self.report = task.result() if self.error is None else getattr(self.error, "report", None)
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
