"""What an evaluation returns: the saved result, per-case outcomes across runs, and DataFrames."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval._async import run_sync
from agenteval._gc import fewer_collections
from agenteval.errors import ConfigError
from agenteval.evalresult.manager import EvalResultManager
from agenteval.evalresult.models import EvalCaseResult, EvalMetricResult, EvalSetResult
from agenteval.evalset.message import Message
from agenteval.evalset.models import EvalSet, Invocation
from agenteval.metric.models import EvalMetric
from agenteval.passk import parse_pass_nc, pass_at_k, pass_hat_k
from agenteval.provenance import Provenance, read_provenance
from agenteval.service.aggregation import AggregatorFunction, EvalCaseResultAggregator
from agenteval.service.types import InferenceResult
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from agenteval.notebook._html import HTML as HTMLText

__all__ = [
    "CASE_COLUMNS",
    "CASE_SUMMARY_COLUMNS",
    "INVOCATION_COLUMNS",
    "METRIC_COLUMNS",
    "RUBRIC_COLUMNS",
    "CaseSummary",
    "EvaluationReport",
]

CASE_COLUMNS = ("run_id", "eval_id", "status", "score", "error_message", "session_id", "user_id")
"""Columns of :attr:`EvaluationReport.cases`: one row per (run, case)."""

CASE_SUMMARY_COLUMNS = ("eval_id", "status", "num_runs", "runs_passed", "pass_rate", "mean_score")
"""Fixed columns of :attr:`EvaluationReport.case_table`: one row per case across runs.

``status`` is the case's overall status (see :attr:`CaseSummary.overall_status`); ``num_runs`` counts
the runs in which the case has a result, ``runs_passed`` those whose final status is passed;
``pass_rate`` is ``runs_passed`` over the runs that passed or failed (NaN when every run was not
evaluated, as in :func:`agenteval.compare`) and ``mean_score`` the mean of the runs' case scores.
One column per metric follows, named after it: its score averaged over the runs that evaluated it
(NaN when none did).
"""

METRIC_COLUMNS = ("run_id", "eval_id", "metric_name", "score", "status", "threshold", "reason")
"""Columns of :attr:`EvaluationReport.metrics`: one row per (run, case, metric).

``reason`` lists the turns' reasons as ``turn N: …`` for multi-turn cases (just the reason for one turn).
"""

INVOCATION_COLUMNS = (
    "run_id",
    "eval_id",
    "turn",
    "invocation_id",
    "metric_name",
    "score",
    "status",
    "threshold",
    "reason",
    "user_content",
    "actual_response",
    "expected_response",
    "actual_tools",
    "expected_tools",
)
"""Columns of :attr:`EvaluationReport.invocations`: one row per (run, case, turn, metric).

``turn`` is 1-based; ``actual_tools`` and ``expected_tools`` list the names of the tools called in
the turn, in call order (``[]`` for none).
"""

RUBRIC_COLUMNS = ("run_id", "eval_id", "turn", "metric_name", "rubric_id", "score", "reason")
"""Columns of :attr:`EvaluationReport.rubric_scores`: one row per (run, case, turn, metric, rubric)."""


@dataclass(slots=True, kw_only=True)
class CaseSummary:
    """One case across all runs (the reference facade's ``EvaluationCaseResult``)."""

    eval_id: str
    """The case."""
    overall_status: EvalStatus
    """With one run, the case's status; with several, whether its averaged metrics pass."""
    runs: list[EvalCaseResult]
    """The case's result in each run, in run order."""
    metric_results: list[EvalMetricResult]
    """Each metric's score averaged over the runs that evaluated it, in configuration order."""


def _text(message: Message | None) -> str:
    return message.content if message is not None else ""


_DECIDED = frozenset({EvalStatus.PASSED, EvalStatus.FAILED})


def _tool_names(invocation: Invocation | None) -> list[str]:
    return [tool.name for tool in invocation.tools] if invocation is not None else []


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


_DTYPES: dict[str, Any] = {
    "run_id": "int64",
    "turn": "int64",
    "num_runs": "int64",
    "runs_passed": "int64",
    "score": "float64",
    "threshold": "float64",
    "pass_rate": "float64",
    "mean_score": "float64",
    "actual_tools": object,
    "expected_tools": object,
}
"""Dtypes of the frames' columns; every other column is text."""


def _frame(rows: list[dict[str, Any]], columns: Sequence[str], scores: Sequence[str] = ()) -> pd.DataFrame:
    """A frame of ``rows`` whose columns have their documented dtypes, even with no rows.

    Ints are ``int64``, scores (and the ``scores`` columns) ``float64``, lists ``object`` and text
    pandas' string dtype (``object`` before pandas 3), so that concatenating an empty frame with
    another keeps the dtypes.
    """
    import pandas as pd

    dtypes = {column: _DTYPES.get(column, str) for column in columns} | dict.fromkeys(scores, "float64")
    return pd.DataFrame.from_records(rows, columns=list(columns)).astype(dtypes)


def _metric_result_columns(metric: EvalMetricResult, reason: str | None = None) -> dict[str, Any]:
    """The columns of :attr:`EvaluationReport.metrics` and :attr:`EvaluationReport.invocations` from one result."""
    return {
        "metric_name": metric.metric_name,
        "score": metric.score,
        "status": str(metric.eval_status or ""),
        "threshold": metric.threshold,
        "reason": reason if reason is not None else (metric.details.reason if metric.details else ""),
    }


def _overall_reason(case: EvalCaseResult, metric_name: str) -> str | None:
    """A readable overall reason: each turn's reason with its turn number, empty ones left out.

    The stored overall reason is the reference's: per-turn reasons joined by ``;``, empty ones
    included, which reads as ``;`` or ``;tool trajectory mismatch…`` for multi-turn cases.
    """
    turns = case.eval_metric_result_per_invocation
    if not turns:
        return None
    reasons = [
        (number, result.details.reason)
        for number, turn in enumerate(turns, start=1)
        for result in turn.eval_metric_results
        if result.metric_name == metric_name and result.details is not None and result.details.reason
    ]
    if len(turns) == 1:
        return reasons[0][1] if reasons else ""
    return "; ".join(f"turn {number}: {reason}" for number, reason in reasons)


@dataclass(slots=True, kw_only=True)
class EvaluationReport:
    """The outcome of :meth:`agenteval.Evaluator.evaluate`.

    The persisted :attr:`result` holds every case of every run; the DataFrames flatten it for
    analysis (their columns are listed in ``CASE_COLUMNS``, ``CASE_SUMMARY_COLUMNS``,
    ``METRIC_COLUMNS``, ``INVOCATION_COLUMNS`` and ``RUBRIC_COLUMNS``). The inference results are
    kept so that metrics can be re-scored without running the agent again.
    """

    app_name: str
    """The app evaluated."""
    eval_set_id: str
    """The eval set evaluated."""
    result: EvalSetResult
    """The saved result (its id is set once saved)."""
    case_summaries: list[CaseSummary]
    """Per-case outcome across runs, in eval-set order."""
    overall_status: EvalStatus
    """Passed when no case failed and at least one passed."""
    eval_metrics: list[EvalMetric] = field(default_factory=list)
    """The metrics the cases were scored with, in order."""
    inference_results: list[list[InferenceResult]] = field(default_factory=list)
    """What the agent did, per run (index 0 is run 1)."""
    num_runs: int = 1
    """How many times each case ran."""
    execution_time: float = 0.0
    """Wall time of the evaluation in seconds; ``0.0`` when unknown.

    A loaded report takes it from the start and finish times its provenance records; a
    re-aggregated or re-thresholded one holds the time the derivation took.
    """
    eval_set: EvalSet | None = None
    """The eval set as evaluated (``None`` for a report loaded from a result alone)."""
    aggregator: EvalCaseResultAggregator | None = None
    """The case aggregator that decided the case statuses (``None`` when unknown)."""
    provenance: Provenance | None = None
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
        for case in self.result.eval_case_results:
            for metric in case.overall_eval_metric_results:
                if metric.metric_name not in seen:
                    seen.add(metric.metric_name)
                    names.append(metric.metric_name)
        return names

    @property
    def cases(self) -> pd.DataFrame:
        """One row per (run, case): status, score and error message (columns ``CASE_COLUMNS``)."""
        rows = [
            {
                "run_id": case.run_id,
                "eval_id": case.eval_id,
                "status": str(case.final_eval_status or ""),
                "score": case.score,
                "error_message": case.error_message,
                "session_id": case.session_id,
                "user_id": case.user_id,
            }
            for case in self.result.eval_case_results
        ]
        return _frame(rows, CASE_COLUMNS)

    @property
    def case_table(self) -> pd.DataFrame:
        """One row per case across runs, in eval-set order (the rows of :attr:`case_summaries`).

        Columns: ``eval_id``; ``status``, the case's overall status; ``num_runs``, the runs in which
        the case has a result; ``runs_passed``, those whose final status is passed; ``pass_rate``,
        ``runs_passed`` over the runs that passed or failed (NaN if none did); ``mean_score``, the
        mean of the runs' case scores (the fixed columns are ``CASE_SUMMARY_COLUMNS``). Then one
        column per metric, named after it, in
        configuration order followed by any other metric the results hold: the metric's score
        averaged over the runs that evaluated it, NaN when none did.
        """
        names = [metric.metric_name for metric in self.eval_metrics]
        for summary in self.case_summaries:
            for result in summary.metric_results:
                if result.metric_name not in names:
                    names.append(result.metric_name)
        rows = []
        for summary in self.case_summaries:
            runs_passed = sum(run.final_eval_status == EvalStatus.PASSED for run in summary.runs)
            runs_decided = sum(run.final_eval_status in _DECIDED for run in summary.runs)
            scores = {result.metric_name: result.score for result in summary.metric_results}
            rows.append(
                {
                    "eval_id": summary.eval_id,
                    "status": str(summary.overall_status),
                    "num_runs": len(summary.runs),
                    "runs_passed": runs_passed,
                    "pass_rate": runs_passed / runs_decided if runs_decided else math.nan,
                    "mean_score": _mean([run.score for run in summary.runs]),
                    **{name: scores.get(name, math.nan) for name in names},
                }
            )
        return _frame(rows, [*CASE_SUMMARY_COLUMNS, *names], scores=names)

    @property
    def metrics(self) -> pd.DataFrame:
        """One row per (run, case, metric) with the overall metric result (columns ``METRIC_COLUMNS``)."""
        rows = [
            {
                "run_id": case.run_id,
                "eval_id": case.eval_id,
                **_metric_result_columns(metric, _overall_reason(case, metric.metric_name)),
            }
            for case in self.result.eval_case_results
            for metric in case.overall_eval_metric_results
        ]
        return _frame(rows, METRIC_COLUMNS)

    @property
    def invocations(self) -> pd.DataFrame:
        """One row per (run, case, turn, metric) with the turn's texts and tools (columns ``INVOCATION_COLUMNS``)."""
        rows = []
        for case in self.result.eval_case_results:
            for turn, per_turn in enumerate(case.eval_metric_result_per_invocation, start=1):
                actual = per_turn.actual_invocation
                expected = per_turn.expected_invocation
                actual_tools, expected_tools = _tool_names(actual), _tool_names(expected)
                for metric in per_turn.eval_metric_results:
                    rows.append(
                        {
                            "run_id": case.run_id,
                            "eval_id": case.eval_id,
                            "turn": turn,
                            "invocation_id": actual.invocation_id if actual else "",
                            **_metric_result_columns(metric),
                            "user_content": _text(actual.user_content if actual else None),
                            "actual_response": _text(actual.final_response if actual else None),
                            "expected_response": _text(expected.final_response if expected else None),
                            # Copies, so that editing one cell does not change the turn's other rows.
                            "actual_tools": list(actual_tools),
                            "expected_tools": list(expected_tools),
                        }
                    )
        return _frame(rows, INVOCATION_COLUMNS)

    @property
    def rubric_scores(self) -> pd.DataFrame:
        """One row per (run, case, turn, metric, rubric) for LLM-judge metrics (columns ``RUBRIC_COLUMNS``)."""
        rows = [
            {
                "run_id": case.run_id,
                "eval_id": case.eval_id,
                "turn": turn,
                "metric_name": metric.metric_name,
                "rubric_id": rubric.id,
                "score": rubric.score,
                "reason": rubric.reason,
            }
            for case in self.result.eval_case_results
            for turn, per_turn in enumerate(case.eval_metric_result_per_invocation, start=1)
            for metric in per_turn.eval_metric_results
            if metric.details is not None
            for rubric in metric.details.rubric_scores
        ]
        return _frame(rows, RUBRIC_COLUMNS)

    async def asave(self, manager: EvalResultManager) -> str:
        """Save the result to another store (e.g. local files or MySQL) and return its id there.

        The result keeps its id, so the same evaluation has the same id in every store; a result
        without one (a re-aggregated or re-scored report) takes the id the first store gives it.
        """
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
        from agenteval.reanalysis import reaggregate

        with fewer_collections():
            return await reaggregate(self, aggregator)

    def reaggregate(self, aggregator: EvalCaseResultAggregator | AggregatorFunction) -> EvaluationReport:
        """A new report whose case scores and statuses come from another case aggregator.

        Uses the stored metric results: neither the agent nor the evaluators run, so this takes
        milliseconds. Cases that failed before scoring stay failed; this report is unchanged.

        With several runs, the aggregator decides each run's case score and status (the rows of
        :attr:`cases`, ``pass_rate`` and ``mean_score`` in :attr:`case_table`, and pass@k), but not
        a case's overall status: as in the reference framework's multi-run summary, that follows
        the metric scores averaged over the runs (:attr:`case_summaries`, ``case_table["status"]``,
        :attr:`overall_status`). With one run the aggregator decides the overall status too.

        Args:
            aggregator: An :class:`~agenteval.EvalCaseResultAggregator` or a function
                ``fn(AggregationInput) -> AggregationResult`` (plain or async).
        """
        return run_sync(self.areaggregate(aggregator))

    async def awith_thresholds(
        self,
        thresholds: Mapping[str, float],
        aggregator: EvalCaseResultAggregator | AggregatorFunction | None = None,
    ) -> EvaluationReport:
        """Async twin of :meth:`with_thresholds`."""
        from agenteval.reanalysis import with_thresholds

        with fewer_collections():
            return await with_thresholds(self, thresholds, aggregator)

    def with_thresholds(
        self,
        thresholds: Mapping[str, float],
        aggregator: EvalCaseResultAggregator | AggregatorFunction | None = None,
    ) -> EvaluationReport:
        """A new report in which the named metrics pass at new thresholds (``score >= threshold``).

        Statuses of every turn and of each case are recomputed from the stored scores, then the
        cases are aggregated again (with ``aggregator``, by default the one used originally).

        Args:
            thresholds: New threshold per metric name, e.g. ``{"final_response_avg_score": 0.8}``.
            aggregator: Case aggregator to use instead of the original.
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
                ``failed`` or ``not_evaluated``.
        """
        from agenteval.reanalysis import report_from_result

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

        Args:
            source: A result file (``<app>/<id>.evalset_result.json``; the app is the one its
                provenance records, else its directory's name), or a result manager (then give
                ``app_name`` and ``result_id``).
            app_name: The app, for a manager (or to override the one read from a file).
            result_id: The result id, for a manager.
            eval_set: The eval set, when available; re-scoring needs it.

        Raises:
            NotFoundError: The file or result does not exist.
            ConfigError: The file is malformed, a case result has no ``evalId`` or final status, or a
                manager was given without an app and id.
        """
        if not isinstance(source, str | os.PathLike):
            if not app_name or not result_id:
                raise ConfigError("loading from a result manager needs app_name and result_id")
            return run_sync(cls.aload(source, app_name, result_id, eval_set=eval_set))
        from agenteval.evalresult.local import load_result_file
        from agenteval.reanalysis import report_from_result

        path = Path(source)
        with fewer_collections():
            result = load_result_file(path)
            recorded = read_provenance(result)
            guessed = recorded.app_name if recorded is not None and recorded.app_name else path.parent.name
            return report_from_result(
                result, app_name=app_name or guessed, eval_set=eval_set, source=f"result file {path}"
            )

    def _repr_html_(self) -> str:
        from agenteval.notebook.display import report_html

        return report_html(self)

    def show_case(self, eval_id: str, run_id: int | None = None) -> HTMLText:
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
        from agenteval.notebook._html import HTML
        from agenteval.notebook.display import case_html

        return HTML(case_html(self, eval_id, run_id))

    def plot(self) -> Figure:
        """An overview figure: score distribution, pass rates across runs and a case × metric heat map."""
        from agenteval.plotting import plot_report

        return plot_report(self)

    def to_html(self, path: str | os.PathLike[str]) -> Path:
        """Write one self-contained HTML file (tables, plots, provenance) that opens without a kernel.

        Returns:
            The path written.
        """
        from agenteval.notebook.html_export import export_html

        return export_html(self, Path(path))

    def pass_at_k(self, k: int) -> float:
        """Probability that at least one of ``k`` runs drawn from this evaluation passed as a whole set."""
        n, c = parse_pass_nc(self.result)
        return pass_at_k(n, c, k)

    def pass_hat_k(self, k: int) -> float:
        """Probability that ``k`` runs drawn with replacement all passed as a whole set."""
        n, c = parse_pass_nc(self.result)
        return pass_hat_k(n, c, k)

    def __repr__(self) -> str:
        cases = len(self.case_summaries)
        failed = sum(1 for case in self.case_summaries if case.overall_status is EvalStatus.FAILED)
        return (
            f"EvaluationReport(app={self.app_name!r}, eval_set={self.eval_set_id!r}, "
            f"status={self.overall_status.value}, cases={cases}, failed={failed}, runs={self.num_runs}, "
            f"result_id={self.result.eval_set_result_id!r})"
        )
