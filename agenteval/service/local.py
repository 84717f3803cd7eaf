"""The local service: inference (run the agent on each case) and evaluate (score each case), apart or pipelined."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from agenteval._util.loop_watchdog import activity
from agenteval._util.name_checks import check_names
from agenteval.cache.reuse import WorkReuse
from agenteval.context import EvalContext, use_context
from agenteval.errors import AgentEvalError, CaseFailure, ConfigError, describe_exception, rewrap
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import ErrorType, EvalCaseResult
from agenteval.evalset.models import EvalCase, EvalSet, Invocation
from agenteval.evalset.trace import ExecutionTrace
from agenteval.llm.judge import use_judge
from agenteval.metric.registry import MetricRegistry, active_metric_registry, use_metric_registry
from agenteval.runner.base import Runner, end_session
from agenteval.runner.function import AgentFunction, as_runner
from agenteval.service._inference import CaseInference, infer_case
from agenteval.service._metric_checks import check_metrics
from agenteval.service._scoring import CaseLookup, failed_case_result, score_case
from agenteval.service.callbacks import (
    AfterEvaluateCaseArgs,
    AfterEvaluateSetArgs,
    AfterInferenceCaseArgs,
    AfterInferenceSetArgs,
    BeforeEvaluateCaseArgs,
    BeforeEvaluateSetArgs,
    BeforeInferenceCaseArgs,
    BeforeInferenceSetArgs,
)
from agenteval.service.options import ServiceOptions
from agenteval.service.types import EvalSetRunResult, EvaluateConfig, EvaluateRequest, InferenceRequest
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    from agenteval.cache.cassettes import Cassettes

__all__ = ["CaseExecutor", "CaseLimits", "LocalService"]

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741


@dataclass(frozen=True, slots=True)
class CaseLimits:
    """Semaphores that cap how many cases are inferred and evaluated at once, shared by several calls.

    Each call otherwise gets its own cap, so concurrent calls (parallel runs) would multiply it.
    Create them inside the running event loop that will use them.
    """

    inference: asyncio.Semaphore
    evaluation: asyncio.Semaphore

    @classmethod
    def of(cls, parallelism: int) -> CaseLimits:
        """Limits of ``parallelism`` cases for each phase."""
        return cls(asyncio.Semaphore(parallelism), asyncio.Semaphore(parallelism))


async def _map_in_order(
    items: Sequence[I], work: Callable[[I], Awaitable[T]], *, parallel: bool, gate: asyncio.Semaphore
) -> list[T | BaseException]:
    """Apply ``work`` to every item, within ``gate`` when ``parallel``; results in input order.

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

    return await asyncio.gather(*(gated(item) for item in items), return_exceptions=True)


class CaseExecutor(Protocol):
    """Runs a case's inference elsewhere than this event loop (such as :class:`~agenteval.RayExecutor`)."""

    async def infer_case(
        self,
        runner: Runner,
        case: EvalCase,
        options: ServiceOptions,
        session_id: str,
        context: EvalContext,
        *,
        run_id: int,
    ) -> CaseInference:
        """Run :func:`~agenteval.service._inference.infer_case` and then the runners' ``end_session`` hooks.

        Raises:
            CaseFailure: What fails the case.
        """
        ...


def _attach_context_messages(invocations: list[Invocation], case: EvalCase) -> list[Invocation]:
    if not case.context_messages:
        return invocations
    return [
        inv if inv.context_messages else inv.model_copy(update={"context_messages": list(case.context_messages)})
        for inv in invocations
    ]


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
        limits: Case limits shared with other services (e.g. one per concurrent run), instead of a
            cap of ``parallelism`` per call.
        reuse: Finished work to take instead of running the agent or a metric again, and where new
            work is kept (see :class:`~agenteval.cache.reuse.WorkReuse`).
        cassettes: Record and replay each case-run's HTTP traffic (see :class:`~agenteval.cache.cassettes.Cassettes`).
        executor: Where each case's inference runs (``None``: in this event loop).
        **overrides: Fields of :class:`~agenteval.service.options.ServiceOptions`.
    """

    def __init__(
        self,
        runner: Runner | AgentFunction,
        options: ServiceOptions | None = None,
        *,
        limits: CaseLimits | None = None,
        reuse: WorkReuse | None = None,
        cassettes: Cassettes | None = None,
        executor: CaseExecutor | None = None,
        **overrides: Any,
    ) -> None:
        if runner is None:
            raise ConfigError("runner is nil")
        self.runner: Runner = as_runner(runner)
        self.options: ServiceOptions = (options or ServiceOptions()).updated(overrides)
        self._limits = limits
        self._reuse = reuse
        self._cassettes = cassettes
        self._executor = executor

    async def close(self) -> None:
        """Release resources (nothing is held between calls)."""

    def _inference_gate(self, options: ServiceOptions) -> asyncio.Semaphore:
        return self._limits.inference if self._limits else asyncio.Semaphore(options.parallelism)

    def _evaluation_gate(self, options: ServiceOptions) -> asyncio.Semaphore:
        return self._limits.evaluation if self._limits else asyncio.Semaphore(options.parallelism)

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
        where = f"app={request.app_name}, evalSetID={request.eval_set_id}"
        context = await _run_callbacks(
            options, "before_inference_set", EvalContext(), BeforeInferenceSetArgs(request=request), where=where
        )
        return await _run_with_after_set(
            options,
            "after_inference_set",
            context,
            lambda: self._infer_cases(request, options, context),
            lambda results, error, start: AfterInferenceSetArgs(
                request=request, results=results, error=error, start_time=start
            ),
            where=where,
        )

    async def _infer_cases(
        self, request: InferenceRequest, options: ServiceOptions, context: EvalContext
    ) -> list[InferenceResult]:
        cases = await _selected_cases(request, options, context)
        outcomes = await _map_in_order(
            cases,
            lambda case: self._infer_case(request, case, options, context, _pending_inference(request, case)),
            parallel=options.parallel_inference,
            gate=self._inference_gate(options),
        )
        return _inferences(outcomes)

    async def _infer_case(
        self,
        request: InferenceRequest,
        case: EvalCase,
        options: ServiceOptions,
        context: EvalContext,
        result: InferenceResult,
    ) -> InferenceResult:
        """Run the agent on ``case``, filling in ``result`` (a :func:`_pending_inference`) and returning it."""
        reused = self._reuse.inference(request.run_id, case) if self._reuse is not None else None
        if reused is not None:
            # The recorded turns belong to the session they ran in.
            session_id = reused.session_id
        else:
            with use_context(context):
                session_id = options.session_id_supplier(context)
        result.session_id = session_id
        try:
            case_context = await options.callbacks.run(
                "before_inference_case",
                context,
                BeforeInferenceCaseArgs(request=request, eval_case_id=case.eval_id, session_id=session_id),
            )
        except AgentEvalError as exc:
            return _failed_inference(
                result,
                f"run before inference case callbacks (app={request.app_name}, evalSetID={request.eval_set_id}, "
                f"evalCaseID={case.eval_id}, sessionID={session_id}): {exc}",
                ErrorType.CALLBACK,
            )
        start = time.time()
        result.eval_mode = case.eval_mode
        result.user_id = case.session_input.user_id if case.session_input else ""
        if reused is not None:
            result.inferences = reused.inferences
            result.expected_inferences = reused.expected_inferences
            result.execution_traces = reused.execution_traces
            result.status = EvalStatus.PASSED
            return await self._after_inference_case(request, options, case_context, result, start, reused=True)
        try:
            with use_context(case_context), activity(_case_label(case.eval_id, request.run_id)):
                async with self._recording(request, case.eval_id):
                    end_error = None
                    if self._executor is not None:
                        produced = await self._executor.infer_case(
                            self.runner, case, options, session_id, case_context, run_id=request.run_id
                        )
                    else:
                        try:
                            produced = await infer_case(
                                self.runner, case, options, session_id, case_context, run_id=request.run_id
                            )
                        finally:
                            end_error = await _end_sessions(self.runner, options, session_id)
                    if end_error is not None:
                        raise CaseFailure(end_error, error_type=ErrorType.AGENT)
        except CaseFailure as failure:
            result.execution_traces = failure.traces
            result = _failed_inference(
                result,
                f"inference eval case (evalCaseID={case.eval_id}, sessionID={session_id}): {failure}",
                failure.error_type,
            )
        except Exception as exc:  # a bug in a user-supplied runner or simulator, not in the case
            result = _failed_inference(
                result,
                f"inference eval case (evalCaseID={case.eval_id}, sessionID={session_id}): {describe_exception(exc)}",
                ErrorType.AGENT,
            )
        else:
            result.inferences = _attach_context_messages(produced.inferences, case)
            result.expected_inferences = _attach_context_messages(produced.expected, case)
            result.execution_traces = _traces_or_empty(produced.traces)
            result.status = EvalStatus.PASSED
            if self._reuse is not None:
                self._reuse.inferred(request.run_id, case, result)
        return await self._after_inference_case(request, options, case_context, result, start)

    async def _after_inference_case(
        self,
        request: InferenceRequest,
        options: ServiceOptions,
        case_context: EvalContext,
        result: InferenceResult,
        start: float,
        *,
        reused: bool = False,
    ) -> InferenceResult:
        try:
            await options.callbacks.run(
                "after_inference_case",
                case_context,
                AfterInferenceCaseArgs(request=request, result=result, error=None, start_time=start, reused=reused),
            )
        except AgentEvalError as exc:
            after = (
                f"run after inference case callbacks (app={request.app_name}, evalSetID={request.eval_set_id}, "
                f"evalCaseID={result.eval_case_id}): {exc}"
            )
            message = f"{result.error_message}\n{after}" if result.error_message else after
            result = _failed_inference(result, message, result.error_type or ErrorType.CALLBACK)
        return result

    def _recording(
        self, request: InferenceRequest | EvaluateRequest, case_id: str
    ) -> contextlib.AbstractAsyncContextManager[None]:
        """Routes one case-run's HTTP traffic to its cassette (read and written off the loop), if cassettes are on."""
        if self._cassettes is None:
            return contextlib.nullcontext()
        return self._cassettes.case(request.eval_set_id, case_id, request.run_id)

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
        where = f"app={request.app_name}, evalSetID={request.eval_set_id}"
        context = await _run_callbacks(
            options, "before_evaluate_set", EvalContext(), BeforeEvaluateSetArgs(request=request), where=where
        )
        check_metrics(request.evaluate_config.eval_metrics, options, where=where)
        registry = options.metric_registry or active_metric_registry()

        async def score_cases() -> EvalSetRunResult:
            with _scoring_scope(options, registry):
                case_results = await self._evaluate_cases(request, options, context)
            return EvalSetRunResult(
                app_name=request.app_name, eval_set_id=request.eval_set_id, eval_case_results=case_results
            )

        return await _run_with_after_set(
            options,
            "after_evaluate_set",
            context,
            score_cases,
            lambda result, error, start: AfterEvaluateSetArgs(
                request=request, result=result, error=error, start_time=start
            ),
            where=where,
        )

    async def _evaluate_cases(
        self, request: EvaluateRequest, options: ServiceOptions, context: EvalContext
    ) -> list[EvalCaseResult]:
        cases = CaseLookup(options.eval_set_manager, request.app_name, request.eval_set)
        outcomes = await _map_in_order(
            request.inference_results,
            lambda inference: self._evaluate_case(request, inference, options, cases, context),
            parallel=options.parallel_evaluation,
            gate=self._evaluation_gate(options),
        )
        return _case_results(request, zip(request.inference_results, outcomes, strict=False))

    async def _evaluate_case(
        self,
        request: EvaluateRequest,
        inference: InferenceResult | None,
        options: ServiceOptions,
        cases: CaseLookup,
        context: EvalContext,
    ) -> EvalCaseResult:
        if inference is None:
            raise ConfigError(
                "inference result is nil: EvaluateRequest.inference_results holds None; "
                "pass only the InferenceResult objects returned by inference()"
            )
        case_id = inference.eval_case_id
        where = f"app={request.app_name}, evalSetID={request.eval_set_id}, evalCaseID={case_id}"
        case_context = await _run_callbacks(
            options,
            "before_evaluate_case",
            context,
            BeforeEvaluateCaseArgs(request=request, eval_case_id=case_id),
            where=where,
        )
        start = time.time()
        reused = False
        if inference.status != EvalStatus.PASSED:
            result = failed_case_result(
                request.eval_set_id,
                inference,
                inference.error_message,
                inference.error_type or ErrorType.OTHER,
                request.run_id,
            )
        else:
            try:
                metrics = request.evaluate_config.eval_metrics
                scores = self._reuse.scores(request.run_id, inference, metrics) if self._reuse is not None else None
                with use_context(case_context), activity(f"scoring {_case_label(case_id, request.run_id)}"):
                    async with self._recording(request, case_id):
                        result = await score_case(
                            inference, metrics, options, cases, case_context, request.run_id, scores
                        )
                if self._reuse is not None:
                    taken = self._reuse.log.scores
                    reused = all((request.run_id, case_id, metric.metric_name) in taken for metric in metrics)
            except CaseFailure as failure:
                result = failed_case_result(
                    request.eval_set_id, inference, str(failure), failure.error_type, request.run_id
                )
        await _run_callbacks(
            options,
            "after_evaluate_case",
            case_context,
            AfterEvaluateCaseArgs(
                request=request, inference_result=inference, result=result, error=None, start_time=start, reused=reused
            ),
            where=where,
        )
        return result

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
        where = f"app={request.app_name}, evalSetID={request.eval_set_id}"
        context = await _run_callbacks(
            options, "before_inference_set", EvalContext(), BeforeInferenceSetArgs(request=request), where=where
        )
        return await _PipelinedRun(self, request, evaluate_config, options, context, where).run()


@dataclass(frozen=True, slots=True, kw_only=True)
class _Evaluation:
    """The evaluate side of a pipelined run, once its ``before_evaluate_set`` callbacks and metric checks passed."""

    request: EvaluateRequest
    context: EvalContext
    registry: MetricRegistry
    cases: CaseLookup
    gate: asyncio.Semaphore
    start: float


class _PipelinedRun:
    """One :meth:`LocalService.infer_and_evaluate` call once its ``before_inference_set`` callbacks passed."""

    def __init__(
        self,
        service: LocalService,
        request: InferenceRequest,
        evaluate_config: EvaluateConfig,
        options: ServiceOptions,
        context: EvalContext,
        where: str,
    ) -> None:
        self._service = service
        self._request = request
        self._evaluate_config = evaluate_config
        self._options = options
        self._inference_context = context
        self._where = where
        self._pending: list[InferenceResult] = []
        self._evaluation: _Evaluation | None = None
        self._outcomes: dict[int, EvalCaseResult | BaseException] = {}
        self._scoring_stopped = False

    async def run(self) -> tuple[list[InferenceResult], EvalSetRunResult]:
        inferences: list[InferenceResult] = []
        error: BaseException | None = None
        try:
            async with asyncio.TaskGroup() as group:
                try:
                    inferences = await _run_with_after_set(
                        self._options,
                        "after_inference_set",
                        self._inference_context,
                        lambda: self._infer_all(group),
                        lambda results, failure, start: AfterInferenceSetArgs(
                            request=self._request, results=results, error=failure, start_time=start
                        ),
                        where=self._where,
                    )
                except Exception as exc:
                    # Raised once the cases already inferred are scored, as inference() lets every case end.
                    error = exc
        except BaseException as exc:  # cancelled, or interrupted while scoring
            error = exc
        evaluation = self._evaluation
        if evaluation is None:  # only the inference set began, and it failed
            assert error is not None
            raise error
        return await _run_with_after_set(
            self._options,
            "after_evaluate_set",
            evaluation.context,
            lambda: self._results(evaluation.request, inferences, error),
            lambda outcome, failure, start: AfterEvaluateSetArgs(
                request=evaluation.request, result=outcome[1] if outcome else None, error=failure, start_time=start
            ),
            where=self._where,
            start=evaluation.start,
        )

    async def _infer_all(self, group: asyncio.TaskGroup) -> list[InferenceResult]:
        options = self._options
        cases = await _selected_cases(self._request, options, self._inference_context)
        self._pending = [_pending_inference(self._request, case) for case in cases]
        evaluation = await self._begin_evaluation()
        outcomes = await _map_in_order(
            list(enumerate(cases)),
            lambda item: self._infer_then_score(group, evaluation, *item),
            parallel=options.parallel_inference,
            gate=self._service._inference_gate(options),
        )
        return _inferences(outcomes)

    async def _begin_evaluation(self) -> _Evaluation:
        request, options = self._request, self._options
        evaluation = EvaluateRequest(
            app_name=request.app_name,
            eval_set_id=request.eval_set_id,
            inference_results=list(self._pending),
            evaluate_config=self._evaluate_config,
            run_id=request.run_id,
            eval_set=request.eval_set,
        )
        context = await _run_callbacks(
            options, "before_evaluate_set", EvalContext(), BeforeEvaluateSetArgs(request=evaluation), where=self._where
        )
        check_metrics(evaluation.evaluate_config.eval_metrics, options, where=self._where)
        self._evaluation = _Evaluation(
            request=evaluation,
            context=context,
            registry=options.metric_registry or active_metric_registry(),
            cases=CaseLookup(options.eval_set_manager, evaluation.app_name, evaluation.eval_set),
            gate=self._service._evaluation_gate(options) if options.parallel_evaluation else asyncio.Semaphore(1),
            start=time.time(),
        )
        return self._evaluation

    async def _infer_then_score(
        self, group: asyncio.TaskGroup, evaluation: _Evaluation, index: int, case: EvalCase
    ) -> InferenceResult:
        options = self._options
        inference = await self._service._infer_case(
            self._request, case, options, self._inference_context, self._pending[index]
        )
        if options.parallel_inference or options.parallel_evaluation:
            group.create_task(self._score_later(evaluation, index, inference))
        else:
            await self._score(evaluation, index, inference)
        return inference

    async def _score_later(self, evaluation: _Evaluation, index: int, inference: InferenceResult) -> None:
        # Yield first: the case waiting for the inference slot just freed starts its agent before
        # this one spends the event loop's time on scoring.
        await asyncio.sleep(0)
        await self._score(evaluation, index, inference)

    async def _score(self, evaluation: _Evaluation, index: int, inference: InferenceResult) -> None:
        async with evaluation.gate:
            if self._scoring_stopped:
                return
            try:
                with _scoring_scope(self._options, evaluation.registry):
                    self._outcomes[index] = await self._service._evaluate_case(
                        evaluation.request, inference, self._options, evaluation.cases, evaluation.context
                    )
            except Exception as exc:
                self._outcomes[index] = exc
                # Serial scoring stops at the first case that raises, as evaluate() does.
                self._scoring_stopped = not self._options.parallel_evaluation

    async def _results(
        self, evaluation: EvaluateRequest, inferences: list[InferenceResult], error: BaseException | None
    ) -> tuple[list[InferenceResult], EvalSetRunResult]:
        if error is not None:
            raise error
        outcomes = self._outcomes
        scored = [(inference, outcomes[index]) for index, inference in enumerate(self._pending) if index in outcomes]
        return inferences, EvalSetRunResult(
            app_name=evaluation.app_name,
            eval_set_id=evaluation.eval_set_id,
            eval_case_results=_case_results(evaluation, scored),
        )


async def _run_callbacks(
    options: ServiceOptions, point: str, context: EvalContext, args: object, *, where: str
) -> EvalContext:
    """Run the callbacks of ``point``; one that raises is re-raised as ``run <point> callbacks (<where>): …``."""
    try:
        return await options.callbacks.run(point, context, args)
    except AgentEvalError as exc:
        raise rewrap(f"run {point.replace('_', ' ')} callbacks ({where})", exc) from exc


async def _run_with_after_set(
    options: ServiceOptions,
    point: str,
    context: EvalContext,
    work: Callable[[], Awaitable[T]],
    after_args: Callable[[T | None, BaseException | None, float], object],
    *,
    where: str,
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
        await _run_callbacks(options, point, context, after_args(result, error, start), where=where)
    return result


async def _end_sessions(runner: Runner, options: ServiceOptions, session_id: str) -> str | None:
    """Call the runners' ``end_session`` hooks; return what went wrong instead of raising.

    A failing hook must not replace the case's own failure (it runs in a ``finally``).
    """
    problems = []
    for who, hook_runner, hook_session in (
        ("runner", runner, session_id),
        ("expected runner", options.expected_runner, f"{session_id}-expected"),
    ):
        if hook_runner is None:
            continue
        try:
            await end_session(hook_runner, hook_session)
        except Exception as exc:
            problems.append(f"end {who} session: {describe_exception(exc)}")
    return "; ".join(problems) or None


def _check_given_set(eval_set: EvalSet | None, eval_set_id: str, where: str) -> None:
    if eval_set is not None and eval_set.eval_set_id != eval_set_id:
        raise ConfigError(
            f"{where}: the request holds eval set {eval_set.eval_set_id!r} but names {eval_set_id!r}; "
            "give the id of the eval set it holds"
        )


def _case_label(case_id: str, run_id: int) -> str:
    """How the loop watchdog names a case: ``case 'a' (run 2)``; a service call outside runs has run 0."""
    return f"case {case_id!r} (run {run_id})" if run_id else f"case {case_id!r}"


def _failed_inference(result: InferenceResult, message: str, error_type: str) -> InferenceResult:
    result.status = EvalStatus.FAILED
    result.error_message = message
    result.error_type = error_type
    result.inferences = []
    return result


def _traces_or_empty(traces: list[ExecutionTrace | None]) -> list[ExecutionTrace | None]:
    """Drop the trace list when no turn recorded one, so results without traces stay light."""
    return traces if any(trace is not None for trace in traces) else []


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
    eval_set = request.eval_set
    if eval_set is None:
        try:
            with use_context(context):
                eval_set = await options.eval_set_manager.get(request.app_name, request.eval_set_id)
        except Exception as exc:
            raise rewrap("load inference eval cases: get eval set", exc) from exc
    wanted = set(request.eval_case_ids)
    return [case for case in eval_set.eval_cases if not wanted or case.eval_id in wanted]


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
    request: EvaluateRequest, scored: Iterable[tuple[InferenceResult | None, EvalCaseResult | BaseException]]
) -> list[EvalCaseResult]:
    """The case results of the scored cases, in order; the errors of those that raised, joined into one."""
    errors: list[BaseException] = []
    results: list[EvalCaseResult] = []
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
