"""``tool_trajectory_avg_score``: the share of turns whose tool calls match the expected ones."""

from __future__ import annotations

from typing import ClassVar

from agenteval.evalset.models import Invocation
from agenteval.evaluators.base import TurnMatchingEvaluator
from agenteval.evaluators.matching.trajectory import check_tool_trajectory_criterion, match_tool_trajectory
from agenteval.metric.criterion import ToolTrajectoryCriterion
from agenteval.metric.models import EvalMetric

__all__ = ["ToolTrajectoryEvaluator"]


class ToolTrajectoryEvaluator(TurnMatchingEvaluator[ToolTrajectoryCriterion]):
    """Scores each turn 1 when its tool calls match the expected ones under ``criterion.toolTrajectory``.

    The overall score is the mean over turns. A mismatch reason names the tool, the part (name,
    arguments, result) and the JSON path, prefixed ``"tool trajectory mismatch: "``.

    Named compares are looked up in the active metric registry
    (:func:`~agenteval.metric.registry.use_metric_registry`).
    """

    name: ClassVar[str] = "tool_trajectory_avg_score"
    description: ClassVar[str] = "Evaluates the accuracy of tool usage trajectory including sequence and arguments"
    kind: ClassVar[str] = "tool trajectory"
    label: ClassVar[str] = "tooltrajectory"
    how_to_configure: ClassVar[str] = (
        "build the metric with ae.EvalMetric.tool_trajectory(), or give it "
        "criterion=ae.criteria.Criterion(tool_trajectory=ae.criteria.ToolTrajectoryCriterion()) "
        '(in a metrics file: "criterion": {"toolTrajectory": {}})'
    )

    def criterion_of(self, metric: EvalMetric) -> ToolTrajectoryCriterion | None:
        """``criterion.tool_trajectory`` of the metric."""
        return metric.criterion.tool_trajectory if metric.criterion is not None else None

    def check_criterion(self, criterion: ToolTrajectoryCriterion) -> None:
        """Reject an unusable criterion (see ``check_tool_trajectory_criterion``)."""
        check_tool_trajectory_criterion(criterion)

    def match_turn(
        self, actual: Invocation, expected: Invocation, criterion: ToolTrajectoryCriterion, measures: dict[str, float]
    ) -> str | None:
        """``None`` when the turn matches, else why not; nothing is measured."""
        return match_tool_trajectory(actual, expected, criterion, checked=True)

    def __repr__(self) -> str:
        return "ToolTrajectoryEvaluator()"
