"""Inference phase of ``LocalService``: case selection, request validation, per-case failures, turns.

Spec: trpc-service-evalresult-spec.md §1.1-1.7 and §1.12; test ideas §6 items 1-14 and 26.

Test ideas that do not apply to the Python port, and why:

- Items 15-25 (assembling an invocation from the runner's event stream): our ``Runner`` returns a
  ``TurnResult`` directly, so there is no event stream to assemble. Item 20 (a failure on turn 2)
  is still covered here, through the runner raising.
- Item 11 (a ``nil`` context message) and nil entries inside lists in general: our models reject
  ``null`` list entries at load time (tested below), except eval cases, which are skipped on load
  (item 4, tested below).
- Item 12, the run-option part: there are no Go run options (global injected messages, a
  RuntimeState option). What remains is tested: the case's context messages and
  ``sessionInput.state`` reach the runner through ``TurnRequest``.
- Item 14, the ``nil`` option part: a ``None`` option means "use the default", so the reference's
  "eval set manager is nil" / "session id supplier is nil" errors do not exist; that ``None`` really
  means the default is tested below. The parallelism part is in ``test_parallel_inference.py``.
- Pool-closed items and panics: asyncio has no worker pool to close, and Python has no panics.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pydantic
import pytest

from agenteval.context import EvalContext
from agenteval.errors import ConfigError, NotFoundError
from agenteval.evalset.local import LocalEvalSetManager
from agenteval.evalset.memory import InMemoryEvalSetManager
from agenteval.evalset.message import Message
from agenteval.evalset.models import EvalCase, EvalMode, EvalSet, Invocation, SessionInput, Tool
from agenteval.runner import Turn, TurnResult
from agenteval.service import BeforeInferenceCaseArgs, BeforeInferenceSetArgs, Callbacks, InferenceRequest, LocalService
from agenteval.status import EvalStatus
from tests.service._fakes import (
    APP,
    BOOM,
    SESSION,
    SET,
    USER,
    FixedEvalSetManager,
    RecordingRunner,
    case_error,
    constant_session,
    infer_one,
    inference_request,
    make_case,
    make_manager,
    make_service,
    reply_text,
    trace,
    turn,
)

# ---------------------------------------------------------------------------- case selection (§1.4)


@pytest.mark.asyncio
async def test_filter_by_case_id_runs_only_that_case() -> None:
    runner = RecordingRunner()
    manager = await make_manager(
        make_case("case-add", "1+2", session_input=SessionInput(user_id="alice")), make_case("case-sub", "3-1")
    )

    results = await make_service(manager, runner=runner).inference(inference_request("case-add"))

    assert runner.messages == ["1+2"]
    assert len(results) == 1
    result = results[0]
    assert (result.app_name, result.eval_set_id, result.eval_case_id) == (APP, SET, "case-add")
    assert result.eval_mode == EvalMode.DEFAULT
    assert result.status == EvalStatus.PASSED
    assert result.error_message == ""
    assert result.session_id == SESSION
    assert result.user_id == "alice"
    assert [inv.user_content for inv in result.inferences] == [Message.user("1+2")]
    assert [inv.final_response for inv in result.inferences] == [Message.assistant(reply_text("1+2"))]
    assert [inv.invocation_id for inv in result.inferences] == [f"{SESSION}/1+2"]
    assert result.expected_inferences == []


@pytest.mark.asyncio
async def test_missing_case_ids_give_an_empty_list_and_no_runner_call() -> None:
    runner = RecordingRunner()
    manager = await make_manager(make_case("case-add", "1+2"))

    results = await make_service(manager, runner=runner).inference(inference_request("case-missing"))

    assert results == []
    assert runner.requests == []


@pytest.mark.asyncio
async def test_missing_case_ids_are_ignored_among_existing_ones() -> None:
    runner = RecordingRunner()
    manager = await make_manager(make_case("a", "qa"), make_case("b", "qb"))

    results = await make_service(manager, runner=runner).inference(inference_request("nope", "b", "missing"))

    assert [r.eval_case_id for r in results] == ["b"]
    assert runner.messages == ["qb"]


@pytest.mark.asyncio
async def test_results_follow_eval_set_order_and_duplicate_ids_give_one_result() -> None:
    runner = RecordingRunner()
    manager = await make_manager(make_case("a", "qa"), make_case("b", "qb"), make_case("c", "qc"))

    results = await make_service(manager, runner=runner).inference(inference_request("c", "a", "c", "a"))

    assert [r.eval_case_id for r in results] == ["a", "c"]
    assert runner.messages == ["qa", "qc"]


@pytest.mark.asyncio
async def test_no_case_ids_select_every_case_in_eval_set_order() -> None:
    runner = RecordingRunner()
    manager = await make_manager(make_case("z", "qz"), make_case("a", "qa"), make_case("m", "qm"))

    results = await make_service(manager, runner=runner).inference(inference_request())

    assert [r.eval_case_id for r in results] == ["z", "a", "m"]
    assert runner.messages == ["qz", "qa", "qm"]
    assert all(r.status == EvalStatus.PASSED for r in results)


@pytest.mark.asyncio
async def test_an_empty_eval_set_gives_an_empty_list() -> None:
    runner = RecordingRunner()

    results = await make_service(await make_manager(), runner=runner).inference(inference_request())

    assert results == []
    assert runner.requests == []


@pytest.mark.asyncio
async def test_cases_sharing_an_eval_id_are_each_inferred() -> None:
    runner = RecordingRunner()
    eval_set = EvalSet(eval_set_id=SET, eval_cases=[make_case("dup", "first"), make_case("dup", "second")])

    results = await make_service(FixedEvalSetManager(eval_set), runner=runner).inference(inference_request("dup"))

    assert [r.eval_case_id for r in results] == ["dup", "dup"]
    assert runner.messages == ["first", "second"]


@pytest.mark.asyncio
async def test_null_cases_in_an_eval_set_file_are_skipped(tmp_path: Path) -> None:
    """Item 4: a ``null`` entry among the cases of a local eval-set file is skipped."""
    (tmp_path / APP).mkdir()
    (tmp_path / APP / f"{SET}.evalset.json").write_text(
        '{"evalSetId": "set", "evalCases": [null, {"evalId": "c", "sessionInput": {"userId": "u"}, '
        '"conversation": [{"invocationId": "t1", "userContent": {"role": "user", "content": "hi"}}]}, null]}'
    )
    runner = RecordingRunner()

    results = await make_service(LocalEvalSetManager(tmp_path), runner=runner).inference(inference_request())

    assert [(r.eval_case_id, r.status, r.user_id) for r in results] == [("c", EvalStatus.PASSED, "u")]
    assert runner.messages == ["hi"]


@pytest.mark.asyncio
async def test_unknown_eval_set_raises_not_found() -> None:
    runner = RecordingRunner()
    service = make_service(await make_manager(make_case("a", "qa")), runner=runner)

    with pytest.raises(NotFoundError) as raised:
        await service.inference(InferenceRequest(app_name=APP, eval_set_id="missing"))

    assert str(raised.value) == "load inference eval cases: get eval set: eval set app.missing not found"
    assert runner.requests == []


# ---------------------------------------------------------------------------- request validation (§1.3)


@pytest.mark.parametrize(
    ("bad_request", "message"),
    [
        (None, "validate inference request: inference request is nil"),
        (InferenceRequest(app_name="", eval_set_id=SET), "validate inference request: app name is empty"),
        (InferenceRequest(app_name=APP, eval_set_id=""), "validate inference request: eval set id is empty"),
    ],
    ids=["none", "empty-app", "empty-set"],
)
@pytest.mark.asyncio
async def test_invalid_requests_raise(bad_request: InferenceRequest | None, message: str) -> None:
    runner = RecordingRunner()
    seen: list[str] = []
    callbacks = Callbacks().register_before_inference_set("spy", lambda ctx, args: seen.append("before-set"))
    service = make_service(await make_manager(make_case("a", "qa")), runner=runner, callbacks=callbacks)

    with pytest.raises(ConfigError) as raised:
        await service.inference(bad_request)  # type: ignore[arg-type]

    assert str(raised.value) == message
    assert seen == []
    assert runner.requests == []


# ---------------------------------------------------------------------------- per-case failures (§1.5, §1.12)


@pytest.mark.asyncio
async def test_runner_exception_fails_the_case_and_keeps_the_user_id() -> None:
    runner = RecordingRunner(fail_on=["q"])

    result = await infer_one(runner, make_case("c", "q", session_input=SessionInput(user_id="bob")))

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error(BOOM)
    assert result.inferences == []
    assert result.user_id == "bob"
    assert result.session_id == SESSION
    assert result.eval_case_id == "c"


@pytest.mark.asyncio
async def test_a_failing_case_does_not_stop_the_next_ones() -> None:
    runner = RecordingRunner(fail_on=["qb"])
    manager = await make_manager(make_case("a", "qa"), make_case("b", "qb"), make_case("c", "qc"))

    results = await make_service(manager, runner=runner).inference(inference_request())

    assert [(r.eval_case_id, r.status) for r in results] == [
        ("a", EvalStatus.PASSED),
        ("b", EvalStatus.FAILED),
        ("c", EvalStatus.PASSED),
    ]
    assert runner.messages == ["qa", "qb", "qc"]


@pytest.mark.asyncio
async def test_runner_returning_something_else_than_a_turn_result_fails_the_case() -> None:
    runner = RecordingRunner(lambda request: "plain text")  # type: ignore[arg-type, return-value]

    result = await infer_one(runner, make_case("c", "q"))

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error("runner run: the runner returned str; return a TurnResult")


@pytest.mark.asyncio
async def test_missing_session_input_fails_the_case_without_running() -> None:
    runner = RecordingRunner()

    result = await infer_one(runner, make_case("c", "q", session_input=None))

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error("session input is nil")
    assert result.user_id == ""
    assert result.session_id == SESSION
    assert result.inferences == []
    assert runner.requests == []


@pytest.mark.asyncio
async def test_missing_session_input_is_checked_before_anything_else() -> None:
    case = make_case(
        "c", session_input=None, conversation=[], actual_conversation=[turn("recorded", final="x")], eval_mode="trace"
    )

    result = await infer_one(RecordingRunner(), case)

    assert result.error_message == case_error("session input is nil")


@pytest.mark.asyncio
async def test_actual_conversation_outside_trace_mode_fails_without_running() -> None:
    runner = RecordingRunner()
    case = make_case("c", "q", actual_conversation=[turn("q", final="recorded")])

    result = await infer_one(runner, case)

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error("actualConversation is only supported in trace mode")
    assert result.eval_mode == EvalMode.DEFAULT
    assert result.user_id == USER
    assert runner.requests == []


@pytest.mark.asyncio
async def test_an_empty_conversation_without_scenario_fails() -> None:
    runner = RecordingRunner()

    result = await infer_one(runner, make_case("c"))

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error("invocations are empty")
    assert result.inferences == []
    assert runner.requests == []


@pytest.mark.asyncio
async def test_a_turn_without_user_content_stops_the_case() -> None:
    runner = RecordingRunner(traces={"q1": trace("turn-1")})
    conversation = [turn("q1", "t1"), Invocation(invocation_id="t2"), turn("q3", "t3")]

    result = await infer_one(runner, make_case("c", conversation=conversation))

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error('invocation user content is nil for eval case invocation "t2"')
    assert runner.messages == ["q1"]
    assert result.inferences == []
    assert result.execution_traces == [trace("turn-1")]


@pytest.mark.parametrize(
    "field",
    ["contextMessages", "conversation", "actualConversation"],
)
def test_null_list_entries_are_rejected_when_a_case_is_loaded(field: str) -> None:
    """Why item 11 ("context message is nil at index 0") cannot happen: a ``null`` entry never loads."""
    with pytest.raises(pydantic.ValidationError):
        EvalCase.model_validate({"evalId": "c", "sessionInput": {"userId": "u"}, field: [None]})


# ---------------------------------------------------------------------------- turns (§1.6)


@pytest.mark.asyncio
async def test_turns_run_in_order_in_one_session() -> None:
    runner = RecordingRunner()
    case = make_case("c", "q1", "q2", "q3", session_input=SessionInput(user_id="carol", app_name="ignored"))

    result = await infer_one(runner, case)

    assert result.status == EvalStatus.PASSED
    assert runner.messages == ["q1", "q2", "q3"]
    assert runner.session_ids == [SESSION] * 3
    assert [r.user_id for r in runner.requests] == ["carol"] * 3
    assert [inv.user_content for inv in result.inferences] == [Message.user(t) for t in ("q1", "q2", "q3")]
    assert [inv.final_response for inv in result.inferences] == [
        Message.assistant(reply_text(t)) for t in ("q1", "q2", "q3")
    ]
    assert [inv.invocation_id for inv in result.inferences] == [f"{SESSION}/{t}" for t in ("q1", "q2", "q3")]
    # Inference sets no trace, timestamp or intermediate responses on the invocations themselves.
    assert all(inv.execution_trace is None for inv in result.inferences)
    assert all(inv.creation_timestamp is None for inv in result.inferences)
    assert all(inv.intermediate_responses == [] for inv in result.inferences)


@pytest.mark.asyncio
async def test_runner_tools_are_kept_and_a_missing_final_response_is_not_an_error() -> None:
    tool = Tool(id="call-1", name="add", arguments={"a": 1}, result=3)
    runner = RecordingRunner(lambda request: TurnResult(tools=[tool]))

    result = await infer_one(runner, make_case("c", "q"))

    assert result.status == EvalStatus.PASSED
    assert [inv.tools for inv in result.inferences] == [[tool]]
    assert [inv.final_response for inv in result.inferences] == [None]


@pytest.mark.asyncio
async def test_an_invocation_id_is_generated_when_the_runner_gives_none() -> None:
    runner = RecordingRunner(lambda request: TurnResult(final_response=Message.assistant("ok")))

    result = await infer_one(runner, make_case("c", "q1", "q2"))

    ids = [inv.invocation_id for inv in result.inferences]
    assert all(ids)
    assert ids[0] != ids[1]


@pytest.mark.asyncio
async def test_a_failure_on_turn_two_keeps_the_turn_one_trace_but_clears_inferences() -> None:
    """Items 20 and 26: the failed case keeps the traces gathered so far."""
    runner = RecordingRunner(fail_on=["q2"], traces={"q1": trace("turn-1"), "q3": trace("turn-3")})

    result = await infer_one(runner, make_case("c", "q1", "q2", "q3"))

    assert runner.messages == ["q1", "q2"]
    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error(BOOM)
    assert result.inferences == []
    assert result.execution_traces == [trace("turn-1")]


@pytest.mark.asyncio
async def test_traces_are_aligned_per_turn_with_none_where_absent() -> None:
    runner = RecordingRunner(traces={"q1": trace("turn-1"), "q3": trace("turn-3")})

    result = await infer_one(runner, make_case("c", "q1", "q2", "q3"))

    assert result.execution_traces == [trace("turn-1"), None, trace("turn-3")]
    assert all(inv.execution_trace is None for inv in result.inferences)


@pytest.mark.asyncio
async def test_no_trace_at_all_gives_an_empty_trace_list() -> None:
    """A deliberate difference (``_traces_or_empty``): Go keeps ``[nil, nil]``; we drop an all-``None`` list."""
    result = await infer_one(RecordingRunner(), make_case("c", "q1", "q2"))

    assert result.execution_traces == []


@pytest.mark.asyncio
async def test_execution_traces_are_not_serialised() -> None:
    result = await infer_one(RecordingRunner(traces={"q": trace("turn")}), make_case("c", "q"))

    assert result.execution_traces == [trace("turn")]
    assert "executionTraces" not in result.to_json()
    assert "ExecutionTraces" not in result.to_json()


# ---------------------------------------------------------------------------- context messages and state (§1.5-1.6)


@pytest.mark.asyncio
async def test_context_messages_reach_the_runner_and_are_attached_to_the_invocations() -> None:
    runner = RecordingRunner()
    context = [Message.system("be brief"), Message.user("earlier question")]

    result = await infer_one(runner, make_case("c", "q1", "q2", context_messages=context))

    assert [r.context_messages for r in runner.requests] == [context, context]
    assert [inv.context_messages for inv in result.inferences] == [context, context]


@pytest.mark.asyncio
async def test_no_context_messages_give_empty_lists() -> None:
    runner = RecordingRunner()

    result = await infer_one(runner, make_case("c", "q"))

    assert runner.requests[0].context_messages == []
    assert result.inferences[0].context_messages == []


@pytest.mark.asyncio
async def test_session_input_state_reaches_the_runner_on_every_turn() -> None:
    runner = RecordingRunner()
    state: dict[str, Any] = {"plan": "gold", "limits": {"daily": 3}}

    await infer_one(runner, make_case("c", "q1", "q2", session_input=SessionInput(user_id="u", state=state)))

    assert [r.state for r in runner.requests] == [state, state]
    assert [r.user_id for r in runner.requests] == ["u", "u"]


# ---------------------------------------------------------------------------- session ids and contexts (§1.3-1.5)


@pytest.mark.asyncio
async def test_the_session_id_supplier_is_called_once_per_case_with_the_before_set_context() -> None:
    seen: list[EvalContext] = []

    def supplier(context: EvalContext) -> str:
        seen.append(context)
        return f"session-{len(seen)}"

    callbacks = Callbacks().register_before_inference_set("tag", lambda ctx, args: ctx.with_values(tag="set"))
    runner = RecordingRunner()
    manager = await make_manager(make_case("a", "qa1", "qa2"), make_case("b", "qb1", "qb2"))
    service = make_service(manager, runner=runner, session_id_supplier=supplier, callbacks=callbacks)

    results = await service.inference(inference_request())

    assert [dict(context) for context in seen] == [{"tag": "set"}, {"tag": "set"}]
    assert [r.session_id for r in results] == ["session-1", "session-2"]
    assert runner.session_ids == ["session-1", "session-1", "session-2", "session-2"]


@pytest.mark.asyncio
async def test_before_inference_case_sees_the_case_and_session_and_its_context_reaches_the_runner() -> None:
    seen: list[tuple[str, str]] = []

    def before_case(context: EvalContext, args: BeforeInferenceCaseArgs) -> EvalContext:
        seen.append((args.eval_case_id, args.session_id))
        return context.with_values(case=args.eval_case_id)

    callbacks = (
        Callbacks()
        .register_before_inference_set("set", lambda ctx, args: ctx.with_values(tag="set"))
        .register_before_inference_case("case", before_case)
    )
    runner = RecordingRunner()
    manager = await make_manager(make_case("a", "qa"), make_case("b", "qb"))

    await make_service(manager, runner=runner, callbacks=callbacks).inference(inference_request())

    assert seen == [("a", SESSION), ("b", SESSION)]
    assert [dict(r.context) for r in runner.requests] == [{"tag": "set", "case": "a"}, {"tag": "set", "case": "b"}]
    assert [dict(c) for c in runner.current_contexts] == [{"tag": "set", "case": "a"}, {"tag": "set", "case": "b"}]


@pytest.mark.asyncio
async def test_a_before_set_callback_can_filter_the_cases() -> None:
    def only_b(context: EvalContext, args: BeforeInferenceSetArgs) -> None:
        args.request.eval_case_ids = ["b"]

    runner = RecordingRunner()
    manager = await make_manager(make_case("a", "qa"), make_case("b", "qb"))
    request_object = inference_request()

    results = await make_service(
        manager, runner=runner, callbacks=Callbacks().register_before_inference_set("f", only_b)
    ).inference(request_object)

    assert [r.eval_case_id for r in results] == ["b"]
    assert request_object.eval_case_ids == ["b"]


# ---------------------------------------------------------------------------- per-call options (§1.2)


@pytest.mark.asyncio
async def test_a_per_call_session_id_supplier_overrides_the_service_one() -> None:
    runner = RecordingRunner()
    service = make_service(await make_manager(make_case("a", "qa")), runner=runner)

    overridden = await service.inference(inference_request(), session_id_supplier=lambda ctx: "per-call")
    default = await service.inference(inference_request())

    assert [r.session_id for r in overridden] == ["per-call"]
    assert [r.session_id for r in default] == [SESSION]
    assert runner.session_ids == ["per-call", SESSION]


@pytest.mark.asyncio
async def test_per_call_callbacks_replace_the_service_callbacks() -> None:
    calls: list[str] = []
    service_callbacks = (
        Callbacks()
        .register_before_inference_set("service", lambda ctx, args: calls.append("service set"))
        .register_before_inference_case("service", lambda ctx, args: calls.append("service case"))
    )
    call_callbacks = Callbacks().register_before_inference_case("call", lambda ctx, args: calls.append("call case"))
    service = make_service(await make_manager(make_case("a", "qa")), callbacks=service_callbacks)

    await service.inference(inference_request(), callbacks=call_callbacks)
    assert calls == ["call case"]

    calls.clear()
    await service.inference(inference_request())
    assert calls == ["service set", "service case"]


@pytest.mark.asyncio
async def test_a_per_call_eval_set_manager_overrides_the_service_one() -> None:
    runner = RecordingRunner()
    service = make_service(await make_manager(make_case("a", "from service")), runner=runner)
    other = await make_manager(make_case("a", "from call"))

    await service.inference(inference_request(), eval_set_manager=other)

    assert runner.messages == ["from call"]


@pytest.mark.parametrize("option", ["eval_set_manager", "session_id_supplier", "callbacks", "parallelism"])
@pytest.mark.asyncio
async def test_a_none_per_call_option_means_the_default(option: str) -> None:
    """The reference's "<option> is nil" errors do not exist: ``None`` means "use the default"."""
    runner = RecordingRunner()
    service = make_service(await make_manager(make_case("a", "qa")), runner=runner)
    overrides: dict[str, Any] = {option: None}

    results = await service.inference(inference_request(), **overrides)

    assert [(r.eval_case_id, r.status, r.session_id) for r in results] == [("a", EvalStatus.PASSED, SESSION)]


@pytest.mark.parametrize("option", ["eval_set_manager", "session_id_supplier", "callbacks", "parallelism"])
@pytest.mark.asyncio
async def test_a_none_service_option_means_the_default(option: str) -> None:
    runner = RecordingRunner()
    manager = await make_manager(make_case("a", "qa"))
    overrides: dict[str, Any] = {option: None}
    service = make_service(manager, runner=runner, **overrides)

    assert getattr(service.options, option) is not None
    results = await service.inference(inference_request(), eval_set_manager=manager)

    assert [(r.eval_case_id, r.status) for r in results] == [("a", EvalStatus.PASSED)]
    assert results[0].session_id != ""


@pytest.mark.asyncio
async def test_the_default_session_id_is_a_fresh_uuid_per_case() -> None:
    import uuid

    runner = RecordingRunner()
    service = LocalService(runner, eval_set_manager=await make_manager(make_case("a", "qa"), make_case("b", "qb")))

    results = await service.inference(inference_request())

    ids = [r.session_id for r in results]
    assert [uuid.UUID(i).version for i in ids] == [4, 4]
    assert ids[0] != ids[1]
    assert runner.session_ids == ids


# ---------------------------------------------------------------------------- construction (§1.1)


@pytest.mark.parametrize(
    "overrides", [{}, {"parallel_inference": True, "parallelism": 0}], ids=["plain", "bad-parallelism"]
)
def test_a_service_needs_a_runner(overrides: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as raised:
        LocalService(None, **overrides)  # type: ignore[arg-type]

    assert str(raised.value) == "runner is nil"


def test_service_defaults() -> None:
    service = LocalService(RecordingRunner())

    options = service.options
    assert isinstance(options.eval_set_manager, InMemoryEvalSetManager)
    assert options.parallel_inference is False
    assert options.parallel_evaluation is False
    assert options.parallelism == (os.cpu_count() or 1)
    assert options.expected_runner is None
    assert options.user_simulator is None
    assert options.callbacks == Callbacks()


@pytest.mark.asyncio
async def test_a_plain_function_can_be_the_agent() -> None:
    seen: list[tuple[str, str, int]] = []

    def agent(text: str, turn: Turn) -> str:
        seen.append((text, turn.session_id, len(turn.history)))
        return f"echo {text}"

    manager = await make_manager(make_case("c", "q1", "q2"))
    service = LocalService(agent, eval_set_manager=manager, session_id_supplier=constant_session)

    [result] = await service.inference(inference_request())

    assert result.status == EvalStatus.PASSED
    assert seen == [("q1", SESSION, 0), ("q2", SESSION, 2)]
    assert [inv.final_response for inv in result.inferences] == [
        Message.assistant("echo q1"),
        Message.assistant("echo q2"),
    ]
