"""Run accounting shared by the progress displays; the displays themselves only draw.

Every callback's arguments say which run they belong to (``args.run_id``), so parallel runs land on
their own rows in any order. Callbacks run on the event loop thread, so no locking is needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from agenteval.context import EvalContext
from agenteval.errors import ProgressWarning, describe_exception
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
    CallbackFunction,
    Callbacks,
)
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
    "RunProgress",
    "plural",
]

A = TypeVar("A")
Clock = Callable[[], float]

INFERENCE = "inference"
EVALUATION = "evaluation"
CANCELLED = "cancelled"


class EvaluationProgress(Protocol):
    """What the evaluator drives: ``start``, then the callbacks during the run, then ``finish``."""

    def start(self, *, title: str, num_runs: int, cases_per_run: int, metric_names: list[str]) -> None:
        """Reset and show an empty display for ``num_runs`` runs of ``cases_per_run`` cases."""

    def callbacks(self) -> Callbacks:
        """The lifecycle callbacks that update the display."""

    def finish(self, *, report: EvaluationReport | None = None, error: BaseException | None = None) -> None:
        """Show the outcome: the report's summary, or the error that stopped the evaluation."""


@dataclass(slots=True, kw_only=True, eq=False)
class RunProgress:
    """Where one run stands. Compared by identity: two runs are never equal."""

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
    """Why the whole run stopped (a set-level failure or a cancellation); empty otherwise."""
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


def _is_interrupt(error: BaseException | None) -> bool:
    return isinstance(error, KeyboardInterrupt | asyncio.CancelledError)


class ProgressBase:
    """Run bookkeeping shared by the widget and the text bar; subclasses only draw."""

    def __init__(self, *, clock: Clock, refresh: float | None, min_interval: float) -> None:
        self._clock = clock
        self._refresh = refresh
        self._min_interval = min_interval
        self._tick: asyncio.TimerHandle | None = None
        self._broken = False
        self._reset("", 0, 0, [])

    def _reset(self, title: str, num_runs: int, cases_per_run: int, metric_names: list[str]) -> None:
        self.title = title
        self.cases_per_run = max(0, cases_per_run)
        self.metric_names = list(metric_names)
        self.runs: list[RunProgress] = [
            RunProgress(run=index, inference_total=self.cases_per_run, evaluation_total=self.cases_per_run)
            for index in range(1, max(0, num_runs) + 1)
        ]
        # "" while running, then "passed", "failed", "not evaluated" or "interrupted"; summary is the final line.
        self.outcome = ""
        self.summary = ""
        self._started: float | None = None
        self._finished: float | None = None
        self._last_draw = -math.inf
        self._stop_ticking()

    # ------------------------------------------------------------------ the protocol

    def start(self, *, title: str, num_runs: int, cases_per_run: int, metric_names: list[str]) -> None:
        """Reset and show an empty display; call it before every evaluation.

        Args:
            title: What is evaluated, usually the eval-set id.
            num_runs: Rows to show; more appear if more runs are seen.
            cases_per_run: The expected number of cases; corrected once a run knows its cases.
            metric_names: Shown once, as a static line.
        """
        self._broken = False
        self._reset(title, num_runs, cases_per_run, metric_names)
        self._started = self._clock()
        self._safely(self._draw_start)

    def callbacks(self) -> Callbacks:
        """The eight lifecycle callbacks that feed this display; none of them ever raises."""
        return Callbacks().register(
            "progress",
            Callback(
                before_inference_set=self._guard(self._before_inference_set),
                after_inference_set=self._guard(self._after_inference_set),
                before_inference_case=self._guard(self._before_inference_case),
                after_inference_case=self._guard(self._after_inference_case),
                before_evaluate_set=self._guard(self._before_evaluate_set),
                after_evaluate_set=self._guard(self._after_evaluate_set),
                before_evaluate_case=self._guard(self._before_evaluate_case),
                after_evaluate_case=self._guard(self._after_evaluate_case),
            ),
        )

    def finish(self, *, report: EvaluationReport | None = None, error: BaseException | None = None) -> None:
        """Turn the display green or red and show the final line.

        Args:
            report: The evaluation's report, when it completed.
            error: What stopped the evaluation (``KeyboardInterrupt`` shows as interrupted).
        """
        self._stop_ticking()
        if self._started is None:
            self._started = self._clock()
        self._finished = self._clock()
        failed = error is not None or any(run.failing for run in self.runs)
        if report is not None and report.overall_status == EvalStatus.FAILED:
            failed = True
        if _is_interrupt(error):
            self.outcome = "interrupted"
        elif failed:
            self.outcome = "failed"
        elif report is not None and report.overall_status == EvalStatus.NOT_EVALUATED:
            self.outcome = "not evaluated"
        else:
            self.outcome = "passed"
        self._safely(self._finish, report, error)

    def _finish(self, report: EvaluationReport | None, error: BaseException | None) -> None:
        self.summary = self._summary(report, error)
        self._draw_finish(error)

    # ------------------------------------------------------------------ callbacks

    def _guard(self, update: Callable[[A], None]) -> CallbackFunction[A]:
        def callback(context: EvalContext, args: A) -> None:
            self._safely(update, args)

        return callback

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

    def _before_inference_set(self, args: BeforeInferenceSetArgs) -> None:
        run = self._run(args.run_id)
        self._enter_phase(run, INFERENCE)

    def _before_inference_case(self, args: BeforeInferenceCaseArgs) -> None:
        self._run(args.run_id).running[(INFERENCE, args.eval_case_id)] = self._clock()

    def _after_inference_case(self, args: AfterInferenceCaseArgs) -> None:
        run = self._run(args.run_id)
        result = args.result
        run.running.pop((INFERENCE, result.eval_case_id), None)
        run.inference_done += 1
        run.inference_total = max(run.inference_total, run.inference_done)
        if args.reused:
            run.inference_reused += 1
            run.reused_inferences.add(result.eval_case_id)
        if result.error_message or result.status == EvalStatus.FAILED:
            self._count_error(run, result.eval_case_id)
        self._update()

    def _after_inference_set(self, args: AfterInferenceSetArgs) -> None:
        run = self._run(args.run_id)
        if args.results is not None:
            run.inference_total = run.evaluation_total = len(args.results)
        if args.error is not None:
            self._stop_run(run, args.error)
        else:
            self._update()

    def _before_evaluate_set(self, args: BeforeEvaluateSetArgs) -> None:
        run = self._run(args.run_id)
        run.evaluation_total = len(args.request.inference_results)
        self._enter_phase(run, EVALUATION)

    def _before_evaluate_case(self, args: BeforeEvaluateCaseArgs) -> None:
        self._run(args.run_id).running[(EVALUATION, args.eval_case_id)] = self._clock()

    def _after_evaluate_case(self, args: AfterEvaluateCaseArgs) -> None:
        run = self._run(args.run_id)
        case_id = args.inference_result.eval_case_id
        run.running.pop((EVALUATION, case_id), None)
        run.evaluation_done += 1
        run.evaluation_total = max(run.evaluation_total, run.evaluation_done)
        if args.reused and case_id in run.reused_inferences:
            run.reused += 1
        result = args.result
        message = (result.error_message if result is not None else "") or args.inference_result.error_message
        if result is None or args.error is not None or message:
            self._count_error(run, case_id)
        elif result.final_eval_status == EvalStatus.FAILED:
            run.failed += 1
        elif result.final_eval_status == EvalStatus.PASSED:
            run.passed += 1
        else:
            run.not_evaluated += 1
        self._update()

    def _after_evaluate_set(self, args: AfterEvaluateSetArgs) -> None:
        run = self._run(args.run_id)
        if args.error is not None:
            self._stop_run(run, args.error)
            return
        run.ended = self._clock()
        run.phase = "done"
        run.running.clear()
        self._run_ended(run)

    # ------------------------------------------------------------------ bookkeeping

    def _run(self, run_id: int) -> RunProgress:
        """The row of run ``run_id`` (a service used on its own numbers no run: its calls share row 1)."""
        number = max(run_id, 1)
        while len(self.runs) < number:
            run = RunProgress(
                run=len(self.runs) + 1, inference_total=self.cases_per_run, evaluation_total=self.cases_per_run
            )
            self.runs.append(run)
            self._draw_new_run(run)
        return self.runs[number - 1]

    def _enter_phase(self, run: RunProgress, phase: str) -> None:
        now = self._clock()
        if run.started is None:
            run.started = now
        if self._started is None:
            self._started = now
        run.phase = phase
        run.phase_started = now
        self._start_ticking()
        self._update(force=True)

    def _count_error(self, run: RunProgress, case_id: str) -> None:
        if case_id not in run.errored_cases:
            run.errored_cases.add(case_id)
            run.errors += 1

    def _stop_run(self, run: RunProgress, error: BaseException) -> None:
        if run.finished:
            # Pipelined, a stopped run reports its error at the end of both phases: it ended at the first.
            return
        run.error = CANCELLED if _is_interrupt(error) else describe_exception(error)
        run.ended = self._clock()
        run.running.clear()
        self._run_ended(run)

    def _run_ended(self, run: RunProgress) -> None:
        if all(run.finished for run in self.runs):
            self._stop_ticking()
        self._draw_run_end(run)
        self._update(force=True)

    def _update(self, *, force: bool = False) -> None:
        # Throttled like tqdm: every trait change is a comm message, every text redraw a write.
        now = self._clock()
        if force or now - self._last_draw >= self._min_interval:
            self._last_draw = now
            self._draw()

    # ------------------------------------------------------------------ periodic refresh

    def _start_ticking(self) -> None:
        # Without events nothing would redraw, so a hung case would freeze the clock; tick instead.
        if self._refresh is None or self._refresh <= 0 or self._tick is not None or self._finished is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # driven by hand, outside an event loop
            return
        self._tick = loop.call_later(self._refresh, self._on_tick)

    def _on_tick(self) -> None:
        self._tick = None
        if self._finished is not None or self._broken:
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

    def _now(self) -> float:
        return self._finished if self._finished is not None else self._clock()

    def _elapsed(self) -> float:
        return self._now() - self._started if self._started is not None else 0.0

    def _run_rate(self, run: RunProgress, now: float) -> float | None:
        # Only work done here: cases taken from the cache or a resumed result come at no cost.
        if run.ended is not None and run.started is not None:
            elapsed, done = run.ended - run.started, run.evaluation_done - run.reused
        elif run.phase_started is not None and run.phase in (INFERENCE, EVALUATION):
            elapsed = now - run.phase_started
            if run.phase == INFERENCE:
                done = run.inference_done - run.inference_reused
            else:
                done = run.evaluation_done - run.reused
        else:
            return None
        return done / elapsed if elapsed > 0 and done > 0 else None

    def run_text(self, run: RunProgress) -> str:
        """One run's counts, elapsed time and rate, e.g. ``4 passed, 1 failed, 0 errors · 1.2 s · 4.1 cases/s``.

        Cases taken whole from the cache or a resumed result are said (``3 reused``) and left out of the rate.
        """
        now = self._now()
        parts = [_counts(run.passed, run.failed, run.errors, run.not_evaluated)]
        if run.reused:
            parts.append(f"{run.reused} reused")
        if run.started is not None:
            parts.append(_duration((run.ended if run.ended is not None else now) - run.started))
            rate = self._run_rate(run, now)
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
        """The running totals: counts over all runs, elapsed time, rate, and the oldest case in flight."""
        now = self._now()
        elapsed = self._elapsed()
        evaluated = sum(run.evaluation_done - run.reused for run in self.runs)
        parts = [_counts(*self._totals()), _duration(elapsed)]
        if elapsed > 0 and evaluated:
            parts.append(f"{evaluated / elapsed:.1f} cases/s")
        waiting = self._waiting_on(now)
        if waiting:
            parts.append(waiting)
        return " · ".join(parts)

    def _summary(self, report: EvaluationReport | None, error: BaseException | None) -> str:
        marker = self.outcome.upper()
        head = f"{marker} {self.title}:" if self.title else f"{marker}:"
        passed, failed, errors, not_evaluated = self._totals()
        elapsed = _duration(self._elapsed())
        if report is not None and error is None:
            statuses = [summary.overall_status for summary in report.case_summaries]
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
        if error is not None and not _is_interrupt(error):
            text += f"; {describe_exception(error)}"
        return text

    # ------------------------------------------------------------------ drawing (subclasses)

    def _draw_start(self) -> None:
        raise NotImplementedError

    def _draw(self) -> None:
        raise NotImplementedError

    def _draw_new_run(self, run: RunProgress) -> None:
        """A run beyond those announced by ``start`` appeared."""

    def _draw_run_end(self, run: RunProgress) -> None:
        """A run ended; the live display is redrawn right after."""

    def _draw_finish(self, error: BaseException | None) -> None:
        raise NotImplementedError
