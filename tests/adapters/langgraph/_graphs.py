"""Real LangGraph graphs driven by LangChain test chat models, for the LangGraph runner's tests."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition


class ScriptedModel(FakeMessagesListChatModel):
    """LangChain's fake chat model that replays its responses, accepting tools as graphs bind them."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self


class ConversationModel(BaseChatModel):
    """A chat model whose answer is a function of the conversation, so that parallel sessions get their own."""

    reply: Callable[[list[BaseMessage]], AIMessage]
    seen: list[list[BaseMessage]] = []

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.seen.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=self.reply(messages))])

    @property
    def _llm_type(self) -> str:
        return "conversation"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ConversationModel:
        return self


def tool_call(name: str, **args: Any) -> AIMessage:
    """An AIMessage calling one tool, with a call id made of the name and arguments."""
    call_id = "call_" + "_".join([name, *map(str, args.values())])
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])


def calculator_reply(messages: list[BaseMessage]) -> AIMessage:
    """Add and multiply with tools; ``times N`` multiplies the previous answer; repeat the first question; loop."""
    last = messages[-1]
    questions = [str(m.content) for m in messages if isinstance(m, HumanMessage)]
    if questions[-1] == "loop":
        return tool_call("add", a=1, b=1)  # for ever, until LangGraph's recursion limit
    if isinstance(last, ToolMessage):
        return AIMessage(f"The answer is {json.loads(str(last.content))['result']}.")
    text = str(last.content)
    if added := re.fullmatch(r"add (\d+) and (\d+)", text):
        return tool_call("add", a=int(added[1]), b=int(added[2]))
    if times := re.fullmatch(r"times (\d+)", text):
        answers = [str(m.content) for m in messages if isinstance(m, AIMessage) and m.content]
        previous = re.fullmatch(r"The answer is (\d+)\.", answers[-1])
        assert previous is not None
        return tool_call("multiply", a=int(previous[1]), b=int(times[1]))
    if text == "what did I ask first?":
        return AIMessage(f"You first asked: {questions[0]} ({len(questions)} questions)")
    return AIMessage(f"I cannot {text}.")


@tool
def add(a: int, b: int) -> dict[str, int]:
    """Add two numbers."""
    return {"result": a + b}


@tool
def multiply(a: int, b: int) -> dict[str, int]:
    """Multiply two numbers."""
    return {"result": a * b}


def tool_graph(
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    *,
    tool_node: ToolNode | None = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A model node and a ToolNode in a loop: the usual tool-calling graph over ``MessagesState``."""
    bound = model.bind_tools(tools)

    async def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", tool_node or ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)
