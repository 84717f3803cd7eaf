"""Pieces of one ``Evaluator.evaluate`` call: run scheduling, and the recorder of finished cases.

The record itself is the evaluation's :class:`~agenteval.evaluation.ledger.RunLedger`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalCaseResult
from agenteval.evalset.models import EvalSet
from agenteval.evaluation.ledger import RunLedger
from agenteval.service.callbacks import Callbacks

__all__ = ["RunOutcome", "RunRecorder", "in_runs"]

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


class RunRecorder:
    """Keeps every case as soon as it finishes, per run, in a :class:`~agenteval.evaluation.ledger.RunLedger`.

    A run's results otherwise only exist once the whole run is done; with the recorder, an
    evaluation that is interrupted or fails later still has the cases that did finish.
    """

    def __init__(self) -> None:
        self.ledger = RunLedger()
        """The record the callbacks feed."""

    def callbacks(self) -> Callbacks:
        """Callbacks to append after the user's."""
        return self.ledger.callbacks()

    def finished(self, eval_set: EvalSet) -> tuple[list[EvalCaseResult], list[list[InferenceResult]]]:
        """What the evaluation did before it stopped (see :meth:`RunLedger.finished_work`)."""
        return self.ledger.finished_work(eval_set)
