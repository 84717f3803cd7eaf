"""LangGraphRunner against real LangGraph graphs, ToolNodes and checkpointers, driven by LangChain test models."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, create_react_agent
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

import agenteval as ae
from agenteval.adapters.langgraph import LangGraphRunner
from agenteval.evalset.message import Role
from agenteval.evalset.models import ArgumentsMatch, MockTool, ToolMock

from ._graphs import ConversationModel, ScriptedModel, add, calculator_reply, multiply, tool_call, tool_graph

TRAJECTORY = [ae.EvalMetric.tool_trajectory()]
METRICS = [*TRAJECTORY, ae.EvalMetric.final_response()]


def calculator_graph(**options: Any) -> Any:
    return tool_graph(ConversationModel(reply=calculator_reply), [add, multiply], **options)


def calculator_case(eval_id: str, a: int, b: int, times: int) -> ae.EvalCase:
    return ae.EvalCase.of(
        eval_id,
        ae.Invocation.of(
            f"add {a} and {b}", f"The answer is {a + b}.", tools=[ae.Tool(name="add", arguments={"a": a, "b": b})]
        ),
        ae.Invocation.of(
            f"times {times}",
            f"The answer is {(a + b) * times}.",
            tools=[ae.Tool(name="multiply", arguments={"a": a + b, "b": times})],
        ),
    )


def actual_tools(report: ae.EvaluationReport, case: int = 0) -> list[list[tuple[str, str, Any, Any]]]:
    """Per turn: (id, name, arguments, result) of each recorded call."""
    per_turn = report.result.eval_case_results[case].eval_metric_result_per_invocation
    return [
        [(t.id, t.name, t.arguments, t.result) for t in turn.actual_invocation.tools]
        for turn in per_turn
        if turn.actual_invocation is not None
    ]


def test_a_two_turn_case_with_two_tool_calls_passes_the_trajectory_and_final_response_metrics() -> None:
    report = ae.Evaluator("calc", LangGraphRunner(calculator_graph())).evaluate(
        ae.EvalSet.of("calc", [calculator_case("two_turns", 2, 3, 4)]), metrics=METRICS
    )

    assert report.overall_status is ae.EvalStatus.PASSED, report.cases.loc[0, "error_message"]
    # The second turn multiplies the first turn's answer: the thread kept the session's history.
    assert list(report.turns["actual_response"]) == ["The answer is 5.", "The answer is 20."]
    assert actual_tools(report) == [
        [("call_add_2_3", "add", {"a": 2, "b": 3}, {"result": 5})],
        [("call_multiply_5_4", "multiply", {"a": 5, "b": 4}, {"result": 20})],
    ]


def test_parallel_cases_keep_their_sessions_apart() -> None:
    cases = [
        ae.EvalCase.of(
            f"case_{i}",
            ae.Invocation.of(
                f"add {i} and 1", f"The answer is {i + 1}.", tools=[ae.Tool(name="add", arguments={"a": i, "b": 1})]
            ),
            ae.Invocation.of("what did I ask first?", f"You first asked: add {i} and 1 (2 questions)"),
        )
        for i in range(20)
    ]
    report = ae.Evaluator("calc", LangGraphRunner(calculator_graph()), parallelism=20).evaluate(
        ae.EvalSet.of("calc", cases), metrics=METRICS
    )

    assert report.overall_status is ae.EvalStatus.PASSED, list(report.cases["error_message"])
    assert len(report.cases) == 20


def test_a_graph_error_fails_only_its_case_with_the_framework_exception_type() -> None:
    looping = ae.EvalCase.of("loops", "loop")
    graph = calculator_graph().with_config(recursion_limit=10)
    report = ae.Evaluator("calc", LangGraphRunner(graph)).evaluate(
        ae.EvalSet.of("calc", [looping, calculator_case("fine", 1, 2, 3)]), metrics=METRICS
    )

    statuses = dict(zip(report.cases["eval_id"], report.cases["status"], strict=True))
    assert statuses == {"loops": ae.EvalStatus.FAILED, "fine": ae.EvalStatus.PASSED}
    failed = report.cases.set_index("eval_id").loc["loops"]
    assert failed["error_type"] == "agent"
    assert "GraphRecursionError: Recursion limit of 10 reached" in failed["error_message"]


outbox: list[str] = []


@tool
def send_email(to: str) -> dict[str, str]:
    """Send an email."""
    outbox.append(to)
    return {"status": "sent"}


def email_reply(messages: list[BaseMessage]) -> AIMessage:
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(f"Email: {last.content}")
    return tool_call("send_email", to=str(last.content).removeprefix("email "))


def email_case(eval_id: str, to: str, *rules: MockTool) -> ae.EvalCase:
    turn = ae.Invocation.of(f"email {to}", tools=[ae.Tool(name="send_email", arguments={"to": to})])
    if rules:
        turn.tool_mock = ToolMock(actual=list(rules))
    return ae.EvalCase.of(eval_id, turn)


def email_graph(**options: Any) -> Any:
    return tool_graph(ConversationModel(reply=email_reply), [send_email], **options)


@pytest.fixture(autouse=True)
def _empty_outbox() -> None:
    outbox.clear()


def queued_for(to: str) -> MockTool:
    return MockTool(name="send_email", arguments=ArgumentsMatch(expected={"to": to}), result={"status": "queued"})


def test_a_mocked_tool_answers_from_the_eval_set_and_the_real_tool_never_runs() -> None:
    graph = email_graph()
    report = ae.Evaluator("mail", LangGraphRunner(graph)).evaluate(
        ae.EvalSet.of("mail", [email_case("mocked", "bob", queued_for("bob")), email_case("real", "ann")]),
        metrics=TRAJECTORY,
    )

    assert report.overall_status is ae.EvalStatus.PASSED, list(report.cases["error_message"])
    assert outbox == ["ann"]
    assert actual_tools(report, 0) == [[("call_send_email_bob", "send_email", {"to": "bob"}, {"status": "queued"})]]
    assert actual_tools(report, 1) == [[("call_send_email_ann", "send_email", {"to": "ann"}, {"status": "sent"})]]
    assert list(report.turns["actual_response"]) == ['Email: {"status": "queued"}', 'Email: {"status": "sent"}']


@pytest.mark.asyncio
async def test_outside_the_runner_the_tools_of_the_graph_run_as_before() -> None:
    graph = email_graph()
    LangGraphRunner(graph)

    await graph.ainvoke({"messages": [HumanMessage("email cy")]})

    assert outbox == ["cy"]


@pytest.mark.parametrize("handle_tool_errors", [False, True])
def test_a_mocked_call_no_rule_matches_fails_the_case_even_if_the_tool_node_tells_the_model(
    handle_tool_errors: bool,
) -> None:
    graph = email_graph(tool_node=ToolNode([send_email], handle_tool_errors=handle_tool_errors))
    report = ae.Evaluator("mail", LangGraphRunner(graph)).evaluate(
        ae.EvalSet.of("mail", [email_case("unmatched", "bob", queued_for("alice"))]), metrics=TRAJECTORY
    )

    assert report.cases.loc[0, "status"] == ae.EvalStatus.FAILED
    assert 'tool "send_email" configured for mock but no rule matched' in str(report.cases.loc[0, "error_message"])
    assert outbox == []


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_mocks_apply_around_the_wrappers_the_tool_node_already_has(kind: str) -> None:
    wrapped: list[str] = []

    def wrap(request: ToolCallRequest, execute: Any) -> Any:
        wrapped.append(request.tool_call["args"]["to"])
        return execute(request)

    async def awrap(request: ToolCallRequest, execute: Any) -> Any:
        wrapped.append(request.tool_call["args"]["to"])
        return await execute(request)

    node = (
        ToolNode([send_email], wrap_tool_call=wrap) if kind == "sync" else ToolNode([send_email], awrap_tool_call=awrap)
    )
    report = ae.Evaluator("mail", LangGraphRunner(email_graph(tool_node=node))).evaluate(
        ae.EvalSet.of("mail", [email_case("mocked", "bob", queued_for("bob")), email_case("real", "ann")]),
        metrics=TRAJECTORY,
    )

    assert report.overall_status is ae.EvalStatus.PASSED, list(report.cases["error_message"])
    # A mocked call is answered before the node's own wrapper; a real one goes through it.
    assert wrapped == ["ann"]
    assert outbox == ["ann"]


@pytest.mark.filterwarnings("ignore:create_react_agent has been moved:langgraph.warnings.LangGraphDeprecatedSinceV10")
def test_mocks_apply_in_a_prebuilt_react_agent_used_as_a_subgraph() -> None:
    agent = create_react_agent(ConversationModel(reply=email_reply), [send_email], name="mailer")
    parent = StateGraph(MessagesState)
    parent.add_node("mailer", agent)
    parent.add_edge(START, "mailer")
    report = ae.Evaluator("mail", LangGraphRunner(parent.compile())).evaluate(
        ae.EvalSet.of("mail", [email_case("mocked", "bob", queued_for("bob"))]), metrics=TRAJECTORY
    )

    assert report.overall_status is ae.EvalStatus.PASSED, list(report.cases["error_message"])
    assert outbox == []
    assert actual_tools(report) == [[("call_send_email_bob", "send_email", {"to": "bob"}, {"status": "queued"})]]


def hand_written_tool_graph() -> Any:
    """A graph whose own node runs the tools and answers with ToolMessages, as older LangGraph tutorials do."""
    model = ConversationModel(reply=email_reply)

    async def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    async def tools(state: MessagesState) -> dict[str, list[BaseMessage]]:
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        return {
            "messages": [
                ToolMessage(str(await send_email.ainvoke(call["args"])), tool_call_id=call["id"] or "")
                for call in last.tool_calls
            ]
        }

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", tools)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", lambda s: "tools" if s["messages"][-1].tool_calls else "__end__")
    builder.add_edge("tools", "agent")
    return builder.compile()


def test_calls_a_hand_written_tool_node_ran_are_recorded_from_its_messages() -> None:
    report = ae.Evaluator("mail", LangGraphRunner(hand_written_tool_graph())).evaluate(
        ae.EvalSet.of("mail", [email_case("real", "ann")]), metrics=TRAJECTORY
    )

    assert report.overall_status is ae.EvalStatus.PASSED, list(report.cases["error_message"])
    assert actual_tools(report) == [[("call_send_email_ann", "send_email", {"to": "ann"}, "{'status': 'sent'}")]]


def test_a_mocked_tool_a_hand_written_tool_node_ran_fails_the_case() -> None:
    report = ae.Evaluator("mail", LangGraphRunner(hand_written_tool_graph())).evaluate(
        ae.EvalSet.of("mail", [email_case("mocked", "bob", queued_for("bob"))]), metrics=TRAJECTORY
    )

    message = str(report.cases.loc[0, "error_message"])
    assert 'tool "send_email" is mocked, but the graph ran it outside a ToolNode' in message


def turn(text: str, session: str = "s1", **fields: Any) -> ae.TurnRequest:
    return ae.TurnRequest(message=ae.Message.user(text), session_id=session, **fields)


@pytest.mark.asyncio
async def test_model_names_and_token_usage_are_recorded_per_model_response() -> None:
    model = ScriptedModel(
        responses=[
            AIMessage(
                "",
                tool_calls=[{"name": "add", "args": {"a": 1, "b": 2}, "id": "c1", "type": "tool_call"}],
                usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
                response_metadata={"model_name": "fake-large"},
            ),
            AIMessage(
                "It is 3.",
                usage_metadata={"input_tokens": 20, "output_tokens": 3, "total_tokens": 23},
                response_metadata={"model_name": "fake-small"},
            ),
        ]
    )
    runner = LangGraphRunner(tool_graph(model, [add]))

    result = await runner.run(turn("1 + 2?"))

    assert result.final_response == ae.Message.assistant("It is 3.")
    trace = result.execution_trace
    assert trace is not None and trace.steps is not None
    assert [(step.node_type, step.node_id, step.usage) for step in trace.steps] == [
        ("llm", "fake-large", {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}),
        ("llm", "fake-small", {"prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 23}),
    ]
    assert trace.usage == {"prompt_tokens": 30, "completion_tokens": 8, "total_tokens": 38}


@tool
def remember(note: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Remember a note."""
    return Command(update={"messages": [ToolMessage(f"noted {note}", tool_call_id=tool_call_id)]})


@pytest.mark.asyncio
async def test_a_tool_that_answers_with_a_command_is_recorded_with_its_tool_message() -> None:
    model = ScriptedModel(responses=[tool_call("remember", note="milk"), AIMessage("Noted.")])
    runner = LangGraphRunner(tool_graph(model, [remember]))

    result = await runner.run(turn("remember milk"))

    assert [(t.id, t.name, t.arguments, t.result) for t in result.tools] == [
        ("call_remember_milk", "remember", {"note": "milk"}, "noted milk")
    ]
    assert result.final_response == ae.Message.assistant("Noted.")


class ProfileState(MessagesState):
    units: str


def profile_graph(checkpointer: InMemorySaver | None = None) -> Any:
    """A graph that answers with the state's units and the configured user id, counting its turns."""

    def answer(state: ProfileState, config: RunnableConfig) -> dict[str, Any]:
        user = config["configurable"]["user_id"]
        turns = sum(isinstance(m, HumanMessage) for m in state["messages"])
        return {"messages": [AIMessage(f"{state.get('units')} for {user}, turn {turns}")], "units": "imperial"}

    builder = StateGraph(ProfileState)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    return builder.compile(checkpointer=checkpointer)


@pytest.mark.asyncio
async def test_the_session_state_starts_the_thread_and_the_user_id_is_configurable() -> None:
    runner = LangGraphRunner(profile_graph())
    state = {"units": "metric"}

    first = await runner.run(turn("hi", user_id="ann", state=state))
    second = await runner.run(turn("again", user_id="ann", state=state))
    other = await runner.run(turn("hi", session="s2", user_id="bo", state=state))

    # The state starts the thread; from then on the thread's own state holds (the graph changed it).
    assert [r.final_response.content for r in (first, second, other) if r.final_response] == [
        "metric for ann, turn 1",
        "imperial for ann, turn 2",
        "metric for bo, turn 1",
    ]


@pytest.mark.asyncio
async def test_a_state_key_the_graph_does_not_take_is_an_error_naming_it() -> None:
    runner = LangGraphRunner(profile_graph())

    with pytest.raises(ae.ConfigError, match=r"sessionInput.state has \['unit'\].*it takes \['units'\]"):
        await runner.run(turn("hi", state={"unit": "metric"}))


@pytest.mark.asyncio
async def test_context_messages_come_before_the_first_turn_only() -> None:
    model = ConversationModel(reply=lambda messages: AIMessage(f"seen {len(messages)}"))
    runner = LangGraphRunner(tool_graph(model, [add]))
    context = [ae.Message.system("Be brief."), ae.Message.assistant("Hello, I add numbers.")]

    first = await runner.run(turn("hi", context_messages=context))
    await runner.run(turn("again", context_messages=context))

    assert first.final_response == ae.Message.assistant("seen 3")
    assert [(type(m), m.content) for m in model.seen[1]] == [
        (SystemMessage, "Be brief."),
        (AIMessage, "Hello, I add numbers."),
        (HumanMessage, "hi"),
        (AIMessage, "seen 3"),
        (HumanMessage, "again"),
    ]
    # The context's assistant message is neither a model call nor the reply.
    assert first.execution_trace is not None and len(first.execution_trace.steps or []) == 1


@pytest.mark.asyncio
async def test_a_context_message_the_graph_cannot_take_is_an_error() -> None:
    runner = LangGraphRunner(profile_graph())
    tool_result = ae.Message(role=Role.TOOL, content="42")

    with pytest.raises(ae.ConfigError, match="context message 1 has the role 'tool'"):
        await runner.run(turn("hi", context_messages=[tool_result]))


@pytest.mark.asyncio
async def test_end_session_deletes_the_thread_from_the_graphs_checkpointer() -> None:
    saver = InMemorySaver()
    runner = LangGraphRunner(profile_graph(saver))
    await runner.run(turn("hi", session="s1"))
    await runner.run(turn("hi", session="s2"))
    threads = {checkpoint.config["configurable"]["thread_id"] for checkpoint in saver.list(None)}
    assert len(threads) == 2

    await runner.end_session("s1")

    remaining = {checkpoint.config["configurable"]["thread_id"] for checkpoint in saver.list(None)}
    assert len(remaining) == 1 and remaining < threads
    again = await runner.run(turn("hi again", session="s1", user_id="ann"))
    assert again.final_response == ae.Message.assistant("None for ann, turn 1")


def test_a_graph_that_is_not_compiled_is_refused_saying_what_to_do() -> None:
    builder = StateGraph(MessagesState)

    with pytest.raises(ae.ConfigError, match="compiled LangGraph graph, got StateGraph: call its .compile()"):
        LangGraphRunner(builder)  # type: ignore[arg-type]


def test_a_graph_without_messages_is_refused() -> None:
    from typing import TypedDict

    class Counter(TypedDict):
        count: int

    builder = StateGraph(Counter)
    builder.add_node("inc", lambda state: {"count": state["count"] + 1})
    builder.add_edge(START, "inc")

    with pytest.raises(ae.ConfigError, match=r"under 'messages'; the input of graph 'LangGraph' has \['count'\]"):
        LangGraphRunner(builder.compile())
