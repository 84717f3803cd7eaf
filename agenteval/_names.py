"""Readable names for the functions and objects a user plugs in (agents, judges, aggregators).

Never a repr of their state: a ``repr`` may hold an api key (a dataclass field, a ``functools.partial``
argument).
"""

from __future__ import annotations

import functools

__all__ = ["qualified_name", "short_name"]


def short_name(obj: object) -> str:
    """``my_agent``, ``MyAgent.reply`` or, for an object, its class's name.

    The qualified name of the function (through ``functools.partial`` and wrappers that set
    ``__wrapped__``), the class, or an object's class, without the scopes of enclosing functions
    (``make_agent.<locals>.``).
    """
    obj = _unwrapped(obj)
    name = getattr(obj, "__qualname__", None)
    if not isinstance(name, str):
        name = type(obj).__qualname__
    return name.rpartition("<locals>.")[2]


def qualified_name(obj: object) -> str:
    """:func:`short_name` with its module in front, unless that is a notebook's or script's ``__main__``.

    ``weather_agent`` (defined in a notebook), ``mypkg.agents.WeatherAgent`` (an object of that class).
    """
    obj = _unwrapped(obj)
    named = obj if isinstance(getattr(obj, "__qualname__", None), str) else type(obj)
    module = getattr(named, "__module__", None)
    name = short_name(obj)
    return name if module in (None, "__main__", "builtins") else f"{module}.{name}"


def _unwrapped(obj: object) -> object:
    """What ``obj`` wraps, through ``functools.partial`` and ``__wrapped__`` (``functools.wraps``) chains."""
    seen: set[int] = set()
    while id(obj) not in seen:
        seen.add(id(obj))
        if isinstance(obj, functools.partial):
            obj = obj.func
        elif (wrapped := getattr(obj, "__wrapped__", None)) is not None:
            obj = wrapped
    return obj
