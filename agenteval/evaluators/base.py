"""What an evaluator is: a function from aligned actual and expected turns to scores."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from agenteval.evalresult.models import EvalMetricResultDetails
from agenteval.evalset.models import Invocation
from agenteval.metric.criterion import Criterion
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus

__all__ = [
    "CriterionMaterializer",
    "EvaluateResult",
    "EvaluatorFunction",
    "MetricEvaluator",
    "PerInvocationResult",
    "average_of_turns",
    "status_for",
]


@dataclass(slots=True, kw_only=True)
class PerInvocationResult:
    """An evaluator's verdict on one turn."""

    score: float
    """Score of the turn, usually in ``[0, 1]``."""
    status: EvalStatus
    """``passed``, ``failed`` or ``not_evaluated``."""
    details: EvalMetricResultDetails | None = None
    """Reason, typed value and rubric scores."""
    actual_invocation: Invocation | None = None
    """The actual turn scored (informational)."""
    expected_invocation: Invocation | None = None
    """The expected turn scored against (informational)."""


@dataclass(slots=True, kw_only=True)
class EvaluateResult:
    """An evaluator's verdict on a whole case: one result per turn, plus an overall one."""

    overall_score: float
    """Overall score of the case for this metric."""
    overall_status: EvalStatus
    """Overall status of the case for this metric."""
    per_invocation_results: list[PerInvocationResult] = field(default_factory=list)
    """One result per turn, aligned with the turns given to the evaluator."""


@runtime_checkable
class MetricEvaluator(Protocol):
    """Scores a case's actual turns against its expected turns for one metric.

    ``actuals`` and ``expecteds`` are aligned by index. ``evaluate`` may be a plain or an ``async``
    method. Raising an exception fails the case (its message becomes the case's ``errorMessage``);
    it never stops the evaluation of other cases.
    """

    def evaluate(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> EvaluateResult | Awaitable[EvaluateResult]:
        """Score the turns of one case."""
        ...


EvaluatorFunction = Callable[
    [Sequence[Invocation], Sequence[Invocation], EvalMetric], EvaluateResult | Awaitable[EvaluateResult]
]
"""A plain function usable as an evaluator: ``fn(actuals, expecteds, metric) -> EvaluateResult``."""


@runtime_checkable
class CriterionMaterializer(Protocol):
    """An evaluator that records, per turn, the criterion it really applied.

    The service stores the returned criterion in that turn's metric result (for example the
    template judge's rendered prompt); evaluators without this method get a copy of the
    metric's criterion.
    """

    def materialize_criterion(
        self, metric: EvalMetric, actuals: Sequence[Invocation], expecteds: Sequence[Invocation]
    ) -> Criterion | None:
        """Return the criterion applied to the last of ``actuals`` (turns so far)."""
        ...


def status_for(score: float, threshold: float) -> EvalStatus:
    """``passed`` when ``score >= threshold``, else ``failed``."""
    return EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED


def average_of_turns(results: list[PerInvocationResult], threshold: float) -> EvaluateResult:
    """Combine per-turn results: the overall score is their mean (``not_evaluated`` when empty).

    Args:
        results: Per-turn results.
        threshold: The metric's pass threshold, applied to the mean.

    Returns:
        The case-level result holding ``results``.
    """
    if not results:
        return EvaluateResult(overall_score=0.0, overall_status=EvalStatus.NOT_EVALUATED, per_invocation_results=[])
    mean = sum(r.score for r in results) / len(results)
    return EvaluateResult(
        overall_score=mean, overall_status=status_for(mean, threshold), per_invocation_results=results
    )
