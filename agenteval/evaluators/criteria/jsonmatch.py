"""The JSON criterion: compare tool arguments, tool results and JSON final responses.

Values are compared as JSON: objects need identical key sets, arrays the same length and order,
numbers are equal within an absolute tolerance (``bool`` is never a number), ``null`` only equals
``null``. ``ignoreTree`` and ``onlyTree`` select keys of objects; they never descend into arrays.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from agenteval.errors import ConfigError
from agenteval.metric.criterion import JSONCriterion, JSONMatchStrategy

__all__ = [
    "DEFAULT_NUMBER_TOLERANCE",
    "format_value",
    "match_json",
    "match_json_text",
    "parse_json_text",
]

DEFAULT_NUMBER_TOLERANCE = 1e-6
"""Absolute tolerance for numbers when ``numberTolerance`` is unset."""

_VALUE_LIMIT = 200
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def format_value(value: Any, limit: int = _VALUE_LIMIT) -> str:
    """Render a value as compact one-line JSON, cut to about ``limit`` characters.

    Args:
        value: Any value; non-JSON values fall back to ``repr``.
        limit: Longest result before it is cut with ``…``.

    Returns:
        The rendering, e.g. ``{"a":1}`` or ``"text"``.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > limit:
        return text[: max(limit - 1, 0)] + "…"
    return text


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON constant {name}")


def parse_json_text(text: str) -> Any:
    """Parse exactly one JSON value, as the reference does (no ``NaN``/``Infinity``, no trailing data).

    Raises:
        ValueError: The text is not a single JSON value.
    """
    return json.loads(text, parse_constant=_reject_constant)


def _not_registered(name: str) -> ConfigError:
    return ConfigError(
        f"json criterion: compareName {name!r} is not registered (named compares are not registered yet)"
    )


def _child_path(path: str, key: object) -> str:
    if isinstance(key, str) and _IDENTIFIER.fullmatch(key):
        return f"{path}.{key}"
    return f"{path}[{format_value(key if isinstance(key, str) else str(key))}]"


def _validate_only_tree(tree: Mapping[str, Any], path: str) -> None:
    for key, selector in tree.items():
        where = _child_path(path, key)
        if isinstance(selector, bool):
            continue
        if isinstance(selector, Mapping):
            _validate_only_tree(selector, where)
            continue
        raise ConfigError(f"json criterion: {where} must be a bool or an object, got {format_value(selector)}")


def _comparison_needed(criterion: JSONCriterion) -> bool:
    """Apply the reference's checks in its order; return whether values must be compared.

    Raises:
        ConfigError: The criterion is misconfigured or asks for something not supported yet.
    """
    if criterion.ignore:
        return False
    if criterion.only_tree and criterion.ignore_tree:
        raise ConfigError("json criterion: onlyTree and ignoreTree cannot be set at the same time")
    if criterion.compare_name:
        raise _not_registered(criterion.compare_name)
    if criterion.valid or criterion.json_schema is not None:
        raise ConfigError("json criterion: 'valid' and 'schema' are not supported yet")
    strategy = criterion.match_strategy
    if strategy == JSONMatchStrategy.SKIP:
        return False
    if strategy not in (JSONMatchStrategy.DEFAULT, JSONMatchStrategy.EXACT):
        raise ConfigError(f"json criterion: invalid matchStrategy {str(strategy)!r}")
    _validate_only_tree(criterion.only_tree, "onlyTree")
    return True


def match_json(actual: Any, expected: Any, criterion: JSONCriterion) -> str | None:
    """Compare two decoded JSON values.

    Args:
        actual: The agent's value (e.g. tool arguments).
        expected: The expected value.
        criterion: How to compare.

    Returns:
        ``None`` on a match, else a reason naming the JSON path (``$.items[2]``) with both values.

    Raises:
        ConfigError: The criterion is misconfigured (both trees set, a bad ``onlyTree`` leaf…).
    """
    if not _comparison_needed(criterion):
        return None
    return _compare_decoded(actual, expected, criterion)


def match_json_text(actual: str, expected: str, criterion: JSONCriterion) -> str | None:
    """Compare two texts holding JSON (final responses); text that is not JSON is a mismatch.

    Args:
        actual: The agent's raw text.
        expected: The expected raw text.
        criterion: How to compare.

    Returns:
        ``None`` on a match, else a reason.

    Raises:
        ConfigError: The criterion is misconfigured.
    """
    if not _comparison_needed(criterion):
        return None
    decoded: list[Any] = []
    for side, text in (("actual", actual), ("expected", expected)):
        try:
            decoded.append(parse_json_text(text))
        except ValueError as err:
            return f"parse {side} raw json: {err} (text {format_value(text)})"
    return _compare_decoded(decoded[0], decoded[1], criterion)


def _compare_decoded(actual: Any, expected: Any, criterion: JSONCriterion) -> str | None:
    tolerance = DEFAULT_NUMBER_TOLERANCE if criterion.number_tolerance is None else criterion.number_tolerance
    if criterion.only_tree:
        return _compare_only_tree(actual, expected, criterion.only_tree, "$", tolerance)
    return _compare_ignore_tree(actual, expected, criterion.ignore_tree, "$", tolerance)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a bool"
    if _is_number(value):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return f"a {type(value).__name__}"


def _numbers_equal(actual: float, expected: float, tolerance: float) -> bool:
    # Go decodes every JSON number to float64, so compare as floats too.
    try:
        return abs(float(actual) - float(expected)) <= tolerance
    except OverflowError:
        return actual == expected


def _scalars_equal(actual: Any, expected: Any, tolerance: float) -> bool:
    if _is_number(actual) and _is_number(expected):
        return _numbers_equal(actual, expected, tolerance)
    if isinstance(actual, bool) or isinstance(expected, bool):
        return isinstance(actual, bool) and isinstance(expected, bool) and actual == expected
    if _is_number(actual) or _is_number(expected):
        return False
    return bool(actual == expected)


def _value_mismatch(path: str, actual: Any, expected: Any, tolerance: float) -> str:
    reason = f"{path}: actual {format_value(actual)} and expected {format_value(expected)} do not match"
    if _is_number(actual) and _is_number(expected) and (isinstance(actual, float) or isinstance(expected, float)):
        reason += f" (tolerance {tolerance:g})"
    elif {_kind(actual), _kind(expected)} == {"a bool", "a number"}:
        reason += " (a bool never equals a number)"
    return reason


def _type_mismatch(path: str, actual: Any, expected: Any) -> str:
    return (
        f"{path}: actual is {_kind(actual)} but expected is {_kind(expected)} "
        f"(actual {format_value(actual)}, expected {format_value(expected)})"
    )


def _key_list(keys: list[Any]) -> str:
    shown = ", ".join(format_value(k, 60) for k in keys[:10])
    return shown + (", …" if len(keys) > 10 else "")


def _key_sets_differ(path: str, actual: Mapping[str, Any], expected: Mapping[str, Any], skip: set[str]) -> str | None:
    extra = [k for k in actual if k not in expected and k not in skip]
    if extra:
        noun = "key" if len(extra) == 1 else "keys"
        return f"{path}: {noun} {_key_list(extra)} in actual but not in expected"
    missing = [k for k in expected if k not in actual and k not in skip]
    if missing:
        noun = "key" if len(missing) == 1 else "keys"
        return f"{path}: {noun} {_key_list(missing)} in expected but not in actual"
    return None


def _compare_exact(actual: Any, expected: Any, path: str, tolerance: float) -> str | None:
    if actual is None or expected is None:
        return None if actual is None and expected is None else _value_mismatch(path, actual, expected, tolerance)
    actual_object, expected_object = isinstance(actual, Mapping), isinstance(expected, Mapping)
    if actual_object or expected_object:
        if not (actual_object and expected_object):
            return _type_mismatch(path, actual, expected)
        reason = _key_sets_differ(path, actual, expected, set())
        if reason:
            return reason
        for key, value in actual.items():
            reason = _compare_exact(value, expected[key], _child_path(path, key), tolerance)
            if reason:
                return reason
        return None
    actual_array, expected_array = isinstance(actual, list | tuple), isinstance(expected, list | tuple)
    if actual_array or expected_array:
        if not (actual_array and expected_array):
            return _type_mismatch(path, actual, expected)
        return _compare_array(actual, expected, path, tolerance)
    if _scalars_equal(actual, expected, tolerance):
        return None
    return _value_mismatch(path, actual, expected, tolerance)


def _compare_array(actual: Any, expected: Any, path: str, tolerance: float) -> str | None:
    if len(actual) != len(expected):
        return (
            f"{path}: array length mismatch: actual({len(actual)}) != expected({len(expected)}) "
            f"(actual {format_value(actual)}, expected {format_value(expected)})"
        )
    for index, (actual_item, expected_item) in enumerate(zip(actual, expected, strict=True)):
        reason = _compare_exact(actual_item, expected_item, f"{path}[{index}]", tolerance)
        if reason:
            return reason
    return None


def _compare_ignore_tree(
    actual: Any, expected: Any, tree: Mapping[str, Any] | None, path: str, tolerance: float
) -> str | None:
    if not tree or not (isinstance(actual, Mapping) and isinstance(expected, Mapping)):
        return _compare_exact(actual, expected, path, tolerance)
    ignored = {key for key, flag in tree.items() if flag is True}
    reason = _key_sets_differ(path, actual, expected, ignored)
    if reason:
        return reason
    for key, value in actual.items():
        if key in ignored:
            continue
        subtree = tree.get(key)
        child_tree = subtree if isinstance(subtree, Mapping) else None
        reason = _compare_ignore_tree(value, expected[key], child_tree, _child_path(path, key), tolerance)
        if reason:
            return reason
    return None


def _compare_only_tree(actual: Any, expected: Any, tree: Mapping[str, Any], path: str, tolerance: float) -> str | None:
    if not (isinstance(actual, Mapping) and isinstance(expected, Mapping)):
        return _compare_exact(actual, expected, path, tolerance)
    for key, selector in tree.items():
        if selector is False:
            continue
        child = _child_path(path, key)
        if key not in actual:
            return f"{child}: key in onlyTree but not in actual"
        if key not in expected:
            return f"{child}: key in onlyTree but not in expected"
        if selector is True:
            reason = _compare_exact(actual[key], expected[key], child, tolerance)
        else:
            reason = _compare_only_tree(actual[key], expected[key], selector, child, tolerance)
        if reason:
            return reason
    return None
