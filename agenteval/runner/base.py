"""The agent under test, as the evaluation sees it: one async call per user turn."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agenteval.context import EvalContext
from agenteval.evalset.message import Message
from agenteval.evalset.models import Tool
from agenteval.evalset.trace import ExecutionTrace
from agenteval.runner.tool_replay import TurnReplay
from agenteval.runner.toolmock import ToolMocks

__all__ = ["Runner", "TurnRequest", "TurnResult", "end_session"]


@dataclass(slots=True, kw_only=True)
class TurnRequest:
    """One user turn to run in a session."""

    message: Message
    """The user's message."""
    session_id: str
    """Session the turn belongs to; every turn of a case shares it."""
    user_id: str = ""
    """User the agent runs as (from the case's ``sessionInput.userId``)."""
    context_messages: list[Message] = field(default_factory=list)
    """Context to inject into the agent's model calls (the case's ``contextMessages``)."""
    state: dict[str, Any] = field(default_factory=dict)
    """Runtime state for the turn (the case's ``sessionInput.state``)."""
    context: EvalContext = field(default_factory=EvalContext)
    """Values set by callbacks."""
    tool_mocks: ToolMocks | None = None
    """The turn's tool mocks (the eval set's ``toolMock`` for this side), when it has any."""
    tool_replay: TurnReplay | None = None
    """The recorded tool results that answer this turn's calls (``tool_replay`` of the options), when replaying;
    consulted after :attr:`tool_mocks`."""


@dataclass(slots=True, kw_only=True)
class TurnResult:
    """What the agent did in one turn."""

    final_response: Message | None = None
    """The agent's final reply; ``None`` when it gave none."""
    tools: list[Tool] = field(default_factory=list)
    """Tool calls with arguments and results, in call order."""
    invocation_id: str = ""
    """The agent's own id for the turn, when it has one (a new UUID otherwise)."""
    execution_trace: ExecutionTrace | None = None
    """Execution trace of the turn, when the agent records one."""


@runtime_checkable
class Runner(Protocol):
    """Runs the agent for one user turn.

    Turns of a case run one after another with the same ``session_id``; the runner keeps whatever
    history it needs per session. An exception fails that case only.

    A runner may also define ``end_session(session_id)`` (plain or ``async``): it is called once a
    case's turns are done, so per-session state can be released.
    """

    async def run(self, request: TurnRequest) -> TurnResult:
        """Run one turn and report what the agent did."""
        ...


async def end_session(runner: Runner, session_id: str) -> None:
    """Call the runner's optional ``end_session`` hook (see :class:`Runner`)."""
    hook = getattr(runner, "end_session", None)
    if callable(hook):
        outcome = hook(session_id)
        if inspect.isawaitable(outcome):
            await outcome
