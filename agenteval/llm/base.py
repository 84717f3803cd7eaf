"""What LLM judges and simulated users talk to: a chat model behind one async call."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agenteval.evalset.message import Message
from agenteval.metric.criterion import GenerationConfig

__all__ = ["ChatModel", "ChatRequest", "ChatResponse", "StructuredOutput", "TokenLogprob", "TopLogprob"]


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


@dataclass(slots=True, kw_only=True, frozen=True)
class TopLogprob:
    """One of the most likely tokens at a position of the answer."""

    token: str
    logprob: float
    """Natural log of the token's probability."""


@dataclass(slots=True, kw_only=True, frozen=True)
class TokenLogprob:
    """One token of the answer with its log probability and the most likely alternatives."""

    token: str
    logprob: float
    """Natural log of the token's probability."""
    top_logprobs: tuple[TopLogprob, ...] = ()
    """The most likely tokens at this position, as many as the request's ``top_logprobs`` asked for."""


@dataclass(slots=True, kw_only=True)
class ChatResponse:
    """What the model answered."""

    content: str
    """The text of the answer (for structured output, the JSON text)."""
    usage: dict[str, int] = field(default_factory=dict)
    """Token usage as reported by the provider (``prompt_tokens``, ``completion_tokens``, …)."""
    logprobs: list[TokenLogprob] | None = None
    """The answer's tokens with their log probabilities, when the request's generation config asked for
    ``logprobs`` and the provider returned them; ``None`` otherwise."""


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
