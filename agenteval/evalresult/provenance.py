"""What produced a result: versions, the exact eval set and metrics (with content hashes), settings, times.

It is saved with the result, as ``summary.provenance`` (the reference framework ignores keys it does
not know, and ``summary`` is kept by every store, MySQL included), so a result file says how to
reproduce it.

Files with results are shared, so provenance never holds a secret: the agent, aggregator and judge
are recorded by name, never by a ``repr`` of their state, and whatever looks like a credential in
those descriptions is redacted (see :func:`agenteval._secrets.redact`).
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Self

from pydantic import Field, field_validator

from agenteval._json import CamelModel, EpochTime, GoInt, WireModel
from agenteval._secrets import redact
from agenteval.evalset.identity import eval_set_hash
from agenteval.evalset.models import EvalSet
from agenteval.metric.models import EvalMetric

__all__ = ["Provenance", "ReusedWork", "content_hash", "current_environment", "package_version"]

_DESCRIPTIONS = ("agent", "aggregator", "judge", "derived_from")
"""The fields that describe what produced a result in free text: redacted when set."""


def package_version() -> str:
    """The installed agenteval version (``0.0.0`` when running from an uninstalled source tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agenteval")
    except PackageNotFoundError:
        return "0.0.0"


def content_hash(models: WireModel | Sequence[WireModel]) -> str:
    """SHA-256 of the models' JSON with sorted keys, as ``sha256:<hex>``; equal content, equal hash."""
    data = models.to_dict() if isinstance(models, WireModel) else [model.to_dict() for model in models]
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


class ReusedWork(CamelModel):
    """What an evaluation took from finished work instead of running the agent or a metric again."""

    sources: list[str] = Field(default_factory=list)
    """Where it came from: ``cache``, and ``resume of <result id>`` when it resumed an interrupted evaluation."""
    inferences: list[tuple[GoInt, str]] = Field(default_factory=list)
    """The (run, case) pairs whose agent turns were taken."""
    scores: list[tuple[GoInt, str, str]] = Field(default_factory=list)
    """The (run, case, metric) results taken."""


class Provenance(CamelModel):
    """How a report was produced."""

    agenteval_version: str = ""
    """agenteval version (empty when not recorded)."""
    python_version: str = ""
    """Python version (empty when not recorded)."""
    platform: str = ""
    """Operating system and machine (empty when not recorded)."""
    app_name: str = ""
    eval_set_id: str = ""
    eval_set_hash: str = ""
    """Hash of the eval set as evaluated: of its cases' behaviour and expectations (see :mod:`agenteval.evalset.identity`)."""
    metrics: list[EvalMetric] = Field(default_factory=list)
    """The metric configuration, in order (secrets are never written, ``${VAR}`` references are)."""
    metrics_hash: str = ""
    """Content hash of :attr:`metrics`."""
    agent: str = ""
    """The agent's name: its function's, or its class's (``module.qualname``; never its state)."""
    aggregator: str = ""
    """The case aggregator's name: its function's, or its class's (``module.qualname``; never its state).

    Results written by agenteval before names were recorded hold its ``repr`` (``AllPassAggregator()``)."""
    judge: str = ""
    """The judge override's class, if one was used (``module.qualname``; never its state)."""
    num_runs: GoInt = 0
    parallel_inference: bool = False
    parallel_evaluation: bool = False
    parallel_runs: bool = False
    parallelism: GoInt = 0
    eval_case_ids: list[str] = Field(default_factory=list)
    """The case filter, if any."""
    started_at: EpochTime | None = None
    finished_at: EpochTime | None = None
    derived_from: str = ""
    """For a report made by rescoring, re-aggregating or changing thresholds: what it was made from."""
    reused: ReusedWork | None = None
    """What was taken from a cache or an interrupted evaluation instead of being done again (``None``: nothing)."""

    @field_validator(*_DESCRIPTIONS)
    @classmethod
    def _without_secrets(cls, value: str) -> str:
        return redact(value)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy, with ``update`` applied; new descriptions are redacted, as validated ones are."""
        if update:
            update = {
                name: redact(value) if name in _DESCRIPTIONS and isinstance(value, str) else value
                for name, value in update.items()
            }
        return super().model_copy(update=update, deep=deep)

    @classmethod
    def describe(cls, eval_set: EvalSet, metrics: Sequence[EvalMetric], **values: object) -> Provenance:
        """Provenance for an evaluation of ``eval_set`` with ``metrics`` here and now, hashes included."""
        return cls.model_validate(
            {"eval_set_hash": eval_set_hash(eval_set), **current_environment(), **values}
        ).scored_with(metrics)

    def scored_with(self, metrics: Sequence[EvalMetric]) -> Provenance:
        """A copy whose metric configuration, and its hash, are ``metrics``."""
        return self.model_copy(
            update={
                "metrics": [metric.model_copy(deep=True) for metric in metrics],
                "metrics_hash": content_hash(list(metrics)),
            }
        )


def current_environment() -> dict[str, str]:
    """The versions and platform of this process, as :class:`Provenance` fields."""
    return {
        "agenteval_version": package_version(),
        "python_version": sys.version.split()[0],
        "platform": platform.platform(),
    }
