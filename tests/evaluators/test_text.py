"""Text and length criteria, mirroring the reference's tables."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agenteval.errors import ConfigError
from agenteval.evaluators.matching import check_text_criterion, match_length, match_text
from agenteval.metric.criterion import LengthCriterion, TextCriterion, TextMatchStrategy


def _text(**fields: Any) -> TextCriterion:
    return TextCriterion.model_validate(fields)


LENGTH_CASES = [
    # (criterion, text, expected reason or None)
    ({"min": 2, "max": 4}, "你好", None),
    ({"min": 2, "max": 4}, "abcd", None),
    ({"min": 2, "max": 4}, "a", "actual length 1 is less than min 2, expected range [2, 4]"),
    ({"min": 2, "max": 4}, "abcde", "actual length 5 is greater than max 4, expected range [2, 4]"),
    ({"min": 1}, "a", None),
    ({"max": 2}, "ab", None),
    ({"min": 2}, "a", "actual length 1 is less than min 2, expected range [2, +inf)"),
    ({"max": 1}, "ab", "actual length 2 is greater than max 1, expected range [0, 1]"),
    ({"max": 6}, "x" * 137, "actual length 137 is greater than max 6, expected range [0, 6]"),
    # Code points, not bytes or grapheme clusters.
    ({"max": 2}, "😀😀", None),
    ({"max": 2}, "👍🏽", None),
    ({"max": 4}, "👨‍👩‍👧", "actual length 5 is greater than max 4, expected range [0, 4]"),
    ({"min": 3, "max": 3}, "北京市", None),
    ({"min": 0, "max": 0}, "", None),
    ({"ignore": True}, "", None),
    ({"ignore": True, "min": 5, "max": 1}, "", None),
]


@pytest.mark.parametrize(("fields", "text", "reason"), LENGTH_CASES)
def test_match_length(fields: dict[str, Any], text: str, reason: str | None) -> None:
    assert match_length(text, LengthCriterion.model_validate(fields)) == reason


def test_match_length_none_passes() -> None:
    assert match_length("anything", None) is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "must configure min or max"),
        ({"min": -1}, "min must be non-negative"),
        ({"max": -1}, "max must be non-negative"),
        ({"min": 3, "max": 2}, "min (3) must be less than or equal to max (2)"),
    ],
)
def test_match_length_invalid_config(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        match_length("abc", LengthCriterion.model_validate(fields))


TEXT_CASES = [
    # (criterion, actual, expected, None on a match or a substring of the reason)
    ({"caseInsensitive": True, "matchStrategy": "contains"}, "Hello World", "hello", None),
    ({"ignore": True}, "anything", "value", None),
    ({"ignore": True, "length": {"min": 9}}, "a", "b", None),
    ({"length": {"min": 2, "max": 4}}, "你好", "你好", None),
    ({"length": {"min": 2, "max": 4}}, "你好", "", 'actual "你好" and expected "" do not match'),
    ({"length": {"min": 2, "max": 4}}, "a", "", "length mismatch: actual length 1 is less than min 2"),
    ({"length": {"max": 10}, "matchStrategy": "contains"}, "hello world", "hello", "length mismatch"),
    ({"length": {"max": 10}, "matchStrategy": "contains"}, "hello", "ell", None),
    ({"length": {"min": 2, "max": 4}, "matchStrategy": "skip"}, "abcd", "not checked", None),
    ({"length": {"min": 2, "max": 4}, "matchStrategy": "skip"}, "a", "not checked", "length mismatch"),
    ({"matchStrategy": "skip"}, "a", "b", None),
    ({"matchStrategy": "exact"}, "same", "same", None),
    ({"matchStrategy": "exact"}, "same", "diff", 'actual "same" and expected "diff" do not match'),
    ({}, "same", "same", None),
    ({}, "Same", "same", 'actual "Same" and expected "same" do not match'),
    ({"caseInsensitive": True}, "Same", "sAME", None),
    ({"caseInsensitive": True}, "Same", "other", "do not match (case-insensitive)"),
    ({"matchStrategy": "contains"}, "hello", "missing", 'actual "hello" does not contain expected "missing"'),
    ({"matchStrategy": "contains"}, "hello", "", None),
    ({"matchStrategy": "contains"}, "Hello", "hello", "does not contain"),
    ({"matchStrategy": "regex"}, "abc123", "abc[0-9]+", None),
    ({"matchStrategy": "regex"}, "xyz", "abc[0-9]+", 'actual "xyz" does not match regex "abc[0-9]+"'),
    # Unanchored search, like Go's MatchString.
    ({"matchStrategy": "regex"}, "result: abc1 done", "abc[0-9]", None),
    ({"matchStrategy": "regex"}, "result: abc1 done", "^abc", "does not match regex"),
    ({"matchStrategy": "regex"}, "ABC123", "abc[0-9]+", "does not match regex"),
    ({"matchStrategy": "regex", "caseInsensitive": True}, "ABC123", "abc[0-9]+", None),
    # The pattern is lower-cased too.
    ({"matchStrategy": "regex", "caseInsensitive": True}, "abc123", "ABC[0-9]+", None),
    # … which turns \D into \d, exactly as the reference does.
    ({"matchStrategy": "regex", "caseInsensitive": True}, "abc", r"^\D+$", r'does not match regex "^\\d+$"'),
    ({"matchStrategy": "regex"}, "abc", r"^\D+$", None),
    ({"matchStrategy": "regex"}, "line one\nline two", "one$", "does not match regex"),
    ({"matchStrategy": "regex"}, "line one\nline two", "(?m)one$", None),
    # Lower-casing is Go's, one character at a time: İ is i, and a final Σ is σ, not ς.
    ({"caseInsensitive": True}, "İSTANBUL", "istanbul", None),
    ({"caseInsensitive": True}, "ΟΔΟΣ", "οδοσ", None),
    ({"caseInsensitive": True}, "ΟΔΟΣ", "οδος", "do not match"),
]


@pytest.mark.parametrize(("fields", "actual", "expected", "reason"), TEXT_CASES)
def test_match_text(fields: dict[str, Any], actual: str, expected: str, reason: str | None) -> None:
    result = match_text(actual, expected, _text(**fields))
    if reason is None:
        assert result is None
    else:
        assert result is not None
        assert reason in result


RE2_CASES = [
    # (pattern, actual, matches?, case-insensitive?): Go's RE2 semantics, not Python's re.
    ("42$", "The answer is 42", True, False),
    ("42$", "The answer is 42\n", False, False),
    ("(?m)42$", "The answer is 42\n", True, False),
    (r"42\z", "The answer is 42", True, False),
    (r"42\z", "The answer is 42\n", False, False),
    (r"^\d+$", "42", True, False),
    (r"^\d+$", "٤٢", False, False),
    (r"^\w+$", "café", False, False),
    (r"\s", "a\u00a0b", False, False),
    (r"\bfoo\b", "éfooé", True, False),
    (r"\p{Han}+", "答案是北京", True, False),
    (r"^\p{Han}+$", "北京 Beijing", False, False),
    (r"^\pL+$", "Straße", True, False),
    (r"\p{Greek}", "Ωmega", True, False),
    (r"\Q1.5\E", "version 1.5", True, False),
    (r"\Q1.5\E", "version 105", False, False),
    (r"\Q(a+\E", "x(a+y", True, False),
    ("answer: [0-9]+$", "ANSWER: 42", True, True),
    ("ANSWER: [0-9]+$", "answer: 42", True, True),
    ("answer: [0-9]+$", "ANSWER: 42\n", False, True),
    (r"(?i)HELLO \p{Han}+", "hello 世界", True, False),
]


@pytest.mark.parametrize(("pattern", "actual", "matches", "case_insensitive"), RE2_CASES)
def test_regex_follows_re2(pattern: str, actual: str, matches: bool, case_insensitive: bool) -> None:
    criterion = _text(matchStrategy="regex", caseInsensitive=case_insensitive)
    result = match_text(actual, pattern, criterion)
    assert (result is None) == matches, result


@pytest.mark.parametrize(
    ("pattern", "detail"),
    [
        ("[invalid(", "missing ]"),
        ("(?=lookahead)", "invalid perl operator"),
        (r"(a)\1", r"invalid escape sequence: \1"),
        (r"\p{NoSuchScript}", "invalid character class range"),
    ],
)
def test_invalid_regex_names_the_pattern(pattern: str, detail: str) -> None:
    with pytest.raises(ConfigError) as info:
        match_text("source", pattern, _text(matchStrategy="regex"))
    assert str(info.value).startswith(f"text criterion: invalid regex {json.dumps(pattern)}: ")
    assert detail in str(info.value)


def test_case_insensitive_lower_cases_the_pattern_like_the_reference() -> None:
    # Go lower-cases the pattern too, and \p{han} is not a valid class there either.
    with pytest.raises(ConfigError, match=r"invalid regex \"\\\\p\{han\}\+\""):
        match_text("北京", r"\p{Han}+", _text(matchStrategy="regex", caseInsensitive=True))


def test_regex_on_text_with_a_lone_surrogate() -> None:
    assert match_text("a\ud800b", "^a.b$", _text(matchStrategy="regex")) is None
    assert match_text("a\ud800b", "\ufffd", _text(matchStrategy="regex")) is None


def test_reason_is_one_line_and_truncated() -> None:
    result = match_text("a\n" * 500, "b", _text())
    assert result is not None
    assert "\n" not in result
    assert len(result) < 500
    assert "…" in result


WORDS = " ".join(f"word{i}" for i in range(60))
"""A text of 409 characters: too long for a reason to show whole."""


def test_long_texts_that_differ_near_the_end_are_shown_around_the_difference() -> None:
    actual, expected = WORDS.replace("word42", "blue"), WORDS.replace("word42", "red")

    reason = match_text(actual, expected, _text())

    at = WORDS.index("word42") + 1
    assert reason == (
        'actual "…word34 word35 word36 word37 word38 word39 word40 word41 blue word43 word44 word45 word46 word47 '
        'word48 word49 word50 word51 word52 word53 word54 word55…" and expected "…word34 word35 word36 word37 word38 '
        "word39 word40 word41 red word43 word44 word45 word46 word47 word48 word49 word50 word51 word52 word53 "
        f'word54 word55…" do not match (they differ from character {at})'
    )


def test_a_long_text_that_only_adds_to_the_other_shows_where_the_shorter_ends() -> None:
    reason = match_text(WORDS + " and more", WORDS, _text())

    assert reason is not None
    assert reason.startswith('actual "…word52 word53 word54 word55 word56 word57 word58 word59 and more" and expected ')
    tail = '"…word52 word53 word54 word55 word56 word57 word58 word59" do not match'
    assert reason.endswith(f"{tail} (they differ from character {len(WORDS) + 1})")


def test_a_long_case_insensitive_mismatch_shows_the_original_texts_around_the_difference() -> None:
    reason = match_text(WORDS.upper().replace("WORD50", "BLUE"), WORDS, _text(caseInsensitive=True))

    assert reason is not None
    assert "WORD49 BLUE WORD51" in reason and "word49 word50 word51" in reason
    assert reason.endswith(f"do not match (case-insensitive; they differ from character {WORDS.index('word50') + 1})")


def test_a_long_reply_to_a_short_expected_text_shows_its_start() -> None:
    reply = "calc result: 9. " + "Here is a long explanation. " * 30

    reason = match_text(reply, "calc result: 9", _text())

    assert reason is not None
    assert reason.startswith('actual "calc result: 9. Here is a long explanation.')
    assert reason.endswith('…" and expected "calc result: 9" do not match (they differ from character 15)')


@pytest.mark.parametrize("strategy", ["contains", "regex"])
def test_only_the_exact_match_shows_long_texts_around_a_difference(strategy: str) -> None:
    reason = match_text(WORDS.replace("word42", "blue"), WORDS, _text(matchStrategy=strategy))

    assert reason is not None and "blue" not in reason and "differ from" not in reason


def test_short_texts_show_whole_with_no_position() -> None:
    assert match_text("Same", "other", _text(caseInsensitive=True)) == (
        'actual "Same" and expected "other" do not match (case-insensitive)'
    )


@pytest.mark.parametrize(
    ("fields", "expected", "message"),
    [
        ({"matchStrategy": "regex"}, "[invalid(", "invalid regex"),
        ({"length": {}}, "x", "must configure min or max"),
        ({"length": {"min": 3, "max": 1}}, "x", "min"),
        ({"compareName": "trim_equal"}, "x", 'text compare "trim_equal" is not registered'),
    ],
)
def test_match_text_config_errors(fields: dict[str, Any], expected: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        match_text("source", expected, _text(**fields))


def test_match_text_unknown_strategy() -> None:
    criterion = TextCriterion.model_construct(match_strategy="unknown")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="invalid matchStrategy 'unknown'"):
        match_text("a", "b", criterion)


def test_default_strategy_is_exact() -> None:
    assert TextCriterion().match_strategy == TextMatchStrategy.DEFAULT
    assert match_text("a", "a", TextCriterion()) is None
    assert match_text("a", "ab", TextCriterion()) is not None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"length": {}}, "criterion.finalResponse.text.length must configure min or max"),
        ({"length": {"max": -1}}, "criterion.finalResponse.text.length: max must be non-negative, got -1"),
        ({"length": {"min": 3, "max": 2}}, r"criterion.finalResponse.text.length: min \(3\) must be less than"),
    ],
)
def test_check_text_criterion_names_the_bad_length(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check_text_criterion(TextCriterion.model_validate(fields), "criterion.finalResponse.text")


@pytest.mark.parametrize(
    "fields",
    [
        {"ignore": True, "length": {}},
        {"compareName": "mine", "length": {}},
        {"length": {"ignore": True, "min": 3, "max": 1}},
        {"matchStrategy": "regex"},
    ],
)
def test_check_text_criterion_skips_what_is_not_used(fields: dict[str, Any]) -> None:
    check_text_criterion(TextCriterion.model_validate(fields))
