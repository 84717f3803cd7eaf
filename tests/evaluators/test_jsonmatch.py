"""The JSON criterion, mirroring the reference's tables plus the inventory's edge cases."""

from __future__ import annotations

from typing import Any

import pytest

from agenteval.errors import ConfigError
from agenteval.evaluators.matching import (
    JSON_NUMBER_DIFFERENCE,
    check_json_schema,
    format_value,
    match_json,
    match_json_text,
    max_number_difference,
    parse_json_text,
)
from agenteval.metric.criterion import JSONCriterion, JSONMatchStrategy
from agenteval.metric.json_match import _compiled_schema as compiled

IGNORE_TREE = {"time": True, "meta": {"time": True}}

CASES: list[tuple[str, dict[str, Any], Any, Any, str | None]] = [
    # (id, criterion, actual, expected, None on a match or a substring of the reason)
    # Plain exact comparison.
    ("map equal", {}, {"k": "v"}, {"k": "v"}, None),
    ("map value differs", {}, {"k": "v"}, {"k": "diff"}, '$.k: actual "v" and expected "diff" do not match'),
    ("key order irrelevant", {}, {"a": 1, "b": [2, 3]}, {"b": [2, 3], "a": 1}, None),
    ("extra actual key", {}, {"a": 1, "b": 2}, {"a": 1}, '$: key "b" in actual but not in expected'),
    ("missing key", {}, {"a": 1}, {"a": 1, "b": 2}, '$: key "b" in expected but not in actual'),
    ("several missing keys", {}, {}, {"a": 1, "b": 2}, '$: keys "a", "b" in expected but not in actual'),
    ("scalar equal", {}, "ok", "ok", None),
    ("both null", {}, None, None, None),
    ("null vs string", {}, None, "x", '$: actual null and expected "x" do not match'),
    ("string vs null", {}, "x", None, '$: actual "x" and expected null do not match'),
    ("null vs zero", {}, None, 0, "do not match"),
    ("map vs scalar", {}, {"k": "v"}, "x", "$: actual is an object but expected is a string"),
    ("scalar vs map", {}, "x", {"k": "v"}, "$: actual is a string but expected is an object"),
    ("array vs scalar", {}, [1], "x", "$: actual is an array but expected is a string"),
    ("scalar vs array", {}, "x", [1], "$: actual is a string but expected is an array"),
    ("array equal", {}, [1, 2], [1, 2], None),
    ("array order matters", {}, [1, 2], [2, 1], "$[0]: actual 1 and expected 2 do not match"),
    ("array element differs", {}, [1.0], [2.0], "$[0]: actual 1.0 and expected 2.0 do not match (tolerance 1e-06)"),
    ("array length", {}, [1], [1, 2], "$: array length mismatch: actual(1) != expected(2)"),
    ("nested path", {}, {"items": [1, 2, {"a": "x"}]}, {"items": [1, 2, {"a": "y"}]}, "$.items[2].a: actual"),
    ("quoted path", {}, {"a b": {"c": 1}}, {"a b": {"c": 2}}, '$["a b"].c: actual 1 and expected 2'),
    ("string vs number", {}, "1", 1, '$: actual "1" and expected 1 do not match'),
    # Numbers: absolute tolerance 1e-6 by default, ints and floats alike, bool is never a number.
    ("default tolerance", {}, {"value": 0.3000005}, {"value": 0.3}, None),
    ("tolerance exceeded", {}, {"value": 0.301}, {"value": 0.3}, "$.value: actual 0.301 and expected 0.3"),
    ("exactly at the boundary", {}, {"value": 1e-6}, {"value": 0}, None),
    ("just past the boundary", {}, {"value": 1.0000011e-6}, {"value": 0}, "$.value"),
    ("int vs float", {}, {"value": 10.0000004}, {"value": 10}, None),
    ("int vs int", {}, 3, 3, None),
    ("int vs int differs", {}, 3, 4, "$: actual 3 and expected 4 do not match"),
    ("float64 semantics", {}, 2**53 + 1, 2**53, None),
    ("huge ints", {}, 10**400, 10**400, None),
    ("huge ints differ", {}, 10**400, 10**400 + 1, "do not match"),
    ("array tolerance", {}, [0.3000005], [0.3], None),
    ("zero tolerance", {"numberTolerance": 0}, {"value": 1.0000001}, {"value": 1.0}, "$.value"),
    ("custom tolerance", {"numberTolerance": 0.2}, {"value": 1.1}, {"value": 1.0}, None),
    (
        "tolerance with ignoreTree",
        {"ignoreTree": {"skip": True}},
        {"skip": 1.5, "value": 10.0000004},
        {"skip": 2, "value": 10},
        None,
    ),
    (
        "true vs 1",
        {},
        {"v": True},
        {"v": 1},
        "$.v: actual true and expected 1 do not match (a bool never equals a number)",
    ),
    ("1 vs true", {}, 1, True, "$: actual 1 and expected true do not match"),
    ("false vs 0", {}, False, 0, "do not match"),
    ("bool vs bool", {}, [True, False], [True, False], None),
    ("bool differs", {}, True, False, "do not match"),
    # ignoreTree.
    (
        "ignoreTree",
        {"ignoreTree": IGNORE_TREE},
        {"city": "Shanghai", "time": "t", "meta": {"time": "12:00", "id": "t-1"}},
        {"city": "Shanghai", "meta": {"id": "t-1"}},
        None,
    ),
    (
        "ignoreTree mismatch",
        {"ignoreTree": IGNORE_TREE},
        {"city": "Beijing", "time": "t", "meta": {"time": "12:00", "id": "t-1"}},
        {"city": "Shanghai", "meta": {"id": "t-1"}},
        '$.city: actual "Beijing" and expected "Shanghai"',
    ),
    ("empty ignoreTree", {"ignoreTree": {}}, {"city": "Shanghai"}, {"city": "Shanghai"}, None),
    (
        "nested child ignored",
        {"ignoreTree": {"meta": {"time": True}}},
        {"meta": {"id": "1", "time": "12:00"}},
        {"meta": {"id": "1"}},
        None,
    ),
    (
        "nested mismatch on kept key",
        {"ignoreTree": {"meta": {"time": True}}},
        {"meta": {"id": "1", "time": "12:00"}},
        {"meta": {"id": "2"}},
        '$.meta.id: actual "1" and expected "2"',
    ),
    (
        "ignored key present on both sides",
        {"ignoreTree": {"time": True}},
        {"meta": {"id": "1"}, "time": "12:00"},
        {"time": "ignored", "meta": {"id": "1"}},
        None,
    ),
    (
        "nested extra key",
        {"ignoreTree": {"meta": {"time": True}}},
        {"meta": {"id": "1", "time": "12:00", "country": "CN"}},
        {"meta": {"id": "1"}},
        '$.meta: key "country" in actual but not in expected',
    ),
    (
        "ignored keys missing either side",
        {"ignoreTree": {"skipActual": True, "skipExpected": True}},
        {"keep": "v", "skipActual": "x"},
        {"keep": "v", "skipExpected": "y"},
        None,
    ),
    (
        "non-bool does not ignore",
        {"ignoreTree": {"skip": "true"}},
        {"skip": "x"},
        {},
        '$: key "skip" in actual but not in expected',
    ),
    ("false does not ignore", {"ignoreTree": {"skip": False}}, {"skip": "x"}, {"skip": "y"}, "$.skip"),
    (
        "non-object child not nested",
        {"ignoreTree": {"meta": "true"}},
        {"meta": {"id": "1", "time": "12:00"}},
        {"meta": {"id": "1", "time": "ignored"}},
        "$.meta.time",
    ),
    (
        "ignoreTree not inside arrays",
        {"ignoreTree": {"items": {"t": True}}},
        {"items": [{"t": 1, "id": 1}]},
        {"items": [{"t": 2, "id": 1}]},
        "$.items[0].t: actual 1 and expected 2",
    ),
    ("ignoreTree on non-objects", {"ignoreTree": {"a": True}}, [1], [1], None),
    # onlyTree.
    (
        "onlyTree top level",
        {"onlyTree": {"city": True}},
        {"city": "Shanghai", "time": "t"},
        {"city": "Shanghai", "unexpectedKey": "x"},
        None,
    ),
    (
        "onlyTree nested",
        {"onlyTree": {"meta": {"id": True}}},
        {"city": "Beijing", "meta": {"id": "t-1", "time": "12:00"}},
        {"city": "Shanghai", "meta": {"id": "t-1", "time": "x"}},
        None,
    ),
    (
        "onlyTree nested mismatch",
        {"onlyTree": {"meta": {"id": True}}},
        {"meta": {"id": "t-1"}},
        {"meta": {"id": "t-2"}},
        '$.meta.id: actual "t-1" and expected "t-2"',
    ),
    (
        "onlyTree key missing in expected",
        {"onlyTree": {"meta": {"id": True}}},
        {"meta": {"id": "t-1"}},
        {},
        "$.meta: key in onlyTree but not in expected",
    ),
    (
        "onlyTree key missing in actual",
        {"onlyTree": {"missing": True}},
        {},
        {"missing": "v"},
        "$.missing: key in onlyTree but not in actual",
    ),
    (
        "onlyTree nested key missing in actual",
        {"onlyTree": {"meta": {"id": True}}},
        {},
        {"meta": {"id": "1"}},
        "$.meta: key in onlyTree but not in actual",
    ),
    (
        "onlyTree deep key missing",
        {"onlyTree": {"meta": {"id": True}}},
        {"meta": {}},
        {"meta": {"id": "1"}},
        "$.meta.id: key in onlyTree but not in actual",
    ),
    (
        "empty onlyTree does not conflict",
        {"ignoreTree": {"skip": True}, "onlyTree": {}},
        {"keep": "v", "skip": "x"},
        {"keep": "v"},
        None,
    ),
    (
        "empty ignoreTree does not conflict",
        {"ignoreTree": {}, "onlyTree": {"keep": True}},
        {"keep": "v", "other": "x"},
        {"keep": "v", "other": "y"},
        None,
    ),
    ("onlyTree scalar falls back to exact", {"onlyTree": {"keep": True}}, "x", "x", None),
    ("onlyTree scalar mismatch", {"onlyTree": {"keep": True}}, "x", "y", '$: actual "x" and expected "y"'),
    (
        "onlyTree true compares subtree",
        {"onlyTree": {"meta": True}},
        {"meta": {"id": "1", "extra": "x"}, "other": 1},
        {"meta": {"id": "1", "extra": "x"}, "unexpected": 2},
        None,
    ),
    (
        "onlyTree true subtree extra key",
        {"onlyTree": {"meta": True}},
        {"meta": {"id": "1", "extra": "x"}},
        {"meta": {"id": "1"}},
        '$.meta: key "extra" in actual but not in expected',
    ),
    (
        "onlyTree true subtree missing key",
        {"onlyTree": {"meta": True}},
        {"meta": {"id": "1"}},
        {"meta": {"id": "1", "extra": "x"}},
        '$.meta: key "extra" in expected but not in actual',
    ),
    (
        "onlyTree true subtree mismatch",
        {"onlyTree": {"meta": True}},
        {"meta": {"id": "1"}},
        {"meta": {"id": "2"}},
        "$.meta.id",
    ),
    (
        "onlyTree false skipped",
        {"onlyTree": {"skip": False, "keep": True}},
        {"keep": "v", "skip": "x"},
        {"keep": "v", "skip": "y"},
        None,
    ),
    ("onlyTree false missing key", {"onlyTree": {"skip": False}}, {}, {"skip": "y"}, None),
    (
        "onlyTree map vs scalar",
        {"onlyTree": {"keep": True}},
        {"keep": "v"},
        "x",
        "actual is an object but expected is a string",
    ),
    (
        "onlyTree scalar vs map",
        {"onlyTree": {"keep": True}},
        "x",
        {"keep": "v"},
        "actual is a string but expected is an object",
    ),
    ("onlyTree both null", {"onlyTree": {"keep": True}}, None, None, None),
    ("onlyTree null vs value", {"onlyTree": {"keep": True}}, None, "x", "do not match"),
    ("onlyTree value vs null", {"onlyTree": {"keep": True}}, "x", None, "do not match"),
    ("onlyTree subtree nulls", {"onlyTree": {"meta": True}}, {"meta": None}, {"meta": None}, None),
    (
        "onlyTree subtree null mismatch",
        {"onlyTree": {"meta": True}},
        {"meta": None},
        {"meta": "x"},
        '$.meta: actual null and expected "x"',
    ),
    (
        "onlyTree subtree map vs scalar",
        {"onlyTree": {"meta": True}},
        {"meta": {"id": "1"}},
        {"meta": "x"},
        "$.meta: actual is an object",
    ),
    (
        "onlyTree subtree scalar vs map",
        {"onlyTree": {"meta": True}},
        {"meta": "x"},
        {"meta": {"id": "1"}},
        "$.meta: actual is a string",
    ),
    (
        "onlyTree not inside arrays",
        {"onlyTree": {"items": {"id": True}}},
        {"items": [{"id": 1, "t": 1}]},
        {"items": [{"id": 1, "t": 2}]},
        "$.items[0].t",
    ),
    ("onlyTree empty selector object", {"onlyTree": {"meta": {}}}, {"meta": {"a": 1}}, {"meta": {"b": 2}}, None),
    # ignore / skip.
    ("ignore", {"ignore": True}, {"k": "v"}, {"k": "diff"}, None),
    (
        "ignore beats conflicting trees",
        {"ignore": True, "onlyTree": {"a": True}, "ignoreTree": {"b": True}},
        1,
        2,
        None,
    ),
    ("skip", {"matchStrategy": "skip"}, "not json", "not checked", None),
    ("exact explicit", {"matchStrategy": "exact"}, {"a": 1}, {"a": 2}, "$.a"),
]


@pytest.mark.parametrize(
    ("fields", "actual", "expected", "reason"), [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
def test_match_json(fields: dict[str, Any], actual: Any, expected: Any, reason: str | None) -> None:
    result = match_json(actual, expected, JSONCriterion.model_validate(fields))
    if reason is None:
        assert result is None
    else:
        assert result is not None
        assert reason in result, result


def test_match_json_does_not_mutate_inputs() -> None:
    actual = {"meta": {"id": "1", "time": "x"}, "items": [1, 2]}
    expected = {"meta": {"id": "1"}, "items": [1, 2]}
    snapshot = (repr(actual), repr(expected))
    assert match_json(actual, expected, JSONCriterion(ignore_tree={"meta": {"time": True}})) is None
    assert (repr(actual), repr(expected)) == snapshot


CONFIG_ERRORS = [
    (
        {"onlyTree": {"keep": True}, "ignoreTree": {"skip": True}},
        "onlyTree and ignoreTree cannot be set at the same time",
    ),
    ({"onlyTree": {"meta": "true"}}, 'onlyTree.meta must be a bool or an object, got "true"'),
    ({"onlyTree": {"meta": {"id": 1}}}, "onlyTree.meta.id must be a bool or an object, got 1"),
    ({"onlyTree": {"a b": None}}, r'onlyTree\["a b"\] must be a bool or an object, got null'),
    ({"schema": {"type": 123}}, r"json criterion: schema is not a valid JSON Schema: at \$.type"),
    ({"schema": {"type": 123}, "matchStrategy": "skip"}, "json criterion: schema is not a valid JSON Schema"),
    ({"numberTolerance": -1}, "^json criterion: numberTolerance must be a non-negative number, got -1$"),
    ({"numberTolerance": -0.1, "valid": True}, "numberTolerance must be a non-negative number, got -0.1"),
    ({"compareName": "allow_delta"}, 'json compare "allow_delta" is not registered'),
    ({"compareName": "allow_delta", "matchStrategy": "skip"}, 'json compare "allow_delta" is not registered'),
]


@pytest.mark.parametrize(("fields", "message"), CONFIG_ERRORS)
def test_match_json_config_errors(fields: dict[str, Any], message: str) -> None:
    criterion = JSONCriterion.model_validate(fields)
    with pytest.raises(ConfigError, match=message):
        match_json({"meta": {"id": "1"}, "keep": 1}, {"meta": {"id": "1"}, "keep": 1}, criterion)
    with pytest.raises(ConfigError, match=message):
        match_json_text('{"keep": 1}', '{"keep": 1}', criterion)


def test_match_json_unknown_strategy() -> None:
    criterion = JSONCriterion.model_construct(match_strategy="invalid")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="invalid matchStrategy 'invalid'"):
        match_json({"k": "v"}, {"k": "v"}, criterion)


def test_skip_does_not_validate_only_tree() -> None:
    # The reference only looks at onlyTree leaves while comparing; skip never compares.
    criterion = JSONCriterion(match_strategy=JSONMatchStrategy.SKIP, only_tree={"meta": "true"})
    assert match_json(1, 2, criterion) is None


TEXT_CASES = [
    ({}, '{"a":1,"b":[2,3]}', '{"b":[2,3],"a":1}', None),
    ({}, ' {"a": 1.0000001}\n', '{"a":1}', None),
    ({}, '{"a":1}', '{"a":2}', "$.a: actual 1 and expected 2 do not match"),
    ({}, "not json", "{}", 'parse actual raw json: Expecting value: line 1 column 1 (char 0) (text "not json")'),
    ({}, "{}", "not json", "parse expected raw json"),
    ({}, "{}", "", "parse expected raw json"),
    ({}, "{} {}", "{}", "parse actual raw json: Extra data"),
    ({}, "NaN", "NaN", "parse actual raw json: invalid JSON constant NaN"),
    # Numbers beyond float64 fail to parse, as in Go.
    ({}, "1e400", "1e400", 'parse actual raw json: number 1e400 is out of range (text "1e400")'),
    ({}, "1", "[-1e400]", "parse expected raw json: number -1e400 is out of range"),
    ({}, "1" + "0" * 400, "1", "parse actual raw json: number 1" + "0" * 38 + "… is out of range"),
    (
        {"valid": True, "matchStrategy": "skip"},
        '{"a":1e400}',
        "",
        "parse actual raw json: number 1e400 is out of range",
    ),
    ({}, "1e-400", "0", None),
    ({}, "1.7976931348623157e308", "1.7976931348623157e308", None),
    ({}, '"Paris"', '"Paris"', None),
    ({}, "true", "1", "$: actual true and expected 1 do not match"),
    ({"matchStrategy": "skip"}, "not json", "not checked", None),
    ({"ignore": True}, "not json", "still not json", None),
    ({"onlyTree": {"city": True}}, '{"city":"Paris","t":1}', '{"city":"Paris","t":2}', None),
]


@pytest.mark.parametrize(("fields", "actual", "expected", "reason"), TEXT_CASES)
def test_match_json_text(fields: dict[str, Any], actual: str, expected: str, reason: str | None) -> None:
    result = match_json_text(actual, expected, JSONCriterion.model_validate(fields))
    if reason is None:
        assert result is None
    else:
        assert result is not None
        assert reason in result, result


def test_parse_json_text_rejects_numbers_out_of_float_range() -> None:
    assert parse_json_text("[1e308, -1e308, 1e-400, 12345678901234567890]") == [
        1e308,
        -1e308,
        0.0,
        12345678901234567890,
    ]
    for text in ("1e400", "-1E+309", "[1e999]", "1" + "0" * 309):
        with pytest.raises(ValueError, match="is out of range"):
            parse_json_text(text)


def test_valid_rejects_decoded_ints_out_of_float_range() -> None:
    result = match_json({"a": 10**400}, None, JSONCriterion(valid=True, match_strategy=JSONMatchStrategy.SKIP))
    assert result is not None
    assert result.startswith("actual value is not JSON: number 1000"), result
    assert "is out of range" in result


def test_parse_json_text_rejects_non_standard_constants() -> None:
    assert parse_json_text(" [1, 2.5, null] ") == [1, 2.5, None]
    for text in ("Infinity", "-Infinity", "[NaN]"):
        with pytest.raises(ValueError, match="invalid JSON constant"):
            parse_json_text(text)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("text", '"text"'),
        ({"a": [1, True, None]}, '{"a":[1,true,null]}'),
        ("line\nbreak", '"line\\nbreak"'),
        ("北京", '"北京"'),
        (object, "\"<class 'object'>\""),
        ({(1, 2): "x"}, "{(1, 2): 'x'}"),
    ],
)
def test_format_value(value: Any, shown: str) -> None:
    assert format_value(value) == shown


def test_format_value_truncates() -> None:
    shown = format_value("x" * 1000)
    assert len(shown) == 200
    assert shown.endswith("…")
    assert format_value("x" * 1000, limit=10) == '"xxxxxxxx…'


# valid and schema, mirroring the reference's tables. Each case: (id, criterion, actual, reason).
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["answer"],
    "properties": {"answer": {"type": "string"}},
}
SKIP: dict[str, Any] = {"matchStrategy": "skip"}

VALID_SCHEMA_VALUES: list[tuple[str, dict[str, Any], Any, str | None]] = [
    ("schema passes", {"schema": ANSWER_SCHEMA, **SKIP}, {"answer": "Paris"}, None),
    (
        "schema wrong type",
        {"schema": ANSWER_SCHEMA, **SKIP},
        {"answer": 123},
        "schema mismatch at $.answer: 123 is not",
    ),
    (
        "schema missing key",
        {"schema": ANSWER_SCHEMA, **SKIP},
        {},
        "schema mismatch at $: 'answer' is a required property",
    ),
    ("decoded string is a string", {"schema": {"type": "string"}, **SKIP}, "Paris", None),
    (
        "decoded number",
        {"schema": {"type": "string"}, **SKIP},
        1.0,
        "schema mismatch at $: 1.0 is not of type 'string'",
    ),
    (
        "nested paths, every error",
        {"schema": {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "integer"}}}}},
        {"items": [1, "two", 3, "four"]},
        "schema mismatch at $.items[1]: 'two' is not of type 'integer'; at $.items[3]: 'four' is not of type",
    ),
    (
        "quoted key in path",
        {"schema": {"properties": {"a b": {"const": 1}}}, **SKIP},
        {"a b": 2},
        'schema mismatch at $["a b"]: 1 was expected',
    ),
    ("true schema", {"schema": True, **SKIP}, {"anything": [1]}, None),
    ("false schema", {"schema": False, **SKIP}, "x", "schema mismatch at $: False schema does not allow 'x'"),
    ("draft 2020-12 by default", {"schema": {"prefixItems": [{"type": "string"}]}, **SKIP}, ["Paris"], None),
    ("prefixItems asserted", {"schema": {"prefixItems": [{"type": "string"}]}, **SKIP}, [1], "at $[0]: 1 is not"),
    (
        "draft-07 array items",
        {"schema": {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}]}, **SKIP},
        [1],
        "at $[0]: 1 is not of type 'string'",
    ),
    (
        "draft-07 ignores prefixItems",
        {"schema": {"$schema": "http://json-schema.org/draft-07/schema#", "prefixItems": [{"type": "string"}]}, **SKIP},
        [1],
        None,
    ),
    (
        "draft-04 exclusiveMaximum is a bool",
        {"schema": {"$schema": "https://json-schema.org/draft-04/schema", "maximum": 3, "exclusiveMaximum": True}},
        3,
        "schema mismatch at $: 3 is greater than or equal to the maximum of 3",
    ),
    (
        "2019-09",
        {"schema": {"$schema": "https://json-schema.org/draft/2019-09/schema", "minItems": 2}, **SKIP},
        [1],
        "schema mismatch at $: [1] is too short",
    ),
    (
        "format asserted before 2019-09",
        {"schema": {"$schema": "http://json-schema.org/draft-07/schema#", "format": "ipv4"}, **SKIP},
        "not an ip",
        "schema mismatch at $: 'not an ip' is not a 'ipv4'",
    ),
    ("format annotation only in 2020-12", {"schema": {"format": "ipv4"}, **SKIP}, "not an ip", None),
    ("local $ref", {"schema": {"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s"}, **SKIP}, 1, "1 is not"),
    ("bool is not an integer", {"schema": {"type": "integer"}, **SKIP}, True, "True is not of type 'integer'"),
    ("1.0 is an integer", {"schema": {"type": "integer"}, **SKIP}, 1.0, None),
    ("schema then exact compare", {"schema": {"type": "object"}}, {"a": 1}, "$.a: actual 1 and expected 2"),
    ("long messages are cut", {"schema": {"type": "string"}, **SKIP}, {"k": "x" * 1000}, "…"),
    # valid on decoded values: a string is JSON text, anything else must be representable as JSON.
    ("valid object", {"valid": True, **SKIP}, {"a": 1}, None),
    ("valid JSON text in a string", {"valid": True, **SKIP}, '{"a":1}', None),
    ("string that is not JSON", {"valid": True, **SKIP}, "not json", "parse actual raw json: Expecting value"),
    ("two values", {"valid": True, **SKIP}, "{} {}", "parse actual raw json: Extra data"),
    ("NaN is not JSON", {"valid": True, **SKIP}, float("nan"), "actual value is not JSON"),
    ("a set is not JSON", {"valid": True, **SKIP}, {1, 2}, "actual value is not JSON: Object of type set"),
    ("valid then exact", {"valid": True, "matchStrategy": "exact"}, {"a": 1}, "$.a: actual 1 and expected 2"),
    ("valid and schema share the parse", {"valid": True, "schema": {"const": "Paris"}, **SKIP}, '"Paris"', None),
    ("valid parse error first", {"valid": True, "schema": {"const": "Paris"}, **SKIP}, "Paris", "parse actual raw"),
    (
        "large integers stay exact",
        {"valid": True, "schema": {"const": 9007199254740993}, **SKIP},
        "9007199254740992",
        "schema mismatch at $: 9007199254740993 was expected",
    ),
    ("large integers match", {"valid": True, "schema": {"const": 9007199254740993}, **SKIP}, "9007199254740993", None),
    ("tuples are arrays once valid", {"valid": True, "schema": {"type": "array"}, **SKIP}, (1, 2), None),
    ("ignore wins", {"ignore": True, "valid": True, "schema": False}, "not json", None),
]


@pytest.mark.parametrize(
    ("fields", "actual", "reason"),
    [case[1:] for case in VALID_SCHEMA_VALUES],
    ids=[case[0] for case in VALID_SCHEMA_VALUES],
)
def test_match_json_valid_and_schema(fields: dict[str, Any], actual: Any, reason: str | None) -> None:
    expected = {"a": 2} if fields.get("matchStrategy") != "skip" else None
    result = match_json(actual, expected, JSONCriterion.model_validate(fields))
    if reason is None:
        assert result is None
    else:
        assert result is not None
        assert reason in result, result
        assert "\n" not in result


VALID_SCHEMA_TEXTS: list[tuple[str, dict[str, Any], str, str, str | None]] = [
    ("valid text", {"valid": True, **SKIP}, '{"a":1}', "not checked", None),
    ("valid scalar text", {"valid": True, **SKIP}, ' "Paris" ', "", None),
    ("invalid text", {"valid": True, **SKIP}, "not json", "", "parse actual raw json: Expecting value"),
    ("two values", {"valid": True, **SKIP}, "{} {}", "", "parse actual raw json: Extra data"),
    ("blank text", {"valid": True, **SKIP}, "  ", "", "parse actual raw json"),
    ("schema parses without valid", {"schema": ANSWER_SCHEMA, **SKIP}, '{"answer":"Paris"}', "", None),
    ("schema on unparsable text", {"schema": ANSWER_SCHEMA, **SKIP}, "not json", "", "parse actual raw json"),
    ("schema mismatch", {"schema": ANSWER_SCHEMA, **SKIP}, '{"answer":1}', "", "schema mismatch at $.answer: 1"),
    ("valid then exact passes", {"valid": True}, '{"a":1}', '{"a":1.0000001}', None),
    ("valid then exact fails", {"valid": True}, '{"a":1}', '{"a":2}', "$.a: actual 1 and expected 2"),
    ("valid then expected unparsable", {"valid": True}, '{"a":1}', "nope", "parse expected raw json"),
    ("schema before exact", {"schema": {"required": ["b"]}}, '{"a":1}', '{"a":1}', "'b' is a required property"),
    ("schema before expected", {"schema": {"required": ["b"]}}, '{"a":1}', "nope", "'b' is a required property"),
]


@pytest.mark.parametrize(
    ("fields", "actual", "expected", "reason"),
    [case[1:] for case in VALID_SCHEMA_TEXTS],
    ids=[case[0] for case in VALID_SCHEMA_TEXTS],
)
def test_match_json_text_valid_and_schema(
    fields: dict[str, Any], actual: str, expected: str, reason: str | None
) -> None:
    result = match_json_text(actual, expected, JSONCriterion.model_validate(fields))
    if reason is None:
        assert result is None
    else:
        assert result is not None
        assert reason in result, result


def test_schema_mismatch_lists_at_most_five_errors() -> None:
    criterion = JSONCriterion.model_validate({"schema": {"items": {"type": "string"}}, **SKIP})
    result = match_json(list(range(8)), None, criterion)
    assert result is not None
    assert result.count("is not of type") == 5
    assert result.endswith("(and more)")


INVALID_SCHEMAS: list[tuple[Any, str]] = [
    ({"type": 123}, r"at \$.type: 123 is not valid under any of the given schemas"),
    ({"minimum": "1"}, r"at \$.minimum: '1' is not of type 'number'"),
    ({"pattern": "("}, r"at \$.pattern: '\(' is not a 'regex'"),
    ({"$schema": "http://example.com/custom"}, 'unsupported \\$schema "http://example.com/custom"'),
    ({"$schema": "http://json-schema.org/draft-03/schema#"}, "unsupported"),
    ({"$schema": 7}, r"\$schema must be a string, got 7"),
    (5, "a schema must be an object or a boolean, got 5"),
    ("string", 'a schema must be an object or a boolean, got "string"'),
    ({"const": float("inf")}, "Out of range float values"),
    ({"enum": {1, 2}}, "Object of type set is not JSON serializable"),
]


@pytest.mark.parametrize(("schema", "message"), INVALID_SCHEMAS)
def test_invalid_schema_is_a_config_error(schema: Any, message: str) -> None:
    criterion = JSONCriterion(json_schema=schema, match_strategy=JSONMatchStrategy.SKIP)
    with pytest.raises(ConfigError, match="json criterion: schema is not a valid JSON Schema: " + message):
        match_json({"a": 1}, None, criterion)
    with pytest.raises(ConfigError, match="^criterion.finalResponse.json.schema is not a valid JSON Schema: "):
        check_json_schema(schema, "criterion.finalResponse.json.schema")


def test_schema_refs_are_never_fetched() -> None:
    criterion = JSONCriterion(json_schema={"$ref": "https://example.com/schema.json"}, match_strategy="skip")
    with pytest.raises(ConfigError, match="json criterion: schema cannot be applied: .*example.com/schema.json"):
        match_json({"a": 1}, None, criterion)


def test_metaschema_refs_resolve_offline() -> None:
    schema = {"$ref": "https://json-schema.org/draft/2020-12/schema"}
    criterion = JSONCriterion(json_schema=schema, match_strategy=JSONMatchStrategy.SKIP)
    assert match_json({"type": "object"}, None, criterion) is None
    assert match_json({"type": 1}, None, criterion) is not None


def test_compiled_schemas_are_cached() -> None:
    schema = {"type": "object", "properties": {"cache_probe": {"type": "integer"}}}
    compiled.cache_clear()
    criterion = JSONCriterion(json_schema=schema, match_strategy=JSONMatchStrategy.SKIP)
    for value in range(3):
        match_json({"cache_probe": value}, None, criterion)
    # The same schema written with other key order is the same entry.
    reordered = JSONCriterion(json_schema=dict(reversed(schema.items())), match_strategy=JSONMatchStrategy.SKIP)
    match_json({"cache_probe": 1}, None, reordered)
    info = compiled.cache_info()
    # Each call looks the schema up twice: to check the criterion, then to validate the value.
    assert (info.misses, info.hits) == (1, 7)


# The largest number difference, the measure behind a JSON criterion's 0/1 verdict.

NUMBER_DIFFERENCES: list[tuple[str, dict[str, Any], Any, Any, Any]] = [
    ("equal numbers", {}, {"a": 1, "b": [2.5, 3]}, {"b": [2.5, 3], "a": 1}, 0.0),
    ("largest of several", {}, {"a": 1, "b": [2, 10]}, {"a": 1.5, "b": [2, 7]}, 3.0),
    ("within tolerance still counts", {}, {"a": 1.0000001}, {"a": 1}, pytest.approx(1e-7)),
    ("other values may differ", {}, {"a": "x", "n": 4, "ok": True}, {"a": "y", "n": 1, "ok": False}, 3.0),
    ("a bare number", {}, 2, -3, 5.0),
    ("no numbers", {}, {"a": "x"}, {"a": "y"}, None),
    ("other keys", {}, {"a": 1}, {"a": 1, "b": 2}, None),
    ("other array length", {}, [1, 2], [1], None),
    ("a number against a string", {}, {"a": 1}, {"a": "1"}, None),
    ("a bool is not a number", {}, [True], [1], None),
    ("null against a number", {}, {"a": None}, {"a": 0}, None),
    ("an object against an array", {}, {"a": {}}, {"a": []}, None),
    ("ignored keys do not count", {"ignoreTree": {"t": True}}, {"a": 1, "t": 100}, {"a": 2}, 1.0),
    ("nested ignore", {"ignoreTree": {"o": {"t": True}}}, {"o": {"t": 9, "v": 1}}, {"o": {"t": 0, "v": 4}}, 3.0),
    ("only listed keys count", {"onlyTree": {"a": True}}, {"a": 1, "t": 100}, {"a": 3, "t": 0, "x": 1}, 2.0),
    ("nested only", {"onlyTree": {"o": {"v": True}}}, {"o": {"v": 1, "t": 9}}, {"o": {"v": 2}}, 1.0),
    ("an only key missing", {"onlyTree": {"a": True}}, {"b": 1}, {"a": 1}, None),
    ("overflow", {}, [1.7e308], [-1.7e308], None),
]


@pytest.mark.parametrize(
    ("fields", "actual", "expected", "difference"),
    [case[1:] for case in NUMBER_DIFFERENCES],
    ids=[case[0] for case in NUMBER_DIFFERENCES],
)
def test_max_number_difference(fields: dict[str, Any], actual: Any, expected: Any, difference: float | None) -> None:
    assert max_number_difference(actual, expected, JSONCriterion.model_validate(fields)) == difference


MEASURED_TEXTS: list[tuple[str, dict[str, Any], str, str, dict[str, float]]] = [
    ("a match", {}, '{"a": 1}', '{"a": 1}', {JSON_NUMBER_DIFFERENCE: 0.0}),
    ("a mismatch", {}, '{"a": 1, "b": 2}', '{"a": 1.5, "b": 4}', {JSON_NUMBER_DIFFERENCE: 2.0}),
    ("a schema mismatch", {"schema": {"required": ["b"]}}, '{"a": 1}', '{"a": 3}', {JSON_NUMBER_DIFFERENCE: 2.0}),
    ("different shapes", {}, '{"a": 1}', '{"b": 1}', {}),
    ("actual not JSON", {}, "a = 1", '{"a": 1}', {}),
    ("expected not JSON", {}, '{"a": 1}', "a = 1", {}),
    ("skip compares nothing", {"matchStrategy": "skip", "valid": True}, "1", "2", {}),
    ("ignore compares nothing", {"ignore": True}, "1", "2", {}),
]


@pytest.mark.parametrize(
    ("fields", "actual", "expected", "measured"),
    [case[1:] for case in MEASURED_TEXTS],
    ids=[case[0] for case in MEASURED_TEXTS],
)
def test_match_json_text_measures_the_largest_number_difference_without_changing_the_verdict(
    fields: dict[str, Any], actual: str, expected: str, measured: dict[str, float]
) -> None:
    criterion = JSONCriterion.model_validate(fields)
    measures: dict[str, float] = {}
    assert match_json_text(actual, expected, criterion, measures) == match_json_text(actual, expected, criterion)
    assert measures == measured
