"""What an evaluator is: a function from aligned actual and expected turns to scores."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from agenteval.errors import ConfigError
from agenteval.evalresult.models import EvalMetricResultDetails, ScoreKind, ScoreValue
from agenteval.evalset.models import Invocation
from agenteval.metric.criterion import Criterion
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus

__all__ = [
    "UNIT_SCORE_RANGE",
    "CriterionMaterializer",
    "EvaluateResult",
    "EvaluatorFunction",
    "MetricChecker",
    "MetricEvaluator",
    "PerInvocationResult",
    "ScoreRange",
    "TurnMatchingEvaluator",
    "average_of_turns",
    "check_threshold",
    "status_for",
]

C = TypeVar("C")

ScoreRange = tuple[float, float]
"""The lowest and highest score an evaluator gives, both included."""

UNIT_SCORE_RANGE: ScoreRange = (0.0, 1.0)
"""The score range of every built-in evaluator: scores are fractions."""


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

    An evaluator may also have a ``check_metric(metric)`` method (see :class:`MetricChecker`), which
    :class:`~agenteval.Evaluator` calls for every metric before any case runs, so that a metric
    that would fail every case stops the evaluation at once. It is optional. So is a
    ``score_range`` attribute (a :data:`ScoreRange`, such as ``(0.0, 10.0)``): when an evaluator
    declares one, a metric whose threshold lies outside it is refused at the same point
    (:func:`check_threshold`). Every built-in evaluator declares :data:`UNIT_SCORE_RANGE`.
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
class MetricChecker(Protocol):
    """An evaluator that can reject a metric before any case runs.

    :class:`~agenteval.Evaluator` calls ``check_metric`` for every metric that runs this evaluator,
    before the agent runs (and before :meth:`~agenteval.Evaluator.rescore` scores anything), with the
    evaluation's metric registry and judge override active; an exception stops the evaluation with a
    :class:`~agenteval.errors.ConfigError` naming the metric. The
    :class:`~agenteval.service.LocalService` does not call it: there, errors fail cases.
    """

    def check_metric(self, metric: EvalMetric) -> None:
        """Raise when ``metric`` cannot be evaluated, whatever the case.

        Check only what ``evaluate`` would reject for every case: case-level data (such as the
        rubrics a case adds to a judge metric) is not known yet.
        """
        ...


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


def check_threshold(metric: EvalMetric, score_range: ScoreRange) -> None:
    """Refuse a threshold outside the scores the metric's evaluator can give.

    Such a metric passes every case (threshold below the range) or fails every case (above it),
    usually because the threshold was written as a percentage.

    Args:
        metric: The metric.
        score_range: The evaluator's lowest and highest score.

    Raises:
        ConfigError: The threshold is outside ``score_range``; the message says what to write.
    """
    low, high = score_range
    threshold = metric.threshold
    if low <= threshold <= high:
        return
    if score_range != UNIT_SCORE_RANGE:
        fix = f"write a threshold from {low:g} to {high:g}"
    elif 1 < threshold <= 100:
        fix = f"scores are fractions, so write e.g. threshold={threshold / 100:g} for {threshold:g}%"
    else:
        fix = "scores are fractions, so write a threshold from 0 to 1"
    raise ConfigError(
        f"threshold {threshold:g} is outside the score range of {metric.evaluator} ({low:g} to {high:g}): {fix}"
    )


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


class TurnMatchingEvaluator(ABC, Generic[C]):
    """An evaluator that scores each turn 1 when it matches its expected turn under one criterion.

    The overall score is the mean over turns. A subclass names its criterion (:attr:`kind`, which
    prefixes errors and mismatch reasons, :attr:`label`, the evaluator in the count-mismatch
    error, and :attr:`how_to_configure`, the fix when the metric has no such criterion) and
    supplies where the metric holds it, how to reject an unusable one and how to match a turn.
    :meth:`evaluate` and :meth:`check_metric` run the same criterion check.
    """

    kind: ClassVar[str]
    label: ClassVar[str]
    how_to_configure: ClassVar[str]
    score_range: ClassVar[ScoreRange] = UNIT_SCORE_RANGE

    @abstractmethod
    def criterion_of(self, metric: EvalMetric) -> C | None:
        """The metric's criterion of this kind, ``None`` when it is not configured."""

    @abstractmethod
    def check_criterion(self, criterion: C) -> None:
        """Reject an unusable criterion (raise :class:`~agenteval.errors.ConfigError`)."""

    @abstractmethod
    def match_turn(
        self, actual: Invocation, expected: Invocation, criterion: C, measures: dict[str, float]
    ) -> str | None:
        """``None`` when ``actual`` matches ``expected``, else a mismatch reason.

        ``criterion`` has passed :meth:`check_criterion` in this call of :meth:`evaluate`.

        What the criterion measured on the way (see
        :attr:`~agenteval.evalresult.models.EvalMetricResultDetails.measures`) goes into ``measures``.
        """

    def check_metric(self, metric: EvalMetric) -> None:
        """Reject the metric before any case runs, by the criterion check :meth:`evaluate` starts with.

        Raises:
            ConfigError: ``"<kind> criterion not configured: <how to configure it>"``, or what
                :meth:`check_criterion` raised.
        """
        self._criterion(metric)

    def evaluate(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> EvaluateResult:
        """Score the turns of one case; named compares come from the active metric registry.

        Returns:
            One result per turn with what its criterion measured in ``details.measures``, plus
            their mean (``not_evaluated`` for zero turns).

        Raises:
            ConfigError: No criterion, an unusable one, a compare that raised, or ``actuals`` and
                ``expecteds`` differ in length.
        """
        criterion = self._criterion(metric)
        if len(actuals) != len(expecteds):
            raise ConfigError(
                f"{self.label}: actual invocations ({len(actuals)}) and expected invocations ({len(expecteds)}) "
                "count mismatch"
            )
        results: list[PerInvocationResult] = []
        for actual, expected in zip(actuals, expecteds, strict=True):
            measures: dict[str, float] = {}
            mismatch = self.match_turn(actual, expected, criterion, measures)
            score = 1.0 if mismatch is None else 0.0
            reason = "" if mismatch is None else f"{self.kind} mismatch: {mismatch}"
            results.append(
                PerInvocationResult(
                    score=score,
                    status=status_for(score, metric.threshold),
                    # Built without validation: every value is made here (this runs for every turn).
                    details=EvalMetricResultDetails.trusted(
                        reason=reason,
                        score=score,
                        value=ScoreValue.trusted(kind=ScoreKind.NUMERIC, numeric=score),
                        measures=measures,
                    ),
                    actual_invocation=actual,
                    expected_invocation=expected,
                )
            )
        return average_of_turns(results, metric.threshold)

    def _criterion(self, metric: EvalMetric) -> C:
        criterion = self.criterion_of(metric)
        if criterion is None:
            raise ConfigError(f"{self.kind} criterion not configured: {self.how_to_configure}")
        self.check_criterion(criterion)
        return criterion
