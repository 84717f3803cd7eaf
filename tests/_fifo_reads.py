"""Reading a FIFO without letting a regression hang the test run."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest


def outcome_within(seconds: float, read: Callable[[], object], fifo: Path) -> BaseException | None:
    """What ``read()`` raised (``None`` if nothing), failing the test if it blocks for ``seconds``.

    A read blocked opening the FIFO is released by opening its other end, as often as it opens it
    again, so that no thread is left blocked (the runner would wait for it at exit).
    """
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            read()
        except BaseException as error:  # handed to the test, which says what it expected
            outcome.append(error)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        for _ in range(100):
            with contextlib.suppress(OSError):  # no reader waiting at this instant
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            thread.join(0.1)
        pytest.fail(f"reading the FIFO {fifo} blocked")
    return outcome[0]
