"""Case aggregation: from a case's metric results to the case's score and status, in a run and across runs.

The aggregator protocol and the default all-pass aggregator, the input an aggregator gets, the call
that runs one and checks what it returns, and the decision of each case across its runs.
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from agenteval.context import EvalContext
from agenteval.errors import AgentEvalError, ConfigError, describe_exception
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalCaseResult, EvalMetricResult
from agenteval.evalresult.summarize import CaseOutcome, average_metric_results, fail_if_errored
from agenteval.evalresult.summary import EvalCaseResultSummary
from agenteval.evalset.models import EvalCase
from agenteval.metric.case_rubrics import effective_metrics
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus, summarize

__all__ = [
    "AggregationInput",
    "AggregationResult",
    "AggregatorFunction",
    "AllPassAggregator",
    "EvalCaseResultAggregator",
    "all_pass",
    "as_aggregator",
    "decide_case",
    "finite_score",
    "metrics_of_results",
    "recorded_case_outcome",
    "run_aggregator",
]


@dataclass(slots=True, kw_only=True, frozen=True)
class AggregationInput:
    """Everything known about one scored case.

    An aggregator is called once per case in every run, with that run's metric results; with
    several runs (``num_runs > 1``) it is called once more per case, with the metric scores
    averaged over the runs and :attr:`runs` holding each run's result, and what it returns then is
    the case's overall status and score. ``if data.runs:`` tells the two calls apart.
    """

    app_name: str
    eval_set_id: str
    eval_case: EvalCase
    """The case as stored in the eval set."""
    inference_result: InferenceResult
    """What the agent did (across runs: in the last run)."""
    eval_metrics: list[EvalMetric]
    """The metrics that were evaluated (with case rubrics merged), in the order of ``metric_results``."""
    metric_results: list[EvalMetricResult]
    """One overall result per evaluated metric; across runs, its score averaged over the runs that
    evaluated it and its status whether that average reaches the threshold."""
    context: EvalContext = field(default_factory=EvalContext)
    """Values set by callbacks (empty across runs)."""
    runs: Sequence[EvalCaseResult] = ()
    """Across runs: the case's result in each run, in run order; empty when deciding one run."""


@dataclass(slots=True)
class AggregationResult:
    """A case's score and status."""

    score: float
    status: EvalStatus


@runtime_checkable
class EvalCaseResultAggregator(Protocol):
    """Decides a case's score and status from its metric results.

    ``aggregate`` may be plain or ``async``. The score must be a finite number (an int, a float or
    a numpy number; it is stored as a float) and the status ``passed``, ``failed`` or
    ``not_evaluated``; anything else, or an exception, fails the case.
    """

    def aggregate(self, data: AggregationInput) -> AggregationResult | Awaitable[AggregationResult]:
        """Return the case's score and status."""
        ...


AggregatorFunction = Callable[[AggregationInput], AggregationResult | Awaitable[AggregationResult]]
"""A plain function usable as a case aggregator."""


class AllPassAggregator:
    """The default: a case passes (score 1) when no metric failed and at least one passed.

    Any failed metric fails the case (score 0); only not-evaluated metrics, or none, give
    ``not_evaluated`` (score 0). Metric scores themselves are not used. Across runs this is the
    reference framework's rule: each metric's score averaged over the runs against its threshold.
    """

    def aggregate(self, data: AggregationInput) -> AggregationResult:
        """Fold the metric statuses."""
        return all_pass(data.metric_results)

    def __repr__(self) -> str:
        return "AllPassAggregator()"


def all_pass(metric_results: Iterable[EvalMetricResult]) -> AggregationResult:
    """The :class:`AllPassAggregator`'s verdict on these metric results.

    Raises:
        AgentEvalError: ``summarize metric results: ...`` for a status that is not passed, failed or
            not evaluated.
    """
    try:
        status = summarize(result.eval_status for result in metric_results)
    except AgentEvalError as exc:
        raise AgentEvalError(f"summarize metric results: {exc}") from exc
    return AggregationResult(score=1.0 if status is EvalStatus.PASSED else 0.0, status=status)


class _FunctionAggregator:
    def __init__(self, function: AggregatorFunction) -> None:
        self.function = function
        self.__wrapped__ = function  # so that provenance records the function's name

    def aggregate(self, data: AggregationInput) -> AggregationResult | Awaitable[AggregationResult]:
        return self.function(data)

    def __repr__(self) -> str:
        return f"FunctionAggregator({getattr(self.function, '__qualname__', self.function)!r})"


def as_aggregator(aggregator: EvalCaseResultAggregator | AggregatorFunction) -> EvalCaseResultAggregator:
    """Return ``aggregator`` as an :class:`EvalCaseResultAggregator`, wrapping a plain function.

    Raises:
        ConfigError: It is neither an aggregator nor callable, or it is an aggregator class rather
            than an instance.
    """
    if isinstance(aggregator, type) and hasattr(aggregator, "aggregate"):
        name = aggregator.__qualname__
        raise ConfigError(f"the case aggregator is the class {name}; pass an instance, e.g. {name}()")
    if isinstance(aggregator, EvalCaseResultAggregator):
        return aggregator
    if callable(aggregator):
        return _FunctionAggregator(aggregator)
    raise ConfigError(f"the case aggregator must have an aggregate() method or be callable, got {aggregator!r}")


_VALID_STATUSES = (EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED)


def finite_score(value: object) -> float | None:
    """``value`` as a Python float if it is a usable score, else ``None``.

    A score is any finite real number but a bool: an int, a float, or a numpy number (numpy
    registers its scalar types as :class:`numbers.Real`). The float is what gets stored, so that
    results serialise as JSON.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


async def run_aggregator(aggregator: EvalCaseResultAggregator, data: AggregationInput) -> AggregationResult:
    """Run an aggregator and check what it returned.

    Raises:
        AgentEvalError: With the reference's messages: ``aggregate eval case result: <error>``,
            ``eval case result aggregation result is nil``, ``unexpected eval case result aggregation
            status <status>`` or ``eval case result aggregation score must be finite: <score> (<type>); ...``
            (the reference's message, with the score's type and what is expected added).
    """
    try:
        result = aggregator.aggregate(data)
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:
        raise AgentEvalError(f"aggregate eval case result: {describe_exception(exc)}") from exc
    if result is None:
        raise AgentEvalError("eval case result aggregation result is nil")
    if not isinstance(result, AggregationResult):
        raise AgentEvalError(
            f"aggregate eval case result: the aggregator returned {type(result).__name__}; "
            "return an AggregationResult(score, status)"
        )
    if result.status not in _VALID_STATUSES:
        raise AgentEvalError(f"unexpected eval case result aggregation status {result.status}")
    score = finite_score(result.score)
    if score is None:
        raise AgentEvalError(
            f"eval case result aggregation score must be finite: {result.score!r} ({type(result.score).__name__}); "
            "return a finite int or float"
        )
    return AggregationResult(score=score, status=EvalStatus(result.status))


def metrics_of_results(
    case: EvalCase, metrics: Sequence[EvalMetric], results: Sequence[EvalMetricResult]
) -> list[EvalMetric]:
    """One metric per result, in the results' order, as the case was scored with it.

    A result whose metric is not among ``metrics`` gets one rebuilt from the result (name,
    threshold, criterion).
    """
    scored = {
        metric.metric_name: metric for metric in effective_metrics(case, metrics, [r.metric_name for r in results])
    }
    return [
        scored.get(result.metric_name)
        or EvalMetric(metric_name=result.metric_name, threshold=result.threshold, criterion=result.criterion)
        for result in results
    ]


async def decide_case(
    case_runs: Sequence[EvalCaseResult],
    num_runs: int,
    aggregator: EvalCaseResultAggregator,
    *,
    app_name: str,
    eval_set_id: str,
    eval_case: EvalCase,
    inference: InferenceResult,
    metrics: Sequence[EvalMetric],
) -> CaseOutcome:
    """Decide one case's overall status and score from its results in every run.

    With at most one configured run the case's outcome is its run's (the aggregator already decided
    it). With more, ``aggregator`` is called with the metric results averaged over the runs
    (:func:`average_metric_results`) and the runs themselves (``AggregationInput.runs``); an
    aggregator that raises fails the case, with the error in :attr:`CaseOutcome.error_message`.
    Either way a not-evaluated outcome becomes failed when any run has an error message.

    Args:
        case_runs: The case's results, one per run, in run order.
        num_runs: The configured number of runs (it, not how many runs the case has, picks the rule).
        aggregator: The case aggregator.
        app_name: The app, for the aggregator's input.
        eval_set_id: The eval set, for the aggregator's input.
        eval_case: The case as stored in the eval set.
        inference: What the agent did in the case's last run.
        metrics: The configured metrics.

    Raises:
        AgentEvalError: With one run, its final status is not passed, failed or not evaluated
            (``unexpected eval status ...``).
    """
    averaged = average_metric_results(case_runs)
    errored = any(run.error_message for run in case_runs)
    if num_runs <= 1:
        status = summarize(run.final_eval_status for run in case_runs)
        score = case_runs[-1].score if case_runs else 0.0
        return CaseOutcome(fail_if_errored(status, errored), score, averaged)
    data = AggregationInput(
        app_name=app_name,
        eval_set_id=eval_set_id,
        eval_case=eval_case,
        inference_result=inference,
        eval_metrics=metrics_of_results(eval_case, metrics, averaged),
        metric_results=averaged,
        runs=tuple(case_runs),
    )
    try:
        decided = await run_aggregator(aggregator, data)
    except Exception as exc:
        return CaseOutcome(EvalStatus.FAILED, 0.0, averaged, error_message=describe_exception(exc))
    return CaseOutcome(fail_if_errored(decided.status, errored), decided.score, averaged)


def recorded_case_outcome(
    case_runs: Sequence[EvalCaseResult], num_runs: int, summary: EvalCaseResultSummary | None
) -> CaseOutcome:
    """A case's outcome as a saved result records it (no aggregator is called).

    With several runs, the status is the one its case summary records, and the score the one
    recorded with it (a custom aggregator's) or else what the default aggregator gives for that
    status; without a case summary (results written before summaries existed) the default
    aggregator's rule decides. With one run, the outcome is the run's, as :func:`decide_case` gives it.
    """
    averaged = average_metric_results(case_runs)
    errored = any(run.error_message for run in case_runs)
    if num_runs <= 1:
        status = summarize(run.final_eval_status for run in case_runs)
        return CaseOutcome(fail_if_errored(status, errored), case_runs[-1].score if case_runs else 0.0, averaged)
    if summary is None or summary.overall_status is None:
        verdict = all_pass(averaged)
        return CaseOutcome(fail_if_errored(verdict.status, errored), verdict.score, averaged)
    status = summary.overall_status
    score = summary.overall_score if summary.overall_score is not None else float(status == EvalStatus.PASSED)
    return CaseOutcome(status, score, averaged, summary.error_message)
