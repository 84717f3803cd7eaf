"""The reference framework's JSON conventions, in one place.

Every persisted model derives from :class:`WireModel` (keys as declared) or :class:`CamelModel`
(camelCase keys). Both reproduce Go's ``omitempty`` on write, keep unknown keys through a
load/save round trip, and load files strictly (a string is never silently read as a number).
"""

from __future__ import annotations

import functools
import json
import math
import numbers
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from types import UnionType
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Self, TypeVar, cast, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PydanticDeprecatedSince20,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticSerializationError
from pydantic_core import to_json as json_bytes

from agenteval._util.callable_names import did_you_mean
from agenteval.errors import ConfigError

__all__ = [
    "MAX_DEPTH",
    "SHARED_VALUES",
    "CamelModel",
    "EpochTime",
    "GoFloat",
    "GoInt",
    "Shared",
    "WireModel",
    "check_arguments",
    "depth_limit",
    "depth_message",
    "depth_problem",
    "json_depth",
    "json_copy",
    "limited_depth",
    "lone_surrogate_path",
    "non_finite_path",
    "reject_non_finite",
    "written_json",
]


def _go_number(value: float) -> float | int:
    """Write an integral float without ``.0``, as Go's encoder does (``1`` rather than ``1.0``).

    NaN and infinities pass through: :meth:`WireModel.to_json` refuses them, naming the field.
    """
    value = float(value)
    if value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value} (JSON has no NaN or Infinity)")
    return value


def _reject_non_number(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number of seconds since the Unix epoch, got {value!r}")
    return value


GoFloat = Annotated[float, AfterValidator(_finite), PlainSerializer(_go_number, when_used="json")]
"""A float written the way Go writes a ``float64``."""


def _fits_go_int(value: int) -> int:
    if not _GO_INT_MIN <= value <= _GO_INT_MAX:
        raise ValueError(f"{value} does not fit Go's 64-bit int")
    return value


_GO_INT_MIN, _GO_INT_MAX = -(2**63), 2**63 - 1

GoInt = Annotated[
    int, Field(ge=_GO_INT_MIN, le=_GO_INT_MAX), PlainSerializer(_fits_go_int, return_type=int, when_used="json")
]
"""An integer that fits Go's ``int`` (64-bit): a larger one would wrap around or fail in the reference.

It is checked when read and when written (a value assigned after validation is caught then)."""

EpochTime = Annotated[
    float,
    BeforeValidator(_reject_non_number),
    AfterValidator(_finite),
    PlainSerializer(_go_number, when_used="json"),
]
"""A timestamp in JSON: Unix seconds as a number (``1761134484.9804401``); strings, NaN and infinities are rejected."""


_M = TypeVar("_M", bound=BaseModel)

_new_object = object.__new__
_set_dict = cast("Any", BaseModel.__dict__["__dict__"]).__set__
_set_fields_set = cast("Any", BaseModel.__dict__["__pydantic_fields_set__"]).__set__
_set_extra = cast("Any", BaseModel.__dict__["__pydantic_extra__"]).__set__
_set_private = cast("Any", BaseModel.__dict__["__pydantic_private__"]).__set__


class _SharedFieldNames(set[str]):
    """The names of the fields a model was given (validated or :meth:`WireModel.trusted`), one set for all alike.

    Tens of result models are made per case, each with a set of the fields it was given: a set of five names
    or more takes 728 bytes, a third of what a case's results hold. Models made alike share one, which nothing
    changes: setting an attribute on a model, or reading its ``model_fields_set``, first gives it a set of its own
    (:meth:`WireModel.__setattr__`, :attr:`WireModel.model_fields_set`), so no model's fields set ever changes
    another's.
    """

    __slots__ = ()


@functools.cache
def _shared_field_names(names: frozenset[str]) -> _SharedFieldNames:
    """The one set of these field names the models made with them share.

    Kept in a function's cache, not in the classes: the identity of code that uses a model (the cache's
    keys) reads its class's attributes, and must not depend on which models this process has made.
    """
    return _SharedFieldNames(names)


def _made(cls: type[_M], values: dict[str, Any], fields_set: set[str], extra: dict[str, Any] | None) -> _M:
    """An instance of ``cls`` holding ``values``, as pydantic's own constructors leave one (no validation)."""
    # The slots are set through their descriptors: BaseModel.__setattr__ would treat them as fields.
    model = _new_object(cls)
    _set_dict(model, values)
    _set_fields_set(model, fields_set)
    _set_extra(model, extra)
    _set_private(model, None)
    return model


SHARED_VALUES = "agenteval.shared_values"
"""The validation-context key under which a document's parse collects the :data:`Shared` values it made."""

_SHARED_LIMIT = 16


def _shared(value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
    made = info.context.get(SHARED_VALUES) if isinstance(info.context, dict) else None
    if made is None or not isinstance(value, dict):
        return handler(value)
    for raw, model in made:
        if raw == value:
            return model
    model = handler(value)
    if len(made) < _SHARED_LIMIT:
        made.append((value, model))
    return model


Shared = WrapValidator(_shared)
"""Marks a field whose equal values in one document (a metric result's criterion, repeated in every
result of that metric) are validated once and share one object, when the parse's context holds a
list under :data:`SHARED_VALUES` (as :func:`agenteval._util.files.parse_json` gives it). Loaded results
are read-only records, so sharing is safe; it saves most of their size and of the time to read them.
"""


class WireModel(BaseModel):
    """Base of every persisted model: Go ``omitempty`` on write, unknown keys kept.

    :meth:`to_json` and :meth:`to_dict` leave out every field that holds its default. A field whose
    default is ``None`` is therefore written whenever it is set, even to ``0`` or ``False`` (a Go
    pointer), and any other field is left out at its zero value (``0``, ``False``, ``""``, an empty
    list or mapping) — Go's ``omitempty``. Fields are never ``null`` in a file: a ``null`` is only
    accepted where the default is ``None``. This relies on every default being a zero value (a
    test checks it). Like Go's encoder, writing refuses NaN and infinities anywhere, free-form
    values included.

    Unknown keys are kept only when loading data (:meth:`from_json`, ``model_validate``, the
    stores), so that a file written by a newer version survives a round trip. Constructing a model
    from keywords refuses an unknown one (``EvalMetric(threshhold=0.5)``), which would otherwise
    silently leave the field at its default; a keyword may be the Python name or the JSON key. The
    same goes for keys inside a dict or list given to the constructor
    (``EvalMetric(criterion={"finalResponse": {"txt": {}}})``); model objects given to it, and
    free-form values (``Any``, ``dict[str, Any]``), are not checked.
    """

    _keywords: ClassVar[frozenset[str]] = frozenset()
    """What the constructor accepts: every field's Python name and JSON key (set per class)."""

    _defaults: ClassVar[dict[str, Any]] = {}
    """Each field's default value, in field order; ``None`` where a factory makes it (set per class, for
    :meth:`trusted`)."""
    _factories: ClassVar[dict[str, Callable[[], Any]]] = {}
    """The fields whose default a factory makes (set per class, for :meth:`trusted`)."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        # Once per class: constructors of result models run thousands of times per evaluation.
        cls._keywords = frozenset(
            key for name, info in cls.model_fields.items() for key in (name, info.alias) if key is not None
        )
        cls._factories = {
            name: cast("Callable[[], Any]", info.default_factory)
            for name, info in cls.model_fields.items()
            if info.default_factory is not None
        }
        cls._defaults = {
            name: None if name in cls._factories else info.default for name, info in cls.model_fields.items()
        }

    @classmethod
    def trusted(cls, **fields: Any) -> Self:
        """A model made of values known to be valid, without validating them.

        For the hot paths that build tens of result models per case from values they made or
        checked themselves; everything else uses the validating constructor. Unlike pydantic's
        ``model_construct``, which inspects every default factory on every call, the defaults are
        worked out once per class.

        Args:
            **fields: Field values, by Python name.

        Raises:
            TypeError: A keyword is not a field's Python name (a programming error).
        """
        defaults = cls._defaults
        values = {**defaults, **fields}
        if len(values) != len(defaults):
            raise TypeError(f"{cls.__name__}.trusted() got unknown fields {sorted(fields.keys() - defaults.keys())}")
        for name, factory in cls._factories.items():
            if name not in fields:
                values[name] = factory()
        # No dict of unknown keys either (None, as pydantic's own constructors leave one when there are none).
        return _made(cls, values, _shared_field_names(frozenset(fields)), None)

    def replaced(self, **changes: Any) -> Self:
        """A shallow copy with some fields changed to values known to be valid (not validated).

        What ``model_copy(update=changes)`` does, several times faster: the hot paths that derive
        reports copy tens of thousands of results. Unknown keys are copied; everything else is shared.

        Args:
            **changes: New field values, by Python name.

        Raises:
            TypeError: A keyword is not a field's Python name (a programming error).
        """
        values = {**self.__dict__, **changes}
        if len(values) != len(self._defaults):
            raise TypeError(
                f"{type(self).__name__}.replaced() got unknown fields {sorted(changes.keys() - self._defaults.keys())}"
            )
        extra = self.__pydantic_extra__
        return _made(type(self), values, self.__pydantic_fields_set__ | changes.keys(), dict(extra) if extra else {})

    if not TYPE_CHECKING:  # as pydantic's own: type checkers keep refusing attributes that are not fields

        def __setattr__(self, name: str, value: Any) -> None:
            """Set a field (or an unknown key) as pydantic does, without changing a fields set other models share.

            pydantic adds ``name`` to the model's fields set: a shared set that lacks it is replaced first, by the
            shared set that has it for a field (the service fills in every case's pending result this way), or
            by a set of the model's own for an unknown key (whose names are open-ended).
            """
            fields_set = self.__pydantic_fields_set__
            if type(fields_set) is _SharedFieldNames and name not in fields_set:
                if name in type(self).model_fields:
                    _set_fields_set(self, _shared_field_names(frozenset(fields_set).union((name,))))
                else:
                    _set_fields_set(self, set(fields_set))
            if self.__pydantic_extra__ is None and name not in type(self).model_fields:
                _set_extra(self, {})
            super().__setattr__(name, value)

    def model_post_init(self, context: Any, /) -> None:
        """Share the set of given field names with every model validated with the same ones.

        pydantic gives each validated model a set of its own; a parsed eval set or result holds several per
        case, which would otherwise be a sixth of its size. A model with unknown keys keeps its own (their
        names are open-ended). Setting an attribute, or reading :attr:`model_fields_set`, unshares it first.
        """
        if self.__pydantic_extra__:
            return
        _set_fields_set(self, _shared_field_names(frozenset(self.__pydantic_fields_set__)))

    @property
    def model_fields_set(self) -> set[str]:
        """The names of the fields given to the model (pydantic's), a set of the model's own that may be changed."""
        fields_set = self.__pydantic_fields_set__
        if type(fields_set) is _SharedFieldNames:
            fields_set = set(fields_set)
            _set_fields_set(self, fields_set)
        return fields_set

    if not TYPE_CHECKING:  # pydantic's own is declared deprecated to type checkers

        @property
        def __fields_set__(self) -> set[str]:
            """Pydantic's deprecated name of :attr:`model_fields_set` (which it returned unshared)."""
            warnings.warn(
                "The `__fields_set__` attribute is deprecated, use `model_fields_set` instead.",
                category=PydanticDeprecatedSince20,
                stacklevel=2,
            )
            return self.model_fields_set

    def __setstate__(self, state: dict[Any, Any]) -> None:
        """Unpickle; a field added since the object was pickled takes its default, so old pickles still load."""
        super().__setstate__(state)
        missing = self._defaults.keys() - self.__dict__.keys()
        for name in missing:
            factory = self._factories.get(name)
            self.__dict__[name] = factory() if factory is not None else self._defaults[name]

    def __init__(self, /, **data: Any) -> None:
        """Build the model from keyword arguments (Python names or JSON keys).

        Raises:
            ConfigError: A keyword is not a field, or a dict given as a value (at any depth) has a
                key that no field takes; the message names it and suggests the closest one.
            pydantic.ValidationError: A value does not fit its field.
        """
        __tracebackhide__ = True
        if not data.keys() <= self._keywords:
            raise ConfigError(_unknown_keywords(type(self), data))
        super().__init__(**data)
        nested = _model_keywords(type(self))
        # Only keywords that can hold models, and only when given raw data, are searched.
        if nested and any(isinstance(data[keyword], _RAW) for keyword in nested.keys() & data.keys()):
            _refuse_unknown_keys(self, data, nested)

    # Tells pydantic that __init__ adds nothing to validation, so nested models are still
    # validated directly (keeping unknown keys from files) rather than through this constructor.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    model_config = ConfigDict(
        extra="allow",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        # pydantic's default writes NaN as null, which reloads as a different value; writing the
        # constants lets to_json spot them and refuse.
        ser_json_inf_nan="constants",
    )

    def deep_copy(self) -> Self:
        """A deep copy, about twice as fast as ``model_copy(deep=True)``: built by pydantic from a dump.

        Holds the same values, unknown keys included; free-form values are copied as JSON values are.
        A field left out of dumps (a judge's api key) is left out of the copy too: copy models that
        hold one with ``model_copy(deep=True)``.
        """
        return self.model_validate(self.model_dump(warnings=False))

    @classmethod
    def from_json(cls, data: str | bytes) -> Self:
        """Parse a JSON document strictly: types must match, enums must be known values.

        Args:
            data: The JSON text.

        Returns:
            The parsed model.

        Raises:
            pydantic.ValidationError: The JSON is malformed or does not fit the model.
        """
        return cls.model_validate_json(data, strict=True, context={SHARED_VALUES: []})

    def to_json(self, *, indent: int | None = 2) -> str:
        """Write the model as the reference framework would (``omitempty``, aliases, no api keys).

        Args:
            indent: Spaces per indentation level; ``None`` for a compact single line.

        Returns:
            The JSON text, without a trailing newline.

        Raises:
            ConfigError: A number anywhere in the model is NaN or infinite, a free-form value
                cannot be written as JSON, or a value does not fit its field (the message names it).
        """
        try:
            # warnings="error": a value of the wrong type (assigned after validation, or built without
            # it) is refused here rather than written as something that would not read back.
            text = self.model_dump_json(indent=indent, exclude_defaults=True, warnings="error")
        except PydanticSerializationError as exc:
            raise ConfigError(_unwritable_message(self, exc)) from None
        # Cheap pre-checks: the exact searches only run when a constant, or a null, may have been written.
        if "NaN" in text or "Infinity" in text:
            reject_non_finite(self)
        if "null" in text:
            # pydantic writes None as null where a field's type has no None (a str field set to None after
            # validation), which no reader takes back: only free-form values, and unknown keys, may hold one.
            found = _misplaced_null(self)
            if found is not None:
                raise ConfigError(
                    f"field {found} holds None, which its type does not allow (assigned after validation?); "
                    "JSON would hold a null that no reader takes back: give it a value of its type"
                )
        return text

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready dictionary that :meth:`to_json` would write.

        Raises:
            ConfigError: A number anywhere in the model is NaN or infinite.
        """
        data: dict[str, Any] = json.loads(self.to_json(indent=None))
        return data


M = TypeVar("M", bound=WireModel)


def _unknown_keywords(model: type[WireModel], data: Mapping[str, Any]) -> str:
    """The constructor's error for keywords of ``data`` that ``model`` has no field for."""
    unknown = [key for key in data if key not in model._keywords]
    described = ", ".join(f"{key!r}{did_you_mean(key, model._keywords)}" for key in unknown)
    noun = "an unknown field" if len(unknown) == 1 else "unknown fields"
    fields = ", ".join(model.model_fields) or "none"
    return f"{model.__name__}() got {noun} {described}; its fields are: {fields}"


@cache
def _model_keywords(model: type[BaseModel]) -> Mapping[str, str]:
    """The keywords (Python name and JSON key) of ``model``'s fields that can hold a model, to field names.

    Only these can hold keys that no field takes: the others hold plain or free-form values.
    """
    return {
        key: name
        for name, info in model.model_fields.items()
        if _holds_models(info.annotation)
        for key in (info.alias, name)
        if key is not None
    }


def _holds_models(annotation: object) -> bool:
    if get_origin(annotation) is None and isinstance(annotation, type):
        return issubclass(annotation, BaseModel)
    return any(_holds_models(argument) for argument in get_args(annotation))


_RAW = (dict, list, tuple)
"""The types of constructor values that may hold raw data (a dict, or a list with one)."""


def _is_raw(value: object) -> bool:
    """Whether a constructor's value is raw data that may hold misspelt keys: a dict, or a list with one."""
    if isinstance(value, list | tuple):
        # By kind rather than item by item: lists of thousands of result objects pass through here.
        return any(issubclass(kind, dict) for kind in set(map(type, value)))
    return isinstance(value, dict)


def _refuse_unknown_keys(model: WireModel, data: Mapping[str, Any], nested: Mapping[str, str]) -> None:
    """Raise for keys inside the raw values of ``data`` that no field of the models built from them took.

    Only values that are dicts, or lists holding dicts, are searched, so building a model from model
    objects (as results are, in hot paths) costs little more than a glance at its values.
    """
    problems = []
    for keyword, value in data.items():
        if keyword in nested and _is_raw(value):
            found = list(_unknown_keys(value, getattr(model, nested[keyword]), ""))
            if found:
                noun = "key" if len(found) == 1 else "keys"
                problems.append(f"{type(model).__name__}({keyword}=...): unknown {noun} {', '.join(found)}")
    if problems:
        raise ConfigError("; ".join(problems))


def _unknown_keys(raw: object, built: object, path: str) -> Iterator[str]:
    """The JSON paths, with a suggestion, of keys in ``raw`` that no field of the model built from it took.

    ``built`` is what validation made of ``raw``; model objects inside ``raw`` are not searched.
    """
    if isinstance(raw, dict) and isinstance(built, WireModel):
        model = type(built)
        for key in built.model_extra or {}:
            fix = did_you_mean(key, model._keywords) or f" ({model.__name__} takes: {', '.join(_json_keys(model))})"
            yield f"{_joined(path, key)}{fix}"
        for key, name in _model_keywords(model).items():
            if key in raw:
                yield from _unknown_keys(raw[key], getattr(built, name), _joined(path, key))
    elif isinstance(raw, dict) and isinstance(built, dict):
        for key, item in raw.items():
            if key in built:
                yield from _unknown_keys(item, built[key], _joined(path, str(key)))
    elif isinstance(raw, list | tuple) and isinstance(built, list | tuple) and len(raw) == len(built):
        # Lengths differ only where a validator dropped entries (null eval cases): items no longer line up.
        for index, (item, made) in enumerate(zip(raw, built, strict=True)):
            yield from _unknown_keys(item, made, f"{path}[{index}]")


def _json_keys(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


def _joined(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class CamelModel(WireModel):
    """A :class:`WireModel` whose JSON keys are the camelCase form of its attribute names."""

    model_config = ConfigDict(alias_generator=to_camel)


def check_arguments(where: str, **arguments: tuple[object, Any]) -> None:
    """Refuse a builder's argument whose value is not of the expected type, naming it and what to pass.

    Args:
        where: The builder, at the start of the message (``"EvalCase.of('c1')"``).
        **arguments: ``name=(value, expected)``. ``expected`` is a class (``str``, ``bool``,
            ``Mapping``, ``Tool``…), ``float`` for any real number but a bool (``int``, ``float``, a
            numpy number), ``list[T]`` for a list, tuple or other collection of ``T`` (not a string
            or a mapping), or a union such as ``str | None``.

    Raises:
        ConfigError: ``<where>: <name> must be <what>, got <type> <value>``; for a list, the first
            item that is not a ``T`` is named by its index, and a lone ``T`` is told to be wrapped.
    """
    for label, (value, expected) in arguments.items():
        problem = _type_problem(label, value, expected)
        if problem:
            raise ConfigError(f"{where}: {problem}")


def _type_problem(label: str, value: object, expected: Any) -> str | None:
    if get_origin(expected) is not list:
        return None if _fits(value, expected) else f"{label} must be {_described(expected)}, got {_shown(value)}"
    (item_type,) = get_args(expected)
    if isinstance(value, Collection) and not isinstance(value, str | bytes | Mapping):
        return next(
            (
                found
                for index, item in enumerate(value)
                if (found := _type_problem(f"{label}[{index}]", item, item_type))
            ),
            None,
        )
    problem = f"{label} must be {_described(expected)}, got {_shown(value)}"
    if _fits(value, item_type):
        single = f"{type(value).__name__}(...)" if isinstance(value, BaseModel) else repr(value)
        problem += f"; wrap it in a list: {label}=[{single}]"
    return problem


def _fits(value: object, expected: Any) -> bool:
    if isinstance(expected, UnionType):
        return any(_fits(value, option) for option in get_args(expected))
    if expected is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    return isinstance(value, expected)


def _described(expected: Any) -> str:
    if isinstance(expected, UnionType):
        return " or ".join(_described(option) for option in get_args(expected))
    if get_origin(expected) is list:
        (item_type,) = get_args(expected)
        return f"a list of {item_type.__name__}"
    names = {str: "a str", float: "a number", bool: "True or False", Mapping: "a dict", type(None): "None"}
    return names.get(expected) or _a(expected.__name__)


def _shown(value: object) -> str:
    if isinstance(value, BaseModel):
        return _a(type(value).__name__)
    return f"{type(value).__name__} {value!r:.40}"


def _a(name: str) -> str:
    return f"{'an' if name[0] in 'AEIOU' else 'a'} {name}"


def unknown_fields(value: Any, path: str = "") -> list[str]:
    """JSON paths of the keys that no model field took, in document order (e.g. ``[0].criterion.foo``).

    Such keys are kept (and written back), but a misspelt option silently means its default.
    """
    if isinstance(value, list | tuple):
        return [found for index, item in enumerate(value) for found in unknown_fields(item, f"{path}[{index}]")]
    if not isinstance(value, BaseModel):
        return []
    prefix = f"{path}." if path else ""
    found = [f"{prefix}{key}" for key in value.model_extra or {}]
    for name, info in type(value).model_fields.items():
        child = getattr(value, name)
        if isinstance(child, BaseModel | list | tuple):
            found.extend(unknown_fields(child, f"{prefix}{info.alias or name}"))
        elif isinstance(child, dict):
            for key, item in child.items():
                found.extend(unknown_fields(item, f"{prefix}{info.alias or name}.{key}"))
    return found


def _find_leaf(value: Any, wanted: Callable[[Any], bool]) -> tuple[str, Any] | None:
    """The JSON path and value of the first leaf of ``value`` for which ``wanted`` holds."""

    def walk(item: Any, path: str) -> tuple[str, Any] | None:
        if isinstance(item, BaseModel):
            item = item.model_dump(warnings=False)
        if isinstance(item, dict):
            children: Any = ((f"{path}.{key}" if path else str(key), child) for key, child in item.items())
        elif isinstance(item, list | tuple):
            children = ((f"{path}[{index}]", child) for index, child in enumerate(item))
        else:
            return (path, item) if wanted(item) else None
        return next((found for where, child in children if (found := walk(child, where))), None)

    return walk(value, "")


def _unwritable_message(model: WireModel, error: PydanticSerializationError) -> str:
    """What ``model.to_json`` could not write, and what to write instead."""
    mistyped = _mistyped_field(model, "")
    if mistyped is not None:
        path, value, annotation = mistyped
        return (
            f"field {path} holds {type(value).__name__} {value!r:.40}, which does not fit its type {annotation}"
            " (assigned after validation?); give it a value of that type"
        )
    found = _find_leaf(model, _unwritable)
    if found is None:
        return f"a value cannot be written as JSON ({error}); give each field a value of its type"
    path, value = found
    if isinstance(value, int) and not isinstance(value, bool):
        return f"field {path} (int {value}) does not fit Go's 64-bit int: store a whole number from -2**63 to 2**63-1"
    return (
        f"field {path} ({type(value).__name__} {value!r:.40}) cannot be written as JSON ({error}); "
        "store JSON values (str, number, bool, None, list, dict)"
    )


def _mistyped_field(value: object, path: str) -> tuple[str, object, str] | None:
    """The first field, at any depth, holding a value of another type than its plain type (``str``, a number …).

    Only plain types are checked (what an assignment after validation gets wrong); free-form and
    union-of-models fields are not.
    """
    if isinstance(value, list | tuple):
        return next((found for i, item in enumerate(value) if (found := _mistyped_field(item, f"{path}[{i}]"))), None)
    if not isinstance(value, BaseModel):
        return None
    for name, info in type(value).model_fields.items():
        child = getattr(value, name)
        where = _joined(path, info.alias or name)
        plain = _PLAIN.get(info.annotation) if isinstance(info.annotation, type) else None
        if plain is not None:
            accepted, label = plain
            if not isinstance(child, accepted) or (isinstance(child, bool) and bool not in accepted):
                return where, child, label
        elif (found := _mistyped_field(child, where)) is not None:
            return found
    return None


_PLAIN: dict[type, tuple[tuple[type, ...], str]] = {
    str: ((str,), "str"),
    int: ((int,), "int"),
    float: ((int, float), "float"),
    bool: ((bool,), "bool"),
}


def _unwritable(item: Any) -> bool:
    if isinstance(item, int) and not isinstance(item, bool) and not _GO_INT_MIN <= item <= _GO_INT_MAX:
        return True
    try:
        json_bytes(item)
    except (PydanticSerializationError, ValueError, TypeError):
        return True
    return False


def non_finite_path(value: Any) -> tuple[str, float] | None:
    """Find the first NaN or infinite number in a model, or in a list or mapping of models.

    Args:
        value: What to search; models are searched through their JSON field names.

    Returns:
        The number's JSON path (``evalCaseResults[0].score``, ``[1].extension.w``) and the number,
        or ``None`` if every number is finite.
    """
    return _find_leaf(value, lambda item: isinstance(item, float) and not math.isfinite(item))


MAX_DEPTH = 64
"""Most levels a free-form value (tool arguments and results, state, a message's parts…) may be nested.

The documents around such a value add about ten levels of their own. pydantic-core writes at most
about 255 levels and parses at most about 200, and Python's ``json`` module hits the interpreter's
recursion limit (1000 frames) sooner or later: a value nested past them could be recorded, and maybe
written, but not read back. 64 levels leave room for any real tool call. (MariaDB's JSON functions
have a lower limit of their own, which the MySQL stores deal with.)"""

_depth_limit: ContextVar[int] = ContextVar("agenteval_depth_limit", default=MAX_DEPTH)


def depth_limit() -> int:
    """The most levels a free-form value may nest here: :data:`MAX_DEPTH`, or less inside :func:`limited_depth`."""
    return _depth_limit.get()


@contextmanager
def limited_depth(limit: int | None) -> Iterator[None]:
    """Within the block (and the tasks started in it), allow free-form values at most ``limit`` levels.

    An evaluation saving to a store that holds less than :data:`MAX_DEPTH` levels (MariaDB's JSON
    columns) runs inside this, so that a value too deep for the store fails its own case rather
    than the save of every case. ``None`` keeps the current limit; a limit is never raised.
    """
    token = _depth_limit.set(min(limit, _depth_limit.get())) if limit is not None else None
    try:
        yield
    finally:
        if token is not None:
            _depth_limit.reset(token)


_Step = tuple["_Step | None", str | int]
"""A step of a path, from the value at the root: the step before it (``None`` at the root) and its key."""


def json_depth(value: Any) -> int:
    """How many levels of mappings and lists ``value`` nests (``0`` for a scalar, ``1`` for ``{"a": 1}``).

    Iterative, so that no value is too deep for it.
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children)
    return deepest


def depth_problem(value: Any) -> tuple[str, str, int] | None:
    """The first free-form value in ``value`` nested more than :func:`depth_limit` levels, or ``None``.

    Models are walked through their fields (unknown keys included) and count no levels: each
    free-form value is measured from its own field, as the limit means. It runs for every turn, so
    it only visits dicts, lists and models, and builds no path unless it finds a value too deep.

    Args:
        value: A model, or a dict or list of them, or a free-form value.

    Returns:
        The JSON path of the too-deep value's field (``conversation[0].tools[0].arguments``), the
        path where it passes the limit, shortened (``conversation[0].tools[0].arguments.a.a.a…a.a``),
        and how many levels the field's value nests.
    """
    limit = _depth_limit.get()
    stack: list[tuple[Any, int, _Step | None]] = [(value, 0, None)]
    push, pop = stack.append, stack.pop
    while stack:
        item, depth, step = pop()
        if isinstance(item, BaseModel):
            values = item.__dict__
            for name, json_key in _nesting_fields(type(item)):
                child = values[name]
                # An empty field value cannot be too deep; a list or dict below one level can.
                if child and isinstance(child, _NESTING):
                    push((child, 0, (step, json_key)))
            for json_key, child in (item.__pydantic_extra__ or {}).items():
                if isinstance(child, _NESTING):
                    push((child, 0, (step, json_key)))
            continue
        if isinstance(item, dict):
            children: Iterable[tuple[str | int, Any]] = item.items()
        elif isinstance(item, list | tuple):
            children = enumerate(item)
        else:
            continue
        if depth == limit:
            keys = _keys(step)
            root = len(keys) - depth
            field = _lookup(value, keys[:root])
            return _path_text(keys[:root]), _path_text(keys, shorten=True), json_depth(field)
        depth += 1
        for key, child in children:
            if isinstance(child, _NESTING):
                push((child, depth, (step, key)))
    return None


def _misplaced_null(model: BaseModel) -> str | None:
    """The JSON path of the first field, list item or mapping value holding None where its type has no None.

    Free-form values (``Any``) and unknown keys may hold None, and are not searched; fields left out of the
    JSON (``exclude``) are not either. None in a field whose default is None is left out of the JSON.
    """
    stack: list[tuple[BaseModel, _Step | None]] = [(model, None)]
    while stack:
        item, step = stack.pop()
        values = item.__dict__
        not_none, models, containers = _null_rules(type(item))
        for name, key in not_none:
            if values[name] is None:
                return _path_text(_keys((step, key)))
        for name, key in models:
            child = values[name]
            if isinstance(child, BaseModel):
                stack.append((child, (step, key)))
        for name, key in containers:
            child = values[name]
            if not child or not isinstance(child, list | tuple | dict):
                continue
            pairs: Iterable[tuple[str | int, Any]] = child.items() if isinstance(child, dict) else enumerate(child)
            for index, element in pairs:
                if element is None:
                    return _path_text(_keys(((step, key), index)))
                if isinstance(element, BaseModel):
                    stack.append((element, ((step, key), index)))
    return None


_Keys = tuple[tuple[str, str], ...]


@cache
def _null_rules(model: type[BaseModel]) -> tuple[_Keys, _Keys, _Keys]:
    """Which written fields of ``model`` (name, JSON key) :func:`_misplaced_null` looks at, in three groups.

    Those that may not hold None, those that hold a model, and those that hold typed items (models, text,
    numbers; not free-form values).
    """
    written = [(name, info) for name, info in model.model_fields.items() if not info.exclude]
    return (
        tuple((name, info.alias or name) for name, info in written if not _admits_none(info.annotation, info.default)),
        tuple((name, info.alias or name) for name, info in written if _is_model_type(_unwrapped(info.annotation))),
        tuple((name, info.alias or name) for name, info in written if _typed_items(info.annotation)),
    )


def _admits_none(annotation: Any, default: Any) -> bool:
    """Whether a field of ``annotation`` and ``default`` may hold None: it is its default, or its type allows it."""
    annotation = _unannotated(annotation)
    return default is None or annotation is Any or type(None) in get_args(annotation)


def _is_model_type(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _typed_items(annotation: Any) -> bool:
    """Whether a list or mapping of ``annotation`` holds typed items (models, text, numbers), not free-form values."""
    container = _unwrapped(annotation)
    if get_origin(container) not in (list, dict):
        return False
    element = get_args(container)[-1]
    if type(None) in get_args(element):  # list[X | None]: its items may be None
        return False
    element = _unwrapped(element)
    return isinstance(element, type) and issubclass(element, BaseModel | str | int | float)


def _unannotated(annotation: Any) -> Any:
    """``annotation`` without ``Annotated[...]``."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _unwrapped(annotation: Any) -> Any:
    """``annotation`` without ``Annotated[...]`` and ``| None``."""
    annotation = _unannotated(annotation)
    options = [option for option in get_args(annotation) if option is not type(None)]
    return _unwrapped(options[0]) if isinstance(annotation, UnionType) and len(options) == 1 else annotation


_NESTING = (BaseModel, dict, list, tuple)
"""What :func:`depth_problem` looks into: everything else is a leaf."""

_LEAF_TYPES = (str, int, float, bool)


@cache
def _nesting_fields(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    """The fields of ``model`` that may hold a dict, a list or a model: ``(python name, JSON key)``."""
    return tuple(
        (name, info.alias or name)
        for name, info in model.model_fields.items()
        if not (isinstance(info.annotation, type) and issubclass(info.annotation, _LEAF_TYPES))
    )


def _keys(step: _Step | None) -> list[str | int]:
    keys: list[str | int] = []
    while step is not None:
        step, key = step
        keys.append(key)
    return keys[::-1]


def _lookup(value: Any, keys: list[str | int]) -> Any:
    """The part of ``value`` at ``keys`` (JSON keys through models, as :func:`depth_problem` walks them)."""
    for key in keys:
        if isinstance(value, BaseModel):
            names = {alias: name for name, alias in _nesting_fields(type(value))}
            field = str(key)  # a model's steps are its JSON keys
            value = value.__dict__[names[field]] if field in names else (value.__pydantic_extra__ or {})[field]
        else:
            value = value[key]
    return value


def _path_text(keys: Sequence[object], *, shorten: bool = False) -> str:
    """A JSON path (``a.b[0].c``, ``['a b']``) of keys; ``shorten`` keeps the first eight steps and the last two."""
    parts = [f"[{key}]" if isinstance(key, int) else _key_text(key) for key in keys]
    if shorten and len(parts) > 10:
        parts = [*parts[:8], "…", *parts[-2:]]
    return "".join(parts).removeprefix(".")


def _key_text(key: object) -> str:
    return f".{key}" if isinstance(key, str) and key.isidentifier() else f"[{key!r}]"


_TEXT_HOLDERS = (str, BaseModel, dict, list, tuple)


def lone_surrogate_path(value: Any) -> str | None:
    """The JSON path of the first text in ``value`` holding a lone surrogate (which JSON cannot carry), or ``None``.

    Such text comes from cut UTF-16 (an emoji split in two) decoded leniently, e.g. by ``json.loads``.
    Models are walked through every field and unknown key; only text that is not ASCII is checked.
    """
    stack: list[tuple[Any, _Step | None]] = [(value, None)]
    while stack:
        item, step = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode()
                except UnicodeEncodeError:
                    return _path_text(_keys(step))
            continue
        if isinstance(item, BaseModel):
            fields = type(item).model_fields
            children: Iterable[tuple[str | int, Any]] = [
                (fields[name].alias or name, child) for name, child in item.__dict__.items() if name in fields
            ]
            children = [*children, *(item.__pydantic_extra__ or {}).items()]
        elif isinstance(item, dict):
            children = [(key, child) for key, child in item.items()] + [
                (f"<key {index}>", key) for index, key in enumerate(item) if isinstance(key, str)
            ]
        elif isinstance(item, list | tuple):
            children = enumerate(item)
        else:
            continue
        stack.extend((child, (step, key)) for key, child in children if isinstance(child, _TEXT_HOLDERS))
    return None


def depth_message(field: str, where: str, depth: int) -> str:
    """The message for a value nested too deeply (see :func:`depth_problem`)."""
    what = f"field {field}" if field else "the value"
    return (
        f"{what} is nested {depth} levels deep, over the limit of {_depth_limit.get()} levels (at {where}); JSON"
        " nested this deeply cannot be stored and read back: flatten the value, or store it as a JSON string"
    )


def written_json(model: WireModel, context: str) -> str:
    """``model.to_json(indent=None)``, with ``context`` in front of the error when it cannot be written.

    Raises:
        ConfigError: ``<context>: ...`` when the model cannot be written as JSON (a NaN, non-UTF-8 bytes, an
            arbitrary object in a free-form value, a value nested more than :data:`MAX_DEPTH` levels); the
            message names the field.
    """
    too_deep = depth_problem(model)
    if too_deep is not None:
        raise ConfigError(f"{context}: {depth_message(*too_deep)}")
    try:
        return model.to_json(indent=None)
    except ConfigError as exc:
        raise ConfigError(f"{context}: {exc}") from None


def json_copy(model: M, context: str) -> M:
    """A copy of ``model`` made through its JSON, so it holds exactly what a file or database would.

    Raises:
        ConfigError: As :func:`written_json`.
    """
    return type(model).model_validate_json(written_json(model, context))


def reject_non_finite(value: Any, context: str = "") -> None:
    """Raise :class:`ConfigError` if ``value`` holds a NaN or infinite number anywhere.

    The one check behind every write (and every file read): JSON has no such numbers, and Go's
    encoder refuses them too.

    Args:
        value: A model, or a list or mapping of models.
        context: Prefix of the message (``"eval case app.set.c1"``).

    Raises:
        ConfigError: ``<context>: field <path> is not a finite number (NaN); ...``.
    """
    found = non_finite_path(value)
    if found is None:
        return
    path, number = found
    token = "NaN" if math.isnan(number) else ("Infinity" if number > 0 else "-Infinity")
    prefix = f"{context}: " if context else ""
    raise ConfigError(
        f"{prefix}field {path} is not a finite number ({token}); JSON has no NaN or Infinity, "
        "so store a finite number (or a string) instead"
    )
