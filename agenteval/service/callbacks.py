"""Lifecycle callbacks: eight points around inference and evaluation, per set and per case.

Each callback is called as ``fn(context, args)`` (plain or ``async``) in registration order. It may
return ``None`` (keep the context), a new :class:`~agenteval.context.EvalContext`, or a
:class:`CallbackResult`. Later callbacks of the same point run under the newest context; after the
chain, the framework adopts the context of the *last* callback that returned something, so a final
``CallbackResult(context=None)`` deliberately restores the original context, as in the reference.
Contexts returned by ``after_*`` callbacks only flow to later ``after_*`` callbacks of that chain.

The first exception stops the chain and surfaces as :class:`~agenteval.errors.CallbackError`, e.g.
``execute BeforeEvaluateCase callbacks: BeforeEvaluateCase callback[2] (audit): ValueError: boom``.

Order. :meth:`LocalService.inference <agenteval.service.LocalService.inference>` fires
``before_inference_set``, each case's ``before_inference_case`` / ``after_inference_case``, then
``after_inference_set``; :meth:`~agenteval.service.LocalService.evaluate` does the same with the four
evaluate points; called one after the other they give the reference's order.
:meth:`~agenteval.service.LocalService.infer_and_evaluate`, which :class:`~agenteval.Evaluator` uses
for every run, scores each case as soon as its inference ends, which changes the order (each point
still fires once per set or per case):

1. ``before_inference_set``, then ``before_evaluate_set`` before any case runs (instead of after
   ``after_inference_set``); its ``request.inference_results`` already holds one result per case,
   in eval-set order, each filled in when its case's inference ends (``status`` ``None`` until then).
2. Per case: ``before_inference_case`` → ``after_inference_case`` → ``before_evaluate_case`` →
   ``after_evaluate_case``; cases interleave, so early cases' evaluate callbacks fire before later
   cases' inference callbacks and before ``after_inference_set``.
3. ``after_inference_set`` once every case's inference has ended, ``after_evaluate_set`` last.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from agenteval.context import EvalContext
from agenteval.errors import CallbackError, describe_exception
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalCaseResult
from agenteval.service.types import EvalSetRunResult, EvaluateRequest, InferenceRequest

__all__ = [
    "AfterEvaluateCaseArgs",
    "AfterEvaluateSetArgs",
    "AfterInferenceCaseArgs",
    "AfterInferenceSetArgs",
    "BeforeEvaluateCaseArgs",
    "BeforeEvaluateSetArgs",
    "BeforeInferenceCaseArgs",
    "BeforeInferenceSetArgs",
    "Callback",
    "CallbackFunction",
    "CallbackResult",
    "Callbacks",
    "NamedCallback",
]


class _Requested(Protocol):
    @property
    def request(self) -> InferenceRequest | EvaluateRequest: ...


class _OfRun:
    """Gives callback arguments the run they belong to, from their request."""

    __slots__ = ()

    @property
    def run_id(self: _Requested) -> int:
        """The run (1-based) this callback belongs to."""
        return self.request.run_id


@dataclass(slots=True, kw_only=True)
class BeforeInferenceSetArgs(_OfRun):
    """Before the cases of a set are run. Editing ``request`` (e.g. its case ids) takes effect."""

    request: InferenceRequest


@dataclass(slots=True, kw_only=True)
class AfterInferenceSetArgs(_OfRun):
    """After the cases of a set were run."""

    request: InferenceRequest
    results: list[InferenceResult] | None
    """``None`` when the set failed, ``[]`` when no case matched."""
    error: BaseException | None
    start_time: float
    """When the set started (after the ``before`` callbacks), Unix seconds."""


@dataclass(slots=True, kw_only=True)
class BeforeInferenceCaseArgs(_OfRun):
    """Before one case is run."""

    request: InferenceRequest
    eval_case_id: str
    session_id: str


@dataclass(slots=True, kw_only=True)
class AfterInferenceCaseArgs(_OfRun):
    """After one case was run; a failure is in ``result.status`` / ``result.error_message``."""

    request: InferenceRequest
    result: InferenceResult
    error: BaseException | None
    """Always ``None``, as in the reference: look at ``result`` instead."""
    start_time: float
    reused: bool = False
    """Whether the turns were taken from the cache or a resumed result instead of running the agent.

    An agenteval extension, as is :attr:`AfterEvaluateCaseArgs.reused`.
    """


@dataclass(slots=True, kw_only=True)
class BeforeEvaluateSetArgs(_OfRun):
    """Before the inference results of a set are scored. Editing ``request`` takes effect."""

    request: EvaluateRequest


@dataclass(slots=True, kw_only=True)
class AfterEvaluateSetArgs(_OfRun):
    """After the inference results of a set were scored."""

    request: EvaluateRequest
    result: EvalSetRunResult | None
    """``None`` when scoring failed."""
    error: BaseException | None
    start_time: float


@dataclass(slots=True, kw_only=True)
class BeforeEvaluateCaseArgs(_OfRun):
    """Before one case is scored."""

    request: EvaluateRequest
    eval_case_id: str


@dataclass(slots=True, kw_only=True)
class AfterEvaluateCaseArgs(_OfRun):
    """After one case was scored."""

    request: EvaluateRequest
    inference_result: InferenceResult
    result: EvalCaseResult | None
    error: BaseException | None
    start_time: float
    reused: bool = False
    """Whether every metric's score was taken from the cache or a resumed result instead of being computed."""


@dataclass(slots=True)
class CallbackResult:
    """What a callback returns to change the context; ``context=None`` restores the original."""

    context: EvalContext | None = None


A = TypeVar("A")
CallbackReturn = CallbackResult | EvalContext | None
CallbackFunction = Callable[[EvalContext, A], CallbackReturn | Awaitable[CallbackReturn]]
"""``fn(context, args)``, plain or ``async``, returning ``None``, an ``EvalContext`` or a ``CallbackResult``."""


@dataclass(slots=True, frozen=True)
class NamedCallback(Generic[A]):
    """A registered callback and the name it reports errors under."""

    name: str
    callback: CallbackFunction[A]


@dataclass(slots=True, kw_only=True)
class Callback:
    """Callbacks for any of the eight points, registered together under one name."""

    before_inference_set: CallbackFunction[BeforeInferenceSetArgs] | None = None
    after_inference_set: CallbackFunction[AfterInferenceSetArgs] | None = None
    before_inference_case: CallbackFunction[BeforeInferenceCaseArgs] | None = None
    after_inference_case: CallbackFunction[AfterInferenceCaseArgs] | None = None
    before_evaluate_set: CallbackFunction[BeforeEvaluateSetArgs] | None = None
    after_evaluate_set: CallbackFunction[AfterEvaluateSetArgs] | None = None
    before_evaluate_case: CallbackFunction[BeforeEvaluateCaseArgs] | None = None
    after_evaluate_case: CallbackFunction[AfterEvaluateCaseArgs] | None = None


_POINTS = {
    "before_inference_set": "BeforeInferenceSet",
    "after_inference_set": "AfterInferenceSet",
    "before_inference_case": "BeforeInferenceCase",
    "after_inference_case": "AfterInferenceCase",
    "before_evaluate_set": "BeforeEvaluateSet",
    "after_evaluate_set": "AfterEvaluateSet",
    "before_evaluate_case": "BeforeEvaluateCase",
    "after_evaluate_case": "AfterEvaluateCase",
}


@dataclass(slots=True)
class Callbacks:
    """Ordered lists of named callbacks, one list per point.

    Register with :meth:`register` or a ``register_<point>`` helper; each returns the container so
    calls chain. Names need not be unique. Do not register while an evaluation is running.
    """

    before_inference_set: list[NamedCallback[BeforeInferenceSetArgs]] = field(default_factory=list)
    after_inference_set: list[NamedCallback[AfterInferenceSetArgs]] = field(default_factory=list)
    before_inference_case: list[NamedCallback[BeforeInferenceCaseArgs]] = field(default_factory=list)
    after_inference_case: list[NamedCallback[AfterInferenceCaseArgs]] = field(default_factory=list)
    before_evaluate_set: list[NamedCallback[BeforeEvaluateSetArgs]] = field(default_factory=list)
    after_evaluate_set: list[NamedCallback[AfterEvaluateSetArgs]] = field(default_factory=list)
    before_evaluate_case: list[NamedCallback[BeforeEvaluateCaseArgs]] = field(default_factory=list)
    after_evaluate_case: list[NamedCallback[AfterEvaluateCaseArgs]] = field(default_factory=list)

    def register(self, name: str, callback: Callback | None) -> Callbacks:
        """Append every point ``callback`` sets under ``name``; ``None`` is ignored."""
        if callback is not None:
            for point in _POINTS:
                function = getattr(callback, point)
                if function is not None:
                    getattr(self, point).append(NamedCallback(name, function))
        return self

    def register_before_inference_set(self, name: str, function: CallbackFunction[BeforeInferenceSetArgs]) -> Callbacks:
        """Append a ``before_inference_set`` callback."""
        return self.register(name, Callback(before_inference_set=function))

    def register_after_inference_set(self, name: str, function: CallbackFunction[AfterInferenceSetArgs]) -> Callbacks:
        """Append an ``after_inference_set`` callback."""
        return self.register(name, Callback(after_inference_set=function))

    def register_before_inference_case(
        self, name: str, function: CallbackFunction[BeforeInferenceCaseArgs]
    ) -> Callbacks:
        """Append a ``before_inference_case`` callback."""
        return self.register(name, Callback(before_inference_case=function))

    def register_after_inference_case(self, name: str, function: CallbackFunction[AfterInferenceCaseArgs]) -> Callbacks:
        """Append an ``after_inference_case`` callback."""
        return self.register(name, Callback(after_inference_case=function))

    def register_before_evaluate_set(self, name: str, function: CallbackFunction[BeforeEvaluateSetArgs]) -> Callbacks:
        """Append a ``before_evaluate_set`` callback."""
        return self.register(name, Callback(before_evaluate_set=function))

    def register_after_evaluate_set(self, name: str, function: CallbackFunction[AfterEvaluateSetArgs]) -> Callbacks:
        """Append an ``after_evaluate_set`` callback."""
        return self.register(name, Callback(after_evaluate_set=function))

    def register_before_evaluate_case(self, name: str, function: CallbackFunction[BeforeEvaluateCaseArgs]) -> Callbacks:
        """Append a ``before_evaluate_case`` callback."""
        return self.register(name, Callback(before_evaluate_case=function))

    def register_after_evaluate_case(self, name: str, function: CallbackFunction[AfterEvaluateCaseArgs]) -> Callbacks:
        """Append an ``after_evaluate_case`` callback."""
        return self.register(name, Callback(after_evaluate_case=function))

    def merged(self, other: Callbacks) -> Callbacks:
        """Return a new container with this one's callbacks, then ``other``'s, at every point."""
        merged = Callbacks()
        for point in _POINTS:
            getattr(merged, point).extend(getattr(self, point) + getattr(other, point))
        return merged

    def observed_by(self, observer: Callbacks) -> Callbacks:
        """Return these callbacks watched by ``observer``'s, which must never raise.

        At a ``before_*`` point the observer's run after these, so they see what these changed (a
        request's case ids); at an ``after_*`` point, before these, so they see every outcome even
        when one of these raises (a case scored, then failed by its ``after_evaluate_case`` callback).
        Errors name these callbacks by their own index, as if the observer's were not there. The
        result's :meth:`merged` drops the observer.
        """
        return _Observed(self, observer)

    async def run(self, point: str, context: EvalContext, args: Any) -> EvalContext:
        """Run the callbacks of one point and return the context the framework adopts.

        Args:
            point: Attribute name of the point, e.g. ``"before_inference_case"``.
            context: The incoming context.
            args: The point's argument object, shared by every callback of the chain.

        Returns:
            The adopted context (see the module docstring).

        Raises:
            CallbackError: A callback raised; later callbacks did not run.
        """
        chain: list[NamedCallback[Any]] = getattr(self, point)
        if not chain:
            return context
        display = _POINTS[point]
        current = context
        last: CallbackResult | None = None
        for index, named in enumerate(chain):
            try:
                returned = named.callback(current, args)
                if inspect.isawaitable(returned):
                    returned = await returned
            except Exception as exc:
                raise CallbackError(
                    f"execute {display} callbacks: {display} callback[{index}] ({named.name}): "
                    f"{describe_exception(exc)}"
                ) from exc
            result = CallbackResult(returned) if isinstance(returned, EvalContext) else returned
            if result is not None and not isinstance(result, CallbackResult):
                raise CallbackError(
                    f"execute {display} callbacks: {display} callback[{index}] ({named.name}): returned "
                    f"{type(result).__name__}; return None, an EvalContext or a CallbackResult"
                )
            if result is not None:
                last = result
                if result.context is not None:
                    current = result.context
        if last is None or last.context is None:
            return context
        return last.context


class _Observed(Callbacks):
    """Callbacks watched by others: see :meth:`Callbacks.observed_by`."""

    __slots__ = ("_observer",)

    def __init__(self, callbacks: Callbacks, observer: Callbacks) -> None:
        super().__init__(**{point: list(getattr(callbacks, point)) for point in _POINTS})
        self._observer = observer

    async def run(self, point: str, context: EvalContext, args: Any) -> EvalContext:
        if point.startswith("after_"):
            await self._observer.run(point, context, args)
            return await super().run(point, context, args)
        adopted = await super().run(point, context, args)
        await self._observer.run(point, adopted, args)
        return adopted
