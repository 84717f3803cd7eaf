"""Judge two conversations of one case against each other with ``llm_verifier_pairwise``.

Shared by the A/B between two reports (:mod:`agenteval.analysis.pairwise`) and best-of-N over a report's runs.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from agenteval.errors import ConfigError, describe_exception
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalset.models import Invocation, RubricContent
from agenteval.evaluators.llm.verifier import VerifierPairwiseEvaluator
from agenteval.llm.base import ChatModel
from agenteval.llm.judge import JudgeOverride, use_judge
from agenteval.metric.criterion import Criterion, LLMCriterion, Rubric
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus

__all__ = [
    "DEFAULT_RUBRICS",
    "TIE_TOLERANCE",
    "Judged",
    "conversations",
    "gathered",
    "judge_pair",
    "outcome",
    "verifier_metric",
]

T = TypeVar("T")

DEFAULT_RUBRICS: Mapping[str, str] = {
    "task_success": "The final answer fully and correctly does what the user asked, without unsupported claims.",
}
"""What the verifier grades on when no rubrics are given."""

TIE_TOLERANCE = 1e-9
"""Preferences this close to 0.5 are ties."""

_MAX_CONCURRENT_CASES = 8


@dataclass(frozen=True, slots=True)
class Judged:
    """The verifier's verdict on one pair of conversations."""

    preference: float
    """How much the first conversation is preferred, in ``[0, 1]`` (0.5: a tie); NaN when not judged."""
    reason: str
    """The verifier's reason per turn, or why the pair could not be judged."""

    @property
    def judged(self) -> bool:
        """Whether the verifier gave a preference."""
        return not math.isnan(self.preference)


def outcome(preference: float) -> float:
    """1 for a win of the first conversation, 0 for a loss, 0.5 for a tie."""
    if abs(preference - 0.5) <= TIE_TOLERANCE:
        return 0.5
    return 1.0 if preference > 0.5 else 0.0


def verifier_metric(rubrics: Mapping[str, str] | None) -> EvalMetric:
    """The ``llm_verifier_pairwise`` metric grading on ``rubrics`` (id to text; default :data:`DEFAULT_RUBRICS`).

    Raises:
        ConfigError: ``rubrics`` is empty or has a blank text.
    """
    chosen = DEFAULT_RUBRICS if rubrics is None else rubrics
    if not chosen or any(not str(text).strip() for text in chosen.values()):
        raise ConfigError(f"rubrics={rubrics!r}: give at least one rubric id with a non-empty text, or leave it out")
    return EvalMetric(
        metric_name=VerifierPairwiseEvaluator.name,
        threshold=0.5,
        criterion=Criterion(
            llm_judge=LLMCriterion(
                rubrics=[Rubric(id=key, content=RubricContent(text=text)) for key, text in chosen.items()]
            )
        ),
    )


def conversations(runs: Iterable[InferenceResult]) -> dict[str, list[Invocation]]:
    """The actual turns of each case whose inference succeeded, by case id."""
    return {run.eval_case_id: run.inferences for run in runs if run.status != EvalStatus.FAILED and run.inferences}


async def judge_pair(
    first: Sequence[Invocation], second: Sequence[Invocation], *, judge: ChatModel, metric: EvalMetric, samples: int
) -> Judged:
    """The verifier's preference for ``first`` over ``second``, turn by turn; a failure becomes the reason.

    Judges often favour the answer shown first, so each pair is judged in both orders (``first`` as
    Candidate A, then as Candidate B) and the two preferences are averaged: a judge that only follows
    the position gives a tie. That is twice the reference's judge calls.
    """
    if len(first) != len(second):
        return Judged(math.nan, f"not judged: the conversations have {len(first)} and {len(second)} turns")
    try:
        with use_judge(JudgeOverride(judge, num_samples=samples)):
            shown_first, shown_second = await asyncio.gather(
                VerifierPairwiseEvaluator().evaluate(first, second, metric),
                VerifierPairwiseEvaluator().evaluate(second, first, metric),
            )
    except Exception as exc:
        return Judged(math.nan, f"not judged: {describe_exception(exc)}")
    preference = (shown_first.overall_score + 1.0 - shown_second.overall_score) / 2
    reasons = [
        f"{order}: {'; '.join(r.details.reason for r in result.per_invocation_results if r.details is not None)}"
        for order, result in (("shown first", shown_first), ("shown second", shown_second))
    ]
    return Judged(preference, " | ".join(reasons))


async def gathered(jobs: Iterable[Awaitable[T]]) -> list[T]:
    """Await ``jobs`` a few at a time, keeping their order."""
    gate = asyncio.Semaphore(_MAX_CONCURRENT_CASES)

    async def gated(job: Awaitable[T]) -> T:
        async with gate:
            return await job

    return list(await asyncio.gather(*(gated(job) for job in jobs)))
