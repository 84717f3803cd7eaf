"""Clocks and memory readings shared by the agenteval and the pydantic-evals scripts.

Standard library only: the pydantic-evals scripts run in a virtualenv that holds pydantic-evals and
nothing of agenteval.
"""

from __future__ import annotations

import gc
import json
import resource
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

Record = dict[str, Any]
"""One JSON line of results: times in seconds (``*_s``), memory in MiB (``*_mib``)."""


def peak_rss_mib() -> float:
    """The process's peak resident set size so far (the kernel's high-water mark), in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mib() -> float:
    """The process's resident set size now, in MiB."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


class GcClock:
    """Time spent in CPython's cyclic garbage collector while :meth:`running` is active."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.full_seconds = 0.0
        self.full_passes = 0
        self._started = 0.0

    def _observe(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        spent = time.perf_counter() - self._started
        self.seconds += spent
        if info["generation"] == 2:
            self.full_seconds += spent
            self.full_passes += 1

    @contextmanager
    def running(self) -> Iterator[None]:
        """Count the collections that run inside this block."""
        gc.callbacks.append(self._observe)
        try:
            yield
        finally:
            gc.callbacks.remove(self._observe)

    def into(self, record: Record, prefix: str) -> None:
        """Store the totals in ``record`` as ``<prefix>_gc_s``, ``_gc_full_s`` and ``_gc_full_passes``."""
        record[f"{prefix}_gc_s"] = round(self.seconds, 4)
        record[f"{prefix}_gc_full_s"] = round(self.full_seconds, 4)
        record[f"{prefix}_gc_full_passes"] = self.full_passes


def step(record: Record, name: str, function: Callable[[], T]) -> T:
    """Call ``function``, storing its wall time as ``<name>_s`` and the peak RSS after it as ``<name>_peak_rss_mib``."""
    started = time.perf_counter()
    value = function()
    record[f"{name}_s"] = round(time.perf_counter() - started, 4)
    record[f"{name}_peak_rss_mib"] = round(peak_rss_mib(), 1)
    return value


def emit(record: Record) -> None:
    """Print ``record`` as one JSON line on stdout."""
    print(json.dumps(record), flush=True)
