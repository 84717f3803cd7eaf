"""Where an error a user's code raised comes from, for error messages: ``file.py:42 in function``."""

from __future__ import annotations

from pathlib import Path
from traceback import walk_tb

from agenteval._code_location import code_location

__all__ = ["raised_at"]

_PACKAGE = Path(__file__).resolve().parent


def raised_at(error: BaseException) -> str | None:
    """Where ``error`` was raised, as ``file.py:42 in function``: its innermost frame outside agenteval.

    An error agenteval raises for the user's code (a tool called with wrong arguments, a missing
    context key) thus points at the user's line; one with no frame outside agenteval (an agent that
    returned ``None``) gets ``None``.
    """
    for frame, line in reversed(list(walk_tb(error.__traceback__))):
        shown = _file_name(frame.f_code.co_filename)
        if shown is not None:
            return f"{code_location(frame.f_code.co_filename, line, shown)} in {frame.f_code.co_name}"
    return None


def _file_name(filename: str) -> str | None:
    """A source file as an error message names it; ``None`` for agenteval's own files.

    Relative to the working directory when it is under it, else its base name: short either way.
    """
    path = Path(filename)
    if not path.is_absolute():  # such as "<string>"
        return path.name
    path, cwd = path.resolve(), Path.cwd()
    if path.is_relative_to(_PACKAGE):
        return None
    return path.relative_to(cwd).as_posix() if path.is_relative_to(cwd) else path.name
