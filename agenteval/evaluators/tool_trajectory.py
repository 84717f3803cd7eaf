"""``tool_trajectory_avg_score``: the share of turns whose tool calls match the expected ones."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from agenteval.errors import ConfigError
from agenteval.evalresult.models import EvalMetricResultDetails, ScoreKind, ScoreValue
from agenteval.evalset.models import Invocation
from agenteval.evaluators.base import EvaluateResult, PerInvocationResult, average_of_turns, status_for
from agenteval.evaluators.criteria.trajectory import check_tool_trajectory_criterion, match_tool_trajectory
from agenteval.metric.models import EvalMetric

__all__ = ["ToolTrajectoryEvaluator", "score_binary_turns"]


def score_binary_turns(
    actuals: Sequence[Invocation],
    expecteds: Sequence[Invocation],
    metric: EvalMetric,
    match: Callable[[Invocation, Invocation], str | None],
    reason_prefix: str,
    label: str,
) -> EvaluateResult:
    """Score each turn 1 (match) or 0 (mismatch) and average the turns.

    Args:
        actuals: The agent's turns.
        expecteds: The expected turns, aligned with ``actuals``.
        metric: The metric (its threshold decides pass or fail).
        match: Returns ``None`` on a match, else a mismatch reason.
        reason_prefix: Put before a mismatch reason (e.g. ``"tool trajectory mismatch: "``).
        label: Names the evaluator in the count-mismatch error.

    Returns:
        One result per turn, plus their mean (``not_evaluated`` for zero turns).

    Raises:
        ConfigError: ``actuals`` and ``expecteds`` differ in length.
    """
    if len(actuals) != len(expecteds):
        raise ConfigError(
            f"{label}: actual invocations ({len(actuals)}) and expected invocations ({len(expecteds)}) count mismatch"
        )
    results: list[PerInvocationResult] = []
    for actual, expected in zip(actuals, expecteds, strict=True):
        mismatch = match(actual, expected)
        score = 1.0 if mismatch is None else 0.0
        reason = "" if mismatch is None else reason_prefix + mismatch
        results.append(
            PerInvocationResult(
                score=score,
                status=status_for(score, metric.threshold),
                details=EvalMetricResultDetails(
                    reason=reason, score=score, value=ScoreValue(kind=ScoreKind.NUMERIC, numeric=score)
                ),
                actual_invocation=actual,
                expected_invocation=expected,
            )
        )
    return average_of_turns(results, metric.threshold)


class ToolTrajectoryEvaluator:
    """Scores each turn 1 when its tool calls match the expected ones under ``criterion.toolTrajectory``.

    The overall score is the mean over turns. A mismatch reason names the tool, the part (name,
    arguments, result) and the JSON path, prefixed ``"tool trajectory mismatch: "``.
    """

    name: ClassVar[str] = "tool_trajectory_avg_score"
    description: ClassVar[str] = "Evaluates the accuracy of tool usage trajectory including sequence and arguments"

    def evaluate(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> EvaluateResult:
        """Score the turns of one case.

        Named compares are looked up in the active metric registry
        (:func:`~agenteval.metric.registry.use_metric_registry`).

        Raises:
            ConfigError: No tool trajectory criterion, an unusable criterion (an unknown
                ``compareName``, an invalid schema…), a compare that raised, or turn counts differ.
        """
        criterion = metric.criterion.tool_trajectory if metric.criterion is not None else None
        if criterion is None:
            raise ConfigError("tool trajectory criterion not configured")
        check_tool_trajectory_criterion(criterion)
        return score_binary_turns(
            actuals,
            expecteds,
            metric,
            lambda actual, expected: match_tool_trajectory(actual, expected, criterion),
            "tool trajectory mismatch: ",
            "tooltrajectory",
        )

    def __repr__(self) -> str:
        return "ToolTrajectoryEvaluator()"
