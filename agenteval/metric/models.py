"""Metrics: which evaluator scores a case, how, and the pass threshold."""

from __future__ import annotations

from typing import Any

from agenteval._json import CamelModel, GoFloat
from agenteval.metric.criterion import Criterion

__all__ = ["EvalMetric"]


class EvalMetric(CamelModel):
    """One metric instance of an eval set.

    A metric passes when its score is at least :attr:`threshold`.
    """

    metric_name: str = ""
    """Name shown in results; also the evaluator to use when :attr:`evaluator_name` is empty."""
    evaluator_name: str = ""
    """Evaluator implementation, so several metrics can share one evaluator."""
    threshold: GoFloat = 0.0
    """Pass when ``score >= threshold``."""
    criterion: Criterion | None = None
    """Evaluator-specific configuration."""
    extension: Any = None
    """Caller metadata (weights, groups…); never interpreted, not copied into results."""

    @property
    def evaluator(self) -> str:
        """The evaluator this metric runs: :attr:`evaluator_name`, or :attr:`metric_name`."""
        return self.evaluator_name or self.metric_name
