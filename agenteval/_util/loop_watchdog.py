"""A watchdog for the event loop an evaluation runs on.

Code on the loop that never yields (an ``async`` agent computing in a loop, or calling blocking code)
stops every other case, and neither ``turn_timeout`` nor asyncio's Ctrl-C handling (a cancellation
the loop would deliver) can reach it. A thread beside the loop notices when the loop has not run for
:data:`STALL_WARNING_AFTER` seconds while a case runs and logs which case, turn and line is blocking
it; and, for :func:`agenteval._util.sync_bridge.run_sync`'s own loop, it lets one Ctrl-C through to that case.
"""

from __future__ import annotations

import _thread as _thread_module
import asyncio
import contextlib
import logging
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

from agenteval._util.code_location import code_location
from agenteval._util.terminal import printable

__all__ = ["STALL_WARNING_AFTER", "LoopWatchdog", "activity", "watching"]

STALL_WARNING_AFTER = 5.0
"""Seconds the loop may not run before the watchdog says what is blocking it."""
_UNRESPONSIVE_AFTER = 1.0
"""Seconds a case may block the loop after a Ctrl-C before the Ctrl-C is raised in it."""
_POLL = 0.25
"""Seconds between two looks at the loop."""

_log = logging.getLogger("agenteval")

_activities: dict[asyncio.Task[Any], tuple[str, ...]] = {}
"""What each task is doing (``case 'a' (run 1)``, ``turn 2``), innermost last, for the stall warning."""

_watchdogs: dict[asyncio.AbstractEventLoop, tuple[LoopWatchdog, int]] = {}
"""The watchdog of each watched loop, and how many :func:`watching` blocks use it."""
_changed = threading.Condition()
"""Guards :data:`_watchdogs`; notified when a loop is watched."""
_watcher: threading.Thread | None = None
"""The one thread that looks at every watched loop (one per call would cost more than a short call)."""


class activity:  # lowercase, as contextlib.suppress: used like a function, ``with activity("turn 2"):``
    """Name what the current task does inside the ``with`` block (``case 'a' (run 1)``), for the stall warning.

    A class rather than a generator: it wraps every case and turn, so it is kept cheap.
    """

    __slots__ = ("_label", "_outer", "_task")

    def __init__(self, label: str) -> None:
        self._label = label
        self._outer: tuple[str, ...] = ()
        self._task: asyncio.Task[Any] | None = None

    def __enter__(self) -> None:
        task = self._task = asyncio.current_task()
        if task is not None:
            self._outer = _activities.get(task, ())
            _activities[task] = (*self._outer, self._label)

    def __exit__(self, *exc_info: object) -> None:
        task = self._task
        if task is None:
            return
        if self._outer:
            _activities[task] = self._outer
        else:
            _activities.pop(task, None)


@contextlib.contextmanager
def watching(loop: asyncio.AbstractEventLoop) -> Iterator[LoopWatchdog]:
    """Watch ``loop`` (from its own thread) while in the block; nested blocks share one watchdog."""
    global _watcher
    with _changed:
        watchdog, users = _watchdogs.get(loop) or (LoopWatchdog(loop), 0)
        _watchdogs[loop] = (watchdog, users + 1)
        if _watcher is None:
            _watcher = threading.Thread(target=_watch_all, name="agenteval-loop-watchdog", daemon=True)
            _watcher.start()
        _changed.notify()
    try:
        yield watchdog
    finally:
        with _changed:
            watchdog, users = _watchdogs.pop(loop)
            if users > 1:
                _watchdogs[loop] = (watchdog, users - 1)


def _forget_the_watcher() -> None:
    # A forked child has none of its parent's threads: it starts its own watcher when it needs one.
    global _watcher, _changed
    _watcher, _changed = None, threading.Condition()
    _watchdogs.clear()


os.register_at_fork(after_in_child=_forget_the_watcher)


def _watch_all() -> None:
    while True:
        with _changed:
            _changed.wait_for(lambda: bool(_watchdogs))
            watchdogs = [watchdog for watchdog, _ in _watchdogs.values()]
        for watchdog in watchdogs:
            watchdog.look()
        time.sleep(_POLL)


class LoopWatchdog:
    """Asks the loop to answer every :data:`_POLL` seconds (from the watchdog thread) and acts when it does not.

    Create it on the loop's thread.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._loop_thread = threading.get_ident()
        self._asked_at: float | None = None
        """When the loop was asked to answer and has not yet; ``None`` while it is answering."""
        self._warned_at: float | None = None
        self._ctrl_c_at: float | None = None
        """When the first Ctrl-C was passed to asyncio's handler."""
        self._forwarded_at = -math.inf
        """When the watchdog last passed the Ctrl-C on to a case blocking the loop."""
        self._forwarding = False
        """Whether the Ctrl-C the main thread is about to handle comes from the watchdog."""

    @contextlib.contextmanager
    def ctrl_c_through_blocking_code(self) -> Iterator[None]:
        """Inside the block, a Ctrl-C that a case blocking the loop keeps from taking effect is raised in that case.

        ``asyncio.run`` answers the first Ctrl-C by cancelling its task, which takes effect when the
        loop runs again: never, if a case's code on it does not yield. Once a case has kept the loop
        from running for :data:`_UNRESPONSIVE_AFTER` seconds since that Ctrl-C, the cancellation is
        raised where the main thread is (the blocking code), as a ``CancelledError``, and so for every
        case that blocks the loop before the evaluation has stopped (as after any Ctrl-C, keeping its
        finished cases). Code outside the cases (saving the partial result) is left to finish. Another
        Ctrl-C, when no case is blocking the loop, raises ``KeyboardInterrupt`` as usual.

        Only in the main thread (where signals are handled), and only when asyncio's handler is the
        one installed; otherwise the block changes nothing.
        """
        asyncio_handler = signal.getsignal(signal.SIGINT)
        if (
            threading.current_thread() is not threading.main_thread()
            or not callable(asyncio_handler)
            or asyncio_handler is signal.default_int_handler
        ):
            yield
            return

        def on_ctrl_c(signum: int, frame: FrameType | None) -> None:
            forwarded, self._forwarding = self._forwarding, False
            if (forwarded and self._case_blocking()) or self._ctrl_c_overdue():
                raise asyncio.CancelledError
            if forwarded:  # the case let the loop run in the meantime: the cancellation is on its way
                return
            if self._ctrl_c_at is None:
                self._ctrl_c_at = time.monotonic()
            asyncio_handler(signum, frame)

        signal.signal(signal.SIGINT, on_ctrl_c)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, asyncio_handler)
            self._ctrl_c_at = None

    def _case_blocking(self) -> bool:
        """Whether the loop has not answered and the task running on it is running a case."""
        return self._asked_at is not None and bool(self._running_case())

    def _running_case(self) -> str:
        """What the task running on the loop is doing, if it is running a case (``case 'a' (run 1), turn 2``)."""
        task = asyncio.current_task(self._loop)
        return ", ".join(_activities.get(task, ())) if task is not None else ""

    def _ctrl_c_overdue(self) -> bool:
        """Whether a case has blocked the loop for :data:`_UNRESPONSIVE_AFTER` s since the first Ctrl-C.

        Counted from the Ctrl-C, the loop's last answer or the last Ctrl-C passed on, whichever is later:
        once a blocking case is cancelled, the next case to block the loop can be another.
        """
        pressed_at, asked_at = self._ctrl_c_at, self._asked_at
        if pressed_at is None or asked_at is None:
            return False
        since = max(pressed_at, asked_at, self._forwarded_at)
        return time.monotonic() - since >= _UNRESPONSIVE_AFTER and self._case_blocking()

    def look(self) -> None:
        """Ask the loop to answer, or, if it has not answered the last ask, act: warn, pass on a Ctrl-C."""
        now = time.monotonic()
        if self._asked_at is None:
            self._asked_at = now
            with contextlib.suppress(RuntimeError):  # the loop was closed: the watching block is ending
                self._loop.call_soon_threadsafe(self._answer)
            return
        # Only a case is named: the library's own long stretches (a report of many cases) are not a fault.
        case = self._running_case() if self._warned_at is None and now - self._asked_at >= STALL_WARNING_AFTER else ""
        if case:
            self._warned_at = self._asked_at
            _log.warning(
                "the event loop has not run for %g s: %s is blocking it%s. Code on the event loop must await: "
                "an async agent (or metric) that computes or calls blocking code holds up every case, and "
                "turn_timeout cannot stop it (run blocking work with asyncio.to_thread, or make the agent a plain "
                "function); Ctrl-C stops the evaluation and keeps the finished cases",
                STALL_WARNING_AFTER,
                case,
                self._where(),
            )
        if not self._forwarding and self._ctrl_c_overdue():
            self._forwarded_at = now
            self._forwarding = True
            # As if Ctrl-C were pressed again: the main thread's handler raises it in the blocking case.
            _thread_module.interrupt_main(signal.SIGINT)

    def _answer(self) -> None:
        answered_at = time.monotonic()
        if self._warned_at is not None:
            _log.warning("the event loop runs again, after %.1f s", answered_at - self._warned_at)
            self._warned_at = None
        self._asked_at = None

    def _where(self) -> str:
        frame = sys._current_frames().get(self._loop_thread)
        if frame is None:
            return ""
        code = frame.f_code
        return f", at {printable(code_location(code.co_filename, frame.f_lineno))} in {printable(code.co_name)}"
