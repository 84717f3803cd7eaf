"""Decoding of JSON judge answers: tolerant of a surrounding code fence, strict about the JSON itself."""

from __future__ import annotations

import json
from typing import Any

from agenteval.errors import JudgeOutputError
from agenteval.llm.base import ChatResponse

__all__ = ["decode_judge_json", "json_field", "json_type_name", "strip_code_fence"]

_FENCE = "```"


def strip_code_fence(content: str) -> str:
    """Remove a Markdown code fence around a judge answer, as the reference does.

    Only a text that starts with a fence is touched: a leading ```` ```json ````, ```` ```JSON ````
    or ```` ``` ```` and a trailing ```` ``` ```` are dropped, then surrounding whitespace.

    Args:
        content: The judge answer, already trimmed.

    Returns:
        The text inside the fence, or ``content`` unchanged.
    """
    if not content.startswith(_FENCE):
        return content
    for prefix in ("```json", "```JSON", _FENCE):
        content = content.removeprefix(prefix)
    return content.removesuffix(_FENCE).strip()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def decode_judge_json(response: ChatResponse) -> Any:
    """Decode a judge answer that must be JSON.

    The answer is trimmed, a surrounding code fence is removed, and the rest must be exactly one
    JSON value (``NaN`` and ``Infinity`` are refused, as in Go).

    Args:
        response: The judge's reply.

    Returns:
        The decoded value.

    Raises:
        JudgeOutputError: The answer is empty or not valid JSON.
    """
    content = response.content.strip()
    if not content:
        raise JudgeOutputError("the judge returned an empty answer where JSON was expected")
    content = strip_code_fence(content)
    try:
        return json.loads(content, parse_constant=_reject_constant)
    except ValueError as exc:
        raise JudgeOutputError(f"the judge's answer is not valid JSON ({exc}): {_excerpt(content)}") from exc


def json_field(value: dict[str, Any], name: str) -> Any:
    """Read a key the way Go decodes into a struct field: case-insensitively, the last match winning.

    Args:
        value: A decoded JSON object.
        name: The key.

    Returns:
        The value, or ``None`` when the key is absent (or ``null``).
    """
    folded = name.casefold()
    found: Any = None
    for key, item in value.items():
        if key.casefold() == folded:
            found = item
    return found


def json_type_name(value: Any) -> str:
    """Name the JSON type of a decoded value for an error message.

    Args:
        value: A decoded JSON value.

    Returns:
        ``"null"``, ``"a boolean"``, ``"a number"``, ``"a string"``, ``"an array"`` or ``"an object"``.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _excerpt(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
