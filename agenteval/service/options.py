"""Options of the local service, settable per service and overridable per call."""

from __future__ import annotations

import numbers
import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Self, get_args, get_type_hints

from agenteval._util.callable_names import did_you_mean
from agenteval._util.option_checks import check_switches, counted, whole_number
from agenteval.aggregation import AllPassAggregator, EvalCaseResultAggregator, as_aggregator, finite_score
from agenteval.context import EvalContext
from agenteval.errors import ConfigError
from agenteval.evalset.manager import EvalSetManager
from agenteval.evalset.memory import InMemoryEvalSetManager
from agenteval.evaluators.registry import EvaluatorRegistry, default_registry
from agenteval.llm.base import ChatModel
from agenteval.llm.judge import JudgeOverride
from agenteval.metric.registry import MetricRegistry
from agenteval.runner.base import Runner
from agenteval.runner.function import as_runner
from agenteval.runner.simulation import UserSimulator
from agenteval.runner.tool_replay import ToolReplay
from agenteval.service.callbacks import Callbacks

__all__ = [
    "DEFAULT_MAX_SIMULATED_TURNS",
    "ServiceOptions",
    "SessionIdSupplier",
    "default_parallelism",
    "uuid_session_id",
]

SessionIdSupplier = Callable[[EvalContext], str]
"""Returns the session id for a case, given the current context."""

DEFAULT_MAX_SIMULATED_TURNS = 100


def uuid_session_id(context: EvalContext) -> str:
    """The default session-id supplier: a new UUID4 per case."""
    return str(uuid.uuid4())


def default_parallelism() -> int:
    """The number of logical CPUs (the reference uses ``GOMAXPROCS``)."""
    return os.cpu_count() or 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceOptions:
    """Everything the local service needs besides the agent.

    The one declaration of each service option: :class:`~agenteval.Evaluator`'s options extend these
    (see :class:`~agenteval.evaluation.EvaluationOptions`), and every per-call override goes through
    :meth:`updated`.
    """

    eval_set_manager: EvalSetManager = field(default_factory=InMemoryEvalSetManager)
    """Where eval sets and cases are read from (when a request does not hold its eval set)."""
    registry: EvaluatorRegistry = field(default_factory=default_registry)
    """Evaluators by name."""
    aggregator: EvalCaseResultAggregator = field(default_factory=AllPassAggregator)
    """Decides each case's score and status: an object with ``aggregate(input)`` or a plain function (which is
    wrapped); by default every metric must pass."""
    session_id_supplier: SessionIdSupplier = uuid_session_id
    """Session id per case (called once per case, per run)."""
    expected_runner: Runner | None = None
    """Produces expected turns for ``expectedRunnerEnabled`` cases and ``driver: expected`` scenarios."""
    user_simulator: UserSimulator | None = None
    """Plays the user in ``conversationScenario`` cases."""
    callbacks: Callbacks = field(default_factory=Callbacks)
    """Lifecycle callbacks."""
    parallelism: int = field(default_factory=default_parallelism)
    """Most cases inferred or evaluated at once when a parallel switch is on."""
    parallel_inference: bool = False
    """Run the agent on several cases at once (turns of one case stay in order)."""
    parallel_evaluation: bool = False
    """Score several cases at once (metrics of one case stay in order)."""
    metric_registry: MetricRegistry | None = None
    """Named compares and tokenizers that metrics refer to (``compareName``, ``tokenizerName``);
    ``None`` uses the process-wide default registry."""
    judge: ChatModel | None = None
    """Judge every ``llmJudge`` metric with this model instead of its ``judgeModel``."""
    judge_num_samples: int = 1
    """Judge samples per turn with :attr:`judge`."""
    judge_timeout: float | None = None
    """Seconds one request to a judge built from a metric's ``judgeModel`` may take in total, retries
    included, in place of its ``timeoutSeconds`` (``None``: that, else 120)."""
    judge_max_retries: int | None = None
    """Retries after a failed attempt of a judge built from a metric's ``judgeModel``, within its timeout,
    in place of its ``maxRetries`` (``None``: that, else 2)."""
    tool_mock_model: ChatModel | None = None
    """Generates results for ``toolMock`` rules with an ``llmGenerator``."""
    max_simulated_turns: int = DEFAULT_MAX_SIMULATED_TURNS
    """Guard for scenarios without ``maxAllowedInvocations``: a simulator still talking after this many
    user turns fails the case instead of running forever."""
    turn_timeout: float | None = None
    """Seconds one agent turn may take before its case fails (``None``: no limit). A plain agent
    function cannot be stopped, so its worker thread finishes in the background; an ``async`` agent that
    blocks the event loop without awaiting cannot be timed out, and is named in a logged warning after 5 s."""
    tool_replay: ToolReplay | None = None
    """Answer the agent's tool calls with the results an earlier evaluation recorded, where the same turn of
    the same case and run made the identical call (``toolMock`` rules still come first); other calls run the
    tools. Replayed calls are marked ``"replayed": true`` in the results (see :class:`ToolReplay`). An
    :class:`~agenteval.Evaluator` takes the earlier :class:`~agenteval.EvaluationReport` itself."""

    def __post_init__(self) -> None:
        # Every check of the fields declared here, once: EvaluationOptions checks its own and defers to this.
        # Accept plain functions where the reference takes interfaces, as the facade does.
        object.__setattr__(self, "aggregator", as_aggregator(self.aggregator))
        if self.expected_runner is not None:
            object.__setattr__(self, "expected_runner", as_runner(self.expected_runner))
        check_switches(self, "parallel_inference", "parallel_evaluation")
        object.__setattr__(self, "parallelism", whole_number("parallelism", self.parallelism))
        # As in the reference, the cap matters (and is checked) only when cases run in parallel.
        if self.parallelism <= 0 and (self.parallel_inference or self.parallel_evaluation):
            raise ConfigError("eval case parallelism must be greater than 0")
        # In the words the service has always used (the reference's, for judge runner num samples).
        for name, words in (
            ("judge_num_samples", "judge runner num samples"),
            ("max_simulated_turns", "max simulated turns"),
        ):
            object.__setattr__(self, name, counted(name, getattr(self, name), words))
        if self.turn_timeout is not None:
            object.__setattr__(self, "turn_timeout", _positive_seconds("turn_timeout", self.turn_timeout))
        if self.tool_replay is not None and not isinstance(self.tool_replay, ToolReplay):
            raise ConfigError(
                f"tool_replay must be an earlier report or None, got {type(self.tool_replay).__name__}: pass the"
                " EvaluationReport to an Evaluator, or ToolReplay.of(report.inference_results) (from"
                " agenteval.runner.tool_replay) to a LocalService"
            )
        if self.judge_timeout is not None:
            object.__setattr__(self, "judge_timeout", _positive_seconds("judge_timeout", self.judge_timeout))
        if self.judge_max_retries is not None:
            object.__setattr__(self, "judge_max_retries", _retry_budget("judge_max_retries", self.judge_max_retries))

    @property
    def judge_override(self) -> JudgeOverride | None:
        """What replaces the metrics' ``judgeModel`` settings: :attr:`judge`, or the judge timeout and retries."""
        if self.judge is None and self.judge_timeout is None and self.judge_max_retries is None:
            return None
        return JudgeOverride(self.judge, self.judge_num_samples, self.judge_timeout, self.judge_max_retries)

    def updated(self, overrides: Mapping[str, Any]) -> Self:
        """A copy with ``overrides`` applied, checked again.

        ``None`` keeps the current value of an option that cannot be ``None`` (``parallelism=None``),
        and sets one that can (``judge=None``: no judge override).

        Raises:
            ConfigError: An unknown option (with the closest name), or a value the options refuse.
        """
        if not overrides:
            return self
        nullable = _nullable_options(type(self))
        unknown = sorted(set(overrides) - nullable.keys())
        if unknown:
            known = sorted(nullable)
            named = [f"{name!r}{did_you_mean(name, known)}" for name in unknown]
            raise ConfigError(f"unknown option {', '.join(named)}; the options are: {', '.join(known)}")
        values = {name: value for name, value in overrides.items() if value is not None or nullable[name]}
        return replace(self, **values) if values else self


def _positive_seconds(name: str, value: object) -> float:
    seconds = finite_score(value)
    if seconds is None or seconds <= 0:
        raise ConfigError(f"{name} must be a positive number of seconds or None, got {type(value).__name__} {value!r}")
    return seconds


def _retry_budget(name: str, value: object) -> int:
    retries = int(value) if isinstance(value, numbers.Integral) and not isinstance(value, bool) else -1
    if retries < 0:
        raise ConfigError(f"{name} must be a whole number, 0 or more, or None, got {type(value).__name__} {value!r}")
    return retries


_NULLABLE: dict[type, dict[str, bool]] = {}


def _nullable_options(cls: type[ServiceOptions]) -> dict[str, bool]:
    """Each option of ``cls`` and whether it may be ``None`` (worked out once per class)."""
    known = _NULLABLE.get(cls)
    if known is None:
        hints = get_type_hints(cls)
        known = _NULLABLE[cls] = {option.name: type(None) in get_args(hints[option.name]) for option in fields(cls)}
    return known
