"""The expected runner: ``expectedRunnerEnabled`` cases and ``driver: expected`` scenarios.

Spec: trpc-service-evalresult-spec.md §1.9 (expected driver), §1.10; test ideas §6 items 39-40 and
45-48 (items 46-47 partly through Evaluate).

Not applicable here:

- Item 48, "a nil input invocation" and "seed context messages": our models reject ``null`` list
  entries (invocations, context messages) at load time.

The expected runner's tool mocks (it answers from the ``expected`` rules) are tested with the tool
mocks, in ``tests/runner/test_toolmock.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from agenteval.evalresult.inference import InferenceResult
from agenteval.evalset.message import Message
from agenteval.evalset.models import ConversationScenario, Invocation, SessionInput
from agenteval.evalset.trace import ExecutionTrace
from agenteval.runner import TurnRequest, TurnResult
from agenteval.service import Callbacks, EvaluateConfig, EvaluateRequest
from agenteval.status import EvalStatus
from agenteval.testing import ScriptedUserSimulator
from tests.service._fakes import (
    APP,
    BOOM,
    SESSION,
    SET,
    USER,
    ProbedSimulator,
    RecordingRunner,
    case_error,
    evaluate_with_probe,
    infer_one,
    inference_request,
    make_case,
    make_manager,
    make_service,
    trace,
    turn,
)

EXPECTED_SESSION = f"{SESSION}-expected"


def expected_reply(request: TurnRequest) -> TurnResult:
    return TurnResult(
        final_response=Message.assistant(f"expected answer to {request.message.content}"),
        invocation_id=f"expected/{request.message.content}",
    )


def expected_runner(*, fail_on: Sequence[str] = (), traces: dict[str, ExecutionTrace] | None = None) -> RecordingRunner:
    """A runner answering ``expected answer to <message>``."""
    return RecordingRunner(expected_reply, fail_on=fail_on, traces=traces)


# ---------------------------------------------------------------------------- static conversations (items 45-46)


@pytest.mark.asyncio
async def test_enabled_without_an_expected_runner_fails_after_the_actual_run() -> None:
    """Item 45: the actual run happens, then the missing expected runner fails the case (traces kept)."""
    runner = RecordingRunner(traces={"q": trace("actual")})

    result = await infer_one(runner, make_case("c", "q", expected_runner_enabled=True))

    assert runner.messages == ["q"]
    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error("expected runner is nil")
    assert result.inferences == []
    assert result.expected_inferences == []
    assert result.execution_traces == [trace("actual")]


@pytest.mark.asyncio
async def test_enabled_with_an_expected_runner_records_expected_inferences() -> None:
    """Item 46, inference part: one expected call per turn, in ``<sid>-expected``, same user, state and context."""
    runner = RecordingRunner()
    expected = expected_runner()
    context = [Message.system("ctx")]
    case = make_case(
        "c",
        "q1",
        "q2",
        expected_runner_enabled=True,
        context_messages=context,
        session_input=SessionInput(user_id="u", state={"k": 1}),
    )

    result = await infer_one(runner, case, expected_runner=expected)

    assert result.status == EvalStatus.PASSED
    assert runner.messages == ["q1", "q2"]
    assert runner.session_ids == [SESSION, SESSION]
    assert expected.messages == ["q1", "q2"]
    assert expected.session_ids == [EXPECTED_SESSION, EXPECTED_SESSION]
    assert [(r.user_id, r.state, r.context_messages) for r in expected.requests] == [("u", {"k": 1}, context)] * 2
    assert [inv.final_response for inv in result.expected_inferences] == [
        Message.assistant("expected answer to q1"),
        Message.assistant("expected answer to q2"),
    ]
    assert [inv.invocation_id for inv in result.expected_inferences] == ["expected/q1", "expected/q2"]
    assert [inv.context_messages for inv in result.expected_inferences] == [context, context]
    assert [inv.final_response.content for inv in result.inferences if inv.final_response] == [
        "reply to q1",
        "reply to q2",
    ]


@pytest.mark.asyncio
async def test_disabled_cases_never_call_the_expected_runner() -> None:
    expected = expected_runner()

    result = await infer_one(RecordingRunner(), make_case("c", "q"), expected_runner=expected)

    assert result.status == EvalStatus.PASSED
    assert expected.requests == []
    assert result.expected_inferences == []


@pytest.mark.asyncio
async def test_evaluate_uses_the_expected_inferences_without_calling_the_expected_runner_again() -> None:
    """Item 46, evaluate part."""
    runner = RecordingRunner()
    expected = expected_runner()
    manager = await make_manager(make_case("c", "q", expected_runner_enabled=True))
    service = make_service(manager, runner=runner, expected_runner=expected)
    results = await service.inference(inference_request())
    assert len(expected.requests) == 1

    run, probe = await evaluate_with_probe(service, results)

    assert len(expected.requests) == 1
    assert len(runner.requests) == 1
    assert [r.final_eval_status for r in run.eval_case_results] == [EvalStatus.PASSED]
    [call] = probe.calls
    actuals, expecteds = call.actuals, call.expecteds
    assert [inv.final_response for inv in actuals] == [Message.assistant("reply to q")]
    assert [inv.final_response for inv in expecteds] == [Message.assistant("expected answer to q")]


@pytest.mark.asyncio
async def test_evaluate_without_expected_inferences_fails_the_case() -> None:
    """Item 47."""
    manager = await make_manager(make_case("c", "q", expected_runner_enabled=True))
    service = make_service(manager)
    inference = InferenceResult(
        app_name=APP,
        eval_set_id=SET,
        eval_case_id="c",
        session_id=SESSION,
        user_id=USER,
        status=EvalStatus.PASSED,
        inferences=[Invocation(invocation_id="i", user_content=Message.user("q"))],
    )

    run = await service.evaluate(
        EvaluateRequest(app_name=APP, eval_set_id=SET, inference_results=[inference], evaluate_config=EvaluateConfig())
    )

    [case_result] = run.eval_case_results
    assert case_result.final_eval_status == EvalStatus.FAILED
    assert case_result.error_message == "prepare case evaluation inputs (evalCaseID=c): expected inferences are empty"


# ---------------------------------------------------------------------------- expected-runner errors (item 48)


@pytest.mark.asyncio
async def test_an_expected_runner_error_fails_the_case_but_keeps_the_traces() -> None:
    runner = RecordingRunner(traces={"q1": trace("one"), "q2": trace("two")})
    expected = expected_runner(fail_on=["q2"])

    result = await infer_one(runner, make_case("c", "q1", "q2", expected_runner_enabled=True), expected_runner=expected)

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error(f"run expected runner: {BOOM}")
    assert result.inferences == []
    assert result.expected_inferences == []
    assert result.execution_traces == [trace("one"), trace("two")]
    assert expected.messages == ["q1", "q2"]


@pytest.mark.asyncio
async def test_expected_runner_inputs_must_have_user_content() -> None:
    """Only trace mode with a bare conversation reaches this check (a static run fails earlier)."""
    expected = expected_runner()
    conversation = [turn("q1", final="a"), Invocation(invocation_id="t2", final_response=Message.assistant("b"))]
    case = make_case("c", conversation=conversation, eval_mode="trace", expected_runner_enabled=True)

    result = await infer_one(RecordingRunner(), case, expected_runner=expected)

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error("input invocation user content is nil at index 1")
    assert expected.requests == []


@pytest.mark.asyncio
async def test_expected_runner_inputs_must_not_be_empty() -> None:
    """A simulated conversation that stops at once leaves the expected runner nothing to replay."""
    expected = expected_runner()
    case = make_case("c", conversation_scenario=ConversationScenario(stop_signal="bye"), expected_runner_enabled=True)

    result = await infer_one(
        RecordingRunner(), case, expected_runner=expected, user_simulator=ScriptedUserSimulator([])
    )

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error("input invocations are empty")
    assert expected.requests == []


# ---------------------------------------------------------------------------- scenario, actual driver


@pytest.mark.asyncio
async def test_actual_driver_then_the_expected_runner_replays_the_user_turns() -> None:
    runner = RecordingRunner(traces={"hi": trace("hi")})
    expected = expected_runner()
    simulator = ScriptedUserSimulator(["hi", "more", None])
    case = make_case(
        "c",
        conversation_scenario=ConversationScenario(driver="actual", stop_signal="bye"),
        expected_runner_enabled=True,
    )

    result = await infer_one(runner, case, expected_runner=expected, user_simulator=simulator)

    assert result.status == EvalStatus.PASSED
    assert runner.messages == ["hi", "more"]
    assert expected.messages == ["hi", "more"]
    assert expected.session_ids == [EXPECTED_SESSION] * 2
    assert [s.session_id for s in simulator.starts] == [SESSION]
    assert [inv.final_response for inv in result.expected_inferences] == [
        Message.assistant("expected answer to hi"),
        Message.assistant("expected answer to more"),
    ]
    assert result.execution_traces == [trace("hi"), None]


# ---------------------------------------------------------------------------- scenario, expected driver (items 39-40)


EXPECTED_DRIVER = ConversationScenario(driver="expected", conversation_plan="plan", stop_signal="bye")


@pytest.mark.asyncio
async def test_expected_driver_without_an_expected_runner_fails() -> None:
    runner = RecordingRunner()
    simulator = ScriptedUserSimulator(["hi"])

    result = await infer_one(runner, make_case("c", conversation_scenario=EXPECTED_DRIVER), user_simulator=simulator)

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error("expected runner is nil")
    assert runner.requests == []
    assert simulator.starts == []


@pytest.mark.asyncio
async def test_expected_driver_without_a_user_simulator_fails_first() -> None:
    result = await infer_one(
        RecordingRunner(), make_case("c", conversation_scenario=EXPECTED_DRIVER), expected_runner=expected_runner()
    )

    assert result.error_message == case_error("user simulator is nil")


@pytest.mark.asyncio
async def test_expected_driver_the_expected_runner_talks_and_the_agent_replays() -> None:
    """Item 39: the simulator drives the expected runner in ``<sid>-expected``; the agent replays its user turns."""
    runner = RecordingRunner(traces={"hi": trace("actual hi")})
    expected = expected_runner(traces={"hi": trace("expected hi")})
    simulator = ProbedSimulator(["hi", "more", None])
    context = [Message.system("ctx")]
    case = make_case(
        "c",
        conversation_scenario=EXPECTED_DRIVER,
        expected_runner_enabled=True,
        context_messages=context,
        session_input=SessionInput(user_id="u"),
    )

    result = await infer_one(runner, case, expected_runner=expected, user_simulator=simulator)

    assert result.status == EvalStatus.PASSED
    [start] = simulator.starts
    assert start.session_id == EXPECTED_SESSION
    assert expected.messages == ["hi", "more"]
    assert expected.session_ids == [EXPECTED_SESSION] * 2
    assert simulator.conversation.received == [
        None,
        Message.assistant("expected answer to hi"),
        Message.assistant("expected answer to more"),
    ]
    assert simulator.conversation.closes == 1
    assert runner.messages == ["hi", "more"]
    assert runner.session_ids == [SESSION] * 2
    assert [r.user_id for r in runner.requests + expected.requests] == ["u"] * 4
    assert [r.context_messages for r in runner.requests] == [context] * 2
    assert [inv.final_response for inv in result.inferences] == [
        Message.assistant("reply to hi"),
        Message.assistant("reply to more"),
    ]
    assert [inv.final_response for inv in result.expected_inferences] == [
        Message.assistant("expected answer to hi"),
        Message.assistant("expected answer to more"),
    ]
    assert [inv.context_messages for inv in result.expected_inferences] == [context] * 2
    assert result.execution_traces == [trace("actual hi"), None]


@pytest.mark.asyncio
async def test_expected_driver_hides_the_expected_inferences_when_not_enabled() -> None:
    """Item 40: the expected runner still runs, but its turns are not exposed."""
    runner = RecordingRunner()
    expected = expected_runner()
    simulator = ScriptedUserSimulator(["hi", None])

    result = await infer_one(
        runner,
        make_case("c", conversation_scenario=EXPECTED_DRIVER, expected_runner_enabled=False),
        expected_runner=expected,
        user_simulator=simulator,
    )

    assert result.status == EvalStatus.PASSED
    assert expected.messages == ["hi"]
    assert runner.messages == ["hi"]
    assert result.expected_inferences == []
    assert len(result.inferences) == 1


@pytest.mark.parametrize("enabled", [False, True])
@pytest.mark.asyncio
async def test_expected_driver_agent_failure_fails_the_case_without_expecteds(enabled: bool) -> None:
    """Item 40: when the agent's replay fails, the case fails and no expected turns are exposed."""
    runner = RecordingRunner(fail_on=["more"])
    expected = expected_runner()
    simulator = ScriptedUserSimulator(["hi", "more", None])

    result = await infer_one(
        runner,
        make_case("c", conversation_scenario=EXPECTED_DRIVER, expected_runner_enabled=enabled),
        expected_runner=expected,
        user_simulator=simulator,
    )

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error(BOOM)
    assert result.inferences == []
    assert result.expected_inferences == []
    assert expected.messages == ["hi", "more"]


@pytest.mark.asyncio
async def test_expected_driver_expected_runner_failure_fails_the_case() -> None:
    runner = RecordingRunner()
    expected = expected_runner(fail_on=["hi"])
    simulator = ProbedSimulator(["hi", None])

    result = await infer_one(
        runner,
        make_case("c", conversation_scenario=EXPECTED_DRIVER, expected_runner_enabled=True),
        expected_runner=expected,
        user_simulator=simulator,
    )

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error(BOOM)
    assert runner.requests == []
    assert simulator.conversation.closes == 1


@pytest.mark.asyncio
async def test_expected_driver_before_case_context_reaches_every_runner() -> None:
    runner = RecordingRunner()
    expected = expected_runner()
    callbacks = Callbacks().register_before_inference_case("c", lambda ctx, args: ctx.with_values(case="c"))

    await infer_one(
        runner,
        make_case("c", conversation_scenario=EXPECTED_DRIVER),
        expected_runner=expected,
        user_simulator=ScriptedUserSimulator(["hi"]),
        callbacks=callbacks,
    )

    assert [dict(r.context) for r in expected.requests + runner.requests] == [{"case": "c"}] * 2


@pytest.mark.asyncio
async def test_actual_driver_expected_runner_failure_keeps_the_actual_traces() -> None:
    runner = RecordingRunner(traces={"hi": trace("hi")})
    expected = expected_runner(fail_on=["hi"])
    case = make_case("c", conversation_scenario=ConversationScenario(stop_signal="bye"), expected_runner_enabled=True)

    result = await infer_one(runner, case, expected_runner=expected, user_simulator=ScriptedUserSimulator(["hi"]))

    assert result.status == EvalStatus.FAILED
    assert result.error_message == case_error(f"run expected runner: {BOOM}")
    assert result.inferences == []
    assert result.expected_inferences == []
    assert result.execution_traces == [trace("hi")]
