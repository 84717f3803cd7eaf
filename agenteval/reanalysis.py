"""Working on finished results: assembling reports, re-aggregating, new thresholds, loading results.

None of this calls the agent or the evaluators: it recomputes from the metric results already in
a report, which is what makes trying a new case aggregator or threshold take milliseconds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence

from agenteval.context import EvalContext
from agenteval.errors import ConfigError, describe_exception
from agenteval.evalresult.models import EvalCaseResult, EvalMetricResult, EvalSetResult
from agenteval.evalset.models import EvalCase, EvalSet, Invocation
from agenteval.evaluators.base import status_for
from agenteval.metric.models import EvalMetric
from agenteval.provenance import Provenance, attach_provenance, current_environment, read_provenance
from agenteval.report import CaseSummary, EvaluationReport
from agenteval.service.aggregation import (
    AggregationInput,
    AggregatorFunction,
    AllPassAggregator,
    EvalCaseResultAggregator,
    as_aggregator,
    finite_score,
    run_aggregator,
)
from agenteval.service.multirun import aggregate_case_runs, summarize_multi_run
from agenteval.service.scoring import effective_metrics
from agenteval.service.types import InferenceResult
from agenteval.status import EvalStatus, summarize

__all__ = [
    "assemble_report",
    "inferences_from_result",
    "reaggregate",
    "report_from_result",
    "with_thresholds",
]


def assemble_report(
    app_name: str,
    eval_set: EvalSet | None,
    result: EvalSetResult,
    metrics: list[EvalMetric],
    inference_results: list[list[InferenceResult]],
    num_runs: int,
) -> EvaluationReport:
    """Build a report from case results: per-case outcomes across runs, in eval-set order.

    Cases missing from the eval set come after the others, sorted by id. Without an eval set, cases
    keep the order in which they first appear in the result (which a saved result has from its eval set).
    """
    by_case: dict[str, list[EvalCaseResult]] = {}
    for case in result.eval_case_results:
        by_case.setdefault(case.eval_id, []).append(case)
    ordered = list(by_case)
    if eval_set is not None:
        position = {case.eval_id: index for index, case in reversed(list(enumerate(eval_set.eval_cases)))}
        ordered.sort(key=lambda eval_id: (eval_id not in position, position.get(eval_id, 0), eval_id))
    summaries = []
    for eval_id in ordered:
        aggregate = aggregate_case_runs(by_case[eval_id])
        summaries.append(
            CaseSummary(
                eval_id=eval_id,
                overall_status=aggregate.overall_status,
                runs=by_case[eval_id],
                metric_results=aggregate.metric_results,
            )
        )
    return EvaluationReport(
        app_name=app_name,
        eval_set_id=result.eval_set_id,
        eval_set=eval_set,
        result=result,
        case_summaries=summaries,
        overall_status=summarize(summary.overall_status for summary in summaries),
        eval_metrics=metrics,
        inference_results=inference_results,
        num_runs=num_runs,
    )


def inferences_from_result(result: EvalSetResult, app_name: str = "") -> list[list[InferenceResult]]:
    """Rebuild what the agent did, per run, from a saved result's per-turn records.

    A case whose inference or scoring failed before any turn was recorded comes back as a failed
    inference with its error message (what the agent did is not in the result).
    """
    runs: dict[int, list[InferenceResult]] = {}
    for case in result.eval_case_results:
        turns = case.eval_metric_result_per_invocation
        recorded = [turn.actual_invocation for turn in turns if turn.actual_invocation is not None]
        inference = InferenceResult(
            app_name=app_name,
            eval_set_id=case.eval_set_id or result.eval_set_id,
            eval_case_id=case.eval_id,
            session_id=case.session_id,
            user_id=case.user_id,
        )
        if recorded and len(recorded) == len(turns):
            inference.status = EvalStatus.PASSED
            inference.inferences = [_without_trace(invocation) for invocation in recorded]
            inference.expected_inferences = [
                turn.expected_invocation for turn in turns if turn.expected_invocation is not None
            ]
            traces = [invocation.execution_trace for invocation in recorded]
            inference.execution_traces = traces if any(trace is not None for trace in traces) else []
        else:
            inference.status = EvalStatus.FAILED
            inference.error_message = case.error_message or "the result holds no record of what the agent did"
        runs.setdefault(case.run_id or 1, []).append(inference)
    return [runs[run_id] for run_id in sorted(runs)]


def _without_trace(invocation: Invocation) -> Invocation:
    return invocation.model_copy(update={"execution_trace": None}) if invocation.execution_trace else invocation


def report_from_result(
    result: EvalSetResult, *, app_name: str = "", eval_set: EvalSet | None = None, source: str = ""
) -> EvaluationReport:
    """A report for a saved result (read from any store or file).

    The metrics come from the result's provenance when it has one, else from the metric results
    themselves; the agent's turns are rebuilt from the per-turn records, so the report can be
    re-scored and re-aggregated like a fresh one. Its execution time is the span between the start
    and finish times the provenance records (``0.0``, unknown, without them).

    Args:
        result: The result.
        app_name: The app (taken from the provenance when it records one).
        eval_set: The eval set, when available; re-scoring needs it.
        source: How errors name the result (``"result file <path>"``); ``"result <id>"`` by default.

    Raises:
        ConfigError: A case result has no ``evalId``, or no ``finalEvalStatus`` of ``passed``,
            ``failed`` or ``not_evaluated`` (the stores load such results, but a report cannot
            place or summarize them).
    """
    _check_case_results(result, source or f"result {result.eval_set_result_id or '(without an evalSetResultId)'}")
    provenance = read_provenance(result)
    if provenance is not None:
        metrics = list(provenance.metrics)
        app_name = app_name or provenance.app_name
    else:
        metrics = _metrics_seen_in(result.eval_case_results)
    num_runs = result.summary.num_runs if result.summary is not None and result.summary.num_runs else 0
    num_runs = num_runs or max((case.run_id for case in result.eval_case_results), default=1) or 1
    report = assemble_report(app_name, eval_set, result, metrics, inferences_from_result(result, app_name), num_runs)
    report.provenance = provenance
    if provenance is not None and provenance.started_at is not None and provenance.finished_at is not None:
        report.execution_time = max(0.0, provenance.finished_at - provenance.started_at)
    return report


_SUMMARIZABLE = (EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED)


def _check_case_results(result: EvalSetResult, source: str) -> None:
    for index, case in enumerate(result.eval_case_results):
        where = f"{source}: evalCaseResults[{index}]"
        if not case.eval_id:
            raise ConfigError(f"{where} has no evalId: give it the evalId of the eval case it is a result of")
        if case.final_eval_status is None:
            raise ConfigError(
                f"{where} (case {case.eval_id}) has no finalEvalStatus: set it to passed, failed or not_evaluated"
            )
        if case.final_eval_status not in _SUMMARIZABLE:
            raise ConfigError(
                f"{where} (case {case.eval_id}) has finalEvalStatus {case.final_eval_status}, which a report"
                " cannot summarize: set it to passed, failed or not_evaluated"
            )


def _metrics_seen_in(cases: Sequence[EvalCaseResult]) -> list[EvalMetric]:
    metrics: dict[str, EvalMetric] = {}
    for case in cases:
        for result in case.overall_eval_metric_results:
            metrics.setdefault(
                result.metric_name,
                EvalMetric(metric_name=result.metric_name, threshold=result.threshold, criterion=result.criterion),
            )
    return list(metrics.values())


async def reaggregate(
    report: EvaluationReport, aggregator: EvalCaseResultAggregator | AggregatorFunction
) -> EvaluationReport:
    """A new report whose case scores and statuses come from ``aggregator``.

    Every case that has metric results is aggregated again from them (the agent and the evaluators
    are not called); cases that failed before scoring stay failed. The original is unchanged.

    With several runs (``num_runs > 1``) the aggregator decides each run's case score and status,
    so :attr:`~EvaluationReport.cases`, the ``pass_rate`` and ``mean_score`` of
    :attr:`~EvaluationReport.case_table`, the per-run summaries and pass@k change; but a case's
    overall status (in :attr:`~EvaluationReport.case_summaries`, ``case_table["status"]``, the
    report's ``overall_status`` and the summary's case summaries) follows its metric scores
    averaged over the runs, as in the reference framework's multi-run summary, so the aggregator
    cannot change it. With one run the aggregator decides the overall status too.
    """
    started = time.perf_counter()
    chosen = as_aggregator(aggregator)
    sources = _Sources(report)
    cases = [
        await _aggregate_again(sources, case.model_copy(deep=True), chosen, report.eval_metrics)
        for case in report.result.eval_case_results
    ]
    return _derived(report, cases, report.eval_metrics, chosen, "reaggregate", started)


async def with_thresholds(
    report: EvaluationReport,
    thresholds: Mapping[str, float],
    aggregator: EvalCaseResultAggregator | AggregatorFunction | None = None,
) -> EvaluationReport:
    """A new report in which the named metrics pass at new thresholds.

    Every per-turn and overall result of those metrics gets the new threshold and the status
    ``score >= threshold`` (results that were not evaluated stay so); then the cases are
    aggregated again with ``aggregator`` (by default the one that produced the report).

    Raises:
        ConfigError: A name is not a metric of the report, a threshold is not a finite real
            number, or no ``aggregator`` was given for a loaded report that a custom aggregator
            produced (it cannot be rebuilt from the file).
    """
    started = time.perf_counter()
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
    cases = []
    for case in report.result.eval_case_results:
        updated = case.model_copy(deep=True)
        for result in updated.overall_eval_metric_results:
            _rethreshold(result, thresholds)
        for turn in updated.eval_metric_result_per_invocation:
            for result in turn.eval_metric_results:
                _rethreshold(result, thresholds)
        cases.append(updated)
    metrics = [
        metric.model_copy(update={"threshold": thresholds[metric.metric_name]})
        if metric.metric_name in thresholds
        else metric
        for metric in report.eval_metrics
    ]
    chosen = (
        as_aggregator(aggregator)
        if aggregator is not None
        else await original_aggregator(report, "with_thresholds(thresholds, aggregator=...)")
    )
    sources = _Sources(report)
    aggregated = [await _aggregate_again(sources, case, chosen, metrics) for case in cases]
    return _derived(report, aggregated, metrics, chosen, "with_thresholds", started)


async def original_aggregator(report: EvaluationReport, call: str) -> EvalCaseResultAggregator:
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
    if recorded and recorded != repr(default):
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


def _rethreshold(result: EvalMetricResult, thresholds: Mapping[str, float]) -> None:
    threshold = thresholds.get(result.metric_name)
    if threshold is None:
        return
    result.threshold = threshold
    if result.eval_status in (EvalStatus.PASSED, EvalStatus.FAILED):
        result.eval_status = status_for(result.score, threshold)


class _Sources:
    """A report's eval cases and inferences by id, looked up once per case (not by a scan each time)."""

    def __init__(self, report: EvaluationReport) -> None:
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
    sources: _Sources, case: EvalCaseResult, aggregator: EvalCaseResultAggregator, configured: list[EvalMetric]
) -> EvalCaseResult:
    """Aggregate ``case`` (a copy the caller owns, updated in place) again from its metric results."""
    if _failed_before_aggregation(case):
        return case
    report = sources.report
    eval_case = sources.cases.get(case.eval_id) or EvalCase(eval_id=case.eval_id)
    inference = sources.inference_for(case)
    names = [result.metric_name for result in case.overall_eval_metric_results]
    metrics = effective_metrics(eval_case, configured, names)
    by_name = {metric.metric_name: metric for metric in metrics}
    ordered = [
        by_name.get(result.metric_name)
        or EvalMetric(metric_name=result.metric_name, threshold=result.threshold, criterion=result.criterion)
        for result in case.overall_eval_metric_results
    ]
    try:
        outcome = await run_aggregator(
            aggregator,
            AggregationInput(
                app_name=report.app_name,
                eval_set_id=case.eval_set_id or report.eval_set_id,
                eval_case=eval_case,
                inference_result=inference,
                eval_metrics=ordered,
                metric_results=list(case.overall_eval_metric_results),
                context=EvalContext(),
            ),
        )
    except Exception as exc:
        case.score, case.final_eval_status = 0.0, EvalStatus.FAILED
        case.error_message = describe_exception(exc)
        return case
    case.score, case.final_eval_status, case.error_message = outcome.score, outcome.status, ""
    return case


_AGGREGATION_ERRORS = (
    "aggregate eval case result",
    "eval case result aggregation",
    "unexpected eval case result aggregation status",
)


def _failed_before_aggregation(case: EvalCaseResult) -> bool:
    """A failure that happened before the aggregator ran (not one the aggregator itself caused)."""
    return bool(case.error_message) and not case.error_message.startswith(_AGGREGATION_ERRORS)


def _derived(
    report: EvaluationReport,
    cases: list[EvalCaseResult],
    metrics: list[EvalMetric],
    aggregator: EvalCaseResultAggregator,
    how: str,
    started: float,
) -> EvaluationReport:
    """The report made by ``how`` from ``report``, which began at ``started`` (``time.perf_counter()``)."""
    # Results written without run ids (by older reference versions) hold one run: number it 1.
    cases = [case if case.run_id else case.model_copy(update={"run_id": 1}) for case in cases]
    result = EvalSetResult(eval_set_id=report.result.eval_set_id, eval_case_results=cases)
    result.summary = summarize_multi_run(cases, report.num_runs)
    inferences = [[inference.model_copy(deep=True) for inference in run] for run in report.inference_results]
    derived = assemble_report(report.app_name, report.eval_set, result, metrics, inferences, report.num_runs)
    derived.aggregator = aggregator
    derived.execution_time = time.perf_counter() - started
    finished_at = time.time()
    source = report.result.eval_set_result_id or "an unsaved report"
    base = report.provenance or Provenance(app_name=report.app_name, eval_set_id=report.eval_set_id)
    # The derived scores are computed here and now: record this environment, not the original's.
    derived.provenance = base.scored_with(metrics).model_copy(
        update={
            **current_environment(),
            "aggregator": repr(aggregator),
            "derived_from": f"{how} of {source}",
            "started_at": finished_at - derived.execution_time,
            "finished_at": finished_at,
        }
    )
    attach_provenance(result, derived.provenance)
    return derived
