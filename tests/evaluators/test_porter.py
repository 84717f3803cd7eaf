"""The Porter stemmer: every stem equal to NLTK's ``PorterStemmer()`` (mode NLTK_EXTENSIONS)."""

from __future__ import annotations

import itertools
import random
import re
import sysconfig
from pathlib import Path

import pytest

from agenteval.evaluators.matching.porter import stem
from tests.evaluators.test_rouge import corpus_words

_WORD_RE = re.compile(r"[a-z0-9]+")

# Suffixes every Porter step looks at, so each rule fires, and fails its condition, somewhere.
_SUFFIXES_TEXT = (
    "s sses ies ss ied ed eed ing y e ll at bl iz ational tional enci anci izer bli abli alli entli eli ousli "
    "ization ation ator alism iveness fulness ousness aliti iviti biliti fulli logi icate ative alize iciti ical "
    "ful ness al ance ence er ic able ible ant ement ment ent sion tion ou ism ate iti ous ive ize"
)
_SUFFIXES = _SUFFIXES_TEXT.split()
_ROOTS_TEXT = (
    "b tr ee y by oat tree ivy troubl privat orrer hop hope fil fail siz conflat troubl fizz hiss fall tann "
    "rel condit valen hesit digit conform radic differ vil analog vietnam predic oper feud decis hope callous "
    "form sensit sensib triplic electr geo theo archaeo philo reviv allow infer airlin gyroscop adjust defens "
    "irrit replac depend adopt homolog commun activ angular effect bowdler prob rat ceas controll rol sky yy "
    "syzyg toy happ enjoy spi di li ti fl cr goodn x w 1 42 3d"
)
_ROOTS = _ROOTS_TEXT.split()


def _site_words() -> set[str]:
    """Words of real English prose: the docstrings and comments of NLTK and the standard library."""
    nltk = pytest.importorskip("nltk")
    files = list(Path(nltk.__file__).parent.rglob("*.py"))
    files += sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))
    words: set[str] = set()
    for path in files:
        words.update(_WORD_RE.findall(path.read_text(encoding="utf-8", errors="replace").lower()))
    return words


def _generated_words() -> set[str]:
    words = {root + suffix for root, suffix in itertools.product(_ROOTS, _SUFFIXES)}
    rng = random.Random(2024)
    for _ in range(5000):
        words.add("".join(rng.choice("aeiouyybcdglmnrstwxz") for _ in range(rng.randint(1, 14))))
    return words


def test_every_stem_equals_nltk() -> None:
    porter = pytest.importorskip("nltk.stem.porter")
    reference = porter.PorterStemmer()  # rouge-score builds it this way: mode NLTK_EXTENSIONS
    assert reference.mode == porter.PorterStemmer.NLTK_EXTENSIONS
    words = corpus_words() | _site_words() | _generated_words()
    assert len(words) > 20_000
    different = {word: (stem(word), reference.stem(word)) for word in words if stem(word) != reference.stem(word)}
    assert different == {}


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("hoping", "hope"),
        ("hopping", "hop"),
        ("falling", "fall"),
        ("controlling", "control"),
        ("automatically", "automat"),
        ("geology", "geolog"),
        ("relational", "relat"),
        ("triplicate", "triplic"),
        ("hopefulness", "hope"),
        ("callousness", "callous"),
        ("electricity", "electr"),
        # NLTK's extensions to the published algorithm.
        ("skies", "sky"),
        ("dying", "die"),
        ("innings", "inning"),
        ("dies", "die"),
        ("died", "die"),
        ("spied", "spi"),
        ("enjoy", "enjoy"),
        ("happy", "happi"),
        ("is", "is"),
        ("as", "as"),
        ("Running", "run"),
    ],
)
def test_known_stems(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_long_runs_of_y_do_not_recurse() -> None:
    assert stem("y" * 5000) == "y" * 4999 + "i"
