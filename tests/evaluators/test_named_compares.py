"""Named compares (``compareName``) at every level, looked up in the active metric registry."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agenteval.errors import ConfigError
from agenteval.evalset.message import Message
from agenteval.evalset.models import Invocation, Tool
from agenteval.evaluators.final_response_evaluator import FinalResponseEvaluator
from agenteval.evaluators.matching import match_final_response, match_json, match_json_text, match_text
from agenteval.evaluators.matching import match_tool_trajectory as match_trajectory
from agenteval.evaluators.tool_trajectory_evaluator import ToolTrajectoryEvaluator
from agenteval.metric.criterion import (
    FinalResponseCriterion,
    JSONCriterion,
    TextCriterion,
    ToolTrajectoryCriterion,
)
from agenteval.metric.models import EvalMetric
from agenteval.metric.registry import MetricRegistry, use_metric_registry
from agenteval.status import EvalStatus


def _same_value(actual: Any, expected: Any) -> bool:
    if not isinstance(actual, dict) or not isinstance(expected, dict):
        return False
    return bool(actual.get("value") == expected.get("value"))


def _same_status(actual: Any, expected: Any) -> bool:
    if not isinstance(actual, dict) or not isinstance(expected, dict):
        return False
    return bool(actual.get("status") == expected.get("status"))


def _broken(actual: Any, expected: Any) -> bool:
    raise ValueError("cannot compare")


def _not_a_bool(actual: Any, expected: Any) -> bool:
    return None  # type: ignore[return-value]


@pytest.fixture
def registry() -> Iterator[MetricRegistry]:
    registry = MetricRegistry()
    registry.register_text_compare("trim_equal", lambda actual, expected: actual.strip() == expected.strip())
    registry.register_text_compare(
        "case_insensitive_equal", lambda actual, expected: actual.lower() == expected.lower()
    )
    registry.register_text_compare("broken", _broken)
    registry.register_json_compare("allow_delta", _same_value)
    registry.register_json_compare("match_result", _same_status)
    registry.register_json_compare("broken", _broken)
    registry.register_json_compare("not_a_bool", _not_a_bool)
    registry.register_json_compare("raw_equal", lambda actual, expected: actual == expected)
    registry.register_tool_trajectory_compare(
        "invocation_id_equal", lambda actual, expected: actual.invocation_id == expected.invocation_id
    )
    registry.register_tool_trajectory_compare("broken", _broken)
    registry.register_final_response_compare(
        "invocation_id_equal", lambda actual, expected: actual.invocation_id == expected.invocation_id
    )
    with use_metric_registry(registry):
        yield registry


# --- text -----------------------------------------------------------------------------------------

TEXT_CASES: list[tuple[str, dict[str, Any], str, str, str | None]] = [
    ("trim equal", {"compareName": "trim_equal"}, " value ", "value", None),
    (
        "false names the compare",
        {"compareName": "trim_equal"},
        "a",
        "b",
        'text compare "trim_equal" returned false (actual "a", expected "b")',
    ),
    ("length is not checked", {"compareName": "trim_equal", "length": {"max": 1}}, " long ", "long", None),
    ("strategy is not used", {"compareName": "trim_equal", "matchStrategy": "regex"}, "(", "(", None),
    ("ignore wins", {"compareName": "missing", "ignore": True}, "a", "b", None),
]


@pytest.mark.parametrize(
    ("fields", "actual", "expected", "reason"), [c[1:] for c in TEXT_CASES], ids=[c[0] for c in TEXT_CASES]
)
@pytest.mark.usefixtures("registry")
def test_text_compare(fields: dict[str, Any], actual: str, expected: str, reason: str | None) -> None:
    assert match_text(actual, expected, TextCriterion.model_validate(fields)) == reason


# --- JSON -----------------------------------------------------------------------------------------

JSON_CASES: list[tuple[str, dict[str, Any], Any, Any, str | None]] = [
    ("same value", {"compareName": "allow_delta"}, {"value": 1, "t": 1}, {"value": 1, "t": 2}, None),
    (
        "false names the compare",
        {"compareName": "allow_delta"},
        {"value": 1},
        {"value": 2},
        'json compare "allow_delta" returned false (actual {"value":1}, expected {"value":2})',
    ),
    ("replaces valid and skip", {"compareName": "raw_equal", "valid": True, "matchStrategy": "skip"}, "x", "x", None),
    ("replaces schema", {"compareName": "raw_equal", "schema": False}, 1, 1, None),
    ("replaces an invalid schema", {"compareName": "raw_equal", "schema": {"type": 1}}, 1, 1, None),
    ("ignore wins", {"compareName": "missing", "ignore": True}, 1, 2, None),
]


@pytest.mark.parametrize(
    ("fields", "actual", "expected", "reason"), [c[1:] for c in JSON_CASES], ids=[c[0] for c in JSON_CASES]
)
@pytest.mark.usefixtures("registry")
def test_json_compare(fields: dict[str, Any], actual: Any, expected: Any, reason: str | None) -> None:
    assert match_json(actual, expected, JSONCriterion.model_validate(fields)) == reason


@pytest.mark.usefixtures("registry")
def test_json_compare_trees_still_conflict() -> None:
    criterion = JSONCriterion.model_validate({"compareName": "raw_equal", "onlyTree": {"a": True}, "ignoreTree": {}})
    assert match_json(1, 1, criterion) is None
    conflicting = JSONCriterion.model_validate(
        {"compareName": "raw_equal", "onlyTree": {"a": True}, "ignoreTree": {"b": True}}
    )
    with pytest.raises(ConfigError, match="onlyTree and ignoreTree cannot be set at the same time"):
        match_json(1, 1, conflicting)


def test_json_compare_gets_raw_final_response_texts(registry: MetricRegistry) -> None:
    seen: list[tuple[Any, Any]] = []

    def record(actual: Any, expected: Any) -> bool:
        seen.append((actual, expected))
        return True

    registry.register_json_compare("record", record)
    assert match_json_text("not json", '{"a": 1}', JSONCriterion(compare_name="record", valid=True)) is None
    assert seen == [("not json", '{"a": 1}')]


@pytest.mark.parametrize(
    ("criterion", "message"),
    [
        (JSONCriterion(compare_name="broken"), 'json compare "broken" failed: ValueError: cannot compare'),
        (JSONCriterion(compare_name="not_a_bool"), 'json compare "not_a_bool" returned NoneType, not a bool'),
        (JSONCriterion(compare_name="missing"), 'json compare "missing" is not registered'),
    ],
)
@pytest.mark.usefixtures("registry")
def test_json_compare_errors(criterion: JSONCriterion, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        match_json({}, {}, criterion)
    with pytest.raises(ConfigError, match=message):
        match_json_text("{}", "{}", criterion)


@pytest.mark.usefixtures("registry")
def test_text_compare_errors() -> None:
    with pytest.raises(ConfigError, match='text compare "broken" failed: ValueError: cannot compare'):
        match_text("a", "b", TextCriterion(compare_name="broken"))


# --- tool trajectory ------------------------------------------------------------------------------


def _tools_turn(invocation_id: str = "", *tools: Tool) -> Invocation:
    return Invocation(invocation_id=invocation_id, tools=list(tools))


SEARCH_OK = Tool(id="1", name=" search ", arguments={"q": "x"}, result={"status": "ok", "took": 3})
SEARCH_EXPECTED = Tool(id="2", name="search", arguments={"q": "y"}, result={"status": "ok", "took": 9})

TRAJECTORY_CASES: list[tuple[str, dict[str, Any], Invocation, Invocation, str | None]] = [
    (
        "tool strategy with name and result compares",
        {
            "toolStrategy": {
                "search": {"name": {"compareName": "trim_equal"}, "result": {"compareName": "match_result"}}
            }
        },
        _tools_turn("a", SEARCH_OK),
        _tools_turn("b", SEARCH_EXPECTED),
        None,
    ),
    (
        "result compare false",
        {"defaultStrategy": {"result": {"compareName": "match_result"}}},
        _tools_turn("a", Tool(name="search", result={"status": "error"})),
        _tools_turn("b", Tool(name="search", result={"status": "ok"})),
        'result mismatch: json compare "match_result" returned false (actual {"status":"error"}, '
        'expected {"status":"ok"})',
    ),
    (
        "default strategy with name and arguments compares",
        {
            "defaultStrategy": {
                "name": {"compareName": "case_insensitive_equal"},
                "arguments": {"compareName": "allow_delta"},
            }
        },
        _tools_turn("a", Tool(name="Tool", arguments={"value": 1, "extra": True})),
        _tools_turn("b", Tool(name="tool", arguments={"value": 1})),
        None,
    ),
    (
        "arguments compare false",
        {"defaultStrategy": {"arguments": {"compareName": "allow_delta"}}},
        _tools_turn("a", Tool(name="calc", arguments={"value": 1})),
        _tools_turn("b", Tool(name="calc", arguments={"value": 2})),
        'expected tools[0] "calc" has no matching actual call: closest is actual tools[0] "calc": '
        'arguments mismatch: json compare "allow_delta" returned false',
    ),
    (
        "trajectory compare replaces everything",
        {"compareName": "invocation_id_equal", "defaultStrategy": {"name": {"compareName": "missing"}}},
        _tools_turn("same", Tool(name="a")),
        _tools_turn("same", Tool(name="b"), Tool(name="c")),
        None,
    ),
    (
        "trajectory compare runs without tools",
        {"compareName": "invocation_id_equal"},
        _tools_turn("a"),
        _tools_turn("b", Tool(name="calc")),
        'tool trajectory compare "invocation_id_equal" returned false (actual tools [], expected tools ["calc"])',
    ),
]


@pytest.mark.parametrize(
    ("fields", "actual", "expected", "reason"),
    [c[1:] for c in TRAJECTORY_CASES],
    ids=[c[0] for c in TRAJECTORY_CASES],
)
@pytest.mark.usefixtures("registry")
def test_tool_trajectory_compares(
    fields: dict[str, Any], actual: Invocation, expected: Invocation, reason: str | None
) -> None:
    result = match_trajectory(actual, expected, ToolTrajectoryCriterion.model_validate(fields))
    if reason is None:
        assert result is None
    else:
        assert result is not None
        assert reason in result, result


@pytest.mark.usefixtures("registry")
def test_tool_trajectory_compare_that_raises_fails_the_case() -> None:
    metric = EvalMetric.model_validate(
        {"metricName": "t", "threshold": 1, "criterion": {"toolTrajectory": {"compareName": "broken"}}}
    )
    with pytest.raises(ConfigError, match='tool trajectory compare "broken" failed: ValueError: cannot compare'):
        ToolTrajectoryEvaluator().evaluate([_tools_turn()], [_tools_turn()], metric)


# --- final response -------------------------------------------------------------------------------


def _answer(invocation_id: str, content: str | None) -> Invocation:
    return Invocation(
        invocation_id=invocation_id, final_response=None if content is None else Message.assistant(content)
    )


FINAL_RESPONSE_CASES: list[tuple[str, dict[str, Any], Invocation, Invocation, str | None]] = [
    ("text compare", {"text": {"compareName": "trim_equal"}}, _answer("a", " hi "), _answer("b", "hi"), None),
    (
        "text compare false",
        {"text": {"compareName": "trim_equal"}},
        _answer("a", "hi"),
        _answer("b", "bye"),
        'text mismatch: text compare "trim_equal" returned false (actual "hi", expected "bye")',
    ),
    ("json compare on raw texts", {"json": {"compareName": "raw_equal"}}, _answer("a", "x"), _answer("b", "x"), None),
    (
        "final response compare replaces everything",
        {"compareName": "invocation_id_equal", "text": {"compareName": "missing"}, "rouge": {"rougeType": "rouge1"}},
        _answer("same", "a"),
        _answer("same", "b"),
        None,
    ),
    (
        "final response compare runs without responses",
        {"compareName": "invocation_id_equal"},
        _answer("a", None),
        _answer("b", None),
        'final response compare "invocation_id_equal" returned false (actual none, expected none)',
    ),
    (
        "final response compare false",
        {"compareName": "invocation_id_equal"},
        _answer("a", "x"),
        _answer("b", "y"),
        'final response compare "invocation_id_equal" returned false (actual "x", expected "y")',
    ),
]


@pytest.mark.parametrize(
    ("fields", "actual", "expected", "reason"),
    [c[1:] for c in FINAL_RESPONSE_CASES],
    ids=[c[0] for c in FINAL_RESPONSE_CASES],
)
@pytest.mark.usefixtures("registry")
def test_final_response_compares(
    fields: dict[str, Any], actual: Invocation, expected: Invocation, reason: str | None
) -> None:
    assert match_final_response(actual, expected, FinalResponseCriterion.model_validate(fields)) == reason


# --- evaluators -----------------------------------------------------------------------------------


def _metric(criterion: dict[str, Any]) -> EvalMetric:
    return EvalMetric.model_validate({"metricName": "m", "threshold": 1, "criterion": criterion})


@pytest.mark.usefixtures("registry")
def test_evaluators_score_with_compares() -> None:
    trajectory = ToolTrajectoryEvaluator().evaluate(
        [_tools_turn("1"), _tools_turn("x")],
        [_tools_turn("1"), _tools_turn("2")],
        _metric({"toolTrajectory": {"compareName": "invocation_id_equal"}}),
    )
    assert [r.score for r in trajectory.per_invocation_results] == [1.0, 0.0]
    assert trajectory.overall_score == 0.5
    details = trajectory.per_invocation_results[1].details
    assert details is not None
    assert details.reason.startswith('tool trajectory mismatch: tool trajectory compare "invocation_id_equal"')

    final = FinalResponseEvaluator().evaluate(
        [_answer("1", " Paris ")],
        [_answer("2", "Paris")],
        _metric({"finalResponse": {"text": {"compareName": "trim_equal"}}}),
    )
    assert final.overall_status == EvalStatus.PASSED


def test_unknown_names_fail_before_any_compare_runs(registry: MetricRegistry) -> None:
    calls: list[str] = []

    def counting(actual: str, expected: str) -> bool:
        calls.append(actual)
        return True

    registry.register_text_compare("counting", counting)
    metric = _metric(
        {
            "toolTrajectory": {
                "defaultStrategy": {"name": {"compareName": "counting"}},
                "toolStrategy": {"lookup": {"arguments": {"compareName": "loose"}}},
            }
        }
    )
    turn = _tools_turn("1", Tool(name="calc"))
    with pytest.raises(
        ConfigError,
        match='criterion.toolTrajectory.toolStrategy.lookup.arguments.compareName "loose" is not registered as a JSON',
    ):
        ToolTrajectoryEvaluator().evaluate([turn], [turn], metric)
    assert calls == []


def test_names_resolve_in_the_active_registry_only() -> None:
    criterion = TextCriterion(compare_name="trim_equal")
    with pytest.raises(ConfigError, match='text compare "trim_equal" is not registered'):
        match_text(" a", "a", criterion)
    registry = MetricRegistry()
    registry.register_text_compare("trim_equal", lambda actual, expected: actual.strip() == expected.strip())
    with use_metric_registry(registry):
        assert match_text(" a", "a", criterion) is None
    with pytest.raises(ConfigError, match="is not registered"):
        match_text(" a", "a", criterion)
