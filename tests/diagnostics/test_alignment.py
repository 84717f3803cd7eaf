"""Trajectory alignment: the metric's own pairing, explained call by call, agreeing with its verdict."""

from __future__ import annotations

import random
from typing import Any

import pytest

import agenteval as ae
from agenteval.analysis.diagnostics.alignment import TrajectoryAlignment, align_tool_calls, default_trajectory_criterion
from agenteval.errors import ConfigError
from agenteval.evalset.models import Invocation, Tool
from agenteval.evaluators.matching.jsonmatch import json_differences, match_json
from agenteval.evaluators.matching.trajectory import match_tool_calls, match_tool_trajectory
from agenteval.metric.criterion import JSONCriterion, ToolTrajectoryCriterion

IN_ORDER = ToolTrajectoryCriterion.model_validate({"orderSensitive": True})
ANY_ORDER = ToolTrajectoryCriterion()
SUBSET = ToolTrajectoryCriterion.model_validate({"subsetMatching": True})


def call(name: str, **arguments: Any) -> Tool:
    return Tool(name=name, arguments=arguments)


def rows(alignment: TrajectoryAlignment) -> list[tuple[str, int | None, int | None]]:
    return [(row.kind, row.expected_index, row.actual_index) for row in alignment.calls]


def test_a_matching_turn_pairs_every_call() -> None:
    expected = [call("search", q="x"), call("book", id=1)]

    alignment = align_tool_calls(list(reversed(expected)), expected, ANY_ORDER)

    assert alignment.matched and alignment.reason is None and alignment.problems == []
    assert rows(alignment) == [("matched", 0, 1), ("matched", 1, 0)]


def test_calls_swapped_under_an_order_sensitive_metric_are_out_of_order() -> None:
    expected = [call("search", q="x"), call("book", id=1)]

    alignment = align_tool_calls([expected[1], expected[0]], expected, IN_ORDER)

    assert not alignment.matched
    # In the order the calls were made: the book call came first, before the search it should follow.
    assert rows(alignment) == [("reordered", 1, 0), ("matched", 0, 1)]
    assert [row.kind for row in alignment.problems] == ["reordered"]
    assert alignment.reason == match_tool_trajectory(
        Invocation(tools=[expected[1], expected[0]]), Invocation(tools=expected), IN_ORDER
    )


def test_the_same_tool_with_other_arguments_differs_at_every_json_path() -> None:
    expected = [call("book", hotel="Ritz", nights=2, guests={"adults": 2, "kids": 0})]
    actual = [call("book", hotel="Ritz", nights=3, guests={"adults": 2, "kids": 1}, late=True)]

    (row,) = align_tool_calls(actual, expected, ANY_ORDER).calls

    assert row.kind == "differs" and row.mismatch is not None and row.mismatch.part == "arguments"
    found = [(d.path, d.kind, d.actual, d.expected) for d in row.argument_differences]
    assert found == [
        ("$.late", "extra_key", True, None),
        ("$.nights", "value", 3, 2),
        ("$.guests.kids", "value", 1, 0),
    ]
    # The first difference is the one the metric's reason names.
    assert row.mismatch.reason == row.argument_differences[0].reason


def test_another_tool_in_place_of_the_expected_one_is_a_substitution() -> None:
    expected = [call("search", q="x"), call("book", id=1)]
    actual = [call("search", q="x"), call("reserve", id=1)]

    for criterion in (IN_ORDER, ANY_ORDER):
        alignment = align_tool_calls(actual, expected, criterion)
        assert rows(alignment) == [("matched", 0, 0), ("substituted", 1, 1)]
        assert alignment.calls[1].mismatch is not None and alignment.calls[1].mismatch.part == "name"


def test_missing_and_extra_calls() -> None:
    expected = [call("search", q="x"), call("book", id=1)]

    missing = align_tool_calls([call("search", q="x")], expected, ANY_ORDER)
    extra = align_tool_calls([*expected, call("search", q="y")], expected, ANY_ORDER)

    assert rows(missing) == [("matched", 0, 0), ("missing", 1, None)]
    assert rows(extra) == [("matched", 0, 0), ("matched", 1, 1), ("extra", None, 2)]
    assert not extra.matched and [row.kind for row in extra.problems] == ["extra"]


def test_subset_matching_allows_the_extra_calls_and_passes() -> None:
    expected = [call("search", q="x"), call("book", id=1)]
    actual = [call("search", q="x"), call("log", line="hi"), call("book", id=1)]

    alignment = align_tool_calls(actual, expected, SUBSET)

    assert alignment.matched and alignment.mode == "in any order, extra calls allowed"
    assert rows(alignment) == [("matched", 0, 0), ("matched", 1, 2), ("extra", None, 1)]
    assert alignment.calls[2].allowed and alignment.calls[2].ok


def test_in_order_rows_follow_the_calls_made_with_a_missing_call_where_it_was_expected() -> None:
    expected = [call("a"), call("b"), call("c")]
    actual = [call("a"), call("x"), call("c"), call("y")]
    criterion = ToolTrajectoryCriterion.model_validate({"orderSensitive": True, "subsetMatching": True})

    alignment = align_tool_calls(actual, expected, criterion)

    # b is looked for after a and never found: the call made in its place is the closest.
    assert rows(alignment) == [("matched", 0, 0), ("substituted", 1, 1), ("matched", 2, 2), ("extra", None, 3)]
    without_x = align_tool_calls([call("a"), call("c")], expected, criterion)
    assert rows(without_x) == [("matched", 0, 0), ("missing", 1, None), ("matched", 2, 1)]


def test_per_tool_strategies_decide_the_pairing_and_the_differences() -> None:
    criterion = ToolTrajectoryCriterion.model_validate(
        {
            "toolStrategy": {
                "search": {"name": {}, "arguments": {"ignore": True}},
                "book": {"name": {}, "arguments": {"ignoreTree": {"note": True}}},
            }
        }
    )
    expected = [call("search", q="x"), call("book", id=1, note="a")]
    actual = [call("search", q="something else"), call("book", id=2, note="b")]

    alignment = align_tool_calls(actual, expected, criterion)

    assert rows(alignment) == [("matched", 0, 0), ("differs", 1, 1)]
    # The ignored note is no difference; the id is.
    assert [d.path for d in alignment.calls[1].argument_differences] == ["$.id"]


def test_a_registered_compare_pairs_no_calls() -> None:
    criterion = ToolTrajectoryCriterion.model_validate({"compareName": "my_compare"})

    with pytest.raises(ConfigError, match="registered compare .my_compare., which decides whole turns"):
        align_tool_calls([call("a")], [call("a")], criterion)


def test_the_default_criterion_is_the_tool_trajectory_builder_s() -> None:
    assert default_trajectory_criterion() == ae.EvalMetric.tool_trajectory().criterion.tool_trajectory  # type: ignore[union-attr]


def random_calls(rng: random.Random, size: int) -> list[Tool]:
    return [
        Tool(name=rng.choice("abc"), arguments={"x": rng.randint(0, 1)}, result=rng.choice([None, 1]))
        for _ in range(size)
    ]


def random_criterion(rng: random.Random) -> ToolTrajectoryCriterion:
    strategy = {"name": {}, "arguments": rng.choice([{}, {"ignore": True}]), "result": rng.choice([{}, None])}
    fields: dict[str, Any] = {
        "orderSensitive": rng.random() < 0.5,
        "subsetMatching": rng.random() < 0.5,
        "defaultStrategy": strategy,
    }
    if rng.random() < 0.3:
        fields["toolStrategy"] = {"b": {"name": {}}}
    return ToolTrajectoryCriterion.model_validate(fields)


def test_the_alignment_agrees_with_the_metric_in_order_in_any_order_and_as_a_subset() -> None:
    rng = random.Random(11)
    for _ in range(1500):
        criterion = random_criterion(rng)
        expected = random_calls(rng, rng.randint(0, 4))
        actual = random_calls(rng, rng.randint(0, 5))

        alignment = align_tool_calls(actual, expected, criterion)

        verdict = match_tool_trajectory(Invocation(tools=actual), Invocation(tools=expected), criterion)
        assert alignment.reason == verdict
        assert alignment.matched == (verdict is None)
        assert alignment.matched == all(row.ok for row in alignment.calls)
        # Every expected call has one row, every actual call at most one.
        assert sorted(r.expected_index for r in alignment.calls if r.expected_index is not None) == list(
            range(len(expected))
        )
        taken = [r.actual_index for r in alignment.calls if r.actual_index is not None]
        assert sorted(taken) == list(range(len(actual)))
        # The matched pairs are the metric's pairs.
        paired = match_tool_calls(actual, expected, criterion).paired
        assert {(r.expected_index, r.actual_index) for r in alignment.calls if r.kind == "matched"} == {
            (i, j) for i, j in enumerate(paired) if j is not None
        }
        assert all(r.kind != "reordered" or criterion.order_sensitive for r in alignment.calls)


def test_the_alignment_agrees_with_the_scores_an_evaluation_gives() -> None:
    expected = [call("search", q="x"), call("book", id=1)]
    made = {
        "same": expected,
        "swapped": [expected[1], expected[0]],
        "extra": [*expected, call("log")],
        "short": expected[:1],
        "wrong": [expected[0], call("book", id=2)],
    }
    eval_set = ae.EvalSet.of("s", [ae.EvalCase.of(name, name, tools=expected) for name in made])

    def agent(message: str, turn: ae.Turn) -> str:
        for tool in made[message]:
            turn.record_tool(tool.name, tool.arguments)
        return "done"

    metrics = [
        ae.EvalMetric.tool_trajectory(name="any"),
        ae.EvalMetric.tool_trajectory(order_sensitive=True, name="ordered"),
        ae.EvalMetric.tool_trajectory(subset=True, name="subset"),
    ]
    report = ae.Evaluator("app", agent, progress=False).evaluate(eval_set, metrics=metrics)

    checked = 0
    for case in report.result.eval_case_results:
        for turn in case.eval_metric_result_per_invocation:
            for result in turn.eval_metric_results:
                assert result.criterion is not None and result.criterion.tool_trajectory is not None
                assert turn.actual_invocation is not None and turn.expected_invocation is not None
                alignment = align_tool_calls(
                    turn.actual_invocation.tools, turn.expected_invocation.tools, result.criterion.tool_trajectory
                )
                assert alignment.matched == (result.score == 1.0), (case.eval_id, result.metric_name)
                checked += 1
    assert checked == len(made) * len(metrics)


def random_json(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(6 if depth < 3 else 4)
    if kind == 0:
        return rng.choice([0, 1, 1.5, True, False])
    if kind == 1:
        return rng.choice(["a", "b"])
    if kind == 2:
        return None
    if kind == 3:
        return rng.randint(0, 2)
    if kind == 4:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 2))]
    return {key: random_json(rng, depth + 1) for key in rng.sample("xyz", rng.randint(0, 3))}


@pytest.mark.parametrize(
    "criterion",
    [JSONCriterion(), JSONCriterion(ignore_tree={"x": True}), JSONCriterion(only_tree={"y": True, "z": {"x": True}})],
    ids=["exact", "ignore_tree", "only_tree"],
)
def test_json_differences_start_with_the_reason_match_json_gives(criterion: JSONCriterion) -> None:
    rng = random.Random(3)
    for _ in range(2000):
        actual, expected = random_json(rng), random_json(rng)
        if rng.random() < 0.3:
            expected = actual

        differences = json_differences(actual, expected, criterion)

        reason = match_json(actual, expected, criterion)
        assert (differences[0].reason if differences else None) == reason
