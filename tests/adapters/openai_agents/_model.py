"""An offline Agents SDK ``Model`` whose responses come from a function of the input items.

Each response depends only on the input it gets, so that cases running in parallel each get
theirs; every input is kept, so that tests can check what the model saw.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from agents import ModelResponse, TResponseInputItem, Usage
from agents.agent_output import AgentOutputSchemaBase
from agents.handoffs import Handoff
from agents.items import TResponseOutputItem, TResponseStreamEvent
from agents.model_settings import ModelSettings
from agents.models.interface import Model, ModelTracing
from agents.tool import Tool
from openai.types.responses.response_prompt_param import ResponsePromptParam

Respond = Callable[[list[dict[str, Any]]], list[TResponseOutputItem]]


class FunctionModel(Model):
    """A model answering each call with ``respond(input items)``.

    Args:
        respond: Gets the call's input items (as dicts) and returns the output items.
        name: The model name, as an OpenAI model reports it in ``model``.
        usage: The usage reported with every response.
    """

    def __init__(self, respond: Respond, *, name: str = "scripted-gpt", usage: Usage | None = None) -> None:
        self.respond = respond
        self.model = name
        self.usage = usage if usage is not None else Usage()
        self.inputs: list[list[dict[str, Any]]] = []
        self.instructions: list[str | None] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else [_as_dict(item) for item in input]
        self.inputs.append(items)
        self.instructions.append(system_instructions)
        return ModelResponse(output=self.respond(items), usage=self.usage, response_id=None)

    def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("the tests do not stream")


def _as_dict(item: Any) -> dict[str, Any]:
    return dict(item) if isinstance(item, dict) else dict(item.model_dump(exclude_unset=True))


def user_texts(items: list[dict[str, Any]]) -> list[str]:
    """The texts of the user messages among ``items``, oldest first."""
    return [_text(item) for item in items if item.get("role") == "user"]


def _text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [])
