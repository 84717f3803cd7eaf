"""What LLM judges and simulated users talk to: a chat model behind one async call."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agenteval.evalset.message import Message
from agenteval.metric.criterion import GenerationConfig

__all__ = ["ChatModel", "ChatRequest", "ChatResponse", "StructuredOutput"]


@dataclass(slots=True, kw_only=True, frozen=True)
class StructuredOutput:
    """Ask the model to answer with JSON matching a schema (OpenAI ``response_format: json_schema``)."""

    name: str
    """Schema name, e.g. ``rubric_response_scores``."""
    schema: dict[str, Any]
    """The JSON Schema of the answer."""
    strict: bool = True
    """Whether the provider must follow the schema exactly."""
    description: str = ""
    """What the answer is."""


@dataclass(slots=True, kw_only=True)
class ChatRequest:
    """One model call."""

    messages: list[Message]
    """The conversation to answer, oldest first."""
    structured_output: StructuredOutput | None = None
    """Constrain the answer to JSON with this schema."""
    generation: GenerationConfig | None = None
    """Sampling options (``max_tokens``, ``temperature``, …)."""


@dataclass(slots=True, kw_only=True)
class ChatResponse:
    """What the model answered."""

    content: str
    """The text of the answer (for structured output, the JSON text)."""
    usage: dict[str, int] = field(default_factory=dict)
    """Token usage as reported by the provider (``prompt_tokens``, ``completion_tokens``, …)."""


@runtime_checkable
class ChatModel(Protocol):
    """A chat model: given messages, produce one answer.

    Implementations: :class:`agenteval.llm.OpenAIChatModel` (any OpenAI-compatible endpoint) and
    the scripted and function-backed models in :mod:`agenteval.testing`. Raise an exception for a
    failed call; it fails the case being judged, not the evaluation.
    """

    async def generate(self, request: ChatRequest) -> ChatResponse:
        """Answer one request."""
        ...
