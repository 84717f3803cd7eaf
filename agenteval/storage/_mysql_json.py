"""Where a JSON document the MySQL stores write nests deeper than the server accepts.

A server limits how deeply arrays and objects may nest in a ``JSON`` column: MariaDB's ``JSON``
is a ``LONGTEXT`` with a ``CHECK (JSON_VALID(...))`` constraint, which fails (error 4025, a
message that does not mention nesting) for 32 levels or more; MySQL refuses more than 100 (error
3157). The server says only that the document was refused; :func:`too_deep` finds the place.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Nesting", "too_deep"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Nesting:
    """The first container of a document nested deeper than a limit.

    Attributes:
        path: Where it is, e.g. ``evalCaseResults[0].evalMetricResultPerInvocation[0]...``.
        level: Its level (the document's outermost array or object is level 1).
        eval_id: The ``evalId`` of the innermost object around it that has one, or ``""``.
    """

    path: str
    level: int
    eval_id: str


def _step(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _IDENTIFIER.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _children(value: Any) -> list[tuple[str | int, Any]]:
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, list):
        return list(enumerate(value))
    return []


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def too_deep(documents: Mapping[str, str], limit: int) -> Nesting | None:
    """Find the first array or object nested deeper than ``limit`` levels, in document order.

    Args:
        documents: JSON texts by the path of their root (``"evalCaseResults"``, or ``""``).
        limit: The most levels allowed.

    Returns:
        The first container at level ``limit + 1``, or ``None`` when every document is within the limit.
    """
    for root, text in documents.items():
        # Depth first, children in order: the stack holds (value, level, path, innermost evalId).
        stack: list[tuple[Any, int, str, str]] = [(_parsed(text), 1, root, "")]
        while stack:
            value, level, path, eval_id = stack.pop()
            if not isinstance(value, dict | list):
                continue
            if isinstance(value, dict) and isinstance(value.get("evalId"), str):
                eval_id = value["evalId"]
            if level > limit:
                return Nesting(path, level, eval_id)
            stack.extend((child, level + 1, _step(path, key), eval_id) for key, child in reversed(_children(value)))
    return None
