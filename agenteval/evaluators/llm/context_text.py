"""Text a judge reads about a turn: message contents, grounding context and knowledge-search results."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agenteval.errors import AgentEvalError, ConfigError, describe_exception
from agenteval.evalset.message import Message
from agenteval.evalset.models import Invocation, Tool
from agenteval.evaluators.llm.judge_json import json_type_name

__all__ = [
    "current_turns",
    "KNOWLEDGE_TOOLS",
    "NO_KNOWLEDGE_RESULTS",
    "NO_VALIDATION_CONTEXT",
    "grounding_context",
    "knowledge_search_results",
    "message_text",
    "validation_context",
]

NO_VALIDATION_CONTEXT = "No validation context was captured."
"""Grounding context of a turn (or of all turns) that recorded nothing."""

NO_KNOWLEDGE_RESULTS = "No knowledge search results were found."
"""Retrieved knowledge of a turn without knowledge-search calls."""

KNOWLEDGE_TOOLS = frozenset({"knowledge_search", "knowledge_search_with_agentic_filter"})
"""Tool names whose results are knowledge-search responses."""


def current_turns(actuals: Sequence[Invocation], expecteds: Sequence[Invocation]) -> tuple[Invocation, Invocation]:
    """The turn being judged: the last actual turn and the last expected one.

    Raises:
        ConfigError: Either list is empty.
    """
    if not actuals:
        raise ConfigError("actuals is empty")
    if not expecteds:
        raise ConfigError("expecteds is empty")
    return actuals[-1], expecteds[-1]


def message_text(message: Message | None) -> str:
    """The text content of a message, ``""`` when there is none."""
    return message.content if message is not None else ""


def _go_value(value: Any) -> Any:
    """A copy of a JSON value shaped the way Go writes it: object keys sorted, ``18.0`` as ``18``."""
    if isinstance(value, dict):
        return {str(key): _go_value(value[key]) for key in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [_go_value(item) for item in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


def _dumps(value: Any, *, indent: int | None = None) -> str:
    separators = (",", ": ") if indent is not None else (",", ":")
    return json.dumps(value, indent=indent, separators=separators, ensure_ascii=False, allow_nan=False)


def _tools_sections(tools: Sequence[Tool]) -> tuple[str, str]:
    calls: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for tool in tools:
        call: dict[str, Any] = {}
        output: dict[str, Any] = {}
        for target in (call, output):
            if tool.id:
                target["id"] = tool.id
            if tool.name:
                target["name"] = tool.name
        try:
            if tool.arguments is not None:
                call["args"] = _go_value(tool.arguments)
            if tool.result is not None:
                output["output"] = _go_value(tool.result)
            _dumps(call)
            _dumps(output)
        except (TypeError, ValueError) as exc:
            raise AgentEvalError(
                f"format tool calls and outputs: tool {tool.name} cannot be written as JSON: {describe_exception(exc)}"
            ) from exc
        calls.append(call)
        outputs.append(output)
    return (_dumps(calls, indent=2) if calls else "", _dumps(outputs, indent=2) if outputs else "")


def grounding_context(actual: Invocation) -> str:
    """What one turn gives a hallucination judge as evidence.

    Sections, each present only when non-empty: ``User prompt:``, ``Context messages:`` (one
    ``- [role] text`` line per message), ``tool_calls:`` (JSON ``[{id, name, args}]``) and
    ``tool_outputs:`` (JSON ``[{id, name, output}]``), separated by blank lines. Intermediate
    responses are not evidence.

    Args:
        actual: The turn.

    Returns:
        The sections, or :data:`NO_VALIDATION_CONTEXT` when there is none.

    Raises:
        AgentEvalError: A tool's arguments or result cannot be written as JSON.
    """
    sections: list[str] = []
    prompt = message_text(actual.user_content).strip()
    if prompt:
        sections.append("User prompt:\n" + prompt)
    lines = [
        f"- [{message.role.value}] {message.content.strip()}"
        for message in actual.context_messages
        if message.content.strip()
    ]
    if lines:
        sections.append("Context messages:\n" + "\n".join(lines))
    calls, outputs = _tools_sections(actual.tools)
    if calls:
        sections.append("tool_calls:\n" + calls)
    if outputs:
        sections.append("tool_outputs:\n" + outputs)
    return "\n\n".join(sections) if sections else NO_VALIDATION_CONTEXT


def validation_context(actuals: Sequence[Invocation]) -> str:
    """The grounding context of every turn so far, oldest first, separated by blank lines.

    Turns that captured nothing are left out; :data:`NO_VALIDATION_CONTEXT` when none captured anything.

    Raises:
        AgentEvalError: A tool's arguments or result cannot be written as JSON.
    """
    contexts: list[str] = []
    for index, actual in enumerate(actuals):
        try:
            text = grounding_context(actual)
        except AgentEvalError as exc:
            raise AgentEvalError(f"actual {index}: {exc}") from exc
        if text != NO_VALIDATION_CONTEXT:
            contexts.append(text)
    return "\n\n".join(contexts) if contexts else NO_VALIDATION_CONTEXT


def _field(value: dict[str, Any], name: str) -> Any:
    found: Any = None
    for key, item in value.items():
        if str(key).casefold() == name:
            found = item
    return found


def _document(value: Any, index: int) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"documents[{index}] must be an object, got {json_type_name(value)}")
    document_id = _field(value, "id")
    text = _field(value, "text")
    metadata = _field(value, "metadata")
    score = _field(value, "score")
    if document_id is not None and not isinstance(document_id, str):
        raise ValueError(f"documents[{index}].id must be a string, got {json_type_name(document_id)}")
    if text is not None and not isinstance(text, str):
        raise ValueError(f"documents[{index}].text must be a string, got {json_type_name(text)}")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValueError(f"documents[{index}].metadata must be an object, got {json_type_name(metadata)}")
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
        raise ValueError(f"documents[{index}].score must be a number, got {json_type_name(score)}")
    # The judge is asked to cite documents, so their ids stay in the prompt (as the reference keeps them).
    document: dict[str, Any] = {"id": document_id} if document_id else {}
    document["text"] = text or ""
    if metadata:
        document["metadata"] = _go_value(metadata)
    document["score"] = _go_value(float(score or 0))
    return document


def _knowledge_response(result: Any) -> dict[str, Any]:
    """Re-read a knowledge-search result as ``{documents: [{id, text, metadata, score}], message}``."""
    if isinstance(result, str):
        # A Python tool may hand back the JSON text of its response rather than the decoded object.
        try:
            result = json.loads(result)
        except ValueError as exc:
            raise ValueError("the result is a string that is not a JSON object") from exc
    if result is None:
        return {"documents": None}
    if not isinstance(result, dict):
        raise ValueError(f"the result must be an object, got {json_type_name(result)}")
    documents = _field(result, "documents")
    message = _field(result, "message")
    if documents is not None and not isinstance(documents, list):
        raise ValueError(f"documents must be an array, got {json_type_name(documents)}")
    if message is not None and not isinstance(message, str):
        raise ValueError(f"message must be a string, got {json_type_name(message)}")
    response: dict[str, Any] = {
        "documents": None if documents is None else [_document(item, i) for i, item in enumerate(documents)]
    }
    if message:
        response["message"] = message
    return response


def knowledge_search_results(tools: Sequence[Tool]) -> str:
    """The results of a turn's knowledge-search calls, one compact JSON line each.

    Only tools named in :data:`KNOWLEDGE_TOOLS` count; each result is read as a knowledge-search
    response (``documents`` of ``{text, metadata, score}`` and an optional ``message``).

    Args:
        tools: The turn's tool calls.

    Returns:
        The lines (each ending with a newline), ``""`` when there is none.

    Raises:
        AgentEvalError: A knowledge-search result does not have that shape.
    """
    lines: list[str] = []
    for tool in tools:
        if tool.name not in KNOWLEDGE_TOOLS:
            continue
        try:
            lines.append(_dumps(_knowledge_response(tool.result)) + "\n")
        except (TypeError, ValueError) as exc:
            raise AgentEvalError(f"parse tool {tool.name} response: {exc}") from exc
    return "".join(lines)
