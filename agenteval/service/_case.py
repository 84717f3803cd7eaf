"""One case of a service call: run the agent on it, or score what it did, with the case-level callbacks.

Both take the case itself, which the caller holds: nothing here looks a case up by its id.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from agenteval._util.loop_watchdog import activity
from agenteval.cache.reuse import WorkReuse
from agenteval.context import EvalContext, use_context
from agenteval.errors import AgentEvalError, CaseFailure, ConfigError, describe_exception, rewrap
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import ErrorType, EvalCaseResult
from agenteval.evalresult.records import CaseRecorder
from agenteval.evalset.models import EvalCase
from agenteval.evalset.trace import ExecutionTrace
from agenteval.runner.base import Runner, end_session
from agenteval.service._inference import CaseInference, infer_case
from agenteval.service._scoring import (
    CaseOrProblem,
    CriterionCopies,
    failed_case_result,
    score_case,
    with_context_messages,
)
from agenteval.service.callbacks import (
    AfterEvaluateCaseArgs,
    AfterInferenceCaseArgs,
    BeforeEvaluateCaseArgs,
    BeforeInferenceCaseArgs,
)
from agenteval.service.options import ServiceOptions
from agenteval.service.types import EvaluateRequest, InferenceRequest
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    from agenteval.cache.cassettes import Cassettes

__all__ = [
    "CaseExecutor",
    "CaseLimits",
    "ServiceRuntime",
    "case_label",
    "end_sessions",
    "infer_one",
    "run_callbacks",
    "score_one",
]


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


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceRuntime:
    """What a :class:`~agenteval.service.LocalService` works with besides its options, given in one place.

    Attributes:
        limits: Case limits shared with other services (e.g. one per concurrent run), instead of a cap of
            ``parallelism`` per call.
        reuse: Finished work to take instead of running the agent or a metric again, and where new work is
            kept (see :class:`~agenteval.cache.reuse.WorkReuse`).
        cassettes: Record and replay each case-run's HTTP traffic (see :class:`~agenteval.cache.cassettes.Cassettes`).
        executor: Where each case's inference runs (``None``: in this event loop).
        recorder: Makes each scored case result's record, which the run holds instead of the result (``None``:
            the results themselves); the run's results then hold the records
            (:class:`~agenteval.service.types.RecordedRunResult`).
    """

    limits: CaseLimits | None = None
    reuse: WorkReuse | None = None
    cassettes: Cassettes | None = None
    executor: CaseExecutor | None = None
    recorder: CaseRecorder | None = None

    def inference_gate(self, options: ServiceOptions) -> asyncio.Semaphore:
        """The cap on cases inferred at once."""
        return self.limits.inference if self.limits else asyncio.Semaphore(options.parallelism)

    def evaluation_gate(self, options: ServiceOptions) -> asyncio.Semaphore:
        """The cap on cases scored at once."""
        return self.limits.evaluation if self.limits else asyncio.Semaphore(options.parallelism)

    def recording(self, eval_set_id: str, case_id: str, run_id: int) -> contextlib.AbstractAsyncContextManager[None]:
        """Routes one case-run's HTTP traffic to its cassette (read and written off the loop), if cassettes are on."""
        if self.cassettes is None:
            return contextlib.nullcontext()
        return self.cassettes.case(eval_set_id, case_id, run_id)


async def run_callbacks(
    options: ServiceOptions, point: str, context: EvalContext, args: object, *, where: str
) -> EvalContext:
    """Run the callbacks of ``point``; one that raises is re-raised as ``run <point> callbacks (<where>): …``."""
    try:
        return await options.callbacks.run(point, context, args)
    except AgentEvalError as exc:
        raise rewrap(f"run {point.replace('_', ' ')} callbacks ({where})", exc) from exc


def case_label(case_id: str, run_id: int) -> str:
    """How the loop watchdog names a case: ``case 'a' (run 2)``; a service call outside runs has run 0."""
    return f"case {case_id!r} (run {run_id})" if run_id else f"case {case_id!r}"


async def infer_one(
    runner: Runner,
    runtime: ServiceRuntime,
    request: InferenceRequest,
    case: EvalCase,
    options: ServiceOptions,
    context: EvalContext,
    result: InferenceResult,
) -> InferenceResult:
    """Run the agent on ``case``, filling in ``result`` (its pending result: ids only) and returning it.

    A failure of the agent or of a case-level callback fails the case, in the result.
    """
    reuse = runtime.reuse
    reused = reuse.inference(request.run_id, case) if reuse is not None else None
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
        return await _after_inference_case(request, options, case_context, result, start, reused=True)
    try:
        with use_context(case_context), activity(case_label(case.eval_id, request.run_id)):
            async with runtime.recording(request.eval_set_id, case.eval_id, request.run_id):
                produced = await _produce(runner, runtime, case, options, session_id, case_context, request.run_id)
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
        result.inferences = with_context_messages(produced.inferences, case.context_messages)
        result.expected_inferences = with_context_messages(produced.expected, case.context_messages)
        result.execution_traces = _traces_or_empty(produced.traces)
        result.status = EvalStatus.PASSED
        if reuse is not None:
            reuse.inferred(request.run_id, case, result)
    return await _after_inference_case(request, options, case_context, result, start)


async def _produce(
    runner: Runner,
    runtime: ServiceRuntime,
    case: EvalCase,
    options: ServiceOptions,
    session_id: str,
    context: EvalContext,
    run_id: int,
) -> CaseInference:
    """The agent's turns on ``case``, here or on the executor, with the runners' sessions ended after.

    Raises:
        CaseFailure: What fails the case.
    """
    if runtime.executor is not None:
        return await runtime.executor.infer_case(runner, case, options, session_id, context, run_id=run_id)
    try:
        produced = await infer_case(runner, case, options, session_id, context, run_id=run_id)
    finally:
        end_error = await end_sessions(runner, options, session_id)
    if end_error is not None:
        raise CaseFailure(end_error, error_type=ErrorType.AGENT)
    return produced


async def _after_inference_case(
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


async def score_one(
    runtime: ServiceRuntime,
    request: EvaluateRequest,
    case: CaseOrProblem | None,
    inference: InferenceResult | None,
    options: ServiceOptions,
    criteria: CriterionCopies,
    context: EvalContext,
) -> EvalCaseResult:
    """Score what the agent did on ``case`` with the request's metrics, between the case-level evaluate callbacks.

    ``case`` is ``None`` when the inference failed (nothing to score), or why the case could not be found.

    Raises:
        ConfigError: ``inference`` is ``None`` (a request holding something other than inference results).
        AgentEvalError: A case-level evaluate callback raised.
    """
    if inference is None:
        raise ConfigError(
            "inference result is nil: EvaluateRequest.inference_results holds None; "
            "pass only the InferenceResult objects returned by inference()"
        )
    case_id = inference.eval_case_id
    where = f"app={request.app_name}, evalSetID={request.eval_set_id}, evalCaseID={case_id}"
    case_context = await run_callbacks(
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
        reuse = runtime.reuse
        try:
            if not isinstance(case, EvalCase):
                raise case or CaseFailure(f"eval case {case_id} was not given to score")
            metrics = request.evaluate_config.eval_metrics
            scores = reuse.scores(request.run_id, inference, metrics) if reuse is not None else None
            with use_context(case_context), activity(f"scoring {case_label(case_id, request.run_id)}"):
                async with runtime.recording(request.eval_set_id, case_id, request.run_id):
                    result = await score_case(
                        case, inference, metrics, options, criteria, case_context, request.run_id, scores
                    )
            if reuse is not None:
                taken = reuse.log.scores
                reused = all((request.run_id, case_id, metric.metric_name) in taken for metric in metrics)
        except CaseFailure as failure:
            result = failed_case_result(
                request.eval_set_id, inference, str(failure), failure.error_type, request.run_id
            )
    await run_callbacks(
        options,
        "after_evaluate_case",
        case_context,
        AfterEvaluateCaseArgs(
            request=request, inference_result=inference, result=result, error=None, start_time=start, reused=reused
        ),
        where=where,
    )
    return result


async def end_sessions(runner: Runner, options: ServiceOptions, session_id: str) -> str | None:
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


def _failed_inference(result: InferenceResult, message: str, error_type: str) -> InferenceResult:
    result.status = EvalStatus.FAILED
    result.error_message = message
    result.error_type = error_type
    result.inferences = []
    return result


def _traces_or_empty(traces: list[ExecutionTrace | None]) -> list[ExecutionTrace | None]:
    """Drop the trace list when no turn recorded one, so results without traces stay light."""
    return traces if any(trace is not None for trace in traces) else []
