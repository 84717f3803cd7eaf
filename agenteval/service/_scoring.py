"""Scoring of one case: align actual and expected turns, run each metric, aggregate."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, replace

from agenteval.aggregation import AggregationInput, finite_score, run_aggregator
from agenteval.cache.reuse import CaseScores
from agenteval.context import EvalContext
from agenteval.errors import CaseFailure, ConfigError, NotFoundError, describe_exception
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import (
    ErrorType,
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultDetails,
    EvalMetricResultPerInvocation,
    RubricScore,
)
from agenteval.evalset.manager import EvalSetManager
from agenteval.evalset.message import Message
from agenteval.evalset.models import EvalCase, EvalMode, EvalSet, Invocation
from agenteval.evaluators.base import EvaluateResult, MetricEvaluator, PerInvocationResult
from agenteval.metric.case_rubrics import case_rubrics, effective_metric
from agenteval.metric.criterion import Criterion
from agenteval.metric.models import EvalMetric
from agenteval.service._inference import user_input_only
from agenteval.service.options import ServiceOptions
from agenteval.status import EvalStatus

__all__ = ["CaseOrProblem", "CriterionCopies", "cases_of", "failed_case_result", "score_case", "with_context_messages"]

_REASON_SEPARATOR = ";"
_RESULT_STATUSES = (EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED)


def failed_case_result(
    eval_set_id: str, inference: InferenceResult, error_message: str, error_type: str, run_id: int
) -> EvalCaseResult:
    """A case result for a case that could not be scored: failed, with the reason and no metrics."""
    return EvalCaseResult(
        eval_set_id=eval_set_id,
        eval_id=inference.eval_case_id,
        run_id=run_id,
        final_eval_status=EvalStatus.FAILED,
        error_message=error_message,
        error_type=error_type,
        session_id=inference.session_id,
        user_id=inference.user_id,
    )


class CriterionCopies:
    """Each metric's criterion, copied once for all the results of one evaluate call that record it.

    Criteria handed out are shared: callers must not modify them.
    """

    def __init__(self) -> None:
        self._criteria: dict[int, tuple[EvalMetric, Criterion | None]] = {}

    def criterion_of(self, metric: EvalMetric) -> Criterion | None:
        """A copy of ``metric``'s criterion, made once per metric object."""
        cached = self._criteria.get(id(metric))
        if cached is None or cached[0] is not metric:
            cached = (metric, metric.criterion.model_copy(deep=True) if metric.criterion is not None else None)
            self._criteria[id(metric)] = cached
        return cached[1]


CaseOrProblem = EvalCase | CaseFailure
"""The case an inference result is of, or why it could not be found (which fails that case alone)."""


async def cases_of(
    inferences: Sequence[InferenceResult | None], manager: EvalSetManager, app_name: str, eval_set: EvalSet | None
) -> list[CaseOrProblem | None]:
    """The case each scoreable inference result is of, found before any case is scored; ``None`` for the others.

    Cases come from ``eval_set`` when the caller holds it, else each eval set the results name is read from
    ``manager`` once (reading it per case would re-read, and for local files re-parse, the whole set each time).
    Only results whose inference passed are looked up: the others are never scored.
    """
    indexes: dict[tuple[str, str], dict[str, EvalCase] | str] = {}
    if eval_set is not None:
        indexes[(app_name, eval_set.eval_set_id)] = eval_set.cases_by_id()
    found: list[CaseOrProblem | None] = []
    for inference in inferences:
        if inference is None or inference.status != EvalStatus.PASSED:
            found.append(None)
            continue
        key = (inference.app_name, inference.eval_set_id)
        if key not in indexes:
            try:
                indexes[key] = (await manager.get(*key)).cases_by_id()
            except Exception as exc:
                indexes[key] = describe_exception(exc)
        index = indexes[key]
        case = None if isinstance(index, str) else index.get(inference.eval_case_id)
        if case is not None:
            found.append(case)
            continue
        missing = NotFoundError(f"eval case {key[0]}.{key[1]}.{inference.eval_case_id} not found")
        found.append(_not_found(inference, index if isinstance(index, str) else describe_exception(missing)))
    return found


def _not_found(inference: InferenceResult, problem: str) -> CaseFailure:
    return CaseFailure(
        f"get eval case (app={inference.app_name}, evalSetID={inference.eval_set_id}, "
        f"evalCaseID={inference.eval_case_id}): {problem}"
    )


@dataclass(slots=True)
class _Inputs:
    actuals: list[Invocation]
    expecteds: list[Invocation]


def with_context_messages(invocations: list[Invocation], messages: list[Message]) -> list[Invocation]:
    """``invocations``, each turn without context messages given the case's ``messages``."""
    if not messages:
        return invocations
    return [
        inv if inv.context_messages else inv.model_copy(update={"context_messages": list(messages)})
        for inv in invocations
    ]


def _expecteds(case: EvalCase, inference: InferenceResult) -> list[Invocation]:
    if case.expected_runner_enabled:
        if not inference.expected_inferences:
            raise CaseFailure("expected inferences are empty")
        return inference.expected_inferences
    if case.conversation_scenario is not None and case.eval_mode != EvalMode.TRACE:
        return user_input_only(inference.inferences)
    if case.eval_mode == EvalMode.TRACE:
        if case.conversation:
            return case.conversation if case.actual_conversation else user_input_only(case.conversation)
        if case.actual_conversation:
            return user_input_only(case.actual_conversation)
    elif case.conversation:
        return case.conversation
    raise CaseFailure(f"build expecteds for eval (evalCaseID={case.eval_id}): invalid eval case")


def _prepare_inputs(case: EvalCase, inference: InferenceResult) -> _Inputs:
    if case.session_input is None:
        raise CaseFailure("session input is nil")
    actuals = list(inference.inferences)
    expecteds = _expecteds(case, inference)
    if len(actuals) != len(expecteds):
        raise CaseFailure(
            f"inference count {len(actuals)} does not match expected conversation length {len(expecteds)}"
        )
    traces = inference.execution_traces
    if traces:
        if len(traces) != len(actuals):
            raise CaseFailure(f"execution trace count {len(traces)} does not match inference count {len(actuals)}")
        actuals = [a.model_copy(update={"execution_trace": t}) for a, t in zip(actuals, traces, strict=True)]
    return _Inputs(
        actuals=with_context_messages(actuals, case.context_messages),
        expecteds=with_context_messages(list(expecteds), case.context_messages),
    )


def _metric_failure(message: str) -> CaseFailure:
    return CaseFailure(message, error_type=ErrorType.METRIC)


def _lookup(options: ServiceOptions, metric: EvalMetric) -> MetricEvaluator | None:
    try:
        return options.registry.get(metric.evaluator)
    except NotFoundError:
        return None
    except Exception as exc:
        raise _metric_failure(f"get evaluator for metric {metric.evaluator}: {describe_exception(exc)}") from exc


async def _run_evaluator(evaluator: MetricEvaluator, metric: EvalMetric, inputs: _Inputs) -> EvaluateResult:
    try:
        result = evaluator.evaluate(inputs.actuals, inputs.expecteds, metric)
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:
        raise _metric_failure(f"run evaluation for metric {metric.metric_name}: {describe_exception(exc)}") from exc
    if not isinstance(result, EvaluateResult):
        raise _metric_failure(
            f"run evaluation for metric {metric.metric_name}: the evaluator returned {type(result).__name__}; "
            "return an EvaluateResult"
        )
    turns = result.per_invocation_results
    if not isinstance(turns, list | tuple):
        raise _metric_failure(
            f"run evaluation for metric {metric.metric_name}: per_invocation_results is {type(turns).__name__}; "
            "return a list with one PerInvocationResult per turn"
        )
    if len(turns) != len(inputs.actuals):
        raise _metric_failure(
            f"metric {metric.metric_name} returned {len(turns)} per-invocation results, expected {len(inputs.actuals)}"
        )
    for number, turn in enumerate(turns, start=1):
        if not isinstance(turn, PerInvocationResult):
            returned = "no result" if turn is None else type(turn).__name__
            raise _metric_failure(
                f"run evaluation for metric {metric.metric_name}: the evaluator returned {returned} for turn "
                f"{number}; return a PerInvocationResult for every turn"
            )
    named_scores = [("overall_score", result.overall_score)]
    named_scores.extend((f"per_invocation_results[{index}].score", r.score) for index, r in enumerate(turns))
    scores: list[float] = []
    for name, score in named_scores:
        finite = finite_score(score)
        if finite is None:
            raise _metric_failure(
                f"run evaluation for metric {metric.metric_name}: scores must be finite numbers (int or float), "
                f"got {name} = {score!r} ({type(score).__name__})"
            )
        scores.append(finite)
    statuses = [result.overall_status, *(r.status for r in turns)]
    if any(status not in _RESULT_STATUSES for status in statuses):
        # Unlike the reference, a bad status stops here: it would otherwise break the multi-run summary.
        raise _metric_failure(
            f"run evaluation for metric {metric.metric_name}: statuses must be passed, failed or not_evaluated, "
            f"got {[str(status) for status in statuses]}"
        )
    if any(r.details is not None and not isinstance(r.details, EvalMetricResultDetails) for r in turns):
        raise _metric_failure(
            f"run evaluation for metric {metric.metric_name}: details must be EvalMetricResultDetails or None"
        )
    # Scores as floats, in a copy: the evaluator's own objects stay as it returned them.
    return EvaluateResult(
        overall_score=scores[0],
        overall_status=result.overall_status,
        per_invocation_results=[replace(turn, score=score) for turn, score in zip(turns, scores[1:], strict=True)],
    )


def _turn_criterion(
    evaluator: MetricEvaluator, metric: EvalMetric, inputs: _Inputs, turn: int, criteria: CriterionCopies
) -> Criterion | None:
    # A plain attribute test: isinstance() against the runtime-checkable protocol costs ~10 µs per turn.
    materialize = getattr(evaluator, "materialize_criterion", None)
    if callable(materialize):
        try:
            applied: Criterion | None = materialize(metric, inputs.actuals[: turn + 1], inputs.expecteds[: turn + 1])
            return applied
        except Exception as exc:
            raise _metric_failure(
                f"materialize criterion for metric {metric.metric_name} invocation {turn}: {describe_exception(exc)}"
            ) from exc
    return criteria.criterion_of(metric)


async def score_case(
    case: EvalCase,
    inference: InferenceResult,
    metrics: Sequence[EvalMetric],
    options: ServiceOptions,
    criteria: CriterionCopies,
    context: EvalContext,
    run_id: int,
    scores: CaseScores | None = None,
) -> EvalCaseResult:
    """Score one successfully inferred case with every metric, then aggregate; the result is of run ``run_id``.

    A metric whose result ``scores`` holds is not run; the others' results are given to ``scores`` to keep.

    Raises:
        CaseFailure: Anything that fails the case (reference messages).
    """
    try:
        inputs = _prepare_inputs(case, inference)
    except CaseFailure as failure:
        raise CaseFailure(f"prepare case evaluation inputs (evalCaseID={inference.eval_case_id}): {failure}") from None
    try:
        rubrics = case_rubrics(case, metrics)
    except ConfigError as exc:
        raise CaseFailure(str(exc)) from None
    # The results are built without validation (model_construct): every value below is checked or
    # made here, and validating tens of models per case was most of the scoring time.
    per_turn = [
        EvalMetricResultPerInvocation.trusted(
            actual_invocation=actual, expected_invocation=expected, eval_metric_results=[]
        )
        for actual, expected in zip(inputs.actuals, inputs.expecteds, strict=True)
    ]
    overall: list[EvalMetricResult] = []
    effective_metrics: list[EvalMetric] = []
    for configured in metrics:
        evaluator = _lookup(options, configured)
        if evaluator is None:
            continue
        try:
            metric = effective_metric(case.eval_id, configured, rubrics.get(configured.metric_name, []))
        except ConfigError as exc:
            raise CaseFailure(str(exc)) from None
        result = scores.get(configured) if scores is not None else None
        if result is None:
            result = await _run_evaluator(evaluator, metric, inputs)
            if scores is not None:
                scores.put(configured, result)
        effective_metrics.append(metric)
        reasons: list[str] = []
        rubric_scores: list[RubricScore] = []
        measures: dict[str, list[float]] = {}
        for turn, turn_result in enumerate(result.per_invocation_results):
            details = turn_result.details
            if details is not None:
                reasons.append(details.reason)
                rubric_scores.extend(details.rubric_scores)
                for name, value in details.measures.items():
                    measures.setdefault(name, []).append(value)
            per_turn[turn].eval_metric_results.append(
                EvalMetricResult.trusted(
                    metric_name=metric.metric_name,
                    threshold=metric.threshold,
                    criterion=_turn_criterion(evaluator, metric, inputs, turn, criteria),
                    score=turn_result.score,
                    eval_status=EvalStatus(turn_result.status),
                    details=details,
                )
            )
        overall.append(
            EvalMetricResult.trusted(
                metric_name=metric.metric_name,
                threshold=metric.threshold,
                criterion=criteria.criterion_of(metric),
                score=result.overall_score,
                eval_status=EvalStatus(result.overall_status),
                details=EvalMetricResultDetails.trusted(
                    reason=_REASON_SEPARATOR.join(reasons),
                    score=result.overall_score,
                    value=None,
                    rubric_scores=list(rubric_scores),
                    # The case's measure is the mean over the turns that have it (an agenteval extension).
                    measures={name: sum(values) / len(values) for name, values in measures.items()},
                ),
            )
        )
    if scores is not None:
        scores.flush()
    try:
        aggregation = await run_aggregator(
            options.aggregator,
            AggregationInput(
                app_name=inference.app_name,
                eval_set_id=inference.eval_set_id,
                eval_case=case,
                inference_result=inference,
                eval_metrics=effective_metrics,
                metric_results=overall,
                metric_results_per_invocation=per_turn,
                context=context,
            ),
        )
    except Exception as exc:
        # Unlike the reference, the metric results are kept: a corrected aggregator can then be
        # tried on them (EvaluationReport.reaggregate) without scoring the case again.
        return EvalCaseResult.trusted(
            eval_set_id=inference.eval_set_id,
            eval_id=inference.eval_case_id,
            run_id=run_id,
            final_eval_status=EvalStatus.FAILED,
            error_message=describe_exception(exc),
            error_type=ErrorType.AGGREGATOR.value,
            overall_eval_metric_results=overall,
            eval_metric_result_per_invocation=per_turn,
            session_id=inference.session_id,
            user_id=inference.user_id,
        )
    assert case.session_input is not None
    return EvalCaseResult.trusted(
        eval_set_id=inference.eval_set_id,
        eval_id=inference.eval_case_id,
        run_id=run_id,
        score=aggregation.score,
        final_eval_status=aggregation.status,
        overall_eval_metric_results=overall,
        eval_metric_result_per_invocation=per_turn,
        session_id=inference.session_id,
        user_id=case.session_input.user_id,
    )
