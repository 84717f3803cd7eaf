"""Why each failing turn failed, as a category: the failure taxonomy of a result.

Categories come from the stored records, never from reason texts: a case's ``error_type``, the
kind of metric (its evaluator, or the criterion its result records), the tool-trajectory alignment
(:mod:`agenteval.analysis.diagnostics.alignment`) and a judge's rubric scores.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import astuple, dataclass
from typing import TYPE_CHECKING, Literal, get_args

from agenteval._util.gc_tuning import fewer_collections
from agenteval.analysis._frames import RunView
from agenteval.analysis.diagnostics.alignment import AlignedCall, align_tool_calls, trajectory_criterion
from agenteval.errors import ConfigError
from agenteval.evalresult.models import (
    ErrorType,
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultPerInvocation,
    EvalSetResult,
)
from agenteval.metric.models import FINAL_RESPONSE, TOOL_TRAJECTORY, EvalMetric
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FAILURE_CATEGORIES",
    "FAILURE_COLUMNS",
    "Failure",
    "FailureCategory",
    "failures_frame",
    "failures_frame_of",
    "find_failures",
    "needs_turns",
]

FailureCategory = Literal[
    "missing_tool",
    "wrong_tool",
    "extra_tool",
    "wrong_order",
    "wrong_arguments",
    "wrong_result",
    "wrong_final_response",
    "judge_rejected",
    "agent_error",
    "timeout",
    "not_evaluated",
    "other",
]

FAILURE_CATEGORIES: tuple[FailureCategory, ...] = get_args(FailureCategory)
"""Every failure category, in the order plots stack them (see ``FAILURE_COLUMNS``)."""

FAILURE_COLUMNS = ("run_id", "eval_id", "turn", "metric_name", "category", "detail", "tool", "score", "reason")
"""Columns of :attr:`~agenteval.EvaluationReport.failures`: one row per failing (run, case, turn, metric).

A row is a turn a metric failed, or a case run that failed before it could be scored (then ``turn``
is ``<NA>`` and ``metric_name`` empty); a metric that failed without failing any turn (a custom
evaluator's) has one row with ``turn`` ``<NA>``; a metric not evaluated for a turn of a failed run
has a ``not_evaluated`` row. ``category`` says why:

- ``missing_tool``: an expected tool call was not made;
- ``wrong_tool``: another tool was called in place of the expected one (``detail``: the tool called), as
  ``show_case`` marks a substituted call;
- ``extra_tool``: a call no expected call accounts for, where the metric allows none;
- ``wrong_order``: the expected call was made, out of the required order;
- ``wrong_arguments``: the tool was called with other arguments (``detail``: the JSON path of the first
  differing argument, e.g. ``$.city``);
- ``wrong_result``: the tool's result differs from the expected one (``detail``: the JSON path);
- ``wrong_final_response``: a final-response metric rejected the reply;
- ``judge_rejected``: an LLM judge scored the turn below the threshold (``detail``: the ids of the rubrics
  it scored below the threshold, joined by ``", "``);
- ``agent_error`` / ``timeout``: the agent raised, or a turn exceeded ``turn_timeout``;
- ``not_evaluated``: the case run failed for another reason before it was scored (``detail``: the error
  type: ``case``, ``simulation``, ``metric``, ``aggregator``, ``callback`` or ``other``), or the metric was
  not evaluated for the turn;
- ``other``: a metric whose failure agenteval cannot look into (a custom evaluator, a registered
  trajectory compare).

For tool categories ``tool`` names the expected tool (the actual one for ``extra_tool``). When a
turn fails in several ways, the row gives the first the metric reports: the first expected call not
matched, else the first extra call. ``score`` is the turn's score (NaN for a run that failed
unscored); ``reason`` is the stored reason or error message, to read (the message without the prefix
that repeats the row's case and session, see :attr:`~agenteval.evalresult.models.EvalCaseResult.short_error`).
"""

_TRAJECTORY_CATEGORY: Mapping[str, FailureCategory] = {
    "missing": "missing_tool",
    "reordered": "wrong_order",
    "extra": "extra_tool",
}
_ERROR_CATEGORY: Mapping[str, FailureCategory] = {ErrorType.AGENT: "agent_error", ErrorType.TIMEOUT: "timeout"}

MetricKind = Literal["trajectory", "final_response", "judge", "other"]


@dataclass(frozen=True, slots=True)
class Failure:
    """One row of :attr:`~agenteval.EvaluationReport.failures` (see ``FAILURE_COLUMNS``)."""

    run_id: int
    eval_id: str
    turn: int | None
    metric_name: str
    category: FailureCategory
    detail: str
    tool: str
    score: float
    reason: str


@dataclass(frozen=True, slots=True)
class _Verdict:
    category: FailureCategory
    detail: str = ""
    tool: str = ""


def find_failures(result: EvalSetResult, metrics: Sequence[EvalMetric] = ()) -> list[Failure]:
    """Every failing (run, case, turn, metric) of a result, with its category.

    Args:
        result: The result.
        metrics: The metrics it was scored with; their evaluators tell the kind of each metric (a
            metric not among them is known by the criterion its results record).

    Returns:
        The failures, by case result in the result's order, then by turn and metric.
    """
    return _failures(result.eval_case_results, metrics)


def failures_frame(result: EvalSetResult, metrics: Sequence[EvalMetric] = ()) -> pd.DataFrame:
    """:func:`find_failures` as a DataFrame (columns ``FAILURE_COLUMNS``; ``turn`` is a nullable int)."""
    return failures_frame_of(result.eval_case_results, metrics)


def failures_frame_of(cases: Iterable[EvalCaseResult | RunView], metrics: Sequence[EvalMetric] = ()) -> pd.DataFrame:
    """The failures of some case results as :func:`failures_frame` gives them, in the order given.

    A report that has not read its records passes the case results that may fail (see
    :func:`needs_turns`) and leaves out the others, which have no failure.

    Args:
        cases: The case results; one that failed with an error may be its row (its failure is the error,
            which the row holds), any other must be the case result itself.
        metrics: As :func:`find_failures` takes them.

    Raises:
        TypeError: A case result that did not fail with an error is given as its row.
    """
    rows = [astuple(failure) for failure in _failures(cases, metrics)]
    with fewer_collections():  # the first import of pandas, next to a large result
        import pandas as pd

    frame = pd.DataFrame.from_records(rows, columns=list(FAILURE_COLUMNS))
    texts = ("eval_id", "metric_name", "category", "detail", "tool", "reason")
    return frame.astype({"run_id": "int64", "turn": "Int64", "score": "float64"} | dict.fromkeys(texts, str))


def needs_turns(run: RunView) -> bool | None:
    """Whether the failures of a case result need its turns, as far as its row tells.

    ``False`` when it failed with an error: its one failure is the error, which the row holds. ``True``
    when it failed, or a metric failed overall: its turns say which failed (and, for a failed run, which
    metrics were not evaluated). ``None`` otherwise: it fails only if a turn failed a metric whose
    overall result passed (a mean over turns that reaches the threshold, say), which only its turns tell.
    """
    if run.error_message:
        return False
    if run.final_eval_status is EvalStatus.FAILED or any(
        metric.eval_status is EvalStatus.FAILED for metric in run.overall_eval_metric_results
    ):
        return True
    return None


def _failures(cases: Iterable[EvalCaseResult | RunView], metrics: Sequence[EvalMetric]) -> list[Failure]:
    evaluators = {metric.metric_name: metric.evaluator for metric in metrics}
    found: list[Failure] = []
    for case in cases:
        if case.error_message:
            found.append(_error_failure(case))
        elif isinstance(case, EvalCaseResult):
            found.extend(_case_failures(case, evaluators))
        else:
            raise TypeError(
                f"case {case.eval_id!r} (run {case.run_id}) did not fail with an error: give its case result,"
                " not its row"
            )
    return found


def _error_failure(case: EvalCaseResult | RunView) -> Failure:
    # Whatever was scored does not count (see scored_metric_results): the error is the failure.
    error_type = case.error_type or ErrorType.OTHER
    category = _ERROR_CATEGORY.get(error_type)
    verdict = _Verdict(category) if category is not None else _Verdict("not_evaluated", detail=error_type)
    return Failure(
        case.run_id, case.eval_id, None, "", verdict.category, verdict.detail, verdict.tool, math.nan, case.short_error
    )


def _case_failures(case: EvalCaseResult, evaluators: Mapping[str, str]) -> Iterator[Failure]:
    """The failures of a case result that did not fail with an error."""

    def failure(turn: int | None, metric: str, verdict: _Verdict, score: float, reason: str) -> Failure:
        return Failure(
            case.run_id, case.eval_id, turn, metric, verdict.category, verdict.detail, verdict.tool, score, reason
        )

    run_failed = case.final_eval_status is EvalStatus.FAILED
    failed_turns: set[str] = set()
    for number, per_turn in enumerate(case.eval_metric_result_per_invocation, start=1):
        for result in per_turn.eval_metric_results:
            if result.eval_status is EvalStatus.FAILED:
                failed_turns.add(result.metric_name)
                verdict = _classify(result, per_turn, evaluators.get(result.metric_name, ""))
            elif result.eval_status is EvalStatus.NOT_EVALUATED and run_failed:
                verdict = _Verdict("not_evaluated")
            else:
                continue
            yield failure(number, result.metric_name, verdict, result.score, _reason(result))
    for result in case.overall_eval_metric_results:
        if result.eval_status is EvalStatus.FAILED and result.metric_name not in failed_turns:
            verdict = _classify(result, None, evaluators.get(result.metric_name, ""))
            yield failure(None, result.metric_name, verdict, result.score, _reason(result))


def _reason(result: EvalMetricResult) -> str:
    return result.details.reason if result.details is not None else ""


def _metric_kind(result: EvalMetricResult, evaluator: str = "") -> MetricKind:
    """What a metric checks: by its evaluator when it is a built-in one, else by what its result records.

    A result with rubric scores or an ``llmJudge`` criterion is a judge's; otherwise the criterion
    tells (``toolTrajectory``, ``finalResponse``); anything else is ``other``.
    """
    if evaluator == TOOL_TRAJECTORY:
        return "trajectory"
    if evaluator == FINAL_RESPONSE:
        return "final_response"
    criterion = result.criterion
    if (result.details is not None and result.details.rubric_scores) or (
        criterion is not None and criterion.llm_judge is not None
    ):
        return "judge"
    if criterion is not None and criterion.tool_trajectory is not None:
        return "trajectory"
    if criterion is not None and criterion.final_response is not None:
        return "final_response"
    return "other"


def _classify(result: EvalMetricResult, turn: EvalMetricResultPerInvocation | None, evaluator: str) -> _Verdict:
    kind = _metric_kind(result, evaluator)
    if kind == "final_response":
        return _Verdict("wrong_final_response")
    if kind == "judge":
        rubrics = result.details.rubric_scores if result.details is not None else []
        return _Verdict("judge_rejected", ", ".join(r.id for r in rubrics if r.score < result.threshold))
    if kind == "trajectory" and turn is not None:
        return _trajectory_verdict(result, turn)
    return _Verdict("other")


def _trajectory_verdict(result: EvalMetricResult, turn: EvalMetricResultPerInvocation) -> _Verdict:
    criterion = trajectory_criterion(result)
    if criterion is None:
        return _Verdict("other")
    actual = turn.actual_invocation.tools if turn.actual_invocation is not None else []
    expected = turn.expected_invocation.tools if turn.expected_invocation is not None else []
    try:
        problems = align_tool_calls(actual, expected, criterion).problems
    except ConfigError:  # a registered compare decided, or one is not registered here: nothing to look into
        return _Verdict("other")
    # A custom evaluator may fail calls the criterion matches.
    return _call_verdict(problems[0]) if problems else _Verdict("other")


def _call_verdict(call: AlignedCall) -> _Verdict:
    if call.kind == "extra":
        return _Verdict("extra_tool", tool=call.actual.name if call.actual is not None else "")
    tool = call.expected.name if call.expected is not None else ""
    if call.kind == "differs":
        first = call.first_difference
        if first is None:  # a name criterion refused the same name
            return _Verdict("missing_tool", tool=tool)
        part, difference = first
        return _Verdict("wrong_arguments" if part == "arguments" else "wrong_result", difference.path, tool)
    if call.kind == "substituted":
        return _Verdict("wrong_tool", call.actual.name if call.actual is not None else "", tool)
    return _Verdict(_TRAJECTORY_CATEGORY[call.kind], tool=tool)
