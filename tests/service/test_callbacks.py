"""Tests for lifecycle callbacks (spec §3; test ideas 65-73) in both service phases.

Covered: registration (65), the context rules of §3.4 (66, 68), error wrapping (67), case-level callback errors
in inference (69, 70), set-level errors (71, 72), evaluate case-level errors (73) and the shared request object in
parallel mode (73).

Differences from the reference, on purpose:
- Go's double prefix on before-set / before-case errors (``run before ... callbacks (...)`` twice) is not copied:
  the port writes it once.
- Go panics become ``callback panic: <v>``; Python callbacks raise exceptions, rendered ``<Type>: <message>``.
- The Go "nil callbacks container" case does not apply: ``ServiceOptions.callbacks`` is never ``None``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from agenteval.aggregation import AggregationInput, AggregationResult
from agenteval.context import EvalContext, current_context
from agenteval.errors import CallbackError, NotFoundError
from agenteval.evalset.message import Message
from agenteval.evalset.trace import ExecutionTrace
from agenteval.metric.models import EvalMetric
from agenteval.service.callbacks import (
    AfterEvaluateCaseArgs,
    AfterEvaluateSetArgs,
    AfterInferenceCaseArgs,
    AfterInferenceSetArgs,
    BeforeEvaluateCaseArgs,
    BeforeEvaluateSetArgs,
    BeforeInferenceCaseArgs,
    BeforeInferenceSetArgs,
    Callback,
    CallbackResult,
    Callbacks,
    NamedCallback,
)
from agenteval.service.types import EvalSetRunResult, InferenceRequest
from agenteval.status import EvalStatus
from tests.service._fakes import (
    APP,
    BOOM,
    FAILED,
    PASSED,
    SESSION,
    USER,
    FakeEvaluator,
    RecordingRunner,
    case_error,
    evaluate_request,
    inference_request,
    make_case,
    make_manager,
    make_service,
    passed_inference,
    reply_text,
)

POINTS = {
    "before_inference_set": "BeforeInferenceSet",
    "after_inference_set": "AfterInferenceSet",
    "before_inference_case": "BeforeInferenceCase",
    "after_inference_case": "AfterInferenceCase",
    "before_evaluate_set": "BeforeEvaluateSet",
    "after_evaluate_set": "AfterEvaluateSet",
    "before_evaluate_case": "BeforeEvaluateCase",
    "after_evaluate_case": "AfterEvaluateCase",
}
BASE = EvalContext(origin="base")


def causes(error: BaseException) -> list[BaseException]:
    """``error`` and its ``__cause__`` chain."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__
    return chain


def raiser(error: BaseException) -> Callable[[EvalContext, Any], None]:
    def callback(context: EvalContext, args: Any) -> None:
        raise error

    return callback


def returning(value: Any, log: list[tuple[str, EvalContext]] | None = None, name: str = "") -> Callable[..., Any]:
    """A callback recording the context it ran under and returning ``value``."""

    def callback(context: EvalContext, args: Any) -> Any:
        if log is not None:
            log.append((name, context))
        return value

    return callback


@dataclass
class Probe:
    """Records, per point, the context and args every callback received."""

    seen: dict[str, list[tuple[EvalContext, Any]]] = field(default_factory=dict)

    def recorder(self, point: str, returns: Callable[[EvalContext, Any], Any] | None = None) -> Callable[..., Any]:
        def callback(context: EvalContext, args: Any) -> Any:
            self.seen.setdefault(point, []).append((context, args))
            return returns(context, args) if returns is not None else None

        return callback

    def contexts(self, point: str) -> list[EvalContext]:
        return [context for context, _ in self.seen.get(point, [])]

    def args(self, point: str) -> list[Any]:
        return [args for _, args in self.seen.get(point, [])]


# ----------------------------------------------------------------------------- item 65: registration


def test_register_none_is_a_no_op() -> None:
    callbacks = Callbacks()
    assert callbacks.register("nothing", None) is callbacks
    assert all(getattr(callbacks, point) == [] for point in POINTS)


def test_register_appends_every_point_that_is_set() -> None:
    def before(context: EvalContext, args: BeforeInferenceSetArgs) -> None:
        return None

    def after(context: EvalContext, args: AfterEvaluateCaseArgs) -> None:
        return None

    callbacks = Callbacks().register("both", Callback(before_inference_set=before, after_evaluate_case=after))
    assert callbacks.before_inference_set == [NamedCallback("both", before)]
    assert callbacks.after_evaluate_case == [NamedCallback("both", after)]
    assert all(getattr(callbacks, p) == [] for p in POINTS if p not in {"before_inference_set", "after_evaluate_case"})


def test_helpers_return_the_same_container() -> None:
    callbacks = Callbacks()
    noop = returning(None)
    for point in POINTS:
        assert getattr(callbacks, f"register_{point}")(point, noop) is callbacks
    for point in POINTS:
        assert getattr(callbacks, point) == [NamedCallback(point, noop)]


@pytest.mark.asyncio
async def test_registration_order_is_execution_order_and_names_may_repeat() -> None:
    order: list[str] = []

    def step(label: str) -> Callable[[EvalContext, Any], None]:
        return lambda context, args: order.append(label)

    callbacks = (
        Callbacks()
        .register_before_evaluate_set("dup", step("first"))
        .register("other", Callback(before_evaluate_set=step("second")))
        .register_before_evaluate_set("dup", step("third"))
    )
    assert [named.name for named in callbacks.before_evaluate_set] == ["dup", "other", "dup"]
    await callbacks.run("before_evaluate_set", BASE, BeforeEvaluateSetArgs(request=evaluate_request()))
    assert order == ["first", "second", "third"]


# ----------------------------------------------------------------------------- item 66: context rules of §3.4


@pytest.mark.asyncio
async def test_empty_chain_keeps_the_incoming_context() -> None:
    assert await Callbacks().run("before_inference_set", BASE, None) is BASE


@pytest.mark.asyncio
async def test_later_none_keeps_an_earlier_context() -> None:
    ctx1 = BASE.with_values(step=1)
    log: list[tuple[str, EvalContext]] = []
    callbacks = (
        Callbacks()
        .register_before_inference_set("a", returning(CallbackResult(ctx1), log, "a"))
        .register_before_inference_set("b", returning(None, log, "b"))
    )
    adopted = await callbacks.run("before_inference_set", BASE, None)
    assert adopted is ctx1
    assert log == [("a", BASE), ("b", ctx1)]


@pytest.mark.asyncio
async def test_last_empty_result_restores_the_original_context() -> None:
    ctx1 = BASE.with_values(step=1)
    log: list[tuple[str, EvalContext]] = []
    callbacks = (
        Callbacks()
        .register_before_inference_set("a", returning(CallbackResult(ctx1), log, "a"))
        .register_before_inference_set("b", returning(CallbackResult(None), log, "b"))
    )
    adopted = await callbacks.run("before_inference_set", BASE, None)
    assert adopted is BASE
    assert log[1] == ("b", ctx1)  # B itself ran under ctx1


@pytest.mark.asyncio
async def test_last_context_wins_and_contexts_may_be_returned_directly() -> None:
    ctx1, ctx2 = BASE.with_values(step=1), BASE.with_values(step=2)
    log: list[tuple[str, EvalContext]] = []
    callbacks = (
        Callbacks()
        .register_before_evaluate_case("a", returning(ctx1, log, "a"))  # an EvalContext, not a CallbackResult
        .register_before_evaluate_case("b", returning(CallbackResult(ctx2), log, "b"))
        .register_before_evaluate_case("c", returning(None, log, "c"))
    )
    adopted = await callbacks.run("before_evaluate_case", BASE, None)
    assert adopted is ctx2
    assert log == [("a", BASE), ("b", ctx1), ("c", ctx2)]


@pytest.mark.asyncio
async def test_all_none_keeps_the_incoming_context() -> None:
    callbacks = (
        Callbacks()
        .register_after_inference_case("a", returning(None))
        .register_after_inference_case("b", returning(None))
    )
    assert await callbacks.run("after_inference_case", BASE, None) is BASE


@pytest.mark.asyncio
async def test_callbacks_share_one_args_object_and_may_be_async() -> None:
    args = BeforeInferenceSetArgs(request=inference_request())

    def plain(context: EvalContext, received: BeforeInferenceSetArgs) -> None:
        assert received is args
        received.request.eval_case_ids.append("from-plain")

    async def asynchronous(context: EvalContext, received: BeforeInferenceSetArgs) -> EvalContext:
        await asyncio.sleep(0)
        assert received is args
        assert received.request.eval_case_ids == ["from-plain"]
        return context.with_values(async_ran=True)

    callbacks = (
        Callbacks().register_before_inference_set("plain", plain).register_before_inference_set("async", asynchronous)
    )
    adopted = await callbacks.run("before_inference_set", BASE, args)
    assert adopted == EvalContext(origin="base", async_ran=True)


@pytest.mark.asyncio
async def test_a_wrong_return_type_is_a_callback_error() -> None:
    callbacks = Callbacks().register_before_inference_set("bad", returning(42))
    with pytest.raises(
        CallbackError,
        match=r"^execute BeforeInferenceSet callbacks: BeforeInferenceSet callback\[0\] \(bad\): returned int",
    ):
        await callbacks.run("before_inference_set", BASE, None)


# ----------------------------------------------------------------------------- item 67: error wrapping


@pytest.mark.asyncio
@pytest.mark.parametrize("point", list(POINTS))
async def test_error_wrapping_names_point_index_and_callback(point: str) -> None:
    ran: list[str] = []
    original = ValueError("boom")
    callbacks = Callbacks()
    register = getattr(callbacks, f"register_{point}")
    register("first", lambda context, args: ran.append("first"))
    register("second", lambda context, args: ran.append("second"))
    register("component", raiser(original))
    register("never", lambda context, args: ran.append("never"))
    display = POINTS[point]
    with pytest.raises(CallbackError) as caught:
        await callbacks.run(point, BASE, None)
    assert str(caught.value) == f"execute {display} callbacks: {display} callback[2] (component): ValueError: boom"
    assert caught.value.__cause__ is original
    assert ran == ["first", "second"]


@pytest.mark.asyncio
async def test_error_wrapping_of_agenteval_errors_and_empty_messages() -> None:
    callbacks = Callbacks().register_before_evaluate_set("ours", raiser(NotFoundError("no such thing")))
    with pytest.raises(
        CallbackError,
        match=r"^execute BeforeEvaluateSet callbacks: BeforeEvaluateSet callback\[0\] \(ours\): no such thing$",
    ):
        await callbacks.run("before_evaluate_set", BASE, None)
    callbacks = Callbacks().register_before_evaluate_set("bare", raiser(KeyError()))
    with pytest.raises(CallbackError, match=r"callback\[0\] \(bare\): KeyError$"):
        await callbacks.run("before_evaluate_set", BASE, None)


@pytest.mark.asyncio
async def test_async_callback_errors_are_wrapped_too() -> None:
    async def failing(context: EvalContext, args: Any) -> None:
        await asyncio.sleep(0)
        raise RuntimeError("later")

    callbacks = Callbacks().register_after_evaluate_set("async", failing)
    with pytest.raises(CallbackError, match=r"AfterEvaluateSet callback\[0\] \(async\): RuntimeError: later$"):
        await callbacks.run("after_evaluate_set", BASE, None)


# ----------------------------------------------------------------------------- item 68: where contexts flow


@pytest.mark.asyncio
async def test_inference_contexts_reach_supplier_runner_and_after_callbacks() -> None:
    probe = Probe()
    supplied: list[tuple[EvalContext, EvalContext]] = []

    def supplier(context: EvalContext) -> str:
        supplied.append((context, current_context()))
        return f"session-{len(supplied)}"

    callbacks = Callbacks()
    callbacks.register_before_inference_set("set", probe.recorder("bis", lambda c, a: c.with_values(set="S")))
    callbacks.register_before_inference_case(
        "case", probe.recorder("bic", lambda c, a: c.with_values(case=a.eval_case_id))
    )
    callbacks.register_after_inference_case(
        "after-case", probe.recorder("aic", lambda c, a: c.with_values(after_case=True))
    )
    callbacks.register_after_inference_case("after-case-2", probe.recorder("aic2"))
    callbacks.register_after_inference_set("after-set", probe.recorder("ais"))
    runner = RecordingRunner()
    service = make_service(
        await make_manager(make_case("a", "prompt"), make_case("b", "prompt")),
        runner=runner,
        callbacks=callbacks,
        session_id_supplier=supplier,
    )
    results = await service.inference(inference_request())

    set_context = EvalContext(set="S")
    assert probe.contexts("bis") == [EvalContext()]
    assert supplied == [(set_context, set_context), (set_context, set_context)]
    assert probe.contexts("bic") == [set_context, set_context]
    assert [(a.eval_case_id, a.session_id) for a in probe.args("bic")] == [("a", "session-1"), ("b", "session-2")]
    case_contexts = [EvalContext(set="S", case="a"), EvalContext(set="S", case="b")]
    assert [r.context for r in runner.requests] == case_contexts
    assert runner.current_contexts == case_contexts
    assert probe.contexts("aic") == case_contexts
    # Inside the after chain a returned context flows on; the framework ignores it afterwards.
    assert probe.contexts("aic2") == [c.with_values(after_case=True) for c in case_contexts]
    assert probe.contexts("ais") == [set_context]
    assert [r.status for r in results] == [PASSED, PASSED]


@pytest.mark.asyncio
async def test_evaluate_contexts_reach_evaluator_aggregator_and_after_callbacks() -> None:
    probe = Probe()
    aggregated: list[EvalContext] = []

    class ContextAggregator:
        def aggregate(self, data: AggregationInput) -> AggregationResult:
            aggregated.append(data.context)
            return AggregationResult(score=1.0, status=PASSED)

    callbacks = Callbacks()
    callbacks.register_before_evaluate_set("set", probe.recorder("bes", lambda c, a: c.with_values(set="S")))
    callbacks.register_before_evaluate_case(
        "case", probe.recorder("bec", lambda c, a: CallbackResult(c.with_values(case=a.eval_case_id)))
    )
    callbacks.register_after_evaluate_case("after-case", probe.recorder("aec", lambda c, a: c.with_values(x=1)))
    callbacks.register_after_evaluate_case("after-case-2", probe.recorder("aec2"))
    callbacks.register_after_evaluate_set("after-set", probe.recorder("aes"))
    evaluator = FakeEvaluator()
    service = make_service(
        await make_manager(make_case("a", "prompt"), make_case("b", "prompt")),
        {"m": evaluator},
        callbacks=callbacks,
        aggregator=ContextAggregator(),
    )
    await service.evaluate(
        evaluate_request(passed_inference("a"), passed_inference("b"), metrics=[EvalMetric(metric_name="m")])
    )

    set_context = EvalContext(set="S")
    case_contexts = [EvalContext(set="S", case="a"), EvalContext(set="S", case="b")]
    assert probe.contexts("bes") == [EvalContext()]
    assert probe.contexts("bec") == [set_context, set_context]
    assert [a.eval_case_id for a in probe.args("bec")] == ["a", "b"]
    assert [call.context for call in evaluator.calls] == case_contexts
    assert aggregated == case_contexts
    assert probe.contexts("aec") == case_contexts
    assert probe.contexts("aec2") == [c.with_values(x=1) for c in case_contexts]
    assert probe.contexts("aes") == [set_context]
    assert current_context() == EvalContext()  # nothing leaks out of the call


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("second", "expected"),
    [(None, EvalContext(set="S", step=1)), (CallbackResult(None), EvalContext(set="S"))],
    ids=["none-keeps-ctx1", "empty-result-restores"],
)
async def test_context_rules_hold_inside_the_service(second: CallbackResult | None, expected: EvalContext) -> None:
    callbacks = (
        Callbacks()
        .register_before_evaluate_set("set", lambda c, a: c.with_values(set="S"))
        .register_before_evaluate_case("a", lambda c, a: CallbackResult(c.with_values(step=1)))
        .register_before_evaluate_case("b", returning(second))
    )
    evaluator = FakeEvaluator()
    service = make_service(await make_manager(make_case("c", "prompt")), {"m": evaluator}, callbacks=callbacks)
    await service.evaluate(evaluate_request(passed_inference("c"), metrics=[EvalMetric(metric_name="m")]))
    assert evaluator.calls[0].context == expected


@pytest.mark.asyncio
async def test_sync_and_async_callbacks_at_every_point() -> None:
    fired: list[str] = []
    callbacks = Callbacks()
    for index, point in enumerate(POINTS):
        if index % 2:

            async def async_callback(context: EvalContext, args: Any, point: str = point) -> None:
                await asyncio.sleep(0)
                fired.append(point)

            getattr(callbacks, f"register_{point}")("async", async_callback)
        else:
            getattr(callbacks, f"register_{point}")("sync", lambda c, a, point=point: fired.append(point))
    service = make_service(await make_manager(make_case("c", "prompt")), {"m": FakeEvaluator()}, callbacks=callbacks)
    inferences = await service.inference(inference_request())
    await service.evaluate(evaluate_request(*inferences, metrics=[EvalMetric(metric_name="m")]))
    # §3.6: the order of the points within one inference + evaluate round.
    assert fired == [
        "before_inference_set",
        "before_inference_case",
        "after_inference_case",
        "after_inference_set",
        "before_evaluate_set",
        "before_evaluate_case",
        "after_evaluate_case",
        "after_evaluate_set",
    ]


# ----------------------------------------------------------------------------- items 69, 70: inference case errors


@pytest.mark.asyncio
async def test_before_inference_case_error_fails_only_that_case() -> None:
    probe = Probe()

    def before(context: EvalContext, args: BeforeInferenceCaseArgs) -> None:
        if args.eval_case_id == "a":
            raise ValueError("boom")

    callbacks = Callbacks().register_before_inference_case("bad", before)
    callbacks.register_after_inference_case("after", probe.recorder("aic"))
    runner = RecordingRunner()
    service = make_service(
        await make_manager(make_case("a", "prompt"), make_case("b", "prompt")), runner=runner, callbacks=callbacks
    )
    results = await service.inference(inference_request())

    failed, passed = results
    assert failed.status == FAILED
    assert failed.error_message == (
        f"run before inference case callbacks (app=app, evalSetID=set, evalCaseID=a, sessionID={SESSION}): "
        "execute BeforeInferenceCase callbacks: BeforeInferenceCase callback[0] (bad): ValueError: boom"
    )
    assert failed.inferences == []
    assert failed.session_id == SESSION
    assert failed.user_id == ""
    assert failed.eval_case_id == "a"
    assert passed.status == PASSED
    assert [r.message.content for r in runner.requests] == ["prompt"]  # only case b ran
    assert [a.result.eval_case_id for a in probe.args("aic")] == ["b"]  # no after-case for the failed one


@pytest.mark.asyncio
async def test_after_inference_case_error_fails_a_successful_case() -> None:
    recorded = ExecutionTrace(root_agent_name="agent", status="completed")
    runner = RecordingRunner(traces={"prompt": recorded})
    callbacks = Callbacks().register_after_inference_case("bad", raiser(ValueError("boom")))
    service = make_service(await make_manager(make_case("a", "prompt")), runner=runner, callbacks=callbacks)
    (result,) = await service.inference(inference_request())
    assert result.status == FAILED
    assert result.error_message == (
        "run after inference case callbacks (app=app, evalSetID=set, evalCaseID=a): "
        "execute AfterInferenceCase callbacks: AfterInferenceCase callback[0] (bad): ValueError: boom"
    )
    assert result.inferences == []
    assert result.execution_traces == [recorded]  # a failed case keeps its traces
    assert result.user_id == USER


@pytest.mark.asyncio
async def test_after_inference_case_error_is_joined_to_a_case_error() -> None:
    callbacks = Callbacks().register_after_inference_case("bad", raiser(ValueError("boom")))
    runner = RecordingRunner(fail_on=["prompt"])
    service = make_service(await make_manager(make_case("a", "prompt")), runner=runner, callbacks=callbacks)
    (result,) = await service.inference(inference_request())
    assert result.status == FAILED
    inference_error, after_error = result.error_message.split("\n")
    assert inference_error == case_error(BOOM, eval_id="a")
    assert after_error.startswith("run after inference case callbacks (app=app, evalSetID=set, evalCaseID=a): ")
    assert result.inferences == []


@pytest.mark.asyncio
async def test_after_inference_case_args_error_is_always_none() -> None:
    probe = Probe()
    callbacks = Callbacks().register_after_inference_case("probe", probe.recorder("aic"))
    runner = RecordingRunner(fail_on=["prompt"])
    service = make_service(await make_manager(make_case("a", "prompt")), runner=runner, callbacks=callbacks)
    results = await service.inference(inference_request())
    (args,) = probe.args("aic")
    assert isinstance(args, AfterInferenceCaseArgs)
    assert args.error is None
    assert args.result is results[0]
    assert args.result.status == FAILED
    assert "runner run: RuntimeError: boom" in args.result.error_message


@pytest.mark.asyncio
async def test_after_inference_case_args_on_success() -> None:
    probe = Probe()
    started: list[float] = []
    callbacks = Callbacks().register_before_inference_case("t", lambda c, a: started.append(time.time()))
    callbacks.register_after_inference_case("probe", probe.recorder("aic"))
    request_object = inference_request()
    service = make_service(await make_manager(make_case("a", "prompt")), callbacks=callbacks)
    results = await service.inference(request_object)
    (args,) = probe.args("aic")
    assert args.request is request_object
    assert args.result is results[0]
    assert args.error is None
    assert args.result.inferences[0].final_response == Message.assistant(reply_text("prompt"))
    assert args.start_time >= started[0]


# ----------------------------------------------------------------------------- items 71, 72: set-level errors


@pytest.mark.asyncio
async def test_before_inference_set_error_raises_with_a_single_prefix() -> None:
    probe = Probe()
    original = ValueError("boom")
    callbacks = Callbacks().register_before_inference_set("bad", raiser(original))
    callbacks.register_after_inference_set("after", probe.recorder("ais"))
    runner = RecordingRunner()
    service = make_service(await make_manager(make_case("a", "prompt")), runner=runner, callbacks=callbacks)
    with pytest.raises(CallbackError) as caught:
        await service.inference(inference_request())
    assert str(caught.value) == (
        "run before inference set callbacks (app=app, evalSetID=set): "
        "execute BeforeInferenceSet callbacks: BeforeInferenceSet callback[0] (bad): ValueError: boom"
    )
    assert original in causes(caught.value)
    assert runner.requests == []
    assert probe.seen == {}


@pytest.mark.asyncio
async def test_after_inference_set_error_replaces_the_original_error() -> None:
    probe = Probe()
    callbacks = Callbacks().register_after_inference_set("probe", probe.recorder("ais"))
    callbacks.register_after_inference_set("bad", raiser(RuntimeError("after failed")))
    service = make_service(await make_manager(), callbacks=callbacks)
    with pytest.raises(CallbackError) as caught:
        await service.inference(InferenceRequest(app_name=APP, eval_set_id="missing-set"))
    message = str(caught.value)
    assert message == (
        "run after inference set callbacks (app=app, evalSetID=missing-set): "
        "execute AfterInferenceSet callbacks: AfterInferenceSet callback[1] (bad): RuntimeError: after failed"
    )
    assert "load inference eval cases" not in message
    (args,) = probe.args("ais")
    assert args.results is None
    assert isinstance(args.error, NotFoundError)
    assert str(args.error).startswith("load inference eval cases: get eval set: ")


@pytest.mark.asyncio
async def test_after_inference_set_error_discards_successful_results() -> None:
    callbacks = Callbacks().register_after_inference_set("bad", raiser(RuntimeError("after failed")))
    service = make_service(await make_manager(make_case("a", "prompt")), callbacks=callbacks)
    with pytest.raises(CallbackError, match="^run after inference set callbacks"):
        await service.inference(inference_request())


@pytest.mark.asyncio
async def test_after_inference_set_args_on_success_and_on_no_match() -> None:
    probe = Probe()
    started: list[float] = []
    callbacks = Callbacks().register_before_inference_set("t", lambda c, a: started.append(time.time()))
    callbacks.register_after_inference_set("probe", probe.recorder("ais"))
    service = make_service(await make_manager(make_case("a", "prompt")), callbacks=callbacks)
    request_object = inference_request()
    results = await service.inference(request_object)
    empty = await service.inference(inference_request("nothing-matches"))

    first, second = probe.args("ais")
    assert isinstance(first, AfterInferenceSetArgs)
    assert first.request is request_object
    assert first.results is results
    assert first.error is None
    assert first.start_time >= started[0]
    assert second.results == [] and empty == []
    assert second.error is None


@pytest.mark.asyncio
async def test_before_inference_set_can_filter_case_ids() -> None:
    def only_b(context: EvalContext, args: BeforeInferenceSetArgs) -> None:
        args.request.eval_case_ids = ["b"]

    callbacks = Callbacks().register_before_inference_set("filter", only_b)
    runner = RecordingRunner()
    manager = await make_manager(make_case("a", "for a"), make_case("b", "for b"), make_case("c", "for c"))
    service = make_service(manager, runner=runner, callbacks=callbacks)
    request_object = inference_request()
    results = await service.inference(request_object)
    assert [r.eval_case_id for r in results] == ["b"]
    assert [r.message.content for r in runner.requests] == ["for b"]
    assert request_object.eval_case_ids == ["b"]  # the caller's request was edited


@pytest.mark.asyncio
async def test_before_evaluate_set_error_raises_with_a_single_prefix() -> None:
    probe = Probe()
    original = ValueError("boom")
    callbacks = Callbacks().register_before_evaluate_set("bad", raiser(original))
    callbacks.register_after_evaluate_set("after", probe.recorder("aes"))
    callbacks.register_before_evaluate_case("case", probe.recorder("bec"))
    evaluator = FakeEvaluator()
    service = make_service(await make_manager(make_case("a", "prompt")), {"m": evaluator}, callbacks=callbacks)
    with pytest.raises(CallbackError) as caught:
        await service.evaluate(evaluate_request(passed_inference("a"), metrics=[EvalMetric(metric_name="m")]))
    assert str(caught.value) == (
        "run before evaluate set callbacks (app=app, evalSetID=set): "
        "execute BeforeEvaluateSet callbacks: BeforeEvaluateSet callback[0] (bad): ValueError: boom"
    )
    assert original in causes(caught.value)
    assert evaluator.calls == []
    assert probe.seen == {}


@pytest.mark.asyncio
async def test_before_evaluate_set_can_edit_the_request() -> None:
    def add_metric(context: EvalContext, args: BeforeEvaluateSetArgs) -> None:
        args.request.evaluate_config.eval_metrics.append(EvalMetric(metric_name="added"))

    callbacks = Callbacks().register_before_evaluate_set("edit", add_metric)
    service = make_service(
        await make_manager(make_case("a", "prompt")), {"added": FakeEvaluator()}, callbacks=callbacks
    )
    result = await service.evaluate(evaluate_request(passed_inference("a")))
    assert [m.metric_name for m in result.eval_case_results[0].overall_eval_metric_results] == ["added"]


@pytest.mark.asyncio
async def test_after_evaluate_set_receives_none_and_the_error_on_failure() -> None:
    probe = Probe()
    callbacks = Callbacks().register_before_evaluate_case("bad", raiser(ValueError("case boom")))
    callbacks.register_after_evaluate_set("probe", probe.recorder("aes"))
    service = make_service(await make_manager(make_case("a", "prompt")), callbacks=callbacks)
    with pytest.raises(CallbackError) as caught:
        await service.evaluate(evaluate_request(passed_inference("a")))
    (args,) = probe.args("aes")
    assert isinstance(args, AfterEvaluateSetArgs)
    assert args.result is None
    assert args.error is caught.value


@pytest.mark.asyncio
async def test_after_evaluate_set_receives_the_same_result_on_success() -> None:
    probe = Probe()
    started: list[float] = []
    callbacks = Callbacks().register_before_evaluate_set("t", lambda c, a: started.append(time.time()))
    callbacks.register_after_evaluate_set("probe", probe.recorder("aes"))
    service = make_service(await make_manager(make_case("a", "prompt")), {"m": FakeEvaluator()}, callbacks=callbacks)
    request_object = evaluate_request(passed_inference("a"), metrics=[EvalMetric(metric_name="m")])
    result = await service.evaluate(request_object)
    (args,) = probe.args("aes")
    assert isinstance(result, EvalSetRunResult)
    assert args.result is result
    assert args.error is None
    assert args.request is request_object
    assert args.start_time >= started[0]


@pytest.mark.asyncio
async def test_after_evaluate_set_error_replaces_the_original_error() -> None:
    callbacks = Callbacks().register_before_evaluate_case("bad", raiser(ValueError("case boom")))
    callbacks.register_after_evaluate_set("after", raiser(RuntimeError("after failed")))
    service = make_service(await make_manager(make_case("a", "prompt")), callbacks=callbacks)
    with pytest.raises(CallbackError) as caught:
        await service.evaluate(evaluate_request(passed_inference("a")))
    assert str(caught.value) == (
        "run after evaluate set callbacks (app=app, evalSetID=set): "
        "execute AfterEvaluateSet callbacks: AfterEvaluateSet callback[0] (after): RuntimeError: after failed"
    )
    assert "case boom" not in str(caught.value)


@pytest.mark.asyncio
async def test_after_evaluate_set_error_discards_a_successful_result() -> None:
    callbacks = Callbacks().register_after_evaluate_set("after", raiser(RuntimeError("after failed")))
    service = make_service(await make_manager(make_case("a", "prompt")), callbacks=callbacks)
    with pytest.raises(CallbackError, match="^run after evaluate set callbacks"):
        await service.evaluate(evaluate_request(passed_inference("a")))


# ----------------------------------------------------------------------------- item 73: evaluate case errors


@pytest.mark.asyncio
async def test_before_evaluate_case_error_makes_evaluate_raise() -> None:
    probe = Probe()
    callbacks = Callbacks().register_before_evaluate_case("bad", raiser(ValueError("boom")))
    callbacks.register_after_evaluate_case("after", probe.recorder("aec"))
    evaluator = FakeEvaluator()
    service = make_service(await make_manager(make_case("a", "prompt")), {"m": evaluator}, callbacks=callbacks)
    with pytest.raises(CallbackError) as caught:
        await service.evaluate(evaluate_request(passed_inference("a"), metrics=[EvalMetric(metric_name="m")]))
    assert str(caught.value) == (
        "evaluate case results (app=app, evalSetID=set): "
        "evaluate case (app=app, evalSetID=set, evalCaseID=a): "
        "run before evaluate case callbacks (app=app, evalSetID=set, evalCaseID=a): "
        "execute BeforeEvaluateCase callbacks: BeforeEvaluateCase callback[0] (bad): ValueError: boom"
    )
    assert evaluator.calls == []
    assert probe.seen == {}


@pytest.mark.asyncio
async def test_after_evaluate_case_error_makes_evaluate_raise() -> None:
    callbacks = Callbacks().register_after_evaluate_case("bad", raiser(ValueError("boom")))
    evaluator = FakeEvaluator()
    service = make_service(await make_manager(make_case("a", "prompt")), {"m": evaluator}, callbacks=callbacks)
    with pytest.raises(CallbackError) as caught:
        await service.evaluate(evaluate_request(passed_inference("a"), metrics=[EvalMetric(metric_name="m")]))
    assert str(caught.value) == (
        "evaluate case results (app=app, evalSetID=set): "
        "evaluate case (app=app, evalSetID=set, evalCaseID=a): "
        "run after evaluate case callbacks (app=app, evalSetID=set, evalCaseID=a): "
        "execute AfterEvaluateCase callbacks: AfterEvaluateCase callback[0] (bad): ValueError: boom"
    )
    assert len(evaluator.calls) == 1  # the case was scored before the callback failed


@pytest.mark.asyncio
async def test_after_evaluate_case_args() -> None:
    probe = Probe()
    started: list[float] = []
    callbacks = Callbacks().register_before_evaluate_case("t", lambda c, a: started.append(time.time()))
    callbacks.register_after_evaluate_case("probe", probe.recorder("aec"))
    service = make_service(await make_manager(make_case("a", "prompt")), {"m": FakeEvaluator()}, callbacks=callbacks)
    inference = passed_inference("a")
    failed_inference = passed_inference("b", status=FAILED, error_message="inference failed")
    request_object = evaluate_request(inference, failed_inference, metrics=[EvalMetric(metric_name="m")])
    result = await service.evaluate(request_object)

    first, second = probe.args("aec")
    assert isinstance(first, AfterEvaluateCaseArgs)
    assert first.request is request_object
    assert first.inference_result is inference
    assert first.result is result.eval_case_results[0]
    assert first.error is None
    assert first.start_time >= started[0]
    assert second.inference_result is failed_inference
    assert second.result is not None and second.result.error_message == "inference failed"


@pytest.mark.asyncio
@pytest.mark.parametrize("point", ["before_evaluate_case", "after_evaluate_case"])
async def test_evaluate_case_callback_error_keeps_the_original_as_cause(point: str) -> None:
    original = ValueError("boom")
    callbacks = Callbacks()
    getattr(callbacks, f"register_{point}")("bad", raiser(original))
    service = make_service(await make_manager(make_case("a", "prompt")), callbacks=callbacks)
    with pytest.raises(CallbackError) as caught:
        await service.evaluate(evaluate_request(passed_inference("a")))
    assert original in causes(caught.value)


@pytest.mark.asyncio
@pytest.mark.parametrize("point", ["after_inference_set", "after_evaluate_set"])
async def test_after_set_callback_error_keeps_the_original_as_cause(point: str) -> None:
    original = ValueError("boom")
    callbacks = Callbacks()
    getattr(callbacks, f"register_{point}")("bad", raiser(original))
    service = make_service(await make_manager(make_case("a", "prompt")), callbacks=callbacks)
    with pytest.raises(CallbackError) as caught:
        if point == "after_inference_set":
            await service.inference(inference_request())
        else:
            await service.evaluate(evaluate_request(passed_inference("a")))
    assert original in causes(caught.value)


@pytest.mark.asyncio
async def test_parallel_inference_case_callbacks_share_the_request_object() -> None:
    probe = Probe()
    callbacks = Callbacks().register_before_inference_case("probe", probe.recorder("bic"))
    callbacks.register_after_inference_case("probe", probe.recorder("aic"))
    manager = await make_manager(make_case("a", "prompt"), make_case("b", "prompt"), make_case("c", "prompt"))
    service = make_service(manager, callbacks=callbacks, parallel_inference=True, parallelism=2)
    request_object = inference_request()
    results = await service.inference(request_object)
    assert [r.status for r in results] == [PASSED] * 3
    assert len(probe.args("bic")) == 3
    assert all(args.request is request_object for args in probe.args("bic"))
    assert all(args.request is request_object for args in probe.args("aic"))


@pytest.mark.asyncio
async def test_parallel_evaluate_case_callbacks_share_the_request_object() -> None:
    probe = Probe()
    callbacks = Callbacks().register_before_evaluate_case("probe", probe.recorder("bec"))
    callbacks.register_after_evaluate_case("probe", probe.recorder("aec"))
    manager = await make_manager(make_case("a", "prompt"), make_case("b", "prompt"), make_case("c", "prompt"))
    service = make_service(
        manager, {"m": FakeEvaluator()}, callbacks=callbacks, parallel_evaluation=True, parallelism=2
    )
    request_object = evaluate_request(*(passed_inference(c) for c in "abc"), metrics=[EvalMetric(metric_name="m")])
    result = await service.evaluate(request_object)
    assert [r.final_eval_status for r in result.eval_case_results] == [EvalStatus.PASSED] * 3
    assert sorted(args.eval_case_id for args in probe.args("bec")) == ["a", "b", "c"]
    assert all(args.request is request_object for args in probe.args("bec"))
    assert all(args.request is request_object for args in probe.args("aec"))


@pytest.mark.parametrize(
    ("args_type", "fields"),
    [
        (BeforeInferenceSetArgs, {"request"}),
        (AfterInferenceSetArgs, {"request", "results", "error", "start_time"}),
        (BeforeInferenceCaseArgs, {"request", "eval_case_id", "session_id"}),
        (AfterInferenceCaseArgs, {"request", "result", "error", "start_time", "reused"}),
        (BeforeEvaluateSetArgs, {"request"}),
        (AfterEvaluateSetArgs, {"request", "result", "error", "start_time"}),
        (BeforeEvaluateCaseArgs, {"request", "eval_case_id"}),
        (AfterEvaluateCaseArgs, {"request", "inference_result", "result", "error", "start_time", "reused"}),
    ],
)
def test_args_types_have_the_reference_fields(args_type: Any, fields: set[str]) -> None:
    # Spec §3.1, in snake_case; ``reused`` (work taken from the cache or a resumed result) is agenteval's.
    assert {f.name for f in dataclasses.fields(args_type)} == fields
