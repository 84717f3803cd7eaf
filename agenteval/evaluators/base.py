"""What an evaluator is: a function from aligned actual and expected turns to scores."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar, runtime_checkable

from agenteval.errors import ConfigError
from agenteval.evalresult.models import EvalMetricResultDetails, ScoreKind, ScoreValue
from agenteval.evalset.models import Invocation
from agenteval.metric.criterion import Criterion
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus

__all__ = [
    "CriterionMaterializer",
    "EvaluateResult",
    "EvaluatorFunction",
    "MetricChecker",
    "MetricEvaluator",
    "PerInvocationResult",
    "average_of_turns",
    "checked_criterion",
    "score_matching_turns",
    "status_for",
]

C = TypeVar("C")


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
    that would fail every case stops the evaluation at once. It is optional.
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


def checked_criterion(criterion: C | None, *, kind: str, check: Callable[[C], None]) -> C:
    """Return ``criterion`` once ``check`` accepts it.

    Args:
        criterion: A metric's criterion of one kind, ``None`` when it is not configured.
        kind: Names the criterion in the error (e.g. ``"tool trajectory"``).
        check: Rejects an unusable criterion.

    Raises:
        ConfigError: ``"<kind> criterion not configured"``, or what ``check`` raised.
    """
    if criterion is None:
        raise ConfigError(f"{kind} criterion not configured")
    check(criterion)
    return criterion


def score_matching_turns(
    actuals: Sequence[Invocation],
    expecteds: Sequence[Invocation],
    metric: EvalMetric,
    criterion: C | None,
    *,
    kind: str,
    check: Callable[[C], None],
    match: Callable[[Invocation, Invocation, C], str | None],
    label: str,
) -> EvaluateResult:
    """Score each turn 1 when it matches its expected turn under ``criterion``, else 0, and average the turns.

    Args:
        actuals: The agent's turns.
        expecteds: The expected turns, aligned with ``actuals``.
        metric: The metric (its threshold decides pass or fail).
        criterion: The metric's criterion of this kind, ``None`` when it is not configured.
        kind: Names the criterion in messages (e.g. ``"tool trajectory"``): ``"<kind> criterion not
            configured"`` and the mismatch reason ``"<kind> mismatch: <reason>"``.
        check: Rejects an unusable criterion, before any turn is compared.
        match: Returns ``None`` on a match, else a mismatch reason.
        label: Names the evaluator in the count-mismatch error.

    Returns:
        One result per turn, plus their mean (``not_evaluated`` for zero turns).

    Raises:
        ConfigError: No criterion, an unusable one, or ``actuals`` and ``expecteds`` differ in length.
    """
    configured = checked_criterion(criterion, kind=kind, check=check)
    if len(actuals) != len(expecteds):
        raise ConfigError(
            f"{label}: actual invocations ({len(actuals)}) and expected invocations ({len(expecteds)}) count mismatch"
        )
    results: list[PerInvocationResult] = []
    for actual, expected in zip(actuals, expecteds, strict=True):
        mismatch = match(actual, expected, configured)
        score = 1.0 if mismatch is None else 0.0
        reason = "" if mismatch is None else f"{kind} mismatch: {mismatch}"
        results.append(
            PerInvocationResult(
                score=score,
                status=status_for(score, metric.threshold),
                details=EvalMetricResultDetails(
                    reason=reason, score=score, value=ScoreValue(kind=ScoreKind.NUMERIC, numeric=score)
                ),
                actual_invocation=actual,
                expected_invocation=expected,
            )
        )
    return average_of_turns(results, metric.threshold)
