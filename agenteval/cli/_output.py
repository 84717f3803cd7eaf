"""What the command prints: text escaped for a terminal, aligned columns, JSON."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from agenteval._util.terminal import printable

__all__ = ["json_text", "one_line", "say", "table"]

REASON_WIDTH = 160
"""The most characters of a reason or a difference shown on one line."""


def say(text: str, stream: TextIO | None = None) -> None:
    """Print ``text`` (to stdout by default), its control characters escaped: ids and messages come from files."""
    print(printable(text, lines=True), file=stream or sys.stdout)


def table(rows: Sequence[Sequence[str]]) -> list[str]:
    """The rows as aligned columns, a rule under the first (the header); one string per line.

    Cells are escaped before the columns are measured, so that an escape cannot break their alignment.
    """
    cells = [[printable(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return lines


def one_line(text: str, width: int = REASON_WIDTH) -> str:
    """The first line of ``text``, cut to ``width`` characters; ``…`` marks what was left out."""
    first, _, rest = text.strip().partition("\n")
    if len(first) > width:
        return first[: width - 1] + "…"
    return f"{first} …" if rest.strip() else first


def json_text(value: object) -> str:
    """``value`` as JSON: NaN and infinities as ``null``, and all ASCII, so that nothing in it can drive a terminal."""
    return json.dumps(_finite(value), indent=2, ensure_ascii=True, allow_nan=False, default=_plain)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(key): _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def _plain(value: object) -> object:
    """A numpy number (from a pandas table) as the Python number it holds."""
    item = getattr(value, "item", None)
    if callable(item):
        return _finite(item())
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
