"""The restricted JSON path of template variable bindings, and Go-compatible compact JSON.

A path is ``$`` (the whole value), ``.key`` and ``[index]`` segments, e.g. ``$.items[0].name``; the
leading ``$`` may be left out (``items[0].name``). Quoted keys, wildcards, filters, slices and negative
indexes are not supported.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

from agenteval.errors import JSONPathError

__all__ = ["encode_compact", "extract"]


class _Number:
    """A JSON number kept as written, so that re-encoding never changes it (``9007199254740993``)."""

    __slots__ = ("literal",)

    def __init__(self, literal: str) -> None:
        self.literal = literal


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_float=_Number, parse_int=_Number, parse_constant=_reject_constant)
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_INDEX = re.compile(r"[+-]?[0-9]+")


def _go_quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _skip_whitespace(text: str, position: int) -> int:
    match = _WHITESPACE.match(text, position)
    return match.end() if match else position


def _parse_source(raw: str, path: str) -> Any:
    where = f"parse source json for path {_go_quote(path)}"
    position = _skip_whitespace(raw, 0)
    try:
        value, end = _DECODER.raw_decode(raw, position)
    except ValueError as exc:
        raise JSONPathError(f"{where}: {exc}") from exc
    rest = _skip_whitespace(raw, end)
    if rest < len(raw):
        # Go's decoder reads a second value: a valid one means "multiple values", anything else is a syntax error.
        try:
            _DECODER.raw_decode(raw, rest)
        except ValueError as exc:
            raise JSONPathError(f"{where}: {exc}") from exc
        raise JSONPathError(f"{where}: multiple JSON values")
    return value


def _parse_key(path: str, start: int) -> tuple[str, int]:
    if start >= len(path):
        raise JSONPathError(f"json path {_go_quote(path)} missing key")
    end = start
    while end < len(path) and path[end] not in ".[":
        if path[end] == "]":
            raise JSONPathError(f"json path {_go_quote(path)} has unexpected ]")
        end += 1
    if end == start:
        raise JSONPathError(f"json path {_go_quote(path)} missing key")
    key = path[start:end]
    if "*" in key:
        raise JSONPathError(f"json path {_go_quote(path)} contains unsupported wildcard")
    return key, end


def _parse_index(path: str, start: int) -> tuple[int, int]:
    close = path.find("]", start)
    if close < 0:
        raise JSONPathError(f"json path {_go_quote(path)} missing ]")
    raw_index = path[start + 1 : close]
    if not raw_index:
        raise JSONPathError(f"json path {_go_quote(path)} missing index")
    if not _INDEX.fullmatch(raw_index):
        raise JSONPathError(f"json path {_go_quote(path)} has invalid index {_go_quote(raw_index)}")
    return int(raw_index), close + 1


def _parse_path(path: str) -> list[str | int]:
    if not path:
        return []
    position = 0
    if path[0] == "$":
        position = 1
        if len(path) > 1 and path[1] not in ".[":
            raise JSONPathError(f"json path {_go_quote(path)} has invalid root selector")
    segments: list[str | int] = []
    while position < len(path):
        char = path[position]
        if char == ".":
            key, position = _parse_key(path, position + 1)
            segments.append(key)
        elif char == "[":
            index, position = _parse_index(path, position)
            segments.append(index)
        else:
            if segments or position != 0:
                raise JSONPathError(f"json path {_go_quote(path)} missing delimiter before key")
            key, position = _parse_key(path, position)
            segments.append(key)
    return segments


def extract(raw_value: str, path: str) -> str:
    """Parse ``raw_value`` as one JSON value and render what ``path`` selects in it.

    Args:
        raw_value: Text holding exactly one JSON value.
        path: ``$``, ``.key`` and ``[index]`` segments (``""`` selects the whole value).

    Returns:
        A string as it is, ``null``/``true``/``false`` for those, anything else (numbers, objects,
        arrays) as compact JSON with sorted keys and numbers exactly as written.

    Raises:
        JSONPathError: The value is not one JSON value, the path is invalid, or it does not match.
    """
    current = _parse_source(raw_value, path)
    for segment in _parse_path(path):
        if isinstance(segment, str):
            if not isinstance(current, dict):
                raise JSONPathError(f"json path {_go_quote(path)} expects object before key {_go_quote(segment)}")
            if segment not in current:
                raise JSONPathError(f"json path {_go_quote(path)} key {_go_quote(segment)} not found")
            current = current[segment]
            continue
        if not isinstance(current, list):
            raise JSONPathError(f"json path {_go_quote(path)} expects array before index {segment}")
        if segment < 0 or segment >= len(current):
            raise JSONPathError(f"json path {_go_quote(path)} index {segment} out of range")
        current = current[segment]
    if isinstance(current, str):
        return current
    return encode_compact(current)


def _go_float(value: float) -> str:
    if not math.isfinite(value):
        raise JSONPathError(f"unsupported value: {value!r}")
    magnitude = abs(value)
    if magnitude == 0 or 1e-6 <= magnitude < 1e21:
        text = format(Decimal(repr(value)), "f")
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return "0" if text in ("-0", "") else text
    text = repr(value)
    # Go writes a one-digit negative exponent without its leading zero: 1e-07 becomes 1e-7.
    return re.sub(r"e-0(\d)$", r"e-\1", text)


def _go_string(text: str) -> str:
    # Go escapes the JavaScript line separators even with HTML escaping off; Python leaves them raw.
    return _go_quote(text).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def encode_compact(value: Any) -> str:
    """Encode a value as Go's ``encoding/json`` does with HTML escaping off.

    Compact, object keys sorted, ``<``, ``>`` and ``&`` left as they are, numbers in Go's float
    format (``1.0`` is written ``1``) unless they come from :func:`extract`, which keeps them as written.

    Args:
        value: JSON-like data (dicts, lists, strings, numbers, booleans, ``None``).

    Returns:
        The JSON text.

    Raises:
        JSONPathError: The value holds something JSON cannot represent.
    """
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, _Number):
        return value.literal
    if isinstance(value, str):
        return _go_string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, dict):
        items = sorted(((str(key), item) for key, item in value.items()), key=lambda pair: pair[0])
        return "{" + ",".join(f"{_go_string(key)}:{encode_compact(item)}" for key, item in items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(encode_compact(item) for item in value) + "]"
    raise JSONPathError(f"json: unsupported type: {type(value).__name__}")
