"""Readable names for the functions and objects a user plugs in (agents, judges, aggregators).

Never a repr of their state: a ``repr`` may hold an api key (a dataclass field, a ``functools.partial``
argument).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Iterable
from difflib import get_close_matches

from agenteval._util.redaction import is_credential_name, looks_like_secret

__all__ = ["agent_label", "did_you_mean", "qualified_name", "short_name"]

_SHOWN_VALUE = 40
"""The most characters of one argument's ``repr`` a label shows."""

_LONGEST_PLAIN = 200
"""Text longer than this is not a setting a label shows (a prompt, a document)."""


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


def agent_label(agent: object, agent_version: str = "") -> str:
    """A label that tells agents of one name apart: what made the agent, and its version.

    ``make_agent(model='gpt-4o', style='terse')`` for a function a factory returned (the plain values
    it closes over), ``agent(temperature=0.2)`` for a ``functools.partial``, else :func:`short_name`;
    followed by ``[<agent_version>]`` when one is given. Values under a credential's name, values that
    are not plain (numbers, text, booleans, ``None``) and text that looks like a key or token
    (:func:`agenteval._util.redaction.looks_like_secret`) are left out; long ones are cut.
    """
    label = _made_by(agent)
    return f"{label} [{agent_version}]" if agent_version else label


def _made_by(agent: object) -> str:
    if isinstance(agent, functools.partial):
        arguments = [_shown(value) for value in agent.args if _plain(value)]
        arguments += [f"{name}={_shown(value)}" for name, value in agent.keywords.items() if _shown_named(name, value)]
        return f"{short_name(agent.func)}({', '.join(arguments)})"
    function = _unwrapped(agent)
    if isinstance(function, types.FunctionType) and function.__closure__ and "<locals>." in function.__qualname__:
        factory = function.__qualname__.rpartition(".<locals>.")[0].rpartition("<locals>.")[2]
        cells = zip(function.__code__.co_freevars, function.__closure__, strict=True)
        arguments = [f"{name}={_shown(value)}" for name, value in _cell_values(cells) if _shown_named(name, value)]
        if arguments:
            return f"{factory}({', '.join(arguments)})"
    return short_name(agent)


def _cell_values(cells: Iterable[tuple[str, types.CellType]]) -> list[tuple[str, object]]:
    values = []
    for name, cell in cells:
        try:
            values.append((name, cell.cell_contents))
        except ValueError:  # an empty cell: the enclosing function had not assigned it
            continue
    return values


def _plain(value: object) -> bool:
    if isinstance(value, str):
        return len(value) <= _LONGEST_PLAIN and not looks_like_secret(value)
    return isinstance(value, int | float | bool | type(None))


def _shown_named(name: str, value: object) -> bool:
    return _plain(value) and not is_credential_name(name)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_VALUE else text[: _SHOWN_VALUE - 3] + "..."


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


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the known name closest to ``name``, or ``""`` when none is close."""
    close = get_close_matches(name, sorted(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
