"""What produced a result: versions, the exact eval set and metrics (with content hashes), settings, times.

It is saved with the result, as ``summary.provenance`` (the reference framework ignores keys it does
not know, and ``summary`` is kept by every store, MySQL included), so a result file says how to
reproduce it.

Files with results are shared, so provenance never holds a secret: the agent, aggregator and judge
are recorded by name, never by a ``repr`` of their state, and whatever looks like a credential in
those descriptions is redacted (see :func:`agenteval._util.redaction.redact`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from pydantic import Field, field_validator, model_validator

from agenteval._util.redaction import redact
from agenteval._util.trpc_json import CamelModel, EpochTime, GoFloat, GoInt, WireModel, depth_problem
from agenteval.evalset.identity import changed_cases, eval_set_hash
from agenteval.evalset.models import EvalSet
from agenteval.metric.models import EvalMetric

__all__ = [
    "LIBRARIES",
    "PARTIAL_PREFIX",
    "Provenance",
    "ReusedWork",
    "content_hash",
    "current_environment",
    "eval_set_changes",
    "git_revision",
    "package_version",
]

_DESCRIPTIONS = ("agent", "agent_label", "agent_version", "aggregator", "judge", "derived_from")
"""The fields that describe what produced a result in free text: redacted when set."""

PARTIAL_PREFIX = "partial: "
"""How :attr:`Provenance.derived_from` of a report an interrupted evaluation left begins (``partial: stopped
by …``); results saved before :attr:`Provenance.partial` was recorded are recognised by it."""

LIBRARIES = ("pandas", "numpy", "scipy", "pydantic")
"""The libraries whose versions a result records: they decide its tables and statistics."""


@functools.cache
def package_version() -> str:
    """The agenteval version this process runs (``0.0.0`` from an uninstalled source tree).

    Read from the installed metadata once: the code running does not change when another version is installed
    meanwhile, and each read of the metadata takes milliseconds (every evaluation asks several times).
    """
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
    """Hash of the eval set as read, of what defines its cases (see :mod:`agenteval.evalset.identity`)."""
    metrics: list[EvalMetric] = Field(default_factory=list)
    """The metric configuration, in order (secrets are never written, ``${VAR}`` references are)."""
    metrics_hash: str = ""
    """Content hash of :attr:`metrics`."""
    metric_definitions: dict[str, str] = Field(default_factory=dict)
    """Each metric's definition hash, by name, as the cache's score keys hold it: its configuration, its
    evaluator's code and settings, a judge override and named compares (see
    :func:`agenteval.evaluation._reuse.metric_definitions`). ``resume=`` takes a finished score only when its
    metric's hash is the same now; empty in results saved before agenteval recorded it."""
    agent: str = ""
    """The agent's name: its function's, or its class's (``module.qualname``; never its state)."""
    agent_label: str = ""
    """A readable label that tells agents of one name apart: ``agent_version=`` when given, else what
    made the agent (``make_agent(model='gpt-4o')`` for a factory's closure or a partial); never a secret."""
    agent_version: str = ""
    """The ``agent_version=`` the evaluation was given."""
    agent_code_hash: str = ""
    """A hash of the agent's code and configuration as the cache sees it (see
    :func:`agenteval.cache.keys.code_hash`): equal hashes, same code."""
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
    turn_timeout: GoFloat | None = None
    """Seconds one agent turn could take (``None``: no limit)."""
    cache_enabled: bool = False
    """Whether finished work could be taken from a cache (``cache=``); :attr:`reused` says what was."""
    cassette: str = ""
    """The directory of the cassettes the evaluation recorded or replayed (``""``: none)."""
    eval_case_ids: list[str] = Field(default_factory=list)
    """The case filter, if any."""
    git_revision: str = ""
    """The commit checked out in the working directory's git repository (``""``: not in one)."""
    library_versions: dict[str, str] = Field(default_factory=dict)
    """The versions of the libraries that shape tables and statistics (see :data:`LIBRARIES`)."""
    eval_set: EvalSet | None = None
    """The cases evaluated, as evaluated: what re-aggregating, re-scoring and comparing need after loading."""
    started_at: EpochTime | None = None
    finished_at: EpochTime | None = None
    derived_from: str = ""
    """For a report made by rescoring, re-aggregating or changing thresholds: what it was made from; for
    one an interrupted evaluation left, what stopped it (``partial: stopped by …``)."""
    partial: bool = False
    """Whether an interrupted evaluation left this report, holding only the cases that finished (written
    only when true; a result saved before it was recorded says so by its :attr:`derived_from`)."""
    reused: ReusedWork | None = None
    """What was taken from a cache or an interrupted evaluation instead of being done again (``None``: nothing)."""

    @field_validator(*_DESCRIPTIONS)
    @classmethod
    def _without_secrets(cls, value: str) -> str:
        return redact(value)

    @model_validator(mode="after")
    def _partial_by_its_description(self) -> Self:
        if not self.partial and self.derived_from.startswith(PARTIAL_PREFIX):
            self.partial = True
        return self

    def __setstate__(self, state: dict[Any, Any]) -> None:
        """Unpickle; one pickled before ``partial`` was a field says so by its description, as a file does."""
        super().__setstate__(state)
        if self.derived_from.startswith(PARTIAL_PREFIX):
            self.__dict__["partial"] = True

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy, with ``update`` applied; new descriptions are redacted, as validated ones are."""
        if update:
            update = {
                name: redact(value) if name in _DESCRIPTIONS and isinstance(value, str) else value
                for name, value in update.items()
            }
        return super().model_copy(update=update, deep=deep)

    @classmethod
    def describe(
        cls,
        eval_set: EvalSet,
        metrics: Sequence[EvalMetric],
        *,
        evaluated: Sequence[str] | None = None,
        hashes: Mapping[str, str] | None = None,
        **values: object,
    ) -> Provenance:
        """Provenance for an evaluation of ``eval_set`` with ``metrics`` here and now, hashes included.

        Args:
            eval_set: The eval set as read; its hash covers every case.
            metrics: The metrics.
            evaluated: The ids of the cases evaluated, which :attr:`eval_set` keeps (default: all) but for
                a case holding a value nested deeper than a result may hold (``depth_limit``):
                such a case fails, and its expectations could not be saved.
            hashes: The cases' :func:`~agenteval.evalset.identity.case_hashes`, when already made.
            **values: Other fields.
        """
        wanted = {case.eval_id for case in eval_set.eval_cases} if evaluated is None else set(evaluated)
        cases = [case for case in eval_set.eval_cases if case.eval_id in wanted and depth_problem(case) is None]
        kept = eval_set if len(cases) == len(eval_set.eval_cases) else eval_set.model_copy(update={"eval_cases": cases})
        return cls.model_validate(
            {
                "eval_set_hash": eval_set_hash(eval_set, hashes),
                "eval_set": kept,
                **current_environment(),
                **values,
            }
        ).scored_with(metrics)

    def scored_with(self, metrics: Sequence[EvalMetric]) -> Provenance:
        """A copy whose metric configuration, and its hash, are ``metrics``."""
        return self.model_copy(
            update={
                "metrics": [metric.model_copy(deep=True) for metric in metrics],
                "metrics_hash": content_hash(list(metrics)),
            }
        )


def eval_set_changes(provenance: Provenance | None, eval_set: EvalSet) -> list[str] | None:
    """How ``eval_set`` differs from the one ``provenance`` records: the ids of the cases that differ.

    Only the cases the result evaluated are compared when it holds them; ``["?"]`` stands for "it
    differs, but the result holds only the eval set's hash, so which cases cannot be said".

    Returns:
        ``None`` when nothing is recorded to compare with, else the differing case ids (``[]``: none).
    """
    if provenance is None:
        return None
    if provenance.eval_set is eval_set:  # a report as its evaluation made it: nothing to hash
        return []
    if provenance.eval_set is not None:
        recorded = provenance.eval_set.eval_cases
        wanted = {case.eval_id for case in recorded}
        return changed_cases(recorded, [case for case in eval_set.eval_cases if case.eval_id in wanted])
    if not provenance.eval_set_hash:
        return None
    return [] if provenance.eval_set_hash == eval_set_hash(eval_set) else ["?"]


def current_environment() -> dict[str, Any]:
    """The versions, platform and git revision of this process, as :class:`Provenance` fields."""
    return {
        "agenteval_version": package_version(),
        "python_version": sys.version.split()[0],
        "platform": platform.platform(),
        "git_revision": git_revision(Path.cwd()),
        "library_versions": _library_versions(),
    }


@functools.cache
def _library_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, str] = {}
    for name in LIBRARIES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def git_revision(directory: str | os.PathLike[str]) -> str:
    """The commit checked out in the git repository holding ``directory`` (``""`` when none, or unreadable).

    Read from the repository's files (``HEAD``, loose and packed refs), without running git, so that
    it costs microseconds; a worktree's ``.git`` file is followed to its git directory.
    """
    try:
        git_dir = _git_dir(Path(directory).resolve())
        if git_dir is None:
            return ""
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref:"):
            return head
        ref = head.removeprefix("ref:").strip()
        common = _common_dir(git_dir)
        for base in (git_dir, common):
            loose = base / ref
            if loose.is_file():
                return loose.read_text(encoding="utf-8").strip()
        packed = common / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8").splitlines():
                sha, _, name = line.partition(" ")
                if name == ref:
                    return sha
    except (OSError, UnicodeDecodeError):
        return ""
    return ""


def _git_dir(directory: Path) -> Path | None:
    for folder in (directory, *directory.parents):
        marker = folder / ".git"
        if marker.is_dir():
            return marker
        if marker.is_file():
            text = marker.read_text(encoding="utf-8").strip()
            if text.startswith("gitdir:"):
                return (folder / text.removeprefix("gitdir:").strip()).resolve()
    return None


def _common_dir(git_dir: Path) -> Path:
    """A worktree's shared git directory (where branches live), else ``git_dir`` itself."""
    common = git_dir / "commondir"
    if common.is_file():
        return (git_dir / common.read_text(encoding="utf-8").strip()).resolve()
    return git_dir
