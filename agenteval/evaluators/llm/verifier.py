"""``llm_verifier_pairwise``: an LLM verifier grades the actual and the expected answer side by side.

The judge grades both answers on the metric's rubrics with one of 20 ordered labels each; the turn's
score is the preference for the actual answer read from the judge's label probabilities (see
:mod:`agenteval.evaluators.llm.verifier_scoring`): ``0.5`` is a tie, above means the actual answer is better.
"""

from __future__ import annotations

from collections.abc import Sequence
from string import Template

from agenteval.errors import ConfigError
from agenteval.evalset.message import Message
from agenteval.evalset.models import Invocation
from agenteval.evaluators.llm.base import LLMJudgeEvaluator
from agenteval.evaluators.llm.context_text import current_turns, message_text
from agenteval.evaluators.llm.operators import ScoreResult
from agenteval.evaluators.llm.rubrics import render_rubrics, visible_rubrics
from agenteval.evaluators.llm.verifier_scoring import score_verifier_response
from agenteval.llm.base import ChatModel, ChatResponse
from agenteval.metric.criterion import GenerationConfig
from agenteval.metric.models import EvalMetric

__all__ = ["TOP_LOGPROBS", "VerifierPairwiseEvaluator"]

TOP_LOGPROBS = 20
"""Alternatives per token the verifier asks for unless the metric's ``generationConfig`` sets ``top_logprobs``."""

_PROMPT = Template("""\
You are a careful verifier of AI agent answers. Below are one user request and two candidate answers to \
it, Candidate A and Candidate B. Grade each candidate on its own merits against the criteria.

## Grades

Each candidate gets one letter from A to T (20 grades). The order is strict: A is the best grade, T the \
worst, and a letter earlier in the alphabet always means a better answer than any later letter.

- A: fully meets the request on every criterion.
- B to D: meets the request; only small flaws.
- E to G: mostly right, with some real flaws.
- H to J: unclear, more likely a success than a failure.
- K to M: unclear, more likely a failure than a success.
- N to P: falls short; serious problems remain.
- Q to S: fails, though part of the work is done.
- T: fails completely.

## Criteria

$criteria

## How to grade

- Use only the criteria above; ignore qualities they do not mention.
- The user request defines what is required. A candidate saying it is correct proves nothing: check \
the answer itself.
- Grade the two candidates independently, not against each other. Equal quality deserves the same letter.

## Answer format

Write a short analysis first. Then end with exactly these two lines, each holding a single letter:

<score_A>LETTER</score_A>
<score_B>LETTER</score_B>

## User request

$user_request

## Candidate A

$candidate_a

## Candidate B

$candidate_b
""")


def _criteria(metric: EvalMetric) -> str:
    """The rubrics as prompt lines.

    Raises:
        ConfigError: The metric has no ``criterion.llmJudge`` or no rubric with content.
    """
    if metric.criterion is None or metric.criterion.llm_judge is None:
        raise ConfigError(f"metric {metric.metric_name}: llm judge criterion is required")
    criteria = render_rubrics(visible_rubrics(metric)).strip()
    if not criteria:
        raise ConfigError(
            f"metric {metric.metric_name}: llm judge rubrics are required; llm_verifier_pairwise grades "
            "both answers on criterion.llmJudge.rubrics"
        )
    return criteria


class VerifierPairwiseEvaluator(LLMJudgeEvaluator):
    """LLM-as-a-Verifier: the preference for the actual answer over the expected one (``llm_verifier_pairwise``).

    Each turn's judge sees the user request, the actual final answer as Candidate A and the expected
    final answer as Candidate B, and grades both on the metric's rubrics. The score is the preference
    for A computed from the judge's token logprobs, so the judge must return them: unless the metric's
    ``generationConfig`` says otherwise, the request asks for ``logprobs`` with :data:`TOP_LOGPROBS`
    alternatives. Samples are reduced by majority vote and turns averaged, as for every judge; with a
    threshold of 0.5, a turn passes when the actual answer is at least as good as the expected one.
    """

    name = "llm_verifier_pairwise"
    description = "LLM-as-a-Verifier pairwise preference evaluator"

    def judge_for(self, metric: EvalMetric) -> tuple[ChatModel, int, GenerationConfig]:
        """The judge, its samples and its sampling options, asking for logprobs unless the metric sets them."""
        model, samples, generation = super().judge_for(metric)
        asked: dict[str, object] = {"logprobs": True if generation.logprobs is None else generation.logprobs}
        if generation.top_logprobs is None:
            asked["top_logprobs"] = TOP_LOGPROBS
        return model, samples, generation.model_copy(update=asked)

    def check_metric(self, metric: EvalMetric) -> None:
        """Also refuse a metric without rubrics, before any case runs.

        Raises:
            ConfigError: See :meth:`LLMJudgeEvaluator.check_metric`, or the metric has no rubric.
        """
        super().check_metric(metric)
        _criteria(metric)

    async def construct_messages(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> list[Message]:
        """One user message with the request and both final answers of the current turn."""
        actual, expected = current_turns(actuals, expecteds)
        if expected.final_response is None:
            raise ConfigError(
                "expected final response is required for llm_verifier_pairwise: give the eval case's "
                "conversation a reference answer (finalResponse) to compare against"
            )
        if actual.final_response is None:
            raise ConfigError("actual final response is required for llm_verifier_pairwise: the agent gave no answer")
        prompt = _PROMPT.substitute(
            criteria=_criteria(metric),
            user_request=message_text(actual.user_content),
            candidate_a=message_text(actual.final_response),
            candidate_b=message_text(expected.final_response),
        )
        return [Message.user(prompt)]

    def score_response(self, response: ChatResponse, metric: EvalMetric) -> ScoreResult:
        """The preference for Candidate A read from the answer's logprobs."""
        return score_verifier_response(response)
