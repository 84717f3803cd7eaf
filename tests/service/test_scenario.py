"""Inference of ``conversationScenario`` cases: a user simulator drives the agent turn by turn.

Spec: trpc-service-evalresult-spec.md §1.5 (checks d-e), §1.9; test ideas §6 items 34-43 as far as
they concern the service loop. The simulators here are scripted fakes of ``UserSimulator``.

Not applicable here:

- Items 41-44 test the default LLM user simulator (starting prompt, stop signal matching, ``Next``
  after ``Close``, sim-runner errors, ``Start`` validation): they are in
  ``tests/runner/test_llm_simulator.py``. What the service does with ``maxAllowedInvocations`` and
  with a simulator that never stops is tested here.
- "invalid conversationScenario driver": ``driver`` is an enum, so an unknown value never loads.
- "scenario is nil" / "runner is nil" validations of ``InferenceWithConversationScenario``:
  unreachable from the service.
- The expected driver (item 39-40) is in ``test_expected_runner.py``.
"""

from __future__ import annotations

import pytest

from agenteval.evalset.message import Message, Role
from agenteval.evalset.models import ConversationScenario, SessionInput
from agenteval.runner import SimulatorDecision, TurnResult
from agenteval.service import Callbacks
from agenteval.status import EvalStatus
from agenteval.testing import ScriptedUserSimulator
from tests.service._fakes import (
    BOOM,
    ENDLESS,
    SESSION,
    ProbedSimulator,
    RecordingRunner,
    case_error,
    infer_one,
    inference_request,
    make_case,
    make_manager,
    make_service,
    reply_text,
    trace,
)

SCENARIO = ConversationScenario(conversation_plan="ask twice", stop_signal="bye")


@pytest.mark.asyncio
async def test_a_scenario_without_a_user_simulator_fails() -> None:
    runner = RecordingRunner()

    result = await infer_one(runner, make_case("c", conversation_scenario=SCENARIO))

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error("user simulator is nil")
    assert result.inferences == []
    assert runner.requests == []


@pytest.mark.asyncio
async def test_a_scenario_and_a_conversation_cannot_both_be_configured() -> None:
    runner = RecordingRunner()
    simulator = ScriptedUserSimulator(["hi"])

    result = await infer_one(runner, make_case("c", "q", conversation_scenario=SCENARIO), user_simulator=simulator)

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error("conversation and conversationScenario cannot both be configured")
    assert runner.requests == []
    assert simulator.starts == []


@pytest.mark.asyncio
async def test_the_simulator_drives_the_agent_until_it_stops() -> None:
    """Item 36: two user turns, then stop; the simulator sees no reply, then each reply in turn."""
    runner = RecordingRunner(traces={"first": trace("one"), "second": trace("two")})
    simulator = ProbedSimulator(["first", "second", None])
    session_input = SessionInput(user_id="u", state={"tier": 1})

    result = await infer_one(
        runner,
        make_case("c", conversation_scenario=SCENARIO, session_input=session_input),
        user_simulator=simulator,
    )

    assert result.status == EvalStatus.PASSED
    assert result.error_message == ""
    assert runner.messages == ["first", "second"]
    assert runner.session_ids == [SESSION, SESSION]
    assert [(r.user_id, r.state) for r in runner.requests] == [("u", {"tier": 1}), ("u", {"tier": 1})]
    assert [inv.user_content for inv in result.inferences] == [Message.user("first"), Message.user("second")]
    assert [inv.final_response for inv in result.inferences] == [
        Message.assistant(reply_text("first")),
        Message.assistant(reply_text("second")),
    ]
    assert result.execution_traces == [trace("one"), trace("two")]
    assert result.expected_inferences == []
    conversation = simulator.conversation
    assert conversation.received == [
        None,
        Message.assistant(reply_text("first")),
        Message.assistant(reply_text("second")),
    ]
    assert conversation.closes == 1
    [start] = simulator.starts
    assert (start.eval_case_id, start.session_id, start.scenario) == ("c", SESSION, SCENARIO)
    assert start.session_input == session_input


@pytest.mark.asyncio
async def test_each_case_gets_its_own_simulated_conversation() -> None:
    runner = RecordingRunner()
    simulator = ProbedSimulator(["hello"])
    manager = await make_manager(
        make_case("a", conversation_scenario=SCENARIO), make_case("b", conversation_scenario=SCENARIO)
    )
    sessions = iter(["s-a", "s-b"])

    results = await make_service(
        manager, runner=runner, user_simulator=simulator, session_id_supplier=lambda ctx: next(sessions)
    ).inference(inference_request())

    assert [(r.eval_case_id, r.status) for r in results] == [("a", EvalStatus.PASSED), ("b", EvalStatus.PASSED)]
    assert [(s.eval_case_id, s.session_id) for s in simulator.starts] == [("a", "s-a"), ("b", "s-b")]
    assert simulator.closes == [1, 1]
    assert runner.session_ids == ["s-a", "s-b"]


@pytest.mark.asyncio
async def test_a_simulator_that_stops_at_once_gives_no_turns() -> None:
    runner = RecordingRunner()
    simulator = ProbedSimulator([None])

    result = await infer_one(runner, make_case("c", conversation_scenario=SCENARIO), user_simulator=simulator)

    assert result.status == EvalStatus.PASSED
    assert result.inferences == []
    assert runner.requests == []
    assert simulator.conversation.closes == 1


@pytest.mark.asyncio
async def test_an_empty_message_role_defaults_to_user() -> None:
    runner = RecordingRunner()
    decision = SimulatorDecision(message=Message(role=Role.UNSET, content="hi"))
    simulator = ProbedSimulator(replace={0: decision})

    result = await infer_one(runner, make_case("c", conversation_scenario=SCENARIO), user_simulator=simulator)

    assert result.status == EvalStatus.PASSED
    assert [r.message for r in runner.requests] == [Message.user("hi")]
    assert [inv.user_content for inv in result.inferences] == [Message.user("hi")]
    assert decision.message == Message(role=Role.UNSET, content="hi")  # the simulator's message is copied


@pytest.mark.parametrize(
    ("turns", "replace", "message"),
    [
        (["ok", Message.assistant("hi")], {}, 'simulate next turn: invalid message role "assistant"'),
        (["ok", Message.system("hi")], {}, 'simulate next turn: invalid message role "system"'),
        (["ok"], {1: None}, "simulate next turn: decision is nil"),
        (["ok"], {1: SimulatorDecision()}, "simulate next turn: message is nil"),
        (["ok", RuntimeError("oops")], {}, "simulate next turn: RuntimeError: oops"),
    ],
    ids=["assistant-role", "system-role", "no-decision", "no-message", "next-raises"],
)
@pytest.mark.asyncio
async def test_bad_simulator_turns_fail_the_case(
    turns: list[str | Message | Exception], replace: dict[int, SimulatorDecision | None], message: str
) -> None:
    runner = RecordingRunner(traces={"ok": trace("ok")})
    simulator = ProbedSimulator(turns, replace=replace)

    result = await infer_one(runner, make_case("c", conversation_scenario=SCENARIO), user_simulator=simulator)

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error(message)
    assert runner.messages == ["ok"]
    assert result.inferences == []
    assert result.execution_traces == []  # the reference discards the partial result
    assert simulator.conversation.closes == 1


@pytest.mark.asyncio
async def test_a_target_turn_without_final_response_fails_the_case() -> None:
    runner = RecordingRunner(lambda request: TurnResult(invocation_id="x"))
    simulator = ProbedSimulator(["hi", "again"])

    result = await infer_one(runner, make_case("c", conversation_scenario=SCENARIO), user_simulator=simulator)

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error("target final response is nil")
    assert runner.messages == ["hi"]
    assert result.inferences == []
    assert simulator.conversation.closes == 1


@pytest.mark.asyncio
async def test_a_runner_error_discards_the_partial_conversation() -> None:
    runner = RecordingRunner(fail_on=["second"], traces={"first": trace("one")})
    simulator = ProbedSimulator(["first", "second", "third"])

    result = await infer_one(
        runner,
        make_case("c", conversation_scenario=SCENARIO, session_input=SessionInput(user_id="u")),
        user_simulator=simulator,
    )

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error(BOOM)
    assert result.user_id == "u"
    assert result.inferences == []
    assert result.execution_traces == []
    assert runner.messages == ["first", "second"]
    assert simulator.conversation.closes == 1


@pytest.mark.asyncio
async def test_a_start_error_fails_the_case() -> None:
    runner = RecordingRunner()
    simulator = ProbedSimulator(start_error=RuntimeError("nope"))

    result = await infer_one(runner, make_case("c", conversation_scenario=SCENARIO), user_simulator=simulator)

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error("start user simulator: RuntimeError: nope")
    assert runner.requests == []
    assert simulator.conversations == []


@pytest.mark.asyncio
async def test_a_start_without_conversation_fails_the_case() -> None:
    simulator = ProbedSimulator(no_conversation=True)

    result = await infer_one(
        RecordingRunner(), make_case("c", conversation_scenario=SCENARIO), user_simulator=simulator
    )

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error("user simulator conversation is nil")


@pytest.mark.asyncio
async def test_a_close_error_after_stop_fails_the_case() -> None:
    runner = RecordingRunner(traces={"hi": trace("hi")})
    simulator = ProbedSimulator(["hi", None], close_error=RuntimeError("close failed"))

    result = await infer_one(runner, make_case("c", conversation_scenario=SCENARIO), user_simulator=simulator)

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error("close user simulator conversation: RuntimeError: close failed")
    assert result.inferences == []
    assert result.execution_traces == []
    assert simulator.conversation.closes == 1


@pytest.mark.asyncio
async def test_a_close_error_is_joined_to_the_turn_error() -> None:
    simulator = ProbedSimulator(replace={0: None}, close_error=RuntimeError("close failed"))

    result = await infer_one(
        RecordingRunner(), make_case("c", conversation_scenario=SCENARIO), user_simulator=simulator
    )

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error(
        "simulate next turn: decision is nil\nclose user simulator conversation: RuntimeError: close failed"
    )


@pytest.mark.asyncio
async def test_a_close_error_is_joined_to_a_runner_error() -> None:
    runner = RecordingRunner(fail_on=["hi"])
    simulator = ProbedSimulator(["hi"], close_error=RuntimeError("close failed"))

    result = await infer_one(runner, make_case("c", conversation_scenario=SCENARIO), user_simulator=simulator)

    assert result.error_message == case_error(f"{BOOM}\nclose user simulator conversation: RuntimeError: close failed")


# ---------------------------------------------------------------------------- turn limits


@pytest.mark.asyncio
async def test_max_allowed_invocations_stops_the_loop() -> None:
    runner = RecordingRunner()
    simulator = ProbedSimulator(ENDLESS)
    scenario = ConversationScenario(conversation_plan="chat", max_allowed_invocations=2)

    result = await infer_one(runner, make_case("c", conversation_scenario=scenario), user_simulator=simulator)

    assert result.status == EvalStatus.PASSED
    assert runner.messages == ["msg 1", "msg 2"]
    assert len(result.inferences) == 2
    assert simulator.conversation.closes == 1


@pytest.mark.asyncio
async def test_max_allowed_invocations_zero_means_unlimited() -> None:
    runner = RecordingRunner()
    simulator = ScriptedUserSimulator(["a", "b", "c", None])
    scenario = ConversationScenario(conversation_plan="chat", stop_signal="bye", max_allowed_invocations=0)

    result = await infer_one(
        runner, make_case("c", conversation_scenario=scenario), user_simulator=simulator, max_simulated_turns=5
    )

    assert result.status == EvalStatus.PASSED
    assert runner.messages == ["a", "b", "c"]


@pytest.mark.asyncio
async def test_a_simulator_stopping_right_at_the_guard_passes() -> None:
    simulator = ScriptedUserSimulator(["a", "b", "c", None])

    result = await infer_one(
        RecordingRunner(),
        make_case("c", conversation_scenario=SCENARIO),
        user_simulator=simulator,
        max_simulated_turns=3,
    )

    assert result.error_message == ""
    assert len(result.inferences) == 3


@pytest.mark.asyncio
async def test_a_simulator_that_never_stops_fails_at_max_simulated_turns() -> None:
    runner = RecordingRunner()
    simulator = ProbedSimulator(ENDLESS)

    result = await infer_one(
        runner, make_case("c", conversation_scenario=SCENARIO), user_simulator=simulator, max_simulated_turns=3
    )

    assert result.status == EvalStatus.FAILED
    assert "max_simulated_turns" in result.error_message
    assert result.error_message == case_error(
        "user simulator did not stop within 3 turns; give the scenario a stopSignal or maxAllowedInvocations, "
        "or raise max_simulated_turns"
    )
    assert runner.messages == ["msg 1", "msg 2", "msg 3"]
    assert result.inferences == []
    assert simulator.conversation.closes == 1


@pytest.mark.asyncio
async def test_the_default_guard_is_a_hundred_turns() -> None:
    runner = RecordingRunner()
    simulator = ScriptedUserSimulator(ENDLESS)

    result = await infer_one(runner, make_case("c", conversation_scenario=SCENARIO), user_simulator=simulator)

    assert result.status == EvalStatus.FAILED
    assert "did not stop within 100 turns" in result.error_message
    assert len(runner.requests) == 100


# ---------------------------------------------------------------------------- context


@pytest.mark.asyncio
async def test_the_before_case_context_reaches_the_simulator_and_the_agent() -> None:
    runner = RecordingRunner()
    simulator = ProbedSimulator(["hi"])
    callbacks = Callbacks().register_before_inference_case("c", lambda ctx, args: ctx.with_values(case="c"))

    await infer_one(
        runner, make_case("c", conversation_scenario=SCENARIO), user_simulator=simulator, callbacks=callbacks
    )

    assert [dict(s.context) for s in simulator.starts] == [{"case": "c"}]
    assert [dict(c) for c in simulator.start_contexts] == [{"case": "c"}]
    assert [dict(r.context) for r in runner.requests] == [{"case": "c"}]


@pytest.mark.asyncio
async def test_context_messages_reach_the_agent_in_a_scenario() -> None:
    runner = RecordingRunner()
    context = [Message.system("ctx")]

    result = await infer_one(
        runner,
        make_case("c", conversation_scenario=SCENARIO, context_messages=context),
        user_simulator=ScriptedUserSimulator(["hi"]),
    )

    assert [r.context_messages for r in runner.requests] == [context]
    assert [inv.context_messages for inv in result.inferences] == [context]
