"""The one bridge from synchronous entry points to the async core.

Without a running event loop (a script, a terminal) a coroutine runs on a new loop. Inside a
running loop (a Jupyter kernel) the loop is patched once with ``nest_asyncio2`` and the coroutine
runs on that same loop, so objects bound to the kernel's loop keep working. Nothing is patched at
import time.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")

_patch_lock = threading.Lock()


def _allow_nested(loop: asyncio.AbstractEventLoop) -> None:
    with _patch_lock:
        # nest_asyncio2 marks what it patched; asking the loop avoids keeping (reusable) loop ids.
        if getattr(loop, "_nest_patched", False):
            return
        import nest_asyncio2

        nest_asyncio2.apply(loop)


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion from synchronous code and return its result.

    Ctrl-C cancels the coroutine (its ``finally`` blocks run) and re-raises ``KeyboardInterrupt``.

    Args:
        coroutine: The coroutine to run.

    Returns:
        What the coroutine returned.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    _allow_nested(loop)
    task = loop.create_task(coroutine)
    try:
        return loop.run_until_complete(task)
    except KeyboardInterrupt:
        task.cancel()
        # Let the task unwind (close sessions, finish callbacks) before surfacing the interrupt.
        loop.run_until_complete(asyncio.gather(task, return_exceptions=True))
        raise
