"""``final_response_avg_score``: the share of turns whose final response matches the expected one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from agenteval.evalset.models import Invocation
from agenteval.evaluators.base import EvaluateResult, checked_criterion, score_matching_turns
from agenteval.evaluators.criteria.final_response import check_final_response_criterion, match_final_response
from agenteval.metric.criterion import FinalResponseCriterion
from agenteval.metric.models import EvalMetric

__all__ = ["FinalResponseEvaluator"]

_KIND = "final response"


def _criterion(metric: EvalMetric) -> FinalResponseCriterion | None:
    return metric.criterion.final_response if metric.criterion is not None else None


class FinalResponseEvaluator:
    """Scores each turn 1 when its final response passes every sub-criterion of ``criterion.finalResponse``.

    The overall score is the mean over turns. A mismatch reason joins the failing sub-criteria's
    reasons with ``"; "``, prefixed ``"final response mismatch: "``.
    """

    name: ClassVar[str] = "final_response_avg_score"
    description: ClassVar[str] = "Evaluates agent final responses against expected outputs"

    def evaluate(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> EvaluateResult:
        """Score the turns of one case.

        Named compares are looked up in the active metric registry
        (:func:`~agenteval.metric.registry.use_metric_registry`).

        Raises:
            ConfigError: No final response criterion, an unusable criterion (an unknown
                ``compareName`` or ``tokenizerName``, an invalid schema…), a compare that raised,
                or turn counts differ.
        """
        return score_matching_turns(
            actuals,
            expecteds,
            metric,
            _criterion(metric),
            kind=_KIND,
            check=check_final_response_criterion,
            match=match_final_response,
            label="finalresponse",
        )

    def check_metric(self, metric: EvalMetric) -> None:
        """Reject the metric before any case runs, by the criterion check :meth:`evaluate` starts with.

        Raises:
            ConfigError: No final response criterion, or one
                :func:`~agenteval.evaluators.criteria.check_final_response_criterion` rejects.
        """
        checked_criterion(_criterion(metric), kind=_KIND, check=check_final_response_criterion)

    def __repr__(self) -> str:
        return "FinalResponseEvaluator()"
