"""The default LLM user simulator (spec: trpc-service-evalresult-spec.md §1.9 "Default simulator", §6 items 41-44)."""

from __future__ import annotations

from typing import Any

import pytest

from agenteval.errors import AgentEvalError, ConfigError
from agenteval.evalset.memory import InMemoryEvalSetManager
from agenteval.evalset.message import Message, Role
from agenteval.evalset.models import ConversationScenario, EvalCase, ScenarioDriver, SessionInput
from agenteval.llm import ChatResponse
from agenteval.runner import FunctionRunner, SimulationStart, SimulatorDecision, UserSimulator
from agenteval.runner.llm_simulator import LLMSimulatedConversation, LLMUserSimulator, default_system_prompt
from agenteval.service import InferenceRequest, LocalService
from agenteval.status import EvalStatus
from agenteval.testing import ScriptedChatModel

PLAN = "Ask for missing information, then finish."
STOP = "</finished>"


def start_request(**scenario: Any) -> SimulationStart:
    fields: dict[str, Any] = {"conversation_plan": PLAN, "stop_signal": STOP}
    fields.update(scenario)
    return SimulationStart(
        eval_case_id="case-1",
        scenario=ConversationScenario(**fields),
        session_input=SessionInput(app_name="demo-app", user_id="target-user", state={"city": "shanghai"}),
        session_id="target-session",
    )


async def start(model: ScriptedChatModel, request: SimulationStart | None = None, **options: Any) -> Any:
    return await LLMUserSimulator(model, **options).start(request or start_request())


def say(text: str) -> SimulatorDecision:
    return SimulatorDecision(message=Message.user(text))


STOPPED = SimulatorDecision(stop=True)


@pytest.mark.asyncio
async def test_the_starting_prompt_opens_without_a_model_call() -> None:
    model = ScriptedChatModel(["I need to travel on Friday."])
    simulator = LLMUserSimulator(model)
    assert isinstance(simulator, UserSimulator)
    conversation = await simulator.start(start_request(starting_prompt="Help me book a train ticket."))

    first = await conversation.next(None)
    assert first == say("Help me book a train ticket.")
    assert model.requests == []

    second = await conversation.next(Message.assistant("Which day do you want to travel?"))

    assert second == say("I need to travel on Friday.")
    [request] = model.requests
    system, reply = request.messages
    assert system.role == Role.SYSTEM
    assert reply == Message.user("Which day do you want to travel?")
    for part in ("Help me book a train ticket.", PLAN, STOP):
        assert part in system.content
    assert '"city": "shanghai"' in system.content


@pytest.mark.asyncio
async def test_without_a_starting_prompt_the_model_opens_from_an_empty_reply() -> None:
    model = ScriptedChatModel(["  Hi, I need a ticket.  "])
    conversation = await start(model)

    assert await conversation.next(None) == say("Hi, I need a ticket.")
    [request] = model.requests
    assert request.messages[1:] == [Message.user("")]
    assert "fixed first user message" not in request.messages[0].content


@pytest.mark.asyncio
async def test_the_model_sees_the_exchange_from_the_simulated_users_side() -> None:
    """Agent replies are ``user`` messages, the simulator's own messages ``assistant`` messages."""
    model = ScriptedChatModel(["second", "third"])
    conversation = await start(model, start_request(starting_prompt="first"))

    await conversation.next(None)
    await conversation.next(Message.assistant("reply 1"))
    await conversation.next(Message.assistant("reply 2"))

    last = model.requests[-1].messages
    assert last[0].role == Role.SYSTEM
    assert last[1:] == [Message.user("reply 1"), Message.assistant("second"), Message.user("reply 2")]
    assert conversation.history == [
        Message.user("reply 1"),
        Message.assistant("second"),
        Message.user("reply 2"),
        Message.assistant("third"),
    ]
    assert conversation.generated == 3


@pytest.mark.asyncio
@pytest.mark.parametrize("reply", [STOP, f"  {STOP.upper()}\n"])
async def test_a_reply_equal_to_the_stop_signal_stops(reply: str) -> None:
    conversation = await start(ScriptedChatModel([reply]))

    assert await conversation.next(None) == STOPPED


@pytest.mark.asyncio
async def test_a_reply_merely_containing_the_stop_signal_goes_on() -> None:
    conversation = await start(ScriptedChatModel([f"Thanks! {STOP}"]))

    assert await conversation.next(None) == say(f"Thanks! {STOP}")


@pytest.mark.asyncio
async def test_the_stop_option_overrides_the_scenarios_and_is_trimmed() -> None:
    model = ScriptedChatModel([STOP, "DONE"])
    conversation = await start(model, stop_signal="  done ")

    assert await conversation.next(None) == say(STOP)
    assert await conversation.next(Message.assistant("ok")) == STOPPED
    assert conversation.scenario.stop_signal == "done"
    assert "nothing else: done" in conversation.system_prompt


@pytest.mark.asyncio
async def test_max_turns_one_stops_on_the_second_next() -> None:
    model = ScriptedChatModel(["first", "never asked"])
    conversation = await start(model, start_request(max_allowed_invocations=1))

    assert await conversation.next(None) == say("first")
    assert await conversation.next(Message.assistant("reply")) == STOPPED
    assert len(model.requests) == 1


@pytest.mark.asyncio
async def test_the_starting_prompt_counts_toward_the_limit() -> None:
    model = ScriptedChatModel([])
    conversation = await start(model, start_request(starting_prompt="hi", stop_signal=""), max_allowed_invocations=1)

    assert await conversation.next(None) == say("hi")
    assert await conversation.next(Message.assistant("reply")) == STOPPED
    assert model.requests == []


@pytest.mark.asyncio
async def test_next_after_close_raises() -> None:
    conversation = await start(ScriptedChatModel(["x"]))
    await conversation.close()

    with pytest.raises(AgentEvalError, match="conversation is closed"):
        await conversation.next(None)


@pytest.mark.asyncio
async def test_a_blank_reply_is_an_error() -> None:
    conversation = await start(ScriptedChatModel([" \n "]))

    with pytest.raises(
        AgentEvalError, match=r"^the simulator model returned an empty message \(final response content is empty\)$"
    ):
        await conversation.next(None)


@pytest.mark.asyncio
async def test_a_model_error_is_raised_with_context() -> None:
    conversation = await start(ScriptedChatModel([RuntimeError("rate limited")]))

    with pytest.raises(AgentEvalError, match="simulator model: RuntimeError: rate limited"):
        await conversation.next(None)


@pytest.mark.asyncio
async def test_the_prompt_builder_gets_the_effective_scenario() -> None:
    received: list[ConversationScenario] = []

    def builder(scenario: ConversationScenario) -> str:
        received.append(scenario)
        return "custom prompt"

    model = ScriptedChatModel(["x"])
    request = start_request(driver=ScenarioDriver.EXPECTED, starting_prompt="go", stop_signal=f" {STOP} ")
    conversation = await start(model, request, system_prompt_builder=builder, max_allowed_invocations=3)
    await conversation.next(None)
    await conversation.next(Message.assistant("r"))

    assert received == [
        ConversationScenario(
            driver=ScenarioDriver.EXPECTED,
            starting_prompt="go",
            conversation_plan=PLAN,
            stop_signal=STOP,
            max_allowed_invocations=3,
        )
    ]
    assert model.requests[0].messages[0].content.startswith("custom prompt")


@pytest.mark.asyncio
async def test_the_driver_defaults_to_actual() -> None:
    conversation = await start(ScriptedChatModel([]))

    assert isinstance(conversation, LLMSimulatedConversation)
    assert conversation.scenario.driver == ScenarioDriver.ACTUAL
    assert conversation.scenario.max_allowed_invocations == 0


def test_the_default_prompt_mentions_stop_and_start_only_when_set() -> None:
    bare = default_system_prompt(ConversationScenario(conversation_plan=PLAN))
    full = default_system_prompt(ConversationScenario(conversation_plan=PLAN, starting_prompt="go", stop_signal=STOP))

    assert bare.endswith(f"Conversation plan:\n{PLAN}")
    assert "stop signal" not in bare
    assert "fixed first user message" not in bare
    assert f"nothing else: {STOP}" in full
    assert "fixed first user message:\ngo\n" in full


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("scenario", "options", "message"),
    [
        ({"conversation_plan": "  "}, {}, "conversation plan is empty"),
        ({"stop_signal": "", "max_allowed_invocations": 0}, {}, "cannot both be disabled"),
        ({"stop_signal": "   "}, {}, "stop signal and max allowed invocations cannot both be disabled"),
        ({}, {"stop_signal": " "}, "cannot both be disabled"),
        ({"max_allowed_invocations": -1}, {}, "max allowed invocations must be greater than or equal to 0"),
        ({}, {"system_prompt_builder": lambda scenario: " "}, "system prompt is empty"),
    ],
)
async def test_start_validation(scenario: dict[str, Any], options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        await start(ScriptedChatModel([]), start_request(**scenario), **options)


@pytest.mark.asyncio
async def test_start_needs_a_scenario_and_a_session() -> None:
    simulator = LLMUserSimulator(ScriptedChatModel([]))
    request = start_request()

    with pytest.raises(ConfigError, match="start request is nil"):
        await simulator.start(None)  # type: ignore[arg-type]
    request.scenario = None  # type: ignore[assignment]
    with pytest.raises(ConfigError, match="scenario is nil"):
        await simulator.start(request)
    request = start_request()
    request.session_input = None  # type: ignore[assignment]
    with pytest.raises(ConfigError, match="initial session is nil"):
        await simulator.start(request)


def test_a_negative_limit_option_is_rejected_at_construction() -> None:
    with pytest.raises(ConfigError, match="greater than or equal to 0"):
        LLMUserSimulator(ScriptedChatModel([]), max_allowed_invocations=-1)


@pytest.mark.asyncio
async def test_a_scenario_case_runs_end_to_end_through_the_local_service() -> None:
    def agent(message: str) -> str:
        return {
            "I want to book a train ticket.": "Where to?",
            "To Beijing, please.": "Booked: a ticket to Beijing.",
        }[message]

    model = ScriptedChatModel(["To Beijing, please.", f" {STOP} ", ChatResponse(content="never used")])
    manager = InMemoryEvalSetManager()
    await manager.create("app", "set")
    await manager.add_case(
        "app",
        "set",
        EvalCase(
            eval_id="booking",
            session_input=SessionInput(user_id="u"),
            conversation_scenario=ConversationScenario(
                starting_prompt="I want to book a train ticket.",
                conversation_plan="Book a ticket to Beijing; answer questions; stop once it is booked.",
                stop_signal=STOP,
            ),
        ),
    )
    service = LocalService(FunctionRunner(agent), eval_set_manager=manager, user_simulator=LLMUserSimulator(model))

    [result] = await service.inference(InferenceRequest(app_name="app", eval_set_id="set"))

    assert result.status == EvalStatus.PASSED, result.error_message
    assert [(inv.user_content, inv.final_response) for inv in result.inferences] == [
        (Message.user("I want to book a train ticket."), Message.assistant("Where to?")),
        (Message.user("To Beijing, please."), Message.assistant("Booked: a ticket to Beijing.")),
    ]
    assert [request.messages[1:] for request in model.requests] == [
        [Message.user("Where to?")],
        [
            Message.user("Where to?"),
            Message.assistant("To Beijing, please."),
            Message.user("Booked: a ticket to Beijing."),
        ],
    ]
