"""Tool mocks: mocked tools answer from the eval set, matched by arguments, never silently run."""

from __future__ import annotations

from typing import Any

import pytest

import agenteval as ae
from agenteval.errors import ToolMockError
from agenteval.evalset.models import ArgumentsMatch, LLMGenerator, MockTool, ToolMock
from agenteval.runner.toolmock import ToolMocks
from agenteval.service import InferenceRequest, LocalService
from agenteval.testing import ScriptedChatModel


def rule(name: str = "weather", **fields: Any) -> MockTool:
    return MockTool(name=name, **fields)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (rule(), 'tool "weather": static tool mock requires result'),
        (rule(name=""), "tool mock item at index 0 has empty name"),
        (
            rule(arguments=ArgumentsMatch(ignore=True, expected={"a": 1}), result=1),
            "ignore cannot be configured with expected",
        ),
        (rule(arguments=ArgumentsMatch(), result=1), "expected is required when ignore is false"),
        (
            rule(arguments=ArgumentsMatch(expected={}, only_tree={"a": True}, ignore_tree={"b": True}), result=1),
            "onlyTree and ignoreTree cannot be set at the same time",
        ),
        (
            rule(arguments=ArgumentsMatch(expected={}, number_tolerance=-1), result=1),
            "numberTolerance cannot be negative",
        ),
        (rule(llm_generator=LLMGenerator(prompt="p"), result=1), "llmGenerator cannot be configured with result"),
        (rule(llm_generator=LLMGenerator(prompt="p")), "llmGenerator requires a tool mock model"),
    ],
)
def test_invalid_rules_are_rejected_with_the_reference_messages(bad: MockTool, message: str) -> None:
    with pytest.raises(ae.ConfigError, match=message):
        ToolMocks([bad])


@pytest.mark.asyncio
async def test_the_first_matching_rule_answers() -> None:
    mocks = ToolMocks(
        [
            rule(arguments=ArgumentsMatch(expected={"city": "Paris", "day": 1}), result={"sky": "rain"}),
            rule(arguments=ArgumentsMatch(expected={"city": "Rome"}, ignore_tree={"day": True}), result={"sky": "sun"}),
            rule(arguments=ArgumentsMatch(ignore=True), result={"sky": "unknown"}),
        ]
    )
    assert mocks.mocks("weather") and not mocks.mocks("time")
    assert await mocks.result("weather", {"city": "Paris", "day": 1}) == {"sky": "rain"}
    assert await mocks.result("weather", {"city": "Rome", "day": 9}) == {"sky": "sun"}
    assert await mocks.result("weather", {"city": "Oslo"}) == {"sky": "unknown"}


@pytest.mark.asyncio
async def test_numbers_match_exactly_unless_a_tolerance_is_given() -> None:
    exact = ToolMocks([rule(arguments=ArgumentsMatch(expected={"t": 1.0}), result="ok")])
    with pytest.raises(ToolMockError, match='tool "weather" configured for mock but no rule matched: .*t'):
        await exact.result("weather", {"t": 1.0000001})
    loose = ToolMocks([rule(arguments=ArgumentsMatch(expected={"t": 1.0}, number_tolerance=0.01), result="ok")])
    assert await loose.result("weather", {"t": 1.0000001}) == "ok"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("reply", "expected"),
    [('{"sky": "clear"}', {"sky": "clear"}), ("  sunny and warm ", "sunny and warm"), ("[1, 2]", [1, 2])],
)
async def test_llm_generated_results_are_parsed_as_json_when_they_are(reply: str, expected: Any) -> None:
    model = ScriptedChatModel([reply])
    mocks = ToolMocks([rule(llm_generator=LLMGenerator(prompt="Invent the weather."))], generator=model)
    assert await mocks.result("weather", {"city": "Paris"}) == expected
    (request,) = model.requests
    assert [(m.role, m.content) for m in request.messages] == [
        ("system", "Invent the weather."),
        ("user", '{"city": "Paris"}'),
    ]


@pytest.mark.asyncio
@pytest.mark.parametrize(("reply", "message"), [("   ", "generator output is empty"), ("null", "cannot be null")])
async def test_unusable_generated_results_are_errors(reply: str, message: str) -> None:
    mocks = ToolMocks([rule(llm_generator=LLMGenerator(prompt="p"))], generator=ScriptedChatModel([reply]))
    with pytest.raises(ToolMockError, match=message):
        await mocks.result("weather", {})


def _case(tool_mock: ToolMock, *, expected_runner: bool = False) -> ae.EvalCase:
    return ae.EvalCase(
        eval_id="c",
        expected_runner_enabled=expected_runner,
        conversation=[ae.Invocation(user_content=ae.Message.user("weather in Paris?"), tool_mock=tool_mock)],
        session_input=ae.SessionInput(user_id="u"),
    )


async def _manager(case: ae.EvalCase) -> ae.InMemoryEvalSetManager:
    manager = ae.InMemoryEvalSetManager()
    await manager.create("app", "set")
    await manager.add_case("app", "set", case)
    return manager


def weather(city: str) -> dict[str, str]:
    raise AssertionError("the real tool must not run when it is mocked")


def _agent(message: str, turn: ae.Turn) -> str:
    lookup = turn.tool(weather)
    return f"It is {lookup(city='Paris')['sky']}."


async def _async_agent(message: str, turn: ae.Turn) -> str:
    lookup = turn.tool(weather)
    return f"It is {lookup(city='Paris')['sky']}."


@pytest.mark.asyncio
async def test_a_mocked_tool_is_answered_and_recorded_without_running() -> None:
    mock = ToolMock(actual=[rule(arguments=ArgumentsMatch(expected={"city": "Paris"}), result={"sky": "rain"})])
    service = LocalService(_agent, eval_set_manager=await _manager(_case(mock)))
    (result,) = await service.inference(InferenceRequest(app_name="app", eval_set_id="set"))
    assert result.status == ae.EvalStatus.PASSED, result.error_message
    (turn,) = result.inferences
    assert turn.final_response is not None and turn.final_response.content == "It is rain."
    assert [(tool.name, tool.arguments, tool.result) for tool in turn.tools] == [
        ("weather", {"city": "Paris"}, {"sky": "rain"})
    ]


@pytest.mark.asyncio
async def test_a_call_no_rule_matches_fails_the_case() -> None:
    mock = ToolMock(actual=[rule(arguments=ArgumentsMatch(expected={"city": "Rome"}), result={"sky": "sun"})])
    service = LocalService(_agent, eval_set_manager=await _manager(_case(mock)))
    (result,) = await service.inference(InferenceRequest(app_name="app", eval_set_id="set"))
    assert result.status == ae.EvalStatus.FAILED
    assert 'tool "weather" configured for mock but no rule matched' in result.error_message


@pytest.mark.asyncio
async def test_an_invalid_rule_fails_the_case_with_a_clear_message() -> None:
    service = LocalService(_agent, eval_set_manager=await _manager(_case(ToolMock(actual=[rule()]))))
    (result,) = await service.inference(InferenceRequest(app_name="app", eval_set_id="set"))
    assert result.status == ae.EvalStatus.FAILED
    assert 'tool mock: tool "weather": static tool mock requires result' in result.error_message


@pytest.mark.asyncio
async def test_each_side_gets_its_own_rules() -> None:
    mock = ToolMock(
        actual=[rule(arguments=ArgumentsMatch(ignore=True), result={"sky": "rain"})],
        expected=[rule(arguments=ArgumentsMatch(ignore=True), result={"sky": "sun"})],
    )
    service = LocalService(
        _agent, eval_set_manager=await _manager(_case(mock, expected_runner=True)), expected_runner=_agent
    )
    (result,) = await service.inference(InferenceRequest(app_name="app", eval_set_id="set"))
    assert result.status == ae.EvalStatus.PASSED, result.error_message
    assert result.inferences[0].final_response.content == "It is rain."  # type: ignore[union-attr]
    assert result.expected_inferences[0].final_response.content == "It is sun."  # type: ignore[union-attr]


@pytest.mark.asyncio
async def test_llm_generated_mocks_work_from_a_plain_agent_function() -> None:
    mock = ToolMock(actual=[rule(llm_generator=LLMGenerator(prompt="Invent the weather."))])
    service = LocalService(
        _agent,
        eval_set_manager=await _manager(_case(mock)),
        tool_mock_model=ScriptedChatModel(['{"sky": "fog"}']),
    )
    (result,) = await service.inference(InferenceRequest(app_name="app", eval_set_id="set"))
    assert result.status == ae.EvalStatus.PASSED, result.error_message
    assert result.inferences[0].final_response.content == "It is fog."  # type: ignore[union-attr]


@pytest.mark.asyncio
async def test_a_sync_tool_with_an_llm_mock_inside_an_async_agent_says_what_to_do() -> None:
    mock = ToolMock(actual=[rule(llm_generator=LLMGenerator(prompt="p"))])
    service = LocalService(
        _async_agent, eval_set_manager=await _manager(_case(mock)), tool_mock_model=ScriptedChatModel(["{}"])
    )
    (result,) = await service.inference(InferenceRequest(app_name="app", eval_set_id="set"))
    assert result.status == ae.EvalStatus.FAILED
    assert "needs an async tool" in result.error_message


@pytest.mark.asyncio
async def test_trace_mode_expected_inputs_take_tool_mocks_from_the_conversation_only() -> None:
    """Spec item 33: the actual turn's own toolMock does not leak into the expected runner."""
    seen: list[ToolMocks | None] = []

    class Recorder:
        async def run(self, request: ae.TurnRequest) -> ae.TurnResult:
            seen.append(request.tool_mocks)
            return ae.TurnResult(final_response=ae.Message.assistant("ok"))

    user = ae.Message.user("q")
    leaked = ToolMock(expected=[rule(arguments=ArgumentsMatch(ignore=True), result="leak")])
    case = ae.EvalCase(
        eval_id="c",
        eval_mode=ae.EvalMode.TRACE,
        expected_runner_enabled=True,
        actual_conversation=[ae.Invocation(user_content=user, tool_mock=leaked)],
        conversation=[ae.Invocation(user_content=user)],
        session_input=ae.SessionInput(user_id="u"),
    )
    service = LocalService(_agent, eval_set_manager=await _manager(case), expected_runner=Recorder())
    (result,) = await service.inference(InferenceRequest(app_name="app", eval_set_id="set"))
    assert result.status == ae.EvalStatus.PASSED, result.error_message
    assert seen == [None]


@pytest.mark.filterwarnings("ignore::agenteval.errors.NoMetricsWarning")
def test_an_agent_changing_a_mocked_result_does_not_change_the_next_run() -> None:
    mock = ToolMock(actual=[rule(arguments=ArgumentsMatch(ignore=True), result={"sky": "rain"})])
    seen: list[str] = []

    def meddling(message: str, turn: ae.Turn) -> str:
        answer = turn.tool(weather)(city="Paris")
        seen.append(answer["sky"])
        answer["sky"] = "changed by the agent"
        return "ok"

    eval_set = ae.EvalSet(eval_set_id="set", eval_cases=[_case(mock)])
    report = ae.Evaluator("app", meddling, progress=False).evaluate(eval_set, num_runs=2, metrics=[])

    assert seen == ["rain", "rain"]
    recorded = [inference.inferences[0].tools[0].result for run in report.inference_results for inference in run]
    assert recorded == [{"sky": "rain"}, {"sky": "rain"}]
