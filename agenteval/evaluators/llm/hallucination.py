"""``llm_hallucinations``: each claim of the final answer is checked against the context the agent saw.

Per turn, one judge call splits the final answer into ``<sentence>`` claims, then every judge sample
labels each claim against the grounding context of all turns so far.

Two deliberate differences from the reference's parsing of the labelled claims: a line starting with
``ID:`` begins a new claim even without a blank line before it (the reference folds such claims into
the first one's verdict and so scores only the first), and a claim block cut off before its verdict
(an answer truncated by ``max_tokens``) fails the case with a message saying so, where the reference
silently scores the complete claims only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from string import Template

from agenteval.errors import AgentEvalError, ConfigError, JudgeOutputError, rewrap
from agenteval.evalresult.models import RubricScore
from agenteval.evalset.message import Message
from agenteval.evalset.models import Invocation
from agenteval.evaluators.llm.base import LLMJudgeEvaluator
from agenteval.evaluators.llm.context_text import message_text, validation_context
from agenteval.evaluators.llm.operators import ScoreResult
from agenteval.evaluators.llm.rubrics import mean_of_rubric_scores
from agenteval.llm.base import ChatResponse
from agenteval.metric.models import EvalMetric

__all__ = ["EMPTY_RESPONSE_MARKER", "HallucinationEvaluator", "parse_segmented_sentences", "score_sentence_blocks"]

EMPTY_RESPONSE_MARKER = "[EMPTY_RESPONSE]"
"""The single claim the segmenter returns for an empty final answer."""

_SEGMENTATION_PROMPT = Template("""\
# Task

Split the final answer below into claims: one claim per sentence, or per bullet or list item. Copy every \
claim verbatim, keeping its original wording and punctuation.

# Rules

1. Write each claim on its own line, exactly as <sentence>claim</sentence>.
2. Cover the whole final answer, in order, leaving nothing out.
3. Bullet and numbered items that say different things become separate claims.
4. Short stylistic or procedural remarks that appear in the final answer are claims too.
5. Output nothing except the <sentence> lines: no numbering, comments or explanations.
6. If the final answer is empty, output exactly:
<sentence>$empty_marker</sentence>

# Final answer

<final_answer>
$final_answer
</final_answer>
""")

_VALIDATOR_PROMPT = Template("""\
# Task

Check every claim of an AI agent's final answer for hallucination. You get the context captured while the \
agent worked (<context>: user prompts, context messages, tool calls and tool outputs) and the final answer \
split into numbered claims (<segmented_sentences>). Judge each claim against the context and cover all of \
them.

# Labels

supported: the context fully backs the claim.
unsupported: the context does not back the claim.
contradictory: the context states the opposite of the claim.
disputed: the context holds evidence both for and against the claim.
not_applicable: the claim needs no factual backing (a greeting, filler, a remark about the process).

# Principles

1. The context is the only trusted evidence: not outside knowledge, not guesses, not the final answer itself.
2. Be strict: a claim the context does not fully back is unsupported.
3. Use the claim ids exactly as given; do not renumber, merge or skip claims.
4. Keep each reason short; name the deciding evidence when it helps.
5. The verdict follows from the label: supported and not_applicable give yes; unsupported, contradictory \
and disputed give no.
6. If the only claim is $empty_marker, the agent gave no final answer: output exactly one block,
ID: 1
Reason: No final answer was produced.
Label: unsupported
Verdict: no

# Answer format

One block per claim, blocks separated by a blank line, and nothing else:

ID: <claim id>
Reason: <short explanation of the label>
Label: <supported|unsupported|contradictory|disputed|not_applicable>
Verdict: <yes|no>

# Input

<context>
$context
</context>

<segmented_sentences>
$sentences
</segmented_sentences>
""")

_SENTENCE = re.compile(r"<sentence>(.*?)</sentence>", re.DOTALL)
_BLOCK = re.compile(
    r"ID:\s*(.*?)\s*Reason:\s*(.*?)\s*Label:\s*(.*?)\s*Verdict:\s*(.*?)(?:\n\s*\n|\Z)",
    re.MULTILINE | re.DOTALL | re.ASCII,
)
# Judges often leave out the blank line between blocks, so every line starting with "ID:" starts a new one.
_BLOCK_START = re.compile(r"^(?=[ \t]*ID:)", re.MULTILINE | re.ASCII)
_PASSING_LABELS = frozenset({"supported", "not_applicable"})
_FAILING_LABELS = frozenset({"unsupported", "contradictory", "disputed"})


def parse_segmented_sentences(content: str) -> str:
    """Number the segmenter's ``<sentence>`` claims for the validator.

    Claims are numbered by position (an empty claim is dropped but keeps its number).

    Args:
        content: The segmenter's answer.

    Returns:
        ``<sentence id="N">`` blocks, one per non-empty claim, joined by newlines.

    Raises:
        JudgeOutputError: No (non-empty) ``<sentence>`` claim was found.
    """
    matches = _SENTENCE.findall(content)
    if not matches:
        raise JudgeOutputError(
            "no segmented sentences found in the segmentation answer: expected one <sentence>...</sentence> "
            f"line per claim, got: {content[:200]!r}"
        )
    sentences = [
        f'<sentence id="{index}">\n{claim.strip()}\n</sentence>'
        for index, claim in enumerate(matches, start=1)
        if claim.strip()
    ]
    if not sentences:
        raise JudgeOutputError("no non-empty segmented sentences found in the segmentation answer")
    return "\n".join(sentences)


def _sentence_score(label: str, verdict: str) -> float:
    if label in _PASSING_LABELS:
        return 1.0
    if label in _FAILING_LABELS:
        return 0.0
    if not label:
        return 1.0 if verdict == "yes" else 0.0
    raise JudgeOutputError(
        f"unexpected label {label!r}: use supported, unsupported, contradictory, disputed or not_applicable"
    )


def score_sentence_blocks(content: str) -> ScoreResult:
    """Score the validator's ``ID: / Reason: / Label: / Verdict:`` blocks.

    supported and not_applicable score 1; unsupported, contradictory and disputed 0; a missing
    label falls back to the verdict (``yes`` scores 1). Blocks are separated by blank lines, or
    simply by the next line starting with ``ID:``.

    Args:
        content: The validator's answer.

    Returns:
        Score = mean over the claims, one rubric score per claim (``[label] reason``), reason =
        those lines joined by newlines.

    Raises:
        JudgeOutputError: No block was found, a block that starts with ``ID:`` lacks one of the other
            lines, or a label is unknown.
    """
    blocks: list[tuple[str, str, str, str]] = []
    for chunk in _BLOCK_START.split(content):
        found = _BLOCK.findall(chunk)
        if not found and chunk.lstrip().startswith("ID:"):
            raise JudgeOutputError(
                f"incomplete sentence block in the judge's answer: {chunk.strip()[:200]!r}; each claim needs "
                "'ID:', 'Reason:', 'Label:' and 'Verdict:' lines, in that order (if the answer was cut off, raise "
                "judgeModel.generationConfig.max_tokens)"
            )
        blocks.extend(found)
    if not blocks:
        raise JudgeOutputError(
            "no sentence blocks found in the judge's answer: expected 'ID:', 'Reason:', 'Label:' and 'Verdict:' "
            f"lines for each claim, got: {content[:200]!r}"
        )
    scores: list[RubricScore] = []
    for index, (raw_id, raw_reason, raw_label, raw_verdict) in enumerate(blocks, start=1):
        sentence_id = raw_id.strip() or str(index)
        label = raw_label.strip().lower().replace(" ", "_")
        try:
            score = _sentence_score(label, raw_verdict.strip().lower())
        except JudgeOutputError as exc:
            raise JudgeOutputError(f"score sentence {sentence_id}: {exc}") from exc
        reason = raw_reason.strip()
        annotated = f"[{label}] {reason}".strip() if label else reason
        scores.append(RubricScore(id=sentence_id, reason=annotated, score=score))
    return mean_of_rubric_scores(scores)


class HallucinationEvaluator(LLMJudgeEvaluator):
    """Checks each claim of the final answer against the captured context (``llm_hallucinations``).

    The context is every turn so far: user prompts, context messages, tool calls and tool outputs.
    The segmentation call is made once per turn (not per sample) and uses no structured output.
    No expected output is needed.
    """

    name = "llm_hallucinations"
    description = "LLM hallucination evaluator"

    async def construct_messages(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> list[Message]:
        """Segment the current final answer with the judge, then build the validator prompt."""
        if not actuals:
            raise ConfigError("actuals is empty")
        try:
            context = validation_context(actuals)
        except AgentEvalError as exc:
            raise rewrap("extract grounding context", exc) from exc
        sentences = await self._segment(message_text(actuals[-1].final_response), metric)
        prompt = _VALIDATOR_PROMPT.substitute(empty_marker=EMPTY_RESPONSE_MARKER, context=context, sentences=sentences)
        return [Message.user(prompt)]

    async def _segment(self, final_answer: str, metric: EvalMetric) -> str:
        prompt = _SEGMENTATION_PROMPT.substitute(empty_marker=EMPTY_RESPONSE_MARKER, final_answer=final_answer)
        try:
            response = await self.call_judge(metric, [Message.user(prompt)])
            return parse_segmented_sentences(response.content)
        except AgentEvalError as exc:
            raise rewrap("build segmented sentences", exc) from exc

    def score_response(self, response: ChatResponse, metric: EvalMetric) -> ScoreResult:
        """Mean of the per-claim scores."""
        return score_sentence_blocks(response.content)
