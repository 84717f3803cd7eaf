"""The checks of the names and ids the stores are given, with the reference framework's messages.

Each public store method checks its arguments once, on entry, with one call here; nothing below
checks them again. A name is given as a keyword whose words make the message:
``check_names(app_name="", eval_set_id="s")`` raises ``app name is empty``.
"""

from __future__ import annotations

import os
from typing import Protocol, TypeVar

from agenteval.errors import ConfigError

__all__ = ["check_file_names", "check_names", "check_result"]


class _ForEvalSet(Protocol):
    @property
    def eval_set_id(self) -> str: ...


R = TypeVar("R", bound=_ForEvalSet)


def check_names(**names: str) -> None:
    """Reject an empty name or id, looking at the keywords in the order given.

    Raises:
        ConfigError: ``<keyword in words> is empty`` (``eval set id is empty`` for ``eval_set_id``).
    """
    for keyword, value in names.items():
        if not value:
            raise ConfigError(f"{keyword.replace('_', ' ')} is empty")


def check_file_names(**names: str) -> None:
    """As :func:`check_names`, and also reject a name that could leave the directory it is joined onto.

    Raises:
        ConfigError: A name is empty, ``.`` or ``..``, or holds a path separator or NUL (checked one
            name at a time, in the order given).
    """
    for keyword, value in names.items():
        check_names(**{keyword: value})
        if value in {".", ".."} or "/" in value or "\\" in value or "\0" in value or (os.altsep and os.altsep in value):
            raise ConfigError(
                f"{keyword.replace('_', ' ')} {value!r} is not allowed in a file name: it must not be '.' or '..'"
                " or contain '/', '\\' or NUL"
            )


def check_result(result: R | None) -> R:
    """Reject a result a store cannot save (after its app name was checked, as the reference orders it).

    Returns:
        The result, narrowed to not ``None``.

    Raises:
        ConfigError: ``eval set result is None`` or ``the eval set id of eval set result is empty``.
    """
    if result is None:
        raise ConfigError("eval set result is None")
    if not result.eval_set_id:
        raise ConfigError("the eval set id of eval set result is empty")
    return result
