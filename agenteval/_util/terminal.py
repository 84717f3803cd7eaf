r"""Text for a terminal, with the characters that could hide or rewrite what it shows escaped.

Ids, agent replies and error messages come from eval-set files and agents: an escape sequence in
one (``"\x1b[8m"`` hides what follows, ``"\x1b[2K"`` erases the line) or a bidirectional override
(``"\u202e"`` shows the rest reversed) would change what the user reads. Everything the command line
and the text progress bar print goes through :func:`printable`.
"""

from __future__ import annotations

import re

__all__ = ["printable"]

_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
"""C0 and C1 control characters, DEL and the bidi embeddings, overrides and isolates; not tab or newline."""
_UNSAFE_ON_ONE_LINE = re.compile(f"[{_UNSAFE}\t\n]")
_UNSAFE_IN_LINES = re.compile(f"[{_UNSAFE}]")


def printable(text: str, *, lines: bool = False) -> str:
    r"""``text`` with every control and bidi-override character shown as its escape (``\x1b``, ``\u202e``, ``\r``).

    Args:
        text: Any text.
        lines: Keep newlines and tabs, for text printed as lines of its own (a message); by default
            they are escaped too, for text inside a line (a table cell, an id).

    Returns:
        ``text`` itself when it holds none of those characters.
    """
    return (_UNSAFE_IN_LINES if lines else _UNSAFE_ON_ONE_LINE).sub(_escape, text)


_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    character = match.group()
    code = ord(character)
    return _SHORT.get(character) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
