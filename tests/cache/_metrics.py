"""Metrics, scripted judges and metric functions the cache tests score with."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import agenteval as ae
from agenteval.evalset.models import Invocation, RubricContent
from agenteval.evaluators.base import EvaluateResult, PerInvocationResult
from agenteval.metric.criterion import Criterion, LLMCriterion, Rubric
from agenteval.testing import ScriptedChatModel


def judged(rubric: str = "upper case") -> ae.EvalMetric:
    """An LLM-judged metric, ``judged``, with one rubric (id ``r``)."""
    return ae.EvalMetric(
        metric_name="judged",
        evaluator_name="llm_rubric_response",
        threshold=0.5,
        criterion=Criterion(llm_judge=LLMCriterion(rubrics=[Rubric(id="r", content=RubricContent(text=rubric))])),
    )


def verdict(score: int, reason: str = "") -> str:
    """A judge's answer scoring rubric ``r``."""
    return json.dumps({"rubricScores": [{"id": "r", "score": score, "reason": reason}]})


def scripted_judge(score: int = 1, reason: str = "") -> ScriptedChatModel:
    """A judge that always answers :func:`verdict` of ``score``."""
    return ScriptedChatModel([verdict(score, reason)], cycle=True)


def scoring(value: float) -> Callable[..., EvaluateResult]:
    """A metric function scoring every turn ``value`` (passed when it is not 0)."""

    def score(actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: ae.EvalMetric) -> EvaluateResult:
        status = ae.EvalStatus.PASSED if value else ae.EvalStatus.FAILED
        return EvaluateResult(
            overall_score=value,
            overall_status=status,
            per_invocation_results=[PerInvocationResult(score=value, status=status) for _ in actuals],
        )

    return score
