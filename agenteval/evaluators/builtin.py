"""The evaluators every registry starts with, by name."""

from __future__ import annotations

from agenteval.evaluators.base import MetricEvaluator
from agenteval.evaluators.final_response import FinalResponseEvaluator
from agenteval.evaluators.tool_trajectory import ToolTrajectoryEvaluator

__all__ = ["BUILTIN_EVALUATORS"]

BUILTIN_EVALUATORS: dict[str, MetricEvaluator] = {
    "tool_trajectory_avg_score": ToolTrajectoryEvaluator(),
    "final_response_avg_score": FinalResponseEvaluator(),
}
"""Built-in evaluators by name; :func:`agenteval.evaluators.registry.default_registry` copies them."""
