"""``LocalService.infer_and_evaluate``: each case is scored as its inference ends; results and errors as two phases."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from agenteval.context import EvalContext
from agenteval.errors import CallbackError, ConfigError, NotFoundError
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalCaseResult
from agenteval.evalset.models import Invocation
from agenteval.evaluators.base import EvaluateResult
from agenteval.metric.models import EvalMetric
from agenteval.runner import TurnRequest, TurnResult
from agenteval.service import EvaluateConfig, EvaluateRequest, LocalService
from agenteval.service.callbacks import (
    AfterEvaluateSetArgs,
    AfterInferenceSetArgs,
    BeforeEvaluateSetArgs,
    Callbacks,
)
from agenteval.service.local import CaseLimits, ServiceRuntime
from agenteval.service.types import EvalSetRunResult
from agenteval.status import EvalStatus
from tests.service._fakes import (
    AsyncFakeEvaluator,
    FakeEvaluator,
    RecordingRunner,
    echo,
    evaluate_request,
    inference_request,
    make_case,
    make_manager,
    make_service,
    uniform_result,
)

POINTS = (
    "before_inference_set",
    "before_inference_case",
    "after_inference_case",
    "after_inference_set",
    "before_evaluate_set",
    "before_evaluate_case",
    "after_evaluate_case",
    "after_evaluate_set",
)
SHORT = {
    "before_inference_set": "bis",
    "before_inference_case": "bic",
    "after_inference_case": "aic",
    "after_inference_set": "ais",
    "before_evaluate_set": "bes",
    "before_evaluate_case": "bec",
    "after_evaluate_case": "aec",
    "after_evaluate_set": "aes",
}
METRIC = EvalMetric(metric_name="m")
CONFIG = EvaluateConfig(eval_metrics=[METRIC])


def case_of(args: Any) -> str:
    """The case a callback is about (empty for set-level callbacks)."""
    if hasattr(args, "eval_case_id"):
        return str(args.eval_case_id)
    if hasattr(args, "inference_result"):
        return str(args.inference_result.eval_case_id)
    if hasattr(args, "result") and isinstance(args.result, InferenceResult):
        return args.result.eval_case_id
    return ""


def logging_callbacks(log: list[str], callbacks: Callbacks | None = None) -> Callbacks:
    """``callbacks`` plus one callback per point appending ``<point> <case>`` (``bic a``, ``ais``) to ``log``."""
    logged = Callbacks()
    for point in POINTS:

        def record(context: EvalContext, args: Any, point: str = point) -> None:
            log.append(f"{SHORT[point]} {case_of(args)}".strip())

        logged = getattr(logged, f"register_{point}")("log", record)
    return (callbacks or Callbacks()).merged(logged)


def raising(message: str, only: str = "") -> Callable[[EvalContext, Any], None]:
    """A callback raising ``ValueError(message)`` (for case ``only`` alone, when given)."""

    def callback(context: EvalContext, args: Any) -> None:
        if not only or case_of(args) == only:
            raise ValueError(message)

    return callback


def sleeping(delays: dict[str, float]) -> Callable[[TurnRequest], Any]:
    """A runner handler that waits ``delays[message]`` seconds, then echoes."""

    async def handler(request: TurnRequest) -> TurnResult:
        await asyncio.sleep(delays.get(request.message.content, 0.0))
        return echo(request)

    return handler


async def service_over(
    case_ids: Sequence[str],
    *,
    callbacks: Callbacks | None = None,
    runner: RecordingRunner | None = None,
    evaluator: Any = None,
    **options: Any,
) -> LocalService:
    """A service over set ``app/set`` holding one one-turn case per id (message ``for <id>``), scoring metric ``m``."""
    manager = await make_manager(*(make_case(eval_id, f"for {eval_id}") for eval_id in case_ids))
    return make_service(
        manager,
        {"m": evaluator if evaluator is not None else FakeEvaluator()},
        runner=runner,
        callbacks=callbacks or Callbacks(),
        **options,
    )


def positions(log: list[str]) -> dict[str, int]:
    return {entry: index for index, entry in enumerate(log)}


def assert_pipelined_order(log: list[str], case_ids: Sequence[str]) -> None:
    """Every case goes through its four callbacks in order; the set-level ones bracket them as documented."""
    at = positions(log)
    assert log[:2] == ["bis", "bes"]
    assert log[-1] == "aes"
    for eval_id in case_ids:
        assert at[f"bic {eval_id}"] < at[f"aic {eval_id}"] < at[f"bec {eval_id}"] < at[f"aec {eval_id}"]
        assert at[f"aic {eval_id}"] < at["ais"]
    assert len(log) == 4 + 4 * len(case_ids)


# ---------------------------------------------------------------------------------------------- callback order


@pytest.mark.asyncio
async def test_serial_settings_run_and_score_each_case_before_the_next() -> None:
    log: list[str] = []
    service = await service_over("abc", callbacks=logging_callbacks(log))

    await service.infer_and_evaluate(inference_request(), CONFIG)

    per_case = [f"{point} {eval_id}" for eval_id in "abc" for point in ("bic", "aic", "bec", "aec")]
    assert log == ["bis", "bes", *per_case, "ais", "aes"]


@pytest.mark.asyncio
async def test_serial_inference_runs_the_agent_on_one_case_at_a_time_in_eval_set_order() -> None:
    log: list[str] = []
    active = peak = 0

    async def handler(request: TurnRequest) -> TurnResult:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.005)
        active -= 1
        return echo(request)

    runner = RecordingRunner(handler)
    service = await service_over(
        "abcd", callbacks=logging_callbacks(log), runner=runner, parallel_evaluation=True, parallelism=4
    )

    await service.infer_and_evaluate(inference_request(), CONFIG)

    assert peak == 1
    assert runner.messages == ["for a", "for b", "for c", "for d"]
    inference_entries = [entry for entry in log if entry.startswith(("bic", "aic"))]
    assert inference_entries == [f"{point} {eval_id}" for eval_id in "abcd" for point in ("bic", "aic")]
    assert_pipelined_order(log, "abcd")


@pytest.mark.asyncio
async def test_parallel_settings_keep_each_case_in_order_and_the_results_in_eval_set_order() -> None:
    log: list[str] = []
    delays = {"for a": 0.03, "for b": 0.0, "for c": 0.02, "for d": 0.01}
    service = await service_over(
        "abcd",
        callbacks=logging_callbacks(log),
        runner=RecordingRunner(sleeping(delays)),
        parallel_inference=True,
        parallel_evaluation=True,
        parallelism=4,
    )

    inferences, run = await service.infer_and_evaluate(inference_request(), CONFIG)

    assert_pipelined_order(log, "abcd")
    assert [inference.eval_case_id for inference in inferences] == list("abcd")
    assert [case.eval_id for case in run.eval_case_results] == list("abcd")
    # b's inference ends first, and it is scored before a's inference ends.
    at = positions(log)
    assert at["aec b"] < at["aic a"]


@pytest.mark.asyncio
async def test_scoring_overlaps_inference() -> None:
    log: list[str] = []
    delays = {f"for {eval_id}": 0.01 * index for index, eval_id in enumerate("abcdef")}
    service = await service_over(
        "abcdef",
        callbacks=logging_callbacks(log),
        runner=RecordingRunner(sleeping(delays)),
        parallel_inference=True,
        parallel_evaluation=True,
        parallelism=2,
    )

    await service.infer_and_evaluate(inference_request(), CONFIG)

    at = positions(log)
    assert at["aec a"] < at["aic f"]
    assert at["aec a"] < at["aic b"], "the first case is scored as soon as it ends, while the others run"
    assert at["bic c"] < at["bec a"], "the case waiting for the freed slot starts before the first is scored"


# ---------------------------------------------------------------------------------------------- concurrency gates


@pytest.mark.asyncio
async def test_parallelism_caps_agent_calls_and_scoring_and_scoring_holds_no_inference_slot() -> None:
    log: list[str] = []
    active = peak = 0

    async def handler(request: TurnRequest) -> TurnResult:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.002)
        active -= 1
        return echo(request)

    evaluator = AsyncFakeEvaluator(delay=0.05)
    service = await service_over(
        "abcdef",
        callbacks=logging_callbacks(log),
        runner=RecordingRunner(handler),
        evaluator=evaluator,
        parallel_inference=True,
        parallel_evaluation=True,
        parallelism=2,
    )

    await service.infer_and_evaluate(inference_request(), CONFIG)

    assert peak == 2
    assert evaluator.max_active == 2
    # The agent is ten times faster than scoring: with slots free of scoring, every case is inferred
    # while the first two are still being scored.
    at = positions(log)
    assert at["ais"] < min(at[f"aec {eval_id}"] for eval_id in "abcdef")


@pytest.mark.asyncio
async def test_serial_evaluation_scores_one_case_at_a_time_while_inference_runs_in_parallel() -> None:
    evaluator = AsyncFakeEvaluator(delay=0.005)
    service = await service_over(
        "abcd", evaluator=evaluator, parallel_inference=True, parallel_evaluation=False, parallelism=4
    )

    _, run = await service.infer_and_evaluate(inference_request(), CONFIG)

    assert evaluator.max_active == 1
    assert [case.final_eval_status for case in run.eval_case_results] == [EvalStatus.PASSED] * 4


@pytest.mark.asyncio
async def test_calls_sharing_case_limits_share_the_cap() -> None:
    active = peak = 0

    async def handler(request: TurnRequest) -> TurnResult:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.005)
        active -= 1
        return echo(request)

    manager = await make_manager(*(make_case(eval_id, f"for {eval_id}") for eval_id in "abcd"))
    service = LocalService(
        RecordingRunner(handler),
        eval_set_manager=manager,
        parallel_inference=True,
        parallel_evaluation=True,
        parallelism=3,
        runtime=ServiceRuntime(limits=CaseLimits.of(3)),
    )

    await asyncio.gather(*(service.infer_and_evaluate(inference_request(), EvaluateConfig()) for _ in range(3)))

    assert peak == 3


# ---------------------------------------------------------------------------------------------- same results


async def two_phase(service: LocalService, config: EvaluateConfig) -> tuple[list[InferenceResult], EvalSetRunResult]:
    inferences = await service.inference(inference_request())
    request = EvaluateRequest(app_name="app", eval_set_id="set", inference_results=inferences, evaluate_config=config)
    return inferences, await service.evaluate(request)


def dumped(inferences: list[InferenceResult], run: EvalSetRunResult) -> tuple[list[Any], list[Any]]:
    """Both outcomes as plain data, without the times turns were created."""

    def untimed(data: Any) -> Any:
        if isinstance(data, dict):
            return {key: untimed(value) for key, value in data.items() if key != "creationTimestamp"}
        if isinstance(data, list):
            return [untimed(item) for item in data]
        return data

    return (
        untimed([inference.model_dump(mode="json", by_alias=True) for inference in inferences]),
        untimed([case.model_dump(mode="json", by_alias=True) for case in run.eval_case_results]),
    )


@pytest.mark.asyncio
@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
async def test_the_results_are_those_of_inference_then_evaluate(parallel: bool) -> None:
    def score(actuals: Sequence[Invocation], metric: EvalMetric) -> EvaluateResult:
        failing = any("c" in (actual.final_response.content if actual.final_response else "") for actual in actuals)
        return uniform_result(
            len(actuals), 0.0 if failing else 1.0, EvalStatus.FAILED if failing else EvalStatus.PASSED
        )

    callbacks = Callbacks().register_after_inference_case("refuse d", raising("d refused", only="d"))
    service = await service_over(
        "abcde",
        callbacks=callbacks,
        runner=RecordingRunner(fail_on=["for b"]),
        evaluator=FakeEvaluator(factory=score),
        parallel_inference=parallel,
        parallel_evaluation=parallel,
    )

    pipelined = await service.infer_and_evaluate(inference_request(), CONFIG)
    expected = await two_phase(service, CONFIG)

    assert dumped(*pipelined) == dumped(*expected)
    statuses = [case.final_eval_status for case in pipelined[1].eval_case_results]
    assert statuses == [EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.FAILED, EvalStatus.FAILED, EvalStatus.PASSED]
    assert "boom" in pipelined[1].eval_case_results[1].error_message
    assert "d refused" in pipelined[1].eval_case_results[3].error_message


@pytest.mark.asyncio
async def test_no_selected_case_gives_empty_results_and_every_set_callback() -> None:
    log: list[str] = []
    service = await service_over("ab", callbacks=logging_callbacks(log))

    inferences, run = await service.infer_and_evaluate(inference_request("nothing-matches"), CONFIG)

    assert inferences == [] and run.eval_case_results == []
    assert log == ["bis", "bes", "ais", "aes"]


# ---------------------------------------------------------------------------------------------- the set requests


@pytest.mark.asyncio
async def test_before_evaluate_set_sees_one_pending_result_per_case_filled_in_place() -> None:
    seen: list[tuple[str, EvalStatus | None]] = []
    requests: list[EvaluateRequest] = []

    def look(context: EvalContext, args: BeforeEvaluateSetArgs) -> None:
        requests.append(args.request)
        seen.extend((result.eval_case_id, result.status) for result in args.request.inference_results)
        args.request.evaluate_config = EvaluateConfig(eval_metrics=[METRIC, EvalMetric(metric_name="added")])

    service = make_service(
        await make_manager(*(make_case(eval_id, f"for {eval_id}") for eval_id in "abc")),
        {"m": FakeEvaluator(), "added": FakeEvaluator()},
        callbacks=Callbacks().register_before_evaluate_set("look", look),
    )
    request = inference_request()
    request.run_id = 2

    inferences, run = await service.infer_and_evaluate(request, CONFIG)

    assert seen == [("a", None), ("b", None), ("c", None)]
    (evaluate,) = requests
    assert (evaluate.app_name, evaluate.eval_set_id, evaluate.run_id) == ("app", "set", 2)
    assert all(pending is done for pending, done in zip(evaluate.inference_results, inferences, strict=True))
    assert {inference.status for inference in inferences} == {EvalStatus.PASSED}
    assert [metric.metric_name for metric in run.eval_case_results[0].overall_eval_metric_results] == ["m", "added"]
    assert CONFIG.eval_metrics == [METRIC], "the caller's config is not changed by a callback replacing it"


@pytest.mark.asyncio
async def test_the_after_set_callbacks_receive_what_the_call_returns() -> None:
    ais: list[AfterInferenceSetArgs] = []
    aes: list[AfterEvaluateSetArgs] = []
    callbacks = (
        Callbacks()
        .register_after_inference_set("ais", lambda context, args: ais.append(args))
        .register_after_evaluate_set("aes", lambda context, args: aes.append(args))
    )
    service = await service_over("ab", callbacks=callbacks)
    request = inference_request()

    inferences, run = await service.infer_and_evaluate(request, CONFIG)

    assert ais[0].request is request and ais[0].results is inferences and ais[0].error is None
    assert aes[0].result is run and aes[0].error is None
    assert aes[0].request.inference_results == inferences
    assert aes[0].start_time >= ais[0].start_time


# ---------------------------------------------------------------------------------------------- errors


@pytest.mark.asyncio
async def test_a_failing_before_inference_set_callback_raises_as_inference_does() -> None:
    log: list[str] = []
    callbacks = Callbacks().register_before_inference_set("bad", raising("boom"))
    service = await service_over("a", callbacks=logging_callbacks(log, callbacks))

    with pytest.raises(CallbackError) as pipelined:
        await service.infer_and_evaluate(inference_request(), CONFIG)
    with pytest.raises(CallbackError) as inference:
        await service.inference(inference_request())

    assert str(pipelined.value) == str(inference.value)
    assert str(pipelined.value).startswith("run before inference set callbacks (app=app, evalSetID=set): ")
    assert log == []


@pytest.mark.asyncio
async def test_a_failing_before_evaluate_set_callback_ends_the_inference_set_before_any_case_runs() -> None:
    log: list[str] = []
    ais: list[AfterInferenceSetArgs] = []
    callbacks = (
        Callbacks()
        .register_before_evaluate_set("bad", raising("quota"))
        .register_after_inference_set("ais", lambda context, args: ais.append(args))
    )
    runner = RecordingRunner()
    service = await service_over("ab", callbacks=logging_callbacks(log, callbacks), runner=runner)

    with pytest.raises(CallbackError) as pipelined:
        await service.infer_and_evaluate(inference_request(), CONFIG)
    with pytest.raises(CallbackError) as evaluate:
        await service.evaluate(evaluate_request(metrics=[METRIC]))

    assert str(pipelined.value) == str(evaluate.value)
    assert log == ["bis", "ais"]
    assert ais[0].results is None and ais[0].error is pipelined.value
    assert runner.requests == []


@pytest.mark.asyncio
async def test_an_invalid_metric_raises_as_evaluate_does_before_any_case_runs() -> None:
    log: list[str] = []
    service = await service_over("a", callbacks=logging_callbacks(log))
    config = EvaluateConfig(eval_metrics=[None])  # type: ignore[list-item]

    with pytest.raises(ConfigError) as pipelined:
        await service.infer_and_evaluate(inference_request(), config)
    evaluate_with_none = evaluate_request()
    evaluate_with_none.evaluate_config = config
    with pytest.raises(ConfigError) as evaluate:
        await service.evaluate(evaluate_with_none)

    assert str(pipelined.value) == str(evaluate.value)
    assert str(pipelined.value).startswith("resolve metric extensions (app=app, evalSetID=set): ")
    assert log[:3] == ["bis", "bes", "ais"] and "bic a" not in log


@pytest.mark.asyncio
async def test_a_missing_eval_set_raises_as_inference_does() -> None:
    log: list[str] = []
    service = await service_over("a", callbacks=logging_callbacks(log))
    request = inference_request()
    request.eval_set_id = "missing"

    with pytest.raises(NotFoundError) as pipelined:
        await service.infer_and_evaluate(request, CONFIG)
    with pytest.raises(NotFoundError) as inference:
        await service.inference(request)

    assert str(pipelined.value) == str(inference.value)
    assert str(pipelined.value).startswith("load inference eval cases: get eval set: ")
    assert log == ["bis", "ais"] * 2


@pytest.mark.asyncio
async def test_a_missing_request_or_config_is_refused() -> None:
    service = await service_over("a")

    with pytest.raises(ConfigError, match="^validate inference request: inference request is nil$"):
        await service.infer_and_evaluate(None, CONFIG)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="^evaluate config is nil$"):
        await service.infer_and_evaluate(inference_request(), None)  # type: ignore[arg-type]


@pytest.mark.asyncio
@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
async def test_a_failing_after_inference_set_callback_raises_once_every_inferred_case_is_scored(parallel: bool) -> None:
    log: list[str] = []
    aes: list[AfterEvaluateSetArgs] = []
    callbacks = (
        Callbacks()
        .register_after_inference_set("bad", raising("disk full"))
        .register_after_evaluate_set("aes", lambda context, args: aes.append(args))
    )
    service = await service_over(
        "abc", callbacks=logging_callbacks(log, callbacks), parallel_inference=parallel, parallel_evaluation=parallel
    )

    with pytest.raises(
        CallbackError, match=r"^run after inference set callbacks \(app=app, evalSetID=set\): "
    ) as raised:
        await service.infer_and_evaluate(inference_request(), CONFIG)

    assert {f"aec {eval_id}" for eval_id in "abc"} <= set(log)
    assert log[-1] == "aes"
    assert aes[0].result is None and aes[0].error is raised.value


@pytest.mark.asyncio
async def test_an_inference_error_is_raised_as_inference_raises_it_after_scoring_the_other_cases() -> None:
    calls = 0

    def session_ids(context: EvalContext) -> str:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("no session for you")
        return f"s{calls}"

    log: list[str] = []
    aes: list[AfterEvaluateSetArgs] = []
    callbacks = Callbacks().register_after_evaluate_set("aes", lambda context, args: aes.append(args))
    service = await service_over(
        "abc",
        callbacks=logging_callbacks(log, callbacks),
        session_id_supplier=session_ids,
        parallel_inference=True,
        parallel_evaluation=True,
    )

    with pytest.raises(RuntimeError, match="^no session for you$") as raised:
        await service.infer_and_evaluate(inference_request(), CONFIG)

    assert "aec a" in log and "aec c" in log and "bic b" not in log
    assert log[-2:] == ["ais", "aes"]
    assert aes[0].error is raised.value


@pytest.mark.asyncio
@pytest.mark.parametrize("point", ["before_evaluate_case", "after_evaluate_case"])
async def test_a_failing_evaluate_case_callback_raises_as_evaluate_does_once_the_other_cases_are_scored(
    point: str,
) -> None:
    log: list[str] = []
    callbacks = getattr(Callbacks(), f"register_{point}")("bad", raising("boom", only="b"))
    aes: list[AfterEvaluateSetArgs] = []
    callbacks.register_after_evaluate_set("aes", lambda context, args: aes.append(args))
    service = await service_over(
        "abc", callbacks=logging_callbacks(log, callbacks), parallel_inference=True, parallel_evaluation=True
    )

    with pytest.raises(CallbackError) as pipelined:
        await service.infer_and_evaluate(inference_request(), CONFIG)
    inferences = await service.inference(inference_request())
    with pytest.raises(CallbackError) as evaluate:
        await service.evaluate(evaluate_request(*inferences, metrics=[METRIC]))

    assert str(pipelined.value) == str(evaluate.value)
    assert str(pipelined.value).startswith(
        "evaluate case results (app=app, evalSetID=set): evaluate case (app=app, evalSetID=set, evalCaseID=b): "
    )
    assert {"aec a", "aec c"} <= set(log)
    assert aes[0].result is None and aes[0].error is pipelined.value


@pytest.mark.asyncio
async def test_serial_evaluation_stops_scoring_at_the_first_case_that_raises() -> None:
    log: list[str] = []
    callbacks = Callbacks().register_before_evaluate_case("bad", raising("boom", only="a"))
    runner = RecordingRunner()
    service = await service_over("abc", callbacks=logging_callbacks(log, callbacks), runner=runner)

    with pytest.raises(CallbackError, match="evalCaseID=a"):
        await service.infer_and_evaluate(inference_request(), CONFIG)

    assert [entry for entry in log if entry.startswith(("bec", "aec"))] == []
    assert runner.messages == ["for a", "for b", "for c"], "scoring errors never stop the agent"


@pytest.mark.asyncio
async def test_a_failing_after_evaluate_set_callback_replaces_the_result() -> None:
    callbacks = Callbacks().register_after_evaluate_set("bad", raising("after failed"))
    service = await service_over("a", callbacks=callbacks)

    with pytest.raises(CallbackError, match=r"^run after evaluate set callbacks \(app=app, evalSetID=set\): "):
        await service.infer_and_evaluate(inference_request(), CONFIG)


@pytest.mark.asyncio
async def test_a_cancelled_call_ends_both_sets_with_the_cancellation_and_leaves_no_task_behind() -> None:
    started = asyncio.Event()
    ais: list[AfterInferenceSetArgs] = []
    aes: list[AfterEvaluateSetArgs] = []
    scored: list[EvalCaseResult | None] = []

    async def handler(request: TurnRequest) -> TurnResult:
        if request.message.content == "for b":
            started.set()
            await asyncio.sleep(60)
        return echo(request)

    callbacks = (
        Callbacks()
        .register_after_inference_set("ais", lambda context, args: ais.append(args))
        .register_after_evaluate_set("aes", lambda context, args: aes.append(args))
        .register_after_evaluate_case("aec", lambda context, args: scored.append(args.result))
    )
    service = await service_over(
        "ab", callbacks=callbacks, runner=RecordingRunner(handler), parallel_inference=True, parallel_evaluation=True
    )
    before = asyncio.all_tasks()

    call = asyncio.create_task(service.infer_and_evaluate(inference_request(), CONFIG))
    await started.wait()
    await asyncio.sleep(0.01)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call

    assert isinstance(ais[0].error, asyncio.CancelledError)
    assert isinstance(aes[0].error, asyncio.CancelledError)
    assert [result.eval_id for result in scored if result is not None] == ["a"]
    assert asyncio.all_tasks() <= before


# ---------------------------------------------------------------------------------------------- the two phases stay


@pytest.mark.asyncio
async def test_inference_then_evaluate_keep_the_two_phase_order() -> None:
    log: list[str] = []
    service = await service_over(
        "ab", callbacks=logging_callbacks(log), parallel_inference=True, parallel_evaluation=True
    )

    await two_phase(service, CONFIG)

    at = positions(log)
    assert log[0] == "bis" and at["ais"] < at["bes"] < min(at["bec a"], at["bec b"]) and log[-1] == "aes"
