"""How messages name a line of the user's code: ``agent.py:12``, or ``In[4], line 2`` in a notebook cell.

IPython compiles each cell into a file name of its own (``<ipython-input-4-…>``; in a Jupyter kernel, a
temporary file such as ``/tmp/ipykernel_123/3508854279.py``) and remembers which cell that was. Its
tracebacks name the cell (``Cell In[4], line 2``) rather than the file, and so do agenteval's messages.
:func:`raised_at` finds where an error the user's code raised comes from, for error messages.
"""

from __future__ import annotations

import sys
from pathlib import Path
from traceback import walk_tb

__all__ = ["code_location", "notebook_cell", "raised_at"]

_PACKAGE = Path(__file__).resolve().parents[1]


def notebook_cell(filename: str) -> str | None:
    """``In[4]`` when ``filename`` is the file IPython compiled cell 4 into; ``None`` for any other file.

    Asks the running IPython (a shell or a kernel) as its own tracebacks do
    (``get_ipython().compile.format_code_name``). IPython is never imported here: when it is not
    imported already, no shell is running.
    """
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    try:
        shell = ipython.get_ipython()
        named = shell.compile.format_code_name(filename) if shell is not None else None
    except Exception:  # a shell whose compiler names no cells
        return None
    if not isinstance(named, tuple) or len(named) != 2:
        return None
    return str(named[1])


def code_location(filename: str, lineno: int, shown: str | None = None) -> str:
    """A line of code as a message names it: ``In[4], line 2`` in a notebook cell, else ``agent.py:2``.

    Args:
        filename: The code's ``co_filename``.
        lineno: The line number.
        shown: How to name a file that is not a cell; its base name when ``None``.
    """
    cell = notebook_cell(filename)
    if cell is not None:
        return f"{cell}, line {lineno}"
    return f"{Path(filename).name if shown is None else shown}:{lineno}"


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
