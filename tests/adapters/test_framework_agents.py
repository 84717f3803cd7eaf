"""A framework's agent passed as it is gets an error that names the adapter to wrap it in."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import agenteval as ae


def pydantic_ai_agent() -> object:
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    return Agent(TestModel())


def adk_agent() -> object:
    from google.adk.agents import LlmAgent

    return LlmAgent(name="weather", model="gemini-2.0-flash")


def langgraph_graph() -> object:
    from langgraph.graph import MessagesState, StateGraph

    graph = StateGraph(MessagesState)
    graph.add_node("reply", lambda state: state)
    graph.set_entry_point("reply")
    return graph.compile()


def openai_agent() -> object:
    import agents

    return agents.Agent(name="weather")


@pytest.mark.parametrize(
    ("make", "runner"),
    [
        (pydantic_ai_agent, "agenteval.adapters.pydantic_ai import PydanticAIRunner"),
        (adk_agent, "agenteval.adapters.adk import ADKRunner"),
        (langgraph_graph, "agenteval.adapters.langgraph import LangGraphRunner"),
        (openai_agent, "agenteval.adapters.openai_agents import OpenAIAgentsRunner"),
    ],
)
def test_a_framework_agent_passed_as_it_is_names_the_runner_to_wrap_it_in(
    make: Callable[[], object], runner: str
) -> None:
    with pytest.raises(
        ae.ConfigError, match=f"built with an agent framework: wrap it in its runner \\(`from {runner}`"
    ):
        ae.Evaluator("app", make())  # type: ignore[arg-type]  # what a new user passes


def test_a_runner_of_ones_own_in_a_package_named_like_a_framework_is_still_a_runner() -> None:
    class Agent:  # the Agents SDK's class name, in a module that is not the SDK
        async def run(self, request: ae.TurnRequest) -> ae.TurnResult:
            return ae.TurnResult()

    Agent.__module__ = "agents_of_mine.core"
    assert ae.Evaluator("app", Agent()) is not None
