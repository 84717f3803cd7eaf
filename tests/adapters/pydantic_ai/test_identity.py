"""PydanticAIRunner's identity: the agent's instructions, model and tools decide whether a cached answer is reused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

import agenteval as ae
from agenteval.adapters.pydantic_ai import PydanticAIRunner
from agenteval.cache import identity as identity_module
from agenteval.errors import CacheIdentityWarning
from agenteval.runner import TurnRequest
from tests.adapters.identity_checks import cached_inferences, define_function, identity
from tests.adapters.pydantic_ai.test_runner import _weather_model

WEATHER = '''
def get_weather(city: str) -> str:
    """The weather now."""
    return "Sunny in " + city
'''


class Forecast(BaseModel):
    city: str
    sky: str


def agent(**changes: Any) -> Agent[Any, Any]:
    fields: dict[str, Any] = {
        "model": FunctionModel(_weather_model),
        "instructions": "Answer briefly.",
        "tools": [define_function(WEATHER, "get_weather")],
        **changes,
    }
    return Agent(**fields)


def test_the_same_agent_built_again_has_the_same_identity() -> None:
    assert identity(PydanticAIRunner(agent())) == identity(PydanticAIRunner(agent()))


def _other_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("other")])


@pytest.mark.parametrize(
    "changes",
    [
        {"instructions": "Answer at length."},
        {"system_prompt": "You report the weather."},
        {"model": FunctionModel(_other_model)},
        {"model": FunctionModel(_weather_model, model_name="weather-v2")},
        {"model_settings": {"temperature": 0.2}},
        {"output_type": Forecast},
        {"tools": [define_function(WEATHER.replace('"Sunny in "', '"Rain in "'), "get_weather")]},
        {"tools": [define_function(WEATHER.replace("city: str", "city: int"), "get_weather")]},
        {"tools": [define_function(WEATHER.replace("The weather now.", "Today's weather."), "get_weather")]},
        {"tools": []},
        {"retries": 3},
    ],
    ids=[
        "instructions",
        "system prompt",
        "model function",
        "model name",
        "model settings",
        "output type",
        "tool code",
        "tool schema",
        "tool description",
        "no tools",
        "retries",
    ],
)
def test_a_change_to_the_agent_changes_the_identity(changes: dict[str, Any]) -> None:
    assert identity(PydanticAIRunner(agent(**changes))) != identity(PydanticAIRunner(agent()))


def test_a_dynamic_instructions_function_counts_by_its_code() -> None:
    def with_instructions(source: str) -> PydanticAIRunner[None]:
        built = agent()
        built.instructions(define_function(source, "instructions"))
        return PydanticAIRunner(built)

    brief = "def instructions(ctx) -> str:\n    return 'Answer briefly.'\n"
    long = "def instructions(ctx) -> str:\n    return 'Answer at length.'\n"

    assert identity(with_instructions(brief)) == identity(with_instructions(brief))
    assert identity(with_instructions(long)) != identity(with_instructions(brief))


def test_the_deps_factory_counts_by_its_code() -> None:
    first = PydanticAIRunner(agent(), deps=lambda request: request.user_id)
    second = PydanticAIRunner(agent(), deps=lambda request: request.session_id)

    assert identity(first) != identity(second)


WEATHER_SET = ae.EvalSet.of(
    "weather", [ae.EvalCase.of("paris", "What is the weather in Paris?"), ae.EvalCase.of("hello", "Hello")]
)


def test_a_cached_evaluation_reuses_everything_until_the_instructions_change(tmp_path: Path) -> None:
    assert cached_inferences(tmp_path, PydanticAIRunner(agent()), WEATHER_SET) == [False, False]
    assert cached_inferences(tmp_path, PydanticAIRunner(agent()), WEATHER_SET) == [True, True]

    changed = PydanticAIRunner(agent(instructions="Answer at length."))

    assert cached_inferences(tmp_path, changed, WEATHER_SET) == [False, False]


def test_running_the_agent_does_not_change_its_identity() -> None:
    runner = PydanticAIRunner(agent())
    before = identity(runner)

    ae.Evaluator("identity-app", runner, progress=False).evaluate(WEATHER_SET, metrics=[ae.EvalMetric.final_response()])

    assert identity(runner) == before


def test_a_tool_taking_the_run_context_counts_too() -> None:
    def lookup(ctx: RunContext[None], city: str) -> str:
        return city

    def lookup_again(ctx: RunContext[None], city: str) -> str:
        return city.upper()

    lookup_again.__name__ = lookup_again.__qualname__ = "lookup"

    assert identity(PydanticAIRunner(agent(tools=[lookup]))) != identity(PydanticAIRunner(agent(tools=[lookup_again])))


def test_a_test_model_counts_by_its_settings_not_by_what_it_records_as_it_runs(tmp_path: Path) -> None:
    def runner(text: str) -> PydanticAIRunner[None]:
        return PydanticAIRunner(Agent(TestModel(custom_output_text=text), instructions="Answer briefly."))

    first = runner("Sunny.")

    assert identity(runner("Rain.")) != identity(first)
    assert cached_inferences(tmp_path, first, WEATHER_SET) == [False, False]
    assert cached_inferences(tmp_path, first, WEATHER_SET) == [True, True]


def test_configuration_changed_while_the_agent_ran_is_not_the_users_to_describe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(identity_module, "_warned", set())
    model_settings: dict[str, Any] = {"temperature": 0.1}

    def deps(request: TurnRequest) -> None:
        model_settings["temperature"] = 0.9

    runner = PydanticAIRunner(agent(model_settings=model_settings), deps=deps)
    with pytest.warns(CacheIdentityWarning, match=r"changed while the agent ran") as caught:
        cached_inferences(tmp_path, runner, WEATHER_SET)

    message = str(caught[0].message)
    assert "PydanticAIRunner" in message
    assert "bug" in message
    assert "give the agent a cache_identity() method" not in message
