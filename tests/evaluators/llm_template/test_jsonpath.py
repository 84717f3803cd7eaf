"""The restricted JSON path and Go-compatible compact JSON, mirroring the reference's tables."""

from __future__ import annotations

from typing import Any

import pytest

from agenteval.errors import JSONPathError
from agenteval.evaluators.llm.jsonpath import encode_compact, extract

VALID = [
    # (name, raw, path, rendered)
    ("dotted key", '{"payload":{"answer":"Paris"}}', "$.payload.answer", "Paris"),
    ("implicit root", '{"payload":{"evidence":{"city":"Paris"}}}', "payload.evidence", '{"city":"Paris"}'),
    ("array index", '{"items":[{"name":"first"},{"name":"second"}]}', "$.items[1].name", "second"),
    ("root object", '{"answer":"Paris"}', "$", '{"answer":"Paris"}'),
    ("empty path root object", '{"answer":"Paris"}', "", '{"answer":"Paris"}'),
    ("root index", '[{"id":"call-1"}]', "$[0].id", "call-1"),
    ("implicit root index", "[1,2]", "[1]", "2"),
    ("boolean", '{"ok":true}', "$.ok", "true"),
    ("false boolean", '{"ok":false}', "$.ok", "false"),
    ("null", '{"value":null}', "$.value", "null"),
    ("large number", '{"id":9007199254740993}', "$.id", "9007199254740993"),
    ("number as written", '{"n":1.50}', "$.n", "1.50"),
    ("exponent as written", '{"n":[1E+2]}', "$.n", "[1E+2]"),
    ("object keeps comparison characters", '{"rule":{"text":"x < y > z & a"}}', "$.rule", '{"text":"x < y > z & a"}'),
    ("objects re-encoded compact with sorted keys", '{ "b" : 1 ,\n "a" : [ 2 , "x" ] }', "$", '{"a":[2,"x"],"b":1}'),
    ("string rendered raw", '{"s":"line\\nbreak \\"q\\""}', "$.s", 'line\nbreak "q"'),
    ("string root", '"just text"', "$", "just text"),
    ("surrounding whitespace", '  \n{"a":"b"}\t ', "$.a", "b"),
    ("non-ASCII kept", '{"city":"北京"}', "$", '{"city":"北京"}'),
    ("unicode escapes decoded", '{"a":"\\u00e9"}', "$", '{"a":"é"}'),
    ("line separator escaped like Go", '{"a":"x\\u2028y"}', "$", '{"a":"x\\u2028y"}'),
    ("key with spaces", '{"a key":{"b":1}}', "$.a key.b", "1"),
    ("leading zero index", '{"items":["a","b"]}', "$.items[01]", "b"),
]


@pytest.mark.parametrize(("raw", "path", "rendered"), [case[1:] for case in VALID], ids=[case[0] for case in VALID])
def test_extract_renders_the_selected_value(raw: str, path: str, rendered: str) -> None:
    assert extract(raw, path) == rendered


INVALID = [
    # (name, raw, path, message fragment)
    ("invalid json", "plain text", "$.answer", "parse source json"),
    ("empty source", "", "$", "parse source json"),
    ("multiple json values", "{} {}", "$", "multiple JSON values"),
    ("invalid trailing json", "{} [", "$", "parse source json"),
    ("trailing garbage", '{"a":1} x', "$", "parse source json"),
    ("NaN is not JSON", '{"a":NaN}', "$", "parse source json"),
    ("invalid root selector", '{"payload":{"answer":"Paris"}}', "$payload.answer", "invalid root selector"),
    ("missing key after dot", '{"payload":{"answer":"Paris"}}', "$.payload.", "missing key"),
    ("double dot", '{"payload":{"answer":"Paris"}}', "$..answer", "missing key"),
    ("unexpected closing bracket", '{"payload":{"answer":"Paris"}}', "$.payload]", "unexpected ]"),
    ("wildcard", '{"payload":{"answer":"Paris"}}', "$.payload.*", "unsupported wildcard"),
    ("wildcard index", '{"items":[1]}', "$.items[*]", "invalid index"),
    ("quoted key", '{"a":1}', "$['a']", "invalid index"),
    ("filter", '{"items":[1]}', "$.items[?(@>0)]", "invalid index"),
    ("slice", '{"items":[1]}', "$.items[0:1]", "invalid index"),
    ("negative index", '{"items":[1]}', "$.items[-1]", "index -1 out of range"),
    ("missing key", '{"payload":{}}', "$.payload.answer", 'key "answer" not found'),
    ("object expected", '{"payload":[]}', "$.payload.answer", "expects object before key"),
    ("index out of range", '{"items":[]}', "$.items[0]", "index 0 out of range"),
    ("array expected", '{"items":{}}', "$.items[0]", "expects array before index 0"),
    ("missing closing bracket", '{"items":[]}', "$.items[0", "missing ]"),
    ("missing index", '{"items":[]}', "$.items[]", "missing index"),
    ("invalid index", '{"items":[]}', "$.items[one]", "invalid index"),
    ("index with spaces", '{"items":[1]}', "$.items[ 0 ]", "invalid index"),
    ("missing delimiter after index", '{"items":[{"name":"first"}]}', "$.items[0]name", "missing delimiter"),
]


@pytest.mark.parametrize(("raw", "path", "fragment"), [case[1:] for case in INVALID], ids=[case[0] for case in INVALID])
def test_extract_rejects(raw: str, path: str, fragment: str) -> None:
    with pytest.raises(JSONPathError) as caught:
        extract(raw, path)
    assert fragment in str(caught.value)


ENCODED = [
    (None, "null"),
    (True, "true"),
    (18, "18"),
    (1.0, "1"),
    (0.5, "0.5"),
    (-0.0, "0"),
    (1e16, "10000000000000000"),
    (1e20, "100000000000000000000"),
    (1e21, "1e+21"),
    (1e-5, "0.00001"),
    (1e-7, "1e-7"),
    (1.5e-7, "1.5e-7"),
    (123456.789, "123456.789"),
    ({"b": 1, "a": {"d": [1, "x"], "c": None}}, '{"a":{"c":null,"d":[1,"x"]},"b":1}'),
    ("x < y & z", '"x < y & z"'),
    ("tab\tand\x01", '"tab\\tand\\u0001"'),
]


@pytest.mark.parametrize(("value", "text"), ENCODED)
def test_encode_compact_writes_like_go(value: Any, text: str) -> None:
    assert encode_compact(value) == text


def test_encode_compact_rejects_what_json_cannot_hold() -> None:
    with pytest.raises(JSONPathError, match="unsupported"):
        encode_compact(float("nan"))
    with pytest.raises(JSONPathError, match="unsupported type"):
        encode_compact(object())
