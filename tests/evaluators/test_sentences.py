"""The sentence splitter behind rougeLsum's splitSummaries."""

from __future__ import annotations

import random

import pytest

from agenteval.evaluators.matching.sentences import ABBREVIATIONS, split_sentences

# The Go port's cases, whose expectations come from nltk.sent_tokenize with NLTK's English model.
GO_CASES = [
    ("this is a test. . new sentence.", ["this is a test.", ".", "new sentence."]),
    ("This. . . That", ["This.", ".", ".", "That"]),
    ("This..... That", ["This..... That"]),
    ("This... That", ["This... That"]),
    ("This.. . That", ["This.. .", "That"]),
    ("This. .. That", ["This.", ".. That"]),
    ("This. ,. That", ["This.", ",.", "That"]),
    ("This!!! That", ["This!!!", "That"]),
    ("This! That", ["This!", "That"]),
    ("1. This is R .\n2. This is A .\n3. That's all", ["1.", "This is R .", "2.", "This is A .", "3.", "That's all"]),
    ("1. This is R .\t2. This is A .\t3. That's all", ["1.", "This is R .", "2.", "This is A .", "3.", "That's all"]),
    ("Hello.\tThere", ["Hello.", "There"]),
    ("First sentence. Second Sentence.", ["First sentence.", "Second Sentence."]),
]


@pytest.mark.parametrize(("text", "expected"), GO_CASES)
def test_go_port_cases(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("   \n ", []),
        ("No punctuation at all", ["No punctuation at all"]),
        ("Trailing spaces.   ", ["Trailing spaces."]),
        ("Mr. Smith arrived. He sat down.", ["Mr. Smith arrived.", "He sat down."]),
        ("See e.g. the U.S. Army. It won.", ["See e.g. the U.S. Army.", "It won."]),
        ("J. R. R. Tolkien wrote it. Read it!", ["J. R. R. Tolkien wrote it.", "Read it!"]),
        ("Is it? Yes! Fine.", ["Is it?", "Yes!", "Fine."]),
        ("He paid $3.50 for it. Cheap.", ["He paid $3.50 for it.", "Cheap."]),
        ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
        ("(It rained.) We stayed in.", ["(It rained.)", "We stayed in."]),
        ("Line one.\n\nLine two", ["Line one.", "Line two"]),
    ],
)
def test_examples(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


_PIECES_TEXT = (
    "the cat The It He however However end. end! end? smith. Smith. x.y. well-known. ok). 42. -3. 12.5 3,000 "
    "1. A. J. a. b ( ) \" ' [ ] { } ; : , -- ... .. . ? ! !! - * @ & # ` Dr. Mr. U.S. e.g. etc. No. Co. Jan."
)
_PIECES = _PIECES_TEXT.split()
_CURLY = ["\u201c", "\u201d", "\u2019", "\u00ab", "\u00bb"]
_SEPARATORS = (" ", " ", " ", "  ", "\n", "\t", "\n\n", "", " \n ")


def test_equal_to_nltk_punkt_with_the_same_abbreviations() -> None:
    punkt = pytest.importorskip("nltk.tokenize.punkt")
    parameters = punkt.PunktParameters()
    parameters.abbrev_types = set(ABBREVIATIONS)
    reference = punkt.PunktSentenceTokenizer(parameters)
    pieces = list(_PIECES)
    # NLTK 3.10 treats curly quotes and guillemets as closing punctuation; older releases do not.
    if "\u201d" in punkt.PunktLanguageVars.re_boundary_realignment.pattern:
        pieces += _CURLY
    rng = random.Random(5)
    for _ in range(4000):
        text = "".join(rng.choice(pieces) + rng.choice(_SEPARATORS) for _ in range(rng.randint(0, 25)))
        if rng.random() < 0.3:
            text = rng.choice(_SEPARATORS) + text
        assert split_sentences(text) == reference.tokenize(text), repr(text)
