"""The walk behind :func:`agenteval.cache.code_hash`: code by its bytecode, data by value, the rest by type.

:class:`CodeHasher` walks from a function, class or object through everything that decides what its
code does: the globals, closed-over values and default arguments its functions read, the modules they
import, the attributes of its objects, the callables and data in containers, at any depth. What it
cannot see (an object of a library class, a value too large or too deep, a lookup by a name known only
at run time) counts by its type's name, and, when the walk observes
(:func:`agenteval.cache.identity.describe_agent`), is noted in :attr:`CodeHasher.unseen`. Each named
place with data (a global, an attribute, ...) counts by a digest of its data, made once from the
digests of the named places inside it (a Merkle walk: the time grows with the data, not with how deep
it lies), kept in :attr:`CodeHasher.parts` so that a change while the agent ran can be named. Secrets
(:func:`is_secret`) do not count.

State the code writes counts by its type only: what :mod:`agenteval.cache._bytecode` finds the code
assigning or changing in place (``self.calls += 1``, ``LOG.append(m)``, ``MEMO[key] = v``, a global it
assigns, a ``defaultdict`` it looks items up in), in the functions and in the methods of an object
that its caller reaches.
"""

from __future__ import annotations

import array
import collections
import contextlib
import dataclasses
import datetime
import decimal
import dis
import enum
import fractions
import functools
import hashlib
import importlib
import importlib.machinery
import importlib.util
import inspect
import ipaddress
import json
import logging
import operator
import os
import pathlib
import re
import site
import sys
import sysconfig
import types
import typing
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, Secret, SecretBytes, SecretStr
from pydantic_core import PydanticUndefined

from agenteval._util.redaction import is_credential_name as _is_credential_name
from agenteval._util.redaction import looks_like_secret
from agenteval.cache._bytecode import ANY, GLOBAL, LOCAL, MODULE, SUBSCRIPT, CodeFacts, Path, code_facts, under

__all__ = [
    "IDENTITY_METHOD",
    "CodeHasher",
    "Place",
    "attributes",
    "canonical_text",
    "digest",
    "is_code",
    "is_library_module",
    "is_secret",
]

is_credential_name: Final = functools.lru_cache(maxsize=8192)(_is_credential_name)
"""Whether a name is a credential's (cached: a walk asks for every name it meets)."""

_KEY_FORMAT: Final = 2
"""Part of every key: changing how keys are made changes this, so no old entry is read as a new one."""

_CREDENTIAL: Final = "<credential>"
"""Stands for a secret (see :func:`is_secret`): a key is not part of a definition, and is never needed to make one."""

_SECRET_TYPES: Final = (Secret, SecretStr, SecretBytes)
"""Types that say their value is a secret, whatever it is named."""

IDENTITY_METHOD: Final = "cache_identity"
"""An object may describe what decides its answers (its settings, by value; code counts by its hash)."""

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
"""What counts by its code rather than as a value."""

_SCALARS: Final = (str, int, float, bool, type(None))

_SCALAR_TYPES: Final = frozenset(_SCALARS)
"""The exact types that count as themselves: a subclass's object (a ``str`` subclass with methods) is an object too."""

_CONTAINERS: Final = (list, tuple, collections.deque, array.array, dict, types.MappingProxyType, set, frozenset)
"""What counts by its items."""

_CONTAINER_TYPES: Final = frozenset(_CONTAINERS)

_BUILTIN_VALUES: Final = (*_CONTAINERS, *_SCALARS)

if typing.TYPE_CHECKING:  # array.array takes no parameter at run time before Python 3.12
    _BuiltinValue: typing.TypeAlias = (
        list[Any]
        | tuple[Any, ...]
        | collections.deque[Any]
        | array.array[Any]
        | dict[Any, Any]
        | types.MappingProxyType[Any, Any]
        | set[Any]
        | frozenset[Any]
        | str
        | int
        | float
        | None
    )

_PYTHON_MADE_DESCRIPTORS: Final = (
    types.MemberDescriptorType,
    types.GetSetDescriptorType,
    type(vars(collections.namedtuple("_Pair", "first"))["first"]),  # a named tuple's field
)
"""Class attributes Python makes for slots and named tuple fields: their values are the objects', counted there."""

_MUTABLE_STATE: Final = (list, dict, set, bytearray, collections.deque)
"""Containers a method can change in place; see :data:`_MUTATORS`."""

_MUTATORS: Final = frozenset(
    {
        "append",
        "extend",
        "insert",
        "remove",
        "pop",
        "popitem",
        "popleft",
        "clear",
        "sort",
        "reverse",
        "add",
        "discard",
        "update",
        "difference_update",
        "intersection_update",
        "symmetric_difference_update",
        "setdefault",
        "appendleft",
        "extendleft",
        "rotate",
        "subtract",
        "__setitem__",
        "__delitem__",
        "__iadd__",
        "__ior__",
    }
)
"""Methods of lists, dicts, sets and deques that change them: a container the code calls one of is its state."""

_SETUP_METHODS: Final = frozenset(
    {"__init__", "__post_init__", "__new__", "__init_subclass__", "__set_name__", "__setstate__", "model_post_init"}
)
"""Methods that make an object rather than run it: what they assign is its configuration."""

_ENTRY_METHODS: Final = frozenset({"__call__", "run", "end_session"})
"""The methods by which agenteval runs an agent object (an agent function, a Runner)."""

_MAX_NODES: Final = 50_000
"""The most values one walk counts by value; beyond, values count by type (and are noted)."""

_MAX_DEPTH: Final = 40
"""The deepest nesting of containers and objects counted by value."""

_SHORT_TEXT: Final = 64
"""Text as long as this counts as itself where its digest could stand for it (a set's member, a named place's value)."""

_PYTHON_MADE: Final = frozenset({"_abc_impl"})
"""Class attributes Python makes (an abstract base class's registry)."""

_GENERIC_BASES: Final = frozenset({"builtins", "abc", "typing", "typing_extensions", "pydantic", "collections"})
"""Modules of base classes whose methods are the language's or a data model's machinery, not an object's behaviour."""

_STORES: Final = frozenset(
    dis.opmap[name]
    for name in ("STORE_ATTR", "DELETE_ATTR", "STORE_SUBSCR", "DELETE_SUBSCR", "STORE_SLICE")
    if name in dis.opmap
)
"""The opcodes that store into an object."""

_GLOBAL_STORES: Final = frozenset(dis.opmap[name] for name in ("STORE_GLOBAL", "DELETE_GLOBAL"))

_OWN_PACKAGE: Final = "agenteval"
_OWN_EXAMPLES: Final = "agenteval.examples"


@dataclass(frozen=True, slots=True)
class Place:
    """Where a value was found, for what the code does to it and for naming it.

    Attributes:
        label: Names the place (``global `CONFIG` read by `agent```); ``None`` inside a named place.
        reads: The paths the code reads below the place (``("prefix",)`` for ``CONFIG.prefix``).
        writes: The paths the code writes below it; ``()`` when it assigns the place itself.
        known: Whether the code reaching the value is known (a global, an attribute); ``False`` for a
            value in a default argument, a partial or what ``cache_identity()`` returns.
        built_in: Whether the place is what one of agenteval's own runners returns as its identity.
    """

    label: str | None = None
    reads: frozenset[Path] = frozenset()
    writes: frozenset[Path] = frozenset()
    known: bool = False
    built_in: bool = False

    def below(self, step: str) -> Place:
        """The place of a part of this one's value: an attribute, or ``[]`` for an item."""
        return Place(None, under(self.reads, (step,)), under(self.writes, (step,)), self.known)

    def methods_called(self) -> frozenset[str] | None:
        """The methods the code may call on the value (``None``: unknown, so any, as for ``getattr(x, name)()``)."""
        if not self.known or (ANY,) in self.reads:
            return None
        return _ENTRY_METHODS | {path[0] for path in self.reads if path}

    def changes_in_place(self, value: object) -> bool:
        """Whether the code changes a container in place.

        It stores into it (``x[k] = v``), calls a method that changes it (``x.append(v)``), or looks an
        item up in a ``defaultdict``, which adds the item (``memory[session].append(m)``).
        """
        if (SUBSCRIPT,) in self.writes or any(len(path) == 1 and path[0] in _MUTATORS for path in self.reads):
            return True
        return isinstance(value, collections.defaultdict) and any(path[:1] == (SUBSCRIPT,) for path in self.reads)


_NOWHERE: Final = Place()
_AGENT: Final = Place("the agent", known=True)
_SETTINGS: Final = Place("the object")
"""An object not run through known methods (a judge, an evaluator): what any of its methods writes is state."""


class CodeHasher:
    """Hashes code, once per object within one walk.

    Cycles (a recursive function, classes whose methods name each other) stand for the object's
    name where they close, which is the same in every process since the walk's order is fixed.

    Args:
        state: Whether an object passed to :meth:`code` is an agent, whose state is what the methods
            agenteval runs it by (``__call__``, ``run``) and those they call write; else (a judge's or
            an evaluator's settings) what any of its methods writes is state. Either way its other
            attributes count by value, and an object reached from it through code (what a partial,
            a ``staticmethod`` or ``__wrapped__`` holds) counts as the latter.
        observe: Whether to note what cannot be seen and keep a digest of each named place.
    """

    def __init__(self, *, state: bool = True, observe: bool = False) -> None:
        # The objects are kept so that their ids are not reused by others during the walk.
        self._done: dict[int, tuple[object, str]] = {}
        self._walking: set[int] = set()
        self._top = _AGENT if state else _SETTINGS
        self._observe = observe
        self._quiet = 0
        self._nodes = 0
        self._where: list[str] = []
        self._class_facts: dict[tuple[int, frozenset[str] | None], tuple[frozenset[Path], frozenset[Path]]] = {}
        self._kept: list[object] = []
        self.unseen: dict[str, None] = {}
        """What counts by its type only, each said once (a dict for its order)."""
        self.parts: dict[str, str] = {}
        """A digest of the data at each named place, by the place's label."""
        self.parents: dict[str, str | None] = {}
        """The named place each named place is in (``None``: at the top)."""
        self.built_in: dict[str, None] = {}
        """The named places that are what one of agenteval's own runners returns as its identity."""

    # --- code ------------------------------------------------------------------------------------

    def code(self, obj: object) -> str:
        """The hash of ``obj``'s code (see :func:`agenteval.cache.code_hash`), ``obj`` run as ``state`` says."""
        return self._code(obj, self._top)

    def _code(self, obj: object, place: Place = _NOWHERE) -> str:
        """The hash of code the walk reaches; an object at ``place`` (by default, one called: any method may run)."""
        key = id(obj)
        if key in self._done:
            return self._done[key][1]
        if key in self._walking:
            return digest({"recursive": _name(obj)})
        self._walking.add(key)
        try:
            result = digest(self._describe(obj, place))
        finally:
            self._walking.discard(key)
        self._done[key] = (obj, result)
        return result

    def _describe(self, obj: object, place: Place) -> object:
        if type(obj) in _SCALAR_TYPES:
            return {"value": obj}  # a factory's "module:function" name; no agent
        if isinstance(obj, functools.partial):
            return self._partial(obj)
        if isinstance(obj, types.FunctionType):
            return self._library_function(obj) if is_library_module(_module_of(obj)) else self._function(obj)
        if isinstance(obj, types.MethodType):
            return self._method(obj)
        if isinstance(obj, staticmethod | classmethod):
            return {"wraps": self._code(obj.__func__)}
        if isinstance(obj, property):
            return {"property": [self._code(part) if part is not None else None for part in _accessors(obj)]}
        if isinstance(obj, functools.cached_property):
            return {"cached property": self._code(obj.func)}
        if isinstance(obj, types.CodeType):
            return self._code_object(obj)
        if isinstance(obj, _BUILTIN_CALLABLES) or (isinstance(obj, type) and is_library_module(_module_of(obj))):
            return {"library": _name(obj)}
        if isinstance(obj, type):
            with self._own(_module_of(obj)):
                return {"class": [self._class_body(cls) for cls in obj.__mro__]}
        return self._instance(obj, place)

    def _instance(self, obj: object, place: Place) -> object:
        """An object: its class's code, what it wraps, its ``cache_identity()``, else its state and data."""
        cls = type(obj)
        identity = self._identity(obj)
        described: dict[str, object] = {
            "instance of": self._code(cls),
            "wraps": self._wrapped(obj),
            "identity": identity,
        }
        if identity is not None:
            return described
        if is_library_module(_module_of(cls)):
            if described["wraps"] is None:
                self._unseen(_name(cls), place)
                described["calls"] = self._code_held(obj)
            return described
        with self._own(_module_of(cls)):
            described["state"] = self._state(obj, place)
            if isinstance(obj, _BUILTIN_VALUES):
                described["data"] = self._builtin_value(obj, place, frozenset({id(obj)}))
        return described

    def _partial(self, partial: functools.partial[Any]) -> object:
        parameters = _parameters(partial.func)
        owner = f"the partial of `{_short(partial.func)}`"
        args = [
            self._located(value, self._parameter_place(partial.func, parameters, index, f"argument {index} of {owner}"))
            for index, value in enumerate(partial.args)
        ]
        kwargs = {
            name: _CREDENTIAL
            if is_secret(name, value)
            else self._located(value, self._parameter_place(partial.func, None, name, f"argument `{name}` of {owner}"))
            for name, value in partial.keywords.items()
        }
        return {"partial": self._code(partial.func), "args": args, "kwargs": kwargs}

    def _parameter_place(self, function: object, names: tuple[str, ...] | None, key: int | str, label: str) -> Place:
        """The place of a value bound to a parameter of ``function`` (by position or by name)."""
        name = key if isinstance(key, str) else (names[key] if names is not None and key < len(names) else None)
        code = getattr(function, "__code__", None)
        if name is None or not isinstance(code, types.CodeType):
            return Place(label)
        facts = code_facts(code)
        return Place(label, under(facts.reads, (LOCAL, name)), under(facts.writes, (LOCAL, name)), known=True)

    def _method(self, method: types.MethodType) -> object:
        owner = method.__self__
        if isinstance(owner, type):
            return {"method": self._code(method.__func__), "of": self._code(owner)}
        name = getattr(method.__func__, "__name__", "")
        place = Place(f"the object of `{_short(method)}`", frozenset({(name,)}), known=True)
        with self._own(_module_of(type(owner))):
            return {"method": self._code(method.__func__), "of": self._instance(owner, place)}

    def _function(self, function: types.FunctionType) -> object:
        code = function.__code__
        module = _module_of(function)
        own = _is_own_module(module)
        # agenteval's own code keeps no user settings: which globals it reads is enough to know of it.
        facts = _names_only(code) if own else code_facts(code)
        name = f"`{_short(function)}`"

        def rooted(root: Path, label: str) -> Place:
            return Place(label, under(facts.reads, root), under(facts.writes, root), known=True)

        with self._own(module):
            cells = function.__closure__ or ()
            closure = {
                variable: self._located(
                    _cell_contents(cell), rooted((LOCAL, variable), f"closed-over `{variable}` of {name}")
                )
                for variable, cell in zip(code.co_freevars, cells, strict=True)
            }
            defaults = self._defaults(
                function, lambda variable: rooted((LOCAL, variable), f"default `{variable}` of {name}")
            )
            read = sorted({path[1] for path in facts.reads if path[0] == GLOBAL} - _assigned_globals(facts.writes))
            namespace = function.__globals__
            if own:
                read = [variable for variable in read if _is_code_or_scalar(namespace.get(variable))]
            found = {
                variable: _CREDENTIAL
                if is_secret(variable, namespace[variable])
                else self._located(
                    namespace[variable], rooted((GLOBAL, variable), f"global `{variable}` read by {name}")
                )
                for variable in read
                if variable in namespace
            }
            if (GLOBAL, ANY) in facts.reads:
                self._unseen("globals()", Place(f"the globals {name} looks up by name"))
            imports = {
                imported: self._imported(
                    imported, namespace, rooted((MODULE, imported), f"`{imported}` imported by {name}")
                )
                for imported in sorted({path[1] for path in facts.reads if path[0] == MODULE})
            }
            return {
                "code": self._code_object(code),
                "defaults": defaults,
                "closure": closure,
                "globals": found,
                "imports": imports,
                "wraps": self._wrapped(function),
            }

    def _imported(self, name: str, namespace: dict[str, Any], place: Place) -> object:
        """A module imported inside a function, as a module global counts; a library's by its name only.

        A module of the user's that is not imported yet is imported, as the function will: what it
        holds decides the answers. A library's counts by name whether it is imported yet or not.
        """
        module = _imported_module(name, namespace)
        if isinstance(module, str):
            return {"module": module}
        return self._located(module, place)

    def _defaults(self, function: types.FunctionType, place: Callable[[str], Place]) -> object:
        code = function.__code__
        positional = function.__defaults__ or ()
        names = code.co_varnames[code.co_argcount - len(positional) : code.co_argcount]
        values = {**dict(zip(names, positional, strict=True)), **(function.__kwdefaults__ or {})}
        return {
            variable: _CREDENTIAL if is_secret(variable, value) else self._located(value, place(variable))
            for variable, value in values.items()
        }

    def _library_function(self, function: types.FunctionType) -> object:
        """A function of the standard library or a package: its name, what it wraps, and the code it closes over.

        A framework's decorator keeps the user's function in a closure (``function_tool``), and
        ``functools.singledispatch`` its implementations in a closed-over dict: they count.
        """
        described: dict[str, object] = {"library": _name(function)}
        wrapped = self._wrapped(function)
        if wrapped is not None:
            described["wraps"] = wrapped
        calls = self._code_in([_cell_contents(cell) for cell in function.__closure__ or ()])
        if calls:
            described["calls"] = calls
        return described

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
            return {"code": self._code(constant)}
        if isinstance(constant, frozenset):
            # A set's order follows string hashes, which differ between processes.
            return {"set": sorted(canonical_text(self._constant(item)) for item in constant)}
        if isinstance(constant, tuple):
            return {"tuple": [self._constant(item) for item in constant]}
        return self.value(constant)

    def _class_body(self, cls: type) -> object:
        if is_library_module(_module_of(cls)):
            return {"library": _name(cls)}
        namespace = vars(cls)
        changed = frozenset() if _is_own_module(_module_of(cls)) else self._changed_class_attributes(cls)
        # Dunder data (__module__, __doc__, __dict__, __slots__, __dataclass_fields__...) is made by Python.
        members = {
            name: self._class_member(cls, name, member, changed)
            for name, member in sorted(namespace.items())
            if is_code(member) or not (name.startswith("__") and name.endswith("__") or name in _PYTHON_MADE)
        }
        # A pydantic model keeps its fields' defaults there rather than as class attributes.
        fields = namespace.get("__pydantic_fields__", {})
        defaults = {
            name: _CREDENTIAL if is_secret(name, info.default) else self.value([info.default, info.default_factory])
            for name, info in fields.items()
        }
        return {"members": members, "field defaults": defaults}

    def _class_member(self, cls: type, name: str, member: object, changed: frozenset[str]) -> object:
        if is_code(member):
            return self.value(member)
        if isinstance(member, _PYTHON_MADE_DESCRIPTORS):
            return {"descriptor": type(member).__qualname__}
        if is_secret(name, member):
            return _CREDENTIAL
        if name in changed and isinstance(member, _MUTABLE_STATE):
            return {"state": type(member).__qualname__}
        return self._located(member, Place(f"class attribute `{name}` of `{cls.__qualname__}`"))

    def _changed_class_attributes(self, cls: type) -> frozenset[str]:
        """Class attributes the class's methods change in place through ``self`` (a shared list of calls)."""
        reads, writes = self._self_facts(cls, None)
        changed = {path[0] for path in writes if len(path) >= 2 and path[1] == SUBSCRIPT}
        changed |= {path[0] for path in reads if len(path) == 2 and path[1] in _MUTATORS}
        return frozenset(changed)

    def _identity(self, obj: object) -> object:
        """What an object's ``cache_identity()`` says decides its answers (``None`` without one)."""
        describe = getattr(obj, IDENTITY_METHOD, None)
        if not callable(describe) or isinstance(obj, type):
            return None
        label = f"what `{type(obj).__qualname__}.cache_identity()` returns"
        return self._located(describe(), Place(label, built_in=_is_own_module(_module_of(type(obj)))))

    def _wrapped(self, obj: object) -> str | None:
        namespace = getattr(obj, "__dict__", None)
        wrapped = namespace.get("__wrapped__") if isinstance(namespace, dict) else None
        return self._code(wrapped) if wrapped is not None else None

    def _code_held(self, obj: object) -> list[object]:
        """The code an object of a library class holds in its attributes (a tool object's function, a list of tools)."""
        namespace = getattr(obj, "__dict__", None)
        if not isinstance(namespace, dict):
            return []
        return self._code_in([value for _, value in sorted(namespace.items())])

    def _code_in(self, values: list[object]) -> list[object]:
        """The callables of the user's code among ``values`` by their code, and the containers holding one by value.

        For values a library's function or object holds: the rest is the library's business.
        """
        found: list[object] = []
        for value in values:
            if _is_callable_code(value):
                found.append(self._code(value))
            elif _holds_code(value):
                found.append(self.value(value))
        return found

    # --- objects' state ----------------------------------------------------------------------------

    def _state(self, obj: object, place: Place, containing: frozenset[int] = frozenset()) -> dict[str, object]:
        """An object's attributes by value, except what its methods (those ``place``'s code calls) change as it runs."""
        cls = type(obj)
        reads, writes = self._self_facts(cls, place.methods_called())
        reads |= place.reads
        writes |= place.writes
        owner = f"`{cls.__qualname__}`"
        inside = containing | {id(obj)}
        return {
            name: _CREDENTIAL
            if is_secret(name, value)
            else self._located(
                value,
                Place(f"attribute `{name}` of {owner}", under(reads, (name,)), under(writes, (name,)), True),
                inside,
            )
            for name, value in sorted(attributes(obj).items())
        }

    def _self_facts(self, cls: type, entry: frozenset[str] | None) -> tuple[frozenset[Path], frozenset[Path]]:
        """What the methods of ``cls`` reached from ``entry`` (``None``: all but setup) read and write of ``self``."""
        key = (id(cls), entry)
        known = self._class_facts.get(key)
        if known is not None:
            return known
        self._kept.append(cls)
        methods = _user_methods(cls)
        if entry is None:
            start = set(methods) - _SETUP_METHODS
        else:
            # A library base class's methods that the user's class overrides are called by the library.
            overridden = {name for name in methods if _library_defines(cls, name)}
            start = {name for name in entry if name in methods} | overridden
        waiting, reached = sorted(start), set()
        reads: set[Path] = set()
        writes: set[Path] = set()
        while waiting:
            name = waiting.pop()
            if name in reached or name in _SETUP_METHODS:
                continue
            reached.add(name)
            for function in methods[name]:
                code = function.__code__
                if not code.co_argcount:
                    continue
                facts = code_facts(code)
                own = (LOCAL, code.co_varnames[0])
                found = under(facts.reads, own)
                reads |= found
                writes |= under(facts.writes, own)
                waiting += [path[0] for path in found if path and path[0] in methods and path[0] not in reached]
        library_reads, library_updates = _library_self_facts(cls)
        result = (frozenset(reads) | library_reads, frozenset(writes) | library_updates)
        self._class_facts[key] = result
        return result

    # --- values --------------------------------------------------------------------------------------

    def value(self, value: object) -> object:
        """A canonical, JSON-ready form of ``value`` (see :func:`agenteval.cache.value_hash`)."""
        return self._located(value, _NOWHERE)

    def _located(self, value: object, place: Place, containing: frozenset[int] = frozenset()) -> object:
        """``value`` as it counts at ``place``; a named place with data counts by its digest, kept in :attr:`parts`.

        The digest is made once, here, from the digests of the named places inside (a Merkle walk):
        what holds the place counts the digest, so no value is read again for each place around it.
        """
        if place.label is None:
            return self._value(value, place, containing)
        self._where.append(place.label)
        try:
            form = self._value(value, place, containing)
        except Exception as error:  # a value that cannot be read counts by its type, and is named
            form = {"type": _name(type(value)), "unreadable": type(error).__name__}
            self._unseen(f"{_name(type(value))}, which could not be read: {type(error).__name__}", place)
        finally:
            self._where.pop()
        if is_code(value):
            return form
        observed = self._observe and not self._quiet
        small = isinstance(form, _SCALARS) and not (isinstance(form, str) and len(form) > _SHORT_TEXT)
        if small and not observed:
            return form
        summary = digest(form)
        if observed:
            label = place.label
            while label in self.parts:
                label += "'"
            self.parts[label] = summary
            self.parents[label] = self._where[-1] if self._where else None
            if place.built_in:
                self.built_in[label] = None
        return form if small else {"digest": summary}

    def _value(self, value: object, place: Place, containing: frozenset[int]) -> object:
        """A canonical, JSON-ready form of ``value``: exact for data, the code hash for code, else the type."""
        if () in place.writes:
            # The code assigns the place itself (self.calls += 1, nonlocal): what it holds is state.
            return {"state": self._code(type(value)) if _is_user_class(type(value)) else _name(type(value))}
        if type(value) in _SCALAR_TYPES:
            return value
        if is_code(value):
            return {"code": self._code(value)}
        if isinstance(value, _SECRET_TYPES):
            return _CREDENTIAL
        if id(value) in containing:
            return {"cycle": type(value).__qualname__}
        self._nodes += 1
        if self._nodes > _MAX_NODES or len(containing) > _MAX_DEPTH:
            reason = "too large" if self._nodes > _MAX_NODES else "nested too deeply"
            self._unseen(f"{_name(type(value))}, {reason} to count by value", place)
            return {"type": _name(type(value))}
        inside = containing | {id(value)}
        if isinstance(value, _MUTABLE_STATE) and place.changes_in_place(value):
            return {"state": type(value).__qualname__}
        if isinstance(value, _CONTAINERS) and type(value) in _CONTAINER_TYPES:  # a subclass may be the user's class
            return self._builtin_value(value, place, inside)
        return self._object_value(value, place, inside)

    def _builtin_value(self, value: _BuiltinValue, place: Place, containing: frozenset[int]) -> object:
        """What a container or a scalar holds, whatever its class (an ``OrderedDict``, a user's ``str`` subclass)."""
        if isinstance(value, _SCALARS):
            return value  # JSON writes an object of a subclass as its base's value
        # Copied first: an agent running in another thread may change a container as it is read.
        if isinstance(value, list | tuple | collections.deque | array.array):
            item = place.below(SUBSCRIPT)
            return [self._value(element, item, containing) for element in list(value)]
        if isinstance(value, dict | types.MappingProxyType):
            item = place.below(SUBSCRIPT)
            pairs = [
                [self._value(key, _NOWHERE, containing), self._dict_value(key, element, item, containing)]
                for key, element in list(value.items())
            ]
            return {"dict": _sorted_pairs(pairs)}
        members = (_member(canonical_text(self._value(element, _NOWHERE, containing))) for element in list(value))
        return {"set": sorted(members)}

    def _dict_value(self, key: object, value: object, place: Place, containing: frozenset[int]) -> object:
        if is_secret(key, value):
            return _CREDENTIAL
        return self._value(value, place, containing)

    def _object_value(self, value: object, place: Place, containing: frozenset[int]) -> object:
        cls = type(value)
        kind = _name(cls)
        simple = _simple_value(value)
        if simple is not None:
            return {kind: simple}
        if isinstance(value, types.ModuleType):
            return self._module(value, place)
        if callable(getattr(value, IDENTITY_METHOD, None)):
            return {"object": self._code(value)}
        if isinstance(value, enum.Enum):
            return self._enum_member(value, containing)
        if _is_user_class(cls):
            return {"object": self._user_object(value, place, containing)}
        if isinstance(value, _BUILTIN_VALUES):
            return self._builtin_value(value, place, containing)
        if dataclasses.is_dataclass(value) or isinstance(value, BaseModel | types.SimpleNamespace):
            return {"fields of": kind, "fields": self._fields(value, place, containing)}
        if getattr(value, "__dict__", {}).get("__wrapped__") is not None:
            return {"object": self._code(value)}
        self._unseen(kind, place)
        calls = self._code_held(value)
        return {"type": kind, "calls": calls} if calls else {"type": kind}

    def _enum_member(self, member: enum.Enum, containing: frozenset[int]) -> object:
        """An enum member: its class's name and its value, and the class's code (its methods) for the user's enum."""
        cls = type(member)
        described = {"enum": _name(cls), "value": self._value(member.value, _NOWHERE, containing)}
        if _is_user_class(cls) and not _is_own_module(_module_of(cls)):
            described["class"] = self._code(cls)
        return described

    def _user_object(self, value: object, place: Place, containing: frozenset[int]) -> object:
        """An object of the user's class: its class's code, what it wraps, its attributes, and its items or value."""
        with self._own(_module_of(type(value))):
            described: dict[str, object] = {
                "class": self._code(type(value)),
                "wraps": self._wrapped(value),
                "state": self._state(value, place, containing),
            }
            if isinstance(value, _BUILTIN_VALUES):
                described["data"] = self._builtin_value(value, place, containing)
            return described

    def _fields(self, value: object, place: Place, containing: frozenset[int]) -> object:
        if dataclasses.is_dataclass(value):
            fields = {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
        elif isinstance(value, BaseModel):
            fields = {name: getattr(value, name) for name in type(value).model_fields}
        else:
            fields = dict(vars(value))
        return {
            name: _CREDENTIAL if is_secret(name, item) else self._value(item, place.below(name), containing)
            for name, item in sorted(fields.items())
        }

    def _module(self, module: types.ModuleType, place: Place) -> object:
        """A module: its name, and the attributes the code reads of it (``config.MODEL``, ``helpers.fmt``).

        What the code looks up by a name known only at run time (``getattr(config, name)``) is named.
        """
        read = sorted({path[0] for path in place.reads if path and path[0] not in (SUBSCRIPT, ANY)})
        library = is_library_module(module.__name__)
        if not library and any(path[:1] == (ANY,) for path in place.reads):
            self._unseen("attributes looked up by a name known only at run time", place)
        found: dict[str, object] = {}
        with self._quieted(library):
            for name in read:
                try:
                    item = getattr(module, name)
                except Exception:  # a lazy module's attribute that fails to load: not there
                    continue
                if is_secret(name, item):
                    found[name] = _CREDENTIAL
                    continue
                label = f"`{module.__name__}.{name}`" + (f" ({place.label})" if place.label else "")
                attribute = Place(label, under(place.reads, (name,)), under(place.writes, (name,)), True)
                found[name] = self._located(item, attribute)
        return {"module": module.__name__, "attributes": found}

    # --- what cannot be seen -----------------------------------------------------------------------

    def _unseen(self, kind: str, place: Place) -> None:
        if not self._observe or self._quiet:
            return
        if place.label is not None:
            note = f"{place.label} ({kind})"
        elif self._where:
            note = f"a {kind} in {self._where[-1]}"
        else:
            note = f"the agent ({kind})"
        self.unseen.setdefault(note, None)

    @contextlib.contextmanager
    def _own(self, module: str | None) -> Iterator[None]:
        """Inside agenteval's own code nothing is noted: its runners and helpers are not the user's agent."""
        own = isinstance(module, str) and _is_own_module(module)
        self._quiet += own
        try:
            yield
        finally:
            self._quiet -= own

    @contextlib.contextmanager
    def _quieted(self, quiet: bool) -> Iterator[None]:
        self._quiet += quiet
        try:
            yield
        finally:
            self._quiet -= quiet


def digest(value: object) -> str:
    """The SHA-256 hex digest of ``value``'s canonical JSON form, with the key format."""
    # ASCII (json's default): a lone surrogate in a string would not encode as UTF-8.
    return hashlib.sha256(canonical_text({"format": _KEY_FORMAT, "value": value}).encode()).hexdigest()


def canonical_text(value: object) -> str:
    """A JSON-ready form as sorted, compact JSON text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _member(text: str) -> str:
    if len(text) <= _SHORT_TEXT:
        return text
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _sorted_pairs(pairs: list[list[object]]) -> list[list[object]]:
    """A dict's ``[key, value]`` forms in a fixed order: by the keys' text (by the pairs' when two keys read alike).

    Sorting by the keys alone keeps a nested dict's values from being written out at every level.
    """
    if all(type(pair[0]) is str for pair in pairs):
        return sorted(pairs, key=operator.itemgetter(0))
    keys = [canonical_text(pair[0]) for pair in pairs]
    if len(set(keys)) < len(keys):
        return sorted(pairs, key=canonical_text)
    return [pair for _, pair in sorted(zip(keys, pairs, strict=True), key=lambda keyed: keyed[0])]


def is_code(value: object) -> bool:
    """Whether ``value`` counts by its code: a function, method, partial, class or code object."""
    return isinstance(value, _CODE_TYPES)


def is_secret(name: object, value: object) -> bool:
    """Whether a value is left out of every hash, as a secret: a rotated key must not change an agent's identity.

    A value of pydantic's ``SecretStr``, ``SecretBytes`` or ``Secret``, whatever its name; and a value
    held under a credential's name (:func:`agenteval._util.redaction.is_credential_name`: ``api_key``,
    ``token``, ``password``) that looks like a secret (:func:`agenteval._util.redaction.looks_like_secret`: a
    known token shape, or a long key-like run; bytes by their hex). Anything else counts, whatever
    its name: ``PROMPT_KEY = "v1"``, ``STOP_TOKEN = "</s>"``, ``sort_key="asc"``, and code under a
    credential's name.
    """
    if isinstance(value, _SECRET_TYPES):
        return True
    if not isinstance(name, str) or not isinstance(value, str | bytes | bytearray) or not is_credential_name(name):
        return False
    return looks_like_secret(value if isinstance(value, str) else bytes(value).hex())


def attributes(obj: object) -> dict[str, object]:
    """An object's instance attributes: its ``__dict__``, its classes' slots and a pydantic model's private ones."""
    found = dict(getattr(obj, "__dict__", None) or {})
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                found[name] = getattr(obj, name)
    private = found.pop("__pydantic_private__", None)
    if isinstance(private, dict):
        found.update(private)
    cls = type(obj)
    return {
        name: value
        for name, value in found.items()
        if not (name.startswith("__") and name.endswith("__"))
        # A cached property's value is kept in the object when first read: a cache, not a setting.
        and not isinstance(inspect.getattr_static(cls, name, None), functools.cached_property)
    }


@functools.cache
def is_library_module(module_name: str | None) -> bool:
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


def _is_own_module(module: str | None) -> bool:
    """Agenteval's own modules, its examples (an agent like a user's) excepted."""
    if module is None:
        return False
    own = module == _OWN_PACKAGE or module.startswith(_OWN_PACKAGE + ".")
    return own and not (module == _OWN_EXAMPLES or module.startswith(_OWN_EXAMPLES + "."))


_HEAP_TYPE: Final = 1 << 9
"""``Py_TPFLAGS_HEAPTYPE``: a class made by a ``class`` statement or ``type()``, not one built into Python."""


def _module_of(obj: object) -> str | None:
    """The module a function or class was defined in; ``None`` for code run by ``exec`` without ``__name__``.

    Such a function's ``__module__`` is ``None`` and such a class's ``"builtins"``: both are the user's code.
    """
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str):
        return None
    if module == "builtins" and isinstance(obj, type) and obj.__flags__ & _HEAP_TYPE:
        return None
    return module


def _imported_module(name: str, namespace: dict[str, Any]) -> types.ModuleType | str:
    """The user's module an import in a function names (imported now if it is not yet), else its absolute name.

    A library's module (or one that cannot be found or imported) is its name: it counts by name,
    whether it is imported yet or not.
    """
    try:
        absolute = importlib.util.resolve_name(name, namespace.get("__package__") or None)
    except (ImportError, ValueError):  # a relative import outside a package fails when the function runs too
        return name
    module = sys.modules.get(absolute)
    if module is not None:
        return absolute if is_library_module(absolute) else module
    try:
        spec = importlib.util.find_spec(absolute)
    except Exception:  # a parent package that fails to import, or is not a package
        return absolute
    if spec is None or _is_library_spec(spec):
        return absolute
    try:
        return importlib.import_module(absolute)
    except Exception:  # the function fails the same way when it runs: its code and the name still count
        return absolute


def _is_library_spec(spec: importlib.machinery.ModuleSpec) -> bool:
    """Whether a module not imported yet is of the standard library or an installed package."""
    if spec.origin in ("built-in", "frozen"):
        return True
    places = [spec.origin] if spec.origin else list(spec.submodule_search_locations or ())
    return bool(places) and all(os.path.realpath(place).startswith(_library_directories()) for place in places)


@functools.lru_cache(maxsize=16384)
def _names_only(code: types.CodeType) -> CodeFacts:
    """The globals ``code`` (and code nested in it) may read, and those it assigns, from its names and opcodes.

    Quicker than :func:`code_facts`: every name the code uses may be a global's (an attribute's name
    too, which only adds what is not read), and no path is followed.
    """
    assigned = {
        code.co_names[code.co_code[index + 1]]
        for index in range(0, len(code.co_code), 2)
        if code.co_code[index] in _GLOBAL_STORES and code.co_code[index + 1] < len(code.co_names)
    }
    reads: set[Path] = {(GLOBAL, name) for name in code.co_names}
    writes: set[Path] = {(GLOBAL, name) for name in assigned}
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            nested = _names_only(constant)
            reads |= nested.reads
            writes |= nested.writes
    return CodeFacts(frozenset(reads), frozenset(writes))


def _is_code_or_scalar(value: object) -> bool:
    return is_code(value) or isinstance(value, _SCALARS)


def _is_user_class(cls: type) -> bool:
    return not is_library_module(_module_of(cls))


def _is_callable_code(value: object) -> bool:
    """A callable that counts by its code: a function, partial or method, a user's class or object, or a wrapper."""
    if isinstance(value, type):
        return _is_user_class(value)
    if not callable(value):
        return False
    if is_code(value):
        return not isinstance(value, _BUILTIN_CALLABLES)
    return _is_user_class(type(value)) or getattr(value, "__dict__", {}).get("__wrapped__") is not None


def _holds_code(value: object) -> bool:
    """Whether ``value`` is a container with a callable of the user's code among its items (a dict's values)."""
    if not isinstance(value, _CONTAINERS) or isinstance(value, array.array):
        return False
    items = value.values() if isinstance(value, dict | types.MappingProxyType) else value
    return any(_is_callable_code(item) for item in list(items))


def _user_methods(cls: type) -> dict[str, list[types.FunctionType]]:
    """The functions of each method of ``cls`` defined outside libraries (a property's accessors, what they wrap)."""
    methods: dict[str, list[types.FunctionType]] = {}
    for owner in reversed(cls.__mro__):
        if is_library_module(_module_of(owner)):
            continue
        for name, member in vars(owner).items():
            functions = list(_functions_of(member))
            if functions:
                methods[name] = functions
    return methods


def _library_self_facts(cls: type) -> tuple[frozenset[Path], frozenset[Path]]:
    """What the methods of the library classes ``cls`` derives from read of ``self``, and update in it.

    Which of them run is the library's business, so all of them count, but only for what they
    update: an attribute they read and assign (``self.i += 1``, a lazily made client) or change in
    place (``self.cache[key] = v``); a plain assignment is a setter, whose value is the object's
    configuration.
    """
    return _library_facts_of(tuple(base for base in cls.__mro__[1:] if is_library_module(_module_of(base))))


@functools.lru_cache(maxsize=1024)
def _library_facts_of(bases: tuple[type, ...]) -> tuple[frozenset[Path], frozenset[Path]]:
    reads: set[Path] = set()
    updates: set[Path] = set()
    for base in bases:
        if (_module_of(base) or "").partition(".")[0] in _GENERIC_BASES:
            continue
        for name, member in vars(base).items():
            if name in _SETUP_METHODS:
                continue
            for function in _functions_of(member):
                code = function.__code__
                if not code.co_argcount or not _may_update(code):
                    continue
                facts = code_facts(code)
                own = (LOCAL, code.co_varnames[0])
                found = under(facts.reads, own)
                reads |= found
                updates |= {path for path in under(facts.writes, own) if path in found or path[-1:] == (SUBSCRIPT,)}
    return frozenset(reads), frozenset(updates)


@functools.lru_cache(maxsize=16384)
def _may_update(code: types.CodeType) -> bool:
    """Whether code (or code nested in it) stores into something or calls a container's changing method.

    A quick look at its opcodes and names, so that only such methods of a library's classes are read.
    """
    if not _MUTATORS.isdisjoint(code.co_names) or not _STORES.isdisjoint(code.co_code[::2]):
        return True
    return any(_may_update(constant) for constant in code.co_consts if isinstance(constant, types.CodeType))


def _library_defines(cls: type, name: str) -> bool:
    return any(name in vars(base) for base in cls.__mro__[1:] if is_library_module(_module_of(base)))


def _functions_of(member: object) -> Iterator[types.FunctionType]:
    if isinstance(member, property):
        candidates: tuple[object, ...] = _accessors(member)
    elif isinstance(member, functools.cached_property):
        candidates = (member.func,)
    elif isinstance(member, staticmethod | classmethod):
        return
    else:
        candidates = (member,)
    for candidate in candidates:
        while isinstance(candidate, types.FunctionType):
            yield candidate
            candidate = candidate.__dict__.get("__wrapped__")


def _assigned_globals(writes: frozenset[Path]) -> set[str]:
    """Globals the code assigns (``global CALLS; CALLS += 1``): a counter would change the hash on every call."""
    return {path[1] for path in writes if len(path) == 2 and path[0] == GLOBAL}


def _simple_value(value: object) -> object:
    """The value of an object of a known, immutable library kind (a regex, a date, a path), else ``None``."""
    if value is PydanticUndefined:
        return "undefined"  # a pydantic field without a default
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if isinstance(value, complex):
        return [value.real, value.imag]
    if isinstance(value, re.Pattern):
        return [value.pattern if isinstance(value.pattern, str) else value.pattern.hex(), value.flags]
    if isinstance(value, _TEXT_VALUES):
        return str(value)
    if isinstance(value, range | slice | datetime.date | datetime.time | datetime.timedelta | datetime.tzinfo):
        return repr(value)
    if isinstance(value, logging.Logger | logging.LoggerAdapter):
        return str(getattr(value, "name", None) or getattr(getattr(value, "logger", None), "name", ""))
    if isinstance(value, _TYPE_FORMS) or _module_of(type(value)) == "typing":
        return _ADDRESS.sub("", repr(value))  # Annotated[..., <function f at 0x...>]
    return None


_TEXT_VALUES: Final = (
    decimal.Decimal,
    fractions.Fraction,
    uuid.UUID,
    pathlib.PurePath,
    ipaddress.IPv4Address,
    ipaddress.IPv6Address,
    ipaddress.IPv4Network,
    ipaddress.IPv6Network,
)
_TYPE_FORMS: Final = (types.GenericAlias, types.UnionType, typing.TypeVar)
_ADDRESS: Final = re.compile(r" at 0x[0-9a-fA-F]+")


def _parameters(function: object) -> tuple[str, ...] | None:
    """The positional parameter names of a plain function (``None`` for anything else)."""
    code = getattr(function, "__code__", None)
    return code.co_varnames[: code.co_argcount] if isinstance(code, types.CodeType) else None


def _accessors(prop: property) -> tuple[Any, Any, Any]:
    return prop.fget, prop.fset, prop.fdel


def _cell_contents(cell: types.CellType) -> object:
    try:
        return cell.cell_contents
    except ValueError:
        # A cell is empty until the enclosing function assigns it.
        return None


def _short(obj: object) -> str:
    """A function's or class's qualified name without its module (an object's class's otherwise)."""
    name = getattr(obj, "__qualname__", None)
    return name if isinstance(name, str) else type(obj).__qualname__


def _name(obj: object) -> str:
    """``module.qualname`` of a function or class (of an object's class otherwise)."""
    named = obj if hasattr(obj, "__qualname__") else type(obj)
    module = _module_of(named) or _module_of(getattr(named, "__objclass__", None))
    qualname = getattr(named, "__qualname__", type(named).__qualname__)
    return f"{module}.{qualname}" if module else str(qualname)
