"""Case aggregation: from a case's metric results to the case's score and status, in a run and across runs.

The aggregator protocol and the default all-pass aggregator, the input an aggregator gets, the call
that runs one and checks what it returns (including the score scale it declares), the decision of
each case across its runs, and ready aggregators for that decision (:func:`at_least_k`,
:func:`mean_of_runs`, :func:`max_of_runs`).
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from agenteval._util.callable_names import qualified_name
from agenteval._util.code_location import raised_at
from agenteval.context import EvalContext
from agenteval.errors import AgentEvalError, ConfigError, describe_exception
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalCaseResult, EvalMetricResult, EvalMetricResultPerInvocation
from agenteval.evalresult.summarize import CaseOutcome, average_metric_results, fail_if_errored
from agenteval.evalset.models import EvalCase
from agenteval.metric.case_rubrics import effective_metrics
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus, summarize

__all__ = [
    "AggregationInput",
    "AggregationResult",
    "AggregatorFunction",
    "AllPassAggregator",
    "DecidedRun",
    "EvalCaseResultAggregator",
    "RecordedDecision",
    "RunsReducer",
    "aggregator_verdict",
    "all_pass",
    "as_aggregator",
    "at_least_k",
    "decide_case",
    "finite_score",
    "max_of_runs",
    "mean_of_runs",
    "metrics_of_results",
    "one_run_outcome",
    "recorded_case_outcome",
    "recorded_decision",
    "run_aggregator",
    "scaled",
]


@dataclass(slots=True, kw_only=True, frozen=True)
class AggregationInput:
    """Everything known about one scored case.

    An aggregator is called once per case in every run, with that run's metric results; with
    several runs (``num_runs > 1``) it is called once more per case, with the metric scores
    averaged over the runs and :attr:`runs` holding each run's result, and what it returns then is
    the case's overall status and score. ``if data.runs:`` tells the two calls apart.

    Re-aggregating a report that has no eval set (a result written by the reference framework or an
    older agenteval, loaded without ``eval_set=``) gives :attr:`eval_case` rebuilt from the result,
    with a :class:`~agenteval.errors.MissingEvalSetWarning`: see
    :meth:`~agenteval.EvaluationReport.reaggregate`.
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
    metric_results_per_invocation: Sequence[EvalMetricResultPerInvocation] = ()
    """The run's turns in order, each with its actual and expected invocation and one result per
    evaluated metric (``turn.eval_metric_results``, statuses at the thresholds in force: the new ones
    in :meth:`~agenteval.EvaluationReport.with_thresholds`). What "k of n turns pass" counts. Empty
    across runs: each run's turns are in ``runs[i].eval_metric_result_per_invocation``."""
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
    ``not_evaluated``; anything else, or an exception, fails the case (error type ``aggregator``,
    the message naming the file and line that raised).

    An aggregator may declare its scale with a ``score_range = (low, high)`` attribute (a plain
    function, through :func:`scaled`); a score outside it then fails the case too, naming the
    aggregator, the score and the range. Without one, any finite score is taken.
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

    score_range = (0.0, 1.0)

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
        ConfigError: It is neither an aggregator nor callable, it is an aggregator class rather than
            an instance, or it declares a ``score_range`` that is not two finite numbers, low first.
    """
    if isinstance(aggregator, type) and hasattr(aggregator, "aggregate"):
        name = aggregator.__qualname__
        raise ConfigError(f"the case aggregator is the class {name}; pass an instance, e.g. {name}()")
    if isinstance(aggregator, EvalCaseResultAggregator):
        _declared_score_range(aggregator)
        return aggregator
    if callable(aggregator):
        return _FunctionAggregator(aggregator)
    raise ConfigError(f"the case aggregator must have an aggregate() method or be callable, got {aggregator!r}")


class _ScaledAggregator:
    """An aggregator with the scale :func:`scaled` gave it."""

    def __init__(self, aggregator: EvalCaseResultAggregator, score_range: tuple[float, float]) -> None:
        self.aggregator = aggregator
        self.score_range = score_range
        self.__wrapped__ = aggregator  # so that provenance and error messages name the aggregator (or function) inside

    def aggregate(self, data: AggregationInput) -> AggregationResult | Awaitable[AggregationResult]:
        return self.aggregator.aggregate(data)

    def __repr__(self) -> str:
        low, high = self.score_range
        return f"scaled({self.aggregator!r}, {low:g}, {high:g})"


def scaled(aggregator: EvalCaseResultAggregator | AggregatorFunction, low: float, high: float) -> _ScaledAggregator:
    """``aggregator`` (an aggregator or a plain function) declaring that its scores lie from ``low`` to ``high``.

    A score outside that range then fails its case, with the aggregator, the score and the range in
    the message, instead of being stored. An aggregator object can declare the same with a
    ``score_range = (low, high)`` attribute.

    Example::

        report.reaggregate(ae.aggregation.scaled(weighted_score, 0, 1))

    Raises:
        ConfigError: ``low`` or ``high`` is not a finite number, or ``low > high``.
    """
    chosen = as_aggregator(aggregator)
    return _ScaledAggregator(chosen, _checked_score_range(chosen, (low, high)))


def _declared_score_range(aggregator: EvalCaseResultAggregator) -> tuple[float, float] | None:
    """The ``(low, high)`` scale ``aggregator`` declares in its ``score_range`` attribute, if it has one.

    Raises:
        ConfigError: The attribute is not two finite numbers with ``low <= high``.
    """
    declared = getattr(aggregator, "score_range", None)
    return None if declared is None else _checked_score_range(aggregator, declared)


def _checked_score_range(aggregator: EvalCaseResultAggregator, declared: object) -> tuple[float, float]:
    bounds = tuple(finite_score(bound) for bound in declared) if isinstance(declared, tuple | list) else ()
    if len(bounds) != 2 or bounds[0] is None or bounds[1] is None or bounds[0] > bounds[1]:
        raise ConfigError(
            f"the case aggregator {qualified_name(aggregator)} declares score_range = {declared!r}; "
            "declare (low, high): two finite numbers with low <= high"
        )
    return bounds[0], bounds[1]


_VALID_STATUSES = (EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED)


def finite_score(value: object) -> float | None:
    """``value`` as a Python float if it is a usable score, else ``None``.

    A score is any finite real number but a bool: an int, a float, or a numpy number (numpy
    registers its scalar types as :class:`numbers.Real`). The float is what gets stored, so that
    results serialise as JSON.
    """
    if type(value) is float:  # the common case, without the ABC check below
        return value if math.isfinite(value) else None
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
        AgentEvalError: With the reference's messages: ``aggregate eval case result: <error> (raised at
            <file>:<line> in <function>)`` (where the aggregator raised, added), ``eval case result
            aggregation result is nil``, ``unexpected eval case result aggregation status <status>`` or
            ``eval case result aggregation score must be finite: <score> (<type>); ...`` (the reference's
            message, with the score's type and what is expected added); and ``eval case result aggregation
            score <score> is outside the range <low> to <high> that <aggregator> declares (score_range)``
            for a score off the declared scale (float rounding within 1e-9 of a bound is taken as that bound).
        ConfigError: The aggregator's ``score_range`` is malformed.
    """
    score, status = await aggregator_verdict(aggregator, data)
    return AggregationResult(score=score, status=status)


async def aggregator_verdict(aggregator: EvalCaseResultAggregator, data: AggregationInput) -> tuple[float, EvalStatus]:
    """What :func:`run_aggregator` returns, as ``(score, status)``: for callers that make many and keep none.

    Raises:
        AgentEvalError: As :func:`run_aggregator`.
        ConfigError: As :func:`run_aggregator`.
    """
    try:
        result = aggregator.aggregate(data)
        if type(result) is not AggregationResult and inspect.isawaitable(result):
            result = await result
    except Exception as exc:
        where = None if isinstance(exc, AgentEvalError) else raised_at(exc)
        located = f" (raised at {where})" if where else ""
        raise AgentEvalError(f"aggregate eval case result: {describe_exception(exc)}{located}") from exc
    if result is None:
        raise AgentEvalError("eval case result aggregation result is nil")
    if not isinstance(result, AggregationResult):
        raise AgentEvalError(
            f"aggregate eval case result: the aggregator returned {type(result).__name__}; "
            "return an AggregationResult(score, status)"
        )
    status = result.status
    if status not in _VALID_STATUSES:
        raise AgentEvalError(f"unexpected eval case result aggregation status {status}")
    score = finite_score(result.score)
    if score is None:
        raise AgentEvalError(
            f"eval case result aggregation score must be finite: {result.score!r} ({type(result.score).__name__}); "
            "return a finite int or float"
        )
    scale = _declared_score_range(aggregator)
    if scale is not None:
        score = _on_scale(score, scale, aggregator)
    return score, status if type(status) is EvalStatus else EvalStatus(status)


def _on_scale(score: float, scale: tuple[float, float], aggregator: EvalCaseResultAggregator) -> float:
    """``score``, or the bound it differs from by float rounding only; an error when it is off the scale."""
    low, high = scale
    if low <= score <= high:
        return score
    for bound in scale:
        if math.isclose(score, bound, rel_tol=1e-9, abs_tol=1e-12):
            return bound
    raise AgentEvalError(
        f"eval case result aggregation score {_number(score)} is outside the range {_number(low)} to {_number(high)}"
        f" that {qualified_name(aggregator)} declares (score_range)"
    )


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


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
    (:func:`average_metric_results`) and the runs themselves (``AggregationInput.runs``, each with
    its turns' metric results; ``AggregationInput.metric_results_per_invocation`` is empty); an
    aggregator that raises fails the case, with the error in :attr:`CaseOutcome.error_message`.
    Either way a not-evaluated outcome becomes failed when any run has an error message, and a case
    whose every run failed with an error (the agent raised, a metric or the aggregator did) is failed
    without asking the aggregator: there is nothing it could pass it on.

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
    if num_runs <= 1:
        return CaseOutcome(*one_run_outcome(case_runs), averaged)
    errored = any(run.error_message for run in case_runs)
    if case_runs and all(run.error_message for run in case_runs):
        return CaseOutcome(EvalStatus.FAILED, 0.0, averaged)
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


class DecidedRun(Protocol):
    """What deciding a case reads of each of its runs: the run's own outcome."""

    @property
    def score(self) -> float:
        """The run's case score."""
        ...

    @property
    def final_eval_status(self) -> EvalStatus | None:
        """The run's case status."""
        ...

    @property
    def error_message(self) -> str:
        """Why the run failed with an error (empty when it did not)."""
        ...


def one_run_outcome(case_runs: Sequence[DecidedRun]) -> tuple[EvalStatus, float]:
    """A case's status and score when one run is configured: its run's (not evaluated becomes failed on an error).

    Raises:
        AgentEvalError: A final status is not passed, failed or not evaluated (``unexpected eval status ...``).
    """
    errored = any(run.error_message for run in case_runs)
    status = summarize(run.final_eval_status for run in case_runs)
    return fail_if_errored(status, errored), case_runs[-1].score if case_runs else 0.0


def recorded_case_outcome(
    case_runs: Sequence[EvalCaseResult], num_runs: int, summary: RecordedDecision | None
) -> CaseOutcome:
    """A case's outcome as a saved result records it (no aggregator is called).

    With several runs, the status is the one its case summary records, and the score the one
    recorded with it (a custom aggregator's) or else what the default aggregator gives for that
    status; without a case summary (results written before summaries existed) the default
    aggregator's rule decides. With one run, the outcome is the run's, as :func:`decide_case` gives it.
    """
    averaged = average_metric_results(case_runs)
    decided = recorded_decision(case_runs, num_runs, summary)
    if decided is not None:
        status, score, error_message = decided
        return CaseOutcome(status, score, averaged, error_message)
    verdict = all_pass(averaged)
    errored = any(run.error_message for run in case_runs)
    return CaseOutcome(fail_if_errored(verdict.status, errored), verdict.score, averaged)


class RecordedDecision(Protocol):
    """What a saved case summary records of the decision across runs."""

    @property
    def overall_status(self) -> EvalStatus | None:
        """The case's status across runs."""
        ...

    @property
    def overall_score(self) -> float | None:
        """A custom aggregator's score across runs (``None``: the status decides it)."""
        ...

    @property
    def error_message(self) -> str:
        """Why deciding the case across runs failed (empty when it did not)."""
        ...


def recorded_decision(
    case_runs: Sequence[DecidedRun], num_runs: int, summary: RecordedDecision | None
) -> tuple[EvalStatus, float, str] | None:
    """A case's status, score and error as a saved result records them, without its metric results.

    ``None`` when the default aggregator's rule must decide from the averaged metric results (several
    runs, and no case summary with a status): see :func:`recorded_case_outcome`.

    Raises:
        AgentEvalError: With one run, its final status is not passed, failed or not evaluated.
    """
    if num_runs <= 1:
        return *one_run_outcome(case_runs), ""
    if summary is None or summary.overall_status is None:
        return None
    status = summary.overall_status
    score = summary.overall_score if summary.overall_score is not None else float(status == EvalStatus.PASSED)
    return status, score, summary.error_message


_DECIDED = (EvalStatus.PASSED, EvalStatus.FAILED)


class RunsReducer:
    """A ready aggregator that decides a case across its runs from the runs' own outcomes.

    Made by :func:`at_least_k`, :func:`mean_of_runs` and :func:`max_of_runs` (the counterparts of
    Inspect's epoch reducers). Each run is decided as the :class:`AllPassAggregator` decides it
    (score 1 or 0), so every score lies from 0 to 1 (``score_range``). Across runs only the runs
    that passed or failed count (a run that failed with an error counts as failed); a case with
    none is ``not_evaluated`` with score 0. With one run (``num_runs=1``) the run's outcome is the
    case's, as for any aggregator.
    """

    score_range = (0.0, 1.0)

    def __init__(
        self, name: str, reduce: Callable[[Sequence[EvalCaseResult]], AggregationResult], *, needs_runs: int = 1
    ) -> None:
        # Provenance and error messages name an aggregator by its qualified name: at_least_k(2).
        self.__qualname__ = name
        self._reduce = reduce
        self._needs_runs = needs_runs

    def aggregate(self, data: AggregationInput) -> AggregationResult:
        """A run as the all-pass aggregator decides it; a case across runs by the reducer's rule."""
        if not data.runs:
            return all_pass(data.metric_results)
        if len(data.runs) < self._needs_runs:
            raise ConfigError(
                f"{self.__qualname__} needs at least {self._needs_runs} runs of a case, and this case has"
                f" {len(data.runs)}: evaluate with num_runs={self._needs_runs} or more, or lower k"
            )
        decided = [run for run in data.runs if run.final_eval_status in _DECIDED]
        if not decided:
            return AggregationResult(score=0.0, status=EvalStatus.NOT_EVALUATED)
        return self._reduce(decided)

    def __repr__(self) -> str:
        return self.__qualname__


def at_least_k(k: int) -> RunsReducer:
    """A case passes (score 1) when at least ``k`` of its runs passed, else fails (score 0).

    With ``k=1`` a case passes when any run did (pass@k for one case); with ``k`` equal to
    ``num_runs``, only when every run did (pass^k). A case with fewer runs than ``k`` fails with an
    aggregator error saying so (evaluate with ``num_runs >= k``).

    Raises:
        ConfigError: ``k`` is not a whole number of at least 1.
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ConfigError(f"at_least_k(k): k must be a whole number of runs of at least 1, got {k!r}")
    needed = int(k)

    def reduce(runs: Sequence[EvalCaseResult]) -> AggregationResult:
        passed = sum(run.final_eval_status == EvalStatus.PASSED for run in runs) >= needed
        return AggregationResult(score=float(passed), status=EvalStatus.PASSED if passed else EvalStatus.FAILED)

    return RunsReducer(f"at_least_k({needed})", reduce, needs_runs=needed)


def mean_of_runs(threshold: float) -> RunsReducer:
    """A case's score is the mean of its runs' scores; it passes when that mean reaches ``threshold``.

    With the all-pass runs (score 1 or 0) the mean is the share of runs that passed:
    ``mean_of_runs(0.5)`` passes a case that passed at least half its runs.

    Raises:
        ConfigError: ``threshold`` is not a number from 0 to 1.
    """
    checked = finite_score(threshold)
    if checked is None or not 0.0 <= checked <= 1.0:
        raise ConfigError(f"mean_of_runs(threshold): the threshold must be a number from 0 to 1, got {threshold!r}")

    def reduce(runs: Sequence[EvalCaseResult]) -> AggregationResult:
        mean = sum(run.score for run in runs) / len(runs)
        return AggregationResult(score=mean, status=EvalStatus.PASSED if mean >= checked else EvalStatus.FAILED)

    return RunsReducer(f"mean_of_runs({checked:g})", reduce)


def max_of_runs() -> RunsReducer:
    """A case's outcome is its best run's: a run that passed before one that failed, then the higher score."""

    def reduce(runs: Sequence[EvalCaseResult]) -> AggregationResult:
        best = max(runs, key=lambda run: (run.final_eval_status == EvalStatus.PASSED, run.score))
        passed = best.final_eval_status == EvalStatus.PASSED
        return AggregationResult(score=best.score, status=EvalStatus.PASSED if passed else EvalStatus.FAILED)

    return RunsReducer("max_of_runs()", reduce)
