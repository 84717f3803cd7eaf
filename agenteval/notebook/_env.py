"""Where are we running: inside a Jupyter kernel, with ipywidgets, or on a terminal."""

from __future__ import annotations

import sys
from typing import TextIO

__all__ = ["running_in_notebook", "stream_is_terminal", "widgets_available"]


def running_in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (the ``IPKernelApp`` check of tqdm and inspect).

    A plain IPython shell or a script is not a kernel. IPython is never imported here: a kernel has
    already imported it, so when it is absent from ``sys.modules`` the answer is no.
    """
    if "IPython" not in sys.modules:
        return False
    try:
        from IPython import get_ipython

        shell = get_ipython()
        return shell is not None and "IPKernelApp" in shell.config
    except Exception:
        return False


def widgets_available() -> bool:
    """Whether ipywidgets can be imported."""
    try:
        import ipywidgets  # noqa: F401
    except Exception:
        return False
    return True


def stream_is_terminal(stream: TextIO | None) -> bool:
    """Whether ``stream`` is an interactive terminal; ``None`` or a closed stream is not."""
    if stream is None:
        return False
    try:
        return bool(stream.isatty())
    except Exception:
        return False
