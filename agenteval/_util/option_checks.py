"""Checks shared by the option classes: on/off switches and whole numbers, refused with a message naming the option."""

from __future__ import annotations

import numbers

from agenteval.errors import ConfigError

__all__ = ["check_switches", "counted", "whole_number"]


def check_switches(options: object, *names: str) -> None:
    """Refuse an on/off option that is not a bool (``"no"``, ``1``), naming it and the value."""
    for name in names:
        value = getattr(options, name)
        if not isinstance(value, bool):
            raise ConfigError(f"{name} must be True or False, got {type(value).__name__} {value!r}")


def whole_number(name: str, value: object) -> int:
    """``value`` as an int if it is a whole number (numpy integers included), else a ConfigError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{name} must be a whole number, got {type(value).__name__} {value!r}")
    return int(value)


def counted(name: str, value: object, words: str = "") -> int:
    """``value`` as an int if it is a whole number greater than 0, else a ConfigError (``words`` names it there)."""
    number = whole_number(name, value)
    if number <= 0:
        raise ConfigError(f"{words or name} must be greater than 0, got {number}")
    return number
