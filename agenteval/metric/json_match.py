"""The JSON criterion's comparison: tool arguments, tool results and JSON final responses.

It lives beside :class:`~agenteval.metric.criterion.JSONCriterion` because both the runner (tool mocks match
arguments) and the evaluators use it, and the runner must not import the evaluators.
:mod:`agenteval.evaluators.matching.jsonmatch` re-exports every public name.

Values are compared as JSON: objects need identical key sets, arrays the same length and order,
numbers are equal within an absolute tolerance (``bool`` is never a number), ``null`` only equals
``null``. ``ignoreTree`` and ``onlyTree`` select keys of objects; they never descend into arrays.

``valid`` requires the actual side to be one JSON value and ``schema`` validates it with a JSON
Schema (draft 2020-12 unless ``$schema`` names draft 2019-09, 7, 6 or 4). Compiled schemas are
cached, and ``$ref`` never fetches anything.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import referencing
import referencing.exceptions
from jsonschema import Draft4Validator, Draft6Validator, Draft7Validator, Draft201909Validator, Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator

from agenteval.errors import ConfigError
from agenteval.metric.criterion import JSONCriterion, JSONMatchStrategy
from agenteval.metric.registry import active_metric_registry, call_compare

__all__ = [
    "DEFAULT_NUMBER_TOLERANCE",
    "JSON_NUMBER_DIFFERENCE",
    "JSONDifference",
    "check_json_criterion",
    "check_json_schema",
    "format_value",
    "json_differences",
    "match_json",
    "match_json_text",
    "max_number_difference",
    "named_compare_mismatch",
    "parse_json_text",
]

DEFAULT_NUMBER_TOLERANCE = 1e-6
"""Absolute tolerance for numbers when ``numberTolerance`` is unset."""

JSON_NUMBER_DIFFERENCE = "json_max_number_difference"
"""Measure name of :func:`max_number_difference` in a turn's ``details.measures``."""

_V = TypeVar("_V")
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


_NUMBER_SHOWN = 40


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON constant {name}")


def _check_range(number: str) -> None:
    # Go decodes every JSON number to a float64 and fails on one out of its range.
    if math.isinf(float(number)):
        shown = number if len(number) <= _NUMBER_SHOWN else number[: _NUMBER_SHOWN - 1] + "…"
        raise ValueError(f"number {shown} is out of range")


def _parse_float(number: str) -> float:
    _check_range(number)
    return float(number)


def _parse_int(number: str) -> int:
    _check_range(number)
    return int(number)


def parse_json_text(text: str) -> Any:
    """Parse exactly one JSON value, as the reference does.

    Like Go's decoder, it rejects ``NaN``/``Infinity``, trailing data, and numbers too large for
    a 64-bit float (such as ``1e400``).

    Raises:
        ValueError: The text is not a single JSON value.
    """
    return json.loads(text, parse_constant=_reject_constant, parse_float=_parse_float, parse_int=_parse_int)


def _child_path(path: str, key: object) -> str:
    if isinstance(key, str) and _IDENTIFIER.fullmatch(key):
        return f"{path}.{key}"
    return f"{path}[{format_value(key if isinstance(key, str) else str(key))}]"


def _instance_path(parts: Iterable[str | int]) -> str:
    path = "$"
    for part in parts:
        path = f"{path}[{part}]" if isinstance(part, int) else _child_path(path, part)
    return path


def _validate_only_tree(tree: Mapping[str, Any], path: str, label: str) -> None:
    for key, selector in tree.items():
        where = _child_path(path, key)
        if isinstance(selector, bool):
            continue
        if isinstance(selector, Mapping):
            _validate_only_tree(selector, where, label)
            continue
        raise ConfigError(f"{label}: {where} must be a bool or an object, got {format_value(selector)}")


def check_json_criterion(criterion: JSONCriterion, where: str = "") -> None:
    """Reject a JSON criterion that cannot be applied, before any value is compared.

    Only what is used is checked, as :func:`match_json` uses it: nothing when ``ignore`` is set;
    only the two trees with a ``compareName`` (which replaces the rest); the match strategy,
    ``numberTolerance`` and the ``onlyTree`` leaves only when values are compared (not with ``skip``).

    Args:
        criterion: The criterion.
        where: Its location in the metric for messages, e.g. ``criterion.finalResponse.json``;
            ``""`` names it ``json criterion``.

    Raises:
        ConfigError: Both ``onlyTree`` and ``ignoreTree``; an invalid schema; an unknown match
            strategy; a negative ``numberTolerance``; an ``onlyTree`` leaf that is not a bool or an object.
    """
    if criterion.ignore:
        return
    label = where or "json criterion"
    if criterion.only_tree and criterion.ignore_tree:
        raise ConfigError(f"{label}: onlyTree and ignoreTree cannot be set at the same time")
    if criterion.compare_name:
        return
    if criterion.json_schema is not None:
        check_json_schema(criterion.json_schema, f"{where}.schema" if where else "json criterion: schema")
    strategy = criterion.match_strategy
    if strategy == JSONMatchStrategy.SKIP:
        return
    if strategy not in (JSONMatchStrategy.DEFAULT, JSONMatchStrategy.EXACT):
        raise ConfigError(f"{label}: invalid matchStrategy {str(strategy)!r}")
    tolerance = criterion.number_tolerance
    if tolerance is not None and tolerance < 0:
        raise ConfigError(f"{label}: numberTolerance must be a non-negative number, got {tolerance:g}")
    _validate_only_tree(criterion.only_tree, "onlyTree", label)


def named_compare_mismatch(
    kind: str,
    name: str,
    compare: Callable[[_V, _V], bool],
    actual: _V,
    expected: _V,
    *,
    render: Callable[[_V], str] = format_value,
    what: str = "",
) -> str | None:
    """Run a registered compare: ``None`` when it accepts, else why not.

    The reason reads ``<kind> "<name>" returned false (actual <what><value>, expected <what><value>)``,
    each side drawn by ``render`` only on a mismatch.

    Raises:
        ConfigError: The compare raised or did not return a bool.
    """
    if call_compare(kind, name, compare, actual, expected):
        return None
    return (
        f"{kind} {format_value(name)} returned false (actual {what}{render(actual)}, expected {what}{render(expected)})"
    )


def _run_compare(name: str, actual: Any, expected: Any) -> str | None:
    return named_compare_mismatch("json compare", name, active_metric_registry().json_compare(name), actual, expected)


# Draft detection as the reference's validator does it: http or https, an optional empty fragment.
_DIALECTS: dict[str, type[Validator]] = {
    "json-schema.org/schema": Draft202012Validator,
    "json-schema.org/draft/2020-12/schema": Draft202012Validator,
    "json-schema.org/draft/2019-09/schema": Draft201909Validator,
    "json-schema.org/draft-07/schema": Draft7Validator,
    "json-schema.org/draft-06/schema": Draft6Validator,
    "json-schema.org/draft-04/schema": Draft4Validator,
}
# The reference's validator asserts `format` by default only before draft 2019-09.
_FORMAT_ASSERTING = (Draft7Validator, Draft6Validator, Draft4Validator)
_SCHEMA_CACHE_SIZE = 256
_ERRORS_SHOWN = 5
_MESSAGE_LIMIT = 200


class _SchemaProblem(Exception):
    """A schema that cannot be compiled; the caller names where it is."""


def _dialect(schema: Any) -> type[Validator]:
    if not isinstance(schema, Mapping) or "$schema" not in schema:
        return Draft202012Validator
    uri = schema["$schema"]
    if not isinstance(uri, str):
        raise _SchemaProblem(f"$schema must be a string, got {format_value(uri)}")
    key = uri.removesuffix("#")
    for scheme in ("https://", "http://"):
        key = key.removeprefix(scheme)
    found = _DIALECTS.get(key)
    if found is None:
        raise _SchemaProblem(
            f"unsupported $schema {format_value(uri)}: use draft 2020-12 (the default), 2019-09, 7, 6 or 4"
        )
    return found


@functools.lru_cache(maxsize=_SCHEMA_CACHE_SIZE)
def _compiled_schema(key: str) -> Validator:
    schema = json.loads(key)
    if not isinstance(schema, bool | dict):
        raise _SchemaProblem(f"a schema must be an object or a boolean, got {format_value(schema)}")
    cls = _dialect(schema)
    if isinstance(schema, dict):
        try:
            cls.check_schema(schema)
        except SchemaError as err:
            raise _SchemaProblem(f"at {err.json_path}: {_shorten(err.message)}") from err
    checker = cls.FORMAT_CHECKER if cls in _FORMAT_ASSERTING else None
    # An empty registry: a $ref to anything but the schema itself or a known metaschema is an
    # error instead of a network fetch.
    return cls(schema, registry=referencing.Registry(), format_checker=checker)


def check_json_schema(schema: Any, where: str = "json criterion: schema") -> None:
    """Compile a JSON Schema (and cache it) to reject an unusable one before any evaluation.

    Args:
        schema: The ``schema`` value of a JSON criterion (an object or a boolean).
        where: Names the field in the error, e.g. ``criterion.finalResponse.json.schema``.

    Raises:
        ConfigError: The schema is not a valid JSON Schema of a supported draft.
    """
    _validator(schema, where)


def _validator(schema: Any, where: str) -> Validator:
    try:
        key = json.dumps(schema, sort_keys=True, separators=(",", ":"), allow_nan=False)
        return _compiled_schema(key)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{where} is not a valid JSON Schema: {err}") from err
    except _SchemaProblem as err:
        raise ConfigError(f"{where} is not a valid JSON Schema: {err}") from err


def _shorten(message: str) -> str:
    return message if len(message) <= _MESSAGE_LIMIT else message[: _MESSAGE_LIMIT - 1] + "…"


def _match_schema(value: Any, schema: Any) -> str | None:
    validator = _validator(schema, "json criterion: schema")
    try:
        errors = list(itertools.islice(validator.iter_errors(value), _ERRORS_SHOWN + 1))
    except referencing.exceptions.Unresolvable as err:
        raise ConfigError(f"json criterion: schema cannot be applied: {err}") from err
    if not errors:
        return None
    parts = [f"at {_instance_path(error.absolute_path)}: {_shorten(error.message)}" for error in errors[:_ERRORS_SHOWN]]
    more = " (and more)" if len(errors) > _ERRORS_SHOWN else ""
    return "schema mismatch " + "; ".join(parts) + more


def _as_json_value(value: Any) -> Any:
    """Read ``value`` the way the reference's ``valid`` does: a string is JSON text to parse."""
    if isinstance(value, str):
        return parse_json_text(value)
    # Round-tripping rejects what JSON cannot hold (NaN, huge ints, sets, objects) and turns tuples into lists.
    return parse_json_text(json.dumps(value, allow_nan=False))


def _not_json_reason(value: Any, err: Exception) -> str:
    if isinstance(value, str):
        return f"parse actual raw json: {err} (text {format_value(value)})"
    return f"actual value is not JSON: {err}"


DifferenceKind = Literal["value", "type", "length", "extra_key", "missing_key", "invalid", "schema", "compare"]
"""What differs at a place: a value, a JSON type, an array's length, a key only in actual (``extra_key``) or
only in expected (``missing_key``); or the whole value: not JSON (``invalid``), against the ``schema``, or
refused by a named ``compare``."""


@dataclass(frozen=True, slots=True)
class JSONDifference:
    """One place where two JSON values differ under a JSON criterion (see :func:`json_differences`)."""

    path: str
    """Where: ``$`` for the whole value, ``$.city``, ``$.items[2]``; a key's own path for a key difference."""
    kind: DifferenceKind
    """What differs there."""
    actual: Any
    """The actual value there (``None`` for a ``missing_key``)."""
    expected: Any
    """The expected value there (``None`` for an ``extra_key``)."""
    reason: str
    """What :func:`match_json` says when this is the first difference (one reason may name several keys)."""


def match_json(actual: Any, expected: Any, criterion: JSONCriterion) -> str | None:
    """Compare two decoded JSON values (tool arguments, tool results).

    Order, as in the reference: ``ignore`` passes; a criterion that cannot be applied is an error
    (:func:`check_json_criterion`); a named compare replaces the rest; ``valid`` requires a JSON value
    (a string is parsed as JSON text); ``schema`` validates that parsed value (without ``valid``, the
    value itself); ``skip`` passes; otherwise the values are compared exactly.

    Args:
        actual: The agent's value (e.g. tool arguments).
        expected: The expected value.
        criterion: How to compare.

    Returns:
        ``None`` on a match, else a reason naming the JSON path (``$.items[2]``) with both values: the
        reason of the first of :func:`json_differences`.

    Raises:
        ConfigError: The criterion is misconfigured (both trees set, a bad ``onlyTree`` leaf, an
            invalid schema, a negative ``numberTolerance``, an unknown compare) or a named compare raised.
    """
    found = _Found(everything=False)
    _find_differences(actual, expected, criterion, found)
    return found.differences[0].reason if found.differences else None


def json_differences(actual: Any, expected: Any, criterion: JSONCriterion) -> list[JSONDifference]:
    """Every place where two decoded JSON values differ, as :func:`match_json` compares them.

    The first is the one :func:`match_json` reports, so the list is empty exactly when it matches.
    A named compare, ``valid`` and ``schema`` judge the whole value (one difference at ``$``); the
    exact comparison goes on past the first difference: every differing value, every key present on
    one side only (each at its own path), and an array of another length (its items are not paired).

    Args:
        actual: The agent's value (e.g. tool arguments).
        expected: The expected value.
        criterion: How to compare.

    Returns:
        The differences, in the order the comparison meets them.

    Raises:
        ConfigError: As :func:`match_json`.
    """
    found = _Found(everything=True)
    _find_differences(actual, expected, criterion, found)
    return found.differences


class _Found:
    """The differences found so far; the comparison stops at the first unless it wants ``everything``."""

    __slots__ = ("differences", "everything")

    def __init__(self, *, everything: bool) -> None:
        self.differences: list[JSONDifference] = []
        self.everything = everything

    def add(self, difference: JSONDifference) -> bool:
        """Record ``difference``; ``True`` when the comparison should stop."""
        self.differences.append(difference)
        return not self.everything


def _find_differences(actual: Any, expected: Any, criterion: JSONCriterion, found: _Found) -> None:
    """:func:`match_json`'s steps, recording each difference into ``found``."""
    if criterion.ignore:
        return
    check_json_criterion(criterion)
    if criterion.compare_name:
        reason = _run_compare(criterion.compare_name, actual, expected)
        if reason is not None:
            found.add(JSONDifference("$", "compare", actual, expected, reason))
        return
    for_schema = actual
    if criterion.valid:
        try:
            for_schema = _as_json_value(actual)
        except (TypeError, ValueError) as err:
            found.add(JSONDifference("$", "invalid", actual, expected, _not_json_reason(actual, err)))
            return
    if criterion.json_schema is not None:
        reason = _match_schema(for_schema, criterion.json_schema)
        if reason is not None:
            found.add(JSONDifference("$", "schema", actual, expected, reason))
            return
    if criterion.match_strategy == JSONMatchStrategy.SKIP:
        return
    _find_decoded(actual, expected, criterion, found)


def match_json_text(
    actual: str, expected: str, criterion: JSONCriterion, measures: dict[str, float] | None = None
) -> str | None:
    """Compare two texts holding JSON (final responses); text that is not JSON is a mismatch.

    The order is :func:`match_json`'s; ``valid`` and ``schema`` parse the actual text, and a named
    compare receives both raw texts.

    Args:
        actual: The agent's raw text.
        expected: The expected raw text.
        criterion: How to compare.
        measures: When given, receives :data:`JSON_NUMBER_DIFFERENCE` whenever the criterion compares
            values (not with ``ignore``, a ``compareName`` or ``skip``), both texts are JSON and
            :func:`max_number_difference` finds numbers to pair, whatever ``schema`` says.

    Returns:
        ``None`` on a match, else a reason.

    Raises:
        ConfigError: The criterion is misconfigured or a named compare raised.
    """
    if criterion.ignore:
        return None
    check_json_criterion(criterion)
    if criterion.compare_name:
        return _run_compare(criterion.compare_name, actual, expected)
    skip = criterion.match_strategy == JSONMatchStrategy.SKIP
    if skip and not criterion.valid and criterion.json_schema is None:
        return None
    try:
        actual_value = parse_json_text(actual)
    except ValueError as err:
        return _not_json_reason(actual, err)
    schema_reason = None if criterion.json_schema is None else _match_schema(actual_value, criterion.json_schema)
    if skip:
        return schema_reason
    try:
        expected_value = parse_json_text(expected)
    except ValueError as err:
        return schema_reason or f"parse expected raw json: {err} (text {format_value(expected)})"
    if measures is not None:
        difference = max_number_difference(actual_value, expected_value, criterion)
        if difference is not None:
            measures[JSON_NUMBER_DIFFERENCE] = difference
    return schema_reason or _compare_decoded(actual_value, expected_value, criterion)


class _Unaligned(Exception):
    """Two JSON values differ in shape, so their numbers cannot be paired."""


def max_number_difference(actual: Any, expected: Any, criterion: JSONCriterion) -> float | None:
    """The largest absolute difference between two numbers at the same place in two JSON values.

    Only the parts the criterion compares count (``ignoreTree`` and ``onlyTree`` select keys as in
    :func:`match_json`); ``numberTolerance`` plays no part. Numbers pair up when the two values have
    the same shape: objects with the same compared keys, arrays of the same length, and at every
    other place two values of the same JSON type (two strings may differ).

    Args:
        actual: The agent's decoded value.
        expected: The expected decoded value.
        criterion: Which parts are compared.

    Returns:
        The largest difference (``0.0`` when all paired numbers are equal), or ``None`` when the
        shapes differ, when there is no number to pair, or when a difference overflows a float.
    """
    differences: list[float] = []
    try:
        if criterion.only_tree:
            _only_tree_differences(actual, expected, criterion.only_tree, differences)
        else:
            _ignore_tree_differences(actual, expected, criterion.ignore_tree, differences)
    except _Unaligned:
        return None
    largest = max(differences, default=None)
    return largest if largest is not None and math.isfinite(largest) else None


def _number_difference(actual: float, expected: float) -> float:
    # As the comparison does: Go decodes every JSON number to float64.
    try:
        return abs(float(actual) - float(expected))
    except OverflowError:
        return math.inf


def _exact_differences(actual: Any, expected: Any, out: list[float]) -> None:
    if _is_number(actual) and _is_number(expected):
        out.append(_number_difference(actual, expected))
    elif isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if actual.keys() != expected.keys():
            raise _Unaligned
        for key, value in actual.items():
            _exact_differences(value, expected[key], out)
    elif isinstance(actual, list | tuple) and isinstance(expected, list | tuple):
        if len(actual) != len(expected):
            raise _Unaligned
        for actual_item, expected_item in zip(actual, expected, strict=True):
            _exact_differences(actual_item, expected_item, out)
    elif _kind(actual) != _kind(expected):
        raise _Unaligned


def _ignore_tree_differences(actual: Any, expected: Any, tree: Mapping[str, Any] | None, out: list[float]) -> None:
    if not tree or not (isinstance(actual, Mapping) and isinstance(expected, Mapping)):
        _exact_differences(actual, expected, out)
        return
    ignored = {key for key, flag in tree.items() if flag is True}
    if actual.keys() - ignored != expected.keys() - ignored:
        raise _Unaligned
    for key, value in actual.items():
        if key not in ignored:
            subtree = tree.get(key)
            child_tree = subtree if isinstance(subtree, Mapping) else None
            _ignore_tree_differences(value, expected[key], child_tree, out)


def _only_tree_differences(actual: Any, expected: Any, tree: Mapping[str, Any], out: list[float]) -> None:
    if not (isinstance(actual, Mapping) and isinstance(expected, Mapping)):
        _exact_differences(actual, expected, out)
        return
    for key, selector in tree.items():
        if selector is False:
            continue
        if key not in actual or key not in expected:
            raise _Unaligned
        if selector is True:
            _exact_differences(actual[key], expected[key], out)
        else:
            _only_tree_differences(actual[key], expected[key], selector, out)


def _compare_decoded(actual: Any, expected: Any, criterion: JSONCriterion) -> str | None:
    found = _Found(everything=False)
    _find_decoded(actual, expected, criterion, found)
    return found.differences[0].reason if found.differences else None


def _find_decoded(actual: Any, expected: Any, criterion: JSONCriterion, found: _Found) -> None:
    tolerance = DEFAULT_NUMBER_TOLERANCE if criterion.number_tolerance is None else criterion.number_tolerance
    if criterion.only_tree:
        _find_only_tree(actual, expected, criterion.only_tree, "$", tolerance, found)
    else:
        _find_ignore_tree(actual, expected, criterion.ignore_tree, "$", tolerance, found)


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


def _find_key_sets(
    path: str, actual: Mapping[str, Any], expected: Mapping[str, Any], skip: set[str], found: _Found
) -> bool:
    """Record the keys on one side only, those in actual first (as one reason); ``True`` to stop."""
    extra = [k for k in actual if k not in expected and k not in skip]
    if extra:
        noun = "key" if len(extra) == 1 else "keys"
        reason = f"{path}: {noun} {_key_list(extra)} in actual but not in expected"
        for key in extra:
            if found.add(JSONDifference(_child_path(path, key), "extra_key", actual[key], None, reason)):
                return True
    missing = [k for k in expected if k not in actual and k not in skip]
    if missing:
        noun = "key" if len(missing) == 1 else "keys"
        reason = f"{path}: {noun} {_key_list(missing)} in expected but not in actual"
        for key in missing:
            if found.add(JSONDifference(_child_path(path, key), "missing_key", None, expected[key], reason)):
                return True
    return False


def _value_difference(path: str, actual: Any, expected: Any, tolerance: float) -> JSONDifference:
    return JSONDifference(path, "value", actual, expected, _value_mismatch(path, actual, expected, tolerance))


def _type_difference(path: str, actual: Any, expected: Any) -> JSONDifference:
    return JSONDifference(path, "type", actual, expected, _type_mismatch(path, actual, expected))


def _find_exact(actual: Any, expected: Any, path: str, tolerance: float, found: _Found) -> bool:
    """Record where ``actual`` and ``expected`` differ exactly; ``True`` when the comparison should stop."""
    if actual is None or expected is None:
        if actual is None and expected is None:
            return False
        return found.add(_value_difference(path, actual, expected, tolerance))
    actual_object, expected_object = isinstance(actual, Mapping), isinstance(expected, Mapping)
    if actual_object or expected_object:
        if not (actual_object and expected_object):
            return found.add(_type_difference(path, actual, expected))
        if _find_key_sets(path, actual, expected, set(), found):
            return True
        for key, value in actual.items():
            if key in expected and _find_exact(value, expected[key], _child_path(path, key), tolerance, found):
                return True
        return False
    actual_array, expected_array = isinstance(actual, list | tuple), isinstance(expected, list | tuple)
    if actual_array or expected_array:
        if not (actual_array and expected_array):
            return found.add(_type_difference(path, actual, expected))
        return _find_in_array(actual, expected, path, tolerance, found)
    if _scalars_equal(actual, expected, tolerance):
        return False
    return found.add(_value_difference(path, actual, expected, tolerance))


def _find_in_array(actual: Any, expected: Any, path: str, tolerance: float, found: _Found) -> bool:
    if len(actual) != len(expected):
        reason = (
            f"{path}: array length mismatch: actual({len(actual)}) != expected({len(expected)}) "
            f"(actual {format_value(actual)}, expected {format_value(expected)})"
        )
        return found.add(JSONDifference(path, "length", actual, expected, reason))
    for index, (actual_item, expected_item) in enumerate(zip(actual, expected, strict=True)):
        if _find_exact(actual_item, expected_item, f"{path}[{index}]", tolerance, found):
            return True
    return False


def _find_ignore_tree(
    actual: Any, expected: Any, tree: Mapping[str, Any] | None, path: str, tolerance: float, found: _Found
) -> bool:
    if not tree or not (isinstance(actual, Mapping) and isinstance(expected, Mapping)):
        return _find_exact(actual, expected, path, tolerance, found)
    ignored = {key for key, flag in tree.items() if flag is True}
    if _find_key_sets(path, actual, expected, ignored, found):
        return True
    for key, value in actual.items():
        if key in ignored or key not in expected:
            continue
        subtree = tree.get(key)
        child_tree = subtree if isinstance(subtree, Mapping) else None
        if _find_ignore_tree(value, expected[key], child_tree, _child_path(path, key), tolerance, found):
            return True
    return False


def _find_only_tree(
    actual: Any, expected: Any, tree: Mapping[str, Any], path: str, tolerance: float, found: _Found
) -> bool:
    if not (isinstance(actual, Mapping) and isinstance(expected, Mapping)):
        return _find_exact(actual, expected, path, tolerance, found)
    for key, selector in tree.items():
        if selector is False:
            continue
        child = _child_path(path, key)
        if key not in actual:
            reason = f"{child}: key in onlyTree but not in actual"
            stop = found.add(JSONDifference(child, "missing_key", None, expected.get(key), reason))
        elif key not in expected:
            reason = f"{child}: key in onlyTree but not in expected"
            stop = found.add(JSONDifference(child, "extra_key", actual[key], None, reason))
        elif selector is True:
            stop = _find_exact(actual[key], expected[key], child, tolerance, found)
        else:
            stop = _find_only_tree(actual[key], expected[key], selector, child, tolerance, found)
        if stop:
            return True
    return False
