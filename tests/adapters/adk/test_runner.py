"""ADKRunner against the real google-adk: real LlmAgents and tools, driven by a scripted BaseLlm."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins import BasePlugin
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

import agenteval as ae
from agenteval.adapters.adk import ADKRunner
from agenteval.errors import AgentFrameworkError, ToolMockError
from agenteval.evalset.message import Role
from agenteval.evalset.models import ArgumentsMatch, MockTool, ToolMock
from agenteval.runner.base import TurnRequest, end_session
from agenteval.runner.toolmock import ToolMocks
from tests.adapters.adk._models import FunctionLlm, call, calls, function_responses, say, texts, user_texts

METRICS = [ae.EvalMetric.tool_trajectory(results="exact"), ae.EvalMetric.final_response()]


class ModelOverloadedError(Exception):
    """What a model provider raises."""


booked: list[str] = []


def get_weather(city: str) -> dict[str, Any]:
    """The weather now."""
    return {"sky": "sunny", "city": city}


def get_forecast(city: str, days: int) -> dict[str, Any]:
    """The weather in a few days."""
    return {"sky": "rain", "city": city, "days": days}


def book_flight(city: str) -> str:
    """Book a flight: a side effect a mock must prevent."""
    booked.append(city)
    return f"booked {city}"


async def weather_reply(request: LlmRequest) -> LlmResponse:
    await asyncio.sleep(0)  # let parallel sessions interleave
    responses = function_responses(request)
    if responses:
        return say("; ".join(_describe(response) for response in responses))
    text = user_texts(request)[-1]
    if "explode" in text:
        raise ModelOverloadedError("the model is overloaded")
    if "tomorrow" in text:
        return call("get_forecast", city="Paris", days=1)
    if "book" in text:
        return call("book_flight", city="Rome")
    if "both" in text:
        return calls(("get_weather", {"city": "Paris"}), ("get_forecast", {"city": "Oslo", "days": 2}))
    return call("get_weather", city="Paris")


def _describe(response: types.FunctionResponse) -> str:
    result = response.response or {}
    if "sky" in result:
        return f"{result['sky']} in {result['city']}"
    return str(result.get("result", result))


def weather_agent(**fields: Any) -> LlmAgent:
    return LlmAgent(
        name="weather",
        model=FunctionLlm(reply=weather_reply),
        tools=[get_weather, get_forecast, book_flight],
        **fields,
    )


def _request(text: str, session_id: str = "s1", **fields: Any) -> TurnRequest:
    return TurnRequest(
        message=ae.Message.user(text), session_id=session_id, user_id=fields.pop("user_id", "u"), **fields
    )


def test_a_two_turn_case_with_two_tool_calls_passes_trajectory_and_final_response() -> None:
    weather = ae.Tool(name="get_weather", arguments={"city": "Paris"}, result={"sky": "sunny", "city": "Paris"})
    forecast = ae.Tool(
        name="get_forecast", arguments={"city": "Paris", "days": 1}, result={"sky": "rain", "city": "Paris", "days": 1}
    )
    eval_set = ae.EvalSet.of(
        "weather",
        [
            ae.EvalCase.of(
                "paris",
                ae.Invocation.of("Weather in Paris?", "sunny in Paris", tools=[weather]),
                ae.Invocation.of("And tomorrow?", "rain in Paris", tools=[forecast]),
            )
        ],
    )

    report = ae.Evaluator("weather-app", ADKRunner(weather_agent())).evaluate(eval_set, metrics=METRICS)

    assert report.overall_status is ae.EvalStatus.PASSED, report.cases.to_dict("records")
    assert list(report.turns["actual_response"]) == ["sunny in Paris", "rain in Paris"]
    first, second = (
        per.actual_invocation for per in report.result.eval_case_results[0].eval_metric_result_per_invocation
    )
    assert first is not None and second is not None
    (call_1,) = first.tools
    (call_2,) = second.tools
    assert re.fullmatch(r"adk-[0-9a-f-]+", call_1.id) and call_1.id != call_2.id
    assert first.invocation_id.startswith("e-") and first.invocation_id != second.invocation_id


@pytest.mark.asyncio
async def test_parallel_calls_in_one_response_are_recorded_in_order_with_their_own_results() -> None:
    runner = ADKRunner(weather_agent())

    result = await runner.run(_request("Weather here and there, both?"))

    assert [(tool.name, tool.arguments, tool.result) for tool in result.tools] == [
        ("get_weather", {"city": "Paris"}, {"sky": "sunny", "city": "Paris"}),
        ("get_forecast", {"city": "Oslo", "days": 2}, {"sky": "rain", "city": "Oslo", "days": 2}),
    ]
    assert result.final_response is not None and result.final_response.content == "sunny in Paris; rain in Oslo"


@pytest.mark.asyncio
async def test_a_result_that_is_not_a_dict_is_recorded_as_adk_sends_it() -> None:
    booked.clear()

    result = await ADKRunner(weather_agent()).run(_request("book a flight to Rome"))

    assert [(tool.name, tool.result) for tool in result.tools] == [("book_flight", {"result": "booked Rome"})]
    assert booked == ["Rome"]


def _mocked_case(rule: MockTool, eval_id: str = "mocked") -> ae.EvalCase:
    turn = ae.Invocation.of(
        "Please book a flight to Rome", "booked (mock)", tools=[ae.Tool(name="book_flight", arguments={"city": "Rome"})]
    )
    turn.tool_mock = ToolMock(actual=[rule])
    return ae.EvalCase.of(eval_id, turn)


def test_a_mocked_tool_answers_from_the_eval_set_and_never_runs() -> None:
    booked.clear()
    rule = MockTool(name="book_flight", arguments=ArgumentsMatch(expected={"city": "Rome"}), result="booked (mock)")
    eval_set = ae.EvalSet.of("mocks", [_mocked_case(rule)])

    report = ae.Evaluator("weather-app", ADKRunner(weather_agent())).evaluate(eval_set, metrics=METRICS[1:])

    assert report.overall_status is ae.EvalStatus.PASSED, report.cases.to_dict("records")
    assert booked == []
    (per_turn,) = report.result.eval_case_results[0].eval_metric_result_per_invocation
    assert per_turn.actual_invocation is not None
    (recorded,) = per_turn.actual_invocation.tools
    assert (recorded.name, recorded.arguments, recorded.result) == (
        "book_flight",
        {"city": "Rome"},
        {"result": "booked (mock)"},
    )


def test_a_call_no_mock_rule_matches_fails_its_case_with_the_tool_mock_error() -> None:
    booked.clear()
    rule = MockTool(name="book_flight", arguments=ArgumentsMatch(expected={"city": "Oslo"}), result="booked (mock)")
    eval_set = ae.EvalSet.of("mocks", [_mocked_case(rule)])

    report = ae.Evaluator("weather-app", ADKRunner(weather_agent())).evaluate(eval_set, metrics=METRICS[1:])

    (message,) = report.cases["error_message"]
    assert message.startswith('tool "book_flight" configured for mock but no rule matched'), message
    assert booked == []


def test_an_agent_error_fails_only_its_case_with_the_frameworks_exception_type() -> None:
    eval_set = ae.EvalSet.of(
        "errors",
        [
            ae.EvalCase.of("boom", "explode, please", expect="never"),
            ae.EvalCase.of("fine", "Weather in Paris?", expect="sunny in Paris"),
        ],
    )

    report = ae.Evaluator("weather-app", ADKRunner(weather_agent())).evaluate(eval_set, metrics=METRICS[1:])

    rows = report.cases.set_index("eval_id")
    assert rows.loc["fine", "status"] == "passed"
    assert rows.loc["boom", "status"] == "failed"
    assert rows.loc["boom", "error_type"] == "agent"
    assert "ModelOverloadedError: the model is overloaded" in str(rows.loc["boom", "error_message"])


@pytest.mark.asyncio
async def test_a_tool_error_fails_the_turn_with_the_tools_exception() -> None:
    def lookup(city: str) -> str:
        """Fails."""
        raise LookupError(f"no such city: {city}")

    async def reply(request: LlmRequest) -> LlmResponse:
        return say("done") if function_responses(request) else call("lookup", city="Atlantis")

    runner = ADKRunner(LlmAgent(name="a", model=FunctionLlm(reply=reply), tools=[lookup]))

    with pytest.raises(LookupError, match="no such city: Atlantis"):
        await runner.run(_request("where?"))


@pytest.mark.asyncio
async def test_an_error_event_fails_the_turn() -> None:
    async def reply(request: LlmRequest) -> LlmResponse:
        return LlmResponse(error_code="SAFETY", error_message="blocked by safety filters")

    runner = ADKRunner(LlmAgent(name="careful", model=FunctionLlm(reply=reply)))

    with pytest.raises(
        AgentFrameworkError, match="ADK reported an error in careful: SAFETY: blocked by safety filters"
    ):
        await runner.run(_request("hello"))


def test_parallel_cases_keep_their_sessions_apart() -> None:
    async def reply(request: LlmRequest) -> LlmResponse:
        for _ in range(3):
            await asyncio.sleep(0)
        said = user_texts(request)
        if said[-1].startswith("remember"):
            return say("noted")
        return say(" | ".join(said[:-1]))

    cases = [
        ae.EvalCase.of(
            f"case-{index}",
            ae.Invocation.of(f"remember {index}", "noted"),
            ae.Invocation.of("what did I say?", f"remember {index}"),
        )
        for index in range(20)
    ]
    runner = ADKRunner(LlmAgent(name="memory", model=FunctionLlm(reply=reply)))

    report = ae.Evaluator("memory-app", runner, parallelism=20).evaluate(
        ae.EvalSet.of("memory", cases), metrics=METRICS[1:]
    )

    assert report.overall_status is ae.EvalStatus.PASSED, report.cases.to_dict("records")
    assert len(set(report.cases["session_id"])) == 20
    assert runner._sessions == {}


@pytest.mark.asyncio
async def test_model_names_and_token_usage_are_recorded_per_model_response() -> None:
    async def reply(request: LlmRequest) -> LlmResponse:
        if function_responses(request):
            return say("sunny", usage=(30, 4))
        return call("get_weather", usage=(20, 5), model_version="gemini-x-001", city="Paris")

    runner = ADKRunner(LlmAgent(name="w", model=FunctionLlm(model="my-model", reply=reply), tools=[get_weather]))

    result = await runner.run(_request("weather?"))

    trace = result.execution_trace
    assert trace is not None and trace.steps is not None
    assert [(step.node_id, step.node_type, step.usage) for step in trace.steps] == [
        ("gemini-x-001", "llm", {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}),
        ("my-model", "llm", {"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34}),
    ]
    assert trace.usage == {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59}


@pytest.mark.asyncio
async def test_thinking_tokens_count_as_completion_tokens() -> None:
    async def reply(request: LlmRequest) -> LlmResponse:
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=7, candidates_token_count=2, thoughts_token_count=5, total_token_count=14
        )
        return LlmResponse(content=types.Content(role="model", parts=[types.Part(text="hi")]), usage_metadata=usage)

    result = await ADKRunner(LlmAgent(name="w", model=FunctionLlm(reply=reply))).run(_request("hello"))

    assert result.execution_trace is not None
    assert result.execution_trace.usage == {"prompt_tokens": 7, "completion_tokens": 7, "total_tokens": 14}


def test_the_session_starts_from_the_cases_user_and_state() -> None:
    def visit(tool_context: ToolContext) -> str:
        """Count the visits of this session's user."""
        tool_context.state["visits"] = tool_context.state["visits"] + 1
        return f"{tool_context.user_id} in {tool_context.state['units']}, visit {tool_context.state['visits']}"

    async def reply(request: LlmRequest) -> LlmResponse:
        responses = function_responses(request)
        return say(str((responses[0].response or {})["result"])) if responses else call("visit")

    runner = ADKRunner(LlmAgent(name="v", model=FunctionLlm(reply=reply), tools=[visit]))
    case = ae.EvalCase.of(
        "visits",
        ae.Invocation.of("hi", "ada in metric, visit 1"),
        ae.Invocation.of("hi again", "ada in metric, visit 2"),
        user_id="ada",
        state={"units": "metric", "visits": 0},
    )

    report = ae.Evaluator("visits-app", runner).evaluate(ae.EvalSet.of("visits", [case]), metrics=METRICS[1:])

    assert report.overall_status is ae.EvalStatus.PASSED, report.turns["actual_response"].tolist()
    assert case.session_input is not None and case.session_input.state == {"units": "metric", "visits": 0}


@pytest.mark.asyncio
async def test_context_messages_reach_every_model_call_without_entering_the_history() -> None:
    model = FunctionLlm(reply=weather_reply)
    runner = ADKRunner(LlmAgent(name="ctx", model=model, instruction="Be brief.", tools=[get_weather]))
    context = [
        ae.Message.system("Today is Monday."),
        ae.Message.user("I live in Paris."),
        ae.Message.assistant("Noted: Paris."),
    ]

    await runner.run(_request("Weather?", context_messages=context))
    await runner.run(_request("Weather again?", context_messages=context))

    assert len(model.requests) == 4
    for request in model.requests:
        assert request.config.system_instruction is not None
        instruction = str(request.config.system_instruction)
        assert instruction.startswith("Be brief.") and instruction.endswith("Today is Monday.")
        assert [(content.role, texts(content)) for content in request.contents[:2]] == [
            ("user", "I live in Paris."),
            ("model", "Noted: Paris."),
        ]
    last = model.requests[-1]
    assert [texts(content) for content in last.contents].count("I live in Paris.") == 1
    assert user_texts(last)[1:3] == ["Weather?", "Weather again?"]


@pytest.mark.asyncio
async def test_a_tool_context_message_is_refused_with_a_clear_error() -> None:
    runner = ADKRunner(weather_agent())
    tool_message = ae.Message(role=Role.TOOL, content="{}")

    with pytest.raises(ae.ConfigError, match="a tool message cannot be injected"):
        await runner.run(_request("Weather?", context_messages=[tool_message]))


@pytest.mark.asyncio
async def test_end_session_deletes_the_adk_session() -> None:
    runner = ADKRunner(weather_agent(), app_name="my-app")
    service = runner.runner.session_service

    await runner.run(_request("Weather?", session_id="eval-1", user_id="ada"))
    (session,) = (await service.list_sessions(app_name="my-app", user_id="ada")).sessions
    assert session.state == {}

    await end_session(runner, "eval-1")

    assert (await service.list_sessions(app_name="my-app", user_id="ada")).sessions == []
    await end_session(runner, "never-started")


class _Audit(BasePlugin):
    def __init__(self) -> None:
        super().__init__(name="audit")
        self.tools: list[str] = []

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        self.tools.append(tool.name)
        return None


@pytest.mark.asyncio
async def test_an_existing_runner_keeps_its_session_service_plugins_and_callbacks() -> None:
    booked.clear()
    seen_by_agent: list[str] = []

    def agent_callback(tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> None:
        seen_by_agent.append(tool.name)

    audit = _Audit()
    service = InMemorySessionService()
    adk_runner = Runner(
        app_name="existing",
        agent=weather_agent(before_tool_callback=agent_callback),
        session_service=service,
    )
    adk_runner.plugin_manager.register_plugin(audit)
    runner = ADKRunner(adk_runner)
    rule = MockTool(name="book_flight", arguments=ArgumentsMatch(ignore=True), result="mocked")

    weather = await runner.run(_request("Weather?", session_id="a"))
    mocked = await runner.run(_request("book it", session_id="b", tool_mocks=ToolMocks([rule])))

    assert weather.final_response is not None and weather.final_response.content == "sunny in Paris"
    assert mocked.final_response is not None and mocked.final_response.content == "mocked"
    # The real tool ran through every callback; the mocked one was answered before any of them.
    assert audit.tools == seen_by_agent == ["get_weather"]
    assert booked == []
    assert len((await service.list_sessions(app_name="existing", user_id="u")).sessions) == 2
    assert ADKRunner(adk_runner)._plugin is runner._plugin
    assert [plugin.name for plugin in adk_runner.plugin_manager.plugins] == ["agenteval", "audit"]


@pytest.mark.asyncio
async def test_a_mock_with_no_matching_rule_raises_the_tool_mock_error_itself() -> None:
    rule = MockTool(name="book_flight", arguments=ArgumentsMatch(expected={"city": "Oslo"}), result="x")

    with pytest.raises(ToolMockError, match="no rule matched"):
        await ADKRunner(weather_agent()).run(_request("book it", tool_mocks=ToolMocks([rule])))


def _researcher_root() -> LlmAgent:
    async def researcher_reply(request: LlmRequest) -> LlmResponse:
        responses = function_responses(request)
        return (
            say(f"found: {(responses[0].response or {})['result']}") if responses else call("book_flight", city="Rome")
        )

    async def root_reply(request: LlmRequest) -> LlmResponse:
        responses = function_responses(request)
        return say(str((responses[0].response or {})["result"])) if responses else call("researcher", request="Rome")

    researcher = LlmAgent(
        name="researcher", description="Researches.", model=FunctionLlm(reply=researcher_reply), tools=[book_flight]
    )
    return LlmAgent(name="root", model=FunctionLlm(reply=root_reply), tools=[AgentTool(researcher)])


# AgentTool hands its runner the parent's plugins through the argument ADK itself deprecates.
@pytest.mark.filterwarnings("ignore:The `plugins` argument is deprecated:DeprecationWarning")
@pytest.mark.asyncio
async def test_an_agent_tools_own_calls_are_not_recorded_but_are_mocked() -> None:
    booked.clear()
    runner = ADKRunner(_researcher_root())
    rule = MockTool(name="book_flight", arguments=ArgumentsMatch(expected={"city": "Rome"}), result="mocked")

    real = await runner.run(_request("research Rome", session_id="real"))
    mocked = await runner.run(_request("research Rome", session_id="mocked", tool_mocks=ToolMocks([rule])))

    assert [(tool.name, tool.result) for tool in real.tools] == [("researcher", {"result": "found: booked Rome"})]
    assert [(tool.name, tool.result) for tool in mocked.tools] == [("researcher", {"result": "found: mocked"})]
    assert booked == ["Rome"]


def test_something_other_than_an_agent_or_runner_is_refused() -> None:
    with pytest.raises(ae.ConfigError, match="ADKRunner wraps an ADK agent"):
        ADKRunner(weather_reply)  # type: ignore[arg-type]


def test_a_runner_with_a_foreign_plugin_named_agenteval_is_refused() -> None:
    adk_runner = Runner(app_name="x", agent=weather_agent(), session_service=InMemorySessionService())
    adk_runner.plugin_manager.register_plugin(BasePlugin(name="agenteval"))

    with pytest.raises(ae.ConfigError, match="already has a plugin named 'agenteval'"):
        ADKRunner(adk_runner)


def test_without_google_adk_the_error_gives_the_install_line() -> None:
    code = "import sys; sys.modules['google.adk'] = None; import agenteval.adapters.adk"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)

    assert done.returncode == 1
    assert "MissingDependencyError: the ADK runner needs the optional package 'google-adk'" in done.stderr
    assert "pip install 'agenteval[adk]'" in done.stderr


def test_a_replayed_tool_answers_from_the_earlier_report_and_never_runs() -> None:
    booked.clear()
    eval_set = ae.EvalSet.of("replay", [ae.EvalCase.of("book", "book me a flight", expect="booked Rome")])
    first = ae.Evaluator("weather-app", ADKRunner(weather_agent()), progress=False).evaluate(
        eval_set, metrics=METRICS[1:]
    )
    assert booked == ["Rome"]

    second = ae.Evaluator("weather-app", ADKRunner(weather_agent()), tool_replay=first, progress=False).evaluate(
        eval_set, metrics=METRICS[1:]
    )

    assert booked == ["Rome"]
    assert second.overall_status is ae.EvalStatus.PASSED, second.cases.to_dict("records")
    calls = second.tool_calls
    assert list(calls["name"]) == ["book_flight"]
    assert list(calls["replayed"]) == [True]
    assert list(calls["result"]) == list(first.tool_calls["result"])
