"""Reading ADK eval files (written by google-adk itself, or in the layout its own loader reads)."""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.evaluation import eval_case as adk
from google.adk.evaluation.agent_evaluator import AgentEvaluator
from google.adk.evaluation.conversation_scenarios import ConversationScenario as ADKScenario
from google.adk.evaluation.eval_rubrics import Rubric, RubricContent
from google.adk.evaluation.local_eval_sets_manager import LocalEvalSetsManager, load_eval_set_from_file
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

import agenteval as ae
from agenteval.adapters.adk import ADKRunner
from agenteval.errors import DroppedDataWarning
from agenteval.evalset.models import ArgumentsMatch, MockTool, ToolMock
from agenteval.importers.adk import read_eval_set, read_eval_sets
from tests.adapters.adk._models import FunctionLlm, call, function_responses, say, user_texts


def _user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def _model(text: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=text)])


def _weather_case() -> adk.EvalCase:
    return adk.EvalCase(
        eval_id="paris",
        conversation=[
            adk.Invocation(
                invocation_id="inv-1",
                user_content=_user("Weather in Paris?"),
                final_response=_model("sunny in Paris"),
                intermediate_data=adk.IntermediateData(
                    tool_uses=[types.FunctionCall(id="call-1", name="get_weather", args={"city": "Paris"})],
                    tool_responses=[types.FunctionResponse(id="call-1", name="get_weather", response={"sky": "sunny"})],
                    intermediate_responses=[("planner", [types.Part(text="Looking it up.")])],
                ),
                creation_timestamp=1700000000.5,
            ),
            adk.Invocation(
                invocation_id="inv-2",
                user_content=_user("And tomorrow?"),
                final_response=_model("rain in Paris"),
                intermediate_data=adk.InvocationEvents(
                    invocation_events=[
                        adk.InvocationEvent(
                            author="weather",
                            content=types.Content(
                                role="model",
                                parts=[
                                    types.Part(text="Checking the forecast."),
                                    types.Part(
                                        function_call=types.FunctionCall(
                                            id="call-2", name="get_forecast", args={"city": "Paris", "days": 1}
                                        )
                                    ),
                                ],
                            ),
                        ),
                        adk.InvocationEvent(
                            author="weather",
                            content=types.Content(
                                role="user",
                                parts=[
                                    types.Part(
                                        function_response=types.FunctionResponse(
                                            id="call-2", name="get_forecast", response={"sky": "rain"}
                                        )
                                    )
                                ],
                            ),
                        ),
                    ]
                ),
            ),
        ],
        session_input=adk.SessionInput(app_name="weather_app", user_id="ada", state={"units": "metric"}),
        creation_timestamp=1700000000.0,
    )


def _scenario_case() -> adk.EvalCase:
    return adk.EvalCase(
        eval_id="plan",
        conversation_scenario=ADKScenario(starting_prompt="Plan a trip.", conversation_plan="Ask, then stop."),
        session_input=adk.SessionInput(app_name="weather_app", user_id="bob"),
    )


def _written_by_adk(tmp_path: Path, *cases: adk.EvalCase) -> Path:
    manager = LocalEvalSetsManager(agents_dir=str(tmp_path))
    manager.create_eval_set("weather_app", "weather_set")
    for case in cases:
        manager.add_eval_case("weather_app", "weather_set", case)
    return tmp_path / "weather_app" / "weather_set.evalset.json"


def test_an_eval_set_written_by_adk_keeps_its_cases_turns_tools_and_sessions(tmp_path: Path) -> None:
    path = _written_by_adk(tmp_path, _weather_case(), _scenario_case())

    with pytest.warns(DroppedDataWarning) as caught:
        eval_set = read_eval_set(path)

    assert eval_set.eval_set_id == "weather_set" and eval_set.name == "weather_set"
    paris, plan = eval_set.eval_cases
    assert paris.eval_id == "paris"
    assert paris.session_input == ae.SessionInput(app_name="weather_app", user_id="ada", state={"units": "metric"})
    assert paris.creation_timestamp == 1700000000.0
    first, second = paris.conversation
    assert (first.invocation_id, first.user_content, first.final_response) == (
        "inv-1",
        ae.Message.user("Weather in Paris?"),
        ae.Message.assistant("sunny in Paris"),
    )
    assert first.tools == [
        ae.Tool(id="call-1", name="get_weather", arguments={"city": "Paris"}, result={"sky": "sunny"})
    ]
    assert first.intermediate_responses == [ae.Message.assistant("Looking it up.")]
    assert first.creation_timestamp == 1700000000.5
    assert second.tools == [
        ae.Tool(id="call-2", name="get_forecast", arguments={"city": "Paris", "days": 1}, result={"sky": "rain"})
    ]
    assert second.intermediate_responses == [ae.Message.assistant("Checking the forecast.")]
    assert plan.conversation == []
    assert plan.conversation_scenario is not None
    assert (plan.conversation_scenario.starting_prompt, plan.conversation_scenario.conversation_plan) == (
        "Plan a trip.",
        "Ask, then stop.",
    )
    # The only thing agenteval has no place for here: who wrote the intermediate response.
    (warning,) = caught
    assert str(warning.message) == (
        f"{path}: left out, as agenteval has no place for them: "
        "eval_cases[0].conversation[0].intermediate_data.intermediate_responses[0][0] (its author)"
    )


def test_what_agenteval_has_no_place_for_is_named_in_one_warning(tmp_path: Path) -> None:
    case = adk.EvalCase(
        eval_id="rich",
        conversation=[
            adk.Invocation(
                user_content=types.Content(
                    role="user",
                    parts=[
                        types.Part(text="Describe this:"),
                        types.Part.from_bytes(data=b"\x89PNG", mime_type="image/png"),
                    ],
                ),
                final_response=_model("A picture."),
                duration=1.5,
                rubrics=[Rubric(rubric_id="r1", rubric_content=RubricContent(text_property="Is it short?"))],
            )
        ],
        session_input=adk.SessionInput(app_name="weather_app", user_id="ada", session_id="fixed"),
        final_session_state={"done": True},
    )
    path = _written_by_adk(tmp_path, case)

    with pytest.warns(DroppedDataWarning) as caught:
        eval_set = read_eval_set(path)

    (turn,) = eval_set.eval_cases[0].conversation
    assert turn.user_content == ae.Message.user("Describe this:")
    (warning,) = caught
    assert str(warning.message).split(": left out, as agenteval has no place for them: ")[1].split(", ") == [
        "eval_cases[0].final_session_state",
        "eval_cases[0].session_input.session_id",
        "eval_cases[0].conversation[0].duration",
        "eval_cases[0].conversation[0].rubrics",
        "eval_cases[0].conversation[0].user_content.parts[1]",
    ]


TEST_FILE_TURNS: list[dict[str, Any]] = [
    {
        "query": "Weather in Paris?",
        "expected_tool_use": [
            {"tool_name": "get_weather", "tool_input": {"city": "Paris"}, "mock_tool_output": {"sky": "cloudy"}}
        ],
        "expected_intermediate_agent_responses": [],
        "reference": "cloudy in Paris",
    },
    {"query": "Thanks!", "expected_tool_use": [], "reference": "You are welcome."},
]


def _test_file(tmp_path: Path, turns: list[dict[str, Any]] = TEST_FILE_TURNS, name: str = "weather.test.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(turns), encoding="utf-8")
    return path


def _initial_session(tmp_path: Path) -> Path:
    path = tmp_path / "initial.session.json"
    path.write_text(json.dumps({"app_name": "weather_app", "user_id": "ada", "state": {"units": "metric"}}))
    return path


def test_a_test_file_reads_as_adks_own_migration_of_it(tmp_path: Path) -> None:
    path = _test_file(tmp_path)
    session = _initial_session(tmp_path)
    migrated = tmp_path / "migrated.evalset.json"
    AgentEvaluator.migrate_eval_data_to_new_schema(str(path), str(migrated), str(session))

    read = read_eval_set(path, initial_session_file=session)
    (migrated_case,) = read_eval_set(migrated).eval_cases

    (case,) = read.eval_cases
    assert case.session_input == migrated_case.session_input
    assert [(turn.user_content, turn.final_response, turn.tools) for turn in case.conversation] == [
        (turn.user_content, turn.final_response, turn.tools) for turn in migrated_case.conversation
    ]


def test_a_test_file_is_one_case_with_its_tool_mocks_and_the_initial_session(tmp_path: Path) -> None:
    path = _test_file(tmp_path)

    eval_set = read_eval_set(path, initial_session_file=_initial_session(tmp_path))

    assert eval_set.eval_set_id == "weather"
    (case,) = eval_set.eval_cases
    assert case.eval_id == "weather"
    assert case.session_input == ae.SessionInput(app_name="weather_app", user_id="ada", state={"units": "metric"})
    first, second = case.conversation
    assert first.user_content == ae.Message.user("Weather in Paris?")
    assert first.final_response == ae.Message.assistant("cloudy in Paris")
    assert first.tools == [ae.Tool(name="get_weather", arguments={"city": "Paris"})]
    assert first.tool_mock == ToolMock(
        actual=[
            MockTool(name="get_weather", arguments=ArgumentsMatch(expected={"city": "Paris"}), result={"sky": "cloudy"})
        ]
    )
    assert (second.final_response, second.tools, second.tool_mock) == (
        ae.Message.assistant("You are welcome."),
        [],
        None,
    )


def test_the_older_eval_set_list_is_read_case_by_case(tmp_path: Path) -> None:
    cases = [
        {
            "name": "first",
            "data": TEST_FILE_TURNS[:1],
            "initial_session": {"app_name": "weather_app", "user_id": "ada", "state": {}},
        },
        {"name": "second", "data": TEST_FILE_TURNS[1:]},
    ]
    path = tmp_path / "old.evalset.json"
    path.write_text(json.dumps(cases), encoding="utf-8")
    assert len(load_eval_set_from_file(str(path), "old").eval_cases) == 2

    eval_set = read_eval_set(path)

    assert eval_set.eval_set_id == "old"
    first, second = eval_set.eval_cases
    assert (first.eval_id, second.eval_id) == ("first", "second")
    assert first.session_input is not None and first.session_input.user_id == "ada"
    assert second.session_input is None
    assert first.conversation[0].tool_mock is not None


def test_keys_adks_converter_would_drop_are_named_in_a_warning(tmp_path: Path) -> None:
    turns = [
        {
            "query": "Hi",
            "response": "Hello",
            "expected_tool_use": [{"tool_name": "t", "tool_input": {}, "note": "x"}],
            "expected_intermediate_agent_responses": [{"author": "helper", "text": "Thinking."}],
        }
    ]

    with pytest.warns(DroppedDataWarning) as caught:
        read_eval_set(_test_file(tmp_path, turns))

    (warning,) = caught
    assert str(warning.message).endswith(
        "[0].response, [0].expected_tool_use[0].note, [0].expected_intermediate_agent_responses[0].author"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", r"is malformed: not valid JSON: key must be a string at line 1 column 2"),
        ("[1, 2]", "is not an ADK eval file: expected an EvalSet object, a list of turns"),
        ("[]", "is not an ADK eval file"),
        ('[{"query": "hi"}, {"data": []}]', "each item must be a turn"),
        ('[{"reference": "x"}]', "each item must be a turn"),
        ('[{"query": 3}]', r"\[0\]\.query must be a string, got int"),
        (
            '[{"query": "q", "expected_tool_use": [{"tool_input": {}}]}]',
            r"\[0\]\.expected_tool_use\[0\]\.tool_name is missing",
        ),
        (
            '[{"query": "q", "expected_tool_use": [{"tool_name": "t", "tool_input": 1}]}]',
            "tool_input must be an object",
        ),
        ('[{"query": "q", "expected_tool_use": {}}]', r"\[0\]\.expected_tool_use must be a list of objects"),
        (
            '[{"name": "c", "data": [{"query": "q"}], "initial_session": 5}]',
            r"\[0\]\.initial_session must be an object",
        ),
        ('[{"name": 1, "data": []}]', r"\[0\]\.name must be a string"),
        ('{"eval_cases": []}', r"is not an ADK EvalSet: eval_set_id: Field required"),
        (
            '{"eval_set_id": "s", "eval_cases": [{"eval_id": "c"}]}',
            r"eval_cases\[0\]: Value error, Exactly one of conversation and conversation_scenario",
        ),
    ],
)
def test_a_file_that_is_not_an_adk_eval_file_is_a_config_error_naming_it(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.test.json"
    path.write_text(content, encoding="utf-8")

    with pytest.raises(ae.ConfigError, match=message) as raised:
        read_eval_set(path)

    assert str(raised.value).startswith(str(path))


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ae.ConfigError, match=r"cannot read .*missing\.test\.json: No such file"):
        read_eval_set(tmp_path / "missing.test.json")


def test_an_initial_session_file_with_an_adk_eval_set_is_refused(tmp_path: Path) -> None:
    path = _written_by_adk(tmp_path, _scenario_case())

    with pytest.raises(ae.ConfigError, match="initial_session_file applies to test files only"):
        read_eval_set(path, initial_session_file=_initial_session(tmp_path))


def test_an_initial_session_file_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    session = tmp_path / "session.json"
    session.write_text("[]")

    with pytest.raises(ae.ConfigError, match=r"session\.json: an initial session file holds an object"):
        read_eval_set(_test_file(tmp_path), initial_session_file=session)


def test_an_initial_session_adk_refuses_is_a_config_error_naming_the_field(tmp_path: Path) -> None:
    session = tmp_path / "session.json"
    session.write_text('{"app_name": "a", "user_id": "u", "state": [1]}')

    with pytest.raises(ae.ConfigError, match=r"weather\.test\.json: SessionInput: state: Input should be a valid dict"):
        read_eval_set(_test_file(tmp_path), initial_session_file=session)


def test_a_directory_is_read_file_by_file(tmp_path: Path) -> None:
    _written_by_adk(tmp_path, _scenario_case())
    (tmp_path / "nested").mkdir()
    _test_file(tmp_path / "nested")
    (tmp_path / "nested" / "test_config.json").write_text("{}")

    eval_sets = read_eval_sets(tmp_path, initial_session_file=_initial_session(tmp_path))

    assert [eval_set.eval_set_id for eval_set in eval_sets] == ["weather", "weather_set"]
    assert eval_sets[0].eval_cases[0].session_input is not None


def test_two_files_with_one_eval_set_id_are_refused(tmp_path: Path) -> None:
    _test_file(tmp_path)
    (tmp_path / "again").mkdir()
    _test_file(tmp_path / "again")

    with pytest.raises(ae.ConfigError, match="both give the eval set id 'weather'"):
        read_eval_sets(tmp_path)


def test_a_directory_without_adk_files_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ae.ConfigError, match=r"holds no \*\.evalset\.json or \*\.test\.json file"):
        read_eval_sets(tmp_path)
    with pytest.raises(ae.ConfigError, match="is not a directory"):
        read_eval_sets(tmp_path / "nowhere")


weather_calls: list[str] = []


def get_weather(city: str) -> dict[str, str]:
    """The weather now (a real lookup the mock must prevent)."""
    weather_calls.append(city)
    return {"sky": "sunny"}


async def _reply(request: LlmRequest) -> LlmResponse:
    await asyncio.sleep(0)
    responses = function_responses(request)
    if responses:
        return say(f"{(responses[0].response or {})['sky']} in Paris")
    if user_texts(request)[-1] == "Thanks!":
        return say("You are welcome.")
    return call("get_weather", city="Paris")


def test_an_imported_test_file_evaluates_an_adk_agent_end_to_end(tmp_path: Path) -> None:
    weather_calls.clear()
    eval_set = read_eval_set(_test_file(tmp_path), initial_session_file=_initial_session(tmp_path))
    agent = LlmAgent(name="weather", model=FunctionLlm(reply=_reply), tools=[get_weather])
    metrics = [ae.EvalMetric.tool_trajectory(), ae.EvalMetric.final_response()]

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = ae.Evaluator("weather_app", ADKRunner(agent)).evaluate(eval_set, metrics=metrics)

    assert report.overall_status is ae.EvalStatus.PASSED, report.turns.to_dict("records")
    assert list(report.turns["actual_response"]) == ["cloudy in Paris", "You are welcome."]
    assert weather_calls == []
    assert list(report.cases["user_id"]) == ["ada"]


def greet(name: str) -> str:
    """A tool whose result is not a dict."""
    return f"hello {name}"


async def _greeting_reply(request: LlmRequest) -> LlmResponse:
    responses = function_responses(request)
    if responses:
        return say(str((responses[0].response or {}).get("result", responses[0].response)))
    if user_texts(request)[-1] == "Greet Ada":
        return call("greet", name="Ada")
    return call("get_weather", city="Paris")


def test_tool_results_recorded_by_the_adk_runner_match_those_adk_writes(tmp_path: Path) -> None:
    weather_calls.clear()
    case = adk.EvalCase(
        eval_id="results",
        conversation=[
            adk.Invocation(
                user_content=_user("Greet Ada"),
                final_response=_model("hello Ada"),
                intermediate_data=adk.IntermediateData(
                    tool_uses=[types.FunctionCall(id="c1", name="greet", args={"name": "Ada"})],
                    tool_responses=[types.FunctionResponse(id="c1", name="greet", response={"result": "hello Ada"})],
                ),
            ),
            adk.Invocation(
                user_content=_user("Weather?"),
                final_response=_model("{'sky': 'sunny'}"),
                intermediate_data=adk.IntermediateData(
                    tool_uses=[types.FunctionCall(id="c2", name="get_weather", args={"city": "Paris"})],
                    tool_responses=[types.FunctionResponse(id="c2", name="get_weather", response={"sky": "sunny"})],
                ),
            ),
        ],
        session_input=adk.SessionInput(app_name="weather_app", user_id="ada"),
    )
    eval_set = read_eval_set(_written_by_adk(tmp_path, case))
    agent = LlmAgent(name="greeter", model=FunctionLlm(reply=_greeting_reply), tools=[greet, get_weather])
    metrics = [ae.EvalMetric.tool_trajectory(results="exact"), ae.EvalMetric.final_response()]

    report = ae.Evaluator("weather_app", ADKRunner(agent)).evaluate(eval_set, metrics=metrics)

    assert report.overall_status is ae.EvalStatus.PASSED, report.turns.to_dict("records")
    assert weather_calls == ["Paris"]
