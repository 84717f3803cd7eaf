"""Chat messages, in the agent framework's snake_case JSON."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field

from agenteval._util.trpc_json import WireModel

__all__ = ["Message", "Role"]


class Role(StrEnum):
    """Who wrote a message."""

    UNSET = ""
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class Message(WireModel):
    """One chat message. Evaluators read only :attr:`content`; the other fields are kept verbatim.

    Its JSON keys are snake_case (``tool_calls``, ``content_parts``), unlike the camelCase
    envelopes around it.
    """

    role: Role = Role.UNSET
    """``system``, ``user``, ``assistant`` or ``tool``."""
    content: str = ""
    """The text of the message."""
    content_parts: list[dict[str, Any]] = Field(default_factory=list)
    """Multimodal parts (text, image, audio, video, file), kept in the reference's shape."""
    tool_id: str = ""
    """For a tool message: the id of the tool call it answers."""
    tool_name: str = ""
    """For a tool message: the name of the tool."""
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    """For an assistant message: the tool calls it requests, kept in the reference's shape."""
    reasoning_content: str = ""
    """Model reasoning text, when the provider returns it."""
    reasoning_signature: str = ""
    """Provider signature of the reasoning text."""

    def copied(self) -> Message:
        """A deep copy; for the usual text-only message a shallow one, which is as good and far cheaper."""
        if self.content_parts or self.tool_calls or self.__pydantic_extra__:
            return self.model_copy(deep=True)
        return self.model_copy()

    @classmethod
    def user(cls, content: str) -> Message:
        """Build a user message."""
        return cls(role=Role.USER, content=content)

    @classmethod
    def assistant(cls, content: str) -> Message:
        """Build an assistant message."""
        return cls(role=Role.ASSISTANT, content=content)

    @classmethod
    def system(cls, content: str) -> Message:
        """Build a system message."""
        return cls(role=Role.SYSTEM, content=content)
