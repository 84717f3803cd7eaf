"""The Porter stemmer exactly as NLTK's ``PorterStemmer()`` applies it, for ROUGE's ``useStemmer``.

Google's ``rouge-score`` stems with ``nltk.stem.porter.PorterStemmer()``, whose default mode is
``NLTK_EXTENSIONS``: Martin Porter's 1980 algorithm plus NLTK's departures from it (a table of
irregular forms, words of one or two letters left alone, ``-ies``/``-ied`` kept as ``-ie`` in
four-letter words, ``y -> i`` only after a consonant that is not the whole stem, ``alli`` handled
first in step 2, the extra ``fulli`` and ``logi`` rules, and a two-letter vowel-consonant stem
counting as ``*o``). This module reproduces that mode, and only that mode, without depending on
NLTK.

A rule list applies the first rule whose suffix the word ends with; when that rule's condition
fails, the word is returned unchanged and no later rule is tried.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

__all__ = ["stem"]

_VOWELS = frozenset("aeiou")

_IRREGULAR = {
    "sky": "sky",
    "skies": "sky",
    "dying": "die",
    "lying": "lie",
    "tying": "tie",
    "news": "news",
    "inning": "inning",
    "innings": "inning",
    "outing": "outing",
    "outings": "outing",
    "canning": "canning",
    "cannings": "canning",
    "howe": "howe",
    "proceed": "proceed",
    "exceed": "exceed",
    "succeed": "succeed",
}

_Condition = Callable[[str], bool]
_Rule = tuple[str, str, _Condition | None]


def _consonant_flags(word: str) -> list[bool]:
    """Classify each letter: a consonant is not a vowel, and ``y`` is one unless it follows one."""
    flags: list[bool] = []
    previous = False
    for index, char in enumerate(word):
        if char in _VOWELS:
            consonant = False
        elif char == "y":
            consonant = index == 0 or not previous
        else:
            consonant = True
        flags.append(consonant)
        previous = consonant
    return flags


def _measure(word: str) -> int:
    """Porter's *m*: the number of vowel-run-then-consonant-run pairs in ``word``."""
    count = 0
    after_vowel = False
    for consonant in _consonant_flags(word):
        if consonant:
            if after_vowel:
                count += 1
            after_vowel = False
        else:
            after_vowel = True
    return count


def _positive_measure(word: str) -> bool:
    return _measure(word) > 0


def _measure_above_one(word: str) -> bool:
    return _measure(word) > 1


def _contains_vowel(word: str) -> bool:
    return not all(_consonant_flags(word))


def _ends_double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _consonant_flags(word)[-1]


def _ends_cvc(word: str) -> bool:
    """Porter's ``*o``, widened by NLTK to a two-letter vowel-consonant word."""
    if len(word) >= 3:
        flags = _consonant_flags(word)
        return flags[-3] and not flags[-2] and flags[-1] and word[-1] not in "wxy"
    if len(word) == 2:
        flags = _consonant_flags(word)
        return not flags[0] and flags[1]
    return False


def _apply_rules(word: str, rules: Sequence[_Rule]) -> str:
    for suffix, replacement, condition in rules:
        if word.endswith(suffix):
            base = word[: len(word) - len(suffix)]
            if condition is None or condition(base):
                return base + replacement
            return word
    return word


_STEP1A_RULES: tuple[_Rule, ...] = (
    ("sses", "ss", None),
    ("ies", "i", None),
    ("ss", "ss", None),
    ("s", "", None),
)

_STEP2_RULES: tuple[_Rule, ...] = (
    ("ational", "ate", _positive_measure),
    ("tional", "tion", _positive_measure),
    ("enci", "ence", _positive_measure),
    ("anci", "ance", _positive_measure),
    ("izer", "ize", _positive_measure),
    ("bli", "ble", _positive_measure),
    ("alli", "al", _positive_measure),
    ("entli", "ent", _positive_measure),
    ("eli", "e", _positive_measure),
    ("ousli", "ous", _positive_measure),
    ("ization", "ize", _positive_measure),
    ("ation", "ate", _positive_measure),
    ("ator", "ate", _positive_measure),
    ("alism", "al", _positive_measure),
    ("iveness", "ive", _positive_measure),
    ("fulness", "ful", _positive_measure),
    ("ousness", "ous", _positive_measure),
    ("aliti", "al", _positive_measure),
    ("iviti", "ive", _positive_measure),
    ("biliti", "ble", _positive_measure),
    ("fulli", "ful", _positive_measure),
)

_STEP3_RULES: tuple[_Rule, ...] = (
    ("icate", "ic", _positive_measure),
    ("ative", "", _positive_measure),
    ("alize", "al", _positive_measure),
    ("iciti", "ic", _positive_measure),
    ("ical", "ic", _positive_measure),
    ("ful", "", _positive_measure),
    ("ness", "", _positive_measure),
)

_STEP4_RULES: tuple[_Rule, ...] = (
    ("al", "", _measure_above_one),
    ("ance", "", _measure_above_one),
    ("ence", "", _measure_above_one),
    ("er", "", _measure_above_one),
    ("ic", "", _measure_above_one),
    ("able", "", _measure_above_one),
    ("ible", "", _measure_above_one),
    ("ant", "", _measure_above_one),
    ("ement", "", _measure_above_one),
    ("ment", "", _measure_above_one),
    ("ent", "", _measure_above_one),
    ("ion", "", lambda base: _measure(base) > 1 and base[-1] in "st"),
    ("ou", "", _measure_above_one),
    ("ism", "", _measure_above_one),
    ("ate", "", _measure_above_one),
    ("iti", "", _measure_above_one),
    ("ous", "", _measure_above_one),
    ("ive", "", _measure_above_one),
    ("ize", "", _measure_above_one),
)


def _step1a(word: str) -> str:
    if len(word) == 4 and word.endswith("ies"):
        return word[:-3] + "ie"
    return _apply_rules(word, _STEP1A_RULES)


def _step1b(word: str) -> str:
    if word.endswith("ied"):
        return word[:-3] + ("ie" if len(word) == 4 else "i")
    if word.endswith("eed"):
        base = word[:-3]
        return base + "ee" if _measure(base) > 0 else word
    for suffix in ("ed", "ing"):
        if word.endswith(suffix) and _contains_vowel(word[: -len(suffix)]):
            base = word[: -len(suffix)]
            break
    else:
        return word
    for ending in ("at", "bl", "iz"):
        if base.endswith(ending):
            return base + "e"
    if _ends_double_consonant(base):
        return base if base[-1] in "lsz" else base[:-1]
    if _measure(base) == 1 and _ends_cvc(base):
        return base + "e"
    return base


def _step1c(word: str) -> str:
    if word.endswith("y"):
        base = word[:-1]
        if len(base) > 1 and _consonant_flags(base)[-1]:
            return base + "i"
    return word


def _step2(word: str) -> str:
    # NLTK tries ``alli -> al`` before the list and, when it fires, runs step 2 again.
    if word.endswith("alli") and _positive_measure(word[:-4]):
        return _step2(word[:-4] + "al")
    # NLTK lists ``logi`` last, but no other suffix ends in "gi", so testing it first is the same.
    # Its condition looks at the stem *with* the "l" so that "geology" still becomes "geolog".
    if word.endswith("logi"):
        return word[:-4] + "log" if _positive_measure(word[:-3]) else word
    return _apply_rules(word, _STEP2_RULES)


def _step5a(word: str) -> str:
    if word.endswith("e"):
        base = word[:-1]
        measure = _measure(base)
        if measure > 1 or (measure == 1 and not _ends_cvc(base)):
            return base
    return word


def _step5b(word: str) -> str:
    if word.endswith("ll") and _measure(word[:-1]) > 1:
        return word[:-1]
    return word


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """Stem one word as ``nltk.stem.porter.PorterStemmer().stem(word)`` does.

    The word is lower-cased first; irregular forms (``"dying" -> "die"``) come from NLTK's table,
    and words of at most two characters are returned as they are. Results are cached.

    Args:
        word: The word to stem.

    Returns:
        The stem, lower-case.
    """
    lowered = word.lower()
    irregular = _IRREGULAR.get(lowered)
    if irregular is not None:
        return irregular
    if len(word) <= 2:
        return lowered
    result = _step1a(lowered)
    result = _step1b(result)
    result = _step1c(result)
    result = _step2(result)
    result = _apply_rules(result, _STEP3_RULES)
    result = _apply_rules(result, _STEP4_RULES)
    result = _step5a(result)
    return _step5b(result)
