"""``llm_final_response``: an LLM judge decides whether the agent's final answer agrees with the reference."""

from __future__ import annotations

import re
from collections.abc import Sequence
from string import Template

from agenteval.errors import JudgeOutputError
from agenteval.evalresult.models import ScoreKind, ScoreValue
from agenteval.evalset.message import Message
from agenteval.evalset.models import Invocation
from agenteval.evaluators.llm.base import LLMJudgeEvaluator
from agenteval.evaluators.llm.context_text import current_turns, message_text
from agenteval.evaluators.llm.operators import ScoreResult
from agenteval.llm.base import ChatResponse
from agenteval.metric.models import EvalMetric

__all__ = ["FinalResponseJudgeEvaluator", "parse_final_response_verdict"]

_PROMPT = Template("""\
You grade the final answer of an AI agent against a reference answer. Your only job is to decide whether \
the agent's final answer agrees with the reference answer, and to report that in the fixed plain-text \
format described at the end.

## Grading rules

1. The reference answer is the ground truth.
   Treat it as correct even if you believe it is wrong, outdated or incomplete. You are not checking \
facts, only agreement: an agent answer that departs from the reference is invalid, however plausible it \
looks to you.

2. Asking instead of answering fails.
   If the agent asks the user for clarification, more details or missing conditions, or turns its reply \
into a question, it has not done the task: the answer is invalid.

3. Do not work anything out yourself.
   Do not recompute arithmetic, dates or unit conversions, and do not analyse tables or CSV data found \
in the prompt. Rely on the reference answer alone.

## Still a match (valid)

- Different layout: bullets or prose, other line breaks or punctuation, the same information in a \
slightly different order.
- Equivalent notation: 1000000 and 1,000,000, different capitalisation.
- Paraphrase, as long as every key entity and main component of the reference answer is clearly there.

## Not a match (invalid)

- A key fact, entity or field required by the reference answer is missing.
- A number, unit, name, object or conclusion differs from the reference answer. Watch units: \
100 miles is not 100 km.
- Deflection, refusal, or a request for more input instead of the result.

## Input

User prompt: $user_prompt
Agent response: $actual_response
Reference response: $expected_response

## Output

Reply with exactly these two plain-text lines and nothing else:
reasoning: <a short explanation naming the key points that agree or differ>
is_the_agent_response_valid: <valid or invalid>

Be decisive; do not hedge.
""")

_VERDICT = re.compile(
    r"reasoning:\s*(.*?)\s*is_the_agent_response_valid:\s*(.*?)\s*$",
    re.MULTILINE | re.DOTALL | re.ASCII,
)
_VALID = "valid"


def parse_final_response_verdict(content: str) -> tuple[str, str]:
    """Read the judge's ``reasoning:`` and ``is_the_agent_response_valid:`` lines.

    The first block found wins; the label is trimmed and lower-cased.

    Args:
        content: The judge's answer.

    Returns:
        ``(reasoning, label)``.

    Raises:
        JudgeOutputError: The answer is empty or has no such block.
    """
    if not content:
        raise JudgeOutputError("the judge returned an empty answer")
    match = _VERDICT.search(content)
    if match is None:
        raise JudgeOutputError(
            "the judge's answer has no verdict block: expected a line 'reasoning: <text>' followed by a line "
            f"'is_the_agent_response_valid: valid|invalid', got: {content[:200]!r}"
        )
    return match.group(1).strip(), match.group(2).strip().lower()


class FinalResponseJudgeEvaluator(LLMJudgeEvaluator):
    """LLM judge of the final answer against the reference answer (``llm_final_response``).

    Each turn's judge sees the user prompt, the agent's final answer and the expected final
    answer (``""`` when there is none). The judge answers ``valid`` (score 1) or anything else
    (score 0); the reason is the judge's reasoning.
    """

    name = "llm_final_response"
    description = "LLM judge for final responses"

    async def construct_messages(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> list[Message]:
        """One user message comparing the current turn's final answer with the reference."""
        actual, expected = current_turns(actuals, expecteds)
        prompt = _PROMPT.substitute(
            user_prompt=message_text(actual.user_content),
            actual_response=message_text(actual.final_response),
            expected_response=message_text(expected.final_response),
        )
        return [Message.user(prompt)]

    def score_response(self, response: ChatResponse, metric: EvalMetric) -> ScoreResult:
        """1 when the judge's label is ``valid``, else 0."""
        reasoning, label = parse_final_response_verdict(response.content)
        score = 1.0 if label == _VALID else 0.0
        return ScoreResult(score=score, reason=reasoning, value=ScoreValue(kind=ScoreKind.NUMERIC, numeric=score))
