"""Chat models for LLM judges and simulated users.

:class:`OpenAIChatModel` is imported on first use, so importing this package does not need (or
import) the optional ``openai`` package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agenteval.llm.base import ChatModel, ChatRequest, ChatResponse, StructuredOutput, TokenLogprob, TopLogprob
from agenteval.llm.judge import JudgeOverride, chat_model_for, register_provider

if TYPE_CHECKING:
    from agenteval.llm.openai import OpenAIChatModel

__all__ = [
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "JudgeOverride",
    "OpenAIChatModel",
    "StructuredOutput",
    "TokenLogprob",
    "TopLogprob",
    "chat_model_for",
    "register_provider",
]

_LAZY = frozenset({"OpenAIChatModel"})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from agenteval.llm import openai

        return getattr(openai, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
