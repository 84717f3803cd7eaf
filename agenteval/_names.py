"""Readable names for the functions and objects a user plugs in (agents, judges), never a repr of their state."""

from __future__ import annotations

import functools

__all__ = ["qualified_name", "short_name"]


def short_name(obj: object) -> str:
    """``my_agent``, ``MyAgent.reply`` or, for an object, its class's name.

    The qualified name of the function (through ``functools.partial``), the class, or an object's class,
    without the scopes of enclosing functions (``make_agent.<locals>.``).
    """
    while isinstance(obj, functools.partial):
        obj = obj.func
    name = getattr(obj, "__qualname__", None)
    if not isinstance(name, str):
        name = type(obj).__qualname__
    return name.rpartition("<locals>.")[2]


def qualified_name(obj: object) -> str:
    """:func:`short_name` with its module in front, unless that is a notebook's or script's ``__main__``.

    ``weather_agent`` (defined in a notebook), ``mypkg.agents.WeatherAgent`` (an object of that class).
    """
    while isinstance(obj, functools.partial):
        obj = obj.func
    named = obj if isinstance(getattr(obj, "__qualname__", None), str) else type(obj)
    module = getattr(named, "__module__", None)
    name = short_name(obj)
    return name if module in (None, "__main__", "builtins") else f"{module}.{name}"
