"""``final_response_avg_score``: the share of turns whose final response matches the expected one."""

from __future__ import annotations

from typing import ClassVar

from agenteval.evalset.models import Invocation
from agenteval.evaluators.base import TurnMatchingEvaluator
from agenteval.evaluators.matching.final_response_match import check_final_response_criterion, match_final_response
from agenteval.metric.criterion import FinalResponseCriterion
from agenteval.metric.models import EvalMetric

__all__ = ["FinalResponseEvaluator"]


class FinalResponseEvaluator(TurnMatchingEvaluator[FinalResponseCriterion]):
    """Scores each turn 1 when its final response passes every sub-criterion of ``criterion.finalResponse``.

    The overall score is the mean over turns. A mismatch reason joins the failing sub-criteria's
    reasons with ``"; "``, prefixed ``"final response mismatch: "``. Each turn's ``details.measures``
    holds what its JSON and ROUGE sub-criteria measured
    (:func:`~agenteval.evaluators.matching.final_response_match.match_final_response`).

    Named compares are looked up in the active metric registry
    (:func:`~agenteval.metric.registry.use_metric_registry`).
    """

    name: ClassVar[str] = "final_response_avg_score"
    description: ClassVar[str] = "Evaluates agent final responses against expected outputs"
    kind: ClassVar[str] = "final response"
    label: ClassVar[str] = "finalresponse"
    how_to_configure: ClassVar[str] = (
        'build the metric with ae.EvalMetric.final_response("exact"), or give it '
        "criterion=ae.criteria.Criterion(final_response=ae.criteria.FinalResponseCriterion("
        'text=ae.criteria.TextCriterion())) (in a metrics file: "criterion": {"finalResponse": {"text": {}}})'
    )

    def criterion_of(self, metric: EvalMetric) -> FinalResponseCriterion | None:
        """``criterion.final_response`` of the metric."""
        return metric.criterion.final_response if metric.criterion is not None else None

    def check_criterion(self, criterion: FinalResponseCriterion) -> None:
        """Reject an unusable criterion (see ``check_final_response_criterion``)."""
        check_final_response_criterion(criterion)

    def match_turn(
        self, actual: Invocation, expected: Invocation, criterion: FinalResponseCriterion, measures: dict[str, float]
    ) -> str | None:
        """``None`` when the turn matches, else why not; JSON and ROUGE measures go into ``measures``."""
        return match_final_response(actual, expected, criterion, measures, checked=True)

    def __repr__(self) -> str:
        return "FinalResponseEvaluator()"
