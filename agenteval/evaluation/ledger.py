"""One record of a running evaluation: :class:`RunLedger`.

The evaluation's callbacks feed it, and everything that looks at a running evaluation reads it: the
partial report of an interrupted evaluation (:meth:`RunLedger.finished_work`), an evaluation started in
the background (:class:`~agenteval.evaluation.run.EvaluationRun`) and the progress displays (through the
presentation seam, as a :class:`~agenteval._presentation.ProgressSource`). So they agree on what
finished, the counts, the elapsed time and the ETA.

Every callback's arguments say which run they belong to (``args.run_id``), so parallel runs land on
their own rows in any order. The callbacks run on the evaluation's event loop, and so do the listeners
they tell; a notebook may read the ledger from another thread, so every change is made under a lock and
every read copies under it. The :class:`~agenteval._presentation.RunState` rows themselves change on the
loop: read them there (the listeners are), or read :meth:`RunLedger.progress` from elsewhere.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agenteval._presentation import (
    CANCELLED,
    EVALUATION,
    INFERENCE,
    FinishedReport,
    ProgressListener,
    RunState,
)
from agenteval.context import EvalContext
from agenteval.errors import describe_exception
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import ErrorType, EvalCaseResult, EvalMetricResultPerInvocation
from agenteval.evalresult.records import CaseRecord
from agenteval.evalset.models import EvalCase, EvalSet, Invocation
from agenteval.service._scoring import failed_case_result
from agenteval.service.callbacks import (
    AfterEvaluateCaseArgs,
    AfterEvaluateSetArgs,
    AfterInferenceCaseArgs,
    AfterInferenceSetArgs,
    BeforeEvaluateCaseArgs,
    BeforeEvaluateSetArgs,
    BeforeInferenceCaseArgs,
    BeforeInferenceSetArgs,
    Callback,
    Callbacks,
)
from agenteval.status import EvalStatus

__all__ = ["Clock", "RunLedger", "RunProgress", "is_interrupt"]

Clock = Callable[[], float]
"""A monotonic time source, in seconds."""

_STATUSES = (EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED)


def is_interrupt(error: BaseException | None) -> bool:
    """Whether ``error`` is Ctrl-C or a cancellation rather than a failure."""
    return isinstance(error, KeyboardInterrupt | asyncio.CancelledError)


@dataclass(frozen=True, slots=True)
class RunProgress:
    """How far one run is: its case runs finished (scored) out of its cases, when it was asked."""

    run_id: int
    """The run, 1-based."""
    finished: int
    """Cases scored."""
    total: int
    """Cases in the run."""

    def __repr__(self) -> str:
        return f"run {self.run_id}: {self.finished}/{self.total}"


class RunLedger:
    """The one record of a running evaluation: per run where it stands, the finished cases, counts, time and ETA.

    Feed it with :meth:`callbacks`, read it while the evaluation goes, :meth:`end` it when the evaluation
    ended. It is the :class:`~agenteval._presentation.ProgressSource` progress displays follow; they,
    and an :class:`~agenteval.evaluation.run.EvaluationRun`, :meth:`listen` to it.

    Args:
        title: What is evaluated (``app / eval set``), for displays.
        num_runs: The runs planned (more appear if more are seen).
        cases_per_run: The cases planned per run; each run's count is corrected once it knows its cases.
        metric_names: The metrics, in order.
        clock: The time source of every time here.
    """

    def __init__(
        self,
        *,
        title: str = "",
        num_runs: int = 0,
        cases_per_run: int = 0,
        metric_names: Sequence[str] = (),
        clock: Clock = time.perf_counter,
    ) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._listeners: list[ProgressListener] = []
        self._start(title, num_runs, cases_per_run, metric_names)

    def _start(self, title: str, num_runs: int, cases_per_run: int, metric_names: Sequence[str]) -> None:
        self._title = title
        self._num_runs = max(0, num_runs)
        self._cases_per_run = max(0, cases_per_run)
        self._metric_names = list(metric_names)
        self._runs = [self._new_run(number) for number in range(1, self._num_runs + 1)]
        self._results: list[EvalCaseResult | CaseRecord] = []
        self._scored: dict[int, list[EvalCaseResult | CaseRecord]] = {}
        self._ended: dict[int, list[CaseRecord]] = {}
        # Where each case result not recorded yet is in both lists, by id (the result is alive until recorded).
        self._unrecorded: dict[int, tuple[int, int, int]] = {}
        self._inferred: dict[int, list[InferenceResult]] = {}
        self._statuses = {status.value: 0 for status in _STATUSES}
        self._started_at = self._clock()
        self._ended_at: float | None = None

    def _new_run(self, number: int) -> RunState:
        return RunState(run=number, inference_total=self._cases_per_run, evaluation_total=self._cases_per_run)

    # ------------------------------------------------------------------ wiring

    def reset(self, *, title: str, num_runs: int, cases_per_run: int, metric_names: Sequence[str]) -> None:
        """Forget everything and begin again, now (a progress display fed by its own callbacks does, per evaluation).

        The listeners stay.
        """
        with self._lock:
            self._start(title, num_runs, cases_per_run, metric_names)

    def plan(self, *, title: str, num_runs: int, cases_per_run: int, metric_names: Sequence[str]) -> None:
        """Say what the evaluation will do, once it knows, before its first case (the clock keeps running).

        Runs that have not begun take ``cases_per_run`` as their count of cases.
        """
        with self._lock:
            self._title = title
            self._num_runs = max(0, num_runs)
            self._cases_per_run = max(0, cases_per_run)
            self._metric_names = list(metric_names)
            for run in self._runs:
                if run.phase == "pending" and not run.inference_done and not run.evaluation_done:
                    run.inference_total = run.evaluation_total = self._cases_per_run
            while len(self._runs) < self._num_runs:
                self._runs.append(self._new_run(len(self._runs) + 1))

    def callbacks(self) -> Callbacks:
        """The callbacks that feed the ledger: every lifecycle point; observe the user's with them."""
        return Callbacks().register(
            "agenteval.ledger",
            Callback(
                before_inference_set=self._before_inference_set,
                after_inference_set=self._after_inference_set,
                before_inference_case=self._before_inference_case,
                after_inference_case=self._after_inference_case,
                before_evaluate_set=self._before_evaluate_set,
                after_evaluate_set=self._after_evaluate_set,
                before_evaluate_case=self._before_evaluate_case,
                after_evaluate_case=self._after_evaluate_case,
            ),
        )

    def listen(self, listener: ProgressListener) -> None:
        """Tell ``listener`` of every change from now on, on the evaluation's event loop."""
        with self._lock:
            self._listeners.append(listener)

    def end(self, *, report: FinishedReport | None = None, error: BaseException | None = None) -> None:
        """Mark the evaluation ended, with its report or the error that stopped it; only the first call counts."""
        with self._lock:
            if self._ended_at is not None:
                return
            self._ended_at = self._clock()
            listeners = list(self._listeners)
        for listener in listeners:
            listener.ended(report, error)

    # ------------------------------------------------------------------ the callbacks

    def _before_inference_set(self, context: EvalContext, args: BeforeInferenceSetArgs) -> None:
        with self._lock:
            run, added = self._run(args.run_id)
            self._enter_phase(run, INFERENCE)
        self._tell(added, lambda listener: listener.phase_began(run))

    def _before_inference_case(self, context: EvalContext, args: BeforeInferenceCaseArgs) -> None:
        with self._lock:
            run, added = self._run(args.run_id)
            run.running[(INFERENCE, args.eval_case_id)] = self._clock()
        self._tell(added)

    def _after_inference_case(self, context: EvalContext, args: AfterInferenceCaseArgs) -> None:
        result = args.result
        with self._lock:
            run, added = self._run(args.run_id)
            run.running.pop((INFERENCE, result.eval_case_id), None)
            run.inference_done += 1
            run.inference_total = max(run.inference_total, run.inference_done)
            if args.reused:
                run.inference_reused += 1
                run.reused_inferences.add(result.eval_case_id)
            if result.error_message or result.status == EvalStatus.FAILED:
                self._count_error(run, result.eval_case_id)
            self._inferred.setdefault(run.run, []).append(result)
        self._tell(added, lambda listener: listener.case_inferred(run))

    def _after_inference_set(self, context: EvalContext, args: AfterInferenceSetArgs) -> None:
        with self._lock:
            run, added = self._run(args.run_id)
            if args.results is not None:
                run.inference_total = run.evaluation_total = len(args.results)
            stopped = args.error is not None and self._stop_run(run, args.error)
        if args.error is None:
            self._tell(added, lambda listener: listener.inference_ended(run))
        else:
            self._tell(added, (lambda listener: listener.run_ended(run)) if stopped else None)

    def _before_evaluate_set(self, context: EvalContext, args: BeforeEvaluateSetArgs) -> None:
        with self._lock:
            run, added = self._run(args.run_id)
            run.evaluation_total = len(args.request.inference_results)
            self._enter_phase(run, EVALUATION)
        self._tell(added, lambda listener: listener.phase_began(run))

    def _before_evaluate_case(self, context: EvalContext, args: BeforeEvaluateCaseArgs) -> None:
        with self._lock:
            run, added = self._run(args.run_id)
            run.running[(EVALUATION, args.eval_case_id)] = self._clock()
        self._tell(added)

    def _after_evaluate_case(self, context: EvalContext, args: AfterEvaluateCaseArgs) -> None:
        case_id = args.inference_result.eval_case_id
        result = args.result
        with self._lock:
            run, added = self._run(args.run_id)
            run.running.pop((EVALUATION, case_id), None)
            run.evaluation_done += 1
            run.evaluation_total = max(run.evaluation_total, run.evaluation_done)
            if args.reused and case_id in run.reused_inferences:
                run.reused += 1
            message = (result.error_message if result is not None else "") or args.inference_result.error_message
            if result is None or args.error is not None or message:
                # An error is counted once, not also as a failure.
                self._count_error(run, case_id)
            elif result.final_eval_status == EvalStatus.FAILED:
                run.failed += 1
            elif result.final_eval_status == EvalStatus.PASSED:
                run.passed += 1
            else:
                run.not_evaluated += 1
            if result is not None:
                scored = self._scored.setdefault(run.run, [])
                self._unrecorded[id(result)] = (len(self._results), run.run, len(scored))
                self._results.append(result)
                scored.append(result)
                status = str(result.final_eval_status or EvalStatus.NOT_EVALUATED)
                self._statuses[status] = self._statuses.get(status, 0) + 1
        self._tell(added, lambda listener: listener.case_scored(run))

    def _after_evaluate_set(self, context: EvalContext, args: AfterEvaluateSetArgs) -> None:
        with self._lock:
            run, added = self._run(args.run_id)
            if args.error is not None:
                stopped = self._stop_run(run, args.error)
            else:
                run.ended = self._clock()
                run.phase = "done"
                run.running.clear()
                stopped = True
        self._tell(added, (lambda listener: listener.run_ended(run)) if stopped else None)

    # ------------------------------------------------------------------ bookkeeping (under the lock)

    def _run(self, run_id: int) -> tuple[RunState, list[RunState]]:
        """The row of run ``run_id``, and the rows that had to be added for it.

        A service used on its own numbers no run: its calls share row 1.
        """
        number = max(run_id, 1)
        added: list[RunState] = []
        while len(self._runs) < number:
            added.append(self._new_run(len(self._runs) + 1))
            self._runs.append(added[-1])
        return self._runs[number - 1], added

    def _enter_phase(self, run: RunState, phase: str) -> None:
        now = self._clock()
        if run.started is None:
            run.started = now
        run.phase = phase
        run.phase_started = now

    @staticmethod
    def _count_error(run: RunState, case_id: str) -> None:
        if case_id not in run.errored_cases:
            run.errored_cases.add(case_id)
            run.errors += 1

    def _stop_run(self, run: RunState, error: BaseException) -> bool:
        """End ``run`` on ``error``; ``False`` when it had ended already."""
        if run.finished:
            # Pipelined, a stopped run reports its error at the end of both phases: it ended at the first.
            return False
        run.error = CANCELLED if is_interrupt(error) else describe_exception(error)
        run.ended = self._clock()
        run.running.clear()
        return True

    def _tell(self, added: list[RunState], change: Callable[[ProgressListener], None] | None = None) -> None:
        """Tell every listener of the rows ``added``, then of ``change`` (outside the lock: listeners read it)."""
        if not added and change is None:
            return
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            for run in added:
                listener.run_added(run)
            if change is not None:
                change(listener)

    # ------------------------------------------------------------------ reading

    @property
    def title(self) -> str:
        """What is evaluated (``app / eval set``)."""
        return self._title

    @property
    def num_runs(self) -> int:
        """The runs planned."""
        return self._num_runs

    @property
    def cases_per_run(self) -> int:
        """The cases of each run, as planned."""
        return self._cases_per_run

    @property
    def metric_names(self) -> list[str]:
        """The metrics, in order."""
        with self._lock:
            return list(self._metric_names)

    @property
    def runs(self) -> list[RunState]:
        """Every run so far, in run order (rows that change on the evaluation's loop: read them there)."""
        with self._lock:
            return list(self._runs)

    def progress(self) -> dict[int, RunProgress]:
        """Per run: its cases finished out of its cases, as they stand now."""
        with self._lock:
            return {run.run: RunProgress(run.run, run.evaluation_done, run.evaluation_total) for run in self._runs}

    @property
    def finished(self) -> int:
        """Case runs finished (scored), over all runs."""
        with self._lock:
            return sum(run.evaluation_done for run in self._runs)

    @property
    def total(self) -> int:
        """Case runs in all, over all runs."""
        with self._lock:
            return sum(run.evaluation_total for run in self._runs)

    @property
    def reused(self) -> int:
        """Case runs taken whole (turns and scores) from the cache or a resumed result; they do not set the pace."""
        with self._lock:
            return sum(run.reused for run in self._runs)

    @property
    def counts(self) -> dict[str, int]:
        """Finished case runs by status (``passed``, ``failed``, ``not_evaluated``)."""
        with self._lock:
            return dict(self._statuses)

    def keep(self, case: EvalCaseResult, record: CaseRecord) -> None:
        """Hold the record of a finished case result instead of the result itself.

        The evaluation's :class:`~agenteval.evalresult.records.CaseRecorder` hands each one here once its
        ``after_evaluate_case`` callbacks are done with it. A case whose callback raised keeps its result.
        """
        with self._lock:
            at = self._unrecorded.pop(id(case), None)
            if at is None:  # not seen by the callbacks (a service of its own)
                self._results.append(record)
                self._scored.setdefault(max(record.row.run_id, 1), []).append(record)
                return
            index, run, run_index = at
            self._results[index] = record
            self._scored[run][run_index] = record

    def run_ended(self, run_id: int, records: Sequence[CaseRecord]) -> None:
        """Hold the case results run ``run_id`` ended with, as its ``after_evaluate_set`` callbacks left them.

        A partial result, left by a later run that fails, holds them (:meth:`finished_work`): what the callbacks
        dropped, added, reordered or edited, as the full result would have. The progress (:attr:`results`,
        :attr:`rows`, :attr:`counts`) stays what was scored, case by case.
        """
        with self._lock:
            self._ended[run_id] = list(records)

    @property
    def any_run_ended(self) -> bool:
        """Whether a run ended (:meth:`run_ended`): :meth:`finished_work` then differs with ``as_left``."""
        with self._lock:
            return bool(self._ended)

    @property
    def records(self) -> list[CaseRecord]:
        """The case results finished so far, as records, in the order they finished."""
        with self._lock:
            held = list(self._results)
        return [case if isinstance(case, CaseRecord) else CaseRecord(case) for case in held]

    @property
    def results(self) -> list[EvalCaseResult]:
        """The case results finished so far, in the order they finished (each read from its record once asked for)."""
        with self._lock:
            held = list(self._results)
        return [case.model if isinstance(case, CaseRecord) else case for case in held]

    def clock(self) -> float:
        """The time now, in the seconds of every other time here."""
        return self._clock()

    @property
    def started_at(self) -> float:
        """When the ledger began (:meth:`clock` time): made, or last :meth:`reset`."""
        return self._started_at

    @property
    def ended_at(self) -> float | None:
        """When the evaluation ended (:meth:`clock` time), ``None`` while it runs."""
        return self._ended_at

    def now(self) -> float:
        """The time now, or when the evaluation ended once it has."""
        ended = self._ended_at
        return ended if ended is not None else self._clock()

    @property
    def elapsed(self) -> float:
        """Seconds since the ledger began, until the evaluation ended."""
        return self.now() - self._started_at

    def _pace(self) -> tuple[float, int, int] | None:
        """Elapsed seconds, case runs done here (not reused) and case runs left; ``None`` before any was done here."""
        with self._lock:
            finished = sum(run.evaluation_done for run in self._runs)
            here = finished - sum(run.reused for run in self._runs)
            left = max(sum(run.evaluation_total for run in self._runs) - finished, 0)
        elapsed = self.elapsed
        if here <= 0 or elapsed <= 0:
            return None
        return elapsed, here, left

    @property
    def rate(self) -> float | None:
        """Case runs scored per second, counting only work done here; ``None`` before there is any.

        Cases taken from the cache or a resumed result (:attr:`reused`) cost no time, so they do not set the pace.
        """
        pace = self._pace()
        return pace[1] / pace[0] if pace is not None else None

    @property
    def eta(self) -> float | None:
        """Seconds left at :attr:`rate` (``None`` before there is a rate, ``0.0`` once ended)."""
        if self._ended_at is not None:
            return 0.0
        pace = self._pace()
        if pace is None:
            return None
        elapsed, here, left = pace
        return elapsed / here * left

    def run_rate(self, run: RunState) -> float | None:
        """``run``'s cases per second in its current phase, or over the whole run once it ended.

        Only work done here counts: cases taken from the cache or a resumed result come at no cost.
        """
        with self._lock:
            if run.ended is not None and run.started is not None:
                elapsed, done = run.ended - run.started, run.evaluation_done - run.reused
            elif run.phase_started is not None and run.phase in (INFERENCE, EVALUATION):
                elapsed = self.now() - run.phase_started
                if run.phase == INFERENCE:
                    done = run.inference_done - run.inference_reused
                else:
                    done = run.evaluation_done - run.reused
            else:
                return None
        return done / elapsed if elapsed > 0 and done > 0 else None

    def finished_work(
        self, eval_set: EvalSet, *, as_left: bool = True
    ) -> tuple[list[CaseRecord], list[list[InferenceResult]]]:
        """What the evaluation did before it stopped, for its partial report: case results and each run's inferences.

        Both are by run, for the runs up to the last one that did anything. With ``as_left``, a run that ended
        holds the case results its callbacks left, in their order (:meth:`run_ended`). The others hold the
        case results as each was scored, in eval-set order; there a case the agent finished but that was not
        scored yet keeps its turns as a ``not_evaluated`` result (re-scoring the report scores it), and one
        whose inference failed is failed with that error, as scoring would make it.
        """
        with self._lock:
            scored_by_run = {
                run: [case if isinstance(case, CaseRecord) else CaseRecord(case) for case in results]
                for run, results in self._scored.items()
            }
            inferred_by_run = {run: list(inferences) for run, inferences in self._inferred.items()}
            ended = {run: list(records) for run, records in self._ended.items()} if as_left else {}
        position = {case.eval_id: index for index, case in reversed(list(enumerate(eval_set.eval_cases)))}
        by_id = eval_set.cases_by_id()

        def in_set_order(eval_id: str) -> int:
            return position.get(eval_id, len(position))

        cases: list[CaseRecord] = []
        inferences: list[list[InferenceResult]] = []
        for run_id in range(1, max([*inferred_by_run, *scored_by_run, *ended], default=0) + 1):
            run_inferences = sorted(inferred_by_run.get(run_id, []), key=lambda item: in_set_order(item.eval_case_id))
            inferences.append(run_inferences)
            if run_id in ended:
                cases += ended[run_id]
                continue
            scored = scored_by_run.get(run_id, [])
            done = {case.row.eval_id for case in scored}
            scored += [
                CaseRecord(_unscored(by_id.get(inference.eval_case_id), inference, run_id))
                for inference in run_inferences
                if inference.eval_case_id not in done
            ]
            cases += sorted(scored, key=lambda case: in_set_order(case.row.eval_id))
        return cases, inferences


def _unscored(case: EvalCase | None, inference: InferenceResult, run_id: int) -> EvalCaseResult:
    # No error message: the case did nothing wrong, and one would make summaries count it as failed.
    if inference.status != EvalStatus.PASSED:
        return failed_case_result(
            inference.eval_set_id, inference, inference.error_message, inference.error_type or ErrorType.OTHER, run_id
        )
    expected: list[Invocation | None] = list(inference.expected_inferences or (case.conversation if case else []))
    if len(expected) != len(inference.inferences):
        expected = [None] * len(inference.inferences)
    return EvalCaseResult(
        eval_set_id=inference.eval_set_id,
        eval_id=inference.eval_case_id,
        run_id=run_id,
        final_eval_status=EvalStatus.NOT_EVALUATED,
        eval_metric_result_per_invocation=[
            EvalMetricResultPerInvocation(actual_invocation=actual, expected_invocation=wanted)
            for actual, wanted in zip(inference.inferences, expected, strict=True)
        ],
        session_id=inference.session_id,
        user_id=inference.user_id,
    )
