"""The test doubles of agenteval.testing."""

from __future__ import annotations

import pytest

from agenteval.errors import ConfigError, ScriptExhaustedError
from agenteval.evalset.message import Message, Role
from agenteval.evalset.models import ConversationScenario, SessionInput
from agenteval.llm import ChatModel, ChatRequest, ChatResponse
from agenteval.runner import SimulationStart, SimulatorDecision, UserSimulator
from agenteval.testing import FunctionChatModel, ScriptedChatModel, ScriptedUserSimulator


def ask(text: str) -> ChatRequest:
    return ChatRequest(messages=[Message.user(text)])


def start_request(case: str = "c") -> SimulationStart:
    return SimulationStart(
        eval_case_id=case,
        scenario=ConversationScenario(conversation_plan="plan"),
        session_input=SessionInput(),
        session_id=f"s-{case}",
    )


@pytest.mark.asyncio
async def test_a_scripted_model_plays_its_replies_in_order_and_records_requests() -> None:
    full = ChatResponse(content="two", usage={"total_tokens": 3})
    model = ScriptedChatModel(["one", full, ValueError("three")])

    assert isinstance(model, ChatModel)
    assert (await model.generate(ask("a"))).content == "one"
    assert await model.generate(ask("b")) is full
    with pytest.raises(ValueError, match="three"):
        await model.generate(ask("c"))
    assert [request.messages[0].content for request in model.requests] == ["a", "b", "c"]


@pytest.mark.asyncio
async def test_a_scripted_model_says_how_many_replies_it_had_when_it_runs_out() -> None:
    model = ScriptedChatModel(["only"])
    await model.generate(ask("a"))

    with pytest.raises(ScriptExhaustedError, match="ran out of replies: 1 scripted, and this is request 2"):
        await model.generate(ask("b"))
    assert len(model.requests) == 2


@pytest.mark.asyncio
async def test_a_cycling_scripted_model_starts_over() -> None:
    model = ScriptedChatModel(["x", "y"], cycle=True)

    replies = [(await model.generate(ask(str(n)))).content for n in range(5)]

    assert replies == ["x", "y", "x", "y", "x"]


@pytest.mark.asyncio
async def test_a_scripted_model_answers_in_request_order_not_case_order() -> None:
    model = ScriptedChatModel(["for case A", "for case B"])

    # Case B's request arrives first (as it may under parallel evaluation): it gets the first reply.
    assert (await model.generate(ask("case B"))).content == "for case A"
    assert (await model.generate(ask("case A"))).content == "for case B"


def test_the_scripted_model_documents_its_ordering_and_the_alternative() -> None:
    doc = " ".join((ScriptedChatModel.__doc__ or "").split())
    assert "in request order, not case order" in doc
    assert "parallel_evaluation" in doc and "num_runs" in doc
    assert ":class:`FunctionChatModel`" in doc


def test_a_cycling_scripted_model_needs_replies() -> None:
    with pytest.raises(ConfigError, match="at least one reply"):
        ScriptedChatModel([], cycle=True)


@pytest.mark.asyncio
async def test_a_function_model_answers_with_a_plain_or_async_function() -> None:
    def shout(request: ChatRequest) -> str:
        return request.messages[-1].content.upper()

    async def full(request: ChatRequest) -> ChatResponse:
        return ChatResponse(content=f"{len(request.messages)} messages")

    plain, coroutine = FunctionChatModel(shout), FunctionChatModel(full)

    assert (await plain.generate(ask("hi"))).content == "HI"
    assert (await coroutine.generate(ask("hi"))).content == "1 messages"
    assert [request.messages[0].content for request in plain.requests] == ["hi"]


@pytest.mark.asyncio
async def test_a_function_model_rejects_other_return_types() -> None:
    model = FunctionChatModel(lambda request: 42)  # type: ignore[arg-type, return-value]

    with pytest.raises(TypeError, match="returned int; return a str or a ChatResponse"):
        await model.generate(ask("hi"))


def test_a_function_model_needs_a_callable() -> None:
    with pytest.raises(ConfigError, match="needs a callable"):
        FunctionChatModel("not callable")  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_a_scripted_user_says_its_turns_then_stops() -> None:
    simulator = ScriptedUserSimulator(["hello", Message(role=Role.USER, content="more")])
    assert isinstance(simulator, UserSimulator)

    conversation = await simulator.start(start_request())
    decisions = [
        await conversation.next(None),
        await conversation.next(Message.assistant("r1")),
        await conversation.next(Message.assistant("r2")),
        await conversation.next(Message.assistant("r3")),
    ]
    await conversation.close()

    assert decisions == [
        SimulatorDecision(message=Message.user("hello")),
        SimulatorDecision(message=Message.user("more")),
        SimulatorDecision(stop=True),
        SimulatorDecision(stop=True),
    ]
    assert simulator.seen == [Message.assistant("r1"), Message.assistant("r2"), Message.assistant("r3")]
    assert simulator.closed
    with pytest.raises(Exception, match="conversation is closed"):
        await conversation.next(None)


@pytest.mark.asyncio
async def test_a_none_turn_stops_the_scripted_user_there() -> None:
    simulator = ScriptedUserSimulator(["first", None, "never"])
    conversation = await simulator.start(start_request())

    assert await conversation.next(None) == SimulatorDecision(message=Message.user("first"))
    assert await conversation.next(Message.assistant("r")) == SimulatorDecision(stop=True)
    assert await conversation.next(Message.assistant("r")) == SimulatorDecision(stop=True)


@pytest.mark.asyncio
async def test_a_scripted_user_raises_an_exception_turn_then_goes_on() -> None:
    simulator = ScriptedUserSimulator(["first", RuntimeError("simulator down"), "after"])
    conversation = await simulator.start(start_request())

    assert await conversation.next(None) == SimulatorDecision(message=Message.user("first"))
    with pytest.raises(RuntimeError, match="simulator down"):
        await conversation.next(Message.assistant("r1"))
    assert await conversation.next(Message.assistant("r2")) == SimulatorDecision(message=Message.user("after"))
    assert simulator.seen == [Message.assistant("r1"), Message.assistant("r2")]


@pytest.mark.asyncio
async def test_each_case_gets_a_fresh_scripted_conversation() -> None:
    simulator = ScriptedUserSimulator(["hi"])
    assert (simulator.seen, simulator.closed) == ([], False)

    first = await simulator.start(start_request("a"))
    await first.next(None)
    await first.next(Message.assistant("reply a"))
    await first.close()
    second = await simulator.start(start_request("b"))

    assert await second.next(None) == SimulatorDecision(message=Message.user("hi"))
    assert [start.eval_case_id for start in simulator.starts] == ["a", "b"]
    assert simulator.conversations == [first, second]
    assert (first.seen, first.closed) == ([Message.assistant("reply a")], True)
    assert (simulator.seen, simulator.closed) == ([], False)


def test_scripted_user_turns_must_be_text_messages_or_exceptions() -> None:
    with pytest.raises(ConfigError, match="a str, a Message, an exception or None, got int"):
        ScriptedUserSimulator([1])  # type: ignore[list-item]
