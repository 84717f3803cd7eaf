"""Pieces of the store contracts (eval sets, metrics) that are the same for every family of stores."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import pytest

M = TypeVar("M")


def empty_name_params(calls: list[tuple[str, Callable[[M], Awaitable[object]], str]]) -> list[Any]:
    """The ``(call, message)`` parameters of a test of empty names, one per ``(id, call, message)``."""
    return [pytest.param(call, message, id=test_id) for test_id, call, message in calls]


def in_several_event_loops(work: Callable[[str], Coroutine[Any, Any, object]], prefixes: str = "xyz") -> None:
    """Run ``work(prefix)`` for each prefix at once, each in its own thread with its own event loop.

    Raises:
        AssertionError: Some run failed (the message lists the errors).
    """
    errors: list[BaseException] = []

    def worker(prefix: str) -> None:
        try:
            with asyncio.Runner() as runner:
                runner.run(work(prefix))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(prefix,)) for prefix in prefixes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
