"""The :class:`Evaluator` facade: run an eval set against an agent, N times, and save the result."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agenteval._presentation import presenter
from agenteval._util.gc_tuning import fewer_collections
from agenteval._util.loop_watchdog import watching
from agenteval._util.name_checks import check_names
from agenteval._util.sync_bridge import run_sync
from agenteval._util.terminal import printable
from agenteval._util.threads import DaemonDefaultExecutor
from agenteval._util.trpc_json import limited_depth
from agenteval.aggregation import (
    AllPassAggregator,
)
from agenteval.analysis._reanalysis import original_aggregator
from agenteval.analysis.report import (
    EvaluationReport,
    ReportPlan,
    build_recorded_report,
    build_report,
    warn_if_eval_set_changed,
)
from agenteval.cache.store import Cache
from agenteval.errors import (
    ConfigError,
    NotFoundError,
    ResumeWarning,
    SaveError,
    attach_report,
    report_of,
    rewrap,
    warn_user,
)
from agenteval.evalresult._prepare import new_result_id
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalSetResult
from agenteval.evalresult.provenance import PARTIAL_PREFIX, Provenance
from agenteval.evalresult.records import CaseRecord, CaseRecorder
from agenteval.evalset.models import EvalSet
from agenteval.evaluation._journaling import journal_callbacks, open_journal
from agenteval.evaluation._reuse import (
    Resumed,
)
from agenteval.evaluation._support import RecordedRun, RunOutcome, in_runs
from agenteval.evaluation.ledger import RunLedger
from agenteval.evaluation.options import EvaluationOptions
from agenteval.evaluation.plan import (
    EvaluationPlan,
    describe,
    metric_list,
    plan_evaluation,
    refuse_unknown_fields_in,
)
from agenteval.evaluation.run import EvaluationRun
from agenteval.evaluators.registry import EvaluatorRegistry
from agenteval.metric.models import EvalMetric
from agenteval.runner.base import Runner, TurnRequest, TurnResult
from agenteval.runner.function import AgentFunction, as_runner
from agenteval.service._metric_checks import check_metrics
from agenteval.service.local import CaseLimits, LocalService, ServiceRuntime
from agenteval.service.types import EvaluateConfig, EvaluateRequest, InferenceRequest, RecordedRunResult

__all__ = ["Evaluator"]

_log = logging.getLogger("agenteval")


class Evaluator:
    """Evaluates an agent on eval sets: runs every case (``num_runs`` times), scores, saves.

    Example::

        ev = ae.Evaluator("math-eval-app", my_agent,
                          eval_set_manager=ae.LocalEvalSetManager("data"),
                          metric_manager=ae.LocalMetricManager("data"))
        report = ev.evaluate("math-basic")
        report.cases          # one row per (run, case)

    Args:
        app_name: The app whose eval sets, metrics and results are used.
        agent: The agent under test: a :class:`~agenteval.runner.Runner`, or a plain or async function
            ``fn(message)`` / ``fn(message, turn)`` returning the reply. Leave it out to only
            :meth:`rescore` reports and evaluate trace-mode cases (which replay recorded turns).
        **options: Any field of :class:`EvaluationOptions`, e.g. ``num_runs=3``, ``judge=model`` or
            ``cache=True``. Each is described where it is declared, in
            :class:`~agenteval.evaluation.EvaluationOptions` or :class:`~agenteval.service.ServiceOptions`;
            README's option table sums them up. ``callbacks`` fire in the order given below.

    Each run scores every case as soon as its inference ends
    (:meth:`~agenteval.service.LocalService.infer_and_evaluate`), so scoring overlaps the agent's
    work. The callbacks of a run therefore fire in another order than the service's ``inference``
    then ``evaluate`` (the reference's order, still that of ``LocalService``), and each still fires
    once per run or once per case:

    1. ``before_inference_set``, then ``before_evaluate_set``, before any case runs (in the reference
       it comes after ``after_inference_set``); its ``request.inference_results`` already holds one
       result per case, in eval-set order, each filled in when its case's inference ends (``status``
       ``None`` until then).
    2. Per case: ``before_inference_case`` → ``after_inference_case`` → ``before_evaluate_case`` →
       ``after_evaluate_case``. Cases interleave: early cases' evaluate callbacks fire before later
       cases' inference callbacks and before ``after_inference_set``.
    3. ``after_inference_set`` once every case's inference has ended (some cases may still be being
       scored), then ``after_evaluate_set`` once every case is scored.

    With ``parallel_inference`` and ``parallel_evaluation`` both off, each case is scored before the
    next one runs. A failing ``before_evaluate_set`` callback now stops a run before any case runs
    (``after_inference_set`` receives its error); a failing ``after_inference_set`` callback is
    raised once every case is scored, a failing case-level evaluate callback once the other cases
    are (with ``parallel_evaluation`` off, scoring stops at that case); the partial report of an
    interrupted :meth:`evaluate` keeps every case scored by then. A run's error reads
    ``run N: <the service's error>``.
    """

    def __init__(self, app_name: str, agent: Runner | AgentFunction | None = None, **options: Any) -> None:
        check_names(app_name=app_name)
        self.app_name = app_name
        self.runner: Runner | None = as_runner(agent) if agent is not None else None
        self.options = EvaluationOptions().updated(options)
        self._caches: dict[Path, Cache] = {}

    def evaluate(
        self,
        eval_set: str | EvalSet,
        *,
        metrics: Sequence[EvalMetric] | None = None,
        resume: EvaluationReport | str | None = None,
        **overrides: Any,
    ) -> EvaluationReport:
        """Evaluate an eval set and return the report. Works in scripts and inside Jupyter.

        Args:
            eval_set: An eval-set id in the eval-set manager, or an :class:`~agenteval.EvalSet`
                object to evaluate directly.
            metrics: Metrics to use instead of the metric manager's for this eval set.
            resume: Carry on an interrupted evaluation: the report it left (``exc.report``) or the id of
                its saved partial result. Only the (run, case) pairs it did not finish run; the final
                result takes the partial result's id, so it replaces it in the result store (unless
                another evaluation resumed it first and replaced it: then it gets a new id, with a
                warning). Cases edited since, and pairs whose agent failed, run again; metrics changed
                since are scored again.
            **overrides: Per-call values for any constructor option.

        Returns:
            The report; its ``result`` has been saved to the result manager.

        Raises:
            ConfigError: Bad options.
            NotFoundError: The eval set does not exist.
            SaveError: Saving failed; ``exc.report`` holds the complete, unsaved report.
            AgentEvalError: A set-level failure (e.g. a callback raised).
        """
        return run_sync(self.aevaluate(eval_set, metrics=metrics, resume=resume, **overrides))

    async def aevaluate(
        self,
        eval_set: str | EvalSet,
        *,
        metrics: Sequence[EvalMetric] | None = None,
        resume: EvaluationReport | str | None = None,
        **overrides: Any,
    ) -> EvaluationReport:
        """The async twin of :meth:`evaluate`: ``report = await ev.aevaluate("math-basic")``."""
        return await self._watched(eval_set, metrics, resume, overrides, None)

    def start(
        self,
        eval_set: str | EvalSet,
        *,
        metrics: Sequence[EvalMetric] | None = None,
        resume: EvaluationReport | str | None = None,
        **overrides: Any,
    ) -> EvaluationRun:
        """Start an evaluation in the background on the running event loop and return at once.

        In Jupyter the kernel's own loop runs it (no thread, no loop patching), so the cell returns and
        later cells can look at the run while it goes: ``run.cases`` and ``run.metrics`` (what has
        finished), ``run.progress``, ``run.elapsed``, ``run.eta``; ``report = await run`` waits for the
        report (``run.result()`` once ``run.done``); ``run.cancel()`` stops it, saving the finished cases
        as a partial result (``run.report``, which ``resume=`` carries on). Several runs (two agent
        versions, say) can go at once, each with its own progress. Displaying ``run`` shows a live board
        (which replaces the progress bar, off unless ``progress=True`` is given).

        Args:
            eval_set: As for :meth:`evaluate`.
            metrics: As for :meth:`evaluate`.
            resume: As for :meth:`evaluate`.
            **overrides: As for :meth:`evaluate`; the options are checked here, before the run is scheduled.

        Returns:
            The running evaluation.

        Raises:
            ConfigError: No event loop is running (in a script, call :meth:`evaluate`), or bad options.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise ConfigError(
                "Evaluator.start needs a running event loop, as a Jupyter kernel has: in a script, call "
                "ev.evaluate(...) (or `await ev.aevaluate(...)` inside async code)"
            ) from None
        # The run's own display (its live board) takes the progress bar's place unless one is asked for.
        overrides = {"progress": False, **overrides}
        options = self.options.updated(overrides)
        title = f"{self.app_name} / {eval_set if isinstance(eval_set, str) else eval_set.eval_set_id}"
        cases = len(options.eval_case_ids) or (len(eval_set.eval_cases) if isinstance(eval_set, EvalSet) else 0)
        ledger = RunLedger(
            title=title,
            num_runs=options.num_runs,
            cases_per_run=cases,
            metric_names=[metric.metric_name for metric in metrics or () if metric is not None],
        )
        run = EvaluationRun(ledger)
        run.attach(loop.create_task(self._watched(eval_set, metrics, resume, overrides, ledger)))
        return run

    async def _watched(
        self,
        eval_set: str | EvalSet,
        metrics: Sequence[EvalMetric] | None,
        resume: EvaluationReport | str | None,
        overrides: Mapping[str, Any],
        ledger: RunLedger | None,
    ) -> EvaluationReport:
        loop = asyncio.get_running_loop()
        _give_daemon_default_executor(loop)
        # Watched here too, not only by evaluate(): in a notebook, a case blocking the kernel's loop is named.
        with fewer_collections(), watching(loop):
            return await self._evaluate(eval_set, metrics, resume, overrides, ledger)

    async def _evaluate(
        self,
        eval_set: str | EvalSet,
        metrics: Sequence[EvalMetric] | None,
        resume: EvaluationReport | str | None,
        overrides: Mapping[str, Any],
        ledger: RunLedger | None = None,
    ) -> EvaluationReport:
        """Plan, run and finish one evaluation; ``ledger`` is its record when the caller keeps one (``start``)."""
        options = self.options.updated(overrides)
        plan = await plan_evaluation(self.app_name, self.runner, eval_set, metrics, resume, options, self._caches)
        # One record of the evaluation: the partial report, the run (start()) and the progress display read it.
        ledger = ledger if ledger is not None else RunLedger()
        ledger.plan(
            title=f"{self.app_name} / {plan.eval_set.eval_set_id}",
            num_runs=options.num_runs,
            cases_per_run=len(plan.cases),
            metric_names=[metric.metric_name for metric in plan.metrics],
        )
        presenter().progress(ledger, options.progress)
        # The id a partial result is saved under, and the journal's: known now, and new even for a resume, which
        # never writes to the result it resumes before its final save (then under that result's id).
        result_id = new_result_id(self.app_name, plan.eval_set.eval_set_id)
        journal = open_journal(
            options.result_manager,
            self.app_name,
            result_id,
            eval_set_id=plan.eval_set.eval_set_id,
            provenance=plan.provenance,
        )
        # Observed, rather than followed: a case whose after_evaluate_case callback raises was scored, and
        # the ledger (and the journal) keep it.
        observers = ledger.callbacks() if journal is None else ledger.callbacks().merged(journal_callbacks(journal))
        run_options = replace(options, callbacks=options.callbacks.observed_by(observers))
        # Each scored case is written as JSON once its callbacks are done with it; the ledger keeps that.
        recorder = CaseRecorder(ledger.keep)
        try:
            runs = await self._run_all(plan, run_options, recorder, ledger.run_ended)
            report = await self._finish(plan, runs, result_id)
        except BaseException as exc:
            if not isinstance(exc, SaveError):
                await self._keep_finished(exc, plan, ledger, result_id)
            if journal is not None:
                # Kept unless empty: it holds what finished when no partial result could be saved (a failed save).
                journal.close()
                if not journal.cases_written:
                    journal.discard()
            ledger.end(report=report_of(exc), error=exc)
            raise
        if journal is not None:
            journal.discard()  # the save removed it; this closes it
        ledger.end(report=report)
        return report

    async def _run_all(
        self,
        plan: EvaluationPlan,
        options: EvaluationOptions,
        recorder: CaseRecorder,
        ended: Callable[[int, Sequence[CaseRecord]], None],
    ) -> list[RecordedRun]:
        """Every run of the plan's cases; each run is given the plan's eval set, so all see one consistent set.

        ``ended`` is told the case results of each run that ends, as its callbacks left them.
        """
        executor = options.executor
        # One cap for all runs: concurrent runs share ``parallelism`` instead of multiplying it.
        service = LocalService(
            self._agent(),
            options,
            runtime=ServiceRuntime(
                limits=CaseLimits.of(options.parallelism),
                reuse=plan.reuse,
                cassettes=plan.cassettes,
                executor=None if executor == "local" else executor,
                recorder=recorder,
            ),
        )
        # The plan checked them, more strictly than each run would.
        service.metrics_checked(plan.metrics, options)

        async def run(run_id: int) -> RecordedRun:
            request = InferenceRequest(
                app_name=self.app_name,
                eval_set_id=plan.eval_set.eval_set_id,
                eval_case_ids=list(options.eval_case_ids),
                run_id=run_id,
                eval_set=plan.eval_set,
                eval_cases=plan.cases,
            )
            try:
                # A config of its own per run: a before_evaluate_set callback's edit of it stays in its run.
                config = EvaluateConfig(eval_metrics=list(plan.metrics))
                inferences, scored = await service.infer_and_evaluate(request, config)
            except Exception as exc:
                raise rewrap(f"run {run_id}", exc) from exc
            # The runtime's recorder made the run's result hold its records.
            assert isinstance(scored, RecordedRunResult)
            records = scored.records()
            ended(run_id, records)
            return inferences, records

        with limited_depth(plan.depth_limit), _recording(plan, options.num_runs):
            if executor != "local":
                await executor.aconnect()
            try:
                return await in_runs(run, options.num_runs, parallel=options.parallel_runs)
            finally:
                if plan.reuse is not None:
                    # Also when interrupted: what finished is kept for the next evaluation.
                    plan.reuse.flush()

    async def _finish(self, plan: EvaluationPlan, runs: Sequence[RecordedRun], planned_id: str) -> EvaluationReport:
        """The report of the runs, saved under ``planned_id``; a resume saves under the id of the result it resumed.

        (Under a new id when another evaluation resumed that result first and replaced it.)
        """
        provenance = plan.provenance_after_runs()
        async with self._final_result_id(plan.options, plan.eval_set, plan.resumed) as result_id:
            result_id = result_id or planned_id
            report = await build_recorded_report(
                plan.report_plan(provenance=provenance.model_copy(update={"finished_at": time.time()})),
                [case for _, cases in runs for case in cases],
                [inferences for inferences, _ in runs],
                execution_time=time.perf_counter() - plan.started,
                result_id=result_id,
            )
            await self._save(plan.options, report)
        return report

    @contextlib.asynccontextmanager
    async def _final_result_id(
        self, options: EvaluationOptions, eval_set: EvalSet, resumed: Resumed | None
    ) -> AsyncIterator[str | None]:
        """The id to save the final result under, for the ``with`` block that builds and saves it.

        A resume takes the id of the result it resumed, replacing it, as long as the store still holds that
        result: when another evaluation resumed it first and replaced it, this one gets a new id and says so,
        rather than overwriting that evaluation's result. ``None`` (a new id) when not resuming.
        """
        if resumed is None or not resumed.result_id:
            yield None
            return
        resumed_id = resumed.result_id
        async with _saving_over(self.app_name, resumed_id):
            try:
                stored = await options.result_manager.get(self.app_name, resumed_id)
            except NotFoundError:
                stored = None
            except Exception as exc:
                raise rewrap(f"read result {resumed_id} to save the resumed evaluation over it", exc) from exc
            if stored is None or _saved_as(stored) == _saved_as(resumed.report.result):
                yield resumed_id
                return
            result_id = new_result_id(self.app_name, eval_set.eval_set_id)
            warn_user(
                printable(
                    f"result {resumed_id!r}, which this evaluation resumed, was replaced by another evaluation that"
                    f" resumed it first; this one is saved as {result_id!r} instead, so that neither result is lost"
                ),
                ResumeWarning,
            )
            yield result_id

    async def _save(self, options: EvaluationOptions, report: EvaluationReport) -> None:
        try:
            await report.asave(options.result_manager)
        except Exception as exc:
            raise SaveError(f"save eval set result: {exc}", report) from exc

    async def _keep_finished(
        self, error: BaseException, plan: EvaluationPlan, ledger: RunLedger, planned_id: str
    ) -> None:
        """Save the cases that finished before ``error`` as a partial result, and attach its report.

        An interruption (Ctrl-C, a cancelled task) before any case finished leaves an empty partial result.
        Best effort: a failure here is logged and never hides ``error``.
        """
        # Ctrl-C in a kernel reaches the evaluation as the cancellation of its task.
        stopped_by = (
            "cancellation (Ctrl-C or a cancelled task)"
            if isinstance(error, asyncio.CancelledError)
            else type(error).__name__
        )
        cases, inferences = ledger.finished_work(plan.eval_set)
        if not cases and not isinstance(error, asyncio.CancelledError | KeyboardInterrupt):
            # An error before any case finished (a callback, the store) leaves nothing to carry on: fixed, the
            # evaluation runs again. One stopped on purpose leaves an empty partial result that resume= takes.
            return
        result_id = planned_id
        try:
            try:
                report = await self._saved_partial(plan, cases, inferences, stopped_by, result_id)
            except Exception:
                if not ledger.any_run_ended:
                    raise
                # What an ended run's after_evaluate_set callbacks left may be what cannot be summarized or
                # saved (a case result they added without a run id): the cases as each was scored then.
                cases, inferences = ledger.finished_work(plan.eval_set, as_left=False)
                report = await self._saved_partial(plan, cases, inferences, stopped_by, result_id)
            attach_report(error, report)
            # Said twice, escaped for a terminal: the note shows in the traceback of a script, the log
            # line in a notebook.
            what = (
                f"the {len(cases)} finished case results were saved"
                if cases
                else "no case had finished: an empty partial result, which resume= carries on, was saved"
            )
            saved = printable(
                f"{what} as {result_id} (ae.EvaluationReport.load(result_manager, {self.app_name!r}, {result_id!r}))"
            )
            error.add_note(saved)
            _log.warning("evaluation of %s stopped by %s; %s", printable(plan.eval_set.eval_set_id), stopped_by, saved)
        except Exception as exc:
            _log.warning("could not keep the finished cases of an interrupted evaluation: %s", printable(str(exc)))

    @staticmethod
    async def _saved_partial(
        plan: EvaluationPlan,
        cases: list[CaseRecord],
        inferences: list[list[InferenceResult]],
        stopped_by: str,
        result_id: str,
    ) -> EvaluationReport:
        """The partial report of ``cases``, saved under ``result_id``."""
        # Only the runs that were reached: runs never started are not failures.
        num_runs = len(inferences)
        provenance = plan.provenance_after_runs().model_copy(
            update={
                "finished_at": time.time(),
                "num_runs": num_runs,
                "derived_from": f"{PARTIAL_PREFIX}stopped by {stopped_by}",
                "partial": True,
            }
        )
        report = await build_recorded_report(
            plan.report_plan(num_runs=num_runs, provenance=provenance),
            cases,
            inferences,
            execution_time=time.perf_counter() - plan.started,
            result_id=result_id,
            result_name=f"{result_id} (partial)",
        )
        await report.asave(plan.options.result_manager)
        return report

    def rescore(
        self,
        report: EvaluationReport,
        *,
        metrics: Sequence[EvalMetric] | None = None,
        **overrides: Any,
    ) -> EvaluationReport:
        """Score a report's stored agent turns again, with new or changed metrics; the agent is not run.

        Use it to try a metric, a threshold in a criterion, a judge or an evaluator on what the
        agent already did. Each run's turns are scored as they were recorded; the result is a new
        report (not saved: call ``report.save(...)`` to keep it), and ``report`` is unchanged.

        Args:
            report: A report from :meth:`evaluate` (or loaded with ``EvaluationReport.load`` and
                given its eval set).
            metrics: The metrics to score with (default: the report's own).
            **overrides: Per-call values for constructor options (``aggregator``, ``registry``,
                ``judge``, ``parallel_evaluation``, …). Cases are aggregated with the aggregator
                that produced ``report`` unless ``aggregator`` is given here.

        Raises:
            ConfigError: The report has no eval set, a metric is misconfigured, or ``report`` was
                loaded from a file made with a custom aggregator and none is given.
        """
        return run_sync(self.arescore(report, metrics=metrics, **overrides))

    async def arescore(
        self,
        report: EvaluationReport,
        *,
        metrics: Sequence[EvalMetric] | None = None,
        **overrides: Any,
    ) -> EvaluationReport:
        """The async twin of :meth:`rescore`."""
        with fewer_collections():
            return await self._rescore(report, metrics, overrides)

    async def _rescore(
        self, report: EvaluationReport, metrics: Sequence[EvalMetric] | None, overrides: Mapping[str, Any]
    ) -> EvaluationReport:
        started = time.perf_counter()
        started_at = time.time()
        options = self.options.updated(overrides)
        if report.eval_set is None:
            raise ConfigError(
                "this report has no eval set, which re-scoring needs: load it with "
                "EvaluationReport.load(..., eval_set=...)"
            )
        warn_if_eval_set_changed(report.provenance, report.eval_set, "re-scoring with")
        eval_metrics = metric_list(metrics) if metrics is not None else list(report.eval_metrics)
        check_metrics(eval_metrics, options)
        if options.strict:
            refuse_unknown_fields_in(report.eval_set, eval_metrics)
        if "aggregator" not in overrides:
            # Cases are aggregated as the report's were; a loaded report does not know its
            # aggregator, so this Evaluator's own (if not the default) is taken to be it.
            aggregator = report.aggregator
            if aggregator is None and isinstance(options.aggregator, AllPassAggregator):
                aggregator = await original_aggregator(report, "rescore(report, aggregator=...)")
            options = replace(options, aggregator=aggregator or options.aggregator)
        _check_evaluators(eval_metrics, options.registry)
        service = LocalService(
            self._agent(), options, runtime=ServiceRuntime(limits=CaseLimits.of(options.parallelism))
        )
        service.metrics_checked(eval_metrics, options)
        eval_set = report.eval_set
        # Scoring reads the agent's records and never changes them: both reports share them.
        stored = [list(run) for run in report.inference_results]

        async def run(run_id: int) -> RunOutcome:
            request = EvaluateRequest(
                app_name=self.app_name,
                eval_set_id=eval_set.eval_set_id,
                inference_results=stored[run_id - 1],
                evaluate_config=EvaluateConfig(eval_metrics=eval_metrics),
                run_id=run_id,
                eval_set=eval_set,
            )
            try:
                run_result = await service.evaluate(request)
            except Exception as exc:
                raise rewrap(f"run {run_id} evaluate", exc) from exc
            return stored[run_id - 1], run_result.eval_case_results

        runs = await in_runs(run, len(stored), parallel=options.parallel_runs)
        # The turns are the original agent's: what described it is carried over.
        original = report.provenance or Provenance()
        provenance = describe(self.app_name, self.runner, options, eval_set, eval_metrics, started_at).model_copy(
            update={
                "num_runs": len(stored),
                "derived_from": f"rescore of {report.result.eval_set_result_id or 'an unsaved report'}",
                **{name: getattr(original, name) for name in _AGENT_PROVENANCE},
            }
        )
        plan = ReportPlan(
            app_name=report.app_name,
            eval_set_id=report.eval_set_id,
            eval_set=eval_set,
            metrics=eval_metrics,
            num_runs=len(stored),
            aggregator=options.aggregator,
            provenance=provenance,
        )
        cases = [case for _, cases in runs for case in cases]
        return await build_report(plan, cases, stored, execution_time=time.perf_counter() - started)

    def _agent(self) -> Runner:
        return self.runner if self.runner is not None else _NoAgent()

    async def aclose(self) -> None:
        """Close the three stores."""
        for manager in (self.options.eval_set_manager, self.options.metric_manager, self.options.result_manager):
            await manager.close()

    def close(self) -> None:
        """Close the three stores (synchronous twin of :meth:`aclose`)."""
        run_sync(self.aclose())

    def __repr__(self) -> str:
        return f"Evaluator(app_name={self.app_name!r}, runner={self.runner!r}, num_runs={self.options.num_runs})"


def _give_daemon_default_executor(loop: asyncio.AbstractEventLoop) -> None:
    """Give ``loop`` a default executor on daemon threads, unless it has made its own.

    ``asyncio.run`` joins its loop's default executor's threads as it ends, so an agent's blocking call in
    ``asyncio.to_thread`` that Ctrl-C or ``turn_timeout`` left behind kept ``asyncio.run(ev.aevaluate(...))``,
    and the process, alive until the call returned. The loops :func:`~agenteval._util.sync_bridge.run_sync` makes have
    one already; this gives it to the caller's loop, whose executor behaves as asyncio's otherwise.
    """
    # asyncio makes the default executor on first use and offers no public way to ask whether it has.
    if getattr(loop, "_default_executor", False) is None:
        loop.set_default_executor(DaemonDefaultExecutor())


_SAVING_OVER_POLL = 0.01
"""Seconds between two looks at whether another evaluation of this process is done saving over a result."""

_saving: set[tuple[str, str]] = set()
_saving_lock = threading.Lock()


@contextlib.asynccontextmanager
async def _saving_over(app_name: str, result_id: str) -> AsyncIterator[None]:
    """One evaluation of this process at a time checks, then saves over, the stored result ``result_id``.

    A thread lock, so that evaluations on other threads' loops wait too; taken without blocking the loop.
    """
    key = (app_name, result_id)
    while True:
        with _saving_lock:
            if key not in _saving:
                _saving.add(key)
                break
        await asyncio.sleep(_SAVING_OVER_POLL)
    try:
        yield
    finally:
        with _saving_lock:
            _saving.discard(key)


def _saved_as(result: EvalSetResult) -> tuple[str, str, float | None]:
    """What tells one saved result from another saved under its id: its name and when and how it was made."""
    provenance = result.summary.provenance if result.summary is not None else None
    if provenance is None:
        return (result.eval_set_result_name, "", None)
    return (result.eval_set_result_name, provenance.derived_from, provenance.finished_at)


def _recording(plan: EvaluationPlan, num_runs: int) -> contextlib.AbstractContextManager[None]:
    """Cassettes on for the evaluation, each case-run's file name checked first; nothing without cassettes."""
    if plan.cassettes is None:
        return contextlib.nullcontext()
    for case in plan.cases:
        for run_id in range(1, num_runs + 1):
            plan.cassettes.file_for(plan.eval_set.eval_set_id, case.eval_id, run_id)
    return plan.cassettes.active()


def _check_evaluators(metrics: list[EvalMetric], registry: EvaluatorRegistry) -> None:
    """Re-scoring with a metric whose evaluator is missing would silently skip it: say so instead."""
    missing = [metric.metric_name for metric in metrics if metric.evaluator not in registry]
    if missing:
        raise ConfigError(
            f"no evaluator is registered for metric(s) {missing}: give each an evaluatorName that is registered "
            f"(registered: {registry.names()}), e.g. pass metrics=[...] to rescore"
        )


_AGENT_PROVENANCE = ("agent", "agent_label", "agent_version", "agent_code_hash", "turn_timeout", "cassette")
"""What a re-scored report's provenance takes from the original's: the agent whose turns it scores."""


class _NoAgent:
    """Stands in for a missing agent where none is called (trace-mode cases, re-scoring)."""

    async def run(self, request: TurnRequest) -> TurnResult:
        raise ConfigError("this Evaluator has no agent: pass one to ae.Evaluator(app_name, agent)")

    def __repr__(self) -> str:
        return "no agent"
