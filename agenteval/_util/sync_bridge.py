"""The one bridge from synchronous entry points to the async core.

Without a running event loop (a script, a terminal) a coroutine runs on a new loop. Inside a
running loop (a Jupyter kernel) the loop is patched once with ``nest_asyncio2`` and the coroutine
runs on that same loop, so objects bound to the kernel's loop keep working. Nothing is patched at
import time.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from agenteval._util.loop_watchdog import watching
from agenteval._util.threads import DaemonDefaultExecutor
from agenteval.errors import ConfigError, attach_report, report_of

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

    Ctrl-C cancels the coroutine (its ``finally`` blocks run) and re-raises ``KeyboardInterrupt``,
    carrying the ``report`` that the cancelled coroutine attached to its error, if any (an
    evaluation keeps its finished cases that way), and that error's notes (where they were saved).
    One Ctrl-C is enough even when code on the event loop never yields, and a loop blocked for
    long is reported with what blocks it (see :mod:`agenteval._util.loop_watchdog`). A
    :class:`~agenteval.errors.ConfigError` (bad input) is raised without the frames inside the event
    loop and without its chained causes.

    Args:
        coroutine: The coroutine to run.

    Returns:
        What the coroutine returned.
    """
    errors: list[BaseException] = []

    async def watched() -> T:
        try:
            return await coroutine
        except BaseException as exc:
            errors.append(exc)
            raise

    # asyncio.run replaces Python's own Ctrl-C handler by one that cancels the coroutine.
    ctrl_c_by_asyncio = signal.getsignal(signal.SIGINT) is signal.default_int_handler

    async def on_new_loop() -> T:
        # A thread stuck in a blocking call must not keep asyncio.run, or the process, from ending.
        asyncio.get_running_loop().set_default_executor(DaemonDefaultExecutor())
        with watching(asyncio.get_running_loop()) as watchdog:
            if not ctrl_c_by_asyncio:
                return await watched()
            with watchdog.ctrl_c_through_blocking_code():
                return await watched()

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    try:
        # Outside the except block above, so the coroutine's errors are not chained to "no running loop".
        if loop is None:
            return asyncio.run(on_new_loop())
        _allow_nested(loop)
        with watching(loop):
            task = loop.create_task(watched())
            try:
                return loop.run_until_complete(task)
            except KeyboardInterrupt:
                task.cancel()
                # Let the task unwind (close sessions, finish callbacks) before surfacing the interrupt.
                loop.run_until_complete(asyncio.gather(task, return_exceptions=True))
                raise
    except KeyboardInterrupt as interrupt:
        _carry_report(interrupt, errors)
        # The cancellation it ended is asyncio's inner working, a long traceback of no use to the user.
        interrupt.__suppress_context__ = True
        raise
    except ConfigError as bad_input:
        # Its message says what to fix; the frames inside the event loop, and the errors it was built
        # from, would only bury that under a long traceback.
        raise bad_input.with_traceback(None) from None


def _carry_report(interrupt: KeyboardInterrupt, errors: list[BaseException]) -> None:
    """Ctrl-C reaches the coroutine as a cancellation: move the report it kept, and its notes, onto the interrupt."""
    if report_of(interrupt) is not None:
        return
    for error in errors:
        report = report_of(error)
        if report is not None:
            attach_report(interrupt, report)
            for note in getattr(error, "__notes__", ()):
                interrupt.add_note(note)
            return
