"""Agents the Ray workers import by name (this module is on the workers' PYTHONPATH)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any


def graded(text: str) -> str:
    """Deterministic: ``say N`` -> ``N``, except multiples of 3 answer wrong and multiples of 7 raise."""
    number = int(text.split()[-1])
    if number % 7 == 0:
        raise ValueError(f"no sevens: {number}")
    return "wrong" if number % 3 == 0 else text.removeprefix("say ")


def echo(text: str) -> str:
    return text.removeprefix("say ")


def dies_on_boom(text: str) -> str:
    """Kills its own worker process on ``say boom``: the case can never finish."""
    if text == "say boom":
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.05)
    return echo(text)


class Slow:
    """Answers ``say slow …`` after ``seconds``, appending a line to ``ticks`` every 50 ms meanwhile; others at once."""

    def __init__(self, seconds: float, ticks: str) -> None:
        self.seconds = seconds
        self.ticks = ticks

    def __call__(self, text: str) -> str:
        if not text.startswith("say slow"):
            return echo(text)
        end = time.monotonic() + self.seconds
        while time.monotonic() < end:
            with Path(self.ticks).open("a") as file:
                file.write(f"{os.getpid()} {text}\n")
            time.sleep(0.05)
        return echo(text)


def counting_factory(pid_file: str) -> Any:
    """An agent factory that records each call: one line with the calling process's pid."""
    with Path(pid_file).open("a") as file:
        file.write(f"{os.getpid()}\n")
    return echo


def broken_factory() -> Any:
    raise RuntimeError("the model file is missing")


class Locked:
    """An agent that cannot be pickled (it holds a lock), so it cannot be sent to workers."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def __call__(self, text: str) -> str:
        return echo(text)


class Long:
    """Answers ``say X`` after ``seconds`` with ``X`` and ``size`` dots (more than 100 KiB: Ray's object store)."""

    def __init__(self, seconds: float, size: int) -> None:
        self.seconds = seconds
        self.size = size

    def __call__(self, text: str) -> str:
        time.sleep(self.seconds)
        return echo(text) + "." * self.size
