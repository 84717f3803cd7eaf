"""OpenAIAgentsRunner's identity: the agent's instructions, model and tools decide whether a cached answer is reused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents import Agent, ModelSettings, RunConfig, function_tool
from pydantic import BaseModel

import agenteval as ae
from agenteval.adapters.openai_agents import OpenAIAgentsRunner
from tests.adapters.identity_checks import cached_inferences, define_function, identity
from tests.adapters.openai_agents.test_runner import weather_model

WEATHER = '''
def get_weather(city: str) -> str:
    """The sky over a city."""
    return "sunny over " + city
'''


class Report(BaseModel):
    city: str
    sky: str


def agent(**changes: Any) -> Agent[Any]:
    fields: dict[str, Any] = {
        "name": "weather",
        "instructions": "Report the weather.",
        "model": weather_model(),
        "tools": [function_tool(define_function(WEATHER, "get_weather"))],
        **changes,
    }
    return Agent(**fields)


def test_the_same_agent_built_again_has_the_same_identity() -> None:
    assert identity(OpenAIAgentsRunner(agent())) == identity(OpenAIAgentsRunner(agent()))


@pytest.mark.parametrize(
    "changes",
    [
        {"instructions": "Report the weather at length."},
        {"instructions": lambda context, agent: "Report the weather."},
        {"model": weather_model(name="scripted-gpt-2")},
        {"model": "gpt-4o"},
        {"model_settings": ModelSettings(temperature=0.2)},
        {"output_type": Report},
        {"tools": [function_tool(define_function(WEATHER.replace('"sunny over "', '"rain over "'), "get_weather"))]},
        {"tools": [function_tool(define_function(WEATHER.replace("city: str", "city: int"), "get_weather"))]},
        {"tools": [function_tool(define_function(WEATHER.replace("The sky", "The clouds"), "get_weather"))]},
        {"handoffs": [Agent(name="helper", instructions="Help.")]},
    ],
    ids=[
        "instructions",
        "instructions function",
        "model name",
        "model",
        "model settings",
        "output type",
        "tool code",
        "tool schema",
        "tool description",
        "handoff",
    ],
)
def test_a_change_to_the_agent_changes_the_identity(changes: dict[str, Any]) -> None:
    assert identity(OpenAIAgentsRunner(agent(**changes))) != identity(OpenAIAgentsRunner(agent()))


def test_a_change_to_an_agent_handed_off_to_changes_the_identity() -> None:
    def with_helper(instructions: str) -> OpenAIAgentsRunner:
        return OpenAIAgentsRunner(agent(handoffs=[Agent(name="helper", instructions=instructions)]))

    assert identity(with_helper("Help.")) == identity(with_helper("Help."))
    assert identity(with_helper("Help more.")) != identity(with_helper("Help."))


def test_the_run_configuration_and_max_turns_count() -> None:
    base = identity(OpenAIAgentsRunner(agent()))

    assert identity(OpenAIAgentsRunner(agent(), run_config=RunConfig(model="gpt-4o", tracing_disabled=True))) != base
    assert identity(OpenAIAgentsRunner(agent(), max_turns=3)) != base


WEATHER_SET = ae.EvalSet.of(
    "weather", [ae.EvalCase.of("paris", "Weather in Paris?"), ae.EvalCase.of("hello", "Hello there")]
)


def test_a_cached_evaluation_reuses_everything_until_the_instructions_change(tmp_path: Path) -> None:
    assert cached_inferences(tmp_path, OpenAIAgentsRunner(agent()), WEATHER_SET) == [False, False]
    assert cached_inferences(tmp_path, OpenAIAgentsRunner(agent()), WEATHER_SET) == [True, True]

    changed = OpenAIAgentsRunner(agent(instructions="Report the weather at length."))

    assert cached_inferences(tmp_path, changed, WEATHER_SET) == [False, False]


def test_running_the_agent_does_not_change_its_identity() -> None:
    runner = OpenAIAgentsRunner(agent())
    before = identity(runner)

    ae.Evaluator("identity-app", runner, progress=False).evaluate(WEATHER_SET, metrics=[ae.EvalMetric.final_response()])

    assert identity(runner) == before
