"""The local service: inference (run the agent on each case) and evaluate (score each case), apart or pipelined.

One engine, :class:`_Run`, drives all three calls: :meth:`LocalService.infer_and_evaluate` scores each case as soon
as its inference ends, :meth:`LocalService.inference` is the same run without scoring, and
:meth:`LocalService.evaluate` the same run from inferences already made. The per-case work is in
:mod:`agenteval.service._case`; every case travels with what the agent did on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Sequence
from typing import Any, Final, TypeVar

from agenteval._util.name_checks import check_names
from agenteval.context import EvalContext, use_context
from agenteval.errors import ConfigError, rewrap, warn_user
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalCaseResult
from agenteval.evalresult.records import CaseRecord
from agenteval.evalset.models import EvalCase, EvalSet
from agenteval.llm.judge import use_judge
from agenteval.metric.models import EvalMetric
from agenteval.metric.registry import MetricRegistry, active_metric_registry, use_metric_registry
from agenteval.runner.base import Runner
from agenteval.runner.function import AgentFunction, as_runner
from agenteval.service._case import (
    CaseExecutor,
    CaseLimits,
    ServiceRuntime,
    infer_one,
    run_callbacks,
    score_one,
)
from agenteval.service._metric_checks import check_metrics
from agenteval.service._scoring import CaseOrProblem, CriterionCopies, cases_of
from agenteval.service.callbacks import (
    AfterEvaluateSetArgs,
    AfterInferenceSetArgs,
    BeforeEvaluateSetArgs,
    BeforeInferenceSetArgs,
)
from agenteval.service.options import ServiceOptions
from agenteval.service.types import (
    EvalSetRunResult,
    EvaluateConfig,
    EvaluateRequest,
    InferenceRequest,
    RecordedRunResult,
)

__all__ = ["CaseExecutor", "CaseLimits", "LocalService", "ServiceRuntime"]

T = TypeVar("T")


class LocalService:
    """Runs inference and evaluation in this process.

    ``inference`` runs the agent on the cases of an eval set and records what it did;
    ``evaluate`` scores those records with metrics; ``infer_and_evaluate`` does both, scoring each
    case as soon as its inference ends. Failures inside one case (the agent raising,
    a bad case, an evaluator error) become a failed result with an ``error_message``; only set-level
    problems (bad request, unknown eval set, a set-level callback raising) raise.

    Args:
        runner: The agent under test: a :class:`~agenteval.runner.Runner` or a plain/async function.
        options: Service options; keyword arguments override single fields.
        runtime: What the service works with besides its options: shared case limits, finished work to
            reuse, cassettes, an executor (see :class:`ServiceRuntime`; default: none of them).
        **overrides: Fields of :class:`~agenteval.service.options.ServiceOptions`.
    """

    def __init__(
        self,
        runner: Runner | AgentFunction,
        options: ServiceOptions | None = None,
        *,
        runtime: ServiceRuntime | None = None,
        **overrides: Any,
    ) -> None:
        if runner is None:
            raise ConfigError("runner is nil")
        collaborators: dict[str, Any] = {name: overrides.pop(name) for name in _RUNTIME_FIELDS if name in overrides}
        self.runner: Runner = as_runner(runner)
        self.options: ServiceOptions = (options or ServiceOptions()).updated(overrides)
        self.runtime = runtime or ServiceRuntime()
        if collaborators:
            self.runtime = _runtime_from_keywords(runtime, collaborators)
        self._checked: tuple[object, ...] = ()

    async def close(self) -> None:
        """Release resources (nothing is held between calls)."""

    def metrics_checked(self, metrics: list[EvalMetric], options: ServiceOptions) -> None:
        """Say that ``metrics`` passed :func:`~agenteval.service._metric_checks.check_metrics` under ``options``.

        The :class:`~agenteval.Evaluator` checks an evaluation's metrics once, more strictly than a service
        call does, before any run: its runs then skip the service's own check.
        """
        self._checked = (list(metrics), *_checked_with(options))

    def _check_metrics_once(self, metrics: list[EvalMetric], options: ServiceOptions, *, where: str) -> None:
        """Check ``metrics`` unless they already passed.

        A service serves every run of an evaluation with the same metrics. Other metrics, a callback that
        changes them, or another registry or judge are checked again.
        """
        checked = (list(metrics), *_checked_with(options))
        if self._checked != checked:
            check_metrics(metrics, options, where=where)
            self._checked = checked

    # ------------------------------------------------------------------ inference

    async def inference(self, request: InferenceRequest, **overrides: Any) -> list[InferenceResult]:
        """Run the agent on the requested cases of an eval set.

        Args:
            request: App, eval set and (optionally) case ids. ``before_inference_set`` callbacks
                receive this object and may change it.
            **overrides: Per-call option overrides (``callbacks`` replaces, it does not merge).

        Returns:
            One result per selected case, in eval-set order (``[]`` when no case matched).

        Raises:
            ConfigError: An invalid request or option.
            NotFoundError: The eval set does not exist.
            CallbackError: A set-level callback raised.
        """
        _check_inference_request(request)
        options = self.options.updated(overrides)
        run = _Run(self, options, f"app={request.app_name}, evalSetID={request.eval_set_id}")
        context = await run.callbacks("before_inference_set", EvalContext(), BeforeInferenceSetArgs(request=request))
        return await run.with_after_set(
            "after_inference_set",
            context,
            lambda: run.infer_all(request, context, scoring=None),
            lambda results, error, start: AfterInferenceSetArgs(
                request=request, results=results, error=error, start_time=start
            ),
        )

    # ------------------------------------------------------------------ evaluate

    async def evaluate(self, request: EvaluateRequest, **overrides: Any) -> EvalSetRunResult:
        """Score inference results with the request's metrics.

        Nothing is saved; metrics run in order within a case, and a metric whose evaluator is not
        registered is skipped.

        Args:
            request: Inference results and metrics. ``before_evaluate_set`` callbacks may change it.
            **overrides: Per-call option overrides.

        Returns:
            One case result per inference result, in the same order.

        Raises:
            ConfigError: An invalid request, option or metric (before any case is scored), or a
                ``None`` entry in ``inference_results`` (when that entry's turn comes, so the
                after-set callbacks receive the error, as in the reference).
            CallbackError: A set-level or case-level evaluate callback raised.
        """
        if request is None:
            raise ConfigError("evaluate request is nil")
        check_names(app_name=request.app_name, eval_set_id=request.eval_set_id)
        if request.evaluate_config is None:
            raise ConfigError("evaluate config is nil")
        _check_given_set(request.eval_set, request.eval_set_id, "validate evaluate request")
        options = self.options.updated(overrides)
        run = _Run(self, options, f"app={request.app_name}, evalSetID={request.eval_set_id}")
        scoring = await run.begin_scoring(request)
        return await run.with_after_set(
            "after_evaluate_set",
            scoring.context,
            lambda: run.score_all(scoring, request.inference_results),
            lambda result, error, start: AfterEvaluateSetArgs(
                request=request, result=result, error=error, start_time=start
            ),
            start=scoring.start,
        )

    # ------------------------------------------------------------------ both, pipelined

    async def infer_and_evaluate(
        self, request: InferenceRequest, evaluate_config: EvaluateConfig, **overrides: Any
    ) -> tuple[list[InferenceResult], EvalSetRunResult]:
        """Run the agent on the requested cases and score each case as soon as its inference ends.

        What :meth:`inference` then :meth:`evaluate` (on all of its results, with ``evaluate_config``)
        return, with the same per-case functions, concurrency limits and errors, but scoring overlaps
        the agent's work instead of waiting for the slowest case. Each case is scored in a task of its
        own within the evaluation limit, so a case being scored holds no inference slot. With
        ``parallel_inference`` off the agent runs on one case at a time, in eval-set order; with
        ``parallel_evaluation`` off one case is scored at a time; with both off a case is scored
        before the next one runs.

        Callback order (both phases' callbacks still fire once per set and once per case):

        1. ``before_inference_set``; then, once the eval set is read, ``before_evaluate_set``, before
           any case runs. Its ``request`` is built from this call's (app, eval set, run id, the eval
           set it holds) and ``evaluate_config``; ``request.inference_results`` already holds one
           result per selected case, in eval-set order, each filled in place when its case's
           inference ends (until then its ``status`` is ``None`` and it has no turns). Editing the
           request's ``evaluate_config`` takes effect; editing ``inference_results`` does not change
           which cases are scored.
        2. Per case: ``before_inference_case`` → the agent → ``after_inference_case`` →
           ``before_evaluate_case`` → scoring → ``after_evaluate_case``. Cases interleave: the
           evaluate callbacks of early cases fire before later cases' inference callbacks.
        3. ``after_inference_set`` once every case's inference has ended (cases may still be being
           scored); ``after_evaluate_set`` last, after every case was scored.

        Errors are those of the two phases, with the same messages. A case that fails (agent, metric,
        case-level inference callback) becomes a failed case result; a set-level callback, a missing
        eval set, an invalid metric or a case-level evaluate callback makes the call raise. An
        ``after_*_set`` callback runs for every set whose ``before_*_set`` callbacks passed, with the
        error when the call fails: a failing ``before_evaluate_set`` callback or metric ends the
        inference set with that error before any case runs; an inference error (or a failing
        ``after_inference_set`` callback) is raised once the cases already inferred are scored, and
        ``after_evaluate_set`` receives it. With ``parallel_evaluation`` off, scoring stops at the
        first case that raises (in the order cases were scored).

        Args:
            request: App, eval set and (optionally) case ids. ``before_inference_set`` callbacks
                receive this object and may change it.
            evaluate_config: The metrics to score with.
            **overrides: Per-call option overrides (``callbacks`` replaces, it does not merge).

        Returns:
            The inference results in eval-set order (those :meth:`inference` returns) and the case
            results in the same order (what :meth:`evaluate` returns).

        Raises:
            ConfigError: An invalid request, option or metric.
            NotFoundError: The eval set does not exist.
            CallbackError: A set-level callback or a case-level evaluate callback raised.
        """
        _check_inference_request(request)
        if evaluate_config is None:
            raise ConfigError("evaluate config is nil")
        options = self.options.updated(overrides)
        run = _Run(self, options, f"app={request.app_name}, evalSetID={request.eval_set_id}")
        context = await run.callbacks("before_inference_set", EvalContext(), BeforeInferenceSetArgs(request=request))
        return await run.pipelined(request, evaluate_config, context)


class _Scoring:
    """The evaluate side of a run, once its ``before_evaluate_set`` callbacks and metric checks passed."""

    __slots__ = ("context", "criteria", "gate", "outcomes", "registry", "request", "start", "stopped")

    def __init__(
        self, request: EvaluateRequest, context: EvalContext, registry: MetricRegistry, gate: asyncio.Semaphore
    ) -> None:
        self.request = request
        self.context = context
        self.registry = registry
        self.gate = gate
        self.criteria = CriterionCopies()
        self.start = time.time()
        self.outcomes: dict[int, EvalCaseResult | CaseRecord | BaseException] = {}
        self.stopped = False


class _Run:
    """One call of a :class:`LocalService`: the engine that infers and scores cases, each case with its inference."""

    def __init__(self, service: LocalService, options: ServiceOptions, where: str) -> None:
        self._service = service
        self._runtime = service.runtime
        self._options = options
        self._where = where

    async def callbacks(self, point: str, context: EvalContext, args: object) -> EvalContext:
        """Run the set-level callbacks of ``point``."""
        return await run_callbacks(self._options, point, context, args, where=self._where)

    async def with_after_set(
        self,
        point: str,
        context: EvalContext,
        work: Callable[[], Awaitable[T]],
        after_args: Callable[[T | None, BaseException | None, float], object],
        *,
        start: float | None = None,
    ) -> T:
        """Time ``work``, then run the after-set callbacks at ``point`` with its result or error, even when it raises.

        ``after_args(result, error, start_time)`` builds the callbacks' argument object; an after-set
        callback that raises replaces whatever ``work`` raised. The set started at ``start`` (default: now).
        """
        start = time.time() if start is None else start
        result: T | None = None
        error: BaseException | None = None
        try:
            result = await work()
        except BaseException as exc:
            error = exc
            raise
        finally:
            await self.callbacks(point, context, after_args(result, error, start))
        return result

    async def begin_scoring(self, request: EvaluateRequest) -> _Scoring:
        """Run the ``before_evaluate_set`` callbacks and check the metrics: what scoring the cases needs."""
        options = self._options
        context = await self.callbacks("before_evaluate_set", EvalContext(), BeforeEvaluateSetArgs(request=request))
        self._service._check_metrics_once(request.evaluate_config.eval_metrics, options, where=self._where)
        gate = self._runtime.evaluation_gate(options) if options.parallel_evaluation else asyncio.Semaphore(1)
        return _Scoring(request, context, options.metric_registry or active_metric_registry(), gate)

    async def pipelined(
        self, request: InferenceRequest, evaluate_config: EvaluateConfig, context: EvalContext
    ) -> tuple[list[InferenceResult], EvalSetRunResult]:
        """Infer every case, scoring each as soon as its inference ends; then the after-set callbacks."""
        inferences: list[InferenceResult] = []
        error: BaseException | None = None
        pending: list[InferenceResult] = []
        scorings: list[_Scoring] = []

        async def infer_all(group: asyncio.TaskGroup) -> list[InferenceResult]:
            cases = await _selected_cases(request, self._options, context)
            pending.extend(_pending_inference(request, case) for case in cases)
            scoring = await self.begin_scoring(
                EvaluateRequest(
                    app_name=request.app_name,
                    eval_set_id=request.eval_set_id,
                    inference_results=list(pending),
                    evaluate_config=evaluate_config,
                    run_id=request.run_id,
                    eval_set=request.eval_set,
                )
            )
            scorings.append(scoring)
            return await self._infer_cases(request, context, cases, pending, (scoring, group))

        try:
            async with asyncio.TaskGroup() as group:
                try:
                    inferences = await self.with_after_set(
                        "after_inference_set",
                        context,
                        lambda: infer_all(group),
                        lambda results, failure, start: AfterInferenceSetArgs(
                            request=request, results=results, error=failure, start_time=start
                        ),
                    )
                except Exception as exc:
                    # Raised once the cases already inferred are scored, as inference() lets every case end.
                    error = exc
        except BaseException as exc:  # cancelled, or interrupted while scoring
            error = exc
        if not scorings:  # only the inference set began, and it failed
            assert error is not None
            raise error
        scoring = scorings[0]

        async def results() -> tuple[list[InferenceResult], EvalSetRunResult]:
            if error is not None:
                raise error
            return inferences, self._results(scoring, pending)

        return await self.with_after_set(
            "after_evaluate_set",
            scoring.context,
            results,
            lambda outcome, failure, start: AfterEvaluateSetArgs(
                request=scoring.request, result=outcome[1] if outcome else None, error=failure, start_time=start
            ),
            start=scoring.start,
        )

    async def infer_all(
        self, request: InferenceRequest, context: EvalContext, *, scoring: tuple[_Scoring, asyncio.TaskGroup] | None
    ) -> list[InferenceResult]:
        """Infer the request's cases (without scoring them: :meth:`LocalService.inference`)."""
        cases = await _selected_cases(request, self._options, context)
        return await self._infer_cases(
            request, context, cases, [_pending_inference(request, case) for case in cases], scoring
        )

    async def _infer_cases(
        self,
        request: InferenceRequest,
        context: EvalContext,
        cases: list[EvalCase],
        pending: list[InferenceResult],
        scoring: tuple[_Scoring, asyncio.TaskGroup] | None,
    ) -> list[InferenceResult]:
        options = self._options
        outcomes = await _map_in_order(
            list(enumerate(cases)),
            lambda item: self._infer_then_score(request, context, *item, pending[item[0]], scoring),
            parallel=options.parallel_inference,
            # One case at a time needs no cap (and a parallelism below 1 is allowed then, as in the reference).
            gate=self._runtime.inference_gate(options) if options.parallel_inference else asyncio.Semaphore(1),
            workers=options.parallelism,
        )
        return _inferences(outcomes)

    async def _infer_then_score(
        self,
        request: InferenceRequest,
        context: EvalContext,
        index: int,
        case: EvalCase,
        pending: InferenceResult,
        scoring: tuple[_Scoring, asyncio.TaskGroup] | None,
    ) -> InferenceResult:
        options = self._options
        inference = await infer_one(self._service.runner, self._runtime, request, case, options, context, pending)
        if scoring is not None:
            evaluation, group = scoring
            if options.parallel_inference or options.parallel_evaluation:
                group.create_task(self._score_later(evaluation, index, case, inference))
            else:
                await self._score(evaluation, index, case, inference)
        return inference

    async def score_all(self, scoring: _Scoring, inferences: Sequence[InferenceResult | None]) -> EvalSetRunResult:
        """Score inferences already made (:meth:`LocalService.evaluate`), each with its case."""
        request = scoring.request
        # Each result's case is found once, before any is scored: the loop hands it along with the result.
        cases = await cases_of(inferences, self._options.eval_set_manager, request.app_name, request.eval_set)
        items = list(enumerate(zip(cases, inferences, strict=True)))
        if self._options.parallel_evaluation:
            await _in_workers(
                items, lambda item: self._score(scoring, item[0], *item[1]), workers=self._options.parallelism
            )
        else:
            for index, item in items:
                await self._score(scoring, index, *item)
        return self._results(scoring, inferences)

    async def _score_later(self, scoring: _Scoring, index: int, case: EvalCase, inference: InferenceResult) -> None:
        # Yield first: the case that takes the inference slot just freed starts its agent before this one
        # spends the event loop's time on scoring. Twice: the worker wakes in the next turn of the loop, and
        # the task it starts for that case runs in the turn after.
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        await self._score(scoring, index, case, inference)

    async def _score(
        self, scoring: _Scoring, index: int, case: CaseOrProblem | None, inference: InferenceResult | None
    ) -> None:
        async with scoring.gate:
            if scoring.stopped:
                return
            try:
                with _scoring_scope(self._options, scoring.registry):
                    result = await score_one(
                        self._runtime,
                        scoring.request,
                        case,
                        inference,
                        self._options,
                        scoring.criteria,
                        scoring.context,
                    )
                recorder = self._runtime.recorder
                # Written as it finishes, once its callbacks are done with it: the run holds the text, not the models.
                scoring.outcomes[index] = result if recorder is None else recorder.record(result)
            except Exception as exc:
                scoring.outcomes[index] = exc
                # Serial scoring stops at the first case that raises.
                scoring.stopped = not self._options.parallel_evaluation

    def _results(self, scoring: _Scoring, inferences: Sequence[InferenceResult | None]) -> EvalSetRunResult:
        request, outcomes = scoring.request, scoring.outcomes
        scored = [(inference, outcomes[index]) for index, inference in enumerate(inferences) if index in outcomes]
        results = _case_results(request, scored)
        if self._runtime.recorder is not None:
            records = [result for result in results if isinstance(result, CaseRecord)]
            return RecordedRunResult(app_name=request.app_name, eval_set_id=request.eval_set_id, records=records)
        cases = [result for result in results if not isinstance(result, CaseRecord)]
        return EvalSetRunResult(app_name=request.app_name, eval_set_id=request.eval_set_id, eval_case_results=cases)


I = TypeVar("I")  # noqa: E741


async def _map_in_order(
    items: Sequence[I], work: Callable[[I], Awaitable[T]], *, parallel: bool, gate: asyncio.Semaphore, workers: int
) -> list[T | BaseException]:
    """Apply ``work`` to every item, within ``gate`` and by ``workers`` at a time when ``parallel``; in input order.

    Exceptions are returned in place of results so that one failing item never cancels the others.
    """
    if not parallel:
        outcomes: list[T | BaseException] = []
        for item in items:
            try:
                outcomes.append(await work(item))
            except Exception as exc:
                outcomes.append(exc)
                break
        return outcomes

    async def gated(item: I) -> T:
        async with gate:
            return await work(item)

    return await _in_workers(items, gated, workers=workers)


async def _in_workers(
    items: Sequence[I], work: Callable[[I], Coroutine[Any, Any, T]], *, workers: int
) -> list[T | BaseException]:
    """Apply ``work`` to every item, ``workers`` at a time, each worker giving the event loop back between items.

    A task per item would let the loop run every item that never waits (an instant agent, an inference or
    score from the cache) in one of its iterations: the whole run, with the progress display, timers and
    Ctrl-C held up until it ends. Workers bound an iteration to ``workers`` items. Exceptions are returned in
    place of results, in input order.
    """
    outcomes: list[T | BaseException] = [asyncio.CancelledError()] * len(items)
    indexes = iter(range(len(items)))

    async def worker() -> None:
        for index in indexes:
            # Each item in a task of its own, in a copy of the caller's context, as with a task per item: what
            # an agent sets in a context variable (a trace, a framework's state) never reaches the next case.
            task = asyncio.create_task(work(items[index]), context=context.copy())
            try:
                outcomes[index] = await task  # the worker gives the loop back here, even for an item that never waits
            except Exception as exc:
                outcomes[index] = exc

    context = contextvars.copy_context()

    # As gather of a task per item did: a KeyboardInterrupt in an item leaves the loop as Ctrl-C does (a
    # TaskGroup would raise it in the caller instead), and a cancellation of the whole cancels every worker.
    await asyncio.gather(*(worker() for _ in range(max(1, min(workers, len(items))))), return_exceptions=True)
    return outcomes


_RUNTIME_FIELDS: Final = ("limits", "reuse", "cassettes", "executor")
"""The collaborators a LocalService once took as keywords, now fields of its ServiceRuntime."""


def _runtime_from_keywords(runtime: ServiceRuntime | None, collaborators: dict[str, Any]) -> ServiceRuntime:
    """The runtime that ``LocalService(..., limits=..., executor=...)`` asks for, with a warning that says how now."""
    given = ", ".join(f"{name}=" for name in collaborators)
    if runtime is not None:
        raise ConfigError(f"give {given} inside runtime=ServiceRuntime(...), not beside it")
    warn_user(
        f"LocalService({given}...) is now LocalService(runtime=ServiceRuntime({given}...))"
        " (from agenteval.service import ServiceRuntime)",
        DeprecationWarning,
    )
    return ServiceRuntime(**collaborators)


def _checked_with(options: ServiceOptions) -> tuple[int, int, int]:
    """What a metric check depends on besides the metrics: the registries and the judge, by identity."""
    registry = options.metric_registry or active_metric_registry()
    return id(options.registry), id(registry), id(options.judge_override)


def _check_given_set(eval_set: EvalSet | None, eval_set_id: str, where: str) -> None:
    if eval_set is not None and eval_set.eval_set_id != eval_set_id:
        raise ConfigError(
            f"{where}: the request holds eval set {eval_set.eval_set_id!r} but names {eval_set_id!r}; "
            "give the id of the eval set it holds"
        )


def _check_inference_request(request: InferenceRequest) -> None:
    if request is None:
        raise ConfigError("validate inference request: inference request is nil")
    try:
        check_names(app_name=request.app_name, eval_set_id=request.eval_set_id)
    except ConfigError as exc:
        raise ConfigError(f"validate inference request: {exc}") from None
    _check_given_set(request.eval_set, request.eval_set_id, "validate inference request")


async def _selected_cases(request: InferenceRequest, options: ServiceOptions, context: EvalContext) -> list[EvalCase]:
    """The cases ``request`` selects, in eval-set order; the eval set is read once unless the request holds it."""
    wanted = set(request.eval_case_ids)
    if request.eval_cases is not None and _chosen_from(request.eval_cases, request.eval_set):
        # Chosen by the caller; a before_inference_set callback may still narrow them by id.
        return [case for case in request.eval_cases if not wanted or case.eval_id in wanted]
    eval_set = request.eval_set
    if eval_set is None:
        try:
            with use_context(context):
                eval_set = await options.eval_set_manager.get(request.app_name, request.eval_set_id)
        except Exception as exc:
            raise rewrap("load inference eval cases: get eval set", exc) from exc
    return [case for case in eval_set.eval_cases if not wanted or case.eval_id in wanted]


def _chosen_from(cases: Sequence[EvalCase], eval_set: EvalSet | None) -> bool:
    """Whether ``cases`` are cases of ``eval_set`` (not so when a callback put another eval set in the request)."""
    if eval_set is None:
        return True
    held = {id(case) for case in eval_set.eval_cases}
    return all(id(case) in held for case in cases)


def _pending_inference(request: InferenceRequest, case: EvalCase) -> InferenceResult:
    """The result of ``case`` before it runs: only its ids (``status`` ``None``), filled in as it runs."""
    return InferenceResult(
        app_name=request.app_name, eval_set_id=request.eval_set_id, eval_case_id=case.eval_id, run_id=request.run_id
    )


def _inferences(outcomes: list[InferenceResult | BaseException]) -> list[InferenceResult]:
    """The inference results, or the first case's error (in eval-set order)."""
    results: list[InferenceResult] = []
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
        results.append(outcome)
    return results


def _case_results(
    request: EvaluateRequest,
    scored: Iterable[tuple[InferenceResult | None, EvalCaseResult | CaseRecord | BaseException]],
) -> list[EvalCaseResult | CaseRecord]:
    """The case results of the scored cases, in order; the errors of those that raised, joined into one."""
    errors: list[BaseException] = []
    results: list[EvalCaseResult | CaseRecord] = []
    for inference, outcome in scored:
        if isinstance(outcome, BaseException):
            if not isinstance(outcome, Exception):
                raise outcome
            case_id = inference.eval_case_id if inference is not None else ""
            wrapped = rewrap(
                f"evaluate case (app={request.app_name}, evalSetID={request.eval_set_id}, evalCaseID={case_id})",
                outcome,
            )
            wrapped.__cause__ = outcome
            errors.append(wrapped)
        else:
            results.append(outcome)
    if errors:
        message = "\n".join(str(error) for error in errors)
        raise type(errors[0])(
            f"evaluate case results (app={request.app_name}, evalSetID={request.eval_set_id}): {message}"
        ) from errors[0]
    return results


@contextlib.contextmanager
def _scoring_scope(options: ServiceOptions, registry: MetricRegistry) -> Iterator[None]:
    """The metric registry and judge override that scoring runs with."""
    judge = use_judge(options.judge_override) if options.judge_override is not None else contextlib.nullcontext()
    with use_metric_registry(registry), judge:
        yield
