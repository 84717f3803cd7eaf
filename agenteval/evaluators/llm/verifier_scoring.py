"""Scoring of ``llm_verifier_pairwise`` answers: label probabilities from token logprobs, then a preference.

The judge grades each candidate with one of :data:`GRANULARITY` ordered labels (``A`` best … ``T``
worst) inside ``<score_A>`` and ``<score_B>`` tags. Rather than trusting the sampled letter, the score of
a candidate is the expectation of the label's value over the probabilities the judge gave every label at
that position (its top logprobs); the two expectations become one preference for candidate A, ``0.5``
meaning a tie.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from agenteval.errors import JudgeOutputError
from agenteval.evalresult.models import ScoreKind, ScoreValue
from agenteval.evaluators.llm.operators import ScoreResult
from agenteval.llm.base import ChatResponse, TokenLogprob

__all__ = [
    "GRANULARITY",
    "SCORE_A_TAG",
    "SCORE_B_TAG",
    "TIE_SCORE",
    "expected_label_score",
    "label_value",
    "pairwise_preference",
    "score_verifier_response",
]

GRANULARITY = 20
"""How many quality labels the judge chooses from: ``A`` (best) to ``T`` (worst)."""
TIE_SCORE = 0.5
"""The preference when both candidates are expected to be equally good."""
SCORE_A_TAG = "<score_A>"
SCORE_B_TAG = "<score_B>"


def label_value(label: str, granularity: int = GRANULARITY) -> float | None:
    """The value of a label token: ``1`` for ``A`` down to ``0`` for the last label.

    The token is trimmed and upper-cased; anything but a single letter among the first ``granularity``
    (``"A,"``, ``'"A"'``, ``"U"``) is not a label.

    Returns:
        The value in ``[0, 1]``, or ``None`` when the token is not a label.
    """
    letter = label.strip().upper()
    if granularity <= 1 or len(letter) != 1:
        return None
    index = ord(letter) - ord("A")
    if not 0 <= index < granularity:
        return None
    return 1 - index / (granularity - 1)


@dataclass(frozen=True, slots=True)
class _TagPosition:
    token_index: int
    """The token in which the tag ends."""
    label_offset: int
    """Where the label starts in that token (its length when the label is the next token)."""


def _find_tag(tokens: Sequence[TokenLogprob], tag: str) -> _TagPosition | None:
    """The first place the tag ends, even when it is split across tokens."""
    text = ""
    for index, token in enumerate(tokens):
        before = len(text)
        text += token.token
        # Only a match ending in this token is new; earlier tokens were searched already.
        found = text.find(tag, max(0, before - len(tag) + 1))
        if found >= 0:
            return _TagPosition(index, found + len(tag) - before)
    return None


def _label_logprobs(token: TokenLogprob, prefix: str, granularity: int) -> dict[float, float]:
    """Each label's log probability at this token, keeping the best alternative per label.

    A label glued to the tag's end (``">K"``) counts only for alternatives starting with the same
    ``prefix``.
    """
    found: dict[float, float] = {}
    candidates = [(token.token, token.logprob), *((top.token, top.logprob) for top in token.top_logprobs)]
    for text, logprob in candidates:
        if not text.startswith(prefix):
            continue
        value = label_value(text[len(prefix) :], granularity)
        if value is None:
            continue
        if math.isnan(logprob):
            raise JudgeOutputError("a label token's logprob is NaN")
        if value not in found or logprob > found[value]:
            found[value] = logprob
    return found


def expected_label_score(tokens: Sequence[TokenLogprob], tag: str, granularity: int = GRANULARITY) -> float:
    """The expected label value right after ``tag``, weighted by the judge's probabilities.

    The label is the text following the tag: the rest of the token the tag ends in, or the next token.
    Its probability distribution is that token and its top alternatives, restricted to labels and
    renormalised.

    Args:
        tokens: The judge answer's tokens with their logprobs.
        tag: ``<score_A>`` or ``<score_B>``.
        granularity: How many labels there are.

    Returns:
        The expected value in ``[0, 1]``.

    Raises:
        JudgeOutputError: No tokens, the tag is missing, nothing follows it, no label is among the
            token's alternatives, or the labels' logprobs are NaN or all ``-inf``.
    """
    if not tokens:
        raise JudgeOutputError("the judge's token logprobs are empty")
    position = _find_tag(tokens, tag)
    if position is None:
        raise JudgeOutputError(f"the score tag {tag} is missing from the judge's answer")
    token = tokens[position.token_index]
    if position.label_offset < len(token.token):
        prefix = token.token[: position.label_offset]
    elif position.token_index + 1 < len(tokens):
        token, prefix = tokens[position.token_index + 1], ""
    else:
        raise JudgeOutputError(f"the score token is missing after {tag}")
    logprobs = _label_logprobs(token, prefix, granularity)
    if not logprobs:
        raise JudgeOutputError(
            f"the score token logprobs after {tag} hold no label A-{chr(ord('A') + granularity - 1)}: "
            f"got {token.token!r}; ask the judge for top_logprobs (generationConfig.top_logprobs)"
        )
    highest = max(logprobs.values())
    if highest == -math.inf:
        raise JudgeOutputError(f"the score token logprobs after {tag} are all negative infinity")
    # Shifted by the highest logprob so that exp() cannot underflow to an all-zero distribution.
    weights = {value: math.exp(logprob - highest) for value, logprob in logprobs.items()}
    return sum(value * weight for value, weight in weights.items()) / sum(weights.values())


def pairwise_preference(score_a: float, score_b: float) -> float:
    """How much candidate A is preferred: ``0.5 + (score_a - score_b) / 2``, kept within ``[0, 1]``."""
    return min(1.0, max(0.0, TIE_SCORE + (score_a - score_b) / 2))


def score_verifier_response(response: ChatResponse, granularity: int = GRANULARITY) -> ScoreResult:
    """Score one verifier answer: the preference for candidate A (the actual answer).

    The value is written as a numeric score, and the reason names both expected label scores.

    Raises:
        JudgeOutputError: The answer has no logprobs, or a tag's label cannot be read (the message
            names ``score_A`` or ``score_B``).
    """
    if response.logprobs is None:
        raise JudgeOutputError(
            "logprobs are missing from the judge's answer: llm_verifier_pairwise needs a judge that returns "
            "token logprobs (generationConfig.logprobs true and top_logprobs 20)"
        )
    scores = []
    for name, tag in (("score_A", SCORE_A_TAG), ("score_B", SCORE_B_TAG)):
        try:
            scores.append(expected_label_score(response.logprobs, tag, granularity))
        except JudgeOutputError as exc:
            raise JudgeOutputError(f"{name}: {exc}") from exc
    score_a, score_b = scores
    score = pairwise_preference(score_a, score_b)
    return ScoreResult(
        score=score,
        reason=f"Preference from the judge's label probabilities: score_A {score_a:.4f}, score_B {score_b:.4f}.",
        value=ScoreValue(kind=ScoreKind.NUMERIC, numeric=score),
    )
