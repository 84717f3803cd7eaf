"""The checks of the names and ids the stores are given, with the reference framework's messages.

A name is given as a keyword whose words make the message: ``check_names(app_name="",
eval_set_id="s")`` raises ``app name is empty``. Each family of stores has one :class:`NameRule`
(:data:`nonempty_names` in memory, :data:`file_names` on files, :meth:`NameRule.then` adding
the MySQL column check), which decorates every store method taking names: the method's
arguments named :data:`STORE_NAMES` are checked on entry, in parameter order, and nothing below
checks them again. A name the method derives (a result's id, a metric's name) it checks itself.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, ParamSpec, Protocol, TypeVar

from agenteval.errors import ConfigError

__all__ = [
    "FILE_NAME_LIMIT",
    "STORE_NAMES",
    "NameRule",
    "check_file_names",
    "check_file_path",
    "check_names",
    "check_result",
    "check_text_names",
    "file_names",
    "nonempty_names",
]

FILE_NAME_LIMIT = 255
"""Most bytes of one file or directory name, in UTF-8: the limit of ext4, XFS, Btrfs, APFS and NTFS alike."""

_SHORTER = {
    "eval_set_result_id": (
        "use a shorter app name or eval set id (a result's default id is '<app>_<evalSetId>_<uuid4>'),"
        " or save the result under a shorter evalSetResultId"
    ),
}
"""How to shorten a name, for the names whose fix is not simply a shorter value of their own."""


class _ForEvalSet(Protocol):
    @property
    def eval_set_id(self) -> str: ...


R = TypeVar("R", bound=_ForEvalSet)
P = ParamSpec("P")
T = TypeVar("T")

STORE_NAMES = frozenset({"app_name", "eval_set_id", "eval_case_id", "eval_set_result_id", "metric_name"})
"""The parameters of a store method that a :class:`NameRule` checks."""

_FILE_PARTS = frozenset({"app_name", "eval_set_id", "eval_set_result_id"})
"""The names the file stores make file and directory names of; the others are looked up inside a file."""


def check_names(**names: str) -> None:
    """Reject an empty name or id, looking at the keywords in the order given.

    Raises:
        ConfigError: ``<keyword in words> is empty`` (``eval set id is empty`` for ``eval_set_id``).
    """
    for keyword, value in names.items():
        if not value:
            raise ConfigError(f"{keyword.replace('_', ' ')} is empty")


def check_text_names(**names: str) -> None:
    """As :func:`check_names`, and also reject a name that is not text UTF-8 can encode (a lone surrogate).

    Such a string (often made by decoding bytes with ``errors="surrogateescape"``) can be neither a
    file name nor written in a JSON file.

    Raises:
        ConfigError: A name is empty, or holds a lone surrogate (the message shows its escape).
    """
    for keyword, value in names.items():
        check_names(**{keyword: value})
        _utf8(keyword, value)


def check_file_names(**names: str) -> None:
    """As :func:`check_text_names`, and also reject a name that cannot be one file or directory name.

    Raises:
        ConfigError: A name is empty, ``.`` or ``..``, holds a path separator, NUL or a lone
            surrogate, or is longer than :data:`FILE_NAME_LIMIT` bytes in UTF-8 (checked one name
            at a time, in the order given).
    """
    for keyword, value in names.items():
        check_names(**{keyword: value})
        if value in {".", ".."} or "/" in value or "\\" in value or "\0" in value or (os.altsep and os.altsep in value):
            raise ConfigError(
                f"{_words(keyword)} {_shown(value)} is not allowed in a file name: it must not be '.' or '..'"
                " or contain '/', '\\' or NUL"
            )
        size = len(_utf8(keyword, value))
        if size > FILE_NAME_LIMIT:
            raise ConfigError(
                f"{_words(keyword)} {_shown(value)} ({size} bytes) is too long for a file name, over the"
                f" {FILE_NAME_LIMIT}-byte limit of file names (UTF-8); {_how_to_shorten(keyword, None)}"
            )


def check_file_path(base_dir: Path, path: Path, **names: str) -> None:
    """Reject a path a locator built from ``names`` when a part of it is too long for a file system.

    Each file or directory name of ``path`` below ``base_dir`` may have at most
    :data:`FILE_NAME_LIMIT` bytes. Only the path's text is looked at, nothing on disk, and the
    names must have passed :func:`check_file_names`. The message names the name that made the long
    part (the longest one it holds) and how long that name may be.

    Raises:
        ConfigError: ``<name in words> '<value>' (<n> bytes) makes the file name '<part>' <m> bytes
            long ...``.
    """
    try:
        parts = path.relative_to(base_dir).parts
    except ValueError:
        return  # outside the base directory: ensure_inside refuses it
    for part in parts:
        size = len(part.encode("utf-8", "surrogatepass"))
        if size <= FILE_NAME_LIMIT:
            continue
        held = [(len(value), keyword, value) for keyword, value in names.items() if value in part]
        if not held:
            raise ConfigError(
                f"the file name {_shown(part)} is {size} bytes long, over the {FILE_NAME_LIMIT}-byte limit of file"
                " names: use shorter names"
            )
        _, keyword, value = max(held)
        own = len(value.encode("utf-8"))
        room = FILE_NAME_LIMIT - (size - own * part.count(value))
        fits = room // part.count(value)
        raise ConfigError(
            f"{_words(keyword)} {_shown(value)} ({own} bytes) makes the file name {_shown(part)} {size} bytes long,"
            f" over the {FILE_NAME_LIMIT}-byte limit of file names (UTF-8); {_how_to_shorten(keyword, fits)}"
        )


def _utf8(keyword: str, value: str) -> bytes:
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ConfigError(
            f"{_words(keyword)} {_shown(value)} holds a lone surrogate ({value[exc.start]!r} at index {exc.start}),"
            " which is not text: no file name or JSON file can hold it; remove it (such strings come from decoding"
            " bytes with errors='surrogateescape')"
        ) from None


def _how_to_shorten(keyword: str, fits: int | None) -> str:
    """What to do about a name too long for a file name; ``fits`` is how long it may be, when known."""
    room = f"it can be at most {fits} bytes here: " if fits is not None and fits > 0 else ""
    if keyword in _SHORTER:
        return f"{room}{_SHORTER[keyword]}"
    if room:
        return f"keep the {_words(keyword)} to at most {fits} bytes"
    return f"use a shorter {_words(keyword)}"


def _words(keyword: str) -> str:
    return keyword.replace("_", " ")


def _shown(value: str) -> str:
    """``repr(value)`` (so that escapes show), its middle left out when it is long."""
    if len(value) <= 80:
        return repr(value)
    return f"{value[:40]!r}…{value[-20:]!r}"


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


class NameRule:
    """How one family of stores checks the names and ids it is given.

    Used as a decorator on a store's coroutine method, it checks the method's arguments whose
    parameters are named in :data:`STORE_NAMES`, given by position or keyword, in parameter order,
    when the call is awaited (as a check in the method's body would). :meth:`check` applies the
    same rule to names a method derives.

    Args:
        check: Checks names given by keyword, in order (as :func:`check_names` takes them).
    """

    __slots__ = ("_check",)

    def __init__(self, check: Callable[[Mapping[str, Any]], None]) -> None:
        self._check = check

    def check(self, **names: str) -> None:
        """Check names given by keyword, in the order given.

        Raises:
            ConfigError: A name breaks the rule; the message names it.
        """
        self._check(names)

    def then(self, check: Callable[..., None], **keywords: str) -> NameRule:
        """This rule, followed by ``check`` given all the names as keywords.

        Args:
            check: A further check taking the names as keywords (e.g. the MySQL stores' check
                that each fits its column).
            **keywords: The keyword ``check`` takes for a name, where it differs from the name
                (``eval_case_id="eval_id"``).
        """
        first = self._check

        def both(names: Mapping[str, Any]) -> None:
            first(names)
            check(**{keywords.get(name, name): value for name, value in names.items()})

        return NameRule(both)

    def __call__(self, method: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Coroutine[Any, Any, T]]:
        """Check the names ``method`` is given before it runs.

        Raises:
            TypeError: ``method`` has no parameter named in :data:`STORE_NAMES`.
        """
        positions = [
            (index, name) for index, name in enumerate(inspect.signature(method).parameters) if name in STORE_NAMES
        ]
        if not positions:
            raise TypeError(f"{method.__qualname__} takes none of the names a NameRule checks: {sorted(STORE_NAMES)}")
        check = self._check

        @functools.wraps(method)
        async def checked(*args: P.args, **kwargs: P.kwargs) -> T:
            given: tuple[object, ...] = args
            # A missing argument is left to the method's own call to report.
            check(
                {
                    name: given[index] if index < len(given) else kwargs[name]
                    for index, name in positions
                    if index < len(given) or name in kwargs
                }
            )
            return await method(*args, **kwargs)

        return checked


def _nonempty(names: Mapping[str, Any]) -> None:
    check_names(**names)


def _file_parts(names: Mapping[str, Any]) -> None:
    for name, value in names.items():
        if name in _FILE_PARTS:
            check_file_names(**{name: value})
        else:
            check_names(**{name: value})


nonempty_names = NameRule(_nonempty)
"""The in-memory stores' rule: each name non-empty (:func:`check_names`)."""

file_names = NameRule(_file_parts)
"""The file stores' rule: the app name and the ids that name files fit a file name
(:func:`check_file_names`); a case id or metric name, looked up inside a file, is non-empty."""
