"""Cache keys: hashes of what a cached inference or score depends on, equal in every process.

Every function here is pure and returns a SHA-256 hex digest of a canonical JSON form of its inputs
(sorted keys, no ``id()``, no ``hash()``: ``PYTHONHASHSEED`` differs between processes).

- :func:`inference_key`: the case (its content hash), the run index and the agent's identity
  (:func:`agent_identity`: its qualified name, :func:`code_hash` and a version its user sets).
- :func:`score_key`: what was scored, the metric's full definition (criterion, threshold, judge model
  and settings) and the evaluator's version (:func:`evaluator_version`: its code and agenteval's version).

:func:`code_hash` sees code, not everything the code does; what it cannot see is listed there.
"""

from __future__ import annotations

import collections
import dataclasses
import dis
import enum
import functools
import hashlib
import json
import os
import site
import sys
import sysconfig
import types
from collections.abc import Iterator, Mapping
from typing import Any, Final

from pydantic import BaseModel

from agenteval._names import qualified_name
from agenteval._secrets import is_credential_name, strip_userinfo
from agenteval.errors import ConfigError
from agenteval.evalresult.provenance import package_version
from agenteval.metric.criterion import JudgeModelOptions
from agenteval.metric.models import EvalMetric

__all__ = [
    "agent_identity",
    "code_hash",
    "definition_score_key",
    "evaluator_version",
    "inference_key",
    "metric_definition",
    "score_key",
    "settings_hash",
    "value_hash",
]

_KEY_FORMAT: Final = 1
"""Part of every key: changing how keys are made changes this, so no old entry is read as a new one."""

_CREDENTIAL: Final = "<credential>"
"""Stands for a value held under a credential's name: a key is not part of a definition."""

_BUILTIN_CALLABLES: Final = (
    types.BuiltinFunctionType,
    types.BuiltinMethodType,
    types.WrapperDescriptorType,
    types.MethodWrapperType,
    types.MethodDescriptorType,
    types.ClassMethodDescriptorType,
)

_CODE_TYPES: Final = (
    types.FunctionType,
    types.MethodType,
    functools.partial,
    staticmethod,
    classmethod,
    property,
    functools.cached_property,
    type,
    types.CodeType,
    *_BUILTIN_CALLABLES,
)
"""What counts by its code (:func:`code_hash`) rather than as a value."""

_SCALARS: Final = (str, int, float, bool, type(None))

_IDENTITY_METHOD: Final = "cache_identity"
"""An object may describe what decides its answers (its settings, by value; code counts by its hash)."""

_MUTABLE_STATE: Final = (list, dict, set, bytearray, collections.deque, collections.Counter)
"""Closed over, these count by type: a function's calls change them (a list of calls, a counter)."""

_GLOBAL_STORES: Final = frozenset({"STORE_GLOBAL", "DELETE_GLOBAL"})

_JUDGE_CONNECTION: Final = ("provider_name", "model_name", "variant", "base_url")


def code_hash(obj: object) -> str:
    """A hash of the code of a function, class or object that changes when that code changes.

    What it covers:

    - a function: its bytecode, constants (nested functions, lambdas and comprehensions included),
      names, arguments and flags (``async``, generator); its default arguments; the values it closes
      over (a closed-over function by its own code hash; a list, dict, set or deque by its type only,
      since a function's calls change them); and the global functions, classes and
      constants (``str``, ``int``, ``float``, ``bool``, ``None``) it reads by name, but not a global
      it also assigns (a counter would change the hash on every call);
    - a ``functools.partial``: its function's hash and its arguments;
    - a bound method: its function and its object's class;
    - a class, or an object (by its class): the methods, properties, nested classes and plain
      attributes (a dataclass's or pydantic model's field defaults included) defined in the class
      and in its bases outside the standard library and site-packages (those count by name);
    - a built-in function, or a function or class of the standard library or an installed package:
      its qualified name;
    - something ``functools.wraps`` or ``functools.lru_cache`` wraps (``__wrapped__``), too.

    Values count by a canonical JSON form (containers, enums, dataclasses and pydantic models
    included), anything else by its type's name; a value under a credential's name
    (``api_key=``, ``token``: see :func:`agenteval._secrets.is_credential_name`) does not count.
    Line numbers, file names and comments do not count, so moving a function, or defining it again
    from the same source, keeps its hash; a docstring does count.

    An object that has a ``cache_identity()`` method counts by what it returns, too (agenteval's
    chat models, simulators, evaluators made from functions and agent-function runners have one).

    What it cannot see, and ``agent_version=`` is for: an object's own state (``self.model``,
    set in ``__init__``; what a framework's agent object holds, such as its tools), globals that
    are not functions, classes or plain constants (a tuple, list, dict, enum member, config object
    or client), attributes of modules (``config.MODEL``, and functions called as
    ``helpers.fmt()``: import them by name to have them counted), files (a prompt file),
    environment variables, the model behind an API name, and the versions of installed packages.
    The hash of a function also differs between Python versions, whose bytecode differs.

    Args:
        obj: A function, ``functools.partial``, method, class or any object.

    Returns:
        A SHA-256 hex digest.
    """
    return _CodeHasher().code(obj)


def value_hash(value: object) -> str:
    """A hash of a value as :func:`code_hash` counts values: data exactly, functions and classes by their code.

    For settings that hold code, such as a registry of named compare functions.

    Args:
        value: Containers, scalars, enums, dataclasses, pydantic models, functions and classes
            (anything else counts by its type's name).

    Returns:
        A SHA-256 hex digest.
    """
    return _digest(_CodeHasher().value(value))


def settings_hash(obj: object) -> str:
    """A hash of an object's code and settings: for the judges, simulators and evaluators that take part.

    The object's :func:`code_hash` (which holds what its ``cache_identity()`` method returns, when it
    has one), and, for an object without that method, its attributes by value, as :func:`value_hash`
    counts them, except that a list, dict, set or deque counts by its type (objects keep state there:
    the requests they received). A counter among the attributes makes every evaluation a miss, never
    a stale hit.

    Args:
        obj: A function, class or object.

    Returns:
        A SHA-256 hex digest.
    """
    hasher = _CodeHasher()
    state: dict[str, object] = {}
    if not _is_code(obj) and not callable(getattr(obj, _IDENTITY_METHOD, None)):
        state = {name: _closed_over(value) for name, value in sorted(_attributes(obj).items())}
    return _digest({"code": hasher.code(obj), "state": hasher.value(_without_credentials(state))})


def agent_identity(agent: object, agent_version: str = "") -> str:
    """Who answers a case: the agent's qualified name, its :func:`code_hash` and ``agent_version``.

    Args:
        agent: The agent (a function, partial, method, class or object).
        agent_version: Anything the code hash cannot see that changes the agent's answers (a prompt
            file's version, a model name); change it to run the agent again.

    Returns:
        A SHA-256 hex digest.

    Raises:
        ConfigError: ``agent_version`` is not a string.
    """
    if not isinstance(agent_version, str):
        raise ConfigError(f"agent_version must be a string, got {type(agent_version).__name__}")
    return _digest({"agent": qualified_name(agent), "code": code_hash(agent), "version": agent_version})


def inference_key(case_hash: str, run_id: int, agent_identity: str) -> str:
    """The key of one run of one case by one agent.

    Args:
        case_hash: :func:`agenteval.evalset.identity.case_hash` of the case.
        run_id: The run's index.
        agent_identity: :func:`agent_identity` of the agent.

    Returns:
        A SHA-256 hex digest.
    """
    return _digest({"kind": "inference", "case": case_hash, "run": run_id, "agent": agent_identity})


def score_key(inference_hash: str, metric: EvalMetric, evaluator_version: str) -> str:
    """The key of one metric's score of one inference.

    The metric counts by its whole definition (see :func:`metric_definition`).

    Args:
        inference_hash: What is scored: it must change when the agent's output or the case
            (whose expected turns the score compares with) changes, e.g. a hash of the inference's
            key and its content. The inference key alone would keep a stale score when an entry is
            computed again with a different output.
        metric: The metric.
        evaluator_version: :func:`evaluator_version` of the evaluator that scores the metric, or a
            hash of it and other settings that change scores (a judge given in place of the metric's).

    Returns:
        A SHA-256 hex digest.

    Raises:
        ConfigError: A number in the metric is NaN or infinite.
    """
    return definition_score_key(inference_hash, metric_definition(metric, evaluator_version))


def metric_definition(metric: EvalMetric, evaluator_version: str) -> str:
    """A hash of everything about a metric that decides its scores, for :func:`definition_score_key`.

    The metric counts by its whole definition as written to a file (name, evaluator, threshold,
    criterion with the judge's settings, extension), plus what its judge model's ``${VAR}``
    references expand to (a file keeps the reference). Its api key does not count: it is never
    written, and a new key scores the same.

    Args:
        metric: The metric.
        evaluator_version: As for :func:`score_key`.

    Returns:
        A SHA-256 hex digest.

    Raises:
        ConfigError: A number in the metric is NaN or infinite.
    """
    return _digest(
        {
            "metric": metric.to_dict(),
            "judges": list(_judge_connections(metric.criterion)),
            "evaluator": evaluator_version,
        }
    )


def definition_score_key(inference_hash: str, definition: str) -> str:
    """:func:`score_key` from a :func:`metric_definition` made once for many inferences."""
    return _digest({"kind": "score", "inference": inference_hash, "definition": definition})


def evaluator_version(evaluator: object) -> str:
    """The version of an evaluator's code and settings: its :func:`settings_hash` and agenteval's version.

    Args:
        evaluator: The evaluator (an object, by its class, or a function).

    Returns:
        A SHA-256 hex digest.
    """
    return _digest({"code": settings_hash(evaluator), "agenteval": package_version()})


def _digest(value: object) -> str:
    data = {"format": _KEY_FORMAT, "value": value}
    # ASCII: a lone surrogate in a string would not encode as UTF-8.
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _judge_connections(value: object) -> Iterator[dict[str, str]]:
    """What each judge model found in ``value`` is reached at, ``${VAR}`` references expanded."""
    if isinstance(value, JudgeModelOptions):
        yield {name: strip_userinfo(getattr(value, name)) for name in _JUDGE_CONNECTION}
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _judge_connections(getattr(value, name))
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _judge_connections(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _judge_connections(item)


class _CodeHasher:
    """Hashes code, once per object within one :func:`code_hash` call.

    Cycles (a recursive function, classes whose methods name each other) stand for the object's
    name where they close, which is the same in every process since the walk's order is fixed.
    """

    def __init__(self) -> None:
        # The objects are kept so that their ids are not reused by others during the walk.
        self._done: dict[int, tuple[object, str]] = {}
        self._walking: set[int] = set()

    def code(self, obj: object) -> str:
        """The hash of ``obj``'s code (see :func:`code_hash`)."""
        key = id(obj)
        if key in self._done:
            return self._done[key][1]
        if key in self._walking:
            return _digest({"recursive": _name(obj)})
        self._walking.add(key)
        try:
            digest = _digest(self._describe(obj))
        finally:
            self._walking.discard(key)
        self._done[key] = (obj, digest)
        return digest

    def _describe(self, obj: object) -> object:
        if isinstance(obj, functools.partial):
            return {
                "partial": self.code(obj.func),
                "args": self._value(obj.args),
                "kwargs": self._named_values(obj.keywords),
            }
        if isinstance(obj, types.FunctionType):
            return {"library": _name(obj)} if _is_library_module(obj.__module__) else self._function(obj)
        if isinstance(obj, types.MethodType):
            owner = obj.__self__ if isinstance(obj.__self__, type) else type(obj.__self__)
            return {"method": self.code(obj.__func__), "of": self.code(owner)}
        if isinstance(obj, staticmethod | classmethod):
            return {"wraps": self.code(obj.__func__)}
        if isinstance(obj, property):
            return {"property": [self.code(part) if part is not None else None for part in _accessors(obj)]}
        if isinstance(obj, functools.cached_property):
            return {"cached property": self.code(obj.func)}
        if isinstance(obj, types.CodeType):
            return self._code_object(obj)
        if isinstance(obj, _BUILTIN_CALLABLES) or (isinstance(obj, type) and _is_library_module(obj.__module__)):
            return {"library": _name(obj)}
        if isinstance(obj, type):
            return {"class": [self._class_body(cls) for cls in obj.__mro__]}
        return {"instance of": self.code(type(obj)), "wraps": self._wrapped(obj), "identity": self._identity(obj)}

    def _identity(self, obj: object) -> object:
        """What an object's ``cache_identity()`` says decides its answers (``None`` without one)."""
        describe = getattr(obj, _IDENTITY_METHOD, None)
        return self._value(describe()) if callable(describe) and not isinstance(obj, type) else None

    def _function(self, function: types.FunctionType) -> object:
        code = function.__code__
        cells = function.__closure__ or ()
        return {
            "code": self._code_object(code),
            "defaults": self._value(function.__defaults__),
            "kwdefaults": self._named_values(function.__kwdefaults__ or {}),
            "closure": self._named_values(
                {name: _closed_over(_cell_contents(cell)) for name, cell in zip(code.co_freevars, cells, strict=True)}
            ),
            "globals": self._named_values(_read_globals(code, function.__globals__)),
            "wraps": self._wrapped(function),
        }

    def _code_object(self, code: types.CodeType) -> object:
        return {
            "bytecode": code.co_code.hex(),
            "exceptions": code.co_exceptiontable.hex(),
            "constants": [self._constant(constant) for constant in code.co_consts],
            "names": code.co_names,
            "variables": code.co_varnames,
            "free": code.co_freevars,
            "cells": code.co_cellvars,
            "arguments": [code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount],
            "flags": code.co_flags,
        }

    def _constant(self, constant: object) -> object:
        if isinstance(constant, types.CodeType):
            return {"code": self.code(constant)}
        if isinstance(constant, frozenset):
            # A set's order follows string hashes, which differ between processes.
            return {"set": sorted(_canonical_text(self._constant(item)) for item in constant)}
        if isinstance(constant, tuple):
            return {"tuple": [self._constant(item) for item in constant]}
        return self._value(constant)

    def _class_body(self, cls: type) -> object:
        if _is_library_module(cls.__module__):
            return {"library": _name(cls)}
        namespace = vars(cls)
        # Dunder data (__module__, __doc__, __dict__, __slots__, __dataclass_fields__...) is made by Python.
        members = {
            name: self._named_value(name, member)
            for name, member in sorted(namespace.items())
            if _is_code(member) or not (name.startswith("__") and name.endswith("__"))
        }
        # A pydantic model keeps its fields' defaults there rather than as class attributes.
        fields = namespace.get("__pydantic_fields__", {})
        defaults = {name: [info.default, info.default_factory] for name, info in fields.items()}
        return {"members": members, "field defaults": self._named_values(defaults)}

    def _wrapped(self, obj: object) -> str | None:
        namespace = getattr(obj, "__dict__", None)
        wrapped = namespace.get("__wrapped__") if isinstance(namespace, dict) else None
        return self.code(wrapped) if wrapped is not None else None

    def value(self, value: object) -> object:
        """A canonical, JSON-ready form of ``value`` (see :func:`value_hash`)."""
        return self._value(value)

    def _named_values(self, values: Mapping[str, object]) -> dict[str, object]:
        return {name: self._named_value(name, value) for name, value in values.items()}

    def _named_value(self, name: str, value: object) -> object:
        if is_credential_name(name) and not _is_code(value):
            return _CREDENTIAL
        return self._value(value)

    def _value(self, value: object, containing: frozenset[int] = frozenset()) -> object:
        """A canonical, JSON-ready form of ``value``: exact for data, the code hash for code, else the type."""
        if isinstance(value, _SCALARS):
            return value
        if _is_code(value):
            return {"code": self.code(value)}
        if id(value) in containing:
            return {"cycle": type(value).__qualname__}
        inside = containing | {id(value)}
        if isinstance(value, list | tuple):
            return [self._value(item, inside) for item in value]
        if isinstance(value, dict):
            pairs = [[self._value(key, inside), self._dict_value(key, item, inside)] for key, item in value.items()]
            return {"dict": sorted(pairs, key=_canonical_text)}
        if isinstance(value, set | frozenset):
            return {"set": sorted(_canonical_text(self._value(item, inside)) for item in value)}
        return self._object_value(value, inside)

    def _dict_value(self, key: object, value: object, containing: frozenset[int]) -> object:
        if isinstance(key, str) and is_credential_name(key) and not _is_code(value):
            return _CREDENTIAL
        return self._value(value, containing)

    def _object_value(self, value: object, containing: frozenset[int]) -> object:
        kind = _name(type(value))
        if isinstance(value, bytes):
            return {"bytes": value.hex()}
        if isinstance(value, complex):
            return {"complex": [value.real, value.imag]}
        if isinstance(value, enum.Enum):
            return {"enum": kind, "value": self._value(value.value, containing)}
        if dataclasses.is_dataclass(value):
            fields = {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
            return {"dataclass": kind, "fields": self._value(_without_credentials(fields), containing)}
        if isinstance(value, BaseModel):
            fields = {name: getattr(value, name) for name in type(value).model_fields}
            return {"model": kind, "fields": self._value(_without_credentials(fields), containing)}
        if isinstance(value, types.ModuleType):
            return {"module": value.__name__}
        if callable(getattr(value, _IDENTITY_METHOD, None)):
            return {"object": self.code(value)}
        return {"type": kind}


def _without_credentials(fields: dict[str, object]) -> dict[str, object]:
    return {name: value for name, value in fields.items() if _is_code(value) or not is_credential_name(name)}


def _is_code(value: object) -> bool:
    """Whether ``value`` counts by its code: a function, method, partial, class or code object."""
    return isinstance(value, _CODE_TYPES)


def _accessors(prop: property) -> tuple[Any, Any, Any]:
    return prop.fget, prop.fset, prop.fdel


def _cell_contents(cell: types.CellType) -> object:
    try:
        return cell.cell_contents
    except ValueError:
        # A cell is empty until the enclosing function assigns it.
        return None


def _attributes(obj: object) -> dict[str, object]:
    """An object's instance attributes: its ``__dict__`` and the slots its classes declare."""
    found = dict(getattr(obj, "__dict__", None) or {})
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                found[name] = getattr(obj, name)
    return found


def _closed_over(value: object) -> object:
    """A closed-over value as it counts: a list, dict or set by its type, as agents keep state in them."""
    return {"mutable": type(value).__qualname__} if isinstance(value, _MUTABLE_STATE) else value


def _read_globals(code: types.CodeType, namespace: Mapping[str, object]) -> dict[str, object]:
    """The globals ``code`` (with the code nested in it) reads and never assigns, that count: code and constants."""
    read, assigned = _global_names(code)
    return {
        name: namespace[name]
        for name in sorted(read - assigned)
        if name in namespace and (_is_code(namespace[name]) or isinstance(namespace[name], _SCALARS))
    }


@functools.lru_cache(maxsize=4096)
def _global_names(code: types.CodeType) -> tuple[frozenset[str], frozenset[str]]:
    """The global names ``code`` (with the code nested in it) reads, and those it assigns or deletes.

    Cached: reading bytecode is most of the time :func:`code_hash` takes, and equal code has equal names.
    """
    read: set[str] = set()
    assigned: set[str] = set()
    for instruction in dis.get_instructions(code):
        if instruction.opname == "LOAD_GLOBAL":
            read.add(instruction.argval)
        elif instruction.opname in _GLOBAL_STORES:
            assigned.add(instruction.argval)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            nested_read, nested_assigned = _global_names(constant)
            read |= nested_read
            assigned |= nested_assigned
    return frozenset(read), frozenset(assigned)


def _name(obj: object) -> str:
    """``module.qualname`` of a function or class (of an object's class otherwise)."""
    named = obj if hasattr(obj, "__qualname__") else type(obj)
    module = getattr(named, "__module__", None) or getattr(getattr(named, "__objclass__", None), "__module__", None)
    qualname = getattr(named, "__qualname__", type(named).__qualname__)
    return f"{module}.{qualname}" if module else str(qualname)


@functools.cache
def _is_library_module(module_name: str | None) -> bool:
    """Whether a module is of the standard library or an installed package (``None``: code run by ``exec``)."""
    if module_name is None:
        return False
    if module_name in sys.builtin_module_names:
        return True
    module = sys.modules.get(module_name)
    file = getattr(module, "__file__", None)
    if not isinstance(file, str):
        spec = getattr(module, "__spec__", None)
        return getattr(spec, "origin", None) in ("built-in", "frozen")
    return os.path.realpath(file).startswith(_library_directories())


@functools.cache
def _library_directories() -> tuple[str, ...]:
    """The directories of the standard library and of installed packages, each ending in a separator."""
    paths = sysconfig.get_paths()
    directories = {paths[name] for name in ("stdlib", "platstdlib", "purelib", "platlib") if name in paths}
    directories.update(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        directories.add(site.getusersitepackages())
    return tuple(sorted(os.path.join(os.path.realpath(directory), "") for directory in directories))


def _canonical_text(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
