"""The multi-run summary stored with every eval-set result, and the averaging of a case's runs.

The summary models are built without validation (``trusted``): every value is computed here from
results that were validated or checked when they were made, and a summary holds several models per
case. Equal parts of one summary (the same status counts, the same metric at the same score, case
after case) are one shared object, made once: results are read-only records, and sharing makes a
large summary several times cheaper to build and to hold.

Both follow the reference framework (``internal/multirun`` and ``aggregateCaseRuns``): a metric's
score is averaged over the runs in which it was evaluated. Each case's overall status comes from
its :class:`CaseOutcome` (the case aggregator's verdict across runs, see
:func:`agenteval.aggregation.decide_case`), or else from the reference's rule.

A run that failed with an error (``error_message`` set) counts as having no metric results. In the
reference such a run has none; the port keeps the metric results of a run whose case aggregator
raised (so that a corrected aggregator can be tried on them), and they must not make an errored
case pass across runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from agenteval.errors import AgentEvalError, ConfigError, rewrap
from agenteval.evalresult.models import EvalCaseResult, EvalMetricResult
from agenteval.evalresult.summary import (
    EvalCaseResultSummary,
    EvalCaseRunSummary,
    EvalMetricRunSummary,
    EvalMetricSummary,
    EvalSetResultSummary,
    EvalSetRunSummary,
    EvalStatusCounts,
)
from agenteval.metric.criterion import Criterion
from agenteval.status import EvalStatus, summarize

__all__ = [
    "CaseOutcome",
    "MetricRow",
    "RunRow",
    "RunScores",
    "ScoredMetric",
    "ScoredRun",
    "SummarizedRun",
    "AveragedMetric",
    "average_metric_results",
    "averaged_metrics",
    "fail_if_errored",
    "headline_measure",
    "overall_reasons",
    "run_row",
    "scored_metric_results",
    "summarize_multi_run",
]


class MetricRow(NamedTuple):
    """One overall metric result of a case run as tables and re-analysis read it: no criterion, no turns.

    Reports that have not read their records (a loaded or a derived one) hold these instead of
    :class:`~agenteval.evalresult.models.EvalMetricResult` models; the attributes they share have
    the same names and values.
    """

    metric_name: str
    score: float
    eval_status: EvalStatus | None
    threshold: float
    measure_name: str = ""
    """The first of the result's measures (``""``: none)."""
    measure: float = math.nan
    """Its value (NaN: none)."""
    reason: str | None = ""
    """The reason as the metrics table shows it: the turns' reasons, ``turn N: …`` with several turns
    (``None``: the turns hold it, and are read when the table is made)."""


class RunRow(NamedTuple):
    """One case result (a case in one run) as tables and re-analysis read it: its outcome and metric rows.

    The attributes have the names and values of :class:`~agenteval.evalresult.models.EvalCaseResult`'s;
    the turns are not here.
    """

    eval_set_id: str
    eval_id: str
    run_id: int
    score: float
    final_eval_status: EvalStatus | None
    error_message: str
    error_type: str
    session_id: str
    user_id: str
    overall_eval_metric_results: tuple[MetricRow | EvalMetricResult, ...]
    """Its metric results: rows, or the records themselves when the case result was made from its record."""

    @property
    def short_error(self) -> str:
        """The error message as tables show it (see :attr:`EvalCaseResult.short_error`)."""
        context = f"inference eval case (evalCaseID={self.eval_id}, sessionID={self.session_id}): "
        if not self.error_message.startswith(context):
            return self.error_message
        return self.error_message.removeprefix(context).removeprefix("runner run: ")


def run_row(case: EvalCaseResult, shared: dict[MetricRow, MetricRow] | None = None) -> RunRow:
    """The row of a case result, as tables and re-analysis read it without its turns.

    Each metric row holds the reason the metrics table shows (from the turns, see :func:`overall_reasons`).

    Args:
        case: The case result.
        shared: Metric rows made before, each kept once: an equal row is taken from it (and new ones added).
    """
    reasons = overall_reasons(case)
    metrics = []
    for metric in case.overall_eval_metric_results:
        measure_name, measure = headline_measure(metric)
        if reasons is not None:
            reason = reasons.get(metric.metric_name, "")
        else:
            reason = metric.details.reason if metric.details is not None else ""
        row = MetricRow(
            metric.metric_name, metric.score, metric.eval_status, metric.threshold, measure_name, measure, reason
        )
        metrics.append(row if shared is None else shared.setdefault(row, row))
    return RunRow(
        case.eval_set_id,
        case.eval_id,
        case.run_id,
        case.score,
        case.final_eval_status,
        case.error_message,
        case.error_type,
        case.session_id,
        case.user_id,
        tuple(metrics),
    )


def headline_measure(metric: EvalMetricResult) -> tuple[str, float]:
    """The headline measure of a metric result: the first of its details' measures (``("", nan)``: none)."""
    measures = metric.details.measures if metric.details is not None else {}
    for name, value in measures.items():
        return name, value
    return "", math.nan


def overall_reasons(case: EvalCaseResult) -> dict[str, str] | None:
    """Each metric's readable overall reason, from the turns; ``None`` for a case without turns.

    The stored overall reason is the reference's: per-turn reasons joined by ``;``, empty ones
    included, which reads as ``;`` or ``;tool trajectory mismatch…`` for multi-turn cases. This is
    each turn's reason with its turn number (``turn 2: …``; just the reason for one turn), empty
    ones left out; a metric without a reason in any turn is not in it.
    """
    turns = case.eval_metric_result_per_invocation
    if not turns:
        return None
    found: dict[str, list[tuple[int, str]]] = {}
    for number, turn in enumerate(turns, start=1):
        for result in turn.eval_metric_results:
            if result.details is not None and result.details.reason:
                found.setdefault(result.metric_name, []).append((number, result.details.reason))
    if len(turns) == 1:
        return {name: reasons[0][1] for name, reasons in found.items()}
    return {name: "; ".join(f"turn {n}: {reason}" for n, reason in reasons) for name, reasons in found.items()}


class ScoredRun(Protocol):
    """What averaging reads of a case result: its error and its metric results."""

    @property
    def error_message(self) -> str:
        """Why the run failed with an error (empty when it did not)."""
        ...

    @property
    def overall_eval_metric_results(self) -> Sequence[EvalMetricResult]:
        """One overall result per evaluated metric."""
        ...


class ScoredMetric(Protocol):
    """What a summary reads of a metric result (a model or a :class:`MetricRow`)."""

    @property
    def metric_name(self) -> str:
        """The metric."""
        ...

    @property
    def score(self) -> float:
        """Its score."""
        ...

    @property
    def eval_status(self) -> EvalStatus | None:
        """Its status."""
        ...

    @property
    def threshold(self) -> float:
        """Its threshold."""
        ...


class SummarizedRun(Protocol):
    """What a summary reads of a case result (a model or a :class:`RunRow`)."""

    @property
    def eval_id(self) -> str:
        """The case."""
        ...

    @property
    def run_id(self) -> int:
        """The run (1-based)."""
        ...

    @property
    def final_eval_status(self) -> EvalStatus | None:
        """The case's status in the run."""
        ...

    @property
    def error_message(self) -> str:
        """Why the run failed with an error (empty when it did not)."""
        ...

    @property
    def overall_eval_metric_results(self) -> Sequence[ScoredMetric]:
        """Its metric results."""
        ...


class RunScores(NamedTuple):
    """A case result as averaging reads it, when its metric results are not its own (re-thresholded, say)."""

    error_message: str
    overall_eval_metric_results: Sequence[EvalMetricResult]


@dataclass(frozen=True, slots=True)
class CaseOutcome:
    """One case's outcome across its runs.

    Attributes:
        status: The case's overall status.
        score: The case's overall score.
        metric_results: One averaged result per metric evaluated in at least one run, in order of
            the metric's first appearance across the runs.
        error_message: Why deciding the case failed (the aggregator raised); empty otherwise.
    """

    status: EvalStatus
    score: float
    metric_results: list[EvalMetricResult]
    error_message: str = ""


def summarize_multi_run(
    cases: Sequence[SummarizedRun],
    expected_num_runs: int,
    outcomes: Mapping[str, CaseOutcome] | None = None,
    *,
    record_scores: bool = False,
) -> EvalSetResultSummary:
    """Build the summary stored with an eval-set result from the case results of every run.

    The input is not modified. The metric results of a case that failed with an error message
    are left out of every metric summary and run summary, as the reference has none for it.

    Args:
        cases: Case results (or their rows) of all runs; each needs an eval id and a 1-based run id.
        expected_num_runs: The configured number of runs; ``0`` means the highest run id seen
            (at least 1).
        outcomes: Each case's outcome across runs (see :func:`decide_case`), by eval id; a case
            without one is decided by the reference's rule.
        record_scores: Write each outcome's score into its case summary (for a custom aggregator
            with several runs; the default aggregator's score follows from the status).

    Returns:
        The summary: one run summary per run id ``1..num_runs`` (runs without results are not
        evaluated), one case summary per eval id sorted by id, metric summaries sorted by name.

    Raises:
        ConfigError: ``expected_num_runs`` is negative.
        AgentEvalError: A case has no eval id or run id, a run id exceeds ``expected_num_runs``,
            or a case or metric status is not passed, failed or not evaluated.
    """
    by_run, num_runs = _group_by_run(cases, expected_num_runs)
    run_ids = range(1, num_runs + 1)
    parts = _SharedParts()
    run_summaries, run_counts = _run_summaries(by_run, run_ids, parts)
    case_summaries, overall_status = _case_summaries(
        by_run, run_ids, outcomes or {}, parts, record_scores=record_scores and num_runs > 1
    )
    return EvalSetResultSummary.trusted(
        overall_status=overall_status,
        num_runs=num_runs,
        run_status_counts=parts.counts(run_counts),
        run_summaries=run_summaries,
        eval_case_summaries=case_summaries,
    )


def average_metric_results(case_runs: Sequence[ScoredRun]) -> list[EvalMetricResult]:
    """Each metric of one case averaged over the runs that evaluated it.

    The score is the mean over those runs; the threshold comes from the first such run, the
    criterion from the last; the status is passed iff the mean reaches the threshold. Metrics never
    evaluated are left out, and so are the metric results of a run with an error message, as the
    reference has none for it. The reference orders metrics by Go map iteration (random); here they
    keep the order of their first appearance across the runs, which is the metric configuration order.
    """
    return [
        EvalMetricResult.trusted(
            metric_name=name,
            score=metric.average,
            eval_status=metric.status,
            threshold=metric.threshold,
            criterion=metric.criterion,
        )
        for name, metric in _metric_sums(case_runs).items()
    ]


class AveragedMetric(NamedTuple):
    """A metric of one case averaged over its runs, as :func:`average_metric_results` makes it, but its criterion."""

    metric_name: str
    score: float
    eval_status: EvalStatus
    threshold: float


def averaged_metrics(case_runs: Sequence[SummarizedRun]) -> list[AveragedMetric]:
    """:func:`average_metric_results` of the case results or of their rows: the same sums, to the last bit."""
    return [
        AveragedMetric(name, metric.average, metric.status, metric.threshold)
        for name, metric in _metric_sums(case_runs).items()
    ]


def _metric_sums(case_runs: Sequence[ScoredRun] | Sequence[SummarizedRun]) -> dict[str, _RunsMetric]:
    """Each metric's scores summed over the runs that evaluated it, in order of first appearance."""
    metrics: dict[str, _RunsMetric | None] = {}
    for run in case_runs:
        for result in _scored(run):
            metric = metrics.setdefault(result.metric_name, None)
            # Skipped so that a metric that did not run does not dilute the average.
            if result.eval_status == EvalStatus.NOT_EVALUATED:
                continue
            if metric is None:
                metric = metrics[result.metric_name] = _RunsMetric(threshold=result.threshold)
            metric.count += 1
            metric.score_sum += result.score
            metric.criterion = getattr(result, "criterion", None)
    return {name: metric for name, metric in metrics.items() if metric is not None}


@dataclass(slots=True)
class _RunsMetric:
    """One metric accumulated over a case's runs, for :func:`aggregate_case_runs`."""

    threshold: float
    count: int = 0
    score_sum: float = 0.0
    criterion: Criterion | None = None

    @property
    def average(self) -> float:
        """The mean score."""
        return self.score_sum / self.count

    @property
    def status(self) -> EvalStatus:
        """Passed iff the mean reaches the threshold."""
        return EvalStatus.PASSED if self.average >= self.threshold else EvalStatus.FAILED


@dataclass(slots=True)
class _Counts:
    passed: int = 0
    failed: int = 0
    not_evaluated: int = 0

    def add(self, status: EvalStatus | str | None) -> None:
        if status == EvalStatus.PASSED:
            self.passed += 1
        elif status == EvalStatus.FAILED:
            self.failed += 1
        elif status == EvalStatus.NOT_EVALUATED:
            self.not_evaluated += 1
        else:
            raise AgentEvalError(f"unexpected eval status {'' if status is None else status}")


class _SharedParts:
    """The parts of one summary, each distinct one made once and shared wherever it recurs."""

    __slots__ = ("_made",)

    def __init__(self) -> None:
        # Keys hold values and the ids of parts made here (which stay alive in _made).
        self._made: dict[tuple[object, ...], Any] = {}

    def counts(self, counts: _Counts) -> EvalStatusCounts | None:
        if not (counts.passed or counts.failed or counts.not_evaluated):
            return None
        key = ("counts", counts.passed, counts.failed, counts.not_evaluated)
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = EvalStatusCounts.trusted(
                passed=counts.passed, failed=counts.failed, not_evaluated=counts.not_evaluated
            )
        return made

    def metric_summary(self, name: str, metric: _MetricAgg) -> EvalMetricSummary:
        average = 0.0
        status = EvalStatus.NOT_EVALUATED
        if metric.evaluated_count > 0:
            average = metric.score_sum / metric.evaluated_count
            status = EvalStatus.PASSED if average >= metric.threshold else EvalStatus.FAILED
        counts = self.counts(metric.counts)
        key = ("metric", name, average, status, metric.threshold, id(counts))
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = EvalMetricSummary.trusted(
                metric_name=name,
                average_score=average,
                eval_status=status,
                threshold=metric.threshold,
                status_counts=counts,
            )
        return made

    def metric_run_summary(self, result: ScoredMetric) -> EvalMetricRunSummary:
        key = ("metric run", result.metric_name, result.score, result.eval_status, result.threshold)
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = EvalMetricRunSummary.trusted(
                metric_name=result.metric_name,
                score=result.score,
                eval_status=result.eval_status,
                threshold=result.threshold,
            )
        return made

    def case_run_summary(self, run_id: int, case: SummarizedRun) -> EvalCaseRunSummary:
        metric_results = sorted(map(self.metric_run_summary, _scored(case)), key=lambda summary: summary.metric_name)
        key = ("case run", run_id, case.final_eval_status, case.error_message, *map(id, metric_results))
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = EvalCaseRunSummary.trusted(
                run_id=run_id,
                final_eval_status=case.final_eval_status,
                error_message=case.error_message,
                metric_results=metric_results,
            )
        return made


@dataclass(slots=True)
class _MetricAgg:
    """One metric accumulated for a summary; the threshold is the first occurrence's, evaluated or not."""

    threshold: float
    evaluated_count: int = 0
    score_sum: float = 0.0
    counts: _Counts = field(default_factory=_Counts)


@dataclass(slots=True)
class _CaseAgg:
    run_counts: _Counts = field(default_factory=_Counts)
    run_statuses: list[EvalStatus | None] = field(default_factory=list)
    has_run_error: bool = False
    run_summaries: list[EvalCaseRunSummary] = field(default_factory=list)
    metrics: dict[str, _MetricAgg] = field(default_factory=dict)


def _group_by_run(cases: Sequence[SummarizedRun], expected_num_runs: int) -> tuple[dict[int, list[SummarizedRun]], int]:
    if expected_num_runs < 0:
        raise ConfigError(f"expected num runs is negative: {expected_num_runs}")
    by_run: dict[int, list[SummarizedRun]] = {}
    max_run_id = 0
    for index, case in enumerate(cases):
        if not case.eval_id:
            raise AgentEvalError(f"eval id at index {index} is empty")
        run_id = case.run_id
        if run_id <= 0:
            raise AgentEvalError(f"run id at index {index} is not set")
        if expected_num_runs > 0 and run_id > expected_num_runs:
            raise AgentEvalError(f"run id {run_id} at index {index} exceeds expected num runs {expected_num_runs}")
        max_run_id = max(max_run_id, run_id)
        by_run.setdefault(run_id, []).append(case)
    num_runs = expected_num_runs if expected_num_runs > 0 else max_run_id
    return by_run, max(num_runs, 1)


def _run_summaries(
    by_run: Mapping[int, Sequence[SummarizedRun]], run_ids: Iterable[int], parts: _SharedParts
) -> tuple[list[EvalSetRunSummary], _Counts]:
    summaries: list[EvalSetRunSummary] = []
    run_counts = _Counts()
    for run_id in run_ids:
        run_cases = by_run.get(run_id, ())
        case_counts = _Counts()
        metrics: dict[str, _MetricAgg] = {}
        for case in run_cases:
            case_counts.add(case.final_eval_status)
            _merge_metrics(metrics, _scored(case))
        try:
            status = summarize(case.final_eval_status for case in run_cases)
        except AgentEvalError as error:
            raise rewrap(f"summarize run {run_id} status", error) from error
        run_counts.add(status)
        summaries.append(
            EvalSetRunSummary.trusted(
                run_id=run_id,
                overall_status=status,
                case_status_counts=parts.counts(case_counts),
                metric_summaries=[parts.metric_summary(name, metrics[name]) for name in sorted(metrics)],
            )
        )
    return summaries, run_counts


def _case_summaries(
    by_run: Mapping[int, Sequence[SummarizedRun]],
    run_ids: Sequence[int],
    outcomes: Mapping[str, CaseOutcome],
    parts: _SharedParts,
    *,
    record_scores: bool,
) -> tuple[list[EvalCaseResultSummary], EvalStatus]:
    aggs: dict[str, _CaseAgg] = {}
    for run_id in run_ids:
        for case in by_run.get(run_id, ()):
            agg = aggs.setdefault(case.eval_id, _CaseAgg())
            agg.run_statuses.append(case.final_eval_status)
            if case.error_message:
                agg.has_run_error = True
            agg.run_counts.add(case.final_eval_status)
            agg.run_summaries.append(parts.case_run_summary(run_id, case))
            _merge_metrics(agg.metrics, _scored(case))
    summaries: list[EvalCaseResultSummary] = []
    for eval_id in sorted(aggs):
        agg = aggs[eval_id]
        metric_summaries = [parts.metric_summary(name, agg.metrics[name]) for name in sorted(agg.metrics)]
        outcome = outcomes.get(eval_id)
        try:
            # The configured run count decides, not how many runs this case has.
            if outcome is not None:
                status = outcome.status
            elif len(run_ids) <= 1:
                status = summarize(agg.run_statuses)
            else:
                status = summarize(summary.eval_status for summary in metric_summaries)
        except AgentEvalError as error:
            raise rewrap(f"summarize case {eval_id} status", error) from error
        summaries.append(
            EvalCaseResultSummary.trusted(
                eval_id=eval_id,
                overall_status=fail_if_errored(status, agg.has_run_error),
                overall_score=outcome.score if outcome is not None and record_scores else None,
                error_message=outcome.error_message if outcome is not None else "",
                run_status_counts=parts.counts(agg.run_counts),
                metric_summaries=metric_summaries,
                run_summaries=agg.run_summaries,
            )
        )
    try:
        overall_status = summarize(summary.overall_status for summary in summaries)
    except AgentEvalError as error:
        raise rewrap("summarize eval set status", error) from error
    return summaries, overall_status


def scored_metric_results(case: ScoredRun) -> Sequence[EvalMetricResult]:
    """The metric results that count for ``case`` in summaries: none when it failed with an error.

    The reference drops the metric results of a case whose aggregation failed; agenteval keeps them
    (so the case can be re-aggregated) but, like the reference, does not count them.
    """
    return [] if case.error_message else case.overall_eval_metric_results


def _scored(case: ScoredRun | SummarizedRun) -> Sequence[ScoredMetric]:
    """:func:`scored_metric_results` of a case result or its row."""
    return () if case.error_message else case.overall_eval_metric_results


def fail_if_errored(status: EvalStatus, has_run_error: bool) -> EvalStatus:
    """Not evaluated becomes failed when a run failed with an error."""
    if status == EvalStatus.NOT_EVALUATED and has_run_error:
        return EvalStatus.FAILED
    return status


def _merge_metrics(metrics: dict[str, _MetricAgg], results: Iterable[ScoredMetric]) -> None:
    for result in results:
        metric = metrics.get(result.metric_name)
        if metric is None:
            metric = metrics[result.metric_name] = _MetricAgg(threshold=result.threshold)
        metric.counts.add(result.eval_status)
        if result.eval_status == EvalStatus.NOT_EVALUATED:
            continue
        metric.evaluated_count += 1
        metric.score_sum += result.score
