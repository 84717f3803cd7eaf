"""The options of an evaluation: every setting besides the app and the agent, declared and checked once."""

from __future__ import annotations

import numbers
import os
from dataclasses import dataclass, field
from typing import Literal, get_args

from agenteval.aggregation import finite_score
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

    See :class:`Evaluator` for what each does; an option is declared once, here or in
    :class:`~agenteval.service.ServiceOptions`.
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
    ``.agenteval-cache`` in the working directory, a directory, or an :class:`~agenteval.Cache` (off)."""
    agent_version: str = ""
    """Part of the agent's identity in the cache, for changes its code does not show (a prompt file, a model)."""
    cassette: str | os.PathLike[str] | Cassettes | None = None
    """Record each case-run's HTTP traffic (agent, judge, simulated user) in this directory and replay it (off)."""
    cassette_mode: CassetteMode = "auto"
    """``"auto"`` replays what is recorded and records the rest, ``"record"`` records afresh, ``"replay"`` never
    touches the network."""
    executor: Literal["local"] | RayExecutor = "local"
    """Where each case's inference runs: ``"local"`` (this event loop) or a :class:`~agenteval.RayExecutor`."""
    strict: bool = False
    """Refuse before the agent runs what is otherwise only warned about: a metric whose evaluator is not
    registered, no metrics at all, a key no field takes in the eval set or the metrics (for CI)."""
    parallel_inference: bool = True
    parallel_evaluation: bool = True
    parallelism: int = DEFAULT_PARALLELISM

    def __post_init__(self) -> None:
        for name in ("num_runs", "parallelism", "judge_num_samples", "max_simulated_turns"):
            object.__setattr__(self, name, _whole_number(name, getattr(self, name)))
        for name in ("parallel_inference", "parallel_evaluation", "parallel_runs", "progress", "strict"):
            value = getattr(self, name)
            if not isinstance(value, bool) and not (name == "progress" and value is None):
                raise ConfigError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
        if self.turn_timeout is not None:
            object.__setattr__(self, "turn_timeout", _seconds("turn_timeout", self.turn_timeout))
        if self.num_runs <= 0:
            raise ConfigError(f"num_runs must be greater than 0, got {self.num_runs}")
        if self.judge_num_samples <= 0:
            raise ConfigError(f"judge_num_samples must be greater than 0, got {self.judge_num_samples}")
        # Checked even with every parallel switch off: all runs share one limit of this size.
        if self.parallelism <= 0:
            raise ConfigError(f"parallelism must be greater than 0, got {self.parallelism}")
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


def _whole_number(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{name} must be a whole number, got {type(value).__name__} {value!r}")
    return int(value)


def _seconds(name: str, value: object) -> float:
    seconds = finite_score(value)
    if seconds is None:
        raise ConfigError(f"{name} must be a finite number of seconds or None, got {type(value).__name__} {value!r}")
    return seconds
