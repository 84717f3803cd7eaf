"""Inference of ``evalMode: trace`` cases: the recorded trace is the inference, the agent never runs.

Spec: trpc-service-evalresult-spec.md §1.8; test ideas §6 items 27-33 (items 30 and 31 through Evaluate).

Not applicable here:

- Item 29, "a nil actual invocation": our models reject ``null`` list entries at load time.

Item 33 (the expected runner takes its tool mocks only from ``conversation``) is tested with the tool
mocks, in ``tests/runner/test_toolmock.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from agenteval.evalset.message import Message
from agenteval.evalset.models import ConversationScenario, EvalMode, Invocation, SessionInput, Tool
from agenteval.service import Callbacks
from agenteval.status import EvalStatus
from tests.service._fakes import (
    BOOM,
    SESSION,
    USER,
    RecordingRunner,
    case_error,
    evaluate_with_probe,
    infer_one,
    inference_request,
    make_case,
    make_manager,
    make_service,
    reply_text,
    trace,
    turn,
    untimed,
)


@pytest.mark.asyncio
async def test_trace_mode_never_calls_the_runner_and_uses_the_conversation() -> None:
    runner = RecordingRunner()
    conversation = [turn("q", "t1", final="answer", execution_trace=trace("recorded"))]

    result = await infer_one(runner, make_case("c", conversation=conversation, eval_mode="trace"))

    assert runner.requests == []
    assert result.status == EvalStatus.PASSED
    assert result.eval_mode == EvalMode.TRACE
    assert result.session_id == SESSION
    assert result.user_id == USER
    assert untimed(result.inferences) == conversation
    assert result.inferences[0].final_response == Message.assistant("answer")
    assert result.execution_traces == [trace("recorded")]
    assert result.expected_inferences == []


@pytest.mark.asyncio
async def test_trace_mode_uses_the_actual_conversation_and_keeps_its_traces() -> None:
    runner = RecordingRunner()
    actual = [
        turn("q1", "a1", final="actual 1", execution_trace=trace("actual-1")),
        turn("q2", "a2", final="actual 2"),
    ]
    conversation = [turn("q1", "e1", final="expected 1"), turn("q2", "e2", final="expected 2")]
    case = make_case("c", conversation=conversation, actual_conversation=actual, eval_mode="trace")

    result = await infer_one(runner, case)

    assert runner.requests == []
    assert result.status == EvalStatus.PASSED
    assert untimed(result.inferences) == actual
    assert result.execution_traces == [trace("actual-1"), None]


@pytest.mark.asyncio
async def test_trace_mode_with_only_an_actual_conversation() -> None:
    actual = [turn("q", "a1", final="actual", execution_trace=trace("actual"))]

    result = await infer_one(RecordingRunner(), make_case("c", actual_conversation=actual, eval_mode="trace"))

    assert result.status == EvalStatus.PASSED
    assert untimed(result.inferences) == actual
    assert result.execution_traces == [trace("actual")]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {
                "actual_conversation": [turn("q1", final="a"), turn("q2", final="b")],
                "conversation": [turn("q1", final="x")],
            },
            "actual conversation length 2 does not match conversation length 1",
        ),
        (
            {
                "actual_conversation": [turn("q1", final="a")],
                "conversation": [turn("q1", final="x"), turn("q2", final="y"), turn("q3", final="z")],
            },
            "actual conversation length 1 does not match conversation length 3",
        ),
        (
            {"actual_conversation": [turn("q1", final="a"), Invocation(invocation_id="a2")]},
            "actual invocation user content is nil at index 1",
        ),
        ({}, "invocations are empty"),
        (
            {"conversation": [turn("q", final="x")], "conversation_scenario": ConversationScenario(stop_signal="bye")},
            "conversationScenario is not supported in trace mode",
        ),
    ],
    ids=["longer-actual", "shorter-actual", "nil-user-content", "both-empty", "scenario"],
)
@pytest.mark.asyncio
async def test_trace_mode_errors(fields: dict[str, Any], message: str) -> None:
    runner = RecordingRunner()

    result = await infer_one(runner, make_case("c", eval_mode="trace", **fields))

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error(message)
    assert result.eval_mode == EvalMode.TRACE
    assert result.user_id == USER
    assert result.inferences == []
    assert runner.requests == []


@pytest.mark.asyncio
async def test_trace_mode_attaches_case_context_messages_to_turns_without_their_own() -> None:
    own = [Message.system("recorded context")]
    case_context = [Message.system("case context")]
    actual = [turn("q1", final="a", context_messages=own), turn("q2", final="b")]

    result = await infer_one(
        RecordingRunner(),
        make_case("c", actual_conversation=actual, context_messages=case_context, eval_mode="trace"),
    )

    assert [inv.context_messages for inv in result.inferences] == [own, case_context]


@pytest.mark.asyncio
async def test_trace_mode_with_the_expected_runner() -> None:
    """Item 32: the expected runner runs once per turn in ``<sid>-expected``; the agent never runs."""
    runner = RecordingRunner()
    expected_runner = RecordingRunner()
    context = [Message.system("ctx")]
    case = make_case(
        "c",
        conversation=[turn("q", final="recorded", execution_trace=trace("recorded"))],
        eval_mode="trace",
        expected_runner_enabled=True,
        context_messages=context,
        session_input=SessionInput(user_id="u", state={"k": "v"}),
    )

    result = await infer_one(runner, case, expected_runner=expected_runner)

    assert runner.requests == []
    assert expected_runner.messages == ["q"]
    assert expected_runner.session_ids == [f"{SESSION}-expected"]
    assert [(r.user_id, r.state, r.context_messages) for r in expected_runner.requests] == [("u", {"k": "v"}, context)]
    assert result.status == EvalStatus.PASSED
    assert [inv.final_response for inv in result.inferences] == [Message.assistant("recorded")]
    assert [inv.final_response for inv in result.expected_inferences] == [Message.assistant(reply_text("q"))]
    assert [inv.context_messages for inv in result.expected_inferences] == [context]
    assert result.execution_traces == [trace("recorded")]


@pytest.mark.asyncio
async def test_trace_mode_expected_runner_replays_the_actual_user_messages() -> None:
    expected_runner = RecordingRunner()
    actual = [turn("actual q1", final="a1"), turn("actual q2", final="a2")]
    conversation = [turn("expected q1", final="e1"), turn("expected q2", final="e2")]
    case = make_case(
        "c", conversation=conversation, actual_conversation=actual, eval_mode="trace", expected_runner_enabled=True
    )

    result = await infer_one(RecordingRunner(), case, expected_runner=expected_runner)

    assert result.status == EvalStatus.PASSED
    assert expected_runner.messages == ["actual q1", "actual q2"]
    assert [inv.user_content for inv in result.expected_inferences] == [
        Message.user("actual q1"),
        Message.user("actual q2"),
    ]


@pytest.mark.asyncio
async def test_trace_mode_expected_runner_failure_fails_the_case_but_keeps_the_traces() -> None:
    expected_runner = RecordingRunner(fail_on=["q2"])
    case = make_case(
        "c",
        conversation=[
            turn("q1", final="a", execution_trace=trace("one")),
            turn("q2", final="b", execution_trace=trace("two")),
        ],
        eval_mode="trace",
        expected_runner_enabled=True,
    )

    result = await infer_one(RecordingRunner(), case, expected_runner=expected_runner)

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error(f"run expected runner: {BOOM}")
    assert result.inferences == []
    assert result.expected_inferences == []
    assert result.execution_traces == [trace("one"), trace("two")]


@pytest.mark.asyncio
async def test_trace_mode_before_case_context_reaches_the_expected_runner() -> None:
    expected_runner = RecordingRunner()
    callbacks = Callbacks().register_before_inference_case("c", lambda ctx, args: ctx.with_values(case="c"))
    case = make_case("c", conversation=[turn("q", final="x")], eval_mode="trace", expected_runner_enabled=True)

    await infer_one(RecordingRunner(), case, expected_runner=expected_runner, callbacks=callbacks)

    assert [dict(r.context) for r in expected_runner.requests] == [{"case": "c"}]
    assert [dict(c) for c in expected_runner.current_contexts] == [{"case": "c"}]


# ---------------------------------------------------------------------------- through Evaluate (items 30-31)


@pytest.mark.asyncio
async def test_evaluate_trace_mode_with_only_a_conversation_expects_user_input_only() -> None:
    """Item 30: the recorded conversation is the actual side; the expected side keeps only the user turns."""
    tool = Tool(id="t", name="lookup", arguments={"q": 1}, result="r")
    conversation = [
        turn(
            "q",
            "t1",
            final="answer",
            execution_trace=trace("recorded"),
            tools=[tool],
            intermediate_responses=[Message.assistant("thinking")],
        )
    ]
    manager = await make_manager(make_case("c", conversation=conversation, eval_mode="trace"))
    service = make_service(manager)
    results = await service.inference(inference_request())

    run, probe = await evaluate_with_probe(service, results)

    assert [r.final_eval_status for r in run.eval_case_results] == [EvalStatus.PASSED]
    [call] = probe.calls
    actuals, expecteds = call.actuals, call.expecteds
    assert [inv.final_response for inv in actuals] == [Message.assistant("answer")]
    assert [inv.execution_trace for inv in actuals] == [trace("recorded")]
    assert [(inv.invocation_id, inv.user_content) for inv in expecteds] == [("t1", Message.user("q"))]
    assert [inv.final_response for inv in expecteds] == [None]
    assert [inv.tools for inv in expecteds] == [[]]
    assert [inv.intermediate_responses for inv in expecteds] == [[]]


@pytest.mark.asyncio
async def test_evaluate_trace_mode_with_both_conversations() -> None:
    """Item 31: expected = conversation, actual = actualConversation."""
    case = make_case(
        "c",
        conversation=[turn("q", "e1", final="expected")],
        actual_conversation=[turn("q", "a1", final="actual", execution_trace=trace("actual"))],
        eval_mode="trace",
    )
    service = make_service(await make_manager(case))
    results = await service.inference(inference_request())

    run, probe = await evaluate_with_probe(service, results)

    assert [r.final_eval_status for r in run.eval_case_results] == [EvalStatus.PASSED]
    [call] = probe.calls
    actuals, expecteds = call.actuals, call.expecteds
    assert [inv.final_response for inv in actuals] == [Message.assistant("actual")]
    assert [inv.execution_trace for inv in actuals] == [trace("actual")]
    assert [inv.final_response for inv in expecteds] == [Message.assistant("expected")]
