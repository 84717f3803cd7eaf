"""Options of the local service, settable per service and overridable per call."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict

from agenteval.aggregation import AllPassAggregator, EvalCaseResultAggregator, as_aggregator
from agenteval.context import EvalContext
from agenteval.errors import ConfigError
from agenteval.evalset.manager import EvalSetManager
from agenteval.evalset.memory import InMemoryEvalSetManager
from agenteval.evaluators.registry import EvaluatorRegistry, default_registry
from agenteval.llm.base import ChatModel
from agenteval.llm.judge import JudgeOverride
from agenteval.metric.registry import MetricRegistry
from agenteval.runner.base import Runner
from agenteval.runner.function import AgentFunction, as_runner
from agenteval.runner.simulation import UserSimulator
from agenteval.service.callbacks import Callbacks

__all__ = [
    "DEFAULT_MAX_SIMULATED_TURNS",
    "ServiceOptions",
    "ServiceOverrides",
    "SessionIdSupplier",
    "default_parallelism",
    "uuid_session_id",
]

SessionIdSupplier = Callable[[EvalContext], str]
"""Returns the session id for a case, given the current context."""

DEFAULT_MAX_SIMULATED_TURNS = 100
_NONE_MEANS_NONE = frozenset(
    {"expected_runner", "user_simulator", "metric_registry", "judge_override", "tool_mock_model", "turn_timeout"}
)


def uuid_session_id(context: EvalContext) -> str:
    """The default session-id supplier: a new UUID4 per case."""
    return str(uuid.uuid4())


def default_parallelism() -> int:
    """The number of logical CPUs (the reference uses ``GOMAXPROCS``)."""
    return os.cpu_count() or 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceOptions:
    """Everything the local service needs besides the agent."""

    eval_set_manager: EvalSetManager = field(default_factory=InMemoryEvalSetManager)
    """Where eval sets and cases are read from."""
    registry: EvaluatorRegistry = field(default_factory=default_registry)
    """Evaluators by name."""
    aggregator: EvalCaseResultAggregator = field(default_factory=AllPassAggregator)
    """Decides each case's score and status."""
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
    judge_override: JudgeOverride | None = None
    """Judge every ``llmJudge`` metric with this model instead of its ``judgeModel``."""
    tool_mock_model: ChatModel | None = None
    """Generates results for ``toolMock`` rules with an ``llmGenerator``."""
    max_simulated_turns: int = DEFAULT_MAX_SIMULATED_TURNS
    """Guard for scenarios without ``maxAllowedInvocations``: a simulator still talking after this many
    user turns fails the case instead of running forever."""
    turn_timeout: float | None = None
    """Seconds one agent turn may take before its case fails (``None``: no limit). A plain agent
    function cannot be stopped, so its worker thread finishes in the background."""

    def __post_init__(self) -> None:
        # Accept plain functions where the reference takes interfaces, as the facade does.
        object.__setattr__(self, "aggregator", as_aggregator(self.aggregator))
        if self.expected_runner is not None:
            object.__setattr__(self, "expected_runner", as_runner(self.expected_runner))
        if (self.parallel_inference or self.parallel_evaluation) and self.parallelism <= 0:
            raise ConfigError("eval case parallelism must be greater than 0")
        if self.max_simulated_turns <= 0:
            raise ConfigError(f"max simulated turns must be greater than 0, got {self.max_simulated_turns}")
        if self.turn_timeout is not None and not self.turn_timeout > 0:
            raise ConfigError(f"turn timeout must be a positive number of seconds or None, got {self.turn_timeout}")

    def updated(self, overrides: ServiceOverrides) -> ServiceOptions:
        """Return a copy with ``overrides`` applied (validated again).

        ``None`` means "keep the current value", except for the optional fields (``expected_runner``,
        ``user_simulator``, ``metric_registry``, ``judge_override``, ``tool_mock_model``, ``turn_timeout``), where it
        means "none".
        """
        values: dict[str, Any] = {
            key: value for key, value in overrides.items() if value is not None or key in _NONE_MEANS_NONE
        }
        return replace(self, **values) if values else self


class ServiceOverrides(TypedDict, total=False):
    """Per-call overrides of :class:`ServiceOptions` (same names)."""

    eval_set_manager: EvalSetManager
    registry: EvaluatorRegistry
    aggregator: EvalCaseResultAggregator
    session_id_supplier: SessionIdSupplier
    expected_runner: Runner | AgentFunction | None
    user_simulator: UserSimulator | None
    callbacks: Callbacks
    parallelism: int
    parallel_inference: bool
    parallel_evaluation: bool
    metric_registry: MetricRegistry | None
    judge_override: JudgeOverride | None
    tool_mock_model: ChatModel | None
    max_simulated_turns: int
    turn_timeout: float | None
