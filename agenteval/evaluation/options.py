"""The options of an evaluation: every setting besides the app and the agent, declared and checked once."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal, get_args

from agenteval._util.option_checks import check_switches, counted
from agenteval.analysis.report import EvaluationReport
from agenteval.cache.cassettes import CassetteMode, Cassettes
from agenteval.errors import ConfigError
from agenteval.evalresult.manager import EvalResultManager
from agenteval.evalresult.memory import InMemoryEvalResultManager
from agenteval.evaluation._reuse import CacheOption, check_cache_option
from agenteval.metric.manager import MetricManager
from agenteval.metric.memory import InMemoryMetricManager
from agenteval.runner.tool_replay import ToolReplay
from agenteval.service.options import ServiceOptions
from agenteval.service.ray_executor import RayExecutor

__all__ = ["DEFAULT_PARALLELISM", "EvaluationOptions"]

DEFAULT_PARALLELISM = 16
"""Cases in flight at once by default: agents mostly wait on model APIs, so cases run concurrently
(a plain, synchronous agent function runs in at most this many worker threads)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationOptions(ServiceOptions):
    """Everything an evaluation uses besides the app and the agent: the service's options and these.

    :class:`~agenteval.Evaluator` takes any of them as a keyword (``Evaluator(app, agent, num_runs=3)``),
    and its :meth:`~agenteval.Evaluator.evaluate` per call. Each option is described and checked once,
    where it is declared: here, or in :class:`~agenteval.service.ServiceOptions`. Only
    ``parallel_inference``, ``parallel_evaluation`` and ``parallelism`` are declared again here, for an
    evaluation's defaults (the service checks them).
    """

    metric_manager: MetricManager = field(default_factory=InMemoryMetricManager)
    """Where the eval set's metrics are read from (unless ``metrics=`` is given)."""
    result_manager: EvalResultManager = field(default_factory=InMemoryEvalResultManager)
    """Where each result is saved."""
    num_runs: int = 1
    """Repetitions of every case."""
    parallel_runs: bool = False
    """Run the repetitions concurrently too (they share ``parallelism``)."""
    eval_case_ids: tuple[str, ...] = ()
    """Evaluate only these cases (all when empty)."""
    progress: bool | None = None
    """``None``: a live widget in Jupyter, a bar on a terminal, nothing otherwise; ``True`` always, ``False`` never."""
    cache: CacheOption = None
    """Take finished inferences and scores from a cache and keep new ones there: ``True`` for
    ``.agenteval-cache`` in the working directory, a directory, or an :class:`~agenteval.Cache` (off).
    An unchanged re-run calls neither the agent nor a judge; the README says what each entry's key holds."""
    agent_version: str = ""
    """Part of the agent's identity in the cache, for changes its code does not show (a prompt file, a model
    name): change it to run the agent again."""
    cassette: str | os.PathLike[str] | Cassettes | None = None
    """Record each case-run's HTTP traffic (the agent's model calls through httpx, requests or aiohttp, the
    judge's, the simulated user's) in this directory and replay it (off); credentials are never written
    (``pip install 'agenteval[cassette]'``)."""
    cassette_mode: CassetteMode = "auto"
    """``"auto"`` replays what is recorded and records the rest, ``"record"`` records afresh, ``"replay"`` never
    touches the network (a request not recorded fails its case)."""
    executor: Literal["local"] | RayExecutor = "local"
    """Where each case's inference runs: ``"local"`` (this event loop) or a :class:`~agenteval.RayExecutor`
    (a Ray cluster; callbacks, scoring and the save stay here)."""
    strict: bool = False
    """For CI: refuse before the agent runs, with a :class:`~agenteval.ConfigError` naming the metric, file or
    field and the fix, what is otherwise only warned about: a metric whose evaluator is not registered (else
    skipped with a ``SkippedMetricWarning``), an evaluation without metrics (``NoMetricsWarning``), a key no
    field takes in the eval set or the metrics, read from a file or given in code (``UnknownFieldWarning``).
    A metric without the criterion its evaluator needs is refused either way."""
    parallel_inference: bool = True
    """Run up to :attr:`parallelism` cases of a run at once (on: agents mostly wait on model APIs; turn it off
    for an agent that must not run concurrently)."""
    parallel_evaluation: bool = True
    """Score up to :attr:`parallelism` cases of a run at once (on); a case being scored holds no slot of the
    agent's. With both switches off, each case is scored before the next one runs."""
    parallelism: int = DEFAULT_PARALLELISM
    """The cap on cases in flight, shared by concurrent runs (16); a plain synchronous agent function runs in
    at most this many worker threads."""

    def __post_init__(self) -> None:
        # The fields declared here; ServiceOptions.__post_init__ checks the rest.
        object.__setattr__(self, "num_runs", counted("num_runs", self.num_runs))
        # The facade's own rule, stricter than the service's: every run shares one limit of this size, so it is
        # needed even with the parallel switches off.
        object.__setattr__(self, "parallelism", counted("parallelism", self.parallelism))
        check_switches(self, "parallel_runs", "strict")
        if self.progress is not None:
            check_switches(self, "progress")
        check_cache_option(self.cache)
        cassette = self.cassette
        if not (
            cassette is None
            or isinstance(cassette, Cassettes)
            or (isinstance(cassette, str | os.PathLike) and os.fspath(cassette))
        ):
            raise ConfigError(f"cassette must be a directory or None, got {type(cassette).__name__} {cassette!r:.60}")
        if self.cassette_mode not in get_args(CassetteMode):
            raise ConfigError(
                f"cassette_mode must be one of {', '.join(map(repr, get_args(CassetteMode)))},"
                f" got {self.cassette_mode!r}"
            )
        _check_executor(self.executor, cassette)
        if self.cassette_mode != "auto" and cassette is None:
            raise ConfigError(
                f"cassette_mode={self.cassette_mode!r} needs cassette=: the directory the cassettes are recorded in"
            )
        if not isinstance(self.agent_version, str):
            raise ConfigError(
                f"agent_version must be a string, got {type(self.agent_version).__name__} {self.agent_version!r:.60}"
            )
        ids = self.eval_case_ids
        if isinstance(ids, str):
            raise ConfigError(f"eval_case_ids must be a list of case ids, got the string {ids!r}; write [{ids!r}]")
        object.__setattr__(self, "eval_case_ids", tuple(ids))
        # Not a check: the one conversion an Evaluator adds to a service option, before the service checks it.
        if isinstance(self.tool_replay, EvaluationReport):
            object.__setattr__(self, "tool_replay", ToolReplay.of(self.tool_replay.inference_results))
        # Not super(): a slots dataclass is a new class, which a zero-argument super() does not know.
        ServiceOptions.__post_init__(self)


def _check_executor(executor: object, cassette: object) -> None:
    if not (executor == "local" or isinstance(executor, RayExecutor)):
        raise ConfigError(f"executor must be 'local' or an ae.RayExecutor, got {executor!r:.60}")
    if cassette is not None and executor != "local":
        raise ConfigError(
            "cassette records the HTTP traffic of this process, and with executor=RayExecutor(...) the agent runs"
            " on the cluster: leave out one of them"
        )
