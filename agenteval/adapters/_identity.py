"""Helpers for the framework runners' ``cache_identity()``: what decides a framework agent's answers, as data.

A runner's ``cache_identity()`` returns plain data (text, numbers, JSON schemas) and the user's code
(functions, objects of the user's classes), which the cache counts by value and by code hash (see
:func:`agenteval.cache.code_hash`). These helpers turn a framework's objects into that: its version,
the settings of an object of the framework's own classes, a type's JSON schema, the functions a
framework's wrapper keeps.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib.metadata
import types
import typing
from collections.abc import Mapping
from typing import Any, Final, cast

from pydantic import BaseModel, TypeAdapter

from agenteval.cache._hasher import is_library_module

__all__ = [
    "framework_version",
    "functions_in",
    "is_library_module",
    "is_users",
    "json_schema",
    "settings",
    "type_identity",
]

_PLAIN: Final = (str, int, float, bool, type(None), enum.Enum)
_CODE: Final = (types.FunctionType, types.MethodType, functools.partial, type)
_MAX_TYPE_DEPTH: Final = 12
_NOT_CONFIGURATION: Final = ("_", "last_")
"""Prefixes of the fields that are not an object's configuration: private ones, and what it last did."""


def framework_version(distribution: str) -> str:
    """The installed version of a framework's distribution (its upgrade can change how the agent runs)."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return ""


def is_users(obj: object) -> bool:
    """Whether ``obj`` is of a class defined outside the standard library and installed packages (the user's)."""
    return not is_library_module(type(obj).__module__)


def settings(obj: object) -> object:
    """What an object's public attributes say about how it behaves: data and code, never a client or a lock.

    An object of the user's class is returned as it is (the cache counts its code and state); an
    object of a framework's class becomes its class's name and its public fields (a dataclass's
    constructor fields, a pydantic model's fields, else its attributes), keeping text, numbers,
    containers of those, data models and callables, and leaving out the rest (a client, a connection
    pool: they do not decide the answers; their endpoint and model name are fields of their own).
    What an object records as it runs is not configuration and is left out: a dataclass's fields
    its constructor does not take, and fields named ``last_*`` (pydantic-ai's ``TestModel`` keeps
    ``last_model_request_parameters``).
    """
    if obj is None or isinstance(obj, (*_PLAIN, *_CODE)):
        return obj
    if is_users(obj):
        return obj
    return {"class": f"{type(obj).__module__}.{type(obj).__qualname__}", "fields": _public_fields(obj)}


def _public_fields(obj: object) -> dict[str, object]:
    if dataclasses.is_dataclass(obj):
        names = [field.name for field in dataclasses.fields(obj) if field.init]
    elif isinstance(obj, BaseModel):
        names = list(type(obj).model_fields)
    else:
        names = list(getattr(obj, "__dict__", {}))
    found: dict[str, object] = {}
    for name in names:
        if name.startswith(_NOT_CONFIGURATION):
            continue
        value = getattr(obj, name, None)
        if _is_data_or_code(value):
            found[name] = value
    return found


def _is_data_or_code(value: object, depth: int = 0) -> bool:
    if isinstance(value, (*_PLAIN, *_CODE)) or callable(value) and is_users(value):
        return True
    if depth > 8:
        return False
    if isinstance(value, list | tuple | set | frozenset):
        return all(_is_data_or_code(item, depth + 1) for item in value)
    if isinstance(value, Mapping):
        return all(_is_data_or_code(item, depth + 1) for item in value.values())
    if isinstance(value, BaseModel) or dataclasses.is_dataclass(value) and not isinstance(value, type):
        return all(_is_data_or_code(item, depth + 1) for item in _public_fields(value).values())
    return False


def json_schema(annotation: object) -> object:
    """The JSON schema of a type (an output type, a tool's arguments), ``None`` when it has none."""
    if annotation is None:
        return None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation.model_json_schema()
    try:
        return TypeAdapter(cast(Any, annotation)).json_schema()
    except Exception:  # a type pydantic cannot describe: its code counts where the caller adds it
        return None


def functions_in(wrapper: object) -> list[object]:
    """The functions a framework's callable wrapper keeps in its attributes (``function_tool``'s invoker).

    The wrapper itself when it is a function; a function of a library counts with the callables it
    closes over (see :func:`agenteval.cache.code_hash`), so the user's function inside is found.
    """
    if isinstance(wrapper, _CODE) or is_users(wrapper):
        return [wrapper]
    attributes = getattr(wrapper, "__dict__", {})
    return [
        value for _, value in sorted(attributes.items()) if isinstance(value, _CODE) and not isinstance(value, type)
    ]


def type_identity(annotation: object, depth: int = 0) -> object:
    """A type as data: its origin and arguments, ``Annotated`` metadata (a reducer function by its code), fields.

    A class of the user's counts by its code and its fields' types (a ``TypedDict``'s keys, a
    dataclass's or pydantic model's fields); a library's class by its name.
    """
    if depth > _MAX_TYPE_DEPTH or annotation is None or isinstance(annotation, str | int | float | bool):
        return annotation if not isinstance(annotation, type) else _qualified(annotation)
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if origin is typing.Annotated:
        return {
            "annotated": type_identity(arguments[0], depth + 1),
            "metadata": [settings(item) for item in arguments[1:]],
        }
    if origin is not None:
        return {"origin": _qualified(origin), "args": [type_identity(item, depth + 1) for item in arguments]}
    if not isinstance(annotation, type):
        return repr(annotation) if not callable(annotation) else settings(annotation)
    if is_library_module(annotation.__module__):
        return _qualified(annotation)
    try:
        hints = typing.get_type_hints(annotation, include_extras=True)
    except Exception:  # a forward reference that does not resolve: the class's code still counts
        hints = {}
    return {"class": annotation, "fields": {name: type_identity(hint, depth + 1) for name, hint in hints.items()}}


def _qualified(value: object) -> str:
    name = getattr(value, "__qualname__", None)
    return f"{getattr(value, '__module__', '')}.{name}" if isinstance(name, str) else repr(value)
