"""Values nested too deeply for JSON fail their own case (or are refused by a store), never the whole save."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import agenteval as ae
from agenteval._util.sync_bridge import run_sync
from agenteval._util.trpc_json import MAX_DEPTH
from agenteval.errors import ConfigError
from agenteval.evalresult.local import LocalEvalResultManager
from agenteval.evalresult.manager import EvalResultManager
from agenteval.evalresult.memory import InMemoryEvalResultManager
from agenteval.evalset.local import LocalEvalSetManager
from agenteval.evalset.memory import InMemoryEvalSetManager
from agenteval.evalset.message import Message
from agenteval.evalset.trace import ExecutionTrace, TraceStep, TraceTool
from agenteval.metric.local import LocalMetricManager
from agenteval.metric.memory import InMemoryMetricManager
from agenteval.runner import Turn, TurnRequest, TurnResult


def nested(levels: int) -> Any:
    """``{"a": {"a": ... "leaf" ...}}``: ``levels`` objects deep."""
    value: Any = "leaf"
    for _ in range(levels):
        value = {"a": value}
    return value


def deep_tool_agent(message: str, turn: Turn) -> str:
    if message == "deep":
        turn.record_tool("search", {"query": nested(250)}, "found")
    else:
        turn.record_tool("search", {"query": nested(MAX_DEPTH - 1)}, "found")
    return message


class DeepRunner:
    """A custom runner that hands back, unchecked, a value of ``levels`` levels in one part of its turn."""

    def __init__(self, part: str, levels: int = 250) -> None:
        self.part = part
        self.levels = levels

    async def run(self, request: TurnRequest) -> TurnResult:
        text = request.message.content
        value = nested(self.levels) if text == "deep" else {"a": 1}
        if self.part == "tool":
            return TurnResult(final_response=Message.assistant(text), tools=[ae.Tool(name="search", arguments=value)])
        if self.part == "message":
            return TurnResult(final_response=Message(role="assistant", content=text, tool_calls=[{"x": value}]))
        trace = ExecutionTrace(steps=[TraceStep(step_id="s1", tools=[TraceTool(name="search", result=value)])])
        return TurnResult(final_response=Message.assistant(text), execution_trace=trace)


def two_cases() -> ae.EvalSet:
    return ae.EvalSet.of("set", [ae.EvalCase.of("deep", "deep", expect="deep"), ae.EvalCase.of("fine", "fine")])


def evaluate(agent: Any, store: EvalResultManager, eval_set: ae.EvalSet | None = None) -> ae.EvaluationReport:
    evaluator = ae.Evaluator("app", agent, result_manager=store, progress=False)
    return evaluator.evaluate(eval_set or two_cases(), metrics=[ae.EvalMetric.final_response("contains")])


def statuses(report: ae.EvaluationReport) -> dict[str, tuple[ae.EvalStatus | None, str]]:
    return {r.eval_id: (r.final_eval_status, r.error_message) for r in report.result.eval_case_results}


def assert_saved_and_read_back(report: ae.EvaluationReport, store: EvalResultManager) -> None:
    stored = run_sync(store.get("app", report.result.eval_set_result_id))
    # The store stamps its copy with the time it was saved.
    assert stored.model_copy(update={"creation_timestamp": None}).to_json() == report.result.to_json()


@pytest.fixture(params=["memory", "local"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> EvalResultManager:
    return InMemoryEvalResultManager() if request.param == "memory" else LocalEvalResultManager(tmp_path)


def test_a_tool_call_with_too_deep_arguments_fails_only_its_case_and_the_result_saves(
    store: EvalResultManager,
) -> None:
    report = evaluate(deep_tool_agent, store)

    found = statuses(report)
    assert found["fine"] == (ae.EvalStatus.PASSED, "")
    status, message = found["deep"]
    assert status is ae.EvalStatus.FAILED
    assert "tool 'search' arguments.query.a.a" in message
    assert "nested 251 levels deep" in message
    assert f"limit of {MAX_DEPTH}" in message
    assert_saved_and_read_back(report, store)


def test_recording_a_very_deep_value_is_a_depth_error_not_a_recursion_error() -> None:
    turn = Turn(TurnRequest(message=Message.user("hi"), session_id="s", user_id="u"), [])
    with pytest.raises(TypeError, match=r"tool 'search' result\.a\.a\.a.*….*: nested 5000 levels deep"):
        turn.record_tool("search", {}, nested(5000))


@pytest.mark.parametrize(
    ("part", "where", "field", "depth", "at"),
    [
        ("tool", "tool call 1 ('search')", "arguments", 250, "arguments.a.a.a"),
        # The message's free-form field is its list of tool calls, two levels above the value.
        ("message", "final_response", "tool_calls", 252, "tool_calls[0].x.a.a"),
        ("trace", "execution_trace", "Steps[0].Tools[0].Result", 250, "Steps[0].Tools[0].Result.a.a.a"),
    ],
)
def test_a_custom_runner_s_too_deep_value_fails_only_its_case(
    store: EvalResultManager, part: str, where: str, field: str, depth: int, at: str
) -> None:
    report = evaluate(DeepRunner(part), store)

    found = statuses(report)
    assert found["fine"][0] is ae.EvalStatus.PASSED
    status, message = found["deep"]
    assert status is ae.EvalStatus.FAILED
    assert (
        f"turn 1: {where}: field {field} is nested {depth} levels deep, over the limit of {MAX_DEPTH}"
        f" levels (at {at}" in message
    )
    assert_saved_and_read_back(report, store)


def test_a_value_at_the_limit_is_recorded_saved_and_read_back(store: EvalResultManager) -> None:
    report = evaluate(DeepRunner("tool", levels=MAX_DEPTH), store)

    assert {status for status, _ in statuses(report).values()} == {ae.EvalStatus.PASSED}
    assert_saved_and_read_back(report, store)


def test_a_case_with_too_deep_expected_arguments_fails_only_that_case(store: EvalResultManager) -> None:
    deep = ae.EvalCase.of("deep", "deep", expect="deep", tools=[ae.Tool(name="search", arguments=nested(200))])
    eval_set = ae.EvalSet.of("set", [deep, ae.EvalCase.of("fine", "fine")])

    report = evaluate(deep_tool_agent, store, eval_set)

    found = statuses(report)
    assert found["fine"][0] is ae.EvalStatus.PASSED
    assert found["deep"][0] is ae.EvalStatus.FAILED
    assert "eval case deep: field conversation[0].tools[0].arguments is nested 200 levels deep" in found["deep"][1]
    assert_saved_and_read_back(report, store)


# --- stores: a ConfigError naming the case (or metric) and the field ---


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["memory", "local"])
async def test_adding_or_updating_a_too_deep_case_is_a_config_error(tmp_path: Path, kind: str) -> None:
    store = InMemoryEvalSetManager() if kind == "memory" else LocalEvalSetManager(tmp_path)
    await store.create("app", "set")
    deep = ae.EvalCase.of("c1", "hi", tools=[ae.Tool(name="search", arguments=nested(200))])

    with pytest.raises(ConfigError) as added:
        await store.add_case("app", "set", deep)
    await store.add_case("app", "set", ae.EvalCase.of("c1", "hi"))
    with pytest.raises(ConfigError) as updated:
        await store.update_case("app", "set", deep)

    for info in (added, updated):
        message = str(info.value)
        assert message.startswith(
            "eval case app.set.c1: field conversation[0].tools[0].arguments is nested 200 levels deep, over the limit"
            f" of {MAX_DEPTH} levels (at conversation[0].tools[0].arguments.a.a.a"
        )

    [kept] = (await store.get("app", "set")).eval_cases
    assert kept.eval_id == "c1" and kept.conversation[0].tools == []


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["memory", "local"])
async def test_adding_a_too_deep_metric_is_a_config_error(tmp_path: Path, kind: str) -> None:
    store = InMemoryMetricManager() if kind == "memory" else LocalMetricManager(tmp_path)
    metric = ae.EvalMetric(metric_name="m", extension=nested(100))

    expected = r"^metric app\.set\.m: field extension is nested 100 levels deep.*\(at extension\.a\.a"
    with pytest.raises(ConfigError, match=expected):
        await store.add("app", "set", metric)


def test_a_file_nested_past_what_json_parsing_takes_says_so(tmp_path: Path) -> None:
    path = tmp_path / "app" / "set.evalset.json"
    path.parent.mkdir()
    path.write_text('{"evalSetId": "set", "description": ' + "[" * 300 + "]" * 300 + "}", encoding="utf-8")

    with pytest.raises(ConfigError, match=re.escape("nested too deeply")):
        run_sync(LocalEvalSetManager(tmp_path).get("app", "set"))


def test_text_with_a_lone_surrogate_fails_only_its_case_and_the_result_saves(tmp_path: Path) -> None:
    cut = json.loads('"cut emoji \\ud83d"')  # half an emoji, as json.loads decodes it

    def agent(message: str, turn: ae.Turn) -> str:
        turn.record_tool("search", {"q": message}, {"snippet": cut if message == "tool" else "fine"})
        return cut if message == "reply" else "ok"

    cases = [ae.EvalCase.of(name, ae.Invocation.of(name, "ok")) for name in ("good", "tool", "reply")]
    report = ae.Evaluator("app", agent, result_manager=ae.LocalEvalResultManager(tmp_path), progress=False).evaluate(
        ae.EvalSet.of("s", cases), metrics=[ae.EvalMetric.final_response()]
    )

    errors = dict(zip(report.cases["eval_id"], report.cases["error_message"], strict=True))
    assert errors["good"] == ""
    assert "tools[0].result.snippet holds a lone surrogate" in errors["tool"]
    assert "final_response.content holds a lone surrogate" in errors["reply"]
    saved = ae.EvaluationReport.load(next(tmp_path.rglob("*.json")))
    assert saved.cases["eval_id"].tolist() == ["good", "tool", "reply"]
