"""``tool_trajectory_avg_score``: the share of turns whose tool calls match the expected ones."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from agenteval.evalset.models import Invocation
from agenteval.evaluators.base import EvaluateResult, checked_criterion, score_matching_turns
from agenteval.evaluators.criteria.trajectory import check_tool_trajectory_criterion, match_tool_trajectory
from agenteval.metric.criterion import ToolTrajectoryCriterion
from agenteval.metric.models import EvalMetric

__all__ = ["ToolTrajectoryEvaluator"]

_KIND = "tool trajectory"


def _criterion(metric: EvalMetric) -> ToolTrajectoryCriterion | None:
    return metric.criterion.tool_trajectory if metric.criterion is not None else None


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
        return score_matching_turns(
            actuals,
            expecteds,
            metric,
            _criterion(metric),
            kind=_KIND,
            check=check_tool_trajectory_criterion,
            match=match_tool_trajectory,
            label="tooltrajectory",
        )

    def check_metric(self, metric: EvalMetric) -> None:
        """Reject the metric before any case runs, by the criterion check :meth:`evaluate` starts with.

        Raises:
            ConfigError: No tool trajectory criterion, or one
                :func:`~agenteval.evaluators.criteria.check_tool_trajectory_criterion` rejects.
        """
        checked_criterion(_criterion(metric), kind=_KIND, check=check_tool_trajectory_criterion)

    def __repr__(self) -> str:
        return "ToolTrajectoryEvaluator()"
