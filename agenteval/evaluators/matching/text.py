r"""The text and length criteria: compare tool names and final-response texts.

Regular expressions are RE2, as in the reference (Go's ``regexp`` is RE2), through the
``google-re2`` package, so a pattern means what it means there: ``\d``, ``\w``, ``\s`` and ``\b``
are ASCII-only; ``$`` matches only at the very end of the text unless ``(?m)`` is set; ``\z``,
``\pL``, ``\p{Han}`` and ``\Q…\E`` work; backreferences and lookaround are invalid patterns.

``caseInsensitive`` lower-cases the pattern along with the texts, as the reference does, so an
escape with an upper-case letter changes meaning (``\D`` becomes ``\d``) or becomes invalid
(``\p{Han}``); write ``(?i)`` in the pattern instead to keep such escapes.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import re2  # type: ignore[import-untyped]

from agenteval.errors import ConfigError
from agenteval.metric.criterion import LengthCriterion, TextCriterion, TextMatchStrategy
from agenteval.metric.json_match import format_value, named_compare_mismatch
from agenteval.metric.registry import active_metric_registry

__all__ = ["check_length_criterion", "check_text_criterion", "match_length", "match_text"]


def check_length_criterion(criterion: LengthCriterion, where: str = "length criterion") -> None:
    """Reject a length criterion that cannot be applied.

    Args:
        criterion: The bounds.
        where: Names the criterion in messages, e.g. ``criterion.finalResponse.text.length``.

    Raises:
        ConfigError: Neither bound is set, a bound is negative, or ``min > max``.
    """
    low, high = criterion.min, criterion.max
    if low is None and high is None:
        raise ConfigError(f"{where} must configure min or max")
    if low is not None and low < 0:
        raise ConfigError(f"{where}: min must be non-negative, got {low}")
    if high is not None and high < 0:
        raise ConfigError(f"{where}: max must be non-negative, got {high}")
    if low is not None and high is not None and low > high:
        raise ConfigError(f"{where}: min ({low}) must be less than or equal to max ({high})")


def check_text_criterion(criterion: TextCriterion, where: str = "text criterion") -> None:
    """Reject a text criterion that cannot be applied, before any text is compared.

    Only its length bounds can be checked ahead: a ``regex`` pattern is the expected text, known
    only when the texts are compared. Nothing is checked when ``ignore`` is set or a
    ``compareName`` replaces the rest, as :func:`match_text` uses nothing else then.

    Args:
        criterion: The criterion.
        where: Its location in the metric for messages, e.g. ``criterion.finalResponse.text``.

    Raises:
        ConfigError: Invalid length bounds.
    """
    length = criterion.length
    if criterion.ignore or criterion.compare_name or length is None or length.ignore:
        return
    check_length_criterion(length, f"{where}.length")


def _range_text(criterion: LengthCriterion) -> str:
    low = 0 if criterion.min is None else criterion.min
    if criterion.max is None:
        return f"[{low}, +inf)"
    return f"[{low}, {criterion.max}]"


def match_length(text: str, criterion: LengthCriterion | None) -> str | None:
    """Check that ``text`` has an allowed length, counted in Unicode code points (inclusive bounds).

    Args:
        text: The text to measure (the actual side).
        criterion: The bounds; ``None`` or ``ignore`` always passes.

    Returns:
        ``None`` when the length is allowed, else a reason such as
        ``actual length 137 is greater than max 6, expected range [0, 6]``.

    Raises:
        ConfigError: The bounds are invalid.
    """
    if criterion is None or criterion.ignore:
        return None
    check_length_criterion(criterion)
    length = len(text)
    if criterion.min is not None and length < criterion.min:
        return f"actual length {length} is less than min {criterion.min}, expected range {_range_text(criterion)}"
    if criterion.max is not None and length > criterion.max:
        return f"actual length {length} is greater than max {criterion.max}, expected range {_range_text(criterion)}"
    return None


def go_lower(text: str) -> str:
    """Lower-case ``text`` as Go's ``strings.ToLower`` does: each character on its own.

    Python's :meth:`str.lower` applies the full Unicode mapping (``İ`` becomes ``i`` plus a
    combining dot) and writes a word-final ``Σ`` as ``ς``; Go maps every character to its simple
    lower case, so ``İSTANBUL`` and ``istanbul`` match there, and here too.
    """
    if text.isascii():
        return text.lower()
    return "".join(_simple_lower(character) for character in text)


def _simple_lower(character: str) -> str:
    lowered = character.lower()
    # Only U+0130 lower-cases to two characters in full mapping; its simple mapping is "i".
    return lowered if len(lowered) == 1 else lowered[0]


def _utf8_safe(text: str) -> str:
    """Replace lone surrogates with U+FFFD, as Go's JSON decoding does; RE2 only takes valid UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


@functools.lru_cache(maxsize=256)
def _compile(pattern: str) -> Any:
    options = re2.Options()
    # The error is raised as a ConfigError below; RE2 would also print it to stderr.
    options.log_errors = False
    try:
        return re2.compile(_utf8_safe(pattern), options)
    except re2.error as err:
        detail = err.args[0] if err.args else err
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise ConfigError(f"text criterion: invalid regex {format_value(pattern)}: {detail}") from err


def _regex_found(pattern: str, text: str) -> bool:
    return _compile(pattern).search(_utf8_safe(text)) is not None


def _run_compare(name: str, actual: str, expected: str) -> str | None:
    return named_compare_mismatch("text compare", name, active_metric_registry().text_compare(name), actual, expected)


_BEFORE = 60
"""Characters shown before the first difference of two long texts."""
_AFTER = 100
"""Characters shown from the first difference of two long texts on (more when it is near their start)."""
_SPACE = re.compile(r"\s")


def _first_difference(left: str, right: str) -> int:
    """The index of the first character where the texts differ (the shorter's length if it starts the other)."""
    return next((i for i, (a, b) in enumerate(zip(left, right, strict=False)) if a != b), min(len(left), len(right)))


def _around(text: str, at: int) -> str:
    """``text`` as a JSON string cut to the words around index ``at``, with ``…`` where it was cut.

    A cut moves to the nearest word boundary within the outer half of the context, so it neither
    splits a word nor leaves the difference without context.
    """
    start = max(0, at - _BEFORE)
    end = min(len(text), start + _BEFORE + _AFTER)
    if start > 0 and (space := _SPACE.search(text, start, start + _BEFORE // 2)) is not None:
        start = space.end()
    if end < len(text):
        end = max((space.start() for space in _SPACE.finditer(text, end - _AFTER // 2, end)), default=end)
    inner = json.dumps(text[start:end], ensure_ascii=False)[1:-1]
    return f'"{"…" if start else ""}{inner}{"…" if end < len(text) else ""}"'


def _shown_pair(actual: str, expected: str, source: str, target: str) -> tuple[str, str, int | None]:
    """Both texts as a mismatch reason shows them, and the 1-based character where they differ when that matters.

    Texts that show whole are shown as :func:`format_value` renders them, as in the reference. When
    either is too long for that, its start would hide a difference further on: both are shown around
    the first character where the compared texts (``source`` and ``target``, lower-cased for a
    case-insensitive match, which keeps each character's place) differ.
    """
    shown = format_value(actual), format_value(expected)
    if shown == (json.dumps(actual, ensure_ascii=False), json.dumps(expected, ensure_ascii=False)):
        return *shown, None
    at = _first_difference(source, target)
    return _around(actual, at), _around(expected, at), at + 1


def match_text(actual: str, expected: str, criterion: TextCriterion) -> str | None:
    """Compare two texts.

    Order: ``ignore`` passes; a named compare replaces everything else (the length check too);
    the length of ``actual`` is checked; ``skip`` passes; with
    ``caseInsensitive`` both sides are lower-cased (a regex pattern too); then ``exact`` (the
    default), ``contains`` (``expected`` is a substring of ``actual``) or ``regex`` (``expected``
    is an RE2 pattern searched, unanchored, in ``actual``).

    Args:
        actual: The agent's text.
        expected: The expected text (or pattern).
        criterion: How to compare.

    Returns:
        ``None`` on a match, else a one-line reason showing both sides. When an ``exact`` match
        fails on texts too long to show whole, both are shown around the first character where
        they differ, and the reason says which character that is (1-based), e.g. ``actual
        "…word41 blue word43…" and expected "…word41 red word43…" do not match (they differ from
        character 231)``.

    Raises:
        ConfigError: Invalid length bounds or regex, an unknown strategy, an unknown compare, or
            a named compare raised.
    """
    if criterion.ignore:
        return None
    if criterion.compare_name:
        return _run_compare(criterion.compare_name, actual, expected)
    length_reason = match_length(actual, criterion.length)
    if length_reason is not None:
        return f"length mismatch: {length_reason}"
    strategy = criterion.match_strategy
    if strategy == TextMatchStrategy.SKIP:
        return None
    suffix = " (case-insensitive)" if criterion.case_insensitive else ""
    source, target = (go_lower(actual), go_lower(expected)) if criterion.case_insensitive else (actual, expected)
    if strategy in (TextMatchStrategy.DEFAULT, TextMatchStrategy.EXACT):
        if source == target:
            return None
        left, right, differ_at = _shown_pair(actual, expected, source, target)
        notes = ["case-insensitive"] if criterion.case_insensitive else []
        notes += [f"they differ from character {differ_at}"] if differ_at is not None else []
        where = f" ({'; '.join(notes)})" if notes else ""
        return f"actual {left} and expected {right} do not match{where}"
    shown_actual, shown_expected = format_value(actual), format_value(expected)
    if strategy == TextMatchStrategy.CONTAINS:
        if target in source:
            return None
        return f"actual {shown_actual} does not contain expected {shown_expected}{suffix}"
    if strategy == TextMatchStrategy.REGEX:
        if _regex_found(target, source):
            return None
        return f"actual {shown_actual} does not match regex {format_value(target)}{suffix}"
    raise ConfigError(f"text criterion: invalid matchStrategy {str(strategy)!r}")
