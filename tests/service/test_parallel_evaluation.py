"""Tests for parallel and serial case evaluation (spec §2.4; test idea 52).

Covered: input order is kept whatever the completion order, at most ``parallelism`` cases are scored at once,
per-call switching, errors of several cases joined in index order with every case still run to completion (no
cancellation), per-case failures staying per-case, and serial mode stopping at the first error.

Not applicable: Go's worker pool (``submit evaluation task ... this pool has been closed``); the port uses an
``asyncio.Semaphore`` per call, so there is no pool to close.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from agenteval.context import EvalContext
from agenteval.errors import CallbackError
from agenteval.evalset.models import Invocation
from agenteval.evaluators.base import EvaluateResult
from agenteval.metric.models import EvalMetric
from agenteval.service.callbacks import AfterEvaluateSetArgs, BeforeEvaluateCaseArgs, Callbacks
from agenteval.service.local import LocalService
from agenteval.service.types import EvaluateRequest
from tests.service._fakes import (
    FAILED,
    PASSED,
    AsyncFakeEvaluator,
    FakeEvaluator,
    evaluate_request,
    make_case,
    make_manager,
    make_service,
    passed_inference,
    uniform_result,
)

CASES = ("case-1", "case-2", "case-3", "case-4")
METRICS = [EvalMetric(metric_name="m")]


def request_for(*case_ids: str) -> EvaluateRequest:
    return evaluate_request(*(passed_inference(case_id) for case_id in case_ids), metrics=METRICS)


async def service_for(evaluator: Any, **overrides: Any) -> LocalService:
    manager = await make_manager(*(make_case(case_id, "prompt") for case_id in CASES))
    return make_service(manager, {"m": evaluator}, **overrides)


def slow_first(*case_ids: str) -> dict[str, float]:
    """Delays that make earlier cases finish later."""
    return {f"{case_id}-actual-1": 0.01 * (len(case_ids) - index) for index, case_id in enumerate(case_ids)}


@pytest.mark.asyncio
async def test_parallel_evaluation_preserves_order() -> None:
    evaluator = AsyncFakeEvaluator(delay=slow_first(*CASES))
    service = await service_for(evaluator, parallel_evaluation=True, parallelism=4)
    result = await service.evaluate(request_for(*CASES))
    assert [r.eval_id for r in result.eval_case_results] == list(CASES)
    assert [r.final_eval_status for r in result.eval_case_results] == [PASSED] * 4
    assert evaluator.finished == [f"{c}-actual-1" for c in reversed(CASES)]  # they really finished in reverse
    assert evaluator.max_active == 4


@pytest.mark.asyncio
async def test_parallelism_bounds_concurrent_cases() -> None:
    evaluator = AsyncFakeEvaluator(delay=0.01)
    service = await service_for(evaluator, parallel_evaluation=True, parallelism=2)
    result = await service.evaluate(request_for(*CASES))
    assert len(result.eval_case_results) == 4
    assert evaluator.max_active == 2


@pytest.mark.asyncio
async def test_parallelism_one_runs_cases_one_at_a_time() -> None:
    evaluator = AsyncFakeEvaluator(delay=slow_first(*CASES))
    service = await service_for(evaluator, parallel_evaluation=True, parallelism=1)
    result = await service.evaluate(request_for(*CASES))
    assert evaluator.max_active == 1
    assert evaluator.finished == [f"{c}-actual-1" for c in CASES]
    assert [r.eval_id for r in result.eval_case_results] == list(CASES)


@pytest.mark.asyncio
async def test_serial_by_default_and_parallel_per_call() -> None:
    evaluator = AsyncFakeEvaluator(delay=0.01)
    service = await service_for(evaluator)
    await service.evaluate(request_for(*CASES))
    assert evaluator.max_active == 1
    result = await service.evaluate(request_for(*CASES), parallel_evaluation=True, parallelism=3)
    assert evaluator.max_active == 3
    assert [r.eval_id for r in result.eval_case_results] == list(CASES)


@pytest.mark.asyncio
async def test_parallel_case_failures_stay_per_case() -> None:
    def answer(actuals: Sequence[Invocation], metric: EvalMetric) -> EvaluateResult:
        if actuals[0].invocation_id == "case-3-actual-1":
            raise RuntimeError("metric down")
        return uniform_result(len(actuals))

    evaluator = AsyncFakeEvaluator(delay=slow_first(*CASES), factory=answer)
    service = await service_for(evaluator, parallel_evaluation=True, parallelism=4)
    inferences = [passed_inference(case_id) for case_id in CASES]
    inferences[1] = passed_inference("case-2", status=FAILED, error_message="inference failed")
    result = await service.evaluate(evaluate_request(*inferences, metrics=METRICS))
    assert [(r.eval_id, r.final_eval_status, r.error_message) for r in result.eval_case_results] == [
        ("case-1", PASSED, ""),
        ("case-2", FAILED, "inference failed"),
        ("case-3", FAILED, "run evaluation for metric m: RuntimeError: metric down"),
        ("case-4", PASSED, ""),
    ]


@pytest.mark.asyncio
async def test_parallel_errors_of_several_cases_are_joined_and_nothing_is_cancelled() -> None:
    completed: list[str] = []
    after_set: list[AfterEvaluateSetArgs] = []

    async def before(context: EvalContext, args: BeforeEvaluateCaseArgs) -> None:
        if args.eval_case_id == "case-1":
            raise ValueError("case-1 failed")
        await asyncio.sleep(0.02)  # still running when case-1 has already failed
        if args.eval_case_id == "case-3":
            raise ValueError("case-3 failed")

    callbacks = (
        Callbacks()
        .register_before_evaluate_case("fail", before)
        .register_after_evaluate_case("done", lambda c, a: completed.append(a.inference_result.eval_case_id))
        .register_after_evaluate_set("set", lambda c, a: after_set.append(a))
    )
    evaluator = AsyncFakeEvaluator(delay=0.01)
    service = await service_for(evaluator, parallel_evaluation=True, parallelism=4, callbacks=callbacks)
    with pytest.raises(CallbackError) as caught:
        await service.evaluate(request_for(*CASES))

    message = str(caught.value)
    prefix = "evaluate case results (app=app, evalSetID=set): "
    assert message.startswith(prefix)
    first, second = message[len(prefix) :].split("\n")
    assert first == (
        "evaluate case (app=app, evalSetID=set, evalCaseID=case-1): "
        "run before evaluate case callbacks (app=app, evalSetID=set, evalCaseID=case-1): "
        "execute BeforeEvaluateCase callbacks: BeforeEvaluateCase callback[0] (fail): ValueError: case-1 failed"
    )
    assert second.startswith("evaluate case (app=app, evalSetID=set, evalCaseID=case-3): ")
    assert second.endswith("ValueError: case-3 failed")
    assert "cancel" not in message.lower()
    # The healthy cases ran to completion although case-1 failed first.
    assert sorted(completed) == ["case-2", "case-4"]
    assert sorted(call.actuals[0].invocation_id for call in evaluator.calls) == ["case-2-actual-1", "case-4-actual-1"]
    (args,) = after_set
    assert args.result is None
    assert args.error is caught.value


@pytest.mark.asyncio
async def test_serial_mode_stops_at_the_first_error() -> None:
    started: list[str] = []

    def before(context: EvalContext, args: BeforeEvaluateCaseArgs) -> None:
        started.append(args.eval_case_id)
        if args.eval_case_id in ("case-2", "case-3"):
            raise ValueError(f"{args.eval_case_id} failed")

    callbacks = Callbacks().register_before_evaluate_case("fail", before)
    evaluator = FakeEvaluator()
    service = await service_for(evaluator, callbacks=callbacks)
    with pytest.raises(CallbackError) as caught:
        await service.evaluate(request_for(*CASES))
    message = str(caught.value)
    assert started == ["case-1", "case-2"]
    assert len(evaluator.calls) == 1
    assert message == (
        "evaluate case results (app=app, evalSetID=set): "
        "evaluate case (app=app, evalSetID=set, evalCaseID=case-2): "
        "run before evaluate case callbacks (app=app, evalSetID=set, evalCaseID=case-2): "
        "execute BeforeEvaluateCase callbacks: BeforeEvaluateCase callback[0] (fail): ValueError: case-2 failed"
    )
    assert "case-3" not in message
