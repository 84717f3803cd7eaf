"""Pieces of one ``Evaluator.evaluate`` call.

Run scheduling, and the record of finished cases that lets an interrupted evaluation keep what it
already did.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from agenteval.context import EvalContext
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import ErrorType, EvalCaseResult, EvalMetricResultPerInvocation
from agenteval.evalset.models import EvalCase, EvalSet, Invocation
from agenteval.service._scoring import failed_case_result
from agenteval.service.callbacks import AfterEvaluateCaseArgs, AfterInferenceCaseArgs, Callbacks
from agenteval.status import EvalStatus

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
    """Keeps every case as soon as it finishes, per run, through case-level callbacks.

    A run's results otherwise only exist once the whole run is done; with the recorder, an
    evaluation that is interrupted or fails later still has the cases that did finish.
    """

    def __init__(self) -> None:
        self.inferences: dict[int, list[InferenceResult]] = {}
        self.cases: dict[int, list[EvalCaseResult]] = {}

    def callbacks(self) -> Callbacks:
        """Callbacks to append after the user's."""

        def inferred(context: EvalContext, args: AfterInferenceCaseArgs) -> None:
            self.inferences.setdefault(args.run_id, []).append(args.result)

        def scored(context: EvalContext, args: AfterEvaluateCaseArgs) -> None:
            if args.result is not None:
                self.cases.setdefault(args.run_id, []).append(args.result)

        return (
            Callbacks()
            .register_after_inference_case("agenteval.record", inferred)
            .register_after_evaluate_case("agenteval.record", scored)
        )

    def finished(self, eval_set: EvalSet) -> tuple[list[EvalCaseResult], list[list[InferenceResult]]]:
        """What the evaluation did before it stopped: case results and each run's inferences.

        Both are by run, then in eval-set order. A case the agent finished but that was not scored
        yet keeps its turns as a ``not_evaluated`` result (re-scoring the report scores it); one
        whose inference failed is failed with that error, as scoring would make it.
        """
        position = {case.eval_id: index for index, case in reversed(list(enumerate(eval_set.eval_cases)))}
        by_id = eval_set.cases_by_id()

        def in_set_order(eval_id: str) -> int:
            return position.get(eval_id, len(position))

        runs = range(1, max([*self.inferences, *self.cases], default=0) + 1)
        cases: list[EvalCaseResult] = []
        inferences: list[list[InferenceResult]] = []
        for run_id in runs:
            scored = list(self.cases.get(run_id, []))
            done = {case.eval_id for case in scored}
            run_inferences = sorted(self.inferences.get(run_id, []), key=lambda item: in_set_order(item.eval_case_id))
            scored += [
                _unscored(by_id.get(inference.eval_case_id), inference, run_id)
                for inference in run_inferences
                if inference.eval_case_id not in done
            ]
            cases += sorted(scored, key=lambda case: in_set_order(case.eval_id))
            inferences.append(run_inferences)
        return cases, inferences


def _unscored(case: EvalCase | None, inference: InferenceResult, run_id: int) -> EvalCaseResult:
    # No error message: the case did nothing wrong, and one would make summaries count it as failed.
    if inference.status != EvalStatus.PASSED:
        return failed_case_result(
            inference.eval_set_id, inference, inference.error_message, inference.error_type or ErrorType.OTHER, run_id
        )
    expected: list[Invocation | None] = list(inference.expected_inferences or (case.conversation if case else []))
    if len(expected) != len(inference.inferences):
        expected = [None] * len(inference.inferences)
    return EvalCaseResult(
        eval_set_id=inference.eval_set_id,
        eval_id=inference.eval_case_id,
        run_id=run_id,
        final_eval_status=EvalStatus.NOT_EVALUATED,
        eval_metric_result_per_invocation=[
            EvalMetricResultPerInvocation(actual_invocation=actual, expected_invocation=wanted)
            for actual, wanted in zip(inference.inferences, expected, strict=True)
        ],
        session_id=inference.session_id,
        user_id=inference.user_id,
    )
