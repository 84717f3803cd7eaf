"""OpenAIAgentsRunner against the real Agents SDK, driven by an offline model (no network, no tracing)."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from agents import Agent, RunConfig, RunContextWrapper, Usage, function_tool, handoff
from agents.items import TResponseOutputItem
from agents.run_config import CallModelData, ModelInputData
from agents.testing import assistant_message, function_call
from agents.tracing import Trace, TracingProcessor, get_trace_provider, set_trace_provider
from agents.tracing.provider import DefaultTraceProvider
from agents.tracing.spans import Span
from pydantic import BaseModel

import agenteval as ae
from agenteval.adapters.openai_agents import OpenAIAgentsRunner
from agenteval.errors import MissingDependencyError
from agenteval.evalset.message import Role
from agenteval.evalset.models import ArgumentsMatch, MockTool, ToolMock
from agenteval.runner.toolmock import ToolMocks
from tests.adapters.openai_agents._model import FunctionModel, user_texts

METRICS = [ae.EvalMetric.tool_trajectory(), ae.EvalMetric.final_response()]
USAGE = Usage(requests=1, input_tokens=7, output_tokens=3, total_tokens=10)


# ------------------------------------------------------------------------------------------------ the agent under test


def weather_model(**options: Any) -> FunctionModel:
    """Asks for the weather of each city the user names (``in X``, ``and Y``), then reports it.

    A message naming no city is answered with the user messages of the conversation so far; one
    asking for a forecast calls a tool the agent does not have.
    """

    def respond(items: list[dict[str, Any]]) -> list[TResponseOutputItem]:
        if _answers_weather_call(items):
            return [assistant_message(_report(items))]
        text = user_texts(items)[-1]
        if "forecast" in text:
            return [function_call("get_forecast", {"city": "Paris"}, call_id="call-forecast")]
        cities = re.findall(r"\b(?:in|and) ([A-Z]\w*)", text)
        if not cities:
            return [assistant_message("You asked: " + " / ".join(user_texts(items)[:-1]))]
        turn = len(user_texts(items))
        return [
            function_call("get_weather", {"city": city}, call_id=f"call-{turn}-{index}")
            for index, city in enumerate(cities)
        ]

    return FunctionModel(respond, **options)


def _answers_weather_call(items: list[dict[str, Any]]) -> bool:
    """Whether the input ends with a ``get_weather`` result (not, say, that of a handoff)."""
    last = items[-1]
    if last.get("type") != "function_call_output":
        return False
    names = {item["call_id"]: item["name"] for item in items if item.get("type") == "function_call"}
    return bool(names[last["call_id"]] == "get_weather")


def _report(items: list[dict[str, Any]]) -> str:
    """``City: output`` for each tool call answered since the last user message, in call order."""
    since_user = len(items) - next(i for i, item in enumerate(reversed(items)) if item.get("role") == "user")
    calls = {
        item["call_id"]: item
        for item in items[since_user:]
        if item.get("type") == "function_call" and item["name"] == "get_weather"
    }
    outputs = [item for item in items[since_user:] if item.get("call_id") in calls and "output" in item]
    return ", ".join(
        f"{json.loads(calls[output['call_id']]['arguments'])['city']}: {output['output']}" for output in outputs
    )


SKIES = {"Paris": "sunny", "Rome": "rainy", "Oslo": "snowy"}


@dataclass
class Weather:
    """The weather agent with a real tool, and what the tool really did."""

    model: FunctionModel = field(default_factory=weather_model)
    looked_up: list[str] = field(default_factory=list)

    def agent(self, **options: Any) -> Agent[Any]:
        @function_tool
        async def get_weather(city: str) -> str:
            """The sky over a city."""
            await asyncio.sleep(0)  # let parallel cases interleave
            self.looked_up.append(city)
            return SKIES.get(city, f"clear over {city}")

        return Agent(
            name="weather", instructions="Report the weather.", model=self.model, tools=[get_weather], **options
        )


def weather_call(city: str) -> ae.Tool:
    return ae.Tool(name="get_weather", arguments={"city": city})


def two_turn_case(eval_id: str = "paris_then_rome") -> ae.EvalCase:
    return ae.EvalCase.of(
        eval_id,
        ae.Invocation.of("Weather in Paris?", "Paris: sunny", tools=[weather_call("Paris")]),
        ae.Invocation.of(
            "And in Rome and Oslo?", "Rome: rainy, Oslo: snowy", tools=[weather_call("Rome"), weather_call("Oslo")]
        ),
    )


def evaluate(runner: OpenAIAgentsRunner, *cases: ae.EvalCase, **options: Any) -> ae.EvaluationReport:
    return ae.Evaluator("weather-app", runner, **options).evaluate(ae.EvalSet.of("weather", cases), metrics=METRICS)


def statuses(report: ae.EvaluationReport) -> dict[str, str]:
    return dict(zip(report.cases["eval_id"], report.cases["status"], strict=True))


def recorded_tools(report: ae.EvaluationReport, case: int = 0) -> list[list[tuple[str, str, Any, Any]]]:
    inference = report.inference_results[0][case]
    return [[(t.id, t.name, t.arguments, t.result) for t in turn.tools] for turn in inference.inferences]


def request(text: str, session_id: str = "s1", **fields: Any) -> ae.TurnRequest:
    return ae.TurnRequest(message=ae.Message.user(text), session_id=session_id, **fields)


async def run_turns(runner: OpenAIAgentsRunner, *requests: ae.TurnRequest) -> list[ae.TurnResult]:
    """Run turns one after another, then end their sessions."""
    try:
        return [await runner.run(turn) for turn in requests]
    finally:
        for turn in requests:
            runner.end_session(turn.session_id)


def paris_mock(result: Any, city: str = "Paris") -> ToolMock:
    return ToolMock(
        actual=[MockTool(name="get_weather", arguments=ArgumentsMatch(expected={"city": city}), result=result)]
    )


# ------------------------------------------------------------------------------------------- what the issue requires


def test_a_two_turn_case_with_tool_calls_passes_the_trajectory_and_response_metrics() -> None:
    weather = Weather()

    report = evaluate(OpenAIAgentsRunner(weather.agent()), two_turn_case())

    assert report.passed, report.cases.to_dict("records")
    assert list(report.metrics["status"]) == ["passed", "passed"]
    assert recorded_tools(report) == [
        [("call-1-0", "get_weather", {"city": "Paris"}, "sunny")],
        [
            ("call-2-0", "get_weather", {"city": "Rome"}, "rainy"),
            ("call-2-1", "get_weather", {"city": "Oslo"}, "snowy"),
        ],
    ]
    assert list(report.turns["actual_response"]) == ["Paris: sunny", "Rome: rainy, Oslo: snowy"]


def test_a_mocked_tool_answers_from_the_eval_set_and_the_real_tool_never_runs() -> None:
    weather = Weather()
    case = ae.EvalCase.of("mocked", ae.Invocation.of("Weather in Paris?", "Paris: hail", tools=[weather_call("Paris")]))
    case.conversation[0].tool_mock = paris_mock("hail")

    report = evaluate(OpenAIAgentsRunner(weather.agent()), case)

    assert report.passed, report.cases.to_dict("records")
    assert recorded_tools(report) == [[("call-1-0", "get_weather", {"city": "Paris"}, "hail")]]
    assert weather.looked_up == []


def test_a_mocked_call_no_rule_matches_fails_the_case_without_running_the_tool() -> None:
    weather = Weather()
    case = ae.EvalCase.of("unmatched", "Weather in Paris?", expect="Paris: sunny", tools=[weather_call("Paris")])
    case.conversation[0].tool_mock = paris_mock("sun", city="Rome")

    report = evaluate(OpenAIAgentsRunner(weather.agent()), case)

    assert statuses(report) == {"unmatched": "failed"}
    assert 'tool "get_weather" configured for mock but no rule matched' in str(report.cases.loc[0, "error_message"])
    assert weather.looked_up == []


def test_an_agent_error_fails_only_its_case_and_names_the_sdk_exception() -> None:
    weather = Weather()
    broken = ae.EvalCase.of("forecast", "The forecast for Paris?", expect="?")

    report = evaluate(OpenAIAgentsRunner(weather.agent()), two_turn_case(), broken)

    assert statuses(report) == {"paris_then_rome": "passed", "forecast": "failed"}
    message = str(report.cases.set_index("eval_id").loc["forecast", "error_message"])
    assert "ModelBehaviorError: Tool get_forecast not found in agent weather" in message


def test_twenty_parallel_cases_each_see_only_their_own_history() -> None:
    weather = Weather()
    cases = [
        ae.EvalCase.of(
            f"case{i}",
            ae.Invocation.of(f"Weather in City{i}?", f"City{i}: clear over City{i}", tools=[weather_call(f"City{i}")]),
            ae.Invocation.of("What did I ask?", f"You asked: Weather in City{i}?"),
        )
        for i in range(20)
    ]

    report = evaluate(OpenAIAgentsRunner(weather.agent()), *cases, parallelism=20)

    assert report.passed, report.cases[report.cases["status"] != "passed"].to_dict("records")
    assert sorted(weather.looked_up) == sorted(f"City{i}" for i in range(20))


# ------------------------------------------------------------------------------------- sessions, context, usage, model


@pytest.mark.asyncio
async def test_each_model_response_records_the_model_name_and_token_usage() -> None:
    weather = Weather(weather_model(name="gpt-test", usage=USAGE))

    (result,) = await run_turns(OpenAIAgentsRunner(weather.agent()), request("Weather in Paris?"))

    trace = result.execution_trace
    assert trace is not None and trace.steps is not None
    assert [(step.node_type, step.node_id) for step in trace.steps] == [("llm", "gpt-test"), ("llm", "gpt-test")]
    assert trace.steps[0].usage == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    assert trace.usage == {"prompt_tokens": 14, "completion_tokens": 6, "total_tokens": 20}
    assert (trace.root_agent_name, trace.session_id) == ("weather", "s1")


@pytest.mark.asyncio
async def test_a_model_reporting_no_usage_records_none() -> None:
    (result,) = await run_turns(OpenAIAgentsRunner(Weather().agent()), request("Weather in Paris?"))

    assert result.execution_trace is not None and result.execution_trace.steps is not None
    assert [step.usage for step in result.execution_trace.steps] == [None, None]
    assert result.execution_trace.usage is None


@pytest.mark.asyncio
async def test_a_model_named_by_the_run_config_is_the_one_recorded() -> None:
    model = weather_model(name="from-run-config")
    weather = Weather(model)
    runner = OpenAIAgentsRunner(Agent(name="plain", tools=weather.agent().tools), run_config=RunConfig(model=model))

    (result,) = await run_turns(runner, request("Weather in Paris?"))

    assert result.execution_trace is not None and result.execution_trace.steps is not None
    assert {step.node_id for step in result.execution_trace.steps} == {"from-run-config"}


@dataclass
class Profile:
    user_id: str
    state: dict[str, Any]


def test_the_context_factory_builds_one_run_context_per_session_from_the_session_input() -> None:
    built: list[ae.TurnRequest] = []

    def profile(turn: ae.TurnRequest) -> Profile:
        built.append(turn)
        return Profile(turn.user_id, turn.state)

    @function_tool
    def whoami(ctx: RunContextWrapper[Profile]) -> str:
        """Who the user is and their preferred units."""
        return f"{ctx.context.user_id} ({ctx.context.state['units']})"

    def respond(items: list[dict[str, Any]]) -> list[TResponseOutputItem]:
        if items[-1].get("type") == "function_call_output":
            return [assistant_message(f"You are {items[-1]['output']}")]
        return [function_call("whoami", {}, call_id=f"call-{len(items)}")]

    agent = Agent(name="profile", model=FunctionModel(respond), tools=[whoami])
    case = ae.EvalCase.of(
        "alice",
        ae.Invocation.of("Who am I?", "You are alice (celsius)", tools=[ae.Tool(name="whoami", arguments={})]),
        ae.Invocation.of("Again?", "You are alice (celsius)", tools=[ae.Tool(name="whoami", arguments={})]),
        user_id="alice",
        state={"units": "celsius"},
    )

    report = evaluate(OpenAIAgentsRunner(agent, context_factory=profile), case)

    assert report.passed, report.cases.to_dict("records")
    assert [(turn.user_id, turn.state) for turn in built] == [("alice", {"units": "celsius"})]


@pytest.mark.asyncio
async def test_context_messages_come_first_in_every_model_call_and_are_not_stored_in_the_session() -> None:
    weather = Weather()
    runner = OpenAIAgentsRunner(weather.agent())
    context = [ae.Message.system("Answer briefly."), ae.Message.assistant("I know the weather.")]

    await run_turns(
        runner,
        request("Weather in Paris?", context_messages=context),
        request("What did I ask?", context_messages=context),
    )

    expected = [
        {"role": "system", "content": "Answer briefly."},
        {"role": "assistant", "content": "I know the weather."},
    ]
    assert len(weather.model.inputs) == 3
    for items in weather.model.inputs:
        assert items[:2] == expected
        assert expected[0] not in items[2:]
    assert weather.model.instructions == ["Report the weather."] * 3


@pytest.mark.asyncio
async def test_a_model_input_filter_of_the_run_config_still_runs_after_the_context_is_put_in() -> None:
    weather = Weather()
    seen: list[list[Any]] = []

    def shout(data: CallModelData[Any]) -> ModelInputData:
        seen.append(list(data.model_data.input))
        return ModelInputData(input=data.model_data.input, instructions="SHOUT.")

    config = RunConfig(tracing_disabled=True, call_model_input_filter=shout)
    runner = OpenAIAgentsRunner(weather.agent(), run_config=config)

    await run_turns(runner, request("What did I ask?", context_messages=[ae.Message.system("Be brief.")]))

    assert seen == [[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What did I ask?"}]]
    assert weather.model.instructions == ["SHOUT."]


@pytest.mark.asyncio
async def test_a_context_message_the_sdk_cannot_take_is_a_clear_error() -> None:
    runner = OpenAIAgentsRunner(Weather().agent())
    tool_message = ae.Message(role=Role.TOOL, content="42")

    with pytest.raises(ae.ConfigError, match="context message 1 has role 'tool'"):
        await run_turns(runner, request("Hi", context_messages=[ae.Message.system("x"), tool_message]))


@pytest.mark.asyncio
async def test_end_session_releases_the_session_so_its_history_is_gone() -> None:
    weather = Weather()
    runner = OpenAIAgentsRunner(weather.agent())
    await runner.run(request("Weather in Paris?"))
    second = await runner.run(request("What did I ask?"))
    other = await runner.run(request("What did I ask?", session_id="s2"))

    runner.end_session("s1")
    runner.end_session("never-started")
    (again,) = await run_turns(runner, request("What did I ask?"))
    runner.end_session("s2")

    assert [r.final_response.content if r.final_response else None for r in (second, other, again)] == [
        "You asked: Weather in Paris?",
        "You asked: ",
        "You asked: ",
    ]


def test_the_evaluator_ends_every_session_it_starts() -> None:
    runner = OpenAIAgentsRunner(Weather().agent())

    report = evaluate(runner, two_turn_case("a"), ae.EvalCase.of("b", "The forecast for Paris?"))

    assert statuses(report) == {"a": "passed", "b": "failed"}

    assert runner._sessions == {}


# ------------------------------------------------------------------------------- the agent, handoffs and other tools


@pytest.mark.asyncio
async def test_the_users_agents_and_tools_are_never_changed() -> None:
    weather = Weather()
    helper = weather.agent()
    agent = weather.agent(handoffs=[helper])
    before = [(a, list(a.tools), list(a.handoffs), [invoker(t) for t in a.tools]) for a in (agent, helper)]

    await run_turns(
        OpenAIAgentsRunner(agent), request("Weather in Paris?", tool_mocks=ToolMocks(paris_mock("hail").actual))
    )

    assert [(a, list(a.tools), list(a.handoffs), [invoker(t) for t in a.tools]) for a in (agent, helper)] == before
    assert weather.looked_up == []


def invoker(tool: Any) -> Any:
    return tool.on_invoke_tool


def triage(target: Agent[Any] | Any) -> Agent[Any]:
    """An agent that hands every request to ``target`` (an agent or a ``Handoff``)."""

    def respond(items: list[dict[str, Any]]) -> list[TResponseOutputItem]:
        return [function_call("transfer_to_weather", {}, call_id="call-handoff")]

    return Agent(name="triage", model=FunctionModel(respond), handoffs=[target])


@pytest.mark.asyncio
async def test_tools_of_an_agent_handed_off_to_are_mocked_and_recorded() -> None:
    weather = Weather()

    result = await OpenAIAgentsRunner(triage(weather.agent())).run(
        request("Weather in Paris?", tool_mocks=ToolMocks(paris_mock("hail").actual))
    )

    assert [(t.id, t.name, t.arguments, t.result) for t in result.tools] == [
        ("call-1-0", "get_weather", {"city": "Paris"}, "hail")
    ]
    assert result.final_response is not None and result.final_response.content == "Paris: hail"
    assert weather.looked_up == []


@pytest.mark.asyncio
async def test_a_tool_behind_a_handoff_object_is_recorded_and_a_mocked_one_fails_the_turn_unrun() -> None:
    weather = Weather()
    runner = OpenAIAgentsRunner(triage(handoff(weather.agent())))

    (result,) = await run_turns(runner, request("Weather in Paris?"))
    with pytest.raises(
        ae.errors.ToolMockError, match='tool "get_weather" is mocked, but agent .weather. runs it where'
    ):
        await run_turns(runner, request("Weather in Rome?", tool_mocks=ToolMocks(paris_mock("hail").actual)))

    assert [(t.id, t.name, t.arguments, t.result) for t in result.tools] == [
        ("call-1-0", "get_weather", {"city": "Paris"}, "sunny")
    ]
    assert weather.looked_up == ["Paris"]


@pytest.mark.asyncio
async def test_a_tool_waiting_for_approval_fails_the_turn() -> None:
    @function_tool(needs_approval=True)
    def delete_account(user: str) -> str:
        """Delete a user's account."""
        raise AssertionError("never approved")

    def respond(items: list[dict[str, Any]]) -> list[TResponseOutputItem]:
        return [function_call("delete_account", {"user": "bob"}, call_id="call-1")]

    runner = OpenAIAgentsRunner(Agent(name="admin", model=FunctionModel(respond), tools=[delete_account]))

    with pytest.raises(ae.AgentEvalError, match=r"stopped for approval of tool calls \(delete_account\)"):
        await run_turns(runner, request("Delete bob"))


class Forecast(BaseModel):
    city: str
    sky: str


@pytest.mark.asyncio
async def test_a_structured_final_output_is_the_reply_as_json() -> None:
    def respond(items: list[dict[str, Any]]) -> list[TResponseOutputItem]:
        return [assistant_message('{"city": "Paris", "sky": "sunny"}')]

    agent = Agent(name="structured", model=FunctionModel(respond), output_type=Forecast)

    (result,) = await run_turns(OpenAIAgentsRunner(agent), request("Weather in Paris?"))

    assert result.final_response is not None and result.final_response.content == '{"city":"Paris","sky":"sunny"}'


# ------------------------------------------------------------------------------------------------ tracing, set-up


class _TraceRecorder(TracingProcessor):
    def __init__(self) -> None:
        self.traces: list[str] = []

    def on_trace_start(self, trace: Trace) -> None:
        self.traces.append(trace.name)

    def on_trace_end(self, trace: Trace) -> None: ...

    def on_span_start(self, span: Span[Any]) -> None: ...

    def on_span_end(self, span: Span[Any]) -> None: ...

    def shutdown(self) -> None: ...

    def force_flush(self) -> None: ...


@pytest.fixture
def traces() -> Iterator[list[str]]:
    """The traces the SDK starts while the test runs (its real exporter is set aside)."""
    previous = get_trace_provider()
    recorder = _TraceRecorder()
    provider = DefaultTraceProvider()
    provider.register_processor(recorder)
    set_trace_provider(provider)
    yield recorder.traces
    set_trace_provider(previous)


def test_an_evaluation_traces_nothing_unless_the_run_config_asks(traces: list[str]) -> None:
    evaluate(OpenAIAgentsRunner(Weather().agent()), two_turn_case())
    assert traces == []

    evaluate(OpenAIAgentsRunner(Weather().agent(), run_config=RunConfig(workflow_name="traced")), two_turn_case())
    assert traces == ["traced", "traced"]


@pytest.mark.parametrize(
    ("agent", "options", "message"),
    [
        ("not an agent", {}, "OpenAIAgentsRunner wraps an agents.Agent, got str"),
        (Agent(name="a"), {"max_turns": 0}, "max_turns must be greater than 0, got 0"),
    ],
)
def test_bad_arguments_are_config_errors(agent: Any, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ae.ConfigError, match=re.escape(message)):
        OpenAIAgentsRunner(agent, **options)


def test_without_the_sdk_the_import_says_which_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "agents", None)
    monkeypatch.delitem(sys.modules, "agenteval.adapters.openai_agents")

    with pytest.raises(MissingDependencyError, match=re.escape("pip install 'agenteval[openai-agents]'")):
        import agenteval.adapters.openai_agents  # noqa: F401
