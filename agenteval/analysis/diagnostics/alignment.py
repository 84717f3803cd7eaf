"""How a turn's tool calls line up with the expected ones, as the tool-trajectory metric paired them.

The pairing is the metric's own (:func:`~agenteval.evaluators.matching.trajectory.match_tool_calls`):
in order, in any order, or as a subset, with each tool's strategy. What it leaves unpaired is then
explained call by call: an expected call that matches a call made out of order, one answered by a
call of the same tool with other arguments or result (with every JSON difference), one replaced by
another tool, one not made at all, and the calls nobody expected.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agenteval.errors import ConfigError
from agenteval.evalresult.models import EvalMetricResult
from agenteval.evalset.models import Tool
from agenteval.evaluators.matching.trajectory import (
    ToolCallMatching,
    ToolMismatch,
    check_tool_trajectory_criterion,
    closest_call,
    match_tool_calls,
    strategy_for,
    tool_mismatch,
)
from agenteval.metric.criterion import ToolTrajectoryCriterion
from agenteval.metric.json_match import JSONDifference, format_value, json_differences
from agenteval.metric.models import EvalMetric

__all__ = [
    "AlignedCall",
    "CallKind",
    "TrajectoryAlignment",
    "align_tool_calls",
    "default_trajectory_criterion",
    "trajectory_criterion",
]

CallKind = Literal["matched", "differs", "substituted", "reordered", "missing", "extra"]
"""How an expected call and an actual call line up.

``matched``: the metric paired them. ``differs``: the same tool, but its arguments or result differ.
``substituted``: another tool was called in its place. ``reordered`` (with order only): a call that
matches it was made, but out of order. ``missing``: nothing answers the expected call. ``extra``: an
actual call no expected call accounts for.
"""


@dataclass(frozen=True, slots=True)
class AlignedCall:
    """One row of an alignment: an expected call, an actual call, or both."""

    kind: CallKind
    """How they line up."""
    expected_index: int | None
    """The expected call's index in the turn (0-based), ``None`` for an ``extra`` call."""
    actual_index: int | None
    """The actual call's index in the turn (0-based), ``None`` for a ``missing`` call."""
    expected: Tool | None
    """The expected call."""
    actual: Tool | None
    """The actual call."""
    mismatch: ToolMismatch | None = None
    """Why the two do not match (``differs``, ``substituted``)."""
    argument_differences: tuple[JSONDifference, ...] = ()
    """Where the arguments differ under the tool's strategy (``differs``)."""
    result_differences: tuple[JSONDifference, ...] = ()
    """Where the results differ under the tool's strategy (``differs``)."""
    allowed: bool = False
    """An ``extra`` call that subset matching allows."""

    @property
    def ok(self) -> bool:
        """Whether the metric accepts this row: a matched pair, or an extra call subset matching allows."""
        return self.kind == "matched" or (self.kind == "extra" and self.allowed)

    @property
    def first_difference(self) -> tuple[Literal["arguments", "result"], JSONDifference] | None:
        """The difference the metric reports for a ``differs`` row: its part and where."""
        if self.mismatch is None or self.mismatch.part == "name":
            return None
        differences = self.argument_differences if self.mismatch.part == "arguments" else self.result_differences
        return (self.mismatch.part, differences[0]) if differences else None


@dataclass(frozen=True, slots=True)
class TrajectoryAlignment:
    """One turn's tool calls lined up with the expected ones (see :func:`align_tool_calls`)."""

    calls: tuple[AlignedCall, ...]
    """The rows: with order, in the actual calls' order (a missing call after the one expected
    before it); in any order, in the expected calls' order, then the extra calls."""
    order_sensitive: bool
    """The calls had to come in the expected order."""
    subset: bool
    """Extra actual calls were allowed."""
    reason: str | None
    """``None`` when the calls match, else the metric's reason for the turn."""

    @property
    def matched(self) -> bool:
        """The metric's verdict on the calls: the turn scores 1 exactly when they match."""
        return self.reason is None

    @property
    def problems(self) -> list[AlignedCall]:
        """The rows that made the turn fail (``[]`` when it matched).

        Every expected call not matched, in expected order, then the extra calls the metric does not allow.
        """
        if self.matched:
            return []
        expected = sorted(
            (call for call in self.calls if call.expected_index is not None and call.kind != "matched"),
            key=lambda call: call.expected_index or 0,
        )
        return expected + [call for call in self.calls if call.kind == "extra" and not call.allowed]

    @property
    def mode(self) -> str:
        """How the calls were matched, in words: ``in order``, ``in any order``, and whether extra calls are allowed."""
        order = "in order" if self.order_sensitive else "in any order"
        return order + (", extra calls allowed" if self.subset else "")


def trajectory_criterion(result: EvalMetricResult) -> ToolTrajectoryCriterion | None:
    """The tool-trajectory criterion a metric result records, ``None`` when it has none."""
    return result.criterion.tool_trajectory if result.criterion is not None else None


def default_trajectory_criterion() -> ToolTrajectoryCriterion:
    """How calls are lined up when no tool-trajectory metric scored the turn.

    That of ``EvalMetric.tool_trajectory()``: in any order, the same name and arguments, results not compared.
    """
    criterion = EvalMetric.tool_trajectory().criterion
    assert criterion is not None and criterion.tool_trajectory is not None  # built that way
    return criterion.tool_trajectory


def align_tool_calls(
    actual: Sequence[Tool], expected: Sequence[Tool], criterion: ToolTrajectoryCriterion
) -> TrajectoryAlignment:
    """Line up one turn's tool calls with the expected ones, as the tool-trajectory metric pairs them.

    Its verdict is the metric's (:attr:`TrajectoryAlignment.matched` is true exactly when the metric
    scores the turn 1). The calls the metric leaves unpaired are then explained: an expected call
    first takes, with order, a call that matches it but came out of order (``reordered``); else the
    closest call the metric compared it with and did not pair, of the same tool first (``differs``,
    with every JSON difference of the arguments and the result under the tool's strategy, or
    ``substituted`` for another tool); else it is ``missing``. Actual calls left are ``extra``.

    Args:
        actual: The agent's calls.
        expected: The expected calls.
        criterion: The metric's tool-trajectory criterion (as its result records it).

    Returns:
        The alignment.

    Raises:
        ConfigError: The criterion has a ``compareName`` (a registered compare decides whole turns and
            pairs no calls), names a compare the active registry does not have, or cannot be applied.
    """
    if criterion.compare_name:
        raise ConfigError(
            f"the tool calls were compared by the registered compare {format_value(criterion.compare_name)}, "
            "which decides whole turns: it pairs no calls, so none can be lined up"
        )
    check_tool_trajectory_criterion(criterion)
    matching = match_tool_calls(actual, expected, criterion)
    explained = _explain(actual, expected, criterion, matching)
    claimed = {call.actual_index for call in explained if call.actual_index is not None}
    extras = [
        AlignedCall("extra", None, j, None, actual[j], allowed=criterion.subset_matching)
        for j in range(len(actual))
        if j not in claimed
    ]
    calls = _in_actual_order(explained, extras) if criterion.order_sensitive else explained + extras
    return TrajectoryAlignment(tuple(calls), criterion.order_sensitive, criterion.subset_matching, matching.reason)


def _explain(
    actual: Sequence[Tool], expected: Sequence[Tool], criterion: ToolTrajectoryCriterion, matching: ToolCallMatching
) -> list[AlignedCall]:
    """A row for each expected call, in expected order: its pair, or what explains its failure."""
    claimed = {j for j in matching.paired if j is not None}
    rows: list[AlignedCall] = []
    for i, expected_tool in enumerate(expected):
        paired = matching.paired[i]
        if paired is not None:
            rows.append(AlignedCall("matched", i, paired, expected_tool, actual[paired]))
            continue
        row = (
            _out_of_order(actual, expected_tool, i, criterion, matching, claimed) if criterion.order_sensitive else None
        )
        row = row or _closest(actual, expected_tool, i, criterion, matching, claimed)
        if row.actual_index is not None:
            claimed.add(row.actual_index)
        rows.append(row)
    return rows


def _out_of_order(
    actual: Sequence[Tool],
    expected: Tool,
    index: int,
    criterion: ToolTrajectoryCriterion,
    matching: ToolCallMatching,
    claimed: set[int],
) -> AlignedCall | None:
    """A call that matches the expected call but came before where the metric looked for it."""
    compared = matching.mismatches[index]
    for j, actual_tool in enumerate(actual):
        if j in claimed or j in compared:
            continue
        if tool_mismatch(actual_tool, expected, strategy_for(actual_tool, expected, criterion)) is None:
            return AlignedCall("reordered", index, j, expected, actual_tool)
    return None


def _closest(
    actual: Sequence[Tool],
    expected: Tool,
    index: int,
    criterion: ToolTrajectoryCriterion,
    matching: ToolCallMatching,
    claimed: set[int],
) -> AlignedCall:
    # The calls the metric compared it with and found different; in any order, all it compared.
    compared = matching.mismatches[index]
    j = closest_call(actual, expected, [j for j in compared if j not in claimed])
    if j is None:
        # The metric looked elsewhere (an in-order match stops at the first miss): a call of this tool
        # it never compared is this one with other arguments or result, not a missing call.
        j = next(
            (
                j
                for j, tool in enumerate(actual)
                if j not in claimed and j not in compared and tool.name == expected.name
            ),
            None,
        )
        if j is None:
            return AlignedCall("missing", index, None, expected, None)
        found = tool_mismatch(actual[j], expected, strategy_for(actual[j], expected, criterion))
        if found is None:
            return AlignedCall("reordered", index, j, expected, actual[j])
        compared = {**compared, j: found}
    mismatch, actual_tool = compared[j], actual[j]
    if mismatch.part == "name":
        return AlignedCall("substituted", index, j, expected, actual_tool, mismatch)
    strategy = strategy_for(actual_tool, expected, criterion)
    arguments = strategy.arguments
    result = strategy.result
    return AlignedCall(
        "differs",
        index,
        j,
        expected,
        actual_tool,
        mismatch,
        argument_differences=tuple(json_differences(actual_tool.arguments, expected.arguments, arguments))
        if arguments is not None
        else (),
        result_differences=tuple(json_differences(actual_tool.result, expected.result, result))
        if result is not None
        else (),
    )


def _in_actual_order(explained: list[AlignedCall], extras: list[AlignedCall]) -> list[AlignedCall]:
    """The rows by actual call; each row without one right after the row of the expected call before it."""
    by_actual = {call.actual_index: call for call in [*explained, *extras] if call.actual_index is not None}
    after: dict[int, list[AlignedCall]] = {}
    anchor = -1
    for call in explained:
        if call.actual_index is None:
            after.setdefault(anchor, []).append(call)
        else:
            anchor = call.actual_index
    rows = list(after.get(-1, []))
    for j in sorted(by_actual):
        rows.append(by_actual[j])
        rows += after.get(j, [])
    return rows
