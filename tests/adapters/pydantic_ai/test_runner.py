"""PydanticAIRunner against a real pydantic-ai Agent driven by pydantic-ai's own FunctionModel."""

from __future__ import annotations

import asyncio
import importlib
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import Hooks
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturn,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

import agenteval as ae
from agenteval.adapters.pydantic_ai import PydanticAIRunner
from agenteval.errors import MissingDependencyError
from agenteval.evalset.models import ArgumentsMatch, MockTool, ToolMock
from agenteval.runner.toolmock import ToolMocks

APP = "weather-app"
PARIS = ae.Tool(name="get_weather", arguments={"city": "Paris"})
TOMORROW = ae.Tool(name="get_forecast", arguments={"city": "Paris", "days": 1})


def _prompts(messages: list[ModelMessage]) -> list[str]:
    return [
        part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart) and isinstance(part.content, str)
    ]


def _weather_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls the tool the latest question needs, then answers from what the tools returned."""
    question = _prompts(messages)[-1]
    if "explode" in question:  # a tool that does not exist, again and again, until pydantic-ai gives up
        return ModelResponse(parts=[ToolCallPart("no_such_tool", {}, tool_call_id=f"bad-{len(messages)}")])
    returns = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
    if returns:
        return ModelResponse(
            parts=[TextPart(" ".join(str(part.content) for part in returns))],
            usage=RequestUsage(input_tokens=20, output_tokens=5),
        )
    if "tomorrow" in question:
        call = ToolCallPart("get_forecast", {"city": "Paris", "days": 1}, tool_call_id=f"fc-{len(messages)}")
    elif "weather" in question:
        call = ToolCallPart("get_weather", {"city": "Paris"}, tool_call_id=f"wx-{len(messages)}")
    elif "both" in question.lower():
        return ModelResponse(
            parts=[
                ToolCallPart("get_weather", {"city": "Paris"}, tool_call_id="both-1"),
                ToolCallPart("get_forecast", {"city": "Paris", "days": 1}, tool_call_id="both-2"),
            ],
        )
    else:
        return ModelResponse(parts=[TextPart(f"You said: {question}")])
    return ModelResponse(parts=[call], usage=RequestUsage(input_tokens=10, output_tokens=3))


@dataclass
class WeatherDeps:
    user: str
    units: str
    seen_by_tools: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class WeatherAgent:
    agent: Agent[WeatherDeps | None, str]
    lookups: list[str] = field(default_factory=list)
    """Side effects of the real tools: one entry per real call."""


def weather_agent(*, capabilities: Sequence[Hooks[Any]] = ()) -> WeatherAgent:
    built = WeatherAgent(
        Agent(
            FunctionModel(_weather_model),
            deps_type=WeatherDeps | None,
            system_prompt="You report the weather.",
            name="weather",
            capabilities=list(capabilities),
        )
    )

    @built.agent.tool
    def get_weather(ctx: RunContext[WeatherDeps | None], city: str) -> str:
        built.lookups.append(f"weather {city}")
        if ctx.deps is not None:
            ctx.deps.seen_by_tools.append((ctx.deps.user, ctx.deps.units))
        return f"Sunny in {city}."

    @built.agent.tool_plain
    def get_forecast(city: str, days: int) -> str:
        built.lookups.append(f"forecast {city} {days}")
        return f"Rain in {city} in {days} day(s)."

    return built


def _request(text: str, session: str = "s1", **fields: Any) -> ae.TurnRequest:
    return ae.TurnRequest(message=ae.Message.user(text), session_id=session, **fields)


def _two_turn_set() -> ae.EvalSet:
    return ae.EvalSet.of(
        "weather",
        [
            ae.EvalCase.of(
                "follow_up",
                ae.Invocation.of("What is the weather in Paris?", "Sunny in Paris.", tools=[PARIS]),
                ae.Invocation.of("And tomorrow?", "Rain in Paris in 1 day(s).", tools=[TOMORROW]),
            )
        ],
    )


METRICS = [ae.EvalMetric.tool_trajectory(), ae.EvalMetric.final_response()]


def test_a_two_turn_case_with_two_tool_calls_passes_the_trajectory_and_response_metrics() -> None:
    weather = weather_agent()

    report = ae.Evaluator(APP, PydanticAIRunner(weather.agent), progress=False).evaluate(
        _two_turn_set(), metrics=METRICS
    )

    assert report.overall_status is ae.EvalStatus.PASSED, report.cases["error_message"].tolist()
    assert list(report.turns["actual_response"]) == ["Sunny in Paris.", "Rain in Paris in 1 day(s)."]
    (case,) = report.result.eval_case_results
    calls = [
        (tool.id, tool.name, tool.arguments, tool.result)
        for turn in case.eval_metric_result_per_invocation
        if turn.actual_invocation
        for tool in turn.actual_invocation.tools
    ]
    assert calls == [
        ("wx-1", "get_weather", {"city": "Paris"}, "Sunny in Paris."),
        ("fc-5", "get_forecast", {"city": "Paris", "days": 1}, "Rain in Paris in 1 day(s)."),
    ]
    assert weather.lookups == ["weather Paris", "forecast Paris 1"]


@pytest.mark.asyncio
async def test_a_turn_records_model_usage_model_name_and_the_run_id() -> None:
    run_ids: list[str | None] = []
    hooks: Hooks[Any] = Hooks()
    hooks.on.before_run(lambda ctx: run_ids.append(ctx.run_id))
    runner = PydanticAIRunner(weather_agent(capabilities=[hooks]).agent)

    result = await runner.run(_request("What is the weather in Paris?"))

    trace = result.execution_trace
    assert trace is not None and trace.steps is not None
    assert [(step.node_type, step.node_id, step.usage) for step in trace.steps] == [
        ("llm", "function:_weather_model:", {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}),
        ("llm", "function:_weather_model:", {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}),
    ]
    assert trace.usage == {"prompt_tokens": 30, "completion_tokens": 8, "total_tokens": 38}
    assert trace.root_agent_name == "weather"
    assert run_ids == [result.invocation_id]


def _mocked_case(rule: MockTool, eval_id: str = "mocked") -> ae.EvalCase:
    return ae.EvalCase(
        eval_id=eval_id,
        conversation=[
            ae.Invocation(
                user_content=ae.Message.user("What is the weather in Paris?"),
                final_response=ae.Message.assistant("Mocked: hail."),
                tools=[PARIS],
                tool_mock=ToolMock(actual=[rule]),
            )
        ],
        session_input=ae.SessionInput(user_id="u"),
    )


def test_a_mocked_tool_is_answered_from_the_rule_and_never_called() -> None:
    weather = weather_agent()
    rule = MockTool(name="get_weather", arguments=ArgumentsMatch(expected={"city": "Paris"}), result="Mocked: hail.")

    report = ae.Evaluator(APP, PydanticAIRunner(weather.agent), progress=False).evaluate(
        ae.EvalSet.of("mocks", [_mocked_case(rule)]), metrics=METRICS
    )

    assert report.overall_status is ae.EvalStatus.PASSED, report.cases["error_message"].tolist()
    assert weather.lookups == []
    (case,) = report.result.eval_case_results
    (turn,) = case.eval_metric_result_per_invocation
    assert turn.actual_invocation is not None
    recorded = [(tool.id, tool.name, tool.result) for tool in turn.actual_invocation.tools]
    assert recorded == [("wx-1", "get_weather", "Mocked: hail.")]


def test_a_mocked_call_no_rule_matches_fails_its_case_without_calling_the_tool() -> None:
    weather = weather_agent()
    rule = MockTool(name="get_weather", arguments=ArgumentsMatch(expected={"city": "Rome"}), result="Sun.")

    report = ae.Evaluator(APP, PydanticAIRunner(weather.agent), progress=False).evaluate(
        ae.EvalSet.of("mocks", [_mocked_case(rule)]), metrics=METRICS
    )

    assert list(report.cases["status"]) == ["failed"]
    assert 'tool "get_weather" configured for mock but no rule matched' in report.cases["error_message"][0]
    assert weather.lookups == []


def test_a_framework_error_fails_only_its_case_with_the_framework_exception_type() -> None:
    eval_set = ae.EvalSet.of(
        "errors",
        [
            ae.EvalCase.of("broken", "Please explode.", expect="never"),
            ae.EvalCase.of("fine", "What is the weather in Paris?", expect="Sunny in Paris.", tools=[PARIS]),
        ],
    )

    report = ae.Evaluator(APP, PydanticAIRunner(weather_agent().agent), progress=False).evaluate(
        eval_set, metrics=METRICS
    )

    cases = report.cases.set_index("eval_id")
    assert cases.loc["fine", "status"] == "passed"
    assert cases.loc["broken", "status"] == "failed"
    assert cases.loc["broken", "error_type"] == "agent"
    assert "UnexpectedModelBehavior: Tool 'no_such_tool' exceeded max retries" in str(
        cases.loc["broken", "error_message"]
    )


async def _echo_history_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    await asyncio.sleep(0)  # let the other sessions' runs interleave with this one
    return ModelResponse(parts=[TextPart(" | ".join(_prompts(messages)))])


def test_parallel_inference_keeps_the_sessions_of_twenty_cases_apart() -> None:
    cases = [
        ae.EvalCase.of(
            f"case{i}",
            ae.Invocation.of(f"I am {i}.", f"I am {i}."),
            ae.Invocation.of("Who am I?", f"I am {i}. | Who am I?"),
        )
        for i in range(20)
    ]
    runner = PydanticAIRunner(Agent(FunctionModel(_echo_history_model)))

    report = ae.Evaluator(APP, runner, progress=False, parallelism=20).evaluate(
        ae.EvalSet.of("sessions", cases), metrics=[ae.EvalMetric.final_response()]
    )

    assert report.overall_status is ae.EvalStatus.PASSED, report.cases["error_message"].tolist()
    assert runner._sessions == {}  # every session was released when its case ended


@pytest.mark.asyncio
async def test_end_session_forgets_the_history() -> None:
    runner = PydanticAIRunner(Agent(FunctionModel(_echo_history_model)))
    await runner.run(_request("first"))
    runner.end_session("s1")

    result = await runner.run(_request("second"))

    assert result.final_response is not None and result.final_response.content == "second"


@pytest.mark.asyncio
async def test_deps_are_built_once_per_session_from_its_user_id_and_state() -> None:
    weather = weather_agent()
    built: list[WeatherDeps] = []

    def deps(request: ae.TurnRequest) -> WeatherDeps:
        built.append(WeatherDeps(user=request.user_id, units=request.state["units"]))
        return built[-1]

    runner = PydanticAIRunner(weather.agent, deps=deps)
    for text in ("What is the weather in Paris?", "And the weather now?"):
        await runner.run(_request(text, user_id="ann", state={"units": "metric"}))
    await runner.run(_request("What is the weather in Paris?", session="s2", user_id="bob", state={"units": "si"}))

    assert [(d.user, d.units, d.seen_by_tools) for d in built] == [
        ("ann", "metric", [("ann", "metric"), ("ann", "metric")]),
        ("bob", "si", [("bob", "si")]),
    ]


@pytest.mark.asyncio
async def test_context_messages_reach_every_model_request_after_the_system_prompt_but_not_the_history() -> None:
    seen: list[list[tuple[str, str]]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(
            [
                (type(part).__name__, str(getattr(part, "content", "")))
                for message in messages
                for part in message.parts
                if isinstance(part, SystemPromptPart | UserPromptPart | TextPart)
            ]
        )
        return ModelResponse(parts=[TextPart(f"reply {len(seen)}")])

    runner = PydanticAIRunner(Agent(FunctionModel(model), system_prompt="Be brief."))
    context = [ae.Message.system("The user is a pilot."), ae.Message.user("Hi"), ae.Message.assistant("Hello")]
    for text in ("one", "two"):
        await runner.run(_request(text, context_messages=context))

    injected = [
        ("SystemPromptPart", "The user is a pilot."),
        ("UserPromptPart", "Hi"),
        ("TextPart", "Hello"),
    ]
    assert seen == [
        [("SystemPromptPart", "Be brief."), *injected, ("UserPromptPart", "one")],
        [
            ("SystemPromptPart", "Be brief."),
            *injected,
            ("UserPromptPart", "one"),
            ("TextPart", "reply 1"),
            ("UserPromptPart", "two"),
        ],
    ]


def test_a_context_message_the_runner_cannot_show_fails_the_case_saying_so() -> None:
    case = ae.EvalCase.of("tool_context", "hi", expect="You said: hi", context=[ae.Message(role="tool", content="x")])

    report = ae.Evaluator(APP, PydanticAIRunner(weather_agent().agent), progress=False).evaluate(
        ae.EvalSet.of("context", [case]), metrics=METRICS
    )

    assert "context message 0 has role 'tool'" in report.cases["error_message"][0]


@pytest.mark.asyncio
async def test_concurrent_tool_calls_are_recorded_in_the_order_the_model_asked_for_them() -> None:
    hooks: Hooks[Any] = Hooks()

    @hooks.on.before_tool_execute
    def slow_first_call(ctx: RunContext[Any], /, *, call: ToolCallPart, tool_def: Any, args: Any) -> Any:
        # A plain hook runs in a worker thread: delaying the first call lets the second start first.
        if call.tool_call_id == "both-1":
            time.sleep(0.2)
        return args

    agent = Agent(FunctionModel(_weather_model), capabilities=[hooks])

    @agent.tool_plain
    def get_weather(city: str) -> str:
        return f"Sunny in {city}."

    @agent.tool_plain
    def get_forecast(city: str, days: int) -> str:
        return f"Rain in {city}."

    result = await PydanticAIRunner(agent).run(_request("Both, please."))

    assert [(tool.id, tool.name) for tool in result.tools] == [("both-1", "get_weather"), ("both-2", "get_forecast")]


@pytest.mark.asyncio
async def test_a_tool_return_is_recorded_as_its_return_value() -> None:
    agent = Agent(FunctionModel(_weather_model))

    @agent.tool_plain
    def get_weather(city: str) -> ToolReturn:
        return ToolReturn(return_value={"sky": "clear"}, content="Look at the sky.")

    result = await PydanticAIRunner(agent).run(_request("What is the weather in Paris?"))

    assert [(tool.name, tool.result) for tool in result.tools] == [("get_weather", {"sky": "clear"})]


def test_without_pydantic_ai_the_import_error_says_which_extra_installs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)
    monkeypatch.delitem(sys.modules, "agenteval.adapters.pydantic_ai")

    with pytest.raises(MissingDependencyError, match=r"pip install 'agenteval\[pydantic-ai\]'"):
        importlib.import_module("agenteval.adapters.pydantic_ai")


@pytest.mark.asyncio
async def test_arguments_are_recorded_and_matched_as_the_model_sent_them() -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if any(isinstance(part, ToolReturnPart) for part in messages[-1].parts):
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("get_forecast", '{"city": "Paris"}', tool_call_id="c1")])

    agent = Agent(FunctionModel(model))

    @agent.tool_plain
    def get_forecast(city: str, days: int = 3) -> str:
        return f"Rain in {city} for {days} days."

    rule = MockTool(name="get_forecast", arguments=ArgumentsMatch(expected={"city": "Paris"}), result="Mocked.")
    runner = PydanticAIRunner(agent)
    real = await runner.run(_request("forecast?"))
    mocked = await runner.run(_request("forecast?", session="s2", tool_mocks=ToolMocks([rule])))

    assert [(tool.arguments, tool.result) for tool in real.tools] == [({"city": "Paris"}, "Rain in Paris for 3 days.")]
    assert [(tool.arguments, tool.result) for tool in mocked.tools] == [({"city": "Paris"}, "Mocked.")]


def test_the_runner_refuses_what_is_not_a_pydantic_ai_agent() -> None:
    with pytest.raises(ae.ConfigError, match="PydanticAIRunner needs a pydantic-ai Agent, got function"):
        PydanticAIRunner(_weather_model)  # type: ignore[arg-type]
