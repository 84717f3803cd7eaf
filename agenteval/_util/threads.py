"""Worker threads for blocking agent functions that never keep the process alive."""

from __future__ import annotations

import functools
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

__all__ = ["DaemonDefaultExecutor", "DaemonThreadPool"]

P = ParamSpec("P")
T = TypeVar("T")


class DaemonThreadPool(Executor):
    """Runs calls in at most ``max_threads`` threads, started on demand and reused, as ``ThreadPoolExecutor`` does.

    Its threads are daemon threads, which the interpreter does not wait for at exit (it joins every
    ``ThreadPoolExecutor`` thread): a call that never returns, such as an agent stuck on a lock or a
    socket and left behind by ``turn_timeout`` or Ctrl-C, cannot keep the process from exiting. Such a
    call still holds its thread, as it would in a ``ThreadPoolExecutor``.

    Args:
        max_threads: Most threads, so most calls running at once; later calls wait for a free thread.
        name: Prefix of the threads' names.
    """

    def __init__(self, max_threads: int, name: str) -> None:
        self._max_threads = max_threads
        self._name = name
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]]] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._threads = 0
        self._lock = threading.Lock()

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Schedule ``fn(*args, **kwargs)`` and return its future."""
        future: Future[T] = Future()
        self._calls.put((future, functools.partial(fn, *args, **kwargs)))
        if not self._idle.acquire(blocking=False):
            self._add_thread()
        return future

    def _add_thread(self) -> None:
        with self._lock:
            if self._threads >= self._max_threads:
                return
            self._threads += 1
            name = f"{self._name}_{self._threads - 1}"
        threading.Thread(target=self._serve, name=name, daemon=True).start()

    def _serve(self) -> None:
        while True:
            _run(*self._calls.get())
            self._idle.release()


def _run(future: Future[Any], call: Callable[[], Any]) -> None:
    # A function of its own, so that nothing of a finished call is held while its thread waits for the next.
    if not future.set_running_or_notify_cancel():
        return
    try:
        result = call()
    except BaseException as error:
        future.set_exception(error)
    else:
        future.set_result(result)


class DaemonDefaultExecutor(ThreadPoolExecutor):
    """An event loop's default executor (``asyncio.to_thread``, ``run_in_executor(None, ...)``) on daemon threads.

    asyncio takes only a :class:`ThreadPoolExecutor` as a loop's default executor, and the interpreter
    joins every thread one starts, at exit and when the loop shuts down: a blocking call that never
    returns (a sync tool a framework runs in a thread, left behind by ``turn_timeout`` or Ctrl-C) would
    keep the process alive. This one is a ``ThreadPoolExecutor`` by type only: it starts none of its
    own threads and hands every call to a :class:`DaemonThreadPool` of asyncio's default size;
    ``shutdown`` does not wait for calls still running.
    """

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self._pool = DaemonThreadPool(min(32, (os.cpu_count() or 1) + 4), "agenteval-default")

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Schedule ``fn(*args, **kwargs)`` on a daemon thread and return its future."""
        return self._pool.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Accept no more calls; calls still running are left to finish, or not, on their daemon threads."""
        super().shutdown(wait=False, cancel_futures=cancel_futures)
