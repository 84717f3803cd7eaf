"""The metric store interface."""

from __future__ import annotations

import builtins
from typing import Protocol, runtime_checkable

from agenteval.errors import rewrap
from agenteval.metric.models import EvalMetric

__all__ = ["MetricManager", "all_metrics"]


@runtime_checkable
class MetricManager(Protocol):
    """Stores the metrics of each eval set, in order.

    Every method raises :class:`~agenteval.errors.ConfigError` for an empty or unusable app
    name, eval-set id or metric name, and :class:`~agenteval.errors.NotFoundError` for a
    missing metric. Returned objects are copies.

    A store may also have ``async get_all(app_name, eval_set_id) -> list[EvalMetric]``, every
    metric of an eval set in configuration order (``[]`` when none), read at once; the stores
    shipped here do. It is not part of this protocol, so that a store written without it still
    is a metric manager: read the metrics with :func:`all_metrics`, which uses it when it is there.
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


@runtime_checkable
class _ReadsAll(Protocol):
    async def get_all(self, app_name: str, eval_set_id: str) -> builtins.list[EvalMetric]: ...


def _reads_as_its_get_all(manager: object) -> bool:
    """Whether ``get_all`` answers as ``list`` then ``get`` would (a subclass may override either)."""
    owner = next(cls for cls in type(manager).__mro__ if "get_all" in vars(cls))
    return all(getattr(type(manager), name) is getattr(owner, name, None) for name in ("list", "get"))


async def all_metrics(manager: MetricManager, app_name: str, eval_set_id: str) -> builtins.list[EvalMetric]:
    """Every metric of an eval set, in configuration order: one ``get_all`` when the store has it.

    A store without ``get_all``, or one whose ``list`` or ``get`` a subclass overrides (which ``get_all`` would
    skip), is asked for the names, then for each metric.

    Raises:
        AgentEvalError: Of the store's error's type (:func:`~agenteval.errors.rewrap`):
            ``list metrics: <error>`` when reading the metrics (or their names) failed,
            ``get metric <name>: <error>`` when reading one of them failed.
    """
    if isinstance(manager, _ReadsAll) and _reads_as_its_get_all(manager):
        try:
            return await manager.get_all(app_name, eval_set_id)
        except Exception as exc:
            raise rewrap("list metrics", exc) from exc
    try:
        names = await manager.list(app_name, eval_set_id)
    except Exception as exc:
        raise rewrap("list metrics", exc) from exc
    metrics = []
    for name in names:
        try:
            metrics.append(await manager.get(app_name, eval_set_id, name))
        except Exception as exc:
            raise rewrap(f"get metric {name}", exc) from exc
    return metrics
