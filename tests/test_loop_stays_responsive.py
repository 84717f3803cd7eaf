"""An evaluation of cases that never wait (an instant agent, cached work) still gives the event loop back."""

from __future__ import annotations

import asyncio

import pytest

import agenteval as ae


@pytest.mark.asyncio
async def test_other_tasks_run_between_cases_that_never_wait() -> None:
    cases = [ae.EvalCase.of(f"c{i}", f"w{i}", expect=f"W{i}") for i in range(400)]

    async def instant(message: str) -> str:
        return message.upper()  # never waits, as a cached or scripted agent

    ticks_during: list[int] = []
    done = False

    async def heartbeat() -> None:
        # What a progress display, a timer or Ctrl-C handling needs: a turn of the loop now and then.
        while not done:
            ticks_during.append(1)
            await asyncio.sleep(0)

    beating = asyncio.create_task(heartbeat())
    await asyncio.sleep(0)
    before = len(ticks_during)
    ev = ae.Evaluator("loop-app", instant, progress=False, parallel_inference=True, parallelism=10)
    report = await ev.aevaluate(ae.EvalSet.of("words", cases), metrics=[ae.EvalMetric.final_response()])
    done = True
    await beating

    assert report.passed
    # With a task per case, the 400 inferences ran in one turn of the loop (5 turns in all); ten workers
    # take one turn per ten cases (about 40).
    assert len(ticks_during) - before >= 30
