"""Shared fakes for the inference tests: a recording runner, scripted user simulators, eval-set builders."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from types import EllipsisType
from typing import Any

from agenteval.context import EvalContext, current_context
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalset.manager import EvalSetManager
from agenteval.evalset.memory import InMemoryEvalSetManager
from agenteval.evalset.message import Message, Role
from agenteval.evalset.models import EvalCase, EvalSet, Invocation, SessionInput
from agenteval.evalset.trace import ExecutionTrace
from agenteval.evaluators.base import EvaluateResult, PerInvocationResult
from agenteval.evaluators.registry import EvaluatorRegistry
from agenteval.metric.models import EvalMetric
from agenteval.runner import SimulationStart, SimulatorDecision, TurnRequest, TurnResult
from agenteval.service import EvalSetRunResult, EvaluateConfig, EvaluateRequest, InferenceRequest, LocalService
from agenteval.status import EvalStatus

APP = "app"
SET = "set"
SESSION = "session"

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


def trace(name: str) -> ExecutionTrace:
    """A small execution trace, recognisable by its root agent name."""
    return ExecutionTrace(root_agent_name=name, status="completed")


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


# ---------------------------------------------------------------------------- user simulators

Step = SimulatorDecision | Exception | None
"""What a scripted conversation's ``next`` does: return a decision (or ``None``), or raise."""


def say(text: str, role: Role = Role.USER) -> SimulatorDecision:
    """A decision carrying a message."""
    return SimulatorDecision(message=Message(role=role, content=text))


def stop() -> SimulatorDecision:
    """A stop decision."""
    return SimulatorDecision(stop=True)


class ScriptedConversation:
    """A simulated conversation that plays ``steps`` in order (then stops), recording what it saw."""

    def __init__(self, steps: Callable[[int], Step], close_error: Exception | None) -> None:
        self.seen: list[Message | None] = []
        self.closed = 0
        self._steps = steps
        self._close_error = close_error

    async def next(self, last_target_response: Message | None) -> SimulatorDecision:
        self.seen.append(last_target_response)
        step = self._steps(len(self.seen) - 1)
        if isinstance(step, Exception):
            raise step
        return step  # type: ignore[return-value]  # None on purpose: the "decision is nil" path

    async def close(self) -> None:
        self.closed += 1
        if self._close_error is not None:
            raise self._close_error


class ScriptedSimulator:
    """A user simulator whose conversations follow a script.

    Args:
        steps: The decisions of ``next``, in order; after the last one the conversation stops.
        endless: Instead of ``steps``, say ``msg <n>`` forever.
        start_error: Raise this from ``start``.
        close_error: Raise this from every conversation's ``close``.
        no_conversation: Return ``None`` from ``start``.
    """

    def __init__(
        self,
        *steps: Step,
        endless: bool = False,
        start_error: Exception | None = None,
        close_error: Exception | None = None,
        no_conversation: bool = False,
    ) -> None:
        self.starts: list[SimulationStart] = []
        self.start_contexts: list[EvalContext] = []
        self.conversations: list[ScriptedConversation] = []
        self._steps = list(steps)
        self._endless = endless
        self._start_error = start_error
        self._close_error = close_error
        self._no_conversation = no_conversation

    def _step(self, index: int) -> Step:
        if self._endless:
            return say(f"msg {index + 1}")
        return self._steps[index] if index < len(self._steps) else stop()

    async def start(self, request: SimulationStart) -> ScriptedConversation:
        self.starts.append(request)
        self.start_contexts.append(current_context())
        if self._start_error is not None:
            raise self._start_error
        if self._no_conversation:
            return None  # type: ignore[return-value]  # the "conversation is nil" path
        conversation = ScriptedConversation(self._step, self._close_error)
        self.conversations.append(conversation)
        return conversation

    @property
    def conversation(self) -> ScriptedConversation:
        """The only conversation started."""
        assert len(self.conversations) == 1
        return self.conversations[0]


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
    """A case whose conversation has one turn per text (ids ``<eval_id>-<n>``), user ``user``."""
    if "conversation" not in fields:
        fields["conversation"] = [turn(text, f"{eval_id}-{index + 1}") for index, text in enumerate(texts)]
    return EvalCase(
        eval_id=eval_id,
        session_input=SessionInput(user_id="user") if session_input is ... else session_input,
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


def constant_session(context: EvalContext) -> str:
    """The session-id supplier of most tests."""
    return SESSION


def make_service(runner: RecordingRunner, manager: EvalSetManager, **overrides: Any) -> LocalService:
    """A service over ``manager`` whose session ids are all ``session`` unless overridden."""
    options: dict[str, Any] = {"eval_set_manager": manager, "session_id_supplier": constant_session}
    options.update(overrides)
    return LocalService(runner, **options)


def request(*case_ids: str) -> InferenceRequest:
    """An inference request for ``app/set`` (all cases when no id is given)."""
    return InferenceRequest(app_name=APP, eval_set_id=SET, eval_case_ids=list(case_ids))


async def infer_one(runner: RecordingRunner, case: EvalCase, **overrides: Any) -> InferenceResult:
    """Store ``case`` alone, run inference on it and return its only result."""
    service = make_service(runner, await make_manager(case), **overrides)
    results = await service.inference(request())
    assert len(results) == 1
    return results[0]


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


async def wait(event: asyncio.Event, timeout: float = 1.0) -> None:
    """Wait for ``event``, failing the test instead of hanging when it never comes."""
    await asyncio.wait_for(event.wait(), timeout)


# ---------------------------------------------------------------------------- evaluate probe


class RecordingEvaluator:
    """An evaluator that passes every turn and records the actual and expected turns it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[Invocation], list[Invocation]]] = []

    def evaluate(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> EvaluateResult:
        self.calls.append((list(actuals), list(expecteds)))
        return EvaluateResult(
            overall_score=1.0,
            overall_status=EvalStatus.PASSED,
            per_invocation_results=[PerInvocationResult(score=1.0, status=EvalStatus.PASSED) for _ in actuals],
        )


async def evaluate_with_probe(
    service: LocalService, results: list[InferenceResult]
) -> tuple[EvalSetRunResult, RecordingEvaluator]:
    """Evaluate ``results`` with one metric, ``probe``, backed by a :class:`RecordingEvaluator`."""
    probe = RecordingEvaluator()
    run = await service.evaluate(
        EvaluateRequest(
            app_name=APP,
            eval_set_id=SET,
            inference_results=results,
            evaluate_config=EvaluateConfig(eval_metrics=[EvalMetric(metric_name="probe", threshold=0.5)]),
        ),
        registry=EvaluatorRegistry({"probe": probe}),
    )
    return run, probe


def untimed(invocations: Sequence[Invocation]) -> list[Invocation]:
    """``invocations`` without creation timestamps (stores stamp the turns they save)."""
    return [inv.model_copy(update={"creation_timestamp": None}) for inv in invocations]
