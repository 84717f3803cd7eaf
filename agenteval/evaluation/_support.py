"""Run scheduling for one ``Evaluator.evaluate`` call; its record is :class:`~agenteval.evaluation.ledger.RunLedger`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalCaseResult

__all__ = ["RunOutcome", "in_runs"]

RunOutcome = tuple[list[InferenceResult], list[EvalCaseResult]]
"""What one run produced: the agent's turns per case, and the scored cases."""


async def in_runs(
    run: Callable[[int], Coroutine[Any, Any, RunOutcome]], num_runs: int, *, parallel: bool
) -> list[RunOutcome]:
    """``run(1) … run(num_runs)``, one after another or concurrently; outcomes in run order."""
    run_ids = range(1, num_runs + 1)
    if not parallel:
        return [await run(run_id) for run_id in run_ids]
    try:
        async with asyncio.TaskGroup() as group:
            tasks: list[asyncio.Task[RunOutcome]] = [group.create_task(run(run_id)) for run_id in run_ids]
    except BaseExceptionGroup as group_error:
        # The first run to fail cancelled the others; surface its error as a serial run would.
        raise group_error.exceptions[0] from None
    return [task.result() for task in tasks]
