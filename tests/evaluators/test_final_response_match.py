"""The final-response criterion, mirroring the reference's tables."""

from __future__ import annotations

import re
from typing import Any

import pytest

from agenteval.errors import ConfigError
from agenteval.evalset.message import Message
from agenteval.evalset.models import Invocation
from agenteval.evaluators.matching import check_final_response_criterion, match_final_response
from agenteval.metric.criterion import FinalResponseCriterion
from agenteval.metric.registry import MetricRegistry, use_metric_registry


def _turn(content: str | None) -> Invocation:
    return Invocation(final_response=None if content is None else Message.assistant(content))


CASES: list[tuple[str, dict[str, Any], str | None, str | None, str | None]] = [
    # (id, criterion, actual content, expected content, None on a match or a substring of the reason)
    (
        "text mismatch",
        {"text": {"matchStrategy": "exact"}},
        "a",
        "b",
        'text mismatch: actual "a" and expected "b" do not match',
    ),
    ("text contains", {"text": {"matchStrategy": "contains"}}, "calc result: 5", "5", None),
    ("json keys reordered", {"json": {}}, '{"a":1,"b":[2,3]}', '{"b":[2,3],"a":1}', None),
    ("json actual not json", {"json": {}}, "not json", "{}", "json mismatch: parse actual raw json"),
    ("json expected not json", {"json": {}}, "{}", "not json", "json mismatch: parse expected raw json"),
    (
        "json value differs",
        {"json": {}},
        '{"city":"Paris"}',
        '{"city":"Rome"}',
        'json mismatch: $.city: actual "Paris" and expected "Rome" do not match',
    ),
    ("json skip", {"json": {"matchStrategy": "skip"}}, "not json", None, None),
    ("json ignore", {"json": {"ignore": True}}, "not json", "still not json", None),
    ("text length CJK", {"text": {"length": {"min": 2, "max": 4}}}, "你好", "你好", None),
    (
        "text length only",
        {"text": {"length": {"min": 2, "max": 4}, "matchStrategy": "skip"}},
        "abcd",
        "different",
        None,
    ),
    (
        "length mismatch",
        {"text": {"length": {"min": 3}}},
        "ab",
        "ab",
        "text mismatch: length mismatch: actual length 2 is less than min 3, expected range [3, +inf)",
    ),
    (
        "reference length reason",
        {"text": {"matchStrategy": "skip", "length": {"max": 6}}},
        "x" * 137,
        None,
        "text mismatch: length mismatch: actual length 137 is greater than max 6, expected range [0, 6]",
    ),
    ("both missing", {"text": {"matchStrategy": "exact"}}, None, None, None),
    (
        "actual missing",
        {"text": {"matchStrategy": "exact"}},
        None,
        "ok",
        'the agent gave no final response (expected "ok")',
    ),
    ("expected missing compares with empty", {"text": {}}, "a", None, 'actual "a" and expected "" do not match'),
    ("expected missing, empty actual", {"text": {}}, "", None, None),
    ("expected missing, skip", {"text": {"matchStrategy": "skip"}}, "a", None, None),
    ("expected missing, json", {"json": {}}, "{}", None, "json mismatch: parse expected raw json"),
    (
        "ignored criteria, both missing",
        {"json": {"ignore": True}, "text": {"ignore": True}, "xml": {"ignore": True}},
        None,
        None,
        None,
    ),
    ("ignored criteria, actual missing", {"text": {"ignore": True}}, None, "ok", "the agent gave no final response"),
    ("ignored criteria, actual present", {"text": {"ignore": True}, "rouge": {"ignore": True}}, "a", "b", None),
    ("text and json pass", {"text": {"matchStrategy": "exact"}, "json": {}}, '{"a":1}', '{"a":1}', None),
    (
        "text fails, json passes",
        {"text": {"matchStrategy": "exact"}, "json": {}},
        '{"a":1}',
        '{\n  "a": 1\n}',
        'text mismatch: actual "{\\"a\\":1}" and expected "{\\n  \\"a\\": 1\\n}" do not match',
    ),
    (
        "json fails, text passes",
        {"text": {"matchStrategy": "contains"}, "json": {}},
        "not json",
        "not",
        'json mismatch: parse actual raw json: Expecting value: line 1 column 1 (char 0) (text "not json")',
    ),
]


@pytest.mark.parametrize(("fields", "actual", "expected", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_match_final_response(
    fields: dict[str, Any], actual: str | None, expected: str | None, reason: str | None
) -> None:
    result = match_final_response(_turn(actual), _turn(expected), FinalResponseCriterion.model_validate(fields))
    if reason is None:
        assert result is None
    else:
        assert result is not None
        assert reason in result, result


def test_mismatches_are_joined_json_first() -> None:
    criterion = FinalResponseCriterion.model_validate({"text": {"matchStrategy": "exact"}, "json": {}})
    result = match_final_response(_turn("not json"), _turn("expected"), criterion)
    assert result == (
        'json mismatch: parse actual raw json: Expecting value: line 1 column 1 (char 0) (text "not json"); '
        'text mismatch: actual "not json" and expected "expected" do not match'
    )


MEASURED: list[tuple[str, dict[str, Any], str | None, str | None, list[tuple[str, Any]]]] = [
    # (id, criterion, actual content, expected content, the measures in order)
    (
        "json then rouge",
        {"rouge": {"rougeType": "rouge1"}, "text": {"matchStrategy": "skip"}, "json": {}},
        '{"a": 1, "b": "x"}',
        '{"a": 3, "b": "y"}',
        [
            ("json_max_number_difference", 2.0),
            ("rouge1_f1", 0.5),
            ("rouge1_precision", 0.5),
            ("rouge1_recall", 0.5),
        ],
    ),
    (
        "rouge with a chosen measure",
        {"rouge": {"rougeType": "rougeL", "measure": "recall"}},
        "the cat",
        "the cat sat",
        [("rougeL_recall", pytest.approx(2 / 3)), ("rougeL_precision", 1.0), ("rougeL_f1", pytest.approx(0.8))],
    ),
    ("text only", {"text": {}}, "a", "b", []),
    ("json shapes differ", {"json": {}}, '{"a": 1}', "[1]", []),
    ("actual missing", {"json": {}, "rouge": {"rougeType": "rouge1"}}, None, '{"a": 1}', []),
]


@pytest.mark.parametrize(
    ("fields", "actual", "expected", "measured"), [c[1:] for c in MEASURED], ids=[c[0] for c in MEASURED]
)
def test_match_final_response_measures_in_sub_criterion_order_without_changing_the_verdict(
    fields: dict[str, Any], actual: str | None, expected: str | None, measured: list[tuple[str, Any]]
) -> None:
    criterion = FinalResponseCriterion.model_validate(fields)
    measures: dict[str, float] = {}
    result = match_final_response(_turn(actual), _turn(expected), criterion, measures)
    assert result == match_final_response(_turn(actual), _turn(expected), criterion)
    assert list(measures.items()) == measured


def test_a_named_final_response_compare_measures_nothing() -> None:
    registry = MetricRegistry()
    registry.register_final_response_compare("always", lambda actual, expected: True)
    criterion = FinalResponseCriterion.model_validate({"compareName": "always", "json": {}})
    measures: dict[str, float] = {}
    with use_metric_registry(registry):
        assert match_final_response(_turn("1"), _turn("2"), criterion, measures) is None
    assert measures == {}


def test_text_and_length_mismatches_both_reported() -> None:
    criterion = FinalResponseCriterion.model_validate(
        {"text": {"matchStrategy": "exact", "length": {"min": 10}}, "json": {"matchStrategy": "skip"}}
    )
    result = match_final_response(_turn("short"), _turn("expected"), criterion)
    assert result == "text mismatch: length mismatch: actual length 5 is less than min 10, expected range [10, +inf)"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {},
            "^final response criterion must configure text, json, rouge, or xml: for an exact match give it "
            + re.escape(
                "ae.criteria.FinalResponseCriterion(text=ae.criteria.TextCriterion()) "
                '(in a metrics file: "finalResponse": {"text": {}})'
            )
            + "$",
        ),
        (
            {"compareName": "always_pass"},
            'criterion.finalResponse.compareName "always_pass" is not registered as a final response compare',
        ),
        ({"text": {"compareName": "trim"}}, 'finalResponse.text.compareName "trim" is not registered as a text'),
        ({"json": {"compareName": "delta", "ignore": True}}, 'finalResponse.json.compareName "delta"'),
        (
            {"text": {"compareName": "a"}, "json": {"compareName": "b"}, "rouge": {"tokenizerName": "c"}},
            'text.compareName "a" .*; .*json.compareName "b" .*; .*rouge.tokenizerName "c" is not registered',
        ),
        ({"rouge": {"threshold": {"f1": 0.5}}}, "criterion.finalResponse.rouge.rougeType is required"),
        ({"text": {}, "xml": {"valid": True}}, "xml match strategy is empty"),
        (
            {"xml": {"matchStrategy": "skip"}, "json": {"schema": {"minimum": "1"}}},
            r"criterion.finalResponse.json.schema is not a valid JSON Schema: at \$.minimum: '1' is not of type",
        ),
    ],
)
def test_check_final_response_criterion_errors(fields: dict[str, Any], message: str) -> None:
    criterion = FinalResponseCriterion.model_validate(fields)
    with pytest.raises(ConfigError, match=message):
        check_final_response_criterion(criterion)
    with pytest.raises(ConfigError, match=message):
        match_final_response(_turn(None), _turn(None), criterion)


@pytest.mark.parametrize(
    "fields",
    [
        {"rouge": {"ignore": True}},
        {"xml": {"ignore": True}},
        {"xml": {"matchStrategy": "skip"}},
        {"text": {}},
        {"json": {}},
        {"json": {"ignore": True, "schema": {"type": 1}}},
    ],
)
def test_check_final_response_criterion_accepts(fields: dict[str, Any]) -> None:
    check_final_response_criterion(FinalResponseCriterion.model_validate(fields))


def test_config_errors_surface_through_text() -> None:
    criterion = FinalResponseCriterion.model_validate({"text": {"matchStrategy": "regex"}})
    with pytest.raises(ConfigError, match="invalid regex"):
        match_final_response(_turn("a"), _turn("("), criterion)
