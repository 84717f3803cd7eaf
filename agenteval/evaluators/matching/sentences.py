r"""English sentence splitting for ``rougeLsum`` with ``splitSummaries``.

``rouge-score`` splits summaries with ``nltk.sent_tokenize``: NLTK's Punkt tokenizer with its
trained English model. This module ports Punkt's splitting procedure (as in NLTK 3.10: the
candidate-boundary and word regular expressions, the first-pass token classification, the
second-pass initial/number/abbreviation heuristics and the realignment of closing quotes and
brackets) without NLTK or its data files, which cannot be downloaded offline.

The trained model itself is not shipped. In its place the splitter uses a list of common
English abbreviations (:data:`ABBREVIATIONS`) and no collocations, frequent sentence starters or
orthographic statistics, so a decision the model would take from those falls back to Punkt's
"unknown" branch: an abbreviation or an ellipsis never ends a sentence, an initial (``J.``) does not
before a word that starts with a letter, and a number (``2.``) does unless a lower-case word or a
punctuation mark follows. Ordinary prose, numbered lists, initials and ellipses split as NLTK
splits them; rarer abbreviations may not.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["ABBREVIATIONS", "split_sentences"]

_ABBREVIATIONS_TEXT = """
    a.m p.m e.g i.e etc vs al approx cf ca viz
    mr mrs ms messrs dr prof rev gen col lt sgt capt cmdr adm maj sen rep gov pres supt jr sr
    st mt ft ave blvd rd inc corp co ltd bros assn dept univ
    jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues thu thur thurs fri
    u.s u.k u.n u.s.a n.y n.j d.c
    ala ariz calif colo conn fla ga kan ky md mich minn mont neb nev okla tenn tex va vt wis wyo
    fig figs vol vols pp eds est
"""
ABBREVIATIONS: frozenset[str] = frozenset(_ABBREVIATIONS_TEXT.split())
"""Word types (lower case, final period removed) that a period does not end a sentence after."""

_NON_WORD = r"(?:[)\";}\]\*:@\'\({\[\u2018\u2019\u201c\u201d\xab\xbb?!])"
_MULTI_CHAR = r"(?:\-{2,}|\.{2,}|(?:\.\s){2,}\.)"
_WORD_START = r"[^\(\"\`{\[:;&\#\*@\)}\]\-,]"
_WORD_RE = re.compile(
    rf"{_MULTI_CHAR}"
    rf"|(?={_WORD_START})\S+?(?=\s|$|{_NON_WORD}|{_MULTI_CHAR}|,(?=$|\s|{_NON_WORD}|{_MULTI_CHAR}))"
    r"|\S"
)
_PERIOD_CONTEXT_RE = re.compile(rf"[.?!](?=(?P<after_tok>{_NON_WORD}|\s+(?P<next_tok>\S+)))")
_REALIGNMENT_RE = re.compile(r"[\"\')\]}\u2018\u2019\u201c\u201d\xab\xbb]+?(?:\s+|(?=--)|$)", re.MULTILINE)
_NUMERIC_RE = re.compile(r"^-?[\.,]?\d[\d,\.-]*\.?$")
_INITIAL_RE = re.compile(r"[^\W\d]\.$")
_ELLIPSIS_RE = re.compile(r"\.\.+$")
_SENT_END_TOKENS = frozenset(".?!")
_PUNCTUATION_TOKENS = frozenset(";:,.!?")
_NUMBER_TYPE = "##number##"


@dataclass(slots=True)
class _Token:
    text: str
    type: str
    sentbreak: bool = False
    abbr: bool = False
    ellipsis: bool = False

    @property
    def type_no_period(self) -> str:
        if len(self.type) > 1 and self.type[-1] == ".":
            return self.type[:-1]
        return self.type


def _make_token(text: str) -> _Token:
    token = _Token(text, _NUMERIC_RE.sub(_NUMBER_TYPE, text.lower()))
    if text in _SENT_END_TOKENS:
        token.sentbreak = True
    elif _ELLIPSIS_RE.match(text):
        token.ellipsis = True
    elif text.endswith(".") and not text.endswith(".."):
        base = text[:-1].lower()
        if base in ABBREVIATIONS or base.split("-")[-1] in ABBREVIATIONS:
            token.abbr = True
        else:
            token.sentbreak = True
    return token


def _may_start_sentence(token: _Token) -> bool | None:
    """Punkt's orthographic heuristic without statistics: ``False`` or ``None`` (unknown)."""
    if token.text in _PUNCTUATION_TOKENS or token.text[0].islower():
        return False
    return None


def _reconsider(token: _Token, following: _Token) -> None:
    """Punkt's second pass: revise a period-final token's decision using the token after it."""
    if not token.text.endswith("."):
        return
    # Punkt would also turn an abbreviation or ellipsis into a boundary when orthographic
    # statistics or the frequent-sentence-starter list say the next word starts a sentence;
    # without the trained model neither says so, which the Go port's NLTK cases confirm for
    # "This... That".
    initial = _INITIAL_RE.match(token.text) is not None
    if initial or token.type_no_period == _NUMBER_TYPE:
        starts = _may_start_sentence(following)
        if starts is False or (initial and following.text[0].isupper()):
            token.sentbreak = False
            token.abbr = True


def _contains_break(context: str) -> bool:
    """Whether a token other than the last of ``context`` ends a sentence."""
    tokens = [_make_token(word) for line in context.split("\n") if line.strip() for word in _WORD_RE.findall(line)]
    for index in range(len(tokens) - 1):
        _reconsider(tokens[index], tokens[index + 1])
        if tokens[index].sentbreak:
            return True
    return False


def _last_whitespace(text: str) -> int:
    for index in range(len(text) - 1, -1, -1):
        if text[index] in string.whitespace:
            return index
    return 0


def _candidate_contexts(text: str) -> Iterator[tuple[re.Match[str], str]]:
    """Each possible boundary with the word before it and what follows, as NLTK extracts them."""
    previous: re.Match[str] | None = None
    previous_start = previous_stop = 0
    for match in _PERIOD_CONTEXT_RE.finditer(text):
        # NLTK's quirk, kept on purpose: whitespace at offset 0 counts as no whitespace.
        cut = _last_whitespace(text[previous_stop : match.start()])
        word_start = cut + previous_stop + 1 if cut else previous_start
        if previous is not None and previous_stop <= word_start:
            yield previous, text[previous_start:previous_stop] + previous.group() + previous.group("after_tok")
        previous, previous_start, previous_stop = match, word_start, match.start()
    if previous is not None:
        yield previous, text[previous_start:previous_stop] + previous.group() + previous.group("after_tok")


def _spans(text: str) -> Iterator[tuple[int, int]]:
    last_break = 0
    for match, context in _candidate_contexts(text):
        if _contains_break(context):
            yield last_break, match.end()
            last_break = match.start("next_tok") if match.group("next_tok") else match.end()
    yield last_break, len(text.rstrip())


def _realigned(text: str, spans: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """Move closing quotes and brackets that follow a boundary onto the sentence they close."""
    shift = 0
    for index, (start, stop) in enumerate(spans):
        start += shift
        if index + 1 == len(spans):
            if start < stop:
                yield start, stop
            continue
        next_start, next_stop = spans[index + 1]
        match = _REALIGNMENT_RE.match(text[next_start:next_stop])
        if match:
            yield start, next_start + len(match.group(0).rstrip())
            shift = match.end()
        else:
            shift = 0
            if start < stop:
                yield start, stop


def split_sentences(text: str) -> list[str]:
    """Split English text into sentences the way ``nltk.sent_tokenize`` does.

    Args:
        text: The text to split.

    Returns:
        The sentences, without the whitespace between them; possibly empty.

    Example:
        >>> split_sentences("Mr. Smith arrived. He sat down.")
        ['Mr. Smith arrived.', 'He sat down.']
    """
    return [text[start:stop] for start, stop in _realigned(text, list(_spans(text)))]
