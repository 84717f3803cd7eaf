"""Working on finished results: re-aggregating and new thresholds.

None of this calls the agent or the evaluators: it recomputes from the metric results already in
a report, which is what makes trying a new case aggregator or threshold take milliseconds. It
reads the report through :class:`ReportData` (each case result as a row of outcomes and metric
scores, and the records behind them on demand) and returns the new outcomes (:class:`Derivation`);
the report builds the new report from them, and its records only when they are read.

An aggregator gets each case's metric results; what else it may read (the case as written, what
the agent did, the turns, the runs) is read from the report only when it reads it, so an aggregator
of scores costs no parsing of turns. The built-in all-pass rule, which reads nothing but the metric
statuses, is applied to the rows directly.

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, cast

from agenteval._util.callable_names import qualified_name
from agenteval.aggregation import (
    AggregationInput,
    AggregatorFunction,
    AllPassAggregator,
    EvalCaseResultAggregator,
    RunsReducer,
    aggregator_verdict,
    all_pass,
    as_aggregator,
    finite_score,
    metrics_of_results,
    one_run_outcome,
    run_aggregator,
)
from agenteval.analysis._frames import MetricView, RunView
from agenteval.context import EvalContext
from agenteval.errors import AgentEvalError, ConfigError, MissingEvalSetWarning, describe_exception, rewrap, warn_user
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import ErrorType, EvalCaseResult, EvalMetricResult, EvalSetResult
from agenteval.evalresult.provenance import Provenance
from agenteval.evalresult.summarize import MetricRow, RunRow, RunScores, average_metric_results, fail_if_errored
from agenteval.evalset.models import EvalCase, SessionInput
from agenteval.evaluators.base import status_for
from agenteval.evaluators.registry import default_registry
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus

__all__ = [
    "DecidedCase",
    "Derivation",
    "FinishedReport",
    "RecordsUnreadable",
    "ReportData",
    "decided_cases",
    "original_aggregator",
    "reaggregate",
    "rebuilt_case",
    "rethresholded",
    "rethresholded_results",
    "unreadable",
    "with_outcome",
    "with_thresholds",
]


class RecordsUnreadable(ConfigError):
    """The records a report had not read yet cannot be read (its file is malformed): no case's failure, the report's."""


def unreadable(error: ConfigError) -> ConfigError:
    """``error`` (why a report's records cannot be read) as the error a derivation raises instead of failing cases."""
    return RecordsUnreadable(str(error))


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportData:
    """What re-analysis reads of a report, without making it read records it has not read yet.

    ``runs`` are every case result in the result's order (records, or rows of a report that has
    not read its records); ``cases`` each case's positions in ``runs``, in the report's case order.
    The callables read what only the records hold, for the case result at a position: they may
    read the report's records, and raise :class:`RecordsUnreadable` when those cannot be read.
    """

    app_name: str
    eval_set_id: str
    eval_metrics: Sequence[EvalMetric]
    num_runs: int
    aggregator: EvalCaseResultAggregator | None
    provenance: Provenance | None
    """The provenance, without its eval set for a report that has not read it."""
    has_eval_set: bool
    runs: Sequence[RunView]
    cases: Sequence[tuple[str, Sequence[int]]]
    metric_results: Callable[[int], list[EvalMetricResult]]
    record: Callable[[int], EvalCaseResult]
    eval_cases: Callable[[], Mapping[str, EvalCase]]
    inference: Callable[[int], InferenceResult]
    last_inference: Callable[[str], InferenceResult | None]


class FinishedReport(Protocol):
    """What :func:`original_aggregator` reads of a report (an :class:`~agenteval.EvaluationReport`)."""

    aggregator: EvalCaseResultAggregator | None
    provenance: Provenance | None
    result: EvalSetResult


class DecidedCase(NamedTuple):
    """A case's outcome across its runs: its runs' positions, status, score and the aggregator's error."""

    eval_id: str
    positions: Sequence[int]
    status: EvalStatus
    score: float
    error_message: str


@dataclass(frozen=True, slots=True)
class Derivation:
    """A report's outcomes decided again: by ``how``, with ``metrics`` and ``aggregator``."""

    runs: list[RunRow]
    """Every case result with its new outcome, in the report's order (a run id of 0 numbered 1)."""
    cases: list[DecidedCase]
    """Each case's new outcome across its runs, in the report's case order."""
    thresholds: dict[str, float]
    """The new thresholds, by metric name (empty when re-aggregating): the turns' results get them too."""
    metrics: list[EvalMetric]
    """The metrics, with any new thresholds."""
    aggregator: EvalCaseResultAggregator
    """The aggregator that decided the cases."""
    how: str
    """``reaggregate`` or ``with_thresholds``."""


async def decided_cases(
    data: ReportData, runs: Sequence[RunRow], aggregator: EvalCaseResultAggregator
) -> list[DecidedCase]:
    """Each case of ``data`` decided across its runs (``runs``, the rows of ``data.runs``) by ``aggregator``.

    As :func:`~agenteval.aggregation.decide_case` decides them, each run as it was decided; the aggregator's
    input reads the case results only if the aggregator reads them (the default one never does).
    """
    return await _decided_cases(_Sources(data, list(data.eval_metrics), {}), runs, aggregator)


async def reaggregate(data: ReportData, aggregator: EvalCaseResultAggregator | AggregatorFunction) -> Derivation:
    """The report's outcomes decided again by ``aggregator``.

    Every case that has metric results is aggregated again from them (the agent and the evaluators
    are not called); cases that failed before scoring stay failed. The report is unchanged.

    Warns:
        MissingEvalSetWarning: The report has no eval set, so ``aggregator`` (unless a built-in one,
            which never reads the case) gets each case rebuilt from the result (:func:`rebuilt_case`).

    Raises:
        RecordsUnreadable: The aggregator read records the report cannot read.
    """
    chosen = as_aggregator(aggregator)
    return await _derived(data, chosen, list(data.eval_metrics), {}, "reaggregate")


async def with_thresholds(
    data: ReportData,
    thresholds: Mapping[str, float],
    aggregator: EvalCaseResultAggregator | AggregatorFunction | None = None,
) -> Derivation:
    """The report's outcomes with the named metrics passing at new thresholds.

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
    known = {metric.metric_name for run in data.runs for metric in run.overall_eval_metric_results}
    known.update(metric.metric_name for metric in data.eval_metrics)
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
    metrics = [
        metric.model_copy(update={"threshold": checked[metric.metric_name]})
        if metric.metric_name in checked
        else metric
        for metric in data.eval_metrics
    ]
    registry = default_registry()
    for metric in metrics:
        if metric.metric_name in checked:
            try:
                registry.check_threshold(metric)
            except ConfigError as exc:
                raise ConfigError(f"the threshold of {metric.metric_name}: {exc}") from None
    if aggregator is not None:
        chosen = as_aggregator(aggregator)
    else:
        records = (data.record(index) for index in range(len(data.runs)))
        chosen = _recorded_aggregator(
            data.aggregator, data.provenance, records, "with_thresholds(thresholds, aggregator=...)"
        )
    return await _derived(data, chosen, metrics, checked, "with_thresholds")


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
    return _recorded_aggregator(
        report.aggregator, report.provenance, (case for case in report.result.eval_case_results), call
    )


def _recorded_aggregator(
    aggregator: EvalCaseResultAggregator | None,
    provenance: Provenance | None,
    records: Iterable[EvalCaseResult],
    call: str,
) -> EvalCaseResultAggregator:
    if aggregator is not None:
        return aggregator
    default = AllPassAggregator()
    recorded = provenance.aggregator if provenance is not None else ""
    # Results written before names were recorded hold the aggregator's repr.
    if recorded and recorded not in (qualified_name(default), repr(default)):
        raise ConfigError(
            f"this report was aggregated by {recorded}, which a loaded report cannot rebuild; pass it again: {call}"
        )
    if not recorded:
        for case in records:
            if _failed_before_aggregation(case):
                continue
            try:
                verdict = all_pass(case.overall_eval_metric_results)
                status, score = verdict.status, verdict.score
            except AgentEvalError:
                status, score = EvalStatus.FAILED, 0.0  # the case would fail with the aggregator's error
            # Reference versions older than case aggregators write no case score: only the status tells.
            scored = "score" in case.__pydantic_fields_set__  # read only: model_fields_set would copy a shared set
            if status != case.final_eval_status or (scored and not math.isclose(score, case.score)):
                raise ConfigError(
                    f"this report records no case aggregator, and the stored case scores (e.g. case"
                    f" {case.eval_id}: {case.score:g}, {case.final_eval_status}) were not produced by the"
                    f" all-pass aggregator (which gives {score:g}, {status}); pass the"
                    f" aggregator that produced them: {call}"
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


def rethresholded(case: EvalCaseResult, thresholds: Mapping[str, float]) -> EvalCaseResult:
    """A copy of ``case`` whose results of the named metrics have the new thresholds (and statuses).

    Only what changes is copied: the other metric results and the turns are shared with ``case``.
    """
    return case.replaced(
        overall_eval_metric_results=rethresholded_results(case.overall_eval_metric_results, thresholds),
        eval_metric_result_per_invocation=[
            turn.replaced(eval_metric_results=rethresholded_results(turn.eval_metric_results, thresholds))
            for turn in case.eval_metric_result_per_invocation
        ],
    )


def with_outcome(case: EvalCaseResult, row: RunRow) -> EvalCaseResult:
    """A copy of ``case`` with the outcome ``row`` holds: its score, status, error and run id."""
    changes: dict[str, Any] = {
        "score": row.score,
        "final_eval_status": row.final_eval_status,
        "error_message": row.error_message,
        "error_type": row.error_type,
    }
    if row.run_id != case.run_id:
        changes["run_id"] = row.run_id
    return case.replaced(**changes)


def rethresholded_results(
    results: Sequence[EvalMetricResult], thresholds: Mapping[str, float]
) -> list[EvalMetricResult]:
    """``results`` with the named metrics' thresholds and statuses new (copies of those only)."""
    return [
        result
        if (threshold := thresholds.get(result.metric_name)) is None
        else result.replaced(threshold=threshold, eval_status=_new_status(result.eval_status, result.score, threshold))
        for result in results
    ]


def _new_status(status: EvalStatus | None, score: float, threshold: float) -> EvalStatus | None:
    return status_for(score, threshold) if status in (EvalStatus.PASSED, EvalStatus.FAILED) else status


def _rethresholded_rows(
    metrics: Sequence[MetricRow | EvalMetricResult],
    thresholds: Mapping[str, float],
    has_turns: bool | None,
    changed: dict[int, MetricRow],
) -> tuple[MetricRow | EvalMetricResult, ...]:
    """A row's metric results with the new thresholds; a changed record becomes a :class:`MetricRow`.

    ``has_turns``: whether the case result has turns, whose reasons a record's row then leaves to them
    (``None``: not known, and a changed record is copied instead). ``changed`` holds the rows made so
    far, by the ``id`` of the row they were made from (which the caller keeps alive).
    """
    rows: list[MetricRow | EvalMetricResult] = []
    for metric in metrics:
        threshold = thresholds.get(metric.metric_name)
        if threshold is None:
            rows.append(metric)
        elif type(metric) is MetricRow:
            made = changed.get(id(metric))
            if made is None:
                status = _new_status(metric.eval_status, metric.score, threshold)
                made = changed[id(metric)] = metric._replace(threshold=threshold, eval_status=status)
            rows.append(made)
        else:
            record = cast(EvalMetricResult, metric)
            status = _new_status(record.eval_status, record.score, threshold)
            if has_turns is None:
                rows.append(record.replaced(threshold=threshold, eval_status=status))
                continue
            details = record.details
            measure_name, measure = "", math.nan
            if details is not None and details.measures:
                measure_name, measure = next(iter(details.measures.items()))
            reason = None if has_turns else details.reason if details is not None else ""
            rows.append(MetricRow(record.metric_name, record.score, status, threshold, measure_name, measure, reason))
    return tuple(rows)


def _warn_if_cases_are_rebuilt(data: ReportData, aggregator: EvalCaseResultAggregator) -> None:
    if data.has_eval_set or not data.runs:
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


async def _derived(
    data: ReportData,
    aggregator: EvalCaseResultAggregator,
    metrics: list[EvalMetric],
    thresholds: dict[str, float],
    how: str,
) -> Derivation:
    _warn_if_cases_are_rebuilt(data, aggregator)
    sources = _Sources(data, metrics, thresholds)
    # The all-pass rule reads nothing but the metric statuses: applied to the rows, it needs no input.
    by_rule = type(aggregator) in (AllPassAggregator, RunsReducer)
    changed: dict[int, MetricRow] = {}  # equal rows of a loaded report are one object: re-thresholded once
    runs = []
    for index, run in enumerate(data.runs):
        # A record holds EvalMetricResults, a row those or MetricRows.
        scored = cast(Sequence[MetricRow | EvalMetricResult], run.overall_eval_metric_results)
        if thresholds:
            # type(), not isinstance: the latter calls into pydantic's metaclass, once per case.
            has_turns = (
                None if type(run) is RunRow else bool(cast(EvalCaseResult, run).eval_metric_result_per_invocation)
            )
            scored = _rethresholded_rows(scored, thresholds, has_turns, changed)
        outcome = await _decided_run(sources, index, run, scored, aggregator, by_rule)
        # Results written without run ids (by older reference versions) hold one run: number it 1.
        runs.append(
            RunRow(run.eval_set_id, run.eval_id, run.run_id or 1, *outcome, run.session_id, run.user_id, tuple(scored))
        )
    try:
        cases = await _decided_cases(sources, runs, aggregator)
    except AgentEvalError as exc:
        raise rewrap("summarize eval set result", exc) from exc
    return Derivation(runs, cases, thresholds, metrics, aggregator, how)


def _all_pass(metrics: Sequence[MetricView]) -> EvalStatus | None:
    """The status :func:`~agenteval.status.summarize` folds the metric statuses into; ``None`` where it raises."""
    passed = False
    for metric in metrics:
        status = metric.eval_status
        if status == EvalStatus.FAILED:
            return EvalStatus.FAILED
        if status == EvalStatus.PASSED:
            passed = True
        elif status != EvalStatus.NOT_EVALUATED:
            return None  # the aggregator's own call words the failure
    return EvalStatus.PASSED if passed else EvalStatus.NOT_EVALUATED


async def _decided_run(
    sources: _Sources,
    index: int,
    run: RunView,
    scored: Sequence[MetricRow | EvalMetricResult],
    aggregator: EvalCaseResultAggregator,
    by_rule: bool,
) -> tuple[float, EvalStatus | None, str, str]:
    """The outcome ``aggregator`` gives ``run`` with metric results ``scored``: score, status, error, error type.

    A case result that failed before aggregation keeps its own.
    """
    if run.error_message and run.error_type != ErrorType.AGGREGATOR:
        return run.score, run.final_eval_status, run.error_message, run.error_type
    if by_rule:
        status = _all_pass(scored)
        if status is not None:
            return 1.0 if status is EvalStatus.PASSED else 0.0, status, "", ""
    try:
        score, decided = await aggregator_verdict(aggregator, sources.run_input(index, run))
    except Exception as exc:
        _raise_if_unreadable(exc)
        return 0.0, EvalStatus.FAILED, describe_exception(exc), ErrorType.AGGREGATOR.value
    return score, decided, "", ""


async def _decided_cases(
    sources: _Sources, runs: Sequence[RunRow], aggregator: EvalCaseResultAggregator
) -> list[DecidedCase]:
    """Each case decided across its runs, as :func:`~agenteval.aggregation.decide_case` decides it."""
    decided = []
    for eval_id, positions in sources.data.cases:
        if sources.data.num_runs <= 1 and len(positions) == 1:
            # The common case, as one_run_outcome decides it: the run's status, failed when not evaluated
            # with an error.
            run = runs[positions[0]]
            status = run.final_eval_status
            if status == EvalStatus.NOT_EVALUATED and run.error_message:
                status = EvalStatus.FAILED
            if status in _DECIDED_STATUSES:
                decided.append(DecidedCase(eval_id, positions, status, run.score, ""))
                continue
        case_runs = [runs[index] for index in positions]
        if sources.data.num_runs <= 1:
            status, score = one_run_outcome(case_runs)
            decided.append(DecidedCase(eval_id, positions, status, score, ""))
        elif case_runs and all(run.error_message for run in case_runs):
            decided.append(DecidedCase(eval_id, positions, EvalStatus.FAILED, 0.0, ""))
        else:
            errored = any(run.error_message for run in case_runs)
            try:
                verdict = await run_aggregator(aggregator, sources.across_runs_input(eval_id, positions, runs))
            except Exception as exc:
                _raise_if_unreadable(exc)
                decided.append(DecidedCase(eval_id, positions, EvalStatus.FAILED, 0.0, describe_exception(exc)))
            else:
                status = fail_if_errored(verdict.status, errored)
                decided.append(DecidedCase(eval_id, positions, status, verdict.score, ""))
    return decided


_DECIDED_STATUSES = (EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED)


def _raise_if_unreadable(error: Exception) -> None:
    """Raise the report's own error when an aggregator failed because the report could not read its records."""
    if isinstance(error.__cause__, RecordsUnreadable):
        raise error.__cause__ from None


class _Sources:
    """What the aggregator inputs of one derivation read from the report, each when first read."""

    def __init__(self, data: ReportData, metrics: list[EvalMetric], thresholds: Mapping[str, float]) -> None:
        self.data = data
        self.metrics = metrics
        self.thresholds = thresholds
        self._eval_cases: Mapping[str, EvalCase] | None = None

    def run_input(self, index: int, run: RunView) -> AggregationInput:
        """The input of the aggregator deciding the case result ``run``, at ``index``."""
        return _LazyInput.of(
            self,
            index,
            app_name=self.data.app_name,
            eval_set_id=run.eval_set_id or self.data.eval_set_id,
            metric_results=self.metric_results(index),
            runs=(),
        )

    def across_runs_input(self, eval_id: str, positions: Sequence[int], runs: Sequence[RunRow]) -> AggregationInput:
        """The input of the aggregator deciding case ``eval_id`` across its runs (``runs``: the new rows)."""
        averaged = average_metric_results(
            [RunScores(runs[index].error_message, self.metric_results(index)) for index in positions]
        )
        return _LazyInput.of(
            _AcrossRuns(self, eval_id, positions, runs),
            0,
            app_name=self.data.app_name,
            eval_set_id=self.data.eval_set_id,
            metric_results=averaged,
            metric_results_per_invocation=(),
        )

    def metric_results(self, index: int) -> list[EvalMetricResult]:
        results = self.data.metric_results(index)
        return rethresholded_results(results, self.thresholds) if self.thresholds else results

    def record(self, index: int) -> EvalCaseResult:
        """The case result at ``index`` as this derivation sees it: new thresholds, the outcome before it."""
        record = self.data.record(index)
        return rethresholded(record, self.thresholds) if self.thresholds else record

    def eval_case(self, eval_id: str, records: Callable[[], Sequence[EvalCaseResult]]) -> EvalCase:
        if self._eval_cases is None:
            self._eval_cases = self.data.eval_cases()
        return self._eval_cases.get(eval_id) or rebuilt_case(self.data.app_name, eval_id, records())

    # The loaders of _LazyInput's fields, for one case result.

    def load_eval_case(self, data: _LazyInput) -> EvalCase:
        index = data.position
        return self.eval_case(self.data.runs[index].eval_id, lambda: [self.record(index)])

    def load_inference_result(self, data: _LazyInput) -> InferenceResult:
        return self.data.inference(data.position)

    def load_eval_metrics(self, data: _LazyInput) -> list[EvalMetric]:
        return metrics_of_results(data.eval_case, self.metrics, data.metric_results)

    def load_metric_results_per_invocation(self, data: _LazyInput) -> Sequence[Any]:
        return list(self.record(data.position).eval_metric_result_per_invocation)


class _AcrossRuns:
    """The loaders of the input deciding one case across its runs."""

    def __init__(self, sources: _Sources, eval_id: str, positions: Sequence[int], runs: Sequence[RunRow]) -> None:
        self.sources, self.eval_id, self.positions, self.new_runs = sources, eval_id, positions, runs

    def load_eval_case(self, data: _LazyInput) -> EvalCase:
        return self.sources.eval_case(self.eval_id, lambda: self.load_runs(data))

    def load_inference_result(self, data: _LazyInput) -> InferenceResult:
        return self.sources.data.last_inference(self.eval_id) or InferenceResult(eval_case_id=self.eval_id)

    def load_eval_metrics(self, data: _LazyInput) -> list[EvalMetric]:
        return metrics_of_results(data.eval_case, self.sources.metrics, data.metric_results)

    def load_runs(self, data: _LazyInput) -> Sequence[EvalCaseResult]:
        return tuple(with_outcome(self.sources.record(index), self.new_runs[index]) for index in self.positions)


class _Loaders(Protocol):
    """What reads the fields of a :class:`_LazyInput` left unread: ``load_<field>(input)`` for each of them."""

    def load_eval_case(self, data: _LazyInput) -> EvalCase: ...
    def load_inference_result(self, data: _LazyInput) -> InferenceResult: ...
    def load_eval_metrics(self, data: _LazyInput) -> list[EvalMetric]: ...


_UNREAD: Any = object()
"""What a field of a :class:`_LazyInput` holds until it is first read."""


class _LazyInput(AggregationInput):
    """An :class:`AggregationInput` whose case, inference, metrics, turns and runs are read when first read.

    It is one in every respect (``dataclasses.replace`` and ``repr`` read every field), so that an
    aggregator that reads only the scores costs no parsing of turns or of the eval set.
    """

    __slots__ = ("loaders", "position")
    loaders: _Loaders
    position: int

    @classmethod
    def of(
        cls,
        loaders: _Loaders,
        position: int,
        *,
        app_name: str,
        eval_set_id: str,
        metric_results: list[EvalMetricResult],
        metric_results_per_invocation: Any = _UNREAD,
        runs: Any = _UNREAD,
    ) -> _LazyInput:
        """An input with these fields, whose others (and these when ``_UNREAD``) ``loaders`` read when read."""
        # Made without the dataclass's __init__, which sets each field through a descriptor: this is made
        # once per case result, and what it costs is most of what a re-aggregation costs. Every field is
        # set (tests/analysis/test_lazy_reports.py checks that none is missed).
        made = _new_object(cls)
        _set_app_name(made, app_name)
        _set_eval_set_id(made, eval_set_id)
        _set_metric_results(made, metric_results)
        _set_metric_results_per_invocation(made, metric_results_per_invocation)
        _set_runs(made, runs)
        _set_context(made, EvalContext())
        _set_eval_case(made, _UNREAD)
        _set_inference_result(made, _UNREAD)
        _set_eval_metrics(made, _UNREAD)
        _set_loaders(made, loaders)
        _set_position(made, position)
        return made


class _Deferred:
    """A field of :class:`_LazyInput`, kept in :class:`AggregationInput`'s slot and loaded when first read."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.slot = AggregationInput.__dict__[name]
        self.load = f"load_{name}"

    def __get__(self, data: _LazyInput | None, owner: type | None = None) -> Any:
        if data is None:
            return self
        value = self.slot.__get__(data, owner)
        if value is _UNREAD:
            value = getattr(data.loaders, self.load)(data)
            self.slot.__set__(data, value)
        return value

    def __set__(self, data: _LazyInput, value: Any) -> None:
        self.slot.__set__(data, value)


_DEFERRED = ("eval_case", "inference_result", "eval_metrics", "metric_results_per_invocation", "runs")
for _name in _DEFERRED:
    setattr(_LazyInput, _name, _Deferred(_name))
_new_object = object.__new__
_set_app_name = AggregationInput.__dict__["app_name"].__set__
_set_eval_set_id = AggregationInput.__dict__["eval_set_id"].__set__
_set_eval_case = AggregationInput.__dict__["eval_case"].__set__
_set_inference_result = AggregationInput.__dict__["inference_result"].__set__
_set_eval_metrics = AggregationInput.__dict__["eval_metrics"].__set__
_set_metric_results = AggregationInput.__dict__["metric_results"].__set__
_set_metric_results_per_invocation = AggregationInput.__dict__["metric_results_per_invocation"].__set__
_set_context = AggregationInput.__dict__["context"].__set__
_set_runs = AggregationInput.__dict__["runs"].__set__
_set_loaders = _LazyInput.__dict__["loaders"].__set__
_set_position = _LazyInput.__dict__["position"].__set__


def _failed_before_aggregation(case: RunView) -> bool:
    """A failure that happened before the aggregator ran (not one the aggregator itself caused)."""
    return bool(case.error_message) and case.error_type != ErrorType.AGGREGATOR
