"""ADKRunner's identity: the agent's instructions, model and tools decide whether a cached answer is reused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.tools.agent_tool import AgentTool
from google.genai import types

import agenteval as ae
from agenteval.adapters.adk import ADKRunner
from tests.adapters.adk._models import FunctionLlm
from tests.adapters.adk.test_runner import get_forecast, weather_reply
from tests.adapters.identity_checks import cached_inferences, define_function, identity

WEATHER = '''
def get_weather(city: str) -> dict:
    """The weather now."""
    return {"sky": "sunny", "city": city}
'''


def agent(**changes: Any) -> LlmAgent:
    fields: dict[str, Any] = {
        "name": "weather",
        "model": FunctionLlm(reply=weather_reply),
        "instruction": "Answer briefly.",
        "tools": [define_function(WEATHER, "get_weather"), get_forecast],
        **changes,
    }
    return LlmAgent(**fields)


def test_the_same_agent_built_again_has_the_same_identity() -> None:
    assert identity(ADKRunner(agent())) == identity(ADKRunner(agent()))


@pytest.mark.parametrize(
    "changes",
    [
        {"instruction": "Answer at length."},
        {"instruction": lambda context: "Answer briefly."},
        {"global_instruction": "Be polite."},
        {"model": FunctionLlm(model="another-llm", reply=weather_reply)},
        {"model": FunctionLlm(reply=lambda request: weather_reply(request))},
        {"generate_content_config": types.GenerateContentConfig(temperature=0.2)},
        {"tools": [define_function(WEATHER.replace('"sunny"', '"cloudy"'), "get_weather"), get_forecast]},
        {"tools": [define_function(WEATHER.replace("city: str", "city: int"), "get_weather"), get_forecast]},
        {
            "tools": [
                define_function(WEATHER.replace("The weather now.", "Today's weather."), "get_weather"),
                get_forecast,
            ]
        },
        {"sub_agents": [LlmAgent(name="helper", model=FunctionLlm(reply=weather_reply), instruction="Help.")]},
    ],
    ids=[
        "instruction",
        "instruction function",
        "global instruction",
        "model name",
        "model code",
        "generation settings",
        "tool code",
        "tool schema",
        "tool description",
        "sub-agent",
    ],
)
def test_a_change_to_the_agent_changes_the_identity(changes: dict[str, Any]) -> None:
    assert identity(ADKRunner(agent(**changes))) != identity(ADKRunner(agent()))


def test_a_change_inside_an_agent_tools_agent_changes_the_identity() -> None:
    def with_helper(instruction: str) -> LlmAgent:
        helper = LlmAgent(name="helper", model=FunctionLlm(reply=weather_reply), instruction=instruction)
        return agent(tools=[AgentTool(agent=helper)])

    assert identity(ADKRunner(with_helper("Help."))) == identity(ADKRunner(with_helper("Help.")))
    assert identity(ADKRunner(with_helper("Help more."))) != identity(ADKRunner(with_helper("Help.")))


WEATHER_SET = ae.EvalSet.of(
    "weather", [ae.EvalCase.of("paris", "Weather in Paris?"), ae.EvalCase.of("tomorrow", "And tomorrow?")]
)


def test_a_cached_evaluation_reuses_everything_until_the_instruction_changes(tmp_path: Path) -> None:
    assert cached_inferences(tmp_path, ADKRunner(agent()), WEATHER_SET) == [False, False]
    assert cached_inferences(tmp_path, ADKRunner(agent()), WEATHER_SET) == [True, True]

    changed = ADKRunner(agent(instruction="Answer at length."))

    assert cached_inferences(tmp_path, changed, WEATHER_SET) == [False, False]


def test_running_the_agent_does_not_change_its_identity() -> None:
    runner = ADKRunner(agent())
    before = identity(runner)

    ae.Evaluator("identity-app", runner, progress=False).evaluate(WEATHER_SET, metrics=[ae.EvalMetric.final_response()])

    assert identity(runner) == before
