"""Simulated users: who writes the user turns of a ``conversationScenario`` case."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from agenteval.context import EvalContext
from agenteval.evalset.message import Message
from agenteval.evalset.models import ConversationScenario, SessionInput

__all__ = ["SimulatedConversation", "SimulationStart", "SimulatorDecision", "UserSimulator"]


@dataclass(slots=True, kw_only=True)
class SimulationStart:
    """Everything a simulator needs to start a conversation for one case."""

    eval_case_id: str
    """The case."""
    scenario: ConversationScenario
    """The plan the simulated user follows."""
    session_input: SessionInput
    """The case's session (user id, state)."""
    session_id: str
    """The session the agent answers in."""
    context: EvalContext = field(default_factory=EvalContext)
    """Values set by callbacks."""


@dataclass(slots=True)
class SimulatorDecision:
    """The simulated user's next move: a message, or stop."""

    message: Message | None = None
    """The next user message (its role defaults to ``user``)."""
    stop: bool = False
    """End the conversation."""


@runtime_checkable
class SimulatedConversation(Protocol):
    """One simulated conversation, started by :meth:`UserSimulator.start`."""

    async def next(self, last_target_response: Message | None) -> SimulatorDecision:
        """Return the next user message given the agent's last reply (``None`` before the first)."""
        ...

    async def close(self) -> None:
        """End the conversation and release its resources."""
        ...


@runtime_checkable
class UserSimulator(Protocol):
    """Plays the user in ``conversationScenario`` cases."""

    async def start(self, request: SimulationStart) -> SimulatedConversation:
        """Start a conversation for one case."""
        ...
