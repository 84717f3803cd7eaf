"""A metric store that keeps one JSON array file per eval set."""

from __future__ import annotations

import asyncio
import builtins
import os
import threading
from pathlib import Path

from pydantic import TypeAdapter

from agenteval._util.file_lock import directory_lock
from agenteval._util.files import dump_models, ensure_inside, load_json_file, warn_unknown_fields, write_atomic
from agenteval._util.name_checks import check_file_path, file_names
from agenteval.errors import ConfigError, NotFoundError
from agenteval.metric.memory import _adder, _Change, _deleter, _index, _updater
from agenteval.metric.models import EvalMetric
from agenteval.storage import Locator, SuffixLocator

__all__ = ["LocalMetricManager"]

_METRICS = TypeAdapter(list[EvalMetric])


def _check_loaded_names(path: Path, metrics: builtins.list[EvalMetric]) -> None:
    """Metrics are addressed by name: an unnamed or repeated one would be silently unreachable."""
    seen: dict[str, int] = {}
    for index, metric in enumerate(metrics):
        if not metric.metric_name:
            raise ConfigError(f"metrics file {path} is malformed: field [{index}].metricName is empty")
        if metric.metric_name in seen:
            raise ConfigError(
                f"metrics file {path} is malformed: field [{index}].metricName {metric.metric_name!r} repeats "
                f"[{seen[metric.metric_name]}]; metric names must be unique (use evaluatorName to run one "
                "evaluator under several names)"
            )
        seen[metric.metric_name] = index


class LocalMetricManager:
    """A :class:`~agenteval.metric.manager.MetricManager` over ``<base>/<app>/<id>.metrics.json`` files.

    Each file is a JSON array of metrics, written with a 2-space indent, atomically. A missing
    file means no metrics. Nothing is read or written outside ``base_dir``. A judge's literal API
    key is never written, so it does not survive a round trip through the file; a ``${VAR}``
    reference does.

    Several processes, and several managers in one process, may share a directory: each edit's
    read-modify-write holds the same inter-process lock as the eval-set store's edits (see
    :mod:`agenteval._util.file_lock`), so none is lost. Unlike that store, this one reads the file again
    for every call: metric files are short, and loading expands ``${VAR}`` references in judge
    options from the environment as it is at the call, which a kept copy would not.

    Args:
        base_dir: Directory holding one sub-directory per app.
        locator: Maps (app, eval-set id) to a file (only ``build`` is used); defaults to the
            reference layout.
    """

    def __init__(self, base_dir: str | os.PathLike[str], *, locator: Locator | None = None) -> None:
        self._base_dir = Path(base_dir)
        self._locator: Locator = locator if locator is not None else SuffixLocator(".metrics.json")
        self._lock = threading.Lock()

    def _path(self, app_name: str, eval_set_id: str) -> Path:
        path = self._locator.build(self._base_dir, app_name, eval_set_id)
        check_file_path(self._base_dir, path, app_name=app_name, eval_set_id=eval_set_id)
        return ensure_inside(self._base_dir, path)

    def _load(self, path: Path) -> builtins.list[EvalMetric]:
        try:
            metrics = load_json_file(path, _METRICS, "metrics")
        except NotFoundError:
            return []
        _check_loaded_names(path, metrics)
        warn_unknown_fields(metrics, f"metrics file {path}")
        return metrics

    def _edit(self, app_name: str, eval_set_id: str, change: _Change) -> None:
        path = self._path(app_name, eval_set_id)
        with self._lock, directory_lock(self._base_dir, path):
            metrics = self._load(path)
            change(metrics)
            write_atomic(path, dump_models(metrics))

    def _all(self, app_name: str, eval_set_id: str) -> builtins.list[EvalMetric]:
        return self._load(self._path(app_name, eval_set_id))

    def _names(self, app_name: str, eval_set_id: str) -> builtins.list[str]:
        return [m.metric_name for m in self._all(app_name, eval_set_id)]

    def _get(self, app_name: str, eval_set_id: str, metric_name: str) -> EvalMetric:
        metrics = self._all(app_name, eval_set_id)
        return metrics[_index(metrics, app_name, eval_set_id, metric_name)]

    @file_names
    async def list(self, app_name: str, eval_set_id: str) -> builtins.list[str]:
        """Return the metric names in file order (``[]`` when the file is missing)."""
        return await asyncio.to_thread(self._names, app_name, eval_set_id)

    @file_names
    async def get_all(self, app_name: str, eval_set_id: str) -> builtins.list[EvalMetric]:
        """Read every metric of an eval set, in file order, with one read of its file (``[]`` when it is missing)."""
        return await asyncio.to_thread(self._all, app_name, eval_set_id)

    @file_names
    async def get(self, app_name: str, eval_set_id: str, metric_name: str) -> EvalMetric:
        """Read the metric with this name."""
        return await asyncio.to_thread(self._get, app_name, eval_set_id, metric_name)

    @file_names
    async def add(self, app_name: str, eval_set_id: str, metric: EvalMetric) -> None:
        """Append a metric (creating the file if needed); its name must be new in the set."""
        await asyncio.to_thread(self._edit, app_name, eval_set_id, _adder(app_name, eval_set_id, metric))

    @file_names
    async def update(self, app_name: str, eval_set_id: str, metric: EvalMetric) -> None:
        """Replace the metric with the same name and rewrite the file."""
        await asyncio.to_thread(self._edit, app_name, eval_set_id, _updater(app_name, eval_set_id, metric))

    @file_names
    async def delete(self, app_name: str, eval_set_id: str, metric_name: str) -> None:
        """Remove the metric with this name and rewrite the file."""
        await asyncio.to_thread(self._edit, app_name, eval_set_id, _deleter(app_name, eval_set_id, metric_name))

    async def close(self) -> None:
        """Do nothing: no file stays open."""
