"""Inference of one case: run the agent turn by turn (or replay a trace, or simulate a user)."""

from __future__ import annotations

import asyncio
import copy
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import PydanticSerializationError, to_json

from agenteval._util.code_location import raised_at
from agenteval._util.loop_watchdog import activity
from agenteval._util.redaction import redact_free_text
from agenteval._util.trpc_json import depth_message, depth_problem, lone_surrogate_path
from agenteval.context import EvalContext
from agenteval.errors import AgentEvalError, CaseFailure, ConfigError, describe_exception
from agenteval.evalresult.models import ErrorType
from agenteval.evalset.message import Message, Role
from agenteval.evalset.models import (
    ConversationScenario,
    EvalCase,
    EvalMode,
    Invocation,
    ScenarioDriver,
    SessionInput,
    Tool,
    ToolMock,
)
from agenteval.evalset.trace import ExecutionTrace
from agenteval.llm.base import ChatModel
from agenteval.runner.base import Runner, TurnRequest, TurnResult
from agenteval.runner.simulation import SimulatedConversation, SimulationStart, SimulatorDecision, UserSimulator
from agenteval.runner.tool_replay import TurnReplay
from agenteval.runner.toolmock import ToolMocks
from agenteval.service.options import ServiceOptions

__all__ = ["CaseInference", "infer_case", "user_input_only"]

_log = logging.getLogger("agenteval")


@dataclass(slots=True)
class CaseInference:
    """The turns one case produced."""

    inferences: list[Invocation] = field(default_factory=list)
    traces: list[ExecutionTrace | None] = field(default_factory=list)
    expected: list[Invocation] = field(default_factory=list)


def user_input_only(invocations: list[Invocation]) -> list[Invocation]:
    """Return placeholder turns holding only each turn's id and user message."""
    return [Invocation(invocation_id=inv.invocation_id, user_content=inv.user_content) for inv in invocations]


@dataclass(slots=True, kw_only=True)
class _Session:
    runner: Runner
    session_input: SessionInput
    session_id: str
    context_messages: list[Message]
    context: EvalContext
    mock_side: str = ""
    """Which rules of a turn's ``toolMock`` apply (``actual`` or ``expected``); ``""`` for none."""
    tool_mock_model: ChatModel | None = None
    replays: list[TurnReplay] = field(default_factory=list)
    """The replay of each turn's tool calls, by turn index (from ``tool_replay``); a turn past them runs its tools."""
    turn_timeout: float | None = None
    turns_run: int = 0
    state: dict[str, Any] = field(init=False)
    """The agent's copy of ``sessionInput.state``: its changes last for the case, not beyond."""

    def __post_init__(self) -> None:
        self.state = copy.deepcopy(self.session_input.state)

    def _tool_mocks(self, tool_mock: ToolMock | None) -> ToolMocks | None:
        rules = getattr(tool_mock, self.mock_side) if tool_mock is not None and self.mock_side else None
        if not rules:
            return None
        try:
            return ToolMocks(rules, generator=self.tool_mock_model)
        except ConfigError as exc:
            raise CaseFailure(f"tool mock: {exc}") from exc

    async def run_turn(
        self, message: Message, tool_mock: ToolMock | None = None
    ) -> tuple[Invocation, ExecutionTrace | None]:
        request = TurnRequest(
            # The agent gets copies: what it does to them must not reach the eval set or other runs.
            message=message.copied(),
            session_id=self.session_id,
            user_id=self.session_input.user_id,
            context_messages=[context.copied() for context in self.context_messages],
            state=self.state,
            context=self.context,
            tool_mocks=self._tool_mocks(tool_mock),
            tool_replay=self.replays[self.turns_run] if self.turns_run < len(self.replays) else None,
        )
        self.turns_run += 1
        deadline = asyncio.timeout(self.turn_timeout)
        try:
            async with deadline:
                with activity(f"turn {self.turns_run}"):  # named if it blocks the event loop
                    result = await self.runner.run(request)
        except TimeoutError as exc:
            if not deadline.expired():
                raise CaseFailure(f"runner run: {self._agent_error(exc)}", error_type=ErrorType.AGENT) from exc
            raise CaseFailure(
                f"runner run: turn {self.turns_run} timed out after {self.turn_timeout:g} s (turn_timeout)",
                error_type=ErrorType.TIMEOUT,
            ) from exc
        except Exception as exc:
            raise CaseFailure(f"runner run: {self._agent_error(exc)}", error_type=ErrorType.AGENT) from exc
        if not isinstance(result, TurnResult):
            raise CaseFailure(
                f"runner run: the runner returned {type(result).__name__}; return a TurnResult",
                error_type=ErrorType.AGENT,
            )
        if (
            not isinstance(result.final_response, Message | None)
            or not isinstance(result.invocation_id, str)
            or not all(isinstance(tool, Tool) for tool in result.tools)
        ):
            raise CaseFailure(
                "runner run: the TurnResult must hold a Message (or None) as final_response, a str as "
                "invocation_id and Tool objects as tools",
                error_type=ErrorType.AGENT,
            )
        unsaveable = _unsaveable(message, result)
        if unsaveable is not None:
            raise CaseFailure(f"runner run: turn {self.turns_run}: {unsaveable}", error_type=ErrorType.AGENT)
        # Built without validation: the parts are checked above (this runs for every turn).
        invocation = Invocation.trusted(
            invocation_id=result.invocation_id or str(uuid.uuid4()),
            user_content=message,
            final_response=result.final_response,
            tools=list(result.tools),
        )
        return invocation, result.execution_trace

    def _agent_error(self, error: Exception) -> str:
        """Describe what the agent raised (credentials redacted), ending with where it was raised; log its traceback."""
        _log.debug("the agent raised in turn %d of session %s", self.turns_run, self.session_id, exc_info=error)
        # Written into results and HTML meant to be shared: an agent's error may quote its credentials.
        text = redact_free_text(describe_exception(error))
        where = None if isinstance(error, AgentEvalError) else raised_at(error)
        return f"{text} (raised at {where})" if where else text

    async def run_turns(self, inputs: list[Invocation]) -> CaseInference:
        """Run the user turns of ``inputs`` in order; on a failure, keep the traces gathered so far."""
        if not inputs:
            raise CaseFailure("invocations are empty")
        produced = CaseInference()
        for expected in inputs:
            if expected.user_content is None:
                raise CaseFailure(
                    f'invocation user content is nil for eval case invocation "{expected.invocation_id}"',
                    produced.traces,
                )
            try:
                invocation, trace = await self.run_turn(expected.user_content, expected.tool_mock)
            except CaseFailure as failure:
                failure.traces = produced.traces
                raise
            produced.inferences.append(invocation)
            produced.traces.append(trace)
        return produced


def _unsaveable(message: Message, result: TurnResult) -> str | None:
    """What in a turn cannot be saved (``None`` if nothing): a value too deep, or text with a lone surrogate.

    The depth limit is :func:`agenteval._util.trpc_json.depth_limit`.

    A runner may hand back anything: such a value fails its case here, before it reaches a result.
    """
    for index, tool in enumerate(result.tools, start=1):
        found = depth_problem(tool)
        if found is not None:
            return f"tool call {index} ({tool.name!r}): {depth_message(*found)}"
    parts: tuple[tuple[str, object], ...] = (
        ("final_response", result.final_response),
        ("execution_trace", result.execution_trace),
        ("user message", message),
    )
    for name, part in parts:
        found = depth_problem(part)
        if found is not None:
            return f"{name}: {depth_message(*found)}"
    for name, part in (("tools", result.tools), *parts):
        # Writing is the cheap check (C, every turn); the walk that names the place runs only when it fails.
        try:
            to_json(part)
            continue
        except (PydanticSerializationError, ValueError):
            pass
        path = lone_surrogate_path(part)
        if path is not None:
            return (
                f"{name}{'.' if path and not path.startswith('[') else ''}{path} holds a lone surrogate (cut UTF-16,"
                " e.g. half an emoji), which JSON cannot store: decode the text strictly or drop the broken character"
            )
    return None


async def _expected_turns(
    case: EvalCase, inputs: list[Invocation], options: ServiceOptions, session_id: str, context: EvalContext
) -> list[Invocation]:
    runner = options.expected_runner
    if runner is None:
        raise CaseFailure("expected runner is nil")
    if not inputs:
        raise CaseFailure("input invocations are empty")
    for index, invocation in enumerate(inputs):
        if invocation.user_content is None:
            raise CaseFailure(f"input invocation user content is nil at index {index}")
    session = _Session(
        runner=runner,
        session_input=case.session_input or SessionInput(),
        session_id=f"{session_id}-expected",
        context_messages=case.context_messages,
        context=context,
        mock_side="expected",
        tool_mock_model=options.tool_mock_model,
        turn_timeout=options.turn_timeout,
    )
    try:
        return (await session.run_turns(inputs)).inferences
    except CaseFailure as failure:
        raise CaseFailure(f"run expected runner: {failure}", error_type=ErrorType.SIMULATION) from failure


async def _add_expected_turns(
    produced: CaseInference,
    case: EvalCase,
    inputs: list[Invocation],
    options: ServiceOptions,
    session_id: str,
    context: EvalContext,
) -> None:
    """When the case enables it, run the expected runner on ``inputs`` into ``produced.expected``.

    A failure keeps the traces of the actual turns, which did run.
    """
    if not case.expected_runner_enabled:
        return
    try:
        produced.expected = await _expected_turns(case, inputs, options, session_id, context)
    except CaseFailure as failure:
        failure.traces = produced.traces
        raise


async def _simulate(
    simulator: UserSimulator, session: _Session, case: EvalCase, options: ServiceOptions
) -> CaseInference:
    scenario = case.conversation_scenario
    assert scenario is not None
    try:
        conversation = await simulator.start(
            SimulationStart(
                eval_case_id=case.eval_id,
                scenario=scenario,
                session_input=session.session_input,
                session_id=session.session_id,
                context=session.context,
            )
        )
    except Exception as exc:
        raise CaseFailure(f"start user simulator: {describe_exception(exc)}", error_type=ErrorType.SIMULATION) from exc
    if conversation is None:
        raise CaseFailure("user simulator conversation is nil", error_type=ErrorType.SIMULATION)
    try:
        produced = await _converse(conversation, session, scenario, options)
    except BaseException as failure:
        await _close(conversation, failure)
        raise
    await _close(conversation, None)
    return produced


async def _converse(
    conversation: SimulatedConversation, session: _Session, scenario: ConversationScenario, options: ServiceOptions
) -> CaseInference:
    produced = CaseInference()
    limit = scenario.max_allowed_invocations or 0
    last: Message | None = None
    while True:
        if limit > 0 and len(produced.inferences) >= limit:
            return produced
        try:
            decision = await conversation.next(last)
        except Exception as exc:
            raise CaseFailure(
                f"simulate next turn: {describe_exception(exc)}", error_type=ErrorType.SIMULATION
            ) from exc
        message = _user_message(decision)
        if message is None:
            return produced
        if limit <= 0 and len(produced.inferences) >= options.max_simulated_turns:
            raise CaseFailure(
                f"user simulator did not stop within {options.max_simulated_turns} turns; give the scenario a "
                "stopSignal or maxAllowedInvocations, or raise max_simulated_turns",
                error_type=ErrorType.SIMULATION,
            )
        invocation, trace = await session.run_turn(message)
        if invocation.final_response is None:
            raise CaseFailure("target final response is nil", error_type=ErrorType.SIMULATION)
        produced.inferences.append(invocation)
        produced.traces.append(trace)
        last = invocation.final_response


def _user_message(decision: SimulatorDecision | None) -> Message | None:
    """The user message a decision carries, or ``None`` for stop."""
    if decision is None:
        raise CaseFailure("simulate next turn: decision is nil", error_type=ErrorType.SIMULATION)
    if decision.stop:
        return None
    if decision.message is None:
        raise CaseFailure("simulate next turn: message is nil", error_type=ErrorType.SIMULATION)
    message = decision.message.model_copy()
    if message.role == Role.UNSET:
        message.role = Role.USER
    if message.role != Role.USER:
        raise CaseFailure(f'simulate next turn: invalid message role "{message.role}"', error_type=ErrorType.SIMULATION)
    return message


async def _close(conversation: SimulatedConversation, failure: BaseException | None) -> None:
    """Close a simulated conversation; a close error joins a case failure or becomes one."""
    try:
        await conversation.close()
    except Exception as exc:
        text = f"close user simulator conversation: {describe_exception(exc)}"
        if failure is None:
            raise CaseFailure(text, error_type=ErrorType.SIMULATION) from exc
        if isinstance(failure, CaseFailure):
            raise CaseFailure(f"{failure}\n{text}", error_type=failure.error_type) from exc


async def _infer_trace(case: EvalCase, options: ServiceOptions, session_id: str, context: EvalContext) -> CaseInference:
    if case.conversation_scenario is not None:
        raise CaseFailure("conversationScenario is not supported in trace mode")
    if case.actual_conversation:
        actual = case.actual_conversation
        if case.conversation and len(case.conversation) != len(actual):
            raise CaseFailure(
                f"actual conversation length {len(actual)} does not match conversation length {len(case.conversation)}"
            )
        for index, invocation in enumerate(actual):
            if invocation.user_content is None:
                raise CaseFailure(f"actual invocation user content is nil at index {index}")
        inferences = actual
        expected_inputs = (
            [
                Invocation(invocation_id=a.invocation_id, user_content=a.user_content, tool_mock=c.tool_mock)
                for a, c in zip(actual, case.conversation, strict=True)
            ]
            if case.conversation
            else actual
        )
    elif case.conversation:
        inferences = expected_inputs = case.conversation
    else:
        raise CaseFailure("invocations are empty")
    produced = CaseInference(inferences=list(inferences), traces=[inv.execution_trace for inv in inferences])
    await _add_expected_turns(produced, case, expected_inputs, options, session_id, context)
    return produced


async def infer_case(
    runner: Runner, case: EvalCase, options: ServiceOptions, session_id: str, context: EvalContext, *, run_id: int = 0
) -> CaseInference:
    """Produce the actual (and, when enabled, expected) turns of one case.

    Args:
        runner: The agent under test.
        case: The case.
        options: Service options (expected runner, user simulator, guards, tool replay).
        session_id: The case's session id.
        context: The context of the case.
        run_id: The run (1-based; ``0`` outside a multi-run evaluation), whose recordings ``tool_replay`` uses.

    Returns:
        The turns, their traces and the expected turns.

    Raises:
        CaseFailure: Anything that fails the case, with the reference's message.
    """
    if case.session_input is None:
        raise CaseFailure("session input is nil")
    too_deep = depth_problem(case)
    if too_deep is not None:
        raise CaseFailure(f"eval case {case.eval_id}: {depth_message(*too_deep)}")
    if case.actual_conversation and case.eval_mode != EvalMode.TRACE:
        raise CaseFailure("actualConversation is only supported in trace mode")
    if case.eval_mode == EvalMode.TRACE:
        return await _infer_trace(case, options, session_id, context)
    scenario = case.conversation_scenario
    if case.conversation and scenario is not None:
        raise CaseFailure("conversation and conversationScenario cannot both be configured")
    if not case.conversation and scenario is None:
        raise CaseFailure("invocations are empty")
    session = _Session(
        runner=runner,
        session_input=case.session_input,
        session_id=session_id,
        context_messages=case.context_messages,
        context=context,
        mock_side="actual",
        tool_mock_model=options.tool_mock_model,
        replays=options.tool_replay.for_case(case.eval_id, run_id) if options.tool_replay is not None else [],
        turn_timeout=options.turn_timeout,
    )
    if scenario is None:
        produced = await session.run_turns(case.conversation)
        expected_inputs = case.conversation
    else:
        if options.user_simulator is None:
            raise CaseFailure("user simulator is nil")
        if scenario.driver == ScenarioDriver.EXPECTED:
            return await _infer_expected_driver(runner, session, case, options)
        produced = await _simulate(options.user_simulator, session, case, options)
        expected_inputs = produced.inferences
    await _add_expected_turns(produced, case, expected_inputs, options, session_id, context)
    return produced


async def _infer_expected_driver(
    runner: Runner, session: _Session, case: EvalCase, options: ServiceOptions
) -> CaseInference:
    """The expected runner talks to the simulated user; the agent then replays those user turns."""
    if options.expected_runner is None:
        raise CaseFailure("expected runner is nil")
    assert options.user_simulator is not None
    expected_session = _Session(
        runner=options.expected_runner,
        session_input=session.session_input,
        session_id=f"{session.session_id}-expected",
        context_messages=session.context_messages,
        context=session.context,
        turn_timeout=options.turn_timeout,
    )
    simulated = await _simulate(options.user_simulator, expected_session, case, options)
    produced = await session.run_turns(user_input_only(simulated.inferences))
    if case.expected_runner_enabled:
        produced.expected = simulated.inferences
    return produced
