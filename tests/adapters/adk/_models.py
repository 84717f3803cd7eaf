"""A scripted ADK model for the tests: each reply is computed from the request, so parallel sessions get their own."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

Reply = Callable[[LlmRequest], Awaitable[LlmResponse]]


class FunctionLlm(BaseLlm):
    """An ADK model whose every response is ``await reply(request)``; every request is kept."""

    model: str = "scripted-llm"
    reply: Reply
    requests: list[LlmRequest] = []

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request)
        yield await self.reply(llm_request)


def call(
    tool: str, /, *, usage: tuple[int, int] | None = None, model_version: str | None = None, **args: Any
) -> LlmResponse:
    """A model response that calls one tool."""
    part = types.Part(function_call=types.FunctionCall(name=tool, args=args))
    return LlmResponse(
        content=types.Content(role="model", parts=[part]), usage_metadata=_usage(usage), model_version=model_version
    )


def calls(*calls: tuple[str, dict[str, Any]]) -> LlmResponse:
    """A model response that calls several tools at once."""
    parts = [types.Part(function_call=types.FunctionCall(name=name, args=args)) for name, args in calls]
    return LlmResponse(content=types.Content(role="model", parts=parts))


def say(text: str, usage: tuple[int, int] | None = None, model_version: str | None = None) -> LlmResponse:
    """A model response with text only."""
    return LlmResponse(
        content=types.Content(role="model", parts=[types.Part(text=text)]),
        usage_metadata=_usage(usage),
        model_version=model_version,
    )


def _usage(usage: tuple[int, int] | None) -> types.GenerateContentResponseUsageMetadata | None:
    if usage is None:
        return None
    prompt, candidates = usage
    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=prompt, candidates_token_count=candidates, total_token_count=prompt + candidates
    )


def texts(content: types.Content) -> str:
    return "".join(part.text or "" for part in content.parts or [])


def function_responses(request: LlmRequest) -> list[types.FunctionResponse]:
    """The function responses of the request's last content (what the tools just returned)."""
    last = request.contents[-1]
    return [part.function_response for part in last.parts or [] if part.function_response is not None]


def user_texts(request: LlmRequest) -> list[str]:
    """The text of every user content of the request, oldest first."""
    return [texts(content) for content in request.contents if content.role == "user" and texts(content)]
