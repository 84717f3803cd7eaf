"""LangGraphRunner's identity: the graph's nodes, edges, models and tools decide whether a cached answer is reused."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import BaseTool, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, create_react_agent

import agenteval as ae
from agenteval.adapters.langgraph import LangGraphRunner
from tests.adapters.identity_checks import cached_inferences, define_function, identity

from ._graphs import ConversationModel, ScriptedModel, calculator_reply, multiply, tool_graph

ADD = '''
def add(a: int, b: int) -> dict:
    """Add two numbers."""
    return {"result": a + b}
'''


def add_tool(source: str = ADD) -> BaseTool:
    made: BaseTool = tool(define_function(source, "add"))
    return made


def graph(model: Any = None, tools: Sequence[BaseTool] | None = None) -> Any:
    return tool_graph(model or ConversationModel(reply=calculator_reply), tools or [add_tool(), multiply])


def test_the_same_graph_built_again_has_the_same_identity() -> None:
    assert identity(LangGraphRunner(graph())) == identity(LangGraphRunner(graph()))


def other_reply(messages: list[BaseMessage]) -> AIMessage:
    return AIMessage("no")


@pytest.mark.parametrize(
    "changed",
    [
        lambda: graph(model=ConversationModel(reply=other_reply)),
        lambda: graph(model=ScriptedModel(responses=[AIMessage("no")])),
        lambda: graph(tools=[add_tool(ADD.replace("a + b", "a + b + 1")), multiply]),
        lambda: graph(tools=[add_tool(ADD.replace("b: int", "b: float")), multiply]),
        lambda: graph(tools=[add_tool(ADD.replace("Add two numbers.", "Sum two numbers.")), multiply]),
        lambda: graph(tools=[add_tool()]),
    ],
    ids=["model code", "model class", "tool code", "tool schema", "tool description", "fewer tools"],
)
def test_a_change_to_the_graph_changes_the_identity(changed: Any) -> None:
    assert identity(LangGraphRunner(changed())) != identity(LangGraphRunner(graph()))


def test_a_node_or_an_edge_changes_the_identity() -> None:
    def built(*, extra_node: bool = False, reply: str = "hello") -> Any:
        reply_node = define_function(f"def reply(state):\n    return {{'messages': [('ai', {reply!r})]}}\n", "reply")
        builder = StateGraph(MessagesState)
        builder.add_node("reply", reply_node)
        builder.add_edge(START, "reply")
        if extra_node:
            builder.add_node("tools", ToolNode([multiply]))
            builder.add_edge("reply", "tools")
        return builder.compile()

    base = identity(LangGraphRunner(built()))

    assert identity(LangGraphRunner(built())) == base
    assert identity(LangGraphRunner(built(reply="hi"))) != base
    assert identity(LangGraphRunner(built(extra_node=True))) != base


@pytest.mark.filterwarnings("ignore:create_react_agent has been moved:langgraph.warnings.LangGraphDeprecatedSinceV10")
def test_a_prebuilt_agents_prompt_counts() -> None:
    def react(prompt: str) -> Any:
        return create_react_agent(ScriptedModel(responses=[AIMessage("hi")]), [multiply], prompt=prompt)

    base = identity(LangGraphRunner(react("Be brief.")))

    assert identity(LangGraphRunner(react("Be brief."))) == base
    assert identity(LangGraphRunner(react("Be thorough."))) != base


def test_a_bound_models_settings_count() -> None:
    def bound(temperature: float) -> Any:
        model = FakeMessagesListChatModel(responses=[AIMessage("hi")]).bind(temperature=temperature)

        async def reply(state: MessagesState) -> dict[str, list[BaseMessage]]:
            return {"messages": [await model.ainvoke(state["messages"])]}

        builder = StateGraph(MessagesState)
        builder.add_node("reply", reply)
        builder.add_edge(START, "reply")
        return builder.compile()

    assert identity(LangGraphRunner(bound(0.0))) == identity(LangGraphRunner(bound(0.0)))
    assert identity(LangGraphRunner(bound(0.5))) != identity(LangGraphRunner(bound(0.0)))


CALCULATOR_SET = ae.EvalSet.of(
    "calculator", [ae.EvalCase.of("sum", "add 2 and 3"), ae.EvalCase.of("other", "what did I ask first?")]
)


def test_a_cached_evaluation_reuses_everything_until_a_tool_changes(tmp_path: Path) -> None:
    assert cached_inferences(tmp_path, LangGraphRunner(graph()), CALCULATOR_SET) == [False, False]
    assert cached_inferences(tmp_path, LangGraphRunner(graph()), CALCULATOR_SET) == [True, True]

    changed = LangGraphRunner(graph(tools=[add_tool(ADD.replace("a + b", "a + b + 1")), multiply]))

    assert cached_inferences(tmp_path, changed, CALCULATOR_SET) == [False, False]


def test_running_the_graph_does_not_change_its_identity() -> None:
    runner = LangGraphRunner(graph())
    before = identity(runner)

    ae.Evaluator("identity-app", runner, progress=False).evaluate(
        CALCULATOR_SET, metrics=[ae.EvalMetric.final_response()]
    )

    assert identity(runner) == before
