"""Tool-trajectory matching, mirroring the reference's tables plus the inventory's edge cases."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from agenteval.errors import ConfigError
from agenteval.evalset.models import Invocation, Tool
from agenteval.evaluators.matching import (
    default_tool_strategy,
    match_tool,
    match_tool_trajectory,
    maximum_bipartite_matching,
    strategy_for,
)
from agenteval.metric.criterion import ToolTrajectoryCriterion, ToolTrajectoryStrategy

ToolSpec = tuple[str, str, Any] | tuple[str, str, Any, Any]


def _turn(*tools: ToolSpec) -> Invocation:
    """Build a turn from ``(id, name, arguments[, result])`` tuples."""
    return Invocation(
        tools=[Tool(id=t[0], name=t[1], arguments=t[2], result=t[3] if len(t) > 3 else None) for t in tools]
    )


def _criterion(**fields: Any) -> ToolTrajectoryCriterion:
    return ToolTrajectoryCriterion.model_validate(fields)


# --- maximum bipartite matching ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("adjacency", "right_size", "expected"),
    [
        ([[0, 1], [0]], 2, [1, 0]),  # greedy would give left 0 right 0 and strand left 1
        ([[0]], 1, [0]),
        ([[0], []], 1, [0, None]),
        ([[0], [0]], 1, [0, None]),
        ([], 3, []),
        ([[], []], 0, [None, None]),
        ([[0, 1, 2], [0], [1]], 3, [2, 0, 1]),
        ([[1], [0, 1], [0]], 2, [1, 0, None]),
    ],
)
def test_maximum_bipartite_matching(adjacency: list[list[int]], right_size: int, expected: list[int | None]) -> None:
    assert maximum_bipartite_matching(adjacency, right_size) == expected


def _brute_force_size(adjacency: list[list[int]], right_size: int) -> int:
    best = 0
    for size in range(len(adjacency), 0, -1):
        for lefts in itertools.combinations(range(len(adjacency)), size):
            for rights in itertools.permutations(range(right_size), size):
                if all(r in adjacency[left] for left, r in zip(lefts, rights, strict=True)):
                    return size
    return best


def test_maximum_bipartite_matching_is_maximum() -> None:
    rng = random.Random(7)
    for _ in range(200):
        left_size, right_size = rng.randint(0, 5), rng.randint(0, 5)
        adjacency = [[r for r in range(right_size) if rng.random() < 0.4] for _ in range(left_size)]
        matching = maximum_bipartite_matching(adjacency, right_size)
        paired = [r for r in matching if r is not None]
        assert len(paired) == len(set(paired))
        assert all(r in adjacency[left] for left, r in enumerate(matching) if r is not None)
        assert len(paired) == _brute_force_size(adjacency, right_size)


def test_maximum_bipartite_matching_deep_search_does_not_recurse() -> None:
    # Left k first tries right k-1, owned by left k-1, so each search walks the whole chain.
    size = 1500
    adjacency = [[0]] + [[k - 1, k] for k in range(1, size)]
    assert maximum_bipartite_matching(adjacency, size) == list(range(size))


# --- strategy selection and one pair ------------------------------------------------------------


def test_strategy_for_lookup_order() -> None:
    by_actual = ToolTrajectoryStrategy.model_validate({"name": {"matchStrategy": "contains"}})
    by_expected = ToolTrajectoryStrategy.model_validate({"result": {}})
    default = ToolTrajectoryStrategy.model_validate({"arguments": {}})
    criterion = ToolTrajectoryCriterion(tool_strategy={"a": by_actual, "e": by_expected}, default_strategy=default)
    assert strategy_for(Tool(name="a"), Tool(name="e"), criterion) is by_actual
    assert strategy_for(Tool(name="x"), Tool(name="e"), criterion) is by_expected
    assert strategy_for(Tool(name="x"), Tool(name="y"), criterion) is default
    assert strategy_for(Tool(name="x"), Tool(name="y"), ToolTrajectoryCriterion()) == default_tool_strategy()


def test_default_tool_strategy_is_a_fresh_copy() -> None:
    strategy = default_tool_strategy()
    assert strategy.to_dict() == {"name": {"matchStrategy": "exact"}, "arguments": {}, "result": {}}
    assert strategy.name is not None
    strategy.name.ignore = True
    assert default_tool_strategy().name is not None
    assert not default_tool_strategy().name.ignore  # type: ignore[union-attr]


PAIR_CASES: list[tuple[str, dict[str, Any], Tool, Tool, str | None]] = [
    (
        "name mismatch",
        {"name": {"matchStrategy": "exact"}},
        Tool(name="a"),
        Tool(name="b"),
        'name mismatch: actual "a" and expected "b" do not match',
    ),
    (
        "arguments mismatch",
        {"arguments": {}},
        Tool(name="a", arguments={"k": 1}),
        Tool(name="a", arguments={"k": 2}),
        "arguments mismatch: $.k: actual 1 and expected 2 do not match",
    ),
    (
        "arguments array mismatch",
        {"arguments": {}},
        Tool(arguments=[1.0]),
        Tool(arguments=[2.0]),
        "arguments mismatch: $[0]",
    ),
    ("arguments array match", {"arguments": {}}, Tool(arguments=[1, 2]), Tool(arguments=[1, 2]), None),
    ("result mismatch", {"result": {}}, Tool(result={"k": 1}), Tool(result={"k": 2}), "result mismatch: $.k"),
    ("result array mismatch", {"result": {}}, Tool(result=[1]), Tool(result=[2]), "result mismatch: $[0]"),
    ("result array match", {"result": {}}, Tool(result=[1, 2]), Tool(result=[1, 2]), None),
    ("empty strategy compares nothing", {}, Tool(name="a", arguments=1), Tool(name="b", arguments=2), None),
    (
        "arguments null vs object",
        {"arguments": {}},
        Tool(),
        Tool(arguments={}),
        "arguments mismatch: $: actual null and expected {} do not match",
    ),
    (
        "ids never compared",
        {"name": {}, "arguments": {}, "result": {}},
        Tool(id="x", name="t"),
        Tool(id="y", name="t"),
        None,
    ),
    (
        "name checked first",
        {"name": {}, "arguments": {}},
        Tool(name="a", arguments=1),
        Tool(name="b", arguments=2),
        "name mismatch",
    ),
]


@pytest.mark.parametrize(
    ("strategy", "actual", "expected", "reason"), [c[1:] for c in PAIR_CASES], ids=[c[0] for c in PAIR_CASES]
)
def test_match_tool(strategy: dict[str, Any], actual: Tool, expected: Tool, reason: str | None) -> None:
    result = match_tool(actual, expected, ToolTrajectoryStrategy.model_validate(strategy))
    assert result == reason if reason is None else (result is not None and reason in result), result


# --- whole turns -------------------------------------------------------------------------------

REGEX_NAMES = {"defaultStrategy": {"name": {"matchStrategy": "regex"}}}

TURN_CASES: list[tuple[str, dict[str, Any], Invocation, Invocation, str | None]] = [
    ("zero tools", {}, _turn(), _turn(), None),
    (
        "unordered",
        {},
        _turn(("call-1", "shared", {"a": 1}, {"r": 2}), ("call-2", "shared", {"a": 2}, {"r": 3})),
        _turn(("call-2", "shared", {"a": 2}, {"r": 3}), ("call-1", "shared", {"a": 1}, {"r": 2})),
        None,
    ),
    (
        "order sensitive swap",
        {"orderSensitive": True},
        _turn(("call-1", "tool", {"a": 1}), ("call-2", "tool", {"a": 2})),
        _turn(("call-2", "tool", {"a": 2}), ("call-1", "tool", {"a": 1})),
        'expected tools[1] "tool" has no matching actual call in order: all 2 actual calls were consumed',
    ),
    (
        "order sensitive leading extra actual",
        {"orderSensitive": True},
        _turn(("call-0", "other", {"extra": 1}), ("call-1", "tool", {"a": 1}), ("call-2", "tool", {"a": 2})),
        _turn(("call-1", "tool", {"a": 1}), ("call-2", "tool", {"a": 2}), ("call-3", "tool", {"a": 3})),
        'expected tools[2] "tool" has no matching actual call in order',
    ),
    (
        "order sensitive in order",
        {"orderSensitive": True},
        _turn(("1", "a", {}), ("2", "b", {})),
        _turn(("1", "a", {}), ("2", "b", {})),
        None,
    ),
    (
        "subset",
        {"subsetMatching": True},
        _turn(("call-1", "tool", {"a": 0}), ("call-2", "tool", {"a": 1}), ("call-3", "tool", {"a": 2})),
        _turn(("call-2", "tool", {"a": 1}), ("call-3", "tool", {"a": 2})),
        None,
    ),
    (
        "count mismatch",
        {},
        _turn(("call-1", "tool", {"a": 1})),
        _turn(("call-1", "tool", {"a": 1}), ("call-2", "search", {"a": 2})),
        'number of tool calls mismatch: actual(1) != expected(2), actual ["tool"], expected ["tool","search"]',
    ),
    (
        "extra actual without subset",
        {},
        _turn(("1", "a", {}), ("2", "b", {})),
        _turn(("1", "a", {})),
        "actual(2) != expected(1)",
    ),
    (
        "subset too few actual",
        {"subsetMatching": True},
        _turn(("call-1", "tool", {"a": 1})),
        _turn(("call-1", "tool", {"a": 1}), ("call-2", "tool", {"a": 2})),
        "number of tool calls mismatch: actual(1) < expected(2)",
    ),
    ("actual but none expected", {}, _turn(("1", "a", {})), _turn(), "actual(1) != expected(0)"),
    ("subset with none expected", {"subsetMatching": True}, _turn(("1", "a", {})), _turn(), None),
    (
        "per-tool strategy mismatch",
        {"toolStrategy": {"tool": {"name": {}, "arguments": {}, "result": {}}}},
        _turn(("call-1", "tool", {"k": "v"}, {"out": "ok"})),
        _turn(("call-1", "tool", {"k": "other"}, {"out": "ok"})),
        'expected tools[0] "tool" has no matching actual call: closest is actual tools[0] "tool": '
        'arguments mismatch: $.k: actual "v" and expected "other" do not match',
    ),
    (
        "strategy found by expected name",
        {"toolStrategy": {"custom": {}}},
        _turn(("call-1", "unknown", {"x": 1})),
        _turn(("call-1", "custom", {"x": 2})),
        None,
    ),
    (
        "per-tool strategy without name: names not compared",
        {"toolStrategy": {"get_time": {"result": {"ignore": True}}}},
        _turn(("1", "now", {"tz": "UTC"}, "12:00")),
        _turn(("1", "get_time", {"tz": "CET"}, "13:00")),
        None,
    ),
    (
        "no inheritance from defaultStrategy",
        {
            "defaultStrategy": {"name": {}, "arguments": {}},
            "toolStrategy": {"calc": {"arguments": {"onlyTree": {"a": True}}}},
        },
        _turn(("1", "calc", {"a": 1, "b": 2})),
        _turn(("1", "CALC", {"a": 1, "b": 3})),
        None,
    ),
    (
        "defaultStrategy without result",
        {"defaultStrategy": {"name": {}, "arguments": {}}},
        _turn(("1", "calc", {"a": 1}, 3)),
        _turn(("1", "calc", {"a": 1}, 4)),
        None,
    ),
    (
        "built-in default compares results",
        {},
        _turn(("1", "calc", {"a": 1}, 3)),
        _turn(("1", "calc", {"a": 1}, 4)),
        'closest is actual tools[0] "calc": result mismatch: $: actual 3 and expected 4 do not match',
    ),
    ("ids never compared", {}, _turn(("x", "calc", {"a": 1})), _turn(("y", "calc", {"a": 1})), None),
    (
        "ordered subset skips and succeeds",
        {"orderSensitive": True, "subsetMatching": True},
        _turn(("call-1", "other", {"a": 0}), ("call-2", "tool", {"a": 1})),
        _turn(("call-2", "tool", {"a": 1})),
        None,
    ),
    (
        "ordered subset wrong order",
        {"orderSensitive": True, "subsetMatching": True},
        _turn(("1", "b", {}), ("2", "a", {}), ("3", "c", {})),
        _turn(("1", "a", {}), ("2", "b", {})),
        'expected tools[1] "b" has no matching actual call in order: closest is actual tools[2] "c": name mismatch',
    ),
    (
        "unordered subset any order",
        {"subsetMatching": True},
        _turn(("1", "b", {}), ("2", "a", {}), ("3", "c", {})),
        _turn(("1", "a", {}), ("2", "b", {})),
        None,
    ),
    (
        "bipartite: greedy fails, maximum matching succeeds",
        REGEX_NAMES,
        _turn(("1", "search_web", {}), ("2", "search_docs", {})),
        _turn(("1", "search.*", {}), ("2", "^search_web$", {})),
        None,
    ),
    (
        "bipartite case is order sensitive",
        {**REGEX_NAMES, "orderSensitive": True},
        _turn(("1", "search_web", {}), ("2", "search_docs", {})),
        _turn(("1", "search.*", {}), ("2", "^search_web$", {})),
        'expected tools[1] "^search_web$" has no matching actual call in order',
    ),
    (
        "regex names are RE2: Han script class",
        REGEX_NAMES,
        _turn(("1", "查询天气", {})),
        _turn(("1", r"^查询\p{Han}+$", {})),
        None,
    ),
    (
        "regex names are RE2: word class is ASCII-only",
        REGEX_NAMES,
        _turn(("1", "get_天气", {})),
        _turn(("1", r"^get_\w+$", {})),
        "name mismatch",
    ),
    (
        "regex names are RE2: $ only at the end",
        REGEX_NAMES,
        _turn(("1", "lookup\n", {})),
        _turn(("1", "^lookup$", {})),
        "name mismatch",
    ),
    (
        "one actual serves one expected",
        {},
        _turn(("1", "search", {"q": "x"}), ("2", "search", {"q": "y"})),
        _turn(("1", "search", {"q": "x"}), ("2", "search", {"q": "x"})),
        'expected tools[1] "search" has no matching actual call: the calls it matches (actual tools[0]) '
        "are paired with other expected calls",
    ),
    (
        "closest prefers same name",
        {},
        _turn(("1", "other", {"q": "x"}), ("2", "search", {"q": "y"})),
        _turn(("1", "other", {"q": "x"}), ("2", "search", {"q": "z"})),
        'closest is actual tools[1] "search": arguments mismatch: $.q: actual "y" and expected "z"',
    ),
    (
        "several unmatched listed",
        {},
        _turn(("1", "a", {"v": 1}), ("2", "b", {"v": 1})),
        _turn(("1", "a", {"v": 2}), ("2", "b", {"v": 2})),
        'expected tools[0] "a" has no matching actual call: closest is actual tools[0] "a": arguments mismatch: '
        '$.v: actual 1 and expected 2 do not match; expected tools[1] "b" has no matching actual call',
    ),
    (
        "case-insensitive names",
        {"defaultStrategy": {"name": {"caseInsensitive": True}}},
        _turn(("1", "Calc", {})),
        _turn(("1", "calc", {})),
        None,
    ),
]


@pytest.mark.parametrize(
    ("fields", "actual", "expected", "reason"), [c[1:] for c in TURN_CASES], ids=[c[0] for c in TURN_CASES]
)
def test_match_tool_trajectory(
    fields: dict[str, Any], actual: Invocation, expected: Invocation, reason: str | None
) -> None:
    result = match_tool_trajectory(actual, expected, _criterion(**fields))
    if reason is None:
        assert result is None
    else:
        assert result is not None
        assert reason in result, result
        assert "\n" not in result


def test_huge_values_are_truncated() -> None:
    actual = _turn(("1", "t", {"blob": "x" * 10_000}))
    expected = _turn(("1", "t", {"blob": "y" * 10_000}))
    result = match_tool_trajectory(actual, expected, _criterion())
    assert result is not None
    assert len(result) < 700


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"compareName": "match_tools"},
            'criterion.toolTrajectory.compareName "match_tools" is not registered as a tool trajectory compare',
        ),
        (
            {"defaultStrategy": {"name": {"compareName": "fold"}}},
            'criterion.toolTrajectory.defaultStrategy.name.compareName "fold" is not registered as a text compare',
        ),
        (
            {"toolStrategy": {"calc": {"result": {"compareName": "r"}}}},
            'criterion.toolTrajectory.toolStrategy.calc.result.compareName "r" is not registered as a JSON compare',
        ),
        (
            {"toolStrategy": {"get.time": {"arguments": {"compareName": "r"}}}},
            r'criterion.toolTrajectory.toolStrategy\["get.time"\].arguments.compareName "r"',
        ),
        ({"defaultStrategy": {"name": {"matchStrategy": "regex"}}}, "invalid regex"),
        (
            {"defaultStrategy": {"arguments": {"onlyTree": {"a": True}, "ignoreTree": {"b": True}}}},
            "onlyTree and ignoreTree",
        ),
        ({"defaultStrategy": {"arguments": {"onlyTree": {"a": 1}}}}, "onlyTree.a must be a bool or an object"),
        (
            {"defaultStrategy": {"result": {"schema": {"type": "nope"}}}},
            r"criterion.toolTrajectory.defaultStrategy.result.schema is not a valid JSON Schema: at \$.type",
        ),
        (
            {"toolStrategy": {"calc": {"arguments": {"schema": {"$schema": "urn:custom"}}}}},
            "criterion.toolTrajectory.toolStrategy.calc.arguments.schema is not a valid JSON Schema: unsupported",
        ),
    ],
)
def test_match_tool_trajectory_config_errors(fields: dict[str, Any], message: str) -> None:
    actual = _turn(("1", "calc", {"a": 1}))
    expected = _turn(("1", "calc(", {"a": 1}))
    with pytest.raises(ConfigError, match=message):
        match_tool_trajectory(actual, expected, _criterion(**fields))


def test_match_tool_trajectory_does_not_mutate_inputs() -> None:
    actual = _turn(("1", "b", {"x": [1, 2]}), ("2", "a", {"y": {"z": 1}}))
    expected = _turn(("1", "a", {"y": {"z": 1}}), ("2", "b", {"x": [1, 2]}))
    criterion = _criterion(toolStrategy={"a": {"arguments": {"ignoreTree": {"y": {"z": True}}}}})
    before = (actual.model_dump(), expected.model_dump(), criterion.model_dump())
    assert match_tool_trajectory(actual, expected, criterion) is None
    assert (actual.model_dump(), expected.model_dump(), criterion.model_dump()) == before
