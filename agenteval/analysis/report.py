"""What an evaluation returns: the saved result, per-case outcomes across runs, and DataFrames."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, NamedTuple, Protocol, Self, TypeVar, overload

from agenteval._presentation import presenter
from agenteval._util.callable_names import qualified_name
from agenteval._util.gc_tuning import fewer_collections
from agenteval._util.sync_bridge import run_sync
from agenteval.aggregation import (
    AggregatorFunction,
    AllPassAggregator,
    EvalCaseResultAggregator,
    all_pass,
    decide_case,
    recorded_case_outcome,
    recorded_decision,
)
from agenteval.analysis._frames import (
    CASE_COLUMNS,
    CASE_SUMMARY_COLUMNS,
    INVOCATION_COLUMNS,
    METRIC_COLUMNS,
    RUBRIC_COLUMNS,
    TOOL_CALL_COLUMNS,
    TURN_COLUMNS,
    CaseAcrossRuns,
    RunView,
    case_table_frame,
    cases_frame,
    cases_frame_of,
    invocations_frame,
    metrics_frame,
    metrics_frame_of,
    overall_reasons,
    rubric_frame,
    rubric_frame_of,
    tool_calls_frame,
    turns_frame,
)
from agenteval.analysis._reanalysis import (
    Derivation,
    ReportData,
    decided_cases,
    reaggregate,
    rebuilt_case,
    rethresholded,
    rethresholded_results,
    unreadable,
    with_outcome,
    with_thresholds,
)
from agenteval.analysis.bundle import BundleContents, bundle_environment, is_bundle, read_bundle, write_bundle
from agenteval.analysis.diagnostics.failures import failures_frame, failures_frame_of, needs_turns
from agenteval.analysis.diagnostics.flakiness import flakiness_frame
from agenteval.analysis.passk import (
    case_pass_nc,
    mean_pass_at_k,
    mean_pass_hat_k,
    parse_pass_nc,
    pass_at_k,
    pass_hat_k,
)
from agenteval.errors import (
    AgentEvalError,
    ConfigError,
    EvalSetChangedWarning,
    MissingCassettesWarning,
    NotFoundError,
    rewrap,
    warn_user,
)
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.local import ResultIndex
from agenteval.evalresult.manager import EvalResultManager
from agenteval.evalresult.models import EvalCaseResult, EvalMetricResult, EvalSetResult
from agenteval.evalresult.provenance import PARTIAL_PREFIX, Provenance, current_environment, eval_set_changes
from agenteval.evalresult.records import CaseRecord, metric_results_of, twin_of_save
from agenteval.evalresult.summarize import (
    CaseOutcome,
    RunRow,
    RunScores,
    SummarizedRun,
    average_metric_results,
    fail_if_errored,
    summarize_multi_run,
)
from agenteval.evalset.models import EvalSet, Invocation
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus, summarize

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from agenteval._presentation import HTMLView, WhatIfView
    from agenteval.analysis._best_of_n import BestOfN
    from agenteval.llm.base import ChatModel

__all__ = [
    "CASE_COLUMNS",
    "CASE_SUMMARY_COLUMNS",
    "INVOCATION_COLUMNS",
    "METRIC_COLUMNS",
    "RUBRIC_COLUMNS",
    "TOOL_CALL_COLUMNS",
    "PARTIAL_PREFIX",
    "ReportPlan",
    "TURN_COLUMNS",
    "CaseSummary",
    "EvaluationReport",
    "build_recorded_report",
    "build_report",
    "case_views",
    "inferences_from_result",
    "report_from_result",
    "run_views",
]


@dataclass(slots=True, kw_only=True)
class CaseSummary:
    """One case across all runs (the reference facade's ``EvaluationCaseResult``)."""

    eval_id: str
    """The case."""
    overall_status: EvalStatus
    """What the case aggregator decided: with one run, the run's status; with several, its verdict on
    the metric scores averaged over the runs (for the default aggregator: every averaged metric
    reaches its threshold). Not evaluated becomes failed when a run failed with an error."""
    score: float
    """The case aggregator's score for the case (with one run, the run's score)."""
    runs: list[EvalCaseResult]
    """The case's result in each run, in run order."""
    metric_results: list[EvalMetricResult]
    """Each metric's score averaged over the runs that evaluated it, in configuration order."""
    error_message: str = ""
    """Why deciding the case across runs failed (the aggregator raised); empty otherwise."""


_T = TypeVar("_T")

_LATER: Any = object()
"""Given to the constructor for a field a report that has not read its records reads when first read."""


class _OnDemand(Generic[_T]):
    """A field of :class:`EvaluationReport` that a report made without its records reads when first read.

    A loaded report, or one derived by :meth:`~EvaluationReport.reaggregate` or
    :meth:`~EvaluationReport.with_thresholds`, opens with the outcomes of its case results (see
    :class:`_Unread`); reading one of these fields reads all of them, once.
    """

    def __init__(self, *, default: Callable[[], _T] | None = None) -> None:
        self._default = default
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, report: None, owner: type | None = None) -> Self: ...
    @overload
    def __get__(self, report: EvaluationReport, owner: type | None = None) -> _T: ...
    def __get__(self, report: EvaluationReport | None, owner: type | None = None) -> _T | Self:
        if report is None:
            return self
        values = report.__dict__
        if self._name not in values:
            report._read_records()
        value: _T = values[self._name]
        return value

    def __set__(self, report: EvaluationReport, value: _T) -> None:
        given: object = value
        if given is self:  # the constructor's default: not given
            if self._default is None:
                raise TypeError(f"EvaluationReport() missing keyword argument: {self._name!r}")
            value = self._default()
        if given is not _LATER:
            report.__dict__[self._name] = value


@dataclass(kw_only=True)
class EvaluationReport:
    """The outcome of :meth:`agenteval.Evaluator.evaluate`.

    The persisted :attr:`result` holds every case of every run; the DataFrames flatten it for
    analysis (their columns are listed in ``CASE_COLUMNS``, ``CASE_SUMMARY_COLUMNS``,
    ``METRIC_COLUMNS``, ``INVOCATION_COLUMNS`` and ``RUBRIC_COLUMNS``). The inference results are
    kept so that metrics can be re-scored without running the agent again.

    A report is a value: deriving one (:meth:`reaggregate`, :meth:`with_thresholds`,
    :meth:`~agenteval.Evaluator.rescore`) never changes it, and the new report shares every record
    it did not change (the agent's turns, the other metrics' results), so keeping many derived
    reports of a large evaluation costs little time and memory. Treat the records as read-only;
    to edit one, copy it first (``record.model_copy(deep=True)``).

    A report loaded from a file (:meth:`load`) or derived by :meth:`reaggregate` or
    :meth:`with_thresholds` opens with its case results' outcomes and scores only: :attr:`cases`,
    :attr:`case_table`, :attr:`metrics`, :attr:`overall_status` and further derivations work from
    them, and the records (:attr:`result`, :attr:`case_summaries`, :attr:`inference_results`,
    :attr:`eval_set`, :attr:`provenance`) are read the first time one of them is. A loaded file's
    turns are read then, and a problem in them raises the error loading the whole file gives.
    """

    app_name: str
    """The app evaluated."""
    eval_set_id: str
    """The eval set evaluated."""
    result: _OnDemand[EvalSetResult] = _OnDemand()
    """The saved result (its id is set once saved)."""
    case_summaries: _OnDemand[list[CaseSummary]] = _OnDemand()
    """Per-case outcome across runs, in eval-set order."""
    overall_status: EvalStatus
    """Passed when no case failed and at least one passed."""
    eval_metrics: list[EvalMetric] = field(default_factory=list)
    """The metrics the cases were scored with, in order."""
    inference_results: _OnDemand[list[list[InferenceResult]]] = _OnDemand(default=list)
    """What the agent did, per run (index 0 is run 1)."""
    num_runs: int = 1
    """How many times each case ran."""
    execution_time: float = 0.0
    """Wall time of the evaluation in seconds; ``0.0`` when unknown.

    A loaded report takes it from the start and finish times its provenance records; a
    re-aggregated or re-thresholded one holds the time the derivation took.
    """
    eval_set: _OnDemand[EvalSet | None] = _OnDemand(default=lambda: None)
    """The eval set as evaluated (``None`` for a report loaded from a result alone)."""
    aggregator: EvalCaseResultAggregator | None = None
    """The case aggregator that decided the case statuses (``None`` when unknown)."""
    provenance: _OnDemand[Provenance | None] = _OnDemand(default=lambda: None)
    """What produced the report (versions, configuration hashes, settings, times)."""

    @property
    def passed(self) -> bool:
        """Whether the evaluation passed overall."""
        return self.overall_status is EvalStatus.PASSED

    @property
    def metric_names(self) -> list[str]:
        """The metric names: configuration order first, then any others found in the results."""
        names = [metric.metric_name for metric in self.eval_metrics]
        seen = set(names)
        for case in self._runs():
            for metric in case.overall_eval_metric_results:
                if metric.metric_name not in seen:
                    seen.add(metric.metric_name)
                    names.append(metric.metric_name)
        return names

    @property
    def partial(self) -> bool:
        """Whether this is the report an interrupted evaluation left (Ctrl-C, an error, ``run.cancel()``).

        It holds only the cases that finished; ``ev.evaluate(..., resume=report)`` carries the evaluation on.
        """
        provenance = self._known_provenance()
        return provenance is not None and provenance.partial

    @property
    def reuse_summary(self) -> str:
        """What was taken from finished work instead of being done again, in a line; ``""`` when nothing was.

        E.g. ``"20/20 inferences and 58/60 scores from the cache"``; the ``cached_inference`` and
        ``cached_scores`` columns of :attr:`cases` and ``cached`` of :attr:`metrics` say which.
        """
        provenance = self._known_provenance()
        reused = provenance.reused if provenance is not None else None
        if reused is None:
            return ""
        cases = self._runs()
        scores = sum(len(case.overall_eval_metric_results) for case in cases)
        sources = " and ".join("the cache" if source == "cache" else source for source in reused.sources)
        return (
            f"{len(reused.inferences)}/{len(cases)} inferences and {len(reused.scores)}/{scores} scores"
            f" from {sources or 'finished work'}"
        )

    @property
    def case_statuses(self) -> dict[str, EvalStatus]:
        """Each case's overall status across its runs, by case id in eval-set order (:attr:`case_table`'s ``status``).

        Read without the records: cheaper than :attr:`case_summaries` for a report that has not read them.
        """
        return {case.eval_id: case.overall_status for case in self._case_views()}

    @property
    def result_id(self) -> str:
        """The id of the saved result (``""`` until saved), read without the records, which :attr:`result` reads."""
        unread = self._unread()
        return unread.result_id if unread is not None else self.result.eval_set_result_id

    def case_results(self, eval_id: str) -> list[EvalCaseResult]:
        """One case's result in each run, read alone: the other cases' records stay unread.

        In the order the result holds them, as :attr:`case_summaries` has them (run order in a result agenteval
        wrote).

        :attr:`result` and :attr:`case_summaries` read every case's record; this reads only this case's,
        which in a report of thousands of cases is the difference between milliseconds and seconds. Treat
        the results as read-only (copy one to edit it).

        Raises:
            NotFoundError: No case of this report has the id ``eval_id`` (the message lists the cases).
        """
        unread = self._unread()
        if unread is not None:
            # Found by id once per report: a view reads many cases one at a time.
            rows = self.__dict__.get("_rows_by_id")
            if rows is None or rows[0] is not unread:
                rows = self.__dict__["_rows_by_id"] = (unread, {row.eval_id: row for row in reversed(unread.cases)})
            row = rows[1].get(eval_id)
            if row is not None:
                return [unread.record(position) for position in row.positions]
        else:
            for summary in self.case_summaries:
                if summary.eval_id == eval_id:
                    return list(summary.runs)
        known = [case.eval_id for case in self._case_views()]
        listed = ", ".join(map(repr, known[:30])) + (", …" if len(known) > 30 else "")
        raise NotFoundError(f"no case {eval_id!r} in this report; its cases are: {listed or '(none)'}")

    @property
    def cases(self) -> pd.DataFrame:
        """One row per (run, case): status, score, error type and message (columns ``CASE_COLUMNS``)."""
        unread = self._unread()
        if unread is not None:
            return cases_frame_of(unread.runs, unread.provenance)
        return cases_frame(self.result)

    @property
    def case_table(self) -> pd.DataFrame:
        """One row per case across runs, in eval-set order (the rows of :attr:`case_summaries`).

        ``status`` and ``score`` are the case's overall outcome, decided by the case aggregator (with
        several runs, from the metric scores averaged over the runs); ``pass_rate`` is the share of
        runs that passed and ``mean_score`` the mean of the runs' own scores — two different things,
        see ``CASE_SUMMARY_COLUMNS``. Then one column per metric, named after it, in configuration
        order followed by any other metric the results hold: its score averaged over the runs that
        evaluated it, NaN when none did.
        """
        return case_table_frame(self._case_views(), [metric.metric_name for metric in self.eval_metrics])

    @property
    def metrics(self) -> pd.DataFrame:
        """One row per (run, case, metric) with the overall metric result (columns ``METRIC_COLUMNS``)."""
        unread = self._unread()
        if unread is not None:
            return metrics_frame_of(unread.runs, unread.provenance, unread.turn_reasons)
        return metrics_frame(self.result)

    @property
    def invocations(self) -> pd.DataFrame:
        """One row per (run, case, turn, metric): the turn's texts, tool calls and verdict (``INVOCATION_COLUMNS``).

        The long form, for filtering by metric; :attr:`turns` has one row per turn instead.
        """
        return invocations_frame(self.result)

    @property
    def turns(self) -> pd.DataFrame:
        """One row per (run, case, turn): texts, tool calls, and a score column per metric (``TURN_COLUMNS``)."""
        return turns_frame(self.result, self.metric_names)

    @property
    def tool_calls(self) -> pd.DataFrame:
        """One row per tool call the agent made: its call id, name, arguments and result (``TOOL_CALL_COLUMNS``)."""
        return tool_calls_frame(self.result)

    @property
    def flakiness(self) -> pd.DataFrame:
        """One row per case: how its outcome and trajectory vary across the runs, in eval-set order.

        How many runs passed, how often the outcome flips from one run to the next (``flip_rate``),
        the spread of the run scores, where the runs' tool calls or replies first differ
        (``first_divergence``, e.g. ``turn 2, tool 1: search(q="x") vs lookup(q="x") in run 2``) and
        a ``category``: ``stable_pass``, ``stable_fail`` or ``flaky``. The columns are
        ``agenteval.analysis.diagnostics.flakiness.FLAKINESS_COLUMNS``, whose documentation defines each.
        """
        unread = self._unread()
        if unread is None:
            return flakiness_frame(self.case_summaries)
        # Only first_divergence reads turns, and only of a case with several runs: just those are read.
        cases = unread.cases
        with fewer_collections():  # the records read, with a large report alive
            return flakiness_frame(cases, lambda at: [self._record(position) for position in cases[at].positions])

    @property
    def failures(self) -> pd.DataFrame:
        """One row per failing (run, case, turn, metric), with why it failed as a ``category``.

        ``missing_tool``, ``extra_tool``, ``wrong_order``, ``wrong_arguments`` and ``wrong_result`` come
        from lining the turn's tool calls up with the expected ones as the tool-trajectory metric paired
        them (``detail`` holds the JSON path of a wrong argument or result), ``wrong_final_response``
        and ``judge_rejected`` (``detail``: the rubrics the judge rejected) from the metric's kind and
        rubric scores, ``agent_error``, ``timeout`` and ``not_evaluated`` from a case run that failed
        unscored; never from reason texts. The columns are
        ``agenteval.analysis.diagnostics.failures.FAILURE_COLUMNS``, whose documentation defines each category.
        """
        unread = self._unread()
        if unread is None:
            return failures_frame(self.result, self.eval_metrics)
        cases: list[EvalCaseResult | RunView] = []
        with fewer_collections():  # the records read, with a large report alive
            for index, run in enumerate(unread.runs):
                needed = needs_turns(run)
                if needed is False:
                    cases.append(run)
                elif needed or self._turns_may_fail(index):
                    cases.append(self._record(index))
            return failures_frame_of(cases, self.eval_metrics)

    @property
    def rubric_scores(self) -> pd.DataFrame:
        """One row per (run, case, turn, metric, rubric) for LLM-judge metrics (columns ``RUBRIC_COLUMNS``)."""
        unread = self._unread()
        if unread is None:
            return rubric_frame(self.result)
        runs = range(len(unread.runs))
        with fewer_collections():  # the records read, with a large report alive
            # A file may spell the key as the field is named: the models read both.
            return rubric_frame_of(
                self._record(index)
                for index in runs
                if self._may_hold(index, '"rubricScores"') or self._may_hold(index, '"rubric_scores"')
            )

    def _turns_may_fail(self, index: int) -> bool:
        """Whether a turn of case result ``index`` may have failed a metric, without reading the record if it can."""
        unread = self._unread()
        return unread.may_fail(index) if unread is not None else True

    def _may_hold(self, index: int, token: str) -> bool:
        """Whether the record of case result ``index`` may hold the JSON string ``token``, without reading it."""
        unread = self._unread()
        return unread.may_hold(index, token) if unread is not None else True

    async def asave(self, manager: EvalResultManager) -> str:
        """Save the result to another store (e.g. local files or MySQL) and return its id there.

        The result keeps its id, so the same evaluation has the same id in every store; a result
        without one (a re-aggregated or re-scored report) takes the id the first store gives it.
        """
        unread = self._unread()
        if isinstance(unread, _Recorded):
            saved = await unread.save(manager, self.app_name)
            if saved is not None:
                return saved
        result_id = await manager.save(self.app_name, self.result)
        if not self.result.eval_set_result_id:
            self.result.eval_set_result_id = result_id
            self.result.eval_set_result_name = self.result.eval_set_result_name or result_id
        return result_id

    def save(self, manager: EvalResultManager) -> str:
        """Synchronous twin of :meth:`asave`; works inside Jupyter too."""
        return run_sync(self.asave(manager))

    async def areaggregate(self, aggregator: EvalCaseResultAggregator | AggregatorFunction) -> EvaluationReport:
        """Async twin of :meth:`reaggregate`."""
        started = time.perf_counter()
        with fewer_collections():
            return await _derived(self, await reaggregate(self._reanalysis_data(), aggregator), started)

    def reaggregate(self, aggregator: EvalCaseResultAggregator | AggregatorFunction) -> EvaluationReport:
        """A new report whose case scores and statuses come from another case aggregator.

        Uses the stored metric results: neither the agent nor the evaluators run, so this takes
        milliseconds. Cases that failed before scoring stay failed; this report is unchanged.

        The aggregator decides each run's case score and status (the rows of :attr:`cases`,
        ``pass_rate`` and ``mean_score`` in :attr:`case_table`, and pass@k) and, with several runs,
        each case's overall status and score too: it is called once more per case with the metric
        scores averaged over the runs (``AggregationInput.runs`` holds the runs), and decides
        :attr:`case_summaries`, ``case_table["status"]`` and ``["score"]``, :attr:`overall_status`
        and the saved summary. Each call gets the case as written, the metric results and, per run,
        each turn's (``AggregationInput.metric_results_per_invocation``); ``ae.aggregation`` has
        ready aggregators for the decision across runs (``at_least_k``, ``mean_of_runs``,
        ``max_of_runs``). An aggregator that raises or returns something unusable fails only that
        case (error type ``aggregator``); the metric scores stay in the tables.

        A report without its eval set (a result the reference framework or an older agenteval wrote,
        loaded without ``eval_set=``) cannot give the cases as written: a custom aggregator then gets
        each case rebuilt from the result (its id, user and the expected turns it was scored against;
        no session state, context messages or rubrics), with a
        :class:`~agenteval.errors.MissingEvalSetWarning`. Refusing would block every aggregator that
        reads only scores, and an empty case, as before, made one that reads the case fail silently.
        Load the report with ``EvaluationReport.load(..., eval_set=...)`` to give the real cases.

        Args:
            aggregator: An :class:`~agenteval.EvalCaseResultAggregator` or a function
                ``fn(AggregationInput) -> AggregationResult`` (plain or async).

        Warns:
            MissingEvalSetWarning: The report has no eval set and ``aggregator`` is not a built-in one
                (which never reads the case).
        """
        return run_sync(self.areaggregate(aggregator))

    async def awith_thresholds(
        self,
        thresholds: Mapping[str, float],
        aggregator: EvalCaseResultAggregator | AggregatorFunction | None = None,
    ) -> EvaluationReport:
        """Async twin of :meth:`with_thresholds`."""
        started = time.perf_counter()
        with fewer_collections():
            derivation = await with_thresholds(self._reanalysis_data(), thresholds, aggregator)
            return await _derived(self, derivation, started)

    def with_thresholds(
        self,
        thresholds: Mapping[str, float],
        aggregator: EvalCaseResultAggregator | AggregatorFunction | None = None,
    ) -> EvaluationReport:
        """A new report in which the named metrics pass at new thresholds (``score >= threshold``).

        Statuses of every turn and of each case are recomputed from the stored scores, then the
        cases are aggregated again (with ``aggregator``, by default the one used originally), which
        sees the new statuses, per turn too (``AggregationInput.metric_results_per_invocation``).

        Args:
            thresholds: New threshold per metric name, e.g. ``{"final_response_avg_score": 0.8}``.
            aggregator: Case aggregator to use instead of the original.

        Warns:
            MissingEvalSetWarning: As :meth:`reaggregate` says.
        """
        return run_sync(self.awith_thresholds(thresholds, aggregator))

    @classmethod
    def from_result(
        cls, result: EvalSetResult, *, app_name: str = "", eval_set: EvalSet | None = None
    ) -> EvaluationReport:
        """A report for a saved result, ready to be displayed, compared, re-aggregated or re-scored.

        Args:
            result: The result (e.g. from a result manager's ``get``).
            app_name: The app (taken from the result's provenance when it records one).
            eval_set: The eval set, when available; re-scoring needs it.

        Raises:
            ConfigError: A case result has no ``evalId``, or no ``finalEvalStatus`` of ``passed``,
                ``failed`` or ``not_evaluated``, a negative ``runId``, or the same run of its case
                as another case result.
        """
        return report_from_result(result, app_name=app_name, eval_set=eval_set)

    @classmethod
    async def aload(
        cls, manager: EvalResultManager, app_name: str, result_id: str, *, eval_set: EvalSet | None = None
    ) -> EvaluationReport:
        """Async twin of :meth:`load` for a result manager."""
        with fewer_collections():
            return cls.from_result(await manager.get(app_name, result_id), app_name=app_name, eval_set=eval_set)

    @classmethod
    def load(
        cls,
        source: str | os.PathLike[str] | EvalResultManager,
        app_name: str = "",
        result_id: str = "",
        *,
        eval_set: EvalSet | None = None,
    ) -> EvaluationReport:
        """Read a saved result back into a report.

        A result file an evaluation wrote opens with its case results' outcomes and scores; their
        turns, the eval set and the records are read when first asked for (see the class's
        documentation), and what is wrong there (a turn edited by hand into something invalid) is
        then raised as loading the whole file would raise it. A file in another layout, and one
        loaded with ``eval_set=``, is read whole at once.

        Args:
            source: A result file (``<app>/<id>.evalset_result.json``; the app is the one its
                provenance records, else its directory's name), a bundle (:meth:`bundle`), or a
                result manager (then give ``app_name`` and ``result_id``).
            app_name: The app, for a manager (or to override the one read from a file).
            result_id: The result id, for a manager.
            eval_set: The eval set, when available; re-scoring needs it.

        Raises:
            NotFoundError: The file or result does not exist.
            ConfigError: The path is not a regular file, the file is malformed, a case result has no
                ``evalId`` or final status, has a negative ``runId`` or repeats a run of its case, or a
                manager was given without an app and id.
        """
        if not isinstance(source, str | os.PathLike):
            if not app_name or not result_id:
                raise ConfigError("loading from a result manager needs app_name and result_id")
            return run_sync(cls.aload(source, app_name, result_id, eval_set=eval_set))
        from agenteval.evalresult.local import index_result_file, load_result_file

        path = Path(source)
        if is_bundle(path):
            bundled = read_bundle(path)
            return report_from_result(
                bundled.result,
                app_name=app_name or bundled.app_name,
                eval_set=eval_set if eval_set is not None else bundled.eval_set,
                source=f"bundle {path}",
            )
        source_name = f"result file {path}"
        with fewer_collections():
            # The eval set given is checked against the one the file records, which the index leaves unread.
            read = index_result_file(path) if eval_set is None else load_result_file(path)
            shell = read.shell if isinstance(read, ResultIndex) else read
            recorded = shell.summary.provenance if shell.summary is not None else None
            guessed = recorded.app_name if recorded is not None and recorded.app_name else path.parent.name
            if isinstance(read, ResultIndex):
                return _indexed_report(read, app_name=app_name or guessed, source=source_name)
            return report_from_result(read, app_name=app_name or guessed, eval_set=eval_set, source=source_name)

    def _repr_html_(self) -> str:
        return presenter().report_html(self)

    def show_case(self, eval_id: str, run_id: int | None = None) -> HTMLView:
        """Expected and actual turns of one case side by side, with each metric's verdict.

        Args:
            eval_id: The case.
            run_id: The run to show (see :func:`agenteval.notebook.display.case_html` for the default).

        Returns:
            An HTML view that renders in Jupyter (and prints as text elsewhere).

        Raises:
            NotFoundError: No case has that id, or it has no run ``run_id``.
            ConfigError: ``run_id`` is not an int.
        """
        return presenter().case_view(self, eval_id, run_id)

    def plot(self, *, measure: bool = False) -> Figure:
        """An overview figure: score distribution, pass rates across runs and a case × metric heat map.

        In Jupyter it shows once: as the cell's value, or when the cell ends (``fig = report.plot()``
        then more code). See :func:`agenteval.notebook.plotting.plot_report`.

        Args:
            measure: In the score distribution, draw each metric's measure where it records one (a
                ROUGE F1, continuous, instead of the 0/1-per-turn score the F1 threshold gives).
        """
        figure: Figure = presenter().plot_report(self, measure)
        return figure

    def plot_flakiness(self) -> Figure:
        """Cases by flip rate across runs, the flakiest first (:func:`~agenteval.notebook.plotting.plot_flakiness`)."""
        figure: Figure = presenter().plot_flakiness(self)
        return figure

    def plot_failures(self, by: Literal["metric", "category"] = "metric") -> Figure:
        """:attr:`failures` counted in a stacked bar chart (see :func:`agenteval.notebook.plotting.plot_failures`).

        Args:
            by: ``"metric"``: one bar per metric, stacked by category; ``"category"``: one bar per
                category, stacked by metric.
        """
        figure: Figure = presenter().plot_failures(self, by)
        return figure

    def to_html(self, path: str | os.PathLike[str]) -> Path:
        """Write one self-contained HTML file (tables, plots, provenance) that opens without a kernel.

        Returns:
            The path written.
        """
        return presenter().export_report(self, Path(path))

    def bundle(self, path: str | os.PathLike[str], *, cassettes: str | os.PathLike[str] | None = None) -> Path:
        """Write the report as one file to share: ``EvaluationReport.load(path)`` restores it anywhere.

        The file (a zip archive, see :mod:`agenteval.analysis.bundle`) holds the result in the reference's
        format, the eval set and metrics, the environment it was written in (Python, platform, git
        revision, installed packages), this report as HTML and, when the evaluation recorded
        cassettes, those of its eval set, so that ``agenteval replay`` can run it again offline. The
        report it loads back can be re-scored, re-aggregated and compared with nothing else at hand.

        Args:
            path: The file to write (``report.agenteval.zip``, say); replaced atomically if it exists.
            cassettes: The cassette directory (default: the one the evaluation recorded to, if any).

        Returns:
            The path written.

        Raises:
            NotFoundError: ``cassettes`` is not a directory.
        """
        directory = Path(cassettes).expanduser() if cassettes is not None else None
        if directory is not None and not directory.is_dir():
            raise NotFoundError(f"bundle: cassettes={str(directory)!r} is not a directory")
        if directory is None and self.provenance is not None and self.provenance.cassette:
            directory = Path(self.provenance.cassette)
            if not directory.is_dir():
                warn_user(
                    f"bundle: the evaluation recorded cassettes in {str(directory)!r}, which is not here, so the bundle"
                    " holds none and cannot be replayed; pass bundle(path, cassettes=...) (for a report loaded from a"
                    " bundle: its cassettes, unpacked with agenteval.analysis.bundle.extract_cassettes)",
                    MissingCassettesWarning,
                )
                directory = None
        with tempfile.TemporaryDirectory(prefix="agenteval-bundle-") as folder:
            html = self.to_html(Path(folder) / "report.html").read_text(encoding="utf-8")
        contents = BundleContents(
            app_name=self.app_name,
            result=self.result,
            eval_set=self.eval_set,
            metrics=list(self.eval_metrics),
            html=html,
            environment=bundle_environment(),
            cassettes=directory,
        )
        return write_bundle(path, contents)

    def explore(self) -> WhatIfView:
        """A widget to try other thresholds and case rules on this report's stored scores: what if?

        A slider per metric threshold and a case rule (all metrics pass, at least k of them, or a
        weighted score of at least x) decide the cases again at once, from the stored scores (neither
        the agent nor a judge runs), as :meth:`with_thresholds` with the equivalent aggregator would;
        the widget shows the pass rates per run and per metric, the cases that flip against this
        report, and the settings as a metrics file and as that Python call. Runs that failed before
        scoring stay failed whatever the settings.

        Returns:
            An ipywidgets widget: display it in a notebook cell.
        """
        return presenter().explore(self)

    def pass_at_k(self, k: int) -> float:
        """pass@k per case: the chance that at least one of ``k`` runs of a case passes, averaged over the cases.

        Each case's estimate is the unbiased ``1 - C(n-c, k) / C(n, k)`` from its own ``n`` runs that
        passed or failed, ``c`` of which passed; the mean over the cases is how HumanEval reports
        pass@k (:func:`agenteval.analysis.passk.mean_pass_at_k`). A run in which the case errored is a failed
        run; one in which it was not evaluated is left out, and so is a case never evaluated.
        ``pass_at_k(1)`` is the mean share of runs that passed. :meth:`set_pass_at_k` counts whole runs instead.

        Raises:
            ConfigError: ``k`` is below 1 or more than the runs some case passed or failed (the
                message names that case).
        """
        return mean_pass_at_k(case_pass_nc(self._runs()), k)

    def pass_hat_k(self, k: int) -> float:
        """pass^k per case: the chance that ``k`` runs of a case all pass, averaged over the cases.

        Each case's estimate is ``C(c, k) / C(n, k)`` from its own ``n`` runs that passed or failed,
        ``c`` of which passed: tau-bench's estimator, unbiased, where the reference's ``(c / n) ** k``
        (:func:`agenteval.pass_hat_k`) overstates the chance with few runs
        (:func:`agenteval.analysis.passk.mean_pass_hat_k`). Runs and cases count as for :meth:`pass_at_k`.
        :meth:`set_pass_hat_k` counts whole runs instead.

        Raises:
            ConfigError: ``k`` is below 1 or more than the runs some case passed or failed (the
                message names that case).
        """
        return mean_pass_hat_k(case_pass_nc(self._runs()), k)

    def set_pass_at_k(self, k: int) -> float:
        """pass@k of the whole eval set: at least one of ``k`` runs drawn passed as a whole set (the reference's).

        A run passes only when no case in it failed, so with many cases this is often 0 however
        well each case does; :meth:`pass_at_k` is the per-case estimate. ``n`` and ``c`` are read
        from the multi-run summary (:func:`agenteval.analysis.passk.parse_pass_nc`).

        Raises:
            ConfigError: The result has no multi-run summary, or ``k`` is out of range.
        """
        n, c = parse_pass_nc(self.result)
        return pass_at_k(n, c, k)

    def set_pass_hat_k(self, k: int) -> float:
        """pass^k of the whole eval set, the reference's ``(c / n) ** k`` over runs that passed as a whole set.

        See :meth:`set_pass_at_k` for what counts as a passed run; :meth:`pass_hat_k` is the
        per-case estimate.

        Raises:
            ConfigError: The result has no multi-run summary, or ``k`` is out of range.
        """
        n, c = parse_pass_nc(self.result)
        return pass_hat_k(n, c, k)

    def best_of_n(self, *, judge: ChatModel, rubrics: Mapping[str, str] | None = None, num_samples: int = 1) -> BestOfN:
        """Pick each case's best run with an LLM verifier, and see whether it passes more often than run 1.

        Every two successful runs of a case are judged against each other by ``llm_verifier_pairwise``
        (a round-robin tournament: N runs cost N·(N-1)/2 judge calls per turn); the run with the most
        wins is the case's best-of-N choice. Its ``summary`` sets the share of cases whose choice passes
        the deterministic (non ``llm_*``) metrics against run 1's: what picking one of N answers with
        a verifier would gain.

        Example::

            pick = report.best_of_n(judge=OpenAIChatModel("gpt-4o-mini"))
            pick.summary    # {"best_pass_rate": 0.9, "run1_pass_rate": 0.7, ...}
            pick.table      # per case: best run, its wins, whether it and run 1 pass

        Args:
            judge: The verifier; it must return token logprobs.
            rubrics: What to grade on, rubric id to text; by default whether the task was done.
            num_samples: Judge samples per turn (majority vote).

        Raises:
            ConfigError: The report has fewer than two runs, ``num_samples`` is below 1 or ``rubrics`` is empty.
        """
        from agenteval.analysis._best_of_n import best_of_n

        runs = {summary.eval_id: summary.runs for summary in self.case_summaries}
        return run_sync(
            best_of_n(
                runs, self.inference_results, self.eval_metrics, judge=judge, rubrics=rubrics, num_samples=num_samples
            )
        )

    def summary_table(self, *, confidence: float = 0.95) -> pd.DataFrame:
        """The pass rates and each metric's mean score and measure, with confidence intervals.

        Each row's ``label`` says what it counts: ``cases passed (overall status)``, the share of the
        cases that passed or failed whose overall status passed (Wilson interval); ``runs passed
        (per-run pass rate)``, each case's share of runs that passed, averaged over the cases
        (Student-t interval; :meth:`pass_at_k` ``(1)``); then per metric its ``mean score`` (the mean
        of the per-case scores, each averaged over the runs) and, when the metric records a measure
        (a ROUGE F1, say, whose turns score 0 or 1 by the threshold), its continuous mean, in a row
        ``<metric>:<measure>`` (``mean rougeL_f1``). A measure equal to the score (an LLM judge's
        ``judge_score``) gets no row. The columns are ``agenteval.analysis.statistics.SUMMARY_COLUMNS``, whose
        documentation defines each.

        Args:
            confidence: The level of the intervals.

        Raises:
            ConfigError: ``confidence`` is not strictly between 0 and 1.
        """
        import numpy as np
        import pandas as pd

        from agenteval.analysis.statistics import SUMMARY_COLUMNS, summary_rows

        table = self.case_table
        decided = table["status"][table["status"].isin([EvalStatus.PASSED, EvalStatus.FAILED])]
        scores = {name: table[name].to_numpy(dtype=float) for name in table.columns[len(CASE_SUMMARY_COLUMNS) :]}
        run_rates = [case.passed / case.runs if case.runs else np.nan for case in case_pass_nc(self._runs())]
        measured = self.metrics.query("measure_name != ''")
        means = measured.groupby(["metric_name", "measure_name", "eval_id"], sort=False)["measure"].mean()
        measures = {}
        for metric, measure in dict.fromkeys((metric, measure) for metric, measure, _ in means.index):
            values = means.loc[(metric, measure)].reindex(table["eval_id"]).to_numpy(dtype=float)
            if metric not in scores or not np.allclose(values, scores[metric], equal_nan=True):
                measures[(str(metric), str(measure))] = values
        rows = summary_rows(decided == EvalStatus.PASSED, run_rates, scores, measures=measures, confidence=confidence)
        return pd.DataFrame.from_records(rows, columns=list(SUMMARY_COLUMNS))

    def min_detectable_effect(self, power: float = 0.8, *, confidence: float = 0.95) -> float:
        """The smallest change of the share of cases passed (overall status) that comparing this many detects.

        A comparison of two versions on these cases (:func:`agenteval.analysis.compare`) finds a change this
        large significant at ``confidence`` with probability ``power``, by a normal approximation of
        the McNemar test at this report's pass rate and number of cases that passed or failed (see
        :func:`agenteval.analysis.statistics.min_detectable_difference` for the formula; it assumes the two
        versions pass and fail independently, so it is conservative when they tend to agree). E.g.
        20 cases passing at 50% detect a change of about 46 points, 200 cases about 14: whether 20
        cases are enough depends on the change you expect.

        Args:
            power: The chance of detecting the change.
            confidence: The confidence level of the comparison's test (``alpha = 1 - confidence``).

        Returns:
            The change as a fraction (0.46 is 46 points); ``inf`` when this few cases can detect no
            change, NaN when no case passed or failed.

        Raises:
            ConfigError: ``power`` or ``confidence`` is not strictly between 0 and 1.
        """
        from agenteval.analysis.statistics import min_detectable_difference

        decided = [case.overall_status for case in self._case_views() if case.overall_status in _DECIDED]
        rate = decided.count(EvalStatus.PASSED) / len(decided) if decided else 0.0
        return min_detectable_difference(rate, len(decided), power=power, confidence=confidence)

    def __repr__(self) -> str:
        # Cheap: asyncio formats a finished task's result more often than one would think.
        unread = self._unread()
        cases = unread.statuses() if unread is not None else [case.overall_status for case in self.case_summaries]
        failed = cases.count(EvalStatus.FAILED)
        return (
            f"EvaluationReport(app={self.app_name!r}, eval_set={self.eval_set_id!r}, "
            f"status={self.overall_status.value}, cases={len(cases)}, failed={failed}, runs={self.num_runs}, "
            f"result_id={self.result_id!r}{', partial' if self.partial else ''})"
        )

    # A report made without its records (loaded, derived) holds an _Unread instead until they are read.

    def _unread(self) -> _Unread | None:
        unread: _Unread | None = self.__dict__.get("_unread_records")
        return unread

    def _read_records(self) -> None:
        """Read the records of a report made without them into its fields (those not set since)."""
        unread = self._unread()
        if unread is None:
            raise AttributeError("this EvaluationReport has no records: build it with result= and case_summaries=")
        with fewer_collections():
            records = unread.records(self)
        for name, value in zip(_Records._fields, records, strict=True):
            self.__dict__.setdefault(name, value)
        del self.__dict__["_unread_records"]
        self.__dict__.pop("_rows_by_id", None)

    def _runs(self) -> Sequence[RunView]:
        """Every case result, in the result's order: its records, or the rows of a report that has not read them."""
        unread = self._unread()
        return unread.runs if unread is not None else self.result.eval_case_results

    def _case_views(self) -> Sequence[CaseAcrossRuns]:
        unread = self._unread()
        return unread.cases if unread is not None else self.case_summaries

    def _known_provenance(self) -> Provenance | None:
        """The provenance, without its eval set for a report that has not read it."""
        unread = self._unread()
        return unread.provenance if unread is not None else self.provenance

    def _has_eval_set(self) -> bool:
        unread = self._unread()
        return unread.has_eval_set if unread is not None else self.eval_set is not None

    def _metric_results(self, index: int) -> list[EvalMetricResult]:
        unread = self._unread()
        if unread is not None:
            return unread.metric_results(index)
        return list(self.result.eval_case_results[index].overall_eval_metric_results)

    def _record(self, index: int) -> EvalCaseResult:
        unread = self._unread()
        return unread.record(index) if unread is not None else self.result.eval_case_results[index]

    def _turn_reasons(self, index: int) -> Mapping[str, str] | None:
        unread = self._unread()
        if unread is not None:
            return unread.turn_reasons(index)
        return overall_reasons(self.result.eval_case_results[index])

    def _reanalysis_data(self) -> ReportData:
        """What re-aggregating and re-thresholding read of this report, its records only when read."""
        unread = self._unread()
        runs = self._runs()
        cases: list[tuple[str, Sequence[int]]]
        if unread is not None:
            # One run: each case is decided by itself, in no order, and ordering them needs the eval set read.
            listed = unread.cases if self.num_runs > 1 else unread.unordered
            cases = [(case.eval_id, case.positions) for case in listed]
        else:
            cases = _positions(self.result.eval_case_results, self.case_summaries)
        metric_results = self._metric_results
        if unread is None:
            records = self.result.eval_case_results
            metric_results = lambda index: list(records[index].overall_eval_metric_results)  # noqa: E731
        inferences = _Inferences(self)
        return ReportData(
            app_name=self.app_name,
            eval_set_id=self.eval_set_id,
            eval_metrics=list(self.eval_metrics),
            num_runs=self.num_runs,
            aggregator=self.aggregator,
            provenance=self._known_provenance(),
            has_eval_set=self._has_eval_set(),
            runs=runs,
            cases=cases,
            metric_results=metric_results,
            record=self._record,
            eval_cases=lambda: self.eval_set.cases_by_id() if self.eval_set is not None else {},
            inference=inferences.of_run,
            last_inference=inferences.last,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportPlan:
    """What an evaluation's report is built from besides its case results: fixed before the cases run.

    Attributes:
        app_name: The app.
        eval_set_id: The eval set's id.
        eval_set: The eval set as evaluated (orders the cases; ``None`` keeps the results' order).
        metrics: The metrics the cases were scored with, in order.
        num_runs: The configured number of runs.
        aggregator: The case aggregator that decided the runs, and decides the cases across runs.
        provenance: What produced the report.
    """

    app_name: str
    eval_set_id: str
    eval_set: EvalSet | None
    metrics: Sequence[EvalMetric]
    num_runs: int
    aggregator: EvalCaseResultAggregator
    provenance: Provenance


async def build_report(
    plan: ReportPlan,
    cases: Sequence[EvalCaseResult],
    inferences: Sequence[Sequence[InferenceResult]],
    *,
    execution_time: float = 0.0,
    result_id: str = "",
    result_name: str = "",
) -> EvaluationReport:
    """The report of an evaluation (fresh, partial, re-scored or re-aggregated) from its case results.

    Each case is decided across its runs by the plan's aggregator (:func:`~agenteval.aggregation.decide_case`),
    the multi-run summary is built from those outcomes, and the result records the plan's provenance. The
    objects given become the report's: callers hand over copies they own.

    Args:
        plan: What the evaluation was: app, eval set, metrics, runs, aggregator, provenance.
        cases: Every case result of every run, each with its 1-based run id.
        inferences: What the agent did, per run (index 0 is run 1).
        execution_time: Wall time in seconds.
        result_id: The result's id (``""`` until a store gives it one).
        result_name: The result's display name (the id by default).

    Raises:
        AgentEvalError: ``summarize eval set result: ...`` when a case has no run id or an unknown status.
    """
    app_name, eval_set_id, eval_set, metrics = plan.app_name, plan.eval_set_id, plan.eval_set, plan.metrics
    by_case = _runs_by_case(cases, _case_order(eval_set))
    eval_cases = eval_set.cases_by_id() if eval_set is not None else {}
    last_inference = {inference.eval_case_id: inference for run in inferences for inference in run}
    outcomes: dict[str, CaseOutcome] = {}
    for eval_id, runs in by_case.items():
        try:
            outcomes[eval_id] = await decide_case(
                runs,
                plan.num_runs,
                plan.aggregator,
                app_name=app_name,
                eval_set_id=eval_set_id,
                eval_case=eval_cases.get(eval_id) or rebuilt_case(app_name, eval_id, runs),
                inference=last_inference.get(eval_id) or InferenceResult(eval_case_id=eval_id),
                metrics=metrics,
            )
        except AgentEvalError as exc:
            raise rewrap("summarize eval set result", exc) from exc
    return _report_of(
        plan, cases, by_case, outcomes, inferences, execution_time=execution_time, name=(result_id, result_name)
    )


async def build_recorded_report(
    plan: ReportPlan,
    records: Sequence[CaseRecord],
    inferences: Sequence[Sequence[InferenceResult]],
    *,
    execution_time: float = 0.0,
    result_id: str = "",
    result_name: str = "",
) -> EvaluationReport:
    """:func:`build_report` of case results held as records: the report holds the records, not the models.

    Its tables, summaries and derivations read the records' rows; the models are read from the records when
    something asks for them (:attr:`~EvaluationReport.result`, :attr:`~EvaluationReport.case_summaries`), and
    saving it to a store that keeps records (``save_recorded``) writes their texts as they are.

    Raises:
        AgentEvalError: As :func:`build_report`.
    """
    rows = [record.row for record in records]
    positions: dict[str, list[int]] = {}
    for position, row in enumerate(rows):
        positions.setdefault(row.eval_id, []).append(position)
    ordered = [(eval_id, positions[eval_id]) for eval_id in _in_case_order(positions, _case_order(plan.eval_set))]
    metrics = _RecordedMetrics(records)
    by_run = {
        (run_id, inference.eval_case_id): inference for run_id, run in enumerate(inferences, 1) for inference in run
    }
    last = {inference.eval_case_id: inference for run in inferences for inference in run}
    data = ReportData(
        app_name=plan.app_name,
        eval_set_id=plan.eval_set_id,
        eval_metrics=list(plan.metrics),
        num_runs=plan.num_runs,
        aggregator=plan.aggregator,
        provenance=plan.provenance,
        has_eval_set=plan.eval_set is not None,
        runs=rows,
        cases=ordered,
        metric_results=metrics.metric_results,
        record=lambda index: records[index].model,
        eval_cases=lambda: plan.eval_set.cases_by_id() if plan.eval_set is not None else {},
        inference=lambda index: (
            by_run.get((rows[index].run_id or 1, rows[index].eval_id))
            or InferenceResult(eval_case_id=rows[index].eval_id)
        ),
        last_inference=last.get,
    )
    try:
        decided = await decided_cases(data, rows, plan.aggregator)
    except AgentEvalError as exc:
        raise rewrap("summarize eval set result", exc) from exc
    outcomes = {case.eval_id: CaseOutcome(case.status, case.score, [], case.error_message) for case in decided}
    cases = [
        _CaseRow(
            case.eval_id,
            case.status,
            case.score,
            [rows[p] for p in case.positions],
            case.error_message,
            list(case.positions),
        )
        for case in decided
    ]
    # The rows again: an aggregator that read a case result may have changed it.
    shell = _result_of(plan, [record.row for record in records], outcomes, (result_id, result_name), [])
    recorded = _Recorded(plan, shell, metrics, cases, outcomes, execution_time)
    report = EvaluationReport(
        app_name=plan.app_name,
        eval_set_id=plan.eval_set_id,
        result=_LATER,
        case_summaries=_LATER,
        overall_status=summarize(case.overall_status for case in cases),
        eval_metrics=list(plan.metrics),
        inference_results=[list(run) for run in inferences],
        num_runs=plan.num_runs,
        execution_time=execution_time,
        eval_set=plan.eval_set,
        aggregator=plan.aggregator,
        provenance=plan.provenance,
    )
    report.__dict__["_unread_records"] = recorded
    return report


def _report_of(
    plan: ReportPlan,
    cases: Sequence[EvalCaseResult],
    by_case: Mapping[str, list[EvalCaseResult]],
    outcomes: Mapping[str, CaseOutcome],
    inferences: Sequence[Sequence[InferenceResult]],
    *,
    execution_time: float,
    name: tuple[str, str],
) -> EvaluationReport:
    """The report of case results whose cases are decided (``outcomes``), with the plan's provenance."""
    result = _result_of(plan, cases, outcomes, name, list(cases))
    return _assembled(
        plan.app_name,
        plan.eval_set,
        result,
        by_case,
        outcomes,
        metrics=plan.metrics,
        inferences=inferences,
        num_runs=plan.num_runs,
        aggregator=plan.aggregator,
        provenance=plan.provenance,
        execution_time=execution_time,
    )


def _result_of(
    plan: ReportPlan,
    runs: Sequence[SummarizedRun],
    outcomes: Mapping[str, CaseOutcome],
    name: tuple[str, str],
    cases: list[EvalCaseResult],
) -> EvalSetResult:
    """The result holding ``cases``, with the summary of ``runs`` (the case results or their rows) and ``outcomes``.

    Raises:
        AgentEvalError: ``summarize eval set result: ...`` when a case has no run id or an unknown status.
    """
    try:
        summary = summarize_multi_run(
            runs, plan.num_runs, outcomes, record_scores=type(plan.aggregator) is not AllPassAggregator
        )
    except AgentEvalError as exc:
        raise rewrap("summarize eval set result", exc) from exc
    result_id, result_name = name
    return EvalSetResult(
        eval_set_result_id=result_id,
        eval_set_result_name=result_name or result_id,
        eval_set_id=plan.eval_set_id,
        eval_case_results=cases,
        summary=summary.model_copy(update={"provenance": plan.provenance}),
    )


async def _derived(report: EvaluationReport, derivation: Derivation, started: float) -> EvaluationReport:
    """The report ``derivation`` made from ``report``, which began at ``started`` (``time.perf_counter()``).

    It holds the new outcomes; its records are made from ``report``'s when first read.
    """
    unread = report._unread()
    source = (unread.result_id if unread is not None else report.result.eval_set_result_id) or "an unsaved report"
    base = report._known_provenance() or Provenance(app_name=report.app_name, eval_set_id=report.eval_set_id)
    elapsed, finished_at = time.perf_counter() - started, time.time()
    # The derived scores are computed here and now: record this environment, not the original's.
    update = {
        **current_environment(),
        "aggregator": qualified_name(derivation.aggregator),
        "derived_from": f"{derivation.how} of {source}",
        # Made from a partial report, it is a report of its own: resume= carries on the partial one.
        "partial": False,
        "started_at": finished_at - elapsed,
        "finished_at": finished_at,
    }
    provenance = base.scored_with(derivation.metrics).model_copy(update=update)
    derived = _Derived(report, derivation, provenance, update)
    # From a report that has read its records, what the new one shares with it is at hand.
    read = unread is None
    made = EvaluationReport(
        app_name=report.app_name,
        eval_set_id=report.eval_set_id,
        result=_LATER,
        case_summaries=_LATER,
        overall_status=summarize(case.status for case in derivation.cases),
        eval_metrics=derivation.metrics,
        inference_results=[list(run) for run in report.inference_results] if read else _LATER,
        num_runs=report.num_runs,
        execution_time=elapsed,
        eval_set=report.eval_set if read else _LATER,
        aggregator=derivation.aggregator,
        provenance=provenance if read else _LATER,
    )
    made.__dict__["_unread_records"] = derived
    return made


def report_from_result(
    result: EvalSetResult, *, app_name: str = "", eval_set: EvalSet | None = None, source: str = ""
) -> EvaluationReport:
    """A report for a saved result (read from any store or file).

    The metrics come from the result's provenance when it has one, else from the metric results
    themselves; each case's overall status and score are those its summary records (no aggregator
    runs); the agent's turns are rebuilt from the per-turn records, so the report can be re-scored
    and re-aggregated like a fresh one. Its execution time is the span between the start and finish
    times the provenance records (``0.0``, unknown, without them).

    Args:
        result: The result.
        app_name: The app (taken from the provenance when it records one).
        eval_set: The eval set, when available; re-scoring needs it.
        source: How errors name the result (``"result file <path>"``); ``"result <id>"`` by default.

    Raises:
        ConfigError: A case result has no ``evalId``, or no ``finalEvalStatus`` of ``passed``,
            ``failed`` or ``not_evaluated``, a negative ``runId``, or the same run of its case as
            another case result (the stores load such results, but a report cannot place or
            summarize them), or ``eval_set`` is another eval set than the result's.
    """
    source = source or f"result {result.eval_set_result_id or '(without an evalSetResultId)'}"
    _check_case_results(result.eval_case_results, source)
    if eval_set is not None and eval_set.eval_set_id and eval_set.eval_set_id != result.eval_set_id:
        raise ConfigError(
            f"{source} is of eval set {result.eval_set_id!r}, but eval_set= is {eval_set.eval_set_id!r}:"
            " pass the eval set the result evaluated"
        )
    provenance = result.summary.provenance if result.summary is not None else None
    if eval_set is not None:
        warn_if_eval_set_changed(provenance, eval_set, f"{source} was loaded with eval_set=")
    elif provenance is not None:
        eval_set = provenance.eval_set
    if provenance is not None:
        metrics = list(provenance.metrics)
        app_name = app_name or provenance.app_name
    else:
        metrics = _metrics_seen_in(result.eval_case_results)
    num_runs = _num_runs(result, result.eval_case_results)
    by_case = _runs_by_case(result.eval_case_results, _case_order(eval_set))
    saved = {summary.eval_id: summary for summary in result.summary.eval_case_summaries} if result.summary else {}
    outcomes = {eval_id: recorded_case_outcome(runs, num_runs, saved.get(eval_id)) for eval_id, runs in by_case.items()}
    execution_time = _recorded_duration(provenance)
    return _assembled(
        app_name,
        eval_set,
        result,
        by_case,
        outcomes,
        metrics=metrics,
        inferences=inferences_from_result(result, app_name),
        num_runs=num_runs,
        aggregator=None,
        provenance=provenance,
        execution_time=execution_time,
    )


def warn_if_eval_set_changed(provenance: Provenance | None, eval_set: EvalSet, what: str) -> None:
    """Warn (an ``EvalSetChangedWarning``) when ``eval_set`` differs from the one ``provenance`` records.

    ``what`` says what is being done with it, e.g. ``result r1 was loaded with eval_set=``.
    """
    changed = eval_set_changes(provenance, eval_set)
    if not changed:
        return
    if changed == ["?"]:
        which = "its hash differs from the one the result records (the result does not hold its cases to say which)"
    else:
        shown = ", ".join(map(repr, changed[:10])) + (f" and {len(changed) - 10} more" if len(changed) > 10 else "")
        which = f"case(s) {shown} differ (edited, added or removed)"
    warn_user(
        f"{what} eval set {eval_set.eval_set_id!r}, which is not the one the result evaluated: {which}; scores of"
        " those cases compare the recorded turns with other expectations. Pass the eval set the result was run with,"
        " or run the changed cases again",
        EvalSetChangedWarning,
    )


def _assembled(
    app_name: str,
    eval_set: EvalSet | None,
    result: EvalSetResult,
    by_case: Mapping[str, list[EvalCaseResult]],
    outcomes: Mapping[str, CaseOutcome],
    *,
    metrics: Sequence[EvalMetric],
    inferences: Sequence[Sequence[InferenceResult]],
    num_runs: int,
    aggregator: EvalCaseResultAggregator | None,
    provenance: Provenance | None,
    execution_time: float,
) -> EvaluationReport:
    summaries = [
        CaseSummary(
            eval_id=eval_id,
            overall_status=outcomes[eval_id].status,
            score=outcomes[eval_id].score,
            runs=runs,
            metric_results=outcomes[eval_id].metric_results,
            error_message=outcomes[eval_id].error_message,
        )
        for eval_id, runs in by_case.items()
    ]
    return EvaluationReport(
        app_name=app_name,
        eval_set_id=result.eval_set_id,
        eval_set=eval_set,
        result=result,
        case_summaries=summaries,
        overall_status=summarize(summary.overall_status for summary in summaries),
        eval_metrics=list(metrics),
        inference_results=[list(run) for run in inferences],
        num_runs=num_runs,
        execution_time=execution_time,
        aggregator=aggregator,
        provenance=provenance,
    )


def _num_runs(result: EvalSetResult, runs: Sequence[RunView]) -> int:
    """How many runs a saved result has: as its summary records, else its highest run id (at least 1)."""
    recorded = result.summary.num_runs if result.summary is not None else 0
    return recorded or max((run.run_id for run in runs), default=1) or 1


def _case_order(eval_set: EvalSet | None) -> list[str] | None:
    return [case.eval_id for case in eval_set.eval_cases] if eval_set is not None else None


_R = TypeVar("_R", bound=RunView)


def _runs_by_case(cases: Sequence[_R], order: Sequence[str] | None) -> dict[str, list[_R]]:
    """Each case's results in run order, by case in the order of the eval set's case ids ``order``.

    Cases missing from the eval set come after the others, sorted by id. Without an eval set, cases
    keep the order in which they first appear (which a saved result has from its eval set).
    """
    by_case: dict[str, list[_R]] = {}
    for case in cases:
        by_case.setdefault(case.eval_id, []).append(case)
    return {eval_id: by_case[eval_id] for eval_id in _in_case_order(by_case, order)}


def _in_case_order(eval_ids: Sequence[str] | Mapping[str, object], order: Sequence[str] | None) -> list[str]:
    """``eval_ids`` in the order of the eval set's case ids ``order`` (see :func:`_runs_by_case`)."""
    if order is None:
        return list(eval_ids)
    position = {eval_id: index for index, eval_id in reversed(list(enumerate(order)))}
    return sorted(eval_ids, key=lambda eval_id: (eval_id not in position, position.get(eval_id, 0), eval_id))


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
            inference.error_type = case.error_type
        runs.setdefault(case.run_id or 1, []).append(inference)
    return [runs[run_id] for run_id in sorted(runs)]


def _without_trace(invocation: Invocation) -> Invocation:
    return invocation.model_copy(update={"execution_trace": None}) if invocation.execution_trace else invocation


_SUMMARIZABLE = (EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED)
_DECIDED = (EvalStatus.PASSED, EvalStatus.FAILED)


def _check_case_results(runs: Sequence[RunView], source: str) -> None:
    # A report places each case result as one run of one case: a second result for the same run, or
    # a run number below 1, leaves no way to tell which run a result is (pass@k, flakiness and the run
    # count would all be wrong), so such a result is refused rather than guessed at.
    placed: dict[tuple[str, int], int] = {}
    for index, case in enumerate(runs):
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
        if case.run_id < 0:
            raise ConfigError(
                f"{where} (case {case.eval_id}) has runId {case.run_id}: runs are numbered from 1 (a runId of 0, or"
                " none, stands for 1); correct it"
            )
        run = case.run_id or 1
        first = placed.setdefault((case.eval_id, run), index)
        if first != index:
            raise ConfigError(
                f"{source}: evalCaseResults[{first}] and evalCaseResults[{index}] are both run {run} of case"
                f" {case.eval_id!r}: a run holds one result per case; remove the one that does not belong"
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


def _first_metrics(index: ResultIndex) -> list[EvalMetric]:
    """What :func:`_metrics_seen_in` gives for the index's result, reading the metric results of first appearances."""
    metrics: dict[str, EvalMetric] = {}
    for position, run in enumerate(index.runs):
        names = [metric.metric_name for metric in run.overall_eval_metric_results]
        if any(name not in metrics for name in names):
            for result in index.metric_results(position):
                if result.metric_name not in metrics:
                    metrics[result.metric_name] = EvalMetric(
                        metric_name=result.metric_name, threshold=result.threshold, criterion=result.criterion
                    )
    return list(metrics.values())


class _Records(NamedTuple):
    """The fields a report made without its records reads when first asked for one."""

    result: EvalSetResult
    case_summaries: list[CaseSummary]
    inference_results: list[list[InferenceResult]]
    eval_set: EvalSet | None
    provenance: Provenance | None


def run_views(report: EvaluationReport) -> Sequence[RunView]:
    """Every case result of ``report``, in the result's order, as views read them: rows, unless its records are read.

    For the notebook's views (the HTML summary, plots), which must not read every record of a large report to
    show its outcomes; :meth:`EvaluationReport.case_results` reads the records of the cases they show in full.
    """
    return report._runs()


def case_views(report: EvaluationReport) -> Sequence[CaseAcrossRuns]:
    """Each case of ``report`` across its runs, in eval-set order, as views read it (see :func:`run_views`)."""
    return report._case_views()


class _CaseRow(NamedTuple):
    """One case across its runs, as a report that has not read its records holds it (see :class:`CaseSummary`)."""

    eval_id: str
    overall_status: EvalStatus
    score: float
    runs: list[RunRow]
    error_message: str
    positions: list[int]
    """Where its runs are among the report's case results."""


class _Unread(Protocol):
    """What a report made without its records (a loaded or derived one) holds until they are read.

    The rows of its case results and cases, and what :meth:`EvaluationReport._reanalysis_data` reads,
    are at hand; the records are made by :meth:`records`. Every method reading records raises
    the error :func:`~agenteval.analysis._reanalysis.unreadable` makes when they cannot be read.
    """

    @property
    def runs(self) -> Sequence[RunRow]: ...
    @property
    def cases(self) -> Sequence[_CaseRow]: ...
    @property
    def unordered(self) -> Sequence[_CaseRow]: ...
    @property
    def provenance(self) -> Provenance | None: ...
    @property
    def has_eval_set(self) -> bool: ...
    @property
    def result_id(self) -> str: ...
    def statuses(self) -> list[EvalStatus]: ...
    def metric_results(self, index: int) -> list[EvalMetricResult]: ...
    def record(self, index: int) -> EvalCaseResult: ...
    def turn_reasons(self, index: int) -> Mapping[str, str] | None: ...
    def may_hold(self, index: int, token: str) -> bool:
        r"""Whether the record of case result ``index`` may hold the JSON string ``token`` (a key, a status).

        ``True`` when its text does or spells something with a ``\u`` escape (which may be ``token``), when
        the record was read already (reading it again costs nothing), or when there is no text to search.
        """
        ...

    def may_fail(self, index: int) -> bool:
        """Whether a turn of case result ``index`` may have failed a metric (its status ``"failed"``)."""
        ...

    def records(self, report: EvaluationReport) -> _Records: ...


class _Loaded:
    """A report's records in a result file it has indexed (see :class:`~agenteval.evalresult.local.ResultIndex`)."""

    def __init__(self, index: ResultIndex, app_name: str, source: str, num_runs: int) -> None:
        self.index, self.app_name, self.source, self.num_runs = index, app_name, source, num_runs
        self.runs = index.runs
        summary = index.shell.summary
        self.provenance = summary.provenance if summary is not None else None
        self.has_eval_set = index.has_eval_set
        self.result_id = index.shell.eval_set_result_id
        self.unordered = self._decided()
        """Each case's outcome as the result records it, in the order the cases first appear."""
        self._cases: list[_CaseRow] | None = None

    @property
    def cases(self) -> list[_CaseRow]:
        """Each case across its runs, in the order of the eval set the result records (read when first asked)."""
        if self._cases is None:
            try:
                order = self.index.eval_case_ids()
            except ConfigError as exc:
                raise unreadable(exc) from None
            by_id = {case.eval_id: case for case in self.unordered}
            self._cases = [by_id[eval_id] for eval_id in _in_case_order(by_id, order)]
        return self._cases

    def _decided(self) -> list[_CaseRow]:
        """Each case's outcome as the result records it (see :func:`~agenteval.aggregation.recorded_case_outcome`)."""
        positions: dict[str, list[int]] = {}
        for position, run in enumerate(self.runs):
            positions.setdefault(run.eval_id, []).append(position)
        cases = []
        for eval_id, at in positions.items():
            runs = [self.runs[position] for position in at]
            decided = recorded_decision(runs, self.num_runs, self.index.decisions.get(eval_id))
            if decided is None:
                averaged = average_metric_results(
                    [RunScores(self.runs[position].error_message, self.metric_results(position)) for position in at]
                )
                verdict = all_pass(averaged)
                errored = any(run.error_message for run in runs)
                decided = fail_if_errored(verdict.status, errored), verdict.score, ""
            status, score, error_message = decided
            cases.append(_CaseRow(eval_id, status, score, runs, error_message, at))
        return cases

    def statuses(self) -> list[EvalStatus]:
        """Each case's overall status, in no particular order."""
        return [case.overall_status for case in self.unordered]

    def metric_results(self, index: int) -> list[EvalMetricResult]:
        try:
            return self.index.metric_results(index)
        except ConfigError as exc:
            raise unreadable(exc) from None

    def record(self, index: int) -> EvalCaseResult:
        try:
            return self.index.record(index)
        except ConfigError as exc:
            raise unreadable(exc) from None

    def may_hold(self, index: int, token: str) -> bool:
        return self.index.may_hold(index, token)

    def may_fail(self, index: int) -> bool:
        return self.may_hold(index, '"failed"')

    def turn_reasons(self, index: int) -> Mapping[str, str] | None:
        return overall_reasons(self.record(index))

    def records(self, report: EvaluationReport) -> _Records:
        # The same error as a load of the whole file, not the wrapper a derivation uses.
        loaded = report_from_result(self.index.result(), app_name=self.app_name, source=self.source)
        return _Records(
            loaded.result, loaded.case_summaries, loaded.inference_results, loaded.eval_set, loaded.provenance
        )


class _RecordedMetrics:
    """Case results held as records, and their metric results read from the records' texts (once per text)."""

    def __init__(self, records: Sequence[CaseRecord]) -> None:
        self.records = list(records)
        self._read: dict[str, list[EvalMetricResult]] = {}

    def metric_results(self, index: int) -> list[EvalMetricResult]:
        """The overall metric results of the case result at ``index``."""
        record = self.records[index]
        if record.read:
            return list(record.model.overall_eval_metric_results)
        text = record.metrics_text()
        made = self._read.get(text)
        if made is None:
            made = self._read[text] = metric_results_of(text)
        return list(made)


class _Recorded:
    """A fresh report's case results held as records (see :func:`build_recorded_report`)."""

    def __init__(
        self,
        plan: ReportPlan,
        shell: EvalSetResult,
        metrics: _RecordedMetrics,
        cases: list[_CaseRow],
        outcomes: Mapping[str, CaseOutcome],
        execution_time: float,
    ) -> None:
        self.plan, self.shell, self._metrics = plan, shell, metrics
        self.recorded = metrics.records
        self.cases = self.unordered = cases
        self.outcomes = outcomes
        self.execution_time = execution_time
        self.provenance = plan.provenance
        self.has_eval_set = plan.eval_set is not None

    @property
    def runs(self) -> list[RunRow]:
        """The rows of the case results (of a case result as it is now, once read)."""
        return [record.row for record in self.recorded]

    @property
    def result_id(self) -> str:
        """The result's id (set once saved)."""
        return self.shell.eval_set_result_id

    def statuses(self) -> list[EvalStatus]:
        """Each case's overall status, in eval-set order."""
        return [case.overall_status for case in self.cases]

    def metric_results(self, index: int) -> list[EvalMetricResult]:
        return self._metrics.metric_results(index)

    def record(self, index: int) -> EvalCaseResult:
        return self.recorded[index].model

    def may_hold(self, index: int, token: str) -> bool:
        text = self.recorded[index].stored_text()
        return text is None or token in text or "\\u" in text

    def may_fail(self, index: int) -> bool:
        return self.may_hold(index, '"failed"')

    def turn_reasons(self, index: int) -> Mapping[str, str] | None:
        return overall_reasons(self.record(index))

    def records(self, report: EvaluationReport) -> _Records:
        cases = [record.model for record in self.recorded]
        by_case = {case.eval_id: [cases[position] for position in case.positions] for case in self.cases}
        outcomes = {
            eval_id: CaseOutcome(
                outcome.status, outcome.score, average_metric_results(by_case[eval_id]), outcome.error_message
            )
            for eval_id, outcome in self.outcomes.items()
        }
        shell = self.shell
        made = _report_of(
            self.plan,
            cases,
            by_case,
            outcomes,
            report.inference_results,
            execution_time=self.execution_time,
            name=(shell.eval_set_result_id, shell.eval_set_result_name),
        )
        return _Records(made.result, made.case_summaries, made.inference_results, made.eval_set, made.provenance)

    async def save(self, manager: object, app_name: str) -> str | None:
        """Save the records' texts as they are, if ``manager`` keeps records (``save_recorded``): the id, or None."""
        save_recorded = twin_of_save(manager)
        if save_recorded is None:
            return None
        shell = self.shell
        if any(record.read for record in self.recorded):  # a case result read may have been changed since
            name = (shell.eval_set_result_id, shell.eval_set_result_name)
            shell = _result_of(self.plan, self.runs, self.outcomes, name, [])
        result_id: str = await save_recorded(app_name, shell, self.recorded)
        if not self.shell.eval_set_result_id:
            self.shell = self.shell.replaced(
                eval_set_result_id=result_id, eval_set_result_name=self.shell.eval_set_result_name or result_id
            )
        return result_id


def _indexed_report(index: ResultIndex, *, app_name: str, source: str) -> EvaluationReport:
    """The report of an indexed result file, as :func:`report_from_result` makes it, without its records."""
    _check_case_results(index.runs, source)
    shell = index.shell
    provenance = shell.summary.provenance if shell.summary is not None else None
    if provenance is not None:
        app_name = app_name or provenance.app_name
    loaded = _Loaded(index, app_name, source, _num_runs(shell, index.runs))
    metrics = list(provenance.metrics) if provenance is not None else _first_metrics(index)
    # The overall status does not depend on the cases' order, which needs the eval set read.
    overall = summarize(case.overall_status for case in loaded.unordered)
    execution_time = _recorded_duration(provenance)
    report = EvaluationReport(
        app_name=app_name,
        eval_set_id=shell.eval_set_id,
        result=_LATER,
        case_summaries=_LATER,
        overall_status=overall,
        eval_metrics=metrics,
        inference_results=_LATER,
        num_runs=loaded.num_runs,
        execution_time=execution_time,
        eval_set=_LATER,
        aggregator=None,
        provenance=_LATER,
    )
    report.__dict__["_unread_records"] = loaded
    return report


class _Derived:
    """A derived report's records, made from those of the report it was derived from when first read."""

    def __init__(
        self, parent: EvaluationReport, derivation: Derivation, provenance: Provenance, update: Mapping[str, Any]
    ) -> None:
        self.parent, self.derivation = parent, derivation
        self.provenance = provenance
        self.update = update
        self.runs = derivation.runs
        self._unordered: list[_CaseRow] | None = None
        self._cases: list[_CaseRow] | None = None
        self.has_eval_set = parent._has_eval_set()
        self.result_id = ""
        self._records: dict[int, EvalCaseResult] = {}

    @property
    def unordered(self) -> list[_CaseRow]:
        """Each case across its runs, in the order the derivation decided them."""
        if self._unordered is None:
            runs = self.runs
            self._unordered = [
                _CaseRow(eval_id, status, score, [runs[at] for at in positions], error_message, list(positions))
                for eval_id, positions, status, score, error_message in self.derivation.cases
            ]
        return self._unordered

    @property
    def cases(self) -> list[_CaseRow]:
        """Each case across its runs, in the order of the report it was derived from."""
        if self._cases is None:
            by_id = {case.eval_id: case for case in self.unordered}
            self._cases = [by_id[case.eval_id] for case in self.parent._case_views() if case.eval_id in by_id]
        return self._cases

    def statuses(self) -> list[EvalStatus]:
        """Each case's overall status, in no particular order."""
        return [case.status for case in self.derivation.cases]

    def metric_results(self, index: int) -> list[EvalMetricResult]:
        thresholds = self.derivation.thresholds
        results = self.parent._metric_results(index)
        return rethresholded_results(results, thresholds) if thresholds else results

    def record(self, index: int) -> EvalCaseResult:
        made = self._records.get(index)
        if made is None:
            record = self.parent._record(index)
            if self.derivation.thresholds:
                record = rethresholded(record, self.derivation.thresholds)
            made = self._records[index] = with_outcome(record, self.runs[index])
        return made

    def may_hold(self, index: int, token: str) -> bool:
        # Its records are its parent's with new outcomes and thresholds: no key or text of their own.
        return self.parent._may_hold(index, token)

    def may_fail(self, index: int) -> bool:
        # New thresholds give the turns statuses that the text of the record they come from does not hold.
        return bool(self.derivation.thresholds) or self.parent._turns_may_fail(index)

    def turn_reasons(self, index: int) -> Mapping[str, str] | None:
        return self.parent._turn_reasons(index)

    def records(self, report: EvaluationReport) -> _Records:
        parent, derivation = self.parent, self.derivation
        cases = [self.record(index) for index in range(len(self.runs))]
        by_case = {case.eval_id: [cases[at] for at in case.positions] for case in self.cases}
        outcomes = {
            case.eval_id: CaseOutcome(
                case.overall_status, case.score, average_metric_results(by_case[case.eval_id]), case.error_message
            )
            for case in self.cases
        }
        provenance = report.__dict__.get("provenance")
        if provenance is None:
            base = parent.provenance or Provenance(app_name=parent.app_name, eval_set_id=parent.eval_set_id)
            provenance = base.scored_with(derivation.metrics).model_copy(update=self.update)
        plan = ReportPlan(
            app_name=report.app_name,
            eval_set_id=report.eval_set_id,
            eval_set=report.__dict__.get("eval_set", parent.eval_set),
            metrics=derivation.metrics,
            num_runs=report.num_runs,
            aggregator=derivation.aggregator,
            provenance=provenance,
        )
        inferences = report.__dict__.get("inference_results") or [list(run) for run in parent.inference_results]
        made = _report_of(
            plan, cases, by_case, outcomes, inferences, execution_time=report.execution_time, name=("", "")
        )
        return _Records(made.result, made.case_summaries, made.inference_results, made.eval_set, made.provenance)


def _positions(runs: Sequence[EvalCaseResult], summaries: Sequence[CaseSummary]) -> list[tuple[str, Sequence[int]]]:
    """Each case's positions among ``runs``, in the order of ``summaries`` (then any case they leave out)."""
    positions: dict[str, list[int]] = {}
    for position, run in enumerate(runs):
        positions.setdefault(run.eval_id, []).append(position)
    ordered = dict.fromkeys(summary.eval_id for summary in summaries if summary.eval_id in positions)
    ordered.update(dict.fromkeys(positions))
    return [(eval_id, positions[eval_id]) for eval_id in ordered]


class _Inferences:
    """A report's inferences by (run, case), looked up once per case (not by a scan each time), read when asked."""

    def __init__(self, report: EvaluationReport) -> None:
        self.report = report
        self._by_run: dict[tuple[int, str], InferenceResult] | None = None
        self._last: dict[str, InferenceResult] | None = None

    def of_run(self, index: int) -> InferenceResult:
        """What the agent did in the case result at ``index`` (a passed empty inference when not recorded)."""
        if self._by_run is None:
            self._by_run = {}
            for run_id, run in enumerate(self.report.inference_results, start=1):
                for inference in run:
                    self._by_run.setdefault((run_id, inference.eval_case_id), inference)
        case = self.report._runs()[index]
        found = self._by_run.get((case.run_id or 1, case.eval_id))
        return found or InferenceResult(
            app_name=self.report.app_name,
            eval_set_id=getattr(case, "eval_set_id", ""),
            eval_case_id=case.eval_id,
            session_id=case.session_id,
            user_id=case.user_id,
            status=EvalStatus.PASSED,
        )

    def last(self, eval_id: str) -> InferenceResult | None:
        """What the agent did in the case's last run."""
        if self._last is None:
            self._last = {
                inference.eval_case_id: inference for run in self.report.inference_results for inference in run
            }
        return self._last.get(eval_id)


def _recorded_duration(provenance: Provenance | None) -> float:
    """The wall time a provenance records (finished minus started), ``0.0`` when it records none."""
    if provenance is None or provenance.started_at is None or provenance.finished_at is None:
        return 0.0
    return max(0.0, provenance.finished_at - provenance.started_at)
