"""A framework runner's identity is the same in every process: no address, no hash seed, no time in it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agenteval.cache import describe_agent

REPO = Path(__file__).resolve().parents[2]


def digests() -> dict[str, str]:
    """The identity of a runner of each framework, built from the adapters' test agents."""
    from agents import Agent, function_tool
    from google.adk.agents import LlmAgent
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.models.function import FunctionModel

    from agenteval.adapters.adk import ADKRunner
    from agenteval.adapters.langgraph import LangGraphRunner
    from agenteval.adapters.openai_agents import OpenAIAgentsRunner
    from agenteval.adapters.pydantic_ai import PydanticAIRunner
    from tests.adapters.adk._models import FunctionLlm
    from tests.adapters.adk.test_runner import get_forecast, get_weather, weather_reply
    from tests.adapters.langgraph.test_runner import calculator_graph
    from tests.adapters.openai_agents.test_runner import weather_model
    from tests.adapters.pydantic_ai.test_runner import _weather_model

    runners = {
        "adk": ADKRunner(
            LlmAgent(
                name="w", model=FunctionLlm(reply=weather_reply), instruction="Hi.", tools=[get_weather, get_forecast]
            )
        ),
        "pydantic-ai": PydanticAIRunner(PydanticAgent(FunctionModel(_weather_model), tools=[get_weather])),
        "langgraph": LangGraphRunner(calculator_graph()),
        "openai-agents": OpenAIAgentsRunner(
            Agent(name="w", instructions="Hi.", model=weather_model(), tools=[function_tool(get_forecast)])
        ),
    }
    return {name: describe_agent(runner).digest for name, runner in runners.items()}


def test_each_frameworks_identity_is_the_same_in_another_process() -> None:
    script = (
        "import json; from tests.adapters.test_identity_across_processes import digests; print(json.dumps(digests()))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env={**os.environ, "PYTHONHASHSEED": "7"},
        capture_output=True,
        text=True,
        timeout=110,
        check=True,
    )

    assert json.loads(result.stdout.splitlines()[-1]) == digests()
