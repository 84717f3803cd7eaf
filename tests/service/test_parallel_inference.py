"""Parallel inference: cases run concurrently (up to ``parallelism``), results stay in eval-set order.

Spec: trpc-service-evalresult-spec.md §1.1-1.2, §1.11; test ideas §6 items 8 (parallel part),
14 (parallelism part) and 49-51.

Not applicable here: the reference's worker pool (``ants``) and everything about it — pool
creation errors, a closed pool ("submit inference task for eval case <id>") — since the port runs
cases as asyncio tasks bounded by a semaphore; there is no pool to create or close.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from agenteval.context import EvalContext
from agenteval.errors import ConfigError
from agenteval.runner import TurnRequest, TurnResult
from agenteval.service import AfterInferenceCaseArgs, BeforeInferenceCaseArgs, Callbacks, InferenceRequest, LocalService
from agenteval.status import EvalStatus
from tests.service._fakes import (
    BOOM,
    USER,
    RecordingRunner,
    case_error,
    echo,
    inference_request,
    make_case,
    make_manager,
    make_service,
    wait,
)


class ConcurrencyProbe:
    """A runner handler that tracks how many turns run at once and lets a test hold turns open."""

    def __init__(self, hold: Callable[[TurnRequest], Awaitable[None]] | None = None) -> None:
        self.running = 0
        self.max_running = 0
        self.events: list[str] = []
        self._hold = hold

    async def __call__(self, request: TurnRequest) -> TurnResult:
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        self.events.append(f"start {request.message.content}")
        try:
            if self._hold is not None:
                await self._hold(request)
            for _ in range(5):  # give any other ready case a chance to start
                await asyncio.sleep(0)
        finally:
            self.running -= 1
            self.events.append(f"end {request.message.content}")
        return echo(request)


@pytest.mark.asyncio
async def test_parallelism_two_starts_both_cases_before_either_finishes() -> None:
    """Item 49: each case waits until both have started, which only works when they run together."""
    both_started = asyncio.Event()
    started: list[str] = []

    async def hold(request: TurnRequest) -> None:
        started.append(request.message.content)
        if len(started) == 2:
            both_started.set()
        await wait(both_started)

    probe = ConcurrencyProbe(hold)
    runner = RecordingRunner(probe)
    manager = await make_manager(make_case("a", "qa"), make_case("b", "qb"))

    results = await make_service(manager, runner=runner, parallel_inference=True, parallelism=2).inference(
        inference_request()
    )

    assert [(r.eval_case_id, r.status) for r in results] == [("a", EvalStatus.PASSED), ("b", EvalStatus.PASSED)]
    assert probe.max_running == 2
    assert probe.events[:2] == ["start qa", "start qb"]


@pytest.mark.asyncio
async def test_results_keep_eval_set_order_when_later_cases_finish_first() -> None:
    first_may_finish = asyncio.Event()

    async def hold(request: TurnRequest) -> None:
        if request.message.content == "qa":
            await wait(first_may_finish)
        if request.message.content == "qc":
            first_may_finish.set()

    probe = ConcurrencyProbe(hold)
    runner = RecordingRunner(probe)
    manager = await make_manager(make_case("a", "qa"), make_case("b", "qb"), make_case("c", "qc"))

    results = await make_service(manager, runner=runner, parallel_inference=True, parallelism=3).inference(
        inference_request()
    )

    assert probe.events.index("end qa") > probe.events.index("end qc")
    assert [r.eval_case_id for r in results] == ["a", "b", "c"]
    assert [r.inferences[0].user_content.content for r in results if r.inferences[0].user_content] == [
        "qa",
        "qb",
        "qc",
    ]


@pytest.mark.asyncio
async def test_parallelism_one_runs_one_case_at_a_time() -> None:
    """Item 50."""
    probe = ConcurrencyProbe()
    runner = RecordingRunner(probe)
    manager = await make_manager(make_case("a", "qa1", "qa2"), make_case("b", "qb1", "qb2"), make_case("c", "qc"))

    results = await make_service(manager, runner=runner, parallel_inference=True, parallelism=1).inference(
        inference_request()
    )

    assert [r.eval_case_id for r in results] == ["a", "b", "c"]
    assert probe.max_running == 1
    assert probe.events == [
        "start qa1",
        "end qa1",
        "start qa2",
        "end qa2",
        "start qb1",
        "end qb1",
        "start qb2",
        "end qb2",
        "start qc",
        "end qc",
    ]


@pytest.mark.asyncio
async def test_parallelism_bounds_the_number_of_cases_running_at_once() -> None:
    probe = ConcurrencyProbe()
    runner = RecordingRunner(probe)
    manager = await make_manager(*(make_case(f"case-{i}", f"q{i}") for i in range(6)))

    results = await make_service(manager, runner=runner, parallel_inference=True, parallelism=2).inference(
        inference_request()
    )

    assert len(results) == 6
    assert probe.max_running == 2


@pytest.mark.asyncio
async def test_turns_of_one_case_stay_in_order_in_parallel_mode() -> None:
    probe = ConcurrencyProbe()
    runner = RecordingRunner(probe)
    manager = await make_manager(make_case("a", "a1", "a2", "a3"), make_case("b", "b1", "b2", "b3"))
    sessions = iter(["sa", "sb"])

    await make_service(
        manager, runner=runner, parallel_inference=True, parallelism=2, session_id_supplier=lambda ctx: next(sessions)
    ).inference(inference_request())

    by_session: dict[str, list[str]] = {}
    for r in runner.requests:
        by_session.setdefault(r.session_id, []).append(r.message.content)
    assert by_session == {"sa": ["a1", "a2", "a3"], "sb": ["b1", "b2", "b3"]}
    assert probe.max_running == 2


@pytest.mark.asyncio
async def test_serial_mode_is_the_default() -> None:
    probe = ConcurrencyProbe()
    runner = RecordingRunner(probe)
    manager = await make_manager(make_case("a", "qa"), make_case("b", "qb"))

    await make_service(manager, runner=runner).inference(inference_request())

    assert probe.max_running == 1
    assert probe.events == ["start qa", "end qa", "start qb", "end qb"]


# ---------------------------------------------------------------------------- per-call switches (item 51)


@pytest.mark.asyncio
async def test_parallel_mode_can_be_enabled_per_call() -> None:
    probe = ConcurrencyProbe()
    runner = RecordingRunner(probe)
    service = make_service(await make_manager(make_case("a", "qa"), make_case("b", "qb")), runner=runner, parallelism=2)

    await service.inference(inference_request())
    assert probe.max_running == 1

    await service.inference(inference_request(), parallel_inference=True)
    assert probe.max_running == 2


@pytest.mark.asyncio
async def test_parallel_mode_can_be_disabled_per_call() -> None:
    probe = ConcurrencyProbe()
    runner = RecordingRunner(probe)
    service = make_service(
        await make_manager(make_case("a", "qa"), make_case("b", "qb")),
        runner=runner,
        parallel_inference=True,
        parallelism=2,
    )

    await service.inference(inference_request(), parallel_inference=False)

    assert probe.max_running == 1


@pytest.mark.asyncio
async def test_parallelism_can_be_changed_per_call() -> None:
    probe = ConcurrencyProbe()
    runner = RecordingRunner(probe)
    manager = await make_manager(make_case("a", "qa"), make_case("b", "qb"), make_case("c", "qc"))
    service = make_service(manager, runner=runner, parallel_inference=True, parallelism=1)

    await service.inference(inference_request())
    assert probe.max_running == 1

    await service.inference(inference_request(), parallelism=3)
    assert probe.max_running == 3

    probe.max_running = 0
    await service.inference(inference_request())
    assert probe.max_running == 1


@pytest.mark.asyncio
async def test_the_service_stays_usable_after_close() -> None:
    runner = RecordingRunner()
    service = make_service(
        await make_manager(make_case("a", "qa"), make_case("b", "qb")),
        runner=runner,
        parallel_inference=True,
        parallelism=2,
    )
    await service.inference(inference_request())

    await service.close()
    results = await service.inference(inference_request())

    assert [r.status for r in results] == [EvalStatus.PASSED, EvalStatus.PASSED]


# ---------------------------------------------------------------------------- parallelism validation (item 14)


@pytest.mark.parametrize("parallelism", [0])
def test_a_service_with_parallel_inference_needs_a_positive_parallelism(parallelism: int) -> None:
    with pytest.raises(ConfigError) as raised:
        LocalService(RecordingRunner(), parallel_inference=True, parallelism=parallelism)

    assert str(raised.value) == "eval case parallelism must be greater than 0"


@pytest.mark.parametrize("parallelism", [-1])
@pytest.mark.asyncio
async def test_a_per_call_parallelism_must_be_positive(parallelism: int) -> None:
    runner = RecordingRunner()
    calls: list[str] = []
    callbacks = Callbacks().register_before_inference_set("spy", lambda ctx, args: calls.append("before-set"))
    service = make_service(await make_manager(make_case("a", "qa")), runner=runner, callbacks=callbacks)

    with pytest.raises(ConfigError) as raised:
        await service.inference(inference_request(), parallel_inference=True, parallelism=parallelism)

    assert str(raised.value) == "eval case parallelism must be greater than 0"
    assert calls == []
    assert runner.requests == []


# ---------------------------------------------------------------------------- failures and shared state


@pytest.mark.asyncio
async def test_one_failing_case_does_not_affect_the_others() -> None:
    probe = ConcurrencyProbe()
    runner = RecordingRunner(probe, fail_on=["qb"])
    manager = await make_manager(make_case("a", "qa"), make_case("b", "qb"), make_case("c", "qc"))

    results = await make_service(manager, runner=runner, parallel_inference=True, parallelism=3).inference(
        inference_request()
    )

    assert [(r.eval_case_id, r.status) for r in results] == [
        ("a", EvalStatus.PASSED),
        ("b", EvalStatus.FAILED),
        ("c", EvalStatus.PASSED),
    ]
    assert results[1].error_message == case_error(BOOM, eval_id="b")
    assert results[1].inferences == []
    assert [len(r.inferences) for r in results] == [1, 0, 1]


@pytest.mark.asyncio
async def test_missing_session_input_in_parallel_mode() -> None:
    """Item 8, parallel part."""
    runner = RecordingRunner()
    manager = await make_manager(make_case("a", "qa", session_input=None), make_case("b", "qb"))

    results = await make_service(manager, runner=runner, parallel_inference=True, parallelism=2).inference(
        inference_request()
    )

    assert [(r.eval_case_id, r.status, r.user_id) for r in results] == [
        ("a", EvalStatus.FAILED, ""),
        ("b", EvalStatus.PASSED, USER),
    ]
    assert results[0].error_message == case_error("session input is nil", eval_id="a")
    assert runner.messages == ["qb"]


@pytest.mark.asyncio
async def test_every_case_shares_the_same_request_object_in_callbacks() -> None:
    before: list[InferenceRequest] = []
    after: list[InferenceRequest] = []

    def before_case(context: EvalContext, args: BeforeInferenceCaseArgs) -> None:
        before.append(args.request)

    def after_case(context: EvalContext, args: AfterInferenceCaseArgs) -> None:
        after.append(args.request)

    callbacks = (
        Callbacks().register_before_inference_case("b", before_case).register_after_inference_case("a", after_case)
    )
    manager = await make_manager(make_case("a", "qa"), make_case("b", "qb"), make_case("c", "qc"))
    request_object = inference_request()

    await make_service(
        manager, runner=RecordingRunner(ConcurrencyProbe()), parallel_inference=True, parallelism=3, callbacks=callbacks
    ).inference(request_object)

    assert len(before) == 3
    assert len(after) == 3
    assert all(seen is request_object for seen in before + after)


@pytest.mark.asyncio
async def test_the_session_id_supplier_is_called_once_per_case_in_parallel_mode() -> None:
    supplied: list[str] = []

    def supplier(context: EvalContext) -> str:
        supplied.append(f"s{len(supplied) + 1}")
        return supplied[-1]

    runner = RecordingRunner(ConcurrencyProbe())
    manager = await make_manager(make_case("a", "qa1", "qa2"), make_case("b", "qb1", "qb2"))

    results = await make_service(
        manager, runner=runner, parallel_inference=True, parallelism=2, session_id_supplier=supplier
    ).inference(inference_request())

    assert supplied == ["s1", "s2"]
    assert sorted(r.session_id for r in results) == ["s1", "s2"]
    assert sorted(runner.session_ids) == ["s1", "s1", "s2", "s2"]


@pytest.mark.asyncio
async def test_parallel_inference_with_no_matching_case_gives_an_empty_list() -> None:
    runner = RecordingRunner()
    manager = await make_manager(make_case("a", "qa"))

    results = await make_service(manager, runner=runner, parallel_inference=True, parallelism=2).inference(
        inference_request("missing")
    )

    assert results == []
    assert runner.requests == []
