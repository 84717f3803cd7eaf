"""The metric store interface."""

from __future__ import annotations

import builtins
from typing import Protocol, runtime_checkable

from agenteval.metric.models import EvalMetric

__all__ = ["MetricManager"]


@runtime_checkable
class MetricManager(Protocol):
    """Stores the metrics of each eval set, in order.

    Every method raises :class:`~agenteval.errors.ConfigError` for an empty or unusable app
    name, eval-set id or metric name, and :class:`~agenteval.errors.NotFoundError` for a
    missing metric. Returned objects are copies.
    """

    async def list(self, app_name: str, eval_set_id: str) -> builtins.list[str]:
        """Return the metric names of an eval set in configuration order (``[]`` when none)."""
        ...

    async def get(self, app_name: str, eval_set_id: str, metric_name: str) -> EvalMetric:
        """Return one metric."""
        ...

    async def add(self, app_name: str, eval_set_id: str, metric: EvalMetric) -> None:
        """Append a metric; its name must be new in the set."""
        ...

    async def update(self, app_name: str, eval_set_id: str, metric: EvalMetric) -> None:
        """Replace the metric with the same name."""
        ...

    async def delete(self, app_name: str, eval_set_id: str, metric_name: str) -> None:
        """Remove a metric."""
        ...

    async def close(self) -> None:
        """Release resources."""
        ...
