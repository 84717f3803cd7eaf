"""ROUGE scores equal to Google's ``rouge-score``, and the ROUGE final-response criterion.

:func:`score_rouge` returns what ``rouge_score.rouge_scorer.RougeScorer([rouge_type],
use_stemmer, split_summaries, tokenizer).score(target, prediction)[rouge_type]`` returns, for
``rouge1`` … ``rougeN`` (any ``N >= 1``), ``rougeL`` and ``rougeLsum``; the one difference is the
sentence splitter behind ``split_summaries`` (see :mod:`~agenteval.evaluators.matching.sentences`).

It gets there faster: stems are cached, n-grams are counted by :class:`collections.Counter` in C,
and longest common subsequences are computed bit-parallel (Hyyrö's algorithm on Python integers),
which also reads out the exact subsequence ``rouge-score``'s table walk would pick, so the
union-LCS of ``rougeLsum`` is the same.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

from agenteval.errors import ConfigError
from agenteval.evaluators.matching.porter import stem
from agenteval.evaluators.matching.sentences import split_sentences
from agenteval.metric.criterion import RougeCriterion, RougeMeasure, RougeThreshold
from agenteval.metric.json_match import format_value
from agenteval.metric.registry import Tokenizer

__all__ = ["DefaultTokenizer", "RougeScore", "Tokenizer", "match_rouge", "score_rouge"]


@dataclass(frozen=True, slots=True)
class RougeScore:
    """ROUGE precision, recall and F-measure, each in ``[0, 1]``."""

    precision: float
    """Share of the prediction's units found in the target."""
    recall: float
    """Share of the target's units found in the prediction."""
    fmeasure: float
    """Harmonic mean of precision and recall (0 when both are 0)."""


_ZERO = RougeScore(0.0, 0.0, 0.0)
_TOKEN_RE = re.compile(r"[a-z0-9]+")
_ROUGE_N_RE = re.compile(r"rouge([1-9][0-9]*)")
_ROUGE_L = 0
_ROUGE_LSUM = -1
_STEMS: dict[str, str] = {}
_STEM_CACHE_LIMIT = 1 << 17


def _learn_stem(token: str) -> str:
    result = token if len(token) <= 3 else stem(token)
    if len(_STEMS) >= _STEM_CACHE_LIMIT:
        _STEMS.clear()
    _STEMS[token] = result
    return result


def _stemmed_tokens(text: str) -> list[str]:
    known = _STEMS.get
    # A Porter stem of a token of four or more letters is never empty, so ``or`` only falls
    # through on a cache miss.
    return [known(token) or _learn_stem(token) for token in _TOKEN_RE.findall(text.lower())]


class DefaultTokenizer:
    """``rouge-score``'s default tokenizer.

    Lower-cases the text, keeps the runs of ``a-z`` and ``0-9`` (so text in other scripts, such
    as Chinese, yields no tokens), and with ``use_stemmer`` Porter-stems the tokens longer than
    three characters.
    """

    __slots__ = ("use_stemmer",)

    def __init__(self, use_stemmer: bool = False) -> None:
        """Create a tokenizer that stems when ``use_stemmer`` is true."""
        self.use_stemmer = use_stemmer

    def tokenize(self, text: str) -> list[str]:
        """Return the tokens of ``text``."""
        if self.use_stemmer:
            return _stemmed_tokens(text)
        return _TOKEN_RE.findall(text.lower())


_PLAIN = DefaultTokenizer(use_stemmer=False)
_STEMMING = DefaultTokenizer(use_stemmer=True)


class _CheckedTokenizer:
    """A custom tokenizer whose tokens are collected into a list, with errors that name it."""

    __slots__ = ("label", "tokenizer")

    def __init__(self, tokenizer: Tokenizer, label: str) -> None:
        self.tokenizer = tokenizer
        self.label = label

    def tokenize(self, text: str) -> list[str]:
        tokens: object = self.tokenizer.tokenize(text)
        # A string is iterable too, but returning one is a bug, not a list of one-letter tokens.
        if isinstance(tokens, str | bytes) or not isinstance(tokens, Iterable):
            raise ConfigError(
                f"rouge tokenizer {self.label} returned {type(tokens).__name__}, not an iterable of strings"
            )
        listed = tokens if type(tokens) is list else list(tokens)
        for token in listed:
            if not isinstance(token, str):
                raise ConfigError(
                    f"rouge tokenizer {self.label} returned a token that is not a string: "
                    f"{type(token).__name__} {format_value(token, 60)}"
                )
        return listed


def _fmeasure(precision: float, recall: float) -> float:
    if precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0


def _parse_rouge_type(rouge_type: str) -> int:
    """Return N for ``rougeN``, else ``_ROUGE_L`` or ``_ROUGE_LSUM``."""
    if rouge_type == "rougeL":
        return _ROUGE_L
    if rouge_type == "rougeLsum":
        return _ROUGE_LSUM
    match = _ROUGE_N_RE.fullmatch(rouge_type)
    if match is None:
        if not rouge_type:
            raise ConfigError("rouge criterion requires rougeType")
        raise ConfigError(f"invalid rouge type {rouge_type!r}: use rouge1, rouge2, …, rougeL or rougeLsum")
    return int(match.group(1))


def _ngram_counts(tokens: Sequence[str], n: int) -> Counter[object]:
    if n == 1:
        return Counter(tokens)
    return Counter(zip(*(tokens[start:] for start in range(n)), strict=False))


def _score_ngrams(target: Sequence[str], prediction: Sequence[str], n: int) -> RougeScore:
    target_total = len(target) - n + 1
    prediction_total = len(prediction) - n + 1
    if target_total <= 0 or prediction_total <= 0:
        return _ZERO
    smaller, larger = _ngram_counts(target, n), _ngram_counts(prediction, n)
    if len(smaller) > len(larger):
        smaller, larger = larger, smaller
    overlap = 0
    count_in_larger = larger.get
    for gram, count in smaller.items():
        other = count_in_larger(gram)
        if other:
            overlap += count if count < other else other
    precision = overlap / prediction_total
    recall = overlap / target_total
    return RougeScore(precision, recall, _fmeasure(precision, recall))


def _match_masks(tokens: Sequence[str]) -> dict[str, int]:
    """Map each token to the bit set of its positions."""
    masks: dict[str, int] = {}
    bit = 1
    for token in tokens:
        masks[token] = masks.get(token, 0) | bit
        bit <<= 1
    return masks


def _lcs_length(first: Sequence[str], second: Sequence[str]) -> int:
    # Bit i of ``column`` is 0 exactly where the LCS table grows between rows i and i + 1 of the
    # current column, so the zero bits left after the last column count the LCS.
    if len(first) < len(second):
        first, second = second, first
    masks = _match_masks(first)
    full = (1 << len(first)) - 1
    column = full
    mask_of = masks.get
    for token in second:
        matches = mask_of(token, 0) & column
        if matches:
            column = ((column + matches) | (column - matches)) & full
    return len(first) - column.bit_count()


def _score_lcs(target: Sequence[str], prediction: Sequence[str]) -> RougeScore:
    if not target or not prediction:
        return _ZERO
    length = _lcs_length(target, prediction)
    precision = length / len(prediction)
    recall = length / len(target)
    return RougeScore(precision, recall, _fmeasure(precision, recall))


def _lcs_indices(reference: Sequence[str], candidate: Sequence[str], candidate_tokens: set[str]) -> list[int]:
    """Positions in ``reference`` of the LCS that ``rouge-score``'s backtracking reads out.

    ``rouge-score`` fills the whole LCS table and walks back from the corner: a match moves
    diagonally, otherwise it moves left only when the cell to the left is greater than the one
    above. Without a match the current cell is the larger of those two, so "left is greater"
    means "the table grows from the row above", which is one bit of the column's bit vector.
    Rows whose token never occurs in the candidate are skipped: their row copies the one above
    and the walk always passes them going up.
    """
    rows = [index for index, token in enumerate(reference) if token in candidate_tokens]
    if not rows:
        return []
    masks = _match_masks([reference[index] for index in rows])
    full = (1 << len(rows)) - 1
    column = full
    columns = [column]
    mask_of = masks.get
    for token in candidate:
        matches = mask_of(token, 0) & column
        if matches:
            column = ((column + matches) | (column - matches)) & full
        columns.append(column)
    remaining = len(rows) - column.bit_count()
    found: list[int] = []
    row, col = len(rows), len(candidate)
    # The walk keeps the table value equal to the matches still to find, so it can stop at zero.
    while remaining:
        position = rows[row - 1]
        if reference[position] == candidate[col - 1]:
            found.append(position)
            row -= 1
            col -= 1
            remaining -= 1
        elif columns[col] >> (row - 1) & 1:
            row -= 1
        else:
            col -= 1
    return found


def _score_summary_lcs(targets: list[list[str]], predictions: list[list[str]]) -> RougeScore:
    if not targets or not predictions:
        return _ZERO
    target_total = sum(map(len, targets))
    prediction_total = sum(map(len, predictions))
    if not target_total or not prediction_total:
        return _ZERO
    target_left = Counter(chain.from_iterable(targets))
    prediction_left = Counter(chain.from_iterable(predictions))
    candidates = [(prediction, set(prediction)) for prediction in predictions if prediction]
    hits = 0
    for reference in targets:
        union: set[int] = set()
        for candidate, candidate_tokens in candidates:
            union.update(_lcs_indices(reference, candidate, candidate_tokens))
        # rouge-score walks the union in order, but each token type is capped by its own
        # counts, so the order does not change the number of hits.
        for position in union:
            token = reference[position]
            if prediction_left[token] > 0 and target_left[token] > 0:
                hits += 1
                prediction_left[token] -= 1
                target_left[token] -= 1
    recall = hits / target_total
    precision = hits / prediction_total
    return RougeScore(precision, recall, _fmeasure(precision, recall))


def _summary_sentences(text: str, split_summaries: bool) -> list[str]:
    sentences = split_sentences(text) if split_summaries else text.split("\n")
    return [sentence for sentence in sentences if sentence]


def score_rouge(
    target: str,
    prediction: str,
    rouge_type: str,
    *,
    use_stemmer: bool = False,
    split_summaries: bool = False,
    tokenizer: Tokenizer | None = None,
) -> RougeScore:
    """Score a prediction against a target as ``rouge-score``'s ``RougeScorer`` does.

    Args:
        target: The reference text (the expected response).
        prediction: The text to score (the actual response).
        rouge_type: ``rougeN`` for any ``N >= 1`` (n-gram overlap), ``rougeL`` (longest common
            subsequence over the whole texts) or ``rougeLsum`` (summary-level LCS over the
            texts' lines, or sentences with ``split_summaries``).
        use_stemmer: Porter-stem tokens longer than three characters (default tokenizer only).
        split_summaries: For ``rougeLsum``, split the texts into sentences rather than lines.
        tokenizer: Replaces the default tokenizer; ``use_stemmer`` is then ignored. Its
            ``tokenize`` may return a list or any other iterable of strings.

    Returns:
        The scores; all 0 when either text has no tokens (or no n-grams).

    Raises:
        ConfigError: ``rouge_type`` is empty or not a ROUGE type, or ``tokenizer`` returned
            something other than an iterable of strings.
    """
    kind = _parse_rouge_type(rouge_type)
    active: DefaultTokenizer | _CheckedTokenizer
    if tokenizer is None:
        active = _STEMMING if use_stemmer else _PLAIN
    elif isinstance(tokenizer, _CheckedTokenizer):
        active = tokenizer
    else:
        active = _CheckedTokenizer(tokenizer, type(tokenizer).__qualname__)
    if kind == _ROUGE_LSUM:
        return _score_summary_lcs(
            [active.tokenize(sentence) for sentence in _summary_sentences(target, split_summaries)],
            [active.tokenize(sentence) for sentence in _summary_sentences(prediction, split_summaries)],
        )
    target_tokens = active.tokenize(target)
    prediction_tokens = active.tokenize(prediction)
    if kind == _ROUGE_L:
        return _score_lcs(target_tokens, prediction_tokens)
    return _score_ngrams(target_tokens, prediction_tokens, kind)


_NO_THRESHOLD = RougeThreshold()


def match_rouge(
    actual: str,
    expected: str,
    criterion: RougeCriterion,
    tokenizer: Tokenizer | None = None,
    measures: dict[str, float] | None = None,
) -> str | None:
    """Check a final response against the expected one with ROUGE.

    Passes when precision, recall and F1 all reach their thresholds (an unset threshold is 0).
    ``measure`` does not affect the outcome; it picks the value named first in the reason and in
    ``measures``.

    Args:
        actual: The agent's response, scored as the prediction.
        expected: The expected response, scored as the target.
        criterion: The ROUGE type, thresholds and options; ``ignore`` always passes.
        tokenizer: The tokenizer registered under ``criterion.tokenizer_name``, resolved by the
            caller; it overrides the default tokenizer and its stemming.
        measures: When given, receives ``<rougeType>_<measure>`` for the selected measure, then the
            other two of ``precision``, ``recall``, ``f1`` (nothing with ``ignore``).

    Returns:
        ``None`` on a pass, else a reason such as ``rougeL f1=0.400000 precision=0.500000
        recall=0.333333; below threshold: recall 0.333333 < 0.5, f1 0.400000 < 0.6``.

    Raises:
        ConfigError: ``rouge_type`` is empty or invalid, ``tokenizer_name`` is set but no
            tokenizer was given, or the tokenizer returned something other than an iterable of
            strings.
    """
    if criterion.ignore:
        return None
    if tokenizer is None and criterion.tokenizer_name:
        raise ConfigError(f"rouge tokenizerName {criterion.tokenizer_name!r} was not resolved to a tokenizer")
    if tokenizer is not None and criterion.tokenizer_name:
        tokenizer = _CheckedTokenizer(tokenizer, format_value(criterion.tokenizer_name))
    score = score_rouge(
        expected,
        actual,
        criterion.rouge_type,
        use_stemmer=criterion.use_stemmer,
        split_summaries=criterion.split_summaries,
        tokenizer=tokenizer,
    )
    values = {"precision": score.precision, "recall": score.recall, "f1": score.fmeasure}
    selected = str(criterion.measure) if criterion.measure in (RougeMeasure.PRECISION, RougeMeasure.RECALL) else "f1"
    shown = [(selected, values[selected]), *((name, value) for name, value in values.items() if name != selected)]
    if measures is not None:
        measures.update((f"{criterion.rouge_type}_{name}", value) for name, value in shown)
    threshold = criterion.threshold or _NO_THRESHOLD
    limits = {"precision": threshold.precision, "recall": threshold.recall, "f1": threshold.f1}
    missed = [f"{name} {value:.6f} < {limits[name]:g}" for name, value in values.items() if not value >= limits[name]]
    if not missed:
        return None
    scores = " ".join(f"{name}={value:.6f}" for name, value in shown)
    return f"{criterion.rouge_type} {scores}; below threshold: {', '.join(missed)}"
