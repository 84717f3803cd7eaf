"""A metric store that keeps everything in memory."""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable

from agenteval._util.name_checks import check_names, nonempty_names
from agenteval._util.trpc_json import written_json
from agenteval.errors import ConfigError, NotFoundError
from agenteval.metric.models import EvalMetric

__all__ = ["InMemoryMetricManager"]


def _metric_name(metric: EvalMetric | None) -> str:
    if metric is None:
        raise ConfigError("metric is None")
    check_names(metric_name=metric.metric_name)
    return metric.metric_name


def _checked_copy(app_name: str, eval_set_id: str, metric: EvalMetric) -> tuple[str, EvalMetric]:
    """Validate a metric to be stored and return its name and a deep copy.

    A metric that JSON cannot hold is refused here, as the file and database stores refuse it.
    The copy is not made through JSON: a judge API key set in code must survive in memory.
    """
    name = _metric_name(metric)
    written_json(metric, f"metric {app_name}.{eval_set_id}.{name}")
    return name, metric.model_copy(deep=True)


def _index(metrics: builtins.list[EvalMetric], app_name: str, eval_set_id: str, metric_name: str) -> int:
    for index, metric in enumerate(metrics):
        if metric.metric_name == metric_name:
            return index
    raise NotFoundError(f"metric {app_name}.{eval_set_id}.{metric_name} not found")


# The edits below are shared with the local store: each checks and copies the metric it is given
# up front and returns the change to apply to the loaded metric list while the store's lock is held.

_Change = Callable[[builtins.list[EvalMetric]], object]


def _adder(app_name: str, eval_set_id: str, metric: EvalMetric) -> _Change:
    name, copy = _checked_copy(app_name, eval_set_id, metric)

    def add(metrics: builtins.list[EvalMetric]) -> None:
        if any(m.metric_name == name for m in metrics):
            raise ConfigError(f"metric {app_name}.{eval_set_id}.{name} already exists")
        metrics.append(copy)

    return add


def _updater(app_name: str, eval_set_id: str, metric: EvalMetric) -> _Change:
    name, copy = _checked_copy(app_name, eval_set_id, metric)

    def update(metrics: builtins.list[EvalMetric]) -> None:
        metrics[_index(metrics, app_name, eval_set_id, name)] = copy

    return update


def _deleter(app_name: str, eval_set_id: str, metric_name: str) -> _Change:
    return lambda metrics: metrics.pop(_index(metrics, app_name, eval_set_id, metric_name))


class InMemoryMetricManager:
    """A :class:`~agenteval.metric.manager.MetricManager` backed by dictionaries.

    Everything stored and returned is a deep copy (API keys of judge models included).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._metrics: dict[tuple[str, str], builtins.list[EvalMetric]] = {}

    def _change(self, app_name: str, eval_set_id: str, change: _Change) -> None:
        with self._lock:
            change(self._metrics.setdefault((app_name, eval_set_id), []))

    @nonempty_names
    async def list(self, app_name: str, eval_set_id: str) -> builtins.list[str]:
        """Return the metric names of an eval set in the order they were added."""
        with self._lock:
            return [m.metric_name for m in self._metrics.get((app_name, eval_set_id), [])]

    @nonempty_names
    async def get_all(self, app_name: str, eval_set_id: str) -> builtins.list[EvalMetric]:
        """Return copies of an eval set's metrics in the order they were added (``[]`` when none)."""
        with self._lock:
            return [m.model_copy(deep=True) for m in self._metrics.get((app_name, eval_set_id), [])]

    @nonempty_names
    async def get(self, app_name: str, eval_set_id: str, metric_name: str) -> EvalMetric:
        """Return a copy of the first metric with this name."""
        with self._lock:
            metrics = self._metrics.get((app_name, eval_set_id), [])
            return metrics[_index(metrics, app_name, eval_set_id, metric_name)].model_copy(deep=True)

    @nonempty_names
    async def add(self, app_name: str, eval_set_id: str, metric: EvalMetric) -> None:
        """Append a copy of a metric; its name must be new in the set."""
        self._change(app_name, eval_set_id, _adder(app_name, eval_set_id, metric))

    @nonempty_names
    async def update(self, app_name: str, eval_set_id: str, metric: EvalMetric) -> None:
        """Replace the first metric with the same name by a copy of ``metric``."""
        self._change(app_name, eval_set_id, _updater(app_name, eval_set_id, metric))

    @nonempty_names
    async def delete(self, app_name: str, eval_set_id: str, metric_name: str) -> None:
        """Remove the first metric with this name."""
        self._change(app_name, eval_set_id, _deleter(app_name, eval_set_id, metric_name))

    async def close(self) -> None:
        """Do nothing: there is nothing to release."""
