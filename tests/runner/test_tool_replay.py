"""Tool replay: a second evaluation answers identical tool calls with the results the first one recorded."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

import agenteval as ae
from agenteval.analysis.report import EvaluationReport
from agenteval.context import EvalContext
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalset.models import ArgumentsMatch, MockTool, ToolMock
from agenteval.runner.function import FunctionRunner
from agenteval.runner.tool_replay import ToolReplay, TurnReplay, was_replayed
from agenteval.service._inference import infer_case
from agenteval.service.options import ServiceOptions

APP = "replay-app"
METRICS = [ae.EvalMetric.final_response()]


class Lookup:
    """A tool whose answer changes with every call (a counter), like a live service; it counts its calls."""

    def __init__(self, start: int = 0) -> None:
        self.start = start
        self.calls: list[str] = []

    def __call__(self, city: str) -> dict[str, Any]:
        self.calls.append(city)
        if city == "Atlantis" and len(self.calls) == 1:
            raise LookupError("no such city")
        return {"city": city, "n": self.start + len(self.calls)}


def agent_using(lookup: Lookup, *, extra: Sequence[str] = (), use_async: bool = False) -> Callable[..., Any]:
    """An agent that looks up each word of the message (then ``extra``) and replies with the counters."""

    def answer(n: Any) -> str:
        return "?" if n is None else str(n)

    def agent(message: str, turn: ae.Turn) -> str:
        tool = turn.tool(lookup, name="lookup")
        replies = []
        for city in [*message.split(), *extra]:
            try:
                replies.append(answer(tool(city)["n"]))
            except LookupError:
                replies.append(answer(None))
        return " ".join(replies)

    async def async_agent(message: str, turn: ae.Turn) -> str:
        async def lookup_async(city: str) -> dict[str, Any]:
            return lookup(city)

        tool = turn.tool(lookup_async, name="lookup")
        return " ".join([answer((await tool(city))["n"]) for city in [*message.split(), *extra]])

    return async_agent if use_async else agent


def eval_set(*cases: tuple[str, Sequence[str]], tool_mock: ToolMock | None = None) -> ae.EvalSet:
    return ae.EvalSet.of(
        "cities",
        [
            ae.EvalCase(
                eval_id=eval_id,
                conversation=[
                    ae.Invocation(
                        user_content=ae.Message.user(text), final_response=ae.Message.assistant(""), tool_mock=tool_mock
                    )
                    for text in turns
                ],
                session_input=ae.SessionInput(user_id="u"),
            )
            for eval_id, turns in cases
        ],
    )


async def evaluate(agent: Any, cases: ae.EvalSet, **options: Any) -> EvaluationReport:
    report = await ae.Evaluator(APP, agent, progress=False, **options).aevaluate(cases, metrics=METRICS)
    failed = [
        (inference.eval_case_id, inference.error_message) for run in report.inference_results for inference in run
    ]
    assert all(not message for _, message in failed), failed
    return report


def replies(report: EvaluationReport) -> dict[tuple[int, str], list[str]]:
    """Each run's and case's replies, turn by turn."""
    return {
        (run_id, inference.eval_case_id): [
            turn.final_response.content if turn.final_response else "" for turn in inference.inferences
        ]
        for run_id, run in enumerate(report.inference_results, start=1)
        for inference in run
    }


def calls(report: EvaluationReport, eval_id: str = "c") -> list[list[tuple[str, Any, bool]]]:
    """The tool calls of run 1 of a case, turn by turn: (city, result's counter, replayed)."""
    (inference,) = [inference for inference in report.inference_results[0] if inference.eval_case_id == eval_id]
    return [
        [(tool.arguments["city"], tool.result["n"] if tool.result else None, was_replayed(tool)) for tool in turn.tools]
        for turn in inference.inferences
    ]


@pytest.mark.asyncio
@pytest.mark.parametrize("use_async", [False, True], ids=["sync-tool", "async-tool"])
async def test_a_second_evaluation_gets_the_recorded_results_without_calling_the_tool(use_async: bool) -> None:
    cities = eval_set(("c", ["Paris Rome", "Paris"]))
    first = await evaluate(agent_using(Lookup(), use_async=use_async), cities)
    live = Lookup(start=100)

    second = await evaluate(
        agent_using(live, use_async=use_async), cities, tool_replay=ToolReplay.of(first.inference_results)
    )

    assert replies(first) == {(1, "c"): ["1 2", "3"]}
    assert replies(second) == replies(first)
    assert live.calls == []
    # The second turn's Paris is answered from the second turn's recording, not the first's.
    assert calls(second) == [[("Paris", 1, True), ("Rome", 2, True)], [("Paris", 3, True)]]


@pytest.mark.asyncio
async def test_a_call_with_new_arguments_runs_live_and_repeated_calls_use_the_recordings_in_order() -> None:
    cities = eval_set(("c", ["Paris Paris"]))
    first = await evaluate(agent_using(Lookup()), cities)
    live = Lookup(start=100)

    second = await evaluate(
        agent_using(live, extra=["Paris", "Oslo"]), cities, tool_replay=ToolReplay.of(first.inference_results)
    )

    assert replies(first) == {(1, "c"): ["1 2"]}
    assert live.calls == ["Paris", "Oslo"]
    assert calls(second) == [[("Paris", 1, True), ("Paris", 2, True), ("Paris", 101, False), ("Oslo", 102, False)]]


@pytest.mark.asyncio
async def test_a_recorded_call_without_a_result_runs_live() -> None:
    cities = eval_set(("c", ["Atlantis Atlantis"]))
    first = await evaluate(agent_using(Lookup()), cities)
    live = Lookup(start=100)

    second = await evaluate(agent_using(live), cities, tool_replay=ToolReplay.of(first.inference_results))

    # The first recorded call raised: its twin runs live; the second recorded call answers the second.
    assert calls(first) == [[("Atlantis", None, False), ("Atlantis", 2, False)]]
    assert live.calls == ["Atlantis"]
    assert replies(second) == {(1, "c"): ["? 2"]}
    assert [replayed for _, _, replayed in calls(second)[0]] == [False, True]


@pytest.mark.asyncio
async def test_tool_mocks_take_precedence_over_replay() -> None:
    first = await evaluate(agent_using(Lookup()), eval_set(("c", ["Paris Rome"])))
    mock = ToolMock(actual=[MockTool(name="lookup", arguments=ArgumentsMatch(ignore=True), result={"n": "mocked"})])
    live = Lookup(start=100)

    second = await evaluate(
        agent_using(live),
        eval_set(("c", ["Paris Rome"]), tool_mock=mock),
        tool_replay=ToolReplay.of(first.inference_results),
    )

    assert replies(first) == {(1, "c"): ["1 2"]}
    assert replies(second) == {(1, "c"): ["mocked mocked"]}
    assert live.calls == []
    assert calls(second) == [[("Paris", "mocked", False), ("Rome", "mocked", False)]]


@pytest.mark.asyncio
async def test_a_case_the_report_does_not_hold_runs_its_tools_live() -> None:
    cities = eval_set(("a", ["Paris"]), ("b", ["Paris"]))
    first = await evaluate(agent_using(Lookup()), cities, eval_case_ids=["a"], parallel_inference=False)
    live = Lookup(start=100)

    second = await evaluate(
        agent_using(live), cities, tool_replay=ToolReplay.of(first.inference_results), parallel_inference=False
    )

    assert replies(second) == {(1, "a"): ["1"], (1, "b"): ["101"]}
    assert live.calls == ["Paris"]
    assert calls(second, "a") == [[("Paris", 1, True)]]
    assert calls(second, "b") == [[("Paris", 101, False)]]


@pytest.mark.asyncio
async def test_each_run_replays_its_own_recording_and_a_run_not_recorded_replays_the_lowest() -> None:
    cities = eval_set(("c", ["Paris"]))
    first = await evaluate(agent_using(Lookup()), cities, num_runs=2)
    live = Lookup(start=100)
    runner = FunctionRunner(agent_using(live))
    options = ServiceOptions(tool_replay=ToolReplay.of(first.inference_results))

    answered = []
    for run_id in (2, 1, 3, 0):
        produced = await infer_case(runner, cities.eval_cases[0], options, f"s{run_id}", EvalContext(), run_id=run_id)
        answered.append([turn.final_response.content for turn in produced.inferences if turn.final_response])

    assert replies(first) == {(1, "c"): ["1"], (2, "c"): ["2"]}
    assert answered == [["2"], ["1"], ["1"], ["1"]]
    assert live.calls == []


@pytest.mark.asyncio
async def test_every_run_of_an_evaluation_replays_a_single_recorded_run() -> None:
    cities = eval_set(("c", ["Paris"]))
    first = await evaluate(agent_using(Lookup()), cities)
    live = Lookup(start=100)

    second = await evaluate(agent_using(live), cities, num_runs=2, tool_replay=ToolReplay.of(first.inference_results))

    assert replies(second) == {(1, "c"): ["1"], (2, "c"): ["1"]}
    assert live.calls == []


@pytest.mark.asyncio
async def test_the_saved_result_marks_replayed_calls_and_only_them() -> None:
    cities = eval_set(("c", ["Paris"]))
    first = await evaluate(agent_using(Lookup()), cities)

    second = await evaluate(
        agent_using(Lookup(start=100), extra=["Oslo"]), cities, tool_replay=ToolReplay.of(first.inference_results)
    )

    def saved_tools(report: EvaluationReport) -> list[dict[str, Any]]:
        saved = json.loads(report.result.to_json())
        (case,) = saved["evalCaseResults"]
        return [tool for turn in case["evalMetricResultPerInvocation"] for tool in turn["actualInvocation"]["tools"]]

    assert saved_tools(first) == [
        {"name": "lookup", "arguments": {"city": "Paris"}, "result": {"city": "Paris", "n": 1}}
    ]
    assert saved_tools(second) == [
        {"name": "lookup", "arguments": {"city": "Paris"}, "result": {"city": "Paris", "n": 1}, "replayed": True},
        {"name": "lookup", "arguments": {"city": "Oslo"}, "result": {"city": "Oslo", "n": 101}},
    ]
    # Read back, the mark is still there.
    reloaded = ae.EvalSetResult.from_json(second.result.to_json())
    actual = reloaded.eval_case_results[0].eval_metric_result_per_invocation[0].actual_invocation
    assert actual is not None and [was_replayed(tool) for tool in actual.tools] == [True, False]


def test_arguments_match_as_json_values_and_the_answer_is_a_copy() -> None:
    recorded = [ae.Tool(name="t", arguments={"a": 1, "b": [True, {"c": 2.0}]}, result={"items": [1]})]
    replay = TurnReplay(recorded)

    other_tool = ae.Tool(name="u", arguments={"a": 1, "b": [True, {"c": 2.0}]})
    true_as_one = ae.Tool(name="t", arguments={"a": 1, "b": [1, {"c": 2.0}]})
    reordered = ae.Tool(name="t", arguments={"b": [True, {"c": 2}], "a": 1.0})
    assert replay.answer(other_tool) is None and replay.answer(true_as_one) is None
    answer = replay.answer(reordered)

    assert answer == {"items": [1]}
    answer["items"].append(2)
    assert recorded[0].result == {"items": [1]}
    assert [was_replayed(tool) for tool in (other_tool, true_as_one, reordered)] == [False, False, True]
    assert replay.answer(reordered) is None  # used up


def test_what_is_not_a_report_s_inference_results_is_refused_saying_what_to_pass() -> None:
    report_like = EvaluationReport(
        app_name=APP, eval_set_id="s", result=ae.EvalSetResult(), case_summaries=[], overall_status=ae.EvalStatus.PASSED
    )
    with pytest.raises(ae.ConfigError, match=r"got EvaluationReport: pass ToolReplay.of\(report.inference_results\)"):
        ToolReplay.of(report_like)  # type: ignore[arg-type]
    with pytest.raises(ae.ConfigError, match=r"inference_results\[0\] is a InferenceResult, not the list"):
        ToolReplay.of([InferenceResult()])  # type: ignore[list-item]
    with pytest.raises(ae.ConfigError, match="tool_replay must be an earlier report or None, got EvaluationReport"):
        ServiceOptions(tool_replay=report_like)  # type: ignore[arg-type]
    with pytest.raises(ae.ConfigError, match="tool_replay must be an earlier report or None, got str"):
        ae.Evaluator(APP, str.upper, tool_replay="last-report")


@pytest.mark.asyncio
async def test_a_replayed_result_reaches_a_pydantic_ai_agent_instead_of_its_tool() -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from agenteval.adapters.pydantic_ai import PydanticAIRunner

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
        if returns:
            content: Any = returns[0].content  # what the tool returned, or the replayed result
            return ModelResponse(parts=[TextPart(f"n={content['n']}")])
        return ModelResponse(parts=[ToolCallPart("lookup", {"city": "Paris"}, tool_call_id="call-1")])

    counter = Lookup()
    agent = Agent(FunctionModel(model))

    @agent.tool_plain
    def lookup(city: str) -> dict[str, Any]:
        return counter(city)

    cities = eval_set(("c", ["weather?"]))
    first = await evaluate(PydanticAIRunner(agent), cities)
    second = await evaluate(PydanticAIRunner(agent), cities, tool_replay=ToolReplay.of(first.inference_results))
    third = await evaluate(PydanticAIRunner(agent), cities)

    assert replies(first) == replies(second) == {(1, "c"): ["n=1"]}
    assert replies(third) == {(1, "c"): ["n=2"]}  # live again: the tool ran once more only here
    assert counter.calls == ["Paris", "Paris"]
    assert calls(second) == [[("Paris", 1, True)]]


@pytest.mark.asyncio
async def test_the_evaluator_takes_the_report_itself_and_tool_calls_show_what_was_replayed() -> None:
    cities = eval_set(("c", ["Paris Rome"]))
    first = await evaluate(agent_using(Lookup()), cities)
    live = Lookup(start=100)

    second = await evaluate(agent_using(live, extra=["Oslo"]), cities, tool_replay=first)

    frame = second.tool_calls
    assert list(zip(frame["arguments"].map(lambda value: value["city"]), frame["replayed"], strict=True)) == [
        ("Paris", True),
        ("Rome", True),
        ("Oslo", False),
    ]
    assert not first.tool_calls["replayed"].any()


@pytest.mark.asyncio
async def test_a_cached_live_run_is_not_served_to_a_replayed_run(tmp_path: Any) -> None:
    cities = eval_set(("c", ["Paris"]))
    first = await evaluate(agent_using(Lookup()), cities, cache=tmp_path)
    live = Lookup(start=100)

    replayed = await evaluate(agent_using(live), cities, cache=tmp_path, tool_replay=first)

    assert not replayed.cases["cached_inference"].any()
    assert calls(replayed) == [[("Paris", 1, True)]]
