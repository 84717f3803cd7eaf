"""A finished case reaches the cache within a second, even when no other case finishes after it.

A process killed outright (SIGKILL, the OOM killer, Ray ending a driver whose raylet died) runs no
``finally:``: what the cache has not written by then is lost, and the next evaluation runs it again.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import agenteval as ae

ROOT = Path(__file__).resolve().parents[2]

EVALUATE = """
import asyncio, sys
import agenteval as ae

async def agent(message):
    if message == "slow":
        await asyncio.sleep(120)
    return message.upper()

cases = [ae.EvalCase.of("quick", "quick", expect="QUICK"), ae.EvalCase.of("slow", "slow", expect="SLOW")]
ae.Evaluator("app", agent, progress=False).evaluate(
    ae.EvalSet.of("s", cases), metrics=[ae.EvalMetric.final_response()], cache=sys.argv[1]
)
"""


def cached(directory: Path) -> dict[str, int]:
    try:
        return dict(ae.Cache(directory).stats().entries)
    except ae.errors.NotFoundError:  # nothing written yet
        return {}


def test_a_finished_case_is_in_the_cache_while_a_slow_one_still_runs(tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    child = subprocess.Popen([sys.executable, "-c", EVALUATE, str(directory)], cwd=ROOT)
    try:
        deadline = time.monotonic() + 20
        entries: dict[str, int] = {}
        while time.monotonic() < deadline and not (entries.get("inference") and entries.get("score")):
            time.sleep(0.2)
            entries = cached(directory)
        assert child.poll() is None, "the slow case should still be running"
        assert entries.get("inference") == 1 and entries.get("score") == 1
    finally:
        child.kill()
        child.wait(timeout=30)
