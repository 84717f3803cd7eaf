"""The tool-trajectory criterion: compare the tool calls of one turn.

Without ``orderSensitive`` every expected call must be paired with a distinct matching actual
call, found by maximum bipartite matching; with it, expected calls are looked for in order, each
consuming the actual calls it scans. ``subsetMatching`` only allows extra actual calls.

A ``toolTrajectory.compareName`` replaces all of this with a registered compare of whole turns;
a ``compareName`` on a strategy's name, arguments or result replaces that part's comparison.

:func:`match_tool_calls` gives the pairing itself, with the verdict :func:`match_tool_trajectory`
derives from it, so that a turn's calls can be shown as the metric paired them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from agenteval.errors import ConfigError
from agenteval.evalset.models import Invocation, Tool
from agenteval.evaluators.matching.text import check_text_criterion, match_text
from agenteval.metric.criterion import (
    JSONCriterion,
    TextCriterion,
    TextMatchStrategy,
    ToolTrajectoryCriterion,
    ToolTrajectoryStrategy,
)
from agenteval.metric.json_match import (
    check_json_criterion,
    format_value,
    match_json,
    named_compare_mismatch,
)
from agenteval.metric.registry import active_metric_registry

__all__ = [
    "ToolCallMatching",
    "ToolMismatch",
    "check_tool_trajectory_criterion",
    "closest_call",
    "default_tool_strategy",
    "match_tool",
    "match_tool_calls",
    "match_tool_trajectory",
    "maximum_bipartite_matching",
    "strategy_for",
    "tool_mismatch",
]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEFAULT_STRATEGY = ToolTrajectoryStrategy(
    name=TextCriterion(match_strategy=TextMatchStrategy.EXACT), arguments=JSONCriterion(), result=JSONCriterion()
)


def default_tool_strategy() -> ToolTrajectoryStrategy:
    """Return (a copy of) the built-in strategy: exact name, exact JSON arguments and result."""
    return _DEFAULT_STRATEGY.model_copy(deep=True)


def _strategy_locations(criterion: ToolTrajectoryCriterion) -> list[tuple[str, ToolTrajectoryStrategy]]:
    where = "criterion.toolTrajectory"
    found = [] if criterion.default_strategy is None else [(f"{where}.defaultStrategy", criterion.default_strategy)]
    for tool_name, strategy in criterion.tool_strategy.items():
        key = f".{tool_name}" if _IDENTIFIER.fullmatch(tool_name) else f"[{format_value(tool_name)}]"
        found.append((f"{where}.toolStrategy{key}", strategy))
    return found


def check_tool_trajectory_criterion(criterion: ToolTrajectoryCriterion) -> None:
    """Reject a criterion that cannot be applied, before any turn is compared.

    Every ``compareName`` must be registered in the active
    :class:`~agenteval.metric.registry.MetricRegistry` (names under a registered
    ``toolTrajectory.compareName`` are not used, so not checked), and every strategy's name and
    JSON criteria must be usable.

    Raises:
        ConfigError: Naming each unknown compare, or the first unusable criterion (invalid length
            bounds, a JSON criterion :func:`~agenteval.evaluators.matching.jsonmatch.check_json_criterion`
            rejects), with its location.
    """
    problems = active_metric_registry().unregistered_names(criterion)
    if problems:
        raise ConfigError("; ".join(problems))
    if criterion.compare_name:
        return
    for where, strategy in _strategy_locations(criterion):
        if strategy.name is not None:
            check_text_criterion(strategy.name, f"{where}.name")
        for part, json_criterion in (("arguments", strategy.arguments), ("result", strategy.result)):
            if json_criterion is not None:
                check_json_criterion(json_criterion, f"{where}.{part}")


def strategy_for(actual: Tool, expected: Tool, criterion: ToolTrajectoryCriterion) -> ToolTrajectoryStrategy:
    """Pick the strategy for a pair: by actual name, by expected name, the default, the built-in one."""
    for name in (actual.name, expected.name):
        strategy = criterion.tool_strategy.get(name)
        if strategy is not None:
            return strategy
    return criterion.default_strategy if criterion.default_strategy is not None else _DEFAULT_STRATEGY


@dataclass(frozen=True, slots=True)
class ToolMismatch:
    """Why a tool call does not match an expected one: the first part that differs."""

    part: Literal["name", "arguments", "result"]
    """The part compared first that differs."""
    reason: str
    """What its criterion says."""

    def __str__(self) -> str:
        return f"{self.part} mismatch: {self.reason}"


def tool_mismatch(actual: Tool, expected: Tool, strategy: ToolTrajectoryStrategy) -> ToolMismatch | None:
    """Compare one tool call with an expected one: name, then arguments, then result; unset parts are skipped.

    Returns:
        ``None`` on a match, else the first part that differs and why.

    Raises:
        ConfigError: A part's criterion is misconfigured.
    """
    if strategy.name is not None:
        reason = match_text(actual.name, expected.name, strategy.name)
        if reason is not None:
            return ToolMismatch("name", reason)
    if strategy.arguments is not None:
        reason = match_json(actual.arguments, expected.arguments, strategy.arguments)
        if reason is not None:
            return ToolMismatch("arguments", reason)
    if strategy.result is not None:
        reason = match_json(actual.result, expected.result, strategy.result)
        if reason is not None:
            return ToolMismatch("result", reason)
    return None


def match_tool(actual: Tool, expected: Tool, strategy: ToolTrajectoryStrategy) -> str | None:
    """Compare one tool call with an expected one; parts the strategy leaves unset are not compared.

    Returns:
        ``None`` on a match, else ``"<part> mismatch: <reason>"`` (see :func:`tool_mismatch`).

    Raises:
        ConfigError: A part's criterion is misconfigured.
    """
    mismatch = tool_mismatch(actual, expected, strategy)
    return None if mismatch is None else str(mismatch)


def maximum_bipartite_matching(adjacency: Sequence[Sequence[int]], right_size: int) -> list[int | None]:
    """Maximum matching of a bipartite graph by augmenting paths (Kuhn's algorithm).

    Left vertices are tried in order and their edges in order, so the result is the one the
    reference's recursive search finds; the search here is iterative, so long lists cannot
    exhaust the recursion limit.

    Args:
        adjacency: For each left vertex, the right vertices it may be paired with.
        right_size: Number of right vertices.

    Returns:
        For each left vertex, its matched right vertex, or ``None``.
    """
    match_right: list[int | None] = [None] * right_size
    for root in range(len(adjacency)):
        stack = [root]
        next_edge = {root: 0}
        chosen: dict[int, int] = {}
        while stack:
            left = stack[-1]
            edges = adjacency[left]
            if next_edge[left] == len(edges):
                stack.pop()
                continue
            right = edges[next_edge[left]]
            next_edge[left] += 1
            owner = match_right[right]
            if owner is None:
                chosen[left] = right
                for vertex in stack:
                    match_right[chosen[vertex]] = vertex
                break
            if owner not in next_edge:
                chosen[left] = right
                next_edge[owner] = 0
                stack.append(owner)
    match_left: list[int | None] = [None] * len(adjacency)
    for right, owner in enumerate(match_right):
        if owner is not None:
            match_left[owner] = right
    return match_left


@dataclass(frozen=True, slots=True)
class ToolCallMatching:
    """How a tool-trajectory criterion pairs the calls of one turn, and its verdict (see :func:`match_tool_calls`)."""

    paired: tuple[int | None, ...]
    """For each expected call, the index of the actual call paired with it; ``None`` when none is."""
    mismatches: tuple[Mapping[int, ToolMismatch], ...]
    """For each expected call, the actual calls it was compared with that do not match it, and why.

    In order, an expected call is compared with the actual calls from where the previous one was
    found, up to the first that matches; in any order, with every actual call."""
    reason: str | None
    """``None`` when the calls match, else what :func:`match_tool_trajectory` says."""


def _describe(tools: Sequence[Tool], index: int, side: str) -> str:
    return f"{side} tools[{index}] {format_value(tools[index].name, 80)}"


def _names(tools: Sequence[Tool]) -> str:
    return format_value([tool.name for tool in tools])


def closest_call(actual: Sequence[Tool], expected: Tool, candidates: Sequence[int]) -> int | None:
    """Of the actual calls ``candidates``, the one whose mismatch best explains a failure: same name first.

    Returns:
        Its index, or ``None`` without candidates.
    """
    same_name = [index for index in candidates if actual[index].name == expected.name]
    if same_name:
        return same_name[0]
    return candidates[0] if candidates else None


def _no_match(
    head: str, actual: Sequence[Tool], expected: Tool, candidates: Sequence[int], reasons: Mapping[int, ToolMismatch]
) -> str:
    closest = closest_call(actual, expected, candidates)
    if closest is None:
        return head
    return f"{head}: closest is {_describe(actual, closest, 'actual')}: {reasons[closest]}"


def _pair_unordered(
    actual: Sequence[Tool], expected: Sequence[Tool], criterion: ToolTrajectoryCriterion
) -> tuple[list[int | None], list[dict[int, ToolMismatch]], list[list[int]]]:
    reasons: list[dict[int, ToolMismatch]] = [{} for _ in expected]
    adjacency: list[list[int]] = [[] for _ in expected]
    for i, expected_tool in enumerate(expected):
        for j, actual_tool in enumerate(actual):
            mismatch = tool_mismatch(actual_tool, expected_tool, strategy_for(actual_tool, expected_tool, criterion))
            if mismatch is None:
                adjacency[i].append(j)
            else:
                reasons[i][j] = mismatch
    return maximum_bipartite_matching(adjacency, len(actual)), reasons, adjacency


def _unordered_reason(
    actual: Sequence[Tool],
    expected: Sequence[Tool],
    matching: Sequence[int | None],
    reasons: Sequence[Mapping[int, ToolMismatch]],
    adjacency: Sequence[Sequence[int]],
) -> str | None:
    unmatched = [i for i, right in enumerate(matching) if right is None]
    if not unmatched:
        return None
    paired = {right for right in matching if right is not None}
    free = [j for j in range(len(actual)) if j not in paired]
    messages = []
    for i in unmatched:
        head = f"{_describe(expected, i, 'expected')} has no matching actual call"
        if adjacency[i]:
            taken = ", ".join(f"actual tools[{j}]" for j in adjacency[i])
            messages.append(f"{head}: the calls it matches ({taken}) are paired with other expected calls")
        else:
            messages.append(_no_match(head, actual, expected[i], free, reasons[i]))
    return "; ".join(messages)


def _pair_ordered(
    actual: Sequence[Tool], expected: Sequence[Tool], criterion: ToolTrajectoryCriterion
) -> tuple[list[int | None], list[dict[int, ToolMismatch]]]:
    """Look for each expected call in order, from where the previous one was found.

    An expected call that is not found consumes nothing, so the calls after it are still looked
    for (a turn that fails this way fails at its first such call, which its reason names).
    """
    paired: list[int | None] = []
    reasons: list[dict[int, ToolMismatch]] = []
    position = 0
    for expected_tool in expected:
        tried: dict[int, ToolMismatch] = {}
        found = None
        for j in range(position, len(actual)):
            actual_tool = actual[j]
            mismatch = tool_mismatch(actual_tool, expected_tool, strategy_for(actual_tool, expected_tool, criterion))
            if mismatch is None:
                found = j
                break
            tried[j] = mismatch
        if found is not None:
            position = found + 1
        paired.append(found)
        reasons.append(tried)
    return paired, reasons


def _ordered_reason(
    actual: Sequence[Tool],
    expected: Sequence[Tool],
    paired: Sequence[int | None],
    reasons: Sequence[Mapping[int, ToolMismatch]],
) -> str | None:
    first = next((i for i, found in enumerate(paired) if found is None), None)
    if first is None:
        return None
    if not reasons[first]:
        return (
            f"{_describe(expected, first, 'expected')} has no matching actual call in order: "
            f"all {len(actual)} actual calls were consumed by earlier expected calls"
        )
    head = f"{_describe(expected, first, 'expected')} has no matching actual call in order"
    return _no_match(head, actual, expected[first], list(reasons[first]), reasons[first])


def _count_mismatch(actual: Sequence[Tool], expected: Sequence[Tool], criterion: ToolTrajectoryCriterion) -> str | None:
    if criterion.subset_matching and len(actual) < len(expected):
        return (
            f"number of tool calls mismatch: actual({len(actual)}) < expected({len(expected)}), "
            f"actual {_names(actual)}, expected {_names(expected)}"
        )
    if not criterion.subset_matching and len(actual) != len(expected):
        return (
            f"number of tool calls mismatch: actual({len(actual)}) != expected({len(expected)}), "
            f"actual {_names(actual)}, expected {_names(expected)}"
        )
    return None


def match_tool_calls(
    actual: Sequence[Tool], expected: Sequence[Tool], criterion: ToolTrajectoryCriterion
) -> ToolCallMatching:
    """Pair one turn's tool calls as the criterion does, and give its verdict.

    The pairing is made even when the numbers of calls already decide the verdict, so that it can
    say which calls are missing or extra. ``criterion.compareName`` is not used (a registered
    compare decides whole turns and pairs nothing): call this only for a criterion without one.

    Args:
        actual: The agent's calls.
        expected: The expected calls.
        criterion: How to compare; checked beforehand (:func:`check_tool_trajectory_criterion`).

    Returns:
        The pairing, with the verdict :func:`match_tool_trajectory` gives for these calls.

    Raises:
        ConfigError: A part's criterion is misconfigured or a named compare raised.
    """
    count_reason = _count_mismatch(actual, expected, criterion)
    if criterion.order_sensitive:
        paired, reasons = _pair_ordered(actual, expected, criterion)
        reason = count_reason or _ordered_reason(actual, expected, paired, reasons)
    else:
        paired, reasons, adjacency = _pair_unordered(actual, expected, criterion)
        reason = count_reason or _unordered_reason(actual, expected, paired, reasons, adjacency)
    return ToolCallMatching(tuple(paired), tuple(reasons), reason)


def _run_compare(name: str, actual: Invocation, expected: Invocation) -> str | None:
    compare = active_metric_registry().tool_trajectory_compare(name)
    return named_compare_mismatch(
        "tool trajectory compare",
        name,
        compare,
        actual,
        expected,
        render=lambda turn: _names(turn.tools),
        what="tools ",
    )


def match_tool_trajectory(
    actual: Invocation, expected: Invocation, criterion: ToolTrajectoryCriterion, *, checked: bool = False
) -> str | None:
    """Compare the tool calls of one turn.

    Args:
        actual: The agent's turn.
        expected: The expected turn.
        criterion: How to compare.
        checked: The criterion was already checked (:func:`check_tool_trajectory_criterion`) against
            the active registry, as an evaluator does once for all its cases.

    Returns:
        ``None`` on a match, else a one-line reason naming the tools, the part and the JSON path.

    Raises:
        ConfigError: The criterion is misconfigured, names an unknown compare, or a compare raised.
    """
    if not checked:
        check_tool_trajectory_criterion(criterion)
    if criterion.compare_name:
        return _run_compare(criterion.compare_name, actual, expected)
    actual_tools, expected_tools = actual.tools, expected.tools
    if not actual_tools and not expected_tools:
        return None
    # The numbers of calls decide first, without pairing any.
    count_reason = _count_mismatch(actual_tools, expected_tools, criterion)
    if count_reason is not None:
        return count_reason
    return match_tool_calls(actual_tools, expected_tools, criterion).reason
