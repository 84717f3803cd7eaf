"""Named, swappable pieces of the judge pipeline: response scorers, output schemas and aggregators."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agenteval.errors import ConfigError, NotFoundError
from agenteval.evalresult.models import RubricScore, ScoreValue
from agenteval.evaluators.base import EvaluateResult, PerInvocationResult, status_for
from agenteval.llm.base import ChatResponse, StructuredOutput
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus

__all__ = [
    "InvocationsAggregator",
    "OperatorRegistry",
    "ResponseScorer",
    "SamplesAggregator",
    "ScoreResult",
    "StructuredOutputProvider",
    "average_invocations",
    "majority_vote",
]


@dataclass(slots=True, kw_only=True)
class ScoreResult:
    """A judge reply turned into a score."""

    score: float
    """Score in ``[0, 1]``."""
    reason: str = ""
    """The judge's explanation."""
    value: ScoreValue | None = None
    """Typed value for display (numeric, boolean or categorical)."""
    rubric_scores: list[RubricScore] = field(default_factory=list)
    """Per-rubric scores, for rubric judges."""


ResponseScorer = Callable[[ChatResponse, EvalMetric], ScoreResult]
"""Turns one judge reply into a score; raises :class:`~agenteval.errors.AgentEvalError` for a malformed reply."""

StructuredOutputProvider = Callable[[EvalMetric], StructuredOutput | None]
"""Returns the JSON schema the judge must answer with, for a metric."""

SamplesAggregator = Callable[[Sequence[PerInvocationResult], EvalMetric], PerInvocationResult]
"""Picks one turn result out of several judge samples."""

InvocationsAggregator = Callable[[Sequence[PerInvocationResult], EvalMetric], EvaluateResult]
"""Combines the turn results of a case into the metric's overall result."""


def majority_vote(samples: Sequence[PerInvocationResult], metric: EvalMetric) -> PerInvocationResult:
    """The reference's default: the first sample of the majority side; a tie fails.

    Samples that were not evaluated are ignored; the chosen sample's score and reason are used
    as they are (scores are never averaged across samples).
    """
    if not samples:
        raise ConfigError("no samples")
    passing = [s for s in samples if s.status != EvalStatus.NOT_EVALUATED and s.score >= metric.threshold]
    failing = [s for s in samples if s.status != EvalStatus.NOT_EVALUATED and s.score < metric.threshold]
    if not passing and not failing:
        return samples[0]
    return passing[0] if len(passing) > len(failing) else failing[0]


def average_invocations(results: Sequence[PerInvocationResult], metric: EvalMetric) -> EvaluateResult:
    """The reference's default: the mean score of the evaluated turns, passed when it reaches the threshold.

    When no turn was evaluated the metric is ``not_evaluated`` (the per-turn results are still
    returned, unlike the reference, whose empty list made the whole case fail).
    """
    evaluated = [r.score for r in results if r.status != EvalStatus.NOT_EVALUATED]
    if not evaluated:
        return EvaluateResult(
            overall_score=0.0, overall_status=EvalStatus.NOT_EVALUATED, per_invocation_results=list(results)
        )
    mean = sum(evaluated) / len(evaluated)
    return EvaluateResult(
        overall_score=mean, overall_status=status_for(mean, metric.threshold), per_invocation_results=list(results)
    )


class OperatorRegistry:
    """Response scorers, structured-output schemas, sample and turn aggregators, by name.

    :func:`agenteval.evaluators.llm.scorers.default_operators` holds the built-ins (``majority_vote``,
    ``average``, and the template scorers ``single_score``, ``rubric_scores``, ``boolean``,
    ``categorical`` with their schemas);
    register your own to use them from ``llmJudge.template`` by name.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kinds: dict[str, dict[str, Any]] = {
            "response scorer": {},
            "structured output": {},
            "samples aggregator": {},
            "invocations aggregator": {},
        }

    def _register(self, kind: str, name: str, operator: Any) -> None:
        if not name:
            raise ConfigError(f"{kind} name is empty")
        if not callable(operator):
            raise ConfigError(f"{kind} {name!r} must be callable, got {operator!r}")
        with self._lock:
            self._kinds[kind][name] = operator

    def _get(self, kind: str, name: str) -> Any:
        with self._lock:
            operator = self._kinds[kind].get(name)
            known = sorted(self._kinds[kind])
        if operator is None:
            raise NotFoundError(f"{kind} {name!r} is not registered; registered: {known}")
        return operator

    def register_response_scorer(self, name: str, scorer: ResponseScorer) -> None:
        """Register a response scorer."""
        self._register("response scorer", name, scorer)

    def register_structured_output(self, name: str, provider: StructuredOutputProvider) -> None:
        """Register a structured-output schema provider."""
        self._register("structured output", name, provider)

    def register_samples_aggregator(self, name: str, aggregator: SamplesAggregator) -> None:
        """Register a samples aggregator."""
        self._register("samples aggregator", name, aggregator)

    def register_invocations_aggregator(self, name: str, aggregator: InvocationsAggregator) -> None:
        """Register an invocations (turns) aggregator."""
        self._register("invocations aggregator", name, aggregator)

    def response_scorer(self, name: str) -> ResponseScorer:
        """Return a response scorer (NotFoundError if unknown)."""
        scorer: ResponseScorer = self._get("response scorer", name)
        return scorer

    def structured_output(self, name: str) -> StructuredOutputProvider:
        """Return a structured-output provider (NotFoundError if unknown)."""
        provider: StructuredOutputProvider = self._get("structured output", name)
        return provider

    def has_structured_output(self, name: str) -> bool:
        """Whether a structured-output provider is registered under ``name``."""
        with self._lock:
            return name in self._kinds["structured output"]

    def samples_aggregator(self, name: str) -> SamplesAggregator:
        """Return a samples aggregator (NotFoundError if unknown)."""
        aggregator: SamplesAggregator = self._get("samples aggregator", name)
        return aggregator

    def invocations_aggregator(self, name: str) -> InvocationsAggregator:
        """Return an invocations aggregator (NotFoundError if unknown)."""
        aggregator: InvocationsAggregator = self._get("invocations aggregator", name)
        return aggregator
