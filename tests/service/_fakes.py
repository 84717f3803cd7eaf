"""Shared fakes and builders for the ``LocalService`` tests: eval sets, runner, user simulators, evaluators."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import EllipsisType
from typing import Any

from agenteval.context import EvalContext, current_context
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalMetricResultDetails
from agenteval.evalset.manager import EvalSetManager
from agenteval.evalset.memory import InMemoryEvalSetManager
from agenteval.evalset.message import Message
from agenteval.evalset.models import EvalCase, EvalSet, Invocation, SessionInput
from agenteval.evalset.trace import ExecutionTrace
from agenteval.evaluators.base import EvaluateResult, PerInvocationResult
from agenteval.evaluators.registry import EvaluatorRegistry
from agenteval.metric.models import EvalMetric
from agenteval.runner import SimulationStart, SimulatorDecision, TurnRequest, TurnResult
from agenteval.service import EvalSetRunResult, EvaluateConfig, EvaluateRequest, InferenceRequest, LocalService
from agenteval.status import EvalStatus
from agenteval.testing import ScriptedConversation, ScriptedUserSimulator

APP = "app"
SET = "set"
USER = "user"
SESSION = "session"
CREATED = 1_700_000_000.0
"""Creation time of the turns :func:`make_case` builds (a store fills a missing one with the current time)."""

PASSED = EvalStatus.PASSED
FAILED = EvalStatus.FAILED
NOT_EVALUATED = EvalStatus.NOT_EVALUATED

# ---------------------------------------------------------------------------- eval sets


def turn(
    text: str,
    invocation_id: str = "",
    *,
    final: str | None = None,
    execution_trace: ExecutionTrace | None = None,
    context_messages: list[Message] | None = None,
    **fields: Any,
) -> Invocation:
    """An invocation with a user message and, optionally, a final response and a trace."""
    return Invocation(
        invocation_id=invocation_id or text,
        user_content=Message.user(text),
        final_response=Message.assistant(final) if final is not None else None,
        execution_trace=execution_trace,
        context_messages=context_messages or [],
        **fields,
    )


def make_case(
    eval_id: str,
    *texts: str,
    session_input: SessionInput | None | EllipsisType = ...,
    **fields: Any,
) -> EvalCase:
    """A case with one turn per text (ids ``<eval_id>-<n>``, expected reply ``expected <text>``), user :data:`USER`."""
    if "conversation" not in fields:
        fields["conversation"] = [
            turn(text, f"{eval_id}-{index + 1}", final=f"expected {text}", creation_timestamp=CREATED)
            for index, text in enumerate(texts)
        ]
    return EvalCase(
        eval_id=eval_id,
        session_input=SessionInput(app_name=APP, user_id=USER) if session_input is ... else session_input,
        **fields,
    )


async def make_manager(*cases: EvalCase) -> InMemoryEvalSetManager:
    """An in-memory store holding set ``app/set`` with ``cases``."""
    manager = InMemoryEvalSetManager()
    await manager.create(APP, SET)
    for case in cases:
        await manager.add_case(APP, SET, case)
    return manager


class FixedEvalSetManager(InMemoryEvalSetManager):
    """A store whose ``get`` returns a copy of one eval set as is (duplicate case ids allowed)."""

    def __init__(self, eval_set: EvalSet) -> None:
        super().__init__()
        self._eval_set = eval_set

    async def get(self, app_name: str, eval_set_id: str) -> EvalSet:
        return self._eval_set.model_copy(deep=True)


def trace(name: str) -> ExecutionTrace:
    """A small execution trace, recognisable by its root agent name."""
    return ExecutionTrace(root_agent_name=name, status="completed")


def untimed(invocations: Sequence[Invocation]) -> list[Invocation]:
    """``invocations`` without creation timestamps (stores stamp the turns they save)."""
    return [inv.model_copy(update={"creation_timestamp": None}) for inv in invocations]


# ---------------------------------------------------------------------------- the runner

Handler = Callable[[TurnRequest], TurnResult | Awaitable[TurnResult]]


def reply_text(message: str) -> str:
    """The text the default runner answers ``message`` with."""
    return f"reply to {message}"


def echo(request: TurnRequest) -> TurnResult:
    """Answer every turn with ``reply to <message>`` and an invocation id naming the session and message."""
    content = request.message.content
    return TurnResult(
        final_response=Message.assistant(reply_text(content)),
        invocation_id=f"{request.session_id}/{content}",
    )


class RecordingRunner:
    """A runner that records every request (and the current context) and answers with ``handler``.

    Args:
        handler: Produces each turn's result; may raise or be async. Defaults to :func:`echo`.
        fail_on: Message texts for which the runner raises ``RuntimeError("boom")`` instead.
        traces: Message texts mapped to the execution trace the turn reports.
    """

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        fail_on: Sequence[str] = (),
        traces: dict[str, ExecutionTrace] | None = None,
    ) -> None:
        self.requests: list[TurnRequest] = []
        self.current_contexts: list[EvalContext] = []
        self._handler: Handler = handler or echo
        self._fail_on = set(fail_on)
        self._traces = traces or {}

    async def run(self, request: TurnRequest) -> TurnResult:
        self.requests.append(request)
        self.current_contexts.append(current_context())
        content = request.message.content
        if content in self._fail_on:
            raise RuntimeError("boom")
        result = self._handler(request)
        if inspect.isawaitable(result):
            result = await result
        if content in self._traces:
            result.execution_trace = self._traces[content]
        return result

    @property
    def messages(self) -> list[str]:
        """The user message texts, in call order."""
        return [request.message.content for request in self.requests]

    @property
    def session_ids(self) -> list[str]:
        """The session ids, in call order."""
        return [request.session_id for request in self.requests]


def raised_at(function: Callable[..., Any], statement: str) -> str:
    """How a case's error message ends when ``function`` raised at its line holding ``statement``."""
    lines, first = inspect.getsourcelines(function)
    line = first + next(index for index, source in enumerate(lines) if statement in source)
    path, cwd = Path(inspect.getfile(function)).resolve(), Path.cwd()
    shown = path.relative_to(cwd).as_posix() if path.is_relative_to(cwd) else path.name
    return f" (raised at {shown}:{line} in {function.__name__})"


BOOM = "runner run: RuntimeError: boom" + raised_at(RecordingRunner.run, 'raise RuntimeError("boom")')
"""What a case's error message ends with when :class:`RecordingRunner` fails a turn (``fail_on``)."""


def case_error(message: str, eval_id: str = "c", session_id: str = SESSION) -> str:
    """The error message of a case that failed inside ``inference eval case``."""
    return f"inference eval case (evalCaseID={eval_id}, sessionID={session_id}): {message}"


# ---------------------------------------------------------------------------- user simulators

ENDLESS = [f"msg {n}" for n in range(1, 201)]
"""User turns ``msg 1``, ``msg 2``, …: more than any test lets a simulated conversation run."""


class ProbedConversation(ScriptedConversation):
    """A scripted conversation that also records every ``next`` argument and counts ``close`` calls.

    Args:
        turns: The script, as for :class:`~agenteval.testing.ScriptedUserSimulator`.
        replace: Call indexes (0-based) mapped to what ``next`` returns there instead of asking the script: a
            decision a well-behaved simulator never makes (``None``, no message) or one the test keeps hold of.
        close_error: Raised from every ``close``.
    """

    def __init__(
        self,
        turns: Sequence[Message | Exception | None],
        replace: Mapping[int, SimulatorDecision | None],
        close_error: Exception | None,
    ) -> None:
        super().__init__(turns)
        self.received: list[Message | None] = []
        self.closes = 0
        self._replace = replace
        self._close_error = close_error

    async def next(self, last_target_response: Message | None) -> SimulatorDecision:
        self.received.append(last_target_response)
        call = len(self.received) - 1
        if call in self._replace:
            return self._replace[call]  # type: ignore[return-value]  # None on purpose: the "decision is nil" path
        return await super().next(last_target_response)

    async def close(self) -> None:
        self.closes += 1
        await super().close()
        if self._close_error is not None:
            raise self._close_error


class ProbedSimulator(ScriptedUserSimulator):
    """A scripted user simulator that records the current context of each start and can misbehave.

    Its conversations are :class:`ProbedConversation` objects.

    Args:
        turns: The script, as for :class:`~agenteval.testing.ScriptedUserSimulator`.
        replace: Passed to every conversation (see :class:`ProbedConversation`).
        start_error: Raise this from ``start``.
        close_error: Raise this from every conversation's ``close``.
        no_conversation: Return ``None`` from ``start``.
    """

    def __init__(
        self,
        turns: Sequence[str | Message | Exception | None] = (),
        *,
        replace: Mapping[int, SimulatorDecision | None] | None = None,
        start_error: Exception | None = None,
        close_error: Exception | None = None,
        no_conversation: bool = False,
    ) -> None:
        super().__init__(turns)
        self.start_contexts: list[EvalContext] = []
        self._replace = replace or {}
        self._start_error = start_error
        self._close_error = close_error
        self._no_conversation = no_conversation

    async def start(self, request: SimulationStart) -> ProbedConversation:
        self.starts.append(request)
        self.start_contexts.append(current_context())
        if self._start_error is not None:
            raise self._start_error
        if self._no_conversation:
            return None  # type: ignore[return-value]  # the "conversation is nil" path
        conversation = ProbedConversation(self.turns, self._replace, self._close_error)
        self.conversations.append(conversation)
        return conversation

    @property
    def conversation(self) -> ProbedConversation:
        """The only conversation started."""
        [conversation] = self.conversations
        assert isinstance(conversation, ProbedConversation)
        return conversation

    @property
    def closes(self) -> list[int]:
        """How many times each conversation was closed, in start order."""
        return [
            conversation.closes for conversation in self.conversations if isinstance(conversation, ProbedConversation)
        ]


# ---------------------------------------------------------------------------- the service


def constant_session(context: EvalContext) -> str:
    """The session-id supplier of most tests."""
    return SESSION


def make_service(
    manager: EvalSetManager,
    evaluators: Mapping[str, Any] | None = None,
    *,
    runner: RecordingRunner | None = None,
    **overrides: Any,
) -> LocalService:
    """A service over ``manager`` whose registry holds exactly ``evaluators`` and whose session ids are all ``session``.

    ``runner`` defaults to a fresh :class:`RecordingRunner`; ``overrides`` are further service options.
    """
    options: dict[str, Any] = {
        "eval_set_manager": manager,
        "registry": EvaluatorRegistry(dict(evaluators or {})),
        "session_id_supplier": constant_session,
    }
    options.update(overrides)
    return LocalService(runner or RecordingRunner(), **options)


def inference_request(*case_ids: str) -> InferenceRequest:
    """An inference request for ``app/set`` (all cases when no id is given)."""
    return InferenceRequest(app_name=APP, eval_set_id=SET, eval_case_ids=list(case_ids))


async def infer_one(runner: RecordingRunner, case: EvalCase, **overrides: Any) -> InferenceResult:
    """Store ``case`` alone, run inference on it and return its only result."""
    service = make_service(await make_manager(case), runner=runner, **overrides)
    results = await service.inference(inference_request())
    assert len(results) == 1
    return results[0]


async def wait(event: asyncio.Event, timeout: float = 1.0) -> None:
    """Wait for ``event``, failing the test instead of hanging when it never comes."""
    await asyncio.wait_for(event.wait(), timeout)


# ---------------------------------------------------------------------------- evaluate


def passed_inference(
    case_id: str,
    *invocations: Invocation,
    session_id: str = SESSION,
    user_id: str = "",
    **fields: Any,
) -> InferenceResult:
    """A successful inference result for ``case_id`` holding ``invocations`` (one default turn if none)."""
    values: dict[str, Any] = {
        "app_name": APP,
        "eval_set_id": SET,
        "eval_case_id": case_id,
        "inferences": list(invocations) if invocations else [turn("prompt", f"{case_id}-actual-1", final="answer")],
        "session_id": session_id,
        "user_id": user_id,
        "status": PASSED,
    }
    values.update(fields)
    return InferenceResult(**values)


def evaluate_request(*inference_results: InferenceResult, metrics: Sequence[EvalMetric] = ()) -> EvaluateRequest:
    """An evaluate request for ``app/set``."""
    return EvaluateRequest(
        app_name=APP,
        eval_set_id=SET,
        inference_results=list(inference_results),
        evaluate_config=EvaluateConfig(eval_metrics=list(metrics)),
    )


def per_invocation(
    score: float = 1.0,
    status: EvalStatus = PASSED,
    details: EvalMetricResultDetails | None = None,
) -> PerInvocationResult:
    """One per-invocation result."""
    return PerInvocationResult(score=score, status=status, details=details)


def uniform_result(count: int, score: float = 1.0, status: EvalStatus = PASSED) -> EvaluateResult:
    """``count`` identical turns and the same overall verdict."""
    return EvaluateResult(
        overall_score=score,
        overall_status=status,
        per_invocation_results=[per_invocation(score, status) for _ in range(count)],
    )


@dataclass(slots=True)
class EvaluatorCall:
    """What one ``evaluate`` call received."""

    actuals: list[Invocation]
    expecteds: list[Invocation]
    metric: EvalMetric
    context: EvalContext


ResultFactory = Callable[[Sequence[Invocation], EvalMetric], EvaluateResult]


@dataclass
class _Recorder:
    """Records evaluator calls and computes the answer.

    It returns ``result`` when given, else ``factory(actuals, metric)``, else one passed turn per actual.
    ``error`` is raised instead when set.
    """

    result: EvaluateResult | None = None
    error: BaseException | None = None
    factory: ResultFactory | None = None
    calls: list[EvaluatorCall] = field(default_factory=list)

    def _record(self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric) -> None:
        self.calls.append(EvaluatorCall(list(actuals), list(expecteds), metric, current_context()))

    def _answer(self, actuals: Sequence[Invocation], metric: EvalMetric) -> EvaluateResult:
        if self.error is not None:
            raise self.error
        if self.result is not None:
            return self.result
        if self.factory is not None:
            return self.factory(actuals, metric)
        return uniform_result(len(actuals))


@dataclass
class FakeEvaluator(_Recorder):
    """A synchronous evaluator that records its calls."""

    def evaluate(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> EvaluateResult:
        self._record(actuals, expecteds, metric)
        return self._answer(actuals, metric)


@dataclass
class AsyncFakeEvaluator(_Recorder):
    """An ``async`` evaluator that records its calls and sleeps first.

    ``delay`` is seconds, or a mapping from the first actual's invocation id to seconds.
    """

    delay: float | dict[str, float] = 0.0
    active: int = 0
    max_active: int = 0
    finished: list[str] = field(default_factory=list)

    async def evaluate(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> EvaluateResult:
        self._record(actuals, expecteds, metric)
        key = actuals[0].invocation_id if actuals else ""
        delay = self.delay.get(key, 0.0) if isinstance(self.delay, dict) else self.delay
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            await asyncio.sleep(delay)
        finally:
            self.active -= 1
        self.finished.append(key)
        return self._answer(actuals, metric)


async def evaluate_with_probe(
    service: LocalService, results: list[InferenceResult]
) -> tuple[EvalSetRunResult, FakeEvaluator]:
    """Evaluate ``results`` with one metric, ``probe``, backed by a :class:`FakeEvaluator` that passes every turn."""
    probe = FakeEvaluator()
    run = await service.evaluate(
        evaluate_request(*results, metrics=[EvalMetric(metric_name="probe", threshold=0.5)]),
        registry=EvaluatorRegistry({"probe": probe}),
    )
    return run, probe
