r"""The text and length criteria: compare tool names and final-response texts.

Regular expressions use Python's :mod:`re` rather than Go's RE2. Patterns written for RE2 behave
the same, except a few RE2-only escapes (such as ``\p{Greek}`` classes) that :mod:`re` rejects;
:mod:`re` also accepts extras RE2 would reject (backreferences, lookaround).
"""

from __future__ import annotations

import re

from agenteval.errors import ConfigError
from agenteval.evaluators.criteria.jsonmatch import format_value, named_compare_mismatch
from agenteval.metric.criterion import LengthCriterion, TextCriterion, TextMatchStrategy
from agenteval.metric.registry import active_metric_registry

__all__ = ["check_length_criterion", "match_length", "match_text"]


def check_length_criterion(criterion: LengthCriterion) -> None:
    """Reject a length criterion that cannot be applied.

    Raises:
        ConfigError: Neither bound is set, a bound is negative, or ``min > max``.
    """
    low, high = criterion.min, criterion.max
    if low is None and high is None:
        raise ConfigError("length criterion must configure min or max")
    if low is not None and low < 0:
        raise ConfigError(f"length criterion: min must be non-negative, got {low}")
    if high is not None and high < 0:
        raise ConfigError(f"length criterion: max must be non-negative, got {high}")
    if low is not None and high is not None and low > high:
        raise ConfigError(f"length criterion: min ({low}) must be less than or equal to max ({high})")


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


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as err:
        raise ConfigError(f"text criterion: invalid regex {format_value(pattern)}: {err}") from err


def _run_compare(name: str, actual: str, expected: str) -> str | None:
    return named_compare_mismatch("text compare", name, active_metric_registry().text_compare(name), actual, expected)


def match_text(actual: str, expected: str, criterion: TextCriterion) -> str | None:
    """Compare two texts.

    Order: ``ignore`` passes; a named compare replaces everything else (the length check too);
    the length of ``actual`` is checked; ``skip`` passes; with
    ``caseInsensitive`` both sides are lower-cased (a regex pattern too); then ``exact`` (the
    default), ``contains`` (``expected`` is a substring of ``actual``) or ``regex`` (``expected``
    is a pattern searched, unanchored, in ``actual``).

    Args:
        actual: The agent's text.
        expected: The expected text (or pattern).
        criterion: How to compare.

    Returns:
        ``None`` on a match, else a one-line reason showing both sides.

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
    source, target = (actual.lower(), expected.lower()) if criterion.case_insensitive else (actual, expected)
    shown_actual, shown_expected = format_value(actual), format_value(expected)
    if strategy in (TextMatchStrategy.DEFAULT, TextMatchStrategy.EXACT):
        if source == target:
            return None
        return f"actual {shown_actual} and expected {shown_expected} do not match{suffix}"
    if strategy == TextMatchStrategy.CONTAINS:
        if target in source:
            return None
        return f"actual {shown_actual} does not contain expected {shown_expected}{suffix}"
    if strategy == TextMatchStrategy.REGEX:
        if _compile(target).search(source):
            return None
        return f"actual {shown_actual} does not match regex {format_value(target)}{suffix}"
    raise ConfigError(f"text criterion: invalid matchStrategy {str(strategy)!r}")
