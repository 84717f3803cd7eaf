"""Working on finished results: re-aggregating and new thresholds.

None of this calls the agent or the evaluators: it recomputes from the metric results already in
a report, which is what makes trying a new case aggregator or threshold take milliseconds. It
works on the report's data (:class:`FinishedReport`) and returns the new case results
(:class:`Derivation`); the report builds the new report from them.

A report without its eval set (a result the reference framework or an older agenteval wrote,
loaded without ``eval_set=``) cannot hand aggregators the cases as written. Refusing would block
every aggregator that reads only scores, the common case; handing over an empty case, as before,
made one that reads the case fail silently (a k-of-n-turns rule divided by zero turns). So
aggregators get each case rebuilt from what the result records (:func:`rebuilt_case`), and a
:class:`~agenteval.errors.MissingEvalSetWarning` says so and how to give the real cases; the
built-in aggregators, which never read the case, need neither.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from agenteval._util.callable_names import qualified_name
from agenteval.aggregation import (
    AggregationInput,
    AggregatorFunction,
    AllPassAggregator,
    EvalCaseResultAggregator,
    RunsReducer,
    as_aggregator,
    finite_score,
    metrics_of_results,
    run_aggregator,
)
from agenteval.context import EvalContext
from agenteval.errors import ConfigError, MissingEvalSetWarning, describe_exception, warn_user
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import ErrorType, EvalCaseResult, EvalMetricResult, EvalSetResult
from agenteval.evalresult.provenance import Provenance
from agenteval.evalset.models import EvalCase, EvalSet, SessionInput
from agenteval.evaluators.base import status_for
from agenteval.evaluators.registry import default_registry
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus

__all__ = ["Derivation", "FinishedReport", "original_aggregator", "reaggregate", "rebuilt_case", "with_thresholds"]


class FinishedReport(Protocol):
    """What re-analysis reads of a report (an :class:`~agenteval.EvaluationReport`)."""

    app_name: str
    eval_set_id: str
    eval_set: EvalSet | None
    result: EvalSetResult
    eval_metrics: list[EvalMetric]
    inference_results: list[list[InferenceResult]]
    aggregator: EvalCaseResultAggregator | None
    provenance: Provenance | None


@dataclass(frozen=True, slots=True)
class Derivation:
    """A report's case results made again: by ``how``, with ``metrics`` and ``aggregator``."""

    cases: list[EvalCaseResult]
    """Every case result of every run, aggregated again (new objects where anything changed; what
    did not change, such as the other metrics' results, is shared with the report)."""
    metrics: list[EvalMetric]
    """The metrics, with any new thresholds."""
    aggregator: EvalCaseResultAggregator
    """The aggregator that decided the cases."""
    how: str
    """``reaggregate`` or ``with_thresholds``."""


async def reaggregate(report: FinishedReport, aggregator: EvalCaseResultAggregator | AggregatorFunction) -> Derivation:
    """The report's case results aggregated again by ``aggregator``.

    Every case that has metric results is aggregated again from them (the agent and the evaluators
    are not called); cases that failed before scoring stay failed. The report is unchanged.

    Warns:
        MissingEvalSetWarning: The report has no eval set, so ``aggregator`` (unless a built-in one,
            which never reads the case) gets each case rebuilt from the result (:func:`rebuilt_case`).
    """
    chosen = as_aggregator(aggregator)
    _warn_if_cases_are_rebuilt(report, chosen)
    sources = _Sources(report)
    # Aggregating again sets only each case's own score, status and error: a shallow copy shares
    # the metric results, which stay as they were.
    cases = [
        await _aggregate_again(sources, case.replaced(), chosen, report.eval_metrics)
        for case in report.result.eval_case_results
    ]
    return Derivation(cases, list(report.eval_metrics), chosen, "reaggregate")


async def with_thresholds(
    report: FinishedReport,
    thresholds: Mapping[str, float],
    aggregator: EvalCaseResultAggregator | AggregatorFunction | None = None,
) -> Derivation:
    """The report's case results with the named metrics passing at new thresholds.

    Every per-turn and overall result of those metrics gets the new threshold and the status
    ``score >= threshold`` (results that were not evaluated stay so); then the cases are
    aggregated again with ``aggregator`` (by default the one that produced the report), which sees
    the new statuses in ``metric_results`` and ``metric_results_per_invocation``.

    Warns:
        MissingEvalSetWarning: As :func:`reaggregate` does.

    Raises:
        ConfigError: A name is not a metric of the report, a threshold is not a finite real
            number or lies outside a built-in metric's score range, or no ``aggregator`` was given
            for a loaded report that a custom aggregator produced (it cannot be rebuilt from the file).
    """
    known = {
        result.metric_name for case in report.result.eval_case_results for result in case.overall_eval_metric_results
    }
    known.update(metric.metric_name for metric in report.eval_metrics)
    unknown = sorted(set(thresholds) - known)
    if unknown:
        raise ConfigError(f"no metric named {unknown} in this report; its metrics are {sorted(known)}")
    checked: dict[str, float] = {}
    for name, value in thresholds.items():
        # NumPy numbers are taken too (np.int64, np.float32), which a DataFrame hands out.
        number = finite_score(value)
        if number is None:
            raise ConfigError(f"the threshold of {name} must be a finite number, got {value!r}")
        checked[name] = number
    thresholds = checked
    metrics = [
        metric.model_copy(update={"threshold": thresholds[metric.metric_name]})
        if metric.metric_name in thresholds
        else metric
        for metric in report.eval_metrics
    ]
    registry = default_registry()
    for metric in metrics:
        if metric.metric_name in thresholds:
            try:
                registry.check_threshold(metric)
            except ConfigError as exc:
                raise ConfigError(f"the threshold of {metric.metric_name}: {exc}") from None
    cases = [_rethresholded(case, thresholds) for case in report.result.eval_case_results]
    chosen = (
        as_aggregator(aggregator)
        if aggregator is not None
        else await original_aggregator(report, "with_thresholds(thresholds, aggregator=...)")
    )
    _warn_if_cases_are_rebuilt(report, chosen)
    sources = _Sources(report)
    aggregated = [await _aggregate_again(sources, case, chosen, metrics) for case in cases]
    return Derivation(aggregated, metrics, chosen, "with_thresholds")


async def original_aggregator(report: FinishedReport, call: str) -> EvalCaseResultAggregator:
    """The aggregator that produced the report; a loaded report knows it only by name, if at all.

    ``call`` shows, in the error, how to pass the aggregator instead (``with_thresholds(..., aggregator=...)``).

    A result written by another tool (the reference framework) records no aggregator: the all-pass
    aggregator is assumed only when it gives back every stored case status and score (results from
    reference versions older than case aggregators hold no case score; their statuses must match).

    Raises:
        ConfigError: The report was loaded and aggregated by a custom aggregator, which cannot be
            rebuilt, or records none and its case scores show another than the all-pass one.
    """
    if report.aggregator is not None:
        return report.aggregator
    default = AllPassAggregator()
    recorded = report.provenance.aggregator if report.provenance is not None else ""
    # Results written before names were recorded hold the aggregator's repr.
    if recorded and recorded not in (qualified_name(default), repr(default)):
        raise ConfigError(
            f"this report was aggregated by {recorded}, which a loaded report cannot rebuild; pass it again: {call}"
        )
    if not recorded:
        sources = _Sources(report)
        for case in report.result.eval_case_results:
            # A shallow copy is enough: aggregating again only sets the case's own score, status and error.
            again = await _aggregate_again(sources, case.model_copy(), default, report.eval_metrics)
            # Reference versions older than case aggregators write no case score: only the status tells.
            scored = "score" in case.model_fields_set
            if again.final_eval_status != case.final_eval_status or (
                scored and not math.isclose(again.score, case.score)
            ):
                raise ConfigError(
                    f"this report records no case aggregator, and the stored case scores (e.g. case"
                    f" {case.eval_id}: {case.score:g}, {case.final_eval_status}) were not produced by the"
                    f" all-pass aggregator (which gives {again.score:g}, {again.final_eval_status});"
                    f" pass the aggregator that produced them: {call}"
                )
    return default


def rebuilt_case(app_name: str, eval_id: str, runs: Sequence[EvalCaseResult]) -> EvalCase:
    """A stand-in for case ``eval_id`` of an eval set that is not at hand, from its results ``runs``.

    It holds what a result records of the case: its id, its ``conversation`` (the expected turns the
    case was scored against in the last run that recorded turns: for a case with an expected runner
    or a simulated user, those turns rather than what its eval set stores) and its session's app and
    user. Its session state, context messages, rubrics and mode are not in a result: they are empty.
    """
    recorded = next((run for run in reversed(runs) if run.eval_metric_result_per_invocation), None)
    if recorded is None:
        return EvalCase(eval_id=eval_id, session_input=SessionInput(app_name=app_name))
    return EvalCase(
        eval_id=eval_id,
        conversation=[
            turn.expected_invocation
            for turn in recorded.eval_metric_result_per_invocation
            if turn.expected_invocation is not None
        ],
        session_input=SessionInput(app_name=app_name, user_id=recorded.user_id),
    )


def _warn_if_cases_are_rebuilt(report: FinishedReport, aggregator: EvalCaseResultAggregator) -> None:
    if report.eval_set is not None or not report.result.eval_case_results:
        return
    if isinstance(aggregator, AllPassAggregator | RunsReducer):
        return
    warn_user(
        "this report has no eval set (a result written by the reference framework or an older agenteval, loaded"
        f" without eval_set=), so the aggregator {qualified_name(aggregator)} gets each case rebuilt from the"
        " result: its id, user and the expected turns it was scored against, without its session state,"
        " context messages or rubrics; to give it the cases as written, load the report with"
        " EvaluationReport.load(..., eval_set=...)",
        MissingEvalSetWarning,
    )


def _rethresholded(case: EvalCaseResult, thresholds: Mapping[str, float]) -> EvalCaseResult:
    """A copy of ``case`` whose results of the named metrics have the new thresholds.

    Only what changes is copied: the other metric results and the turns are shared with ``case``.
    """
    return case.replaced(
        overall_eval_metric_results=_rethresholded_results(case.overall_eval_metric_results, thresholds),
        eval_metric_result_per_invocation=[
            turn.replaced(eval_metric_results=_rethresholded_results(turn.eval_metric_results, thresholds))
            for turn in case.eval_metric_result_per_invocation
        ],
    )


def _rethresholded_results(
    results: Sequence[EvalMetricResult], thresholds: Mapping[str, float]
) -> list[EvalMetricResult]:
    return [
        result
        if (threshold := thresholds.get(result.metric_name)) is None
        else result.replaced(
            threshold=threshold,
            eval_status=status_for(result.score, threshold)
            if result.eval_status in (EvalStatus.PASSED, EvalStatus.FAILED)
            else result.eval_status,
        )
        for result in results
    ]


class _Sources:
    """A report's eval cases and inferences by id, looked up once per case (not by a scan each time)."""

    def __init__(self, report: FinishedReport) -> None:
        self.report = report
        self.cases = report.eval_set.cases_by_id() if report.eval_set is not None else {}
        self.inferences: dict[tuple[int, str], InferenceResult] = {}
        for run_id, run in enumerate(report.inference_results, start=1):
            for inference in run:
                self.inferences.setdefault((run_id, inference.eval_case_id), inference)

    def inference_for(self, case: EvalCaseResult) -> InferenceResult:
        found = self.inferences.get((case.run_id or 1, case.eval_id))
        return found or InferenceResult(
            app_name=self.report.app_name,
            eval_set_id=case.eval_set_id,
            eval_case_id=case.eval_id,
            session_id=case.session_id,
            user_id=case.user_id,
            status=EvalStatus.PASSED,
        )


async def _aggregate_again(
    sources: _Sources, case: EvalCaseResult, aggregator: EvalCaseResultAggregator, configured: Sequence[EvalMetric]
) -> EvalCaseResult:
    """Aggregate ``case`` (a copy the caller owns, updated in place) again from its metric results."""
    if _failed_before_aggregation(case):
        return case
    report = sources.report
    eval_case = sources.cases.get(case.eval_id) or rebuilt_case(report.app_name, case.eval_id, [case])
    try:
        outcome = await run_aggregator(
            aggregator,
            AggregationInput(
                app_name=report.app_name,
                eval_set_id=case.eval_set_id or report.eval_set_id,
                eval_case=eval_case,
                inference_result=sources.inference_for(case),
                eval_metrics=metrics_of_results(eval_case, configured, case.overall_eval_metric_results),
                metric_results=list(case.overall_eval_metric_results),
                metric_results_per_invocation=list(case.eval_metric_result_per_invocation),
                context=EvalContext(),
            ),
        )
    except Exception as exc:
        case.score, case.final_eval_status = 0.0, EvalStatus.FAILED
        case.error_message, case.error_type = describe_exception(exc), ErrorType.AGGREGATOR.value
        return case
    case.score, case.final_eval_status = outcome.score, outcome.status
    case.error_message = case.error_type = ""
    return case


def _failed_before_aggregation(case: EvalCaseResult) -> bool:
    """A failure that happened before the aggregator ran (not one the aggregator itself caused)."""
    return bool(case.error_message) and case.error_type != ErrorType.AGGREGATOR
