"""Run scheduling for one ``Evaluator.evaluate`` call; its record is :class:`~agenteval.evaluation.ledger.RunLedger`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalCaseResult
from agenteval.evalresult.records import CaseRecord

__all__ = ["RecordedRun", "RunOutcome", "in_runs"]

RunOutcome = tuple[list[InferenceResult], list[EvalCaseResult]]
"""What one run produced: the agent's turns per case, and the scored cases."""

RecordedRun = tuple[list[InferenceResult], list[CaseRecord]]
"""What one run of an evaluation produced: the agent's turns per case, and the scored cases' records."""

_T = TypeVar("_T")


async def in_runs(run: Callable[[int], Coroutine[Any, Any, _T]], num_runs: int, *, parallel: bool) -> list[_T]:
    """``run(1) … run(num_runs)``, one after another or concurrently; outcomes in run order."""
    run_ids = range(1, num_runs + 1)
    if not parallel:
        return [await run(run_id) for run_id in run_ids]
    try:
        async with asyncio.TaskGroup() as group:
            tasks: list[asyncio.Task[_T]] = [group.create_task(run(run_id)) for run_id in run_ids]
    except BaseExceptionGroup as group_error:
        # The first run to fail cancelled the others; surface its error as a serial run would.
        raise group_error.exceptions[0] from None
    return [task.result() for task in tasks]
