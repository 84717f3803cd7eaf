"""The DataFrames of a report: column names, dtypes and the rows, built from the stored results.

pandas is imported only when a frame is built, so ``import agenteval`` stays light.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from agenteval._util.gc_tuning import fewer_collections
from agenteval.evalresult.models import ErrorType, EvalCaseResult, EvalMetricResult, EvalSetResult
from agenteval.evalresult.provenance import Provenance
from agenteval.evalresult.summarize import MetricRow, RunRow, headline_measure, overall_reasons
from agenteval.evalset.message import Message
from agenteval.evalset.models import Invocation
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CASE_COLUMNS",
    "CASE_SUMMARY_COLUMNS",
    "INVOCATION_COLUMNS",
    "METRIC_COLUMNS",
    "RUBRIC_COLUMNS",
    "TOOL_CALL_COLUMNS",
    "TURN_COLUMNS",
    "MetricView",
    "RunView",
    "case_table_frame",
    "cases_frame",
    "cases_frame_of",
    "invocations_frame",
    "metrics_frame",
    "metrics_frame_of",
    "overall_reasons",
    "rubric_frame",
    "rubric_frame_of",
    "tool_calls_frame",
    "turns_frame",
]

CASE_COLUMNS = (
    "run_id",
    "eval_id",
    "status",
    "score",
    "error_type",
    "error_message",
    "session_id",
    "user_id",
    "cached_inference",
    "cached_scores",
)
"""Columns of :attr:`~agenteval.EvaluationReport.cases`: one row per (run, case).

``error_type`` says what failed when ``error_message`` is set: an :class:`~agenteval.ErrorType` value
(``agent``, ``timeout``, ``case``, ``simulation``, ``metric``, ``aggregator``, ``callback`` or ``other``).
``cached_inference`` says whether the agent's turns were taken from the cache (or the interrupted
evaluation resumed) instead of running the agent; ``cached_scores`` counts the metrics whose results
were taken so.
"""

CASE_SUMMARY_COLUMNS = (
    "eval_id",
    "status",
    "score",
    "num_runs",
    "runs_passed",
    "pass_rate",
    "mean_score",
    "error_type",
    "error_message",
)
"""Fixed columns of :attr:`~agenteval.EvaluationReport.case_table`: one row per case across runs.

``status`` and ``score`` are the case's overall outcome: what the case aggregator decided (with
several runs, from the metric scores averaged over the runs; see
:attr:`~agenteval.analysis.report.CaseSummary.overall_status`). ``num_runs`` counts the runs in which the case
has a result and ``runs_passed`` those whose own status is passed; ``pass_rate`` is ``runs_passed``
over the runs that passed or failed (NaN when every run was not evaluated, as in
:func:`agenteval.analysis.compare`): how often the case passed, run by run. ``mean_score`` is the mean of the
runs' own case scores, which is not the same as ``score``: with the default aggregator a case that
passed 2 runs of 3 has ``mean_score`` 0.67 and ``pass_rate`` 0.67, and its ``score`` is 1 or 0 depending
on whether its averaged metrics pass. ``error_type`` and ``error_message`` say why the case failed
with an error: the case aggregator's error across runs, else the first run that failed with one
(``run N: …`` when the case has several runs; :attr:`~agenteval.EvaluationReport.cases` has each
run's), e.g. ``aggregator`` and ``aggregate eval case result: KeyError: 'weight' (raised at
aggregators.py:12 in weighted)``; empty otherwise. One column per metric follows, named after it:
its score averaged over the runs that evaluated it (NaN when none did), including a run whose
aggregator then failed: the scores exist, only the case's verdict is missing.
"""

METRIC_COLUMNS = (
    "run_id",
    "eval_id",
    "metric_name",
    "score",
    "status",
    "threshold",
    "measure_name",
    "measure",
    "reason",
    "cached",
)
"""Columns of :attr:`~agenteval.EvaluationReport.metrics`: one row per (run, case, metric).

``measure_name`` and ``measure`` give the metric's underlying measure where it has one (a ROUGE F1, the
largest JSON number difference, a judge's score; the mean over the turns that have it), before the
threshold turns it into a pass or a fail; empty and NaN otherwise. ``reason`` lists the turns' reasons
as ``turn N: …`` for multi-turn cases (just the reason for one turn). ``cached`` says whether the result
was taken from the cache (or the interrupted evaluation resumed) instead of running the metric.
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
    "measure_name",
    "measure",
    "reason",
    "user_content",
    "actual_response",
    "expected_response",
    "actual_tools",
    "expected_tools",
)
"""Columns of :attr:`~agenteval.EvaluationReport.invocations`: one row per (run, case, turn, metric).

``turn`` is 1-based; ``actual_tools`` and ``expected_tools`` list the tool calls of the turn in call
order, each as ``{"name": …, "arguments": …}`` (``[]`` for none); ``measure_name`` and ``measure`` are the
turn's underlying measure (see ``METRIC_COLUMNS``).
"""

TURN_COLUMNS = (
    "run_id",
    "eval_id",
    "turn",
    "invocation_id",
    "user_content",
    "actual_response",
    "expected_response",
    "actual_tools",
    "expected_tools",
    "models",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
)
"""Fixed columns of :attr:`~agenteval.EvaluationReport.turns`: one row per (run, case, turn).

The same texts and tool calls as :attr:`~agenteval.EvaluationReport.invocations`, once per turn; then
what the agent's execution trace reports: ``models``, the names of the models that answered (steps of
type ``llm``, in order, without repeats, joined by ``", "``), and the turn's token usage (``<NA>`` when
not reported). One column per metric follows, named after it: the turn's score for that metric (NaN
where it was not scored).
"""

TOOL_CALL_COLUMNS = ("run_id", "eval_id", "turn", "call", "id", "name", "arguments", "result", "replayed")
"""Columns of :attr:`~agenteval.EvaluationReport.tool_calls`: one row per tool call the agent made.

``turn`` and ``call`` are 1-based (``call`` in call order within the turn); ``id`` is the call id the
agent or its framework gave (``""`` when none); ``arguments`` and ``result`` are the recorded JSON values;
``replayed`` says whether the result came from an earlier report (``tool_replay=``) instead of the tool.
"""

RUBRIC_COLUMNS = ("run_id", "eval_id", "turn", "metric_name", "rubric_id", "score", "reason")
"""Columns of :attr:`~agenteval.EvaluationReport.rubric_scores`: one row per (run, case, turn, metric, rubric)."""

_DTYPES: dict[str, Any] = {
    "run_id": "int64",
    "turn": "int64",
    "num_runs": "int64",
    "runs_passed": "int64",
    "score": "float64",
    "threshold": "float64",
    "measure": "float64",
    "pass_rate": "float64",
    "mean_score": "float64",
    "actual_tools": object,
    "expected_tools": object,
    "prompt_tokens": "Int64",
    "completion_tokens": "Int64",
    "total_tokens": "Int64",
    "call": "int64",
    "arguments": object,
    "result": object,
    "cached_inference": "bool",
    "cached_scores": "int64",
    "cached": "bool",
    "replayed": "bool",
}
"""Dtypes of the frames' columns; every other column is text."""

_DECIDED = frozenset({EvalStatus.PASSED, EvalStatus.FAILED})


class MetricView(Protocol):
    """What the tables read of an overall metric result: an :class:`EvalMetricResult` or a :class:`MetricRow`."""

    @property
    def metric_name(self) -> str: ...
    @property
    def score(self) -> float: ...
    @property
    def eval_status(self) -> EvalStatus | None: ...
    @property
    def threshold(self) -> float: ...


class RunView(Protocol):
    """What the tables read of a case result: an :class:`EvalCaseResult` or a :class:`RunRow`."""

    @property
    def eval_set_id(self) -> str: ...
    @property
    def eval_id(self) -> str: ...
    @property
    def run_id(self) -> int: ...
    @property
    def score(self) -> float: ...
    @property
    def final_eval_status(self) -> EvalStatus | None: ...
    @property
    def error_message(self) -> str: ...
    @property
    def error_type(self) -> str: ...
    @property
    def short_error(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    @property
    def user_id(self) -> str: ...
    @property
    def overall_eval_metric_results(self) -> Sequence[MetricView]: ...


class CaseAcrossRuns(Protocol):
    """What a row of the case table is made from (a :class:`~agenteval.analysis.report.CaseSummary`)."""

    @property
    def eval_id(self) -> str: ...
    @property
    def overall_status(self) -> EvalStatus: ...
    @property
    def score(self) -> float: ...
    @property
    def runs(self) -> Sequence[RunView]: ...
    @property
    def error_message(self) -> str: ...


TurnReasons = Callable[[int], Mapping[str, str] | None]
"""Each metric's reason, as the metrics table shows it, from the turns of the case result at an index
(``None`` when it has no turns: then the metric result's own reason is shown)."""


def _frame(rows: list[dict[str, Any]], columns: Sequence[str], scores: Sequence[str] = ()) -> pd.DataFrame:
    """A frame of ``rows`` whose columns have their documented dtypes, even with no rows.

    Ints are ``int64``, scores (and the ``scores`` columns) ``float64``, lists ``object`` and text
    pandas' string dtype (``object`` before pandas 3), so that concatenating an empty frame with
    another keeps the dtypes.
    """
    # The first frame imports pandas, which allocates enough to set off full collections: with a
    # large report alive, each scanned millions of objects (2.7 s at 20,000 cases).
    with fewer_collections():
        import pandas as pd

        dtypes = {column: _DTYPES.get(column, str) for column in columns} | dict.fromkeys(scores, "float64")
        return pd.DataFrame.from_records(rows, columns=list(columns)).astype(dtypes)


def _text(message: Message | None) -> str:
    return message.content if message is not None else ""


def _tool_calls(invocation: Invocation | None) -> list[dict[str, Any]]:
    """The turn's tool calls as plain records; new objects each time, so editing one cell changes no other."""
    if invocation is None:
        return []
    return [{"name": tool.name, "arguments": tool.arguments} for tool in invocation.tools]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _metric_result_columns(metric: EvalMetricResult, reason: str | None = None) -> dict[str, Any]:
    """The metric columns of :attr:`invocations` rows from one result."""
    measure_name, measure = headline_measure(metric)
    return {
        "metric_name": metric.metric_name,
        "score": metric.score,
        "status": str(metric.eval_status or ""),
        "threshold": metric.threshold,
        "measure_name": measure_name,
        "measure": measure,
        "reason": reason if reason is not None else (metric.details.reason if metric.details else ""),
    }


def _reused(provenance: Provenance | None) -> tuple[set[tuple[int, str]], set[tuple[int, str, str]]]:
    """The (run, case) inferences and (run, case, metric) scores the result took from finished work."""
    reused = provenance.reused if provenance is not None else None
    if reused is None:
        return set(), set()
    return {(run, case) for run, case in reused.inferences}, {
        (run, case, metric) for run, case, metric in reused.scores
    }


def _provenance(result: EvalSetResult) -> Provenance | None:
    return result.summary.provenance if result.summary is not None else None


def cases_frame(result: EvalSetResult) -> pd.DataFrame:
    """One row per (run, case) (``CASE_COLUMNS``)."""
    return cases_frame_of(result.eval_case_results, _provenance(result))


def cases_frame_of(runs: Iterable[RunView], provenance: Provenance | None) -> pd.DataFrame:
    """One row per (run, case) of ``runs`` (``CASE_COLUMNS``); ``provenance`` says what was reused."""
    inferences, scores = _reused(provenance)
    with fewer_collections():  # the rows' objects, with a large report alive (see _frame)
        rows = _case_rows(runs, inferences, scores)
    return _frame(rows, CASE_COLUMNS)


def _case_rows(
    runs: Iterable[RunView], inferences: set[tuple[int, str]], scores: set[tuple[int, str, str]]
) -> list[dict[str, Any]]:
    return [
        {
            "run_id": case.run_id,
            "eval_id": case.eval_id,
            "status": str(case.final_eval_status or ""),
            "score": case.score,
            "error_type": case.error_type or ("other" if case.error_message else ""),
            "error_message": case.short_error,
            "session_id": case.session_id,
            "user_id": case.user_id,
            "cached_inference": (case.run_id, case.eval_id) in inferences,
            "cached_scores": sum(
                (case.run_id, case.eval_id, metric.metric_name) in scores for metric in case.overall_eval_metric_results
            )
            if scores
            else 0,
        }
        for case in runs
    ]


def case_table_frame(summaries: Sequence[CaseAcrossRuns], metric_names: Iterable[str]) -> pd.DataFrame:
    """One row per case across runs (``CASE_SUMMARY_COLUMNS`` and a score column per metric)."""
    names = list(metric_names)
    rows = []
    with fewer_collections():  # the rows' objects, with a large report alive (see _frame)
        for summary in summaries:
            runs_passed = sum(run.final_eval_status == EvalStatus.PASSED for run in summary.runs)
            runs_decided = sum(run.final_eval_status in _DECIDED for run in summary.runs)
            scores = _metric_means(summary.runs)
            names.extend(name for name in scores if name not in names)
            error_type, error_message = _case_error(summary)
            rows.append(
                {
                    "eval_id": summary.eval_id,
                    "status": str(summary.overall_status),
                    "score": summary.score,
                    "num_runs": len(summary.runs),
                    "runs_passed": runs_passed,
                    "pass_rate": runs_passed / runs_decided if runs_decided else math.nan,
                    "mean_score": _mean([run.score for run in summary.runs]),
                    "error_type": error_type,
                    "error_message": error_message,
                    **scores,
                }
            )
    for row in rows:
        for name in names:
            row.setdefault(name, math.nan)
    return _frame(rows, [*CASE_SUMMARY_COLUMNS, *names], scores=names)


def _metric_means(runs: Sequence[RunView]) -> dict[str, float]:
    """Each metric's score averaged over the runs that evaluated it, those whose aggregator failed included.

    The case summaries leave such runs out, as the reference has no metric results for them; a table
    shows the scores that exist.
    """
    sums: dict[str, list[float]] = {}
    for run in runs:
        for result in run.overall_eval_metric_results:
            total = sums.setdefault(result.metric_name, [0.0, 0])
            if result.eval_status != EvalStatus.NOT_EVALUATED:
                total[0] += result.score
                total[1] += 1
    return {name: total / count if count else math.nan for name, (total, count) in sums.items()}


def _case_error(summary: CaseAcrossRuns) -> tuple[str, str]:
    """The error type and message of a case: its aggregator's across runs, else its first errored run's."""
    if summary.error_message:
        return ErrorType.AGGREGATOR.value, summary.error_message
    for run in summary.runs:
        if run.error_message:
            where = f"run {run.run_id}: " if len(summary.runs) > 1 else ""
            return run.error_type or ErrorType.OTHER.value, where + run.short_error
    return "", ""


def metrics_frame(result: EvalSetResult) -> pd.DataFrame:
    """One row per (run, case, metric) with the overall metric result (``METRIC_COLUMNS``)."""
    return metrics_frame_of(result.eval_case_results, _provenance(result))


def metrics_frame_of(
    runs: Sequence[RunView], provenance: Provenance | None, turn_reasons: TurnReasons | None = None
) -> pd.DataFrame:
    """One row per (run, case, metric) of ``runs`` (``METRIC_COLUMNS``).

    A case result that is a :class:`RunRow` has no turns: ``turn_reasons`` gives its reasons from
    them when they are read (for a :class:`MetricRow` whose ``reason`` is ``None``, and for metric
    results of a row).
    """
    _, scores = _reused(provenance)
    rows = []
    with fewer_collections():  # the rows' objects, with a large report alive (see _frame)
        for index, case in enumerate(runs):
            # (isinstance of a RunRow, not of a model: that one calls into pydantic's metaclass)
            reasons: Mapping[str, str] | None | object = (
                _UNREAD if isinstance(case, RunRow) else overall_reasons(cast(EvalCaseResult, case))
            )
            for metric in case.overall_eval_metric_results:
                if isinstance(metric, MetricRow) and metric.reason is not None:
                    measure_name, measure, reason = metric.measure_name, metric.measure, metric.reason
                else:
                    if reasons is _UNREAD:
                        reasons = turn_reasons(index) if turn_reasons is not None else None
                    if isinstance(metric, MetricRow):
                        measure_name, measure = metric.measure_name, metric.measure
                        reason = reasons.get(metric.metric_name, "") if isinstance(reasons, Mapping) else ""
                    else:
                        assert isinstance(metric, EvalMetricResult)
                        (measure_name, measure), reason = headline_measure(metric), _reason(metric, reasons)
                rows.append(
                    {
                        "run_id": case.run_id,
                        "eval_id": case.eval_id,
                        "metric_name": metric.metric_name,
                        "score": metric.score,
                        "status": str(metric.eval_status or ""),
                        "threshold": metric.threshold,
                        "measure_name": measure_name,
                        "measure": measure,
                        "reason": reason,
                        "cached": (case.run_id, case.eval_id, metric.metric_name) in scores,
                    }
                )
    return _frame(rows, METRIC_COLUMNS)


_UNREAD = object()
"""The turns' reasons of a row, before they are read."""


def _reason(metric: EvalMetricResult, reasons: object) -> str:
    """A result's reason as the metrics table shows it: from the turns when the case has turns."""
    if isinstance(reasons, Mapping):
        return str(reasons.get(metric.metric_name, ""))
    return metric.details.reason if metric.details is not None else ""


def _turn_columns(
    case: EvalCaseResult, number: int, actual: Invocation | None, expected: Invocation | None
) -> dict[str, Any]:
    return {
        "run_id": case.run_id,
        "eval_id": case.eval_id,
        "turn": number,
        "invocation_id": actual.invocation_id if actual else "",
        "user_content": _text(actual.user_content if actual else None),
        "actual_response": _text(actual.final_response if actual else None),
        "expected_response": _text(expected.final_response if expected else None),
        "actual_tools": _tool_calls(actual),
        "expected_tools": _tool_calls(expected),
    }


def invocations_frame(result: EvalSetResult) -> pd.DataFrame:
    """One row per (run, case, turn, metric) with the turn's texts and tools (``INVOCATION_COLUMNS``)."""
    rows = []
    for case in result.eval_case_results:
        for number, per_turn in enumerate(case.eval_metric_result_per_invocation, start=1):
            for metric in per_turn.eval_metric_results:
                turn = _turn_columns(case, number, per_turn.actual_invocation, per_turn.expected_invocation)
                rows.append(turn | _metric_result_columns(metric))
    return _frame(rows, INVOCATION_COLUMNS)


def _usage_columns(invocation: Invocation | None) -> dict[str, Any]:
    trace = invocation.execution_trace if invocation is not None else None
    usage = (trace.usage if trace is not None else None) or {}
    models = [step.node_id for step in (trace.steps or []) if step.node_type == "llm" and step.node_id] if trace else []
    return {
        "models": ", ".join(dict.fromkeys(models)),
        **{name: _token_count(usage.get(name)) for name in ("prompt_tokens", "completion_tokens", "total_tokens")},
    }


def _token_count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def tool_calls_frame(result: EvalSetResult) -> pd.DataFrame:
    """One row per tool call the agent made, in call order (``TOOL_CALL_COLUMNS``)."""
    rows = [
        {
            "run_id": case.run_id,
            "eval_id": case.eval_id,
            "turn": number,
            "call": call,
            "id": tool.id,
            "name": tool.name,
            "arguments": copy.deepcopy(tool.arguments),
            "result": copy.deepcopy(tool.result),
            "replayed": tool.was_replayed,
        }
        for case in result.eval_case_results
        for number, per_turn in enumerate(case.eval_metric_result_per_invocation, start=1)
        if per_turn.actual_invocation is not None
        for call, tool in enumerate(per_turn.actual_invocation.tools, start=1)
    ]
    return _frame(rows, TOOL_CALL_COLUMNS)


def turns_frame(result: EvalSetResult, metric_names: Iterable[str]) -> pd.DataFrame:
    """One row per (run, case, turn) with a score column per metric (``TURN_COLUMNS`` and the metrics)."""
    names = list(metric_names)
    rows = []
    for case in result.eval_case_results:
        for number, per_turn in enumerate(case.eval_metric_result_per_invocation, start=1):
            scores = {metric.metric_name: metric.score for metric in per_turn.eval_metric_results}
            names.extend(name for name in scores if name not in names)
            turn = _turn_columns(case, number, per_turn.actual_invocation, per_turn.expected_invocation)
            rows.append(turn | _usage_columns(per_turn.actual_invocation) | scores)
    for row in rows:
        for name in names:
            row.setdefault(name, math.nan)
    return _frame(rows, [*TURN_COLUMNS, *names], scores=names)


def rubric_frame(result: EvalSetResult) -> pd.DataFrame:
    """One row per (run, case, turn, metric, rubric) for LLM-judge metrics (``RUBRIC_COLUMNS``)."""
    return rubric_frame_of(result.eval_case_results)


def rubric_frame_of(cases: Iterable[EvalCaseResult]) -> pd.DataFrame:
    """:func:`rubric_frame` of some case results, in the order given (those without rubric scores add no row)."""
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
        for case in cases
        for turn, per_turn in enumerate(case.eval_metric_result_per_invocation, start=1)
        for metric in per_turn.eval_metric_results
        if metric.details is not None
        for rubric in metric.details.rubric_scores
    ]
    return _frame(rows, RUBRIC_COLUMNS)
