"""What every result store does to a result it saves: fill in what is missing, then write it as JSON once.

A store checks its arguments first (:mod:`agenteval._util.name_checks`), then calls :func:`filled_result`
and :func:`result_json` (or :func:`result_pieces`, the same text in pieces), and keeps or writes that text:
the text that proved the result can be stored is the text stored.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Protocol

from pydantic_core import from_json, to_json

from agenteval.errors import ConfigError
from agenteval.evalresult.models import EvalCaseResult, EvalSetResult

__all__ = [
    "check_new_result_id",
    "filled_result",
    "new_result_id",
    "recorded_pieces",
    "result_json",
    "result_pieces",
    "streamed_pieces",
    "value_depth_limit",
]


def new_result_id(app_name: str, eval_set_id: str) -> str:
    """Return a fresh result id, ``<app>_<evalSetId>_<uuid4>``."""
    return f"{app_name}_{eval_set_id}_{uuid.uuid4()}"


def check_new_result_id(result_manager: object, app_name: str, eval_set_id: str) -> None:
    """Have the store refuse, before anything runs, a new result of this eval set it could not save.

    Asks a store that has the optional ``check_new_result_id(app_name, result_id)`` method (the
    bundled ones do) about an id as :func:`new_result_id` makes them: every such id has the same
    length and characters but for the UUID, so what holds for this one holds for the id used.

    Raises:
        ConfigError: The store could not save a result under such an id (the message says why and
            how to fix it).
    """
    check = getattr(result_manager, "check_new_result_id", None)
    if callable(check):
        check(app_name, new_result_id(app_name, eval_set_id))


async def value_depth_limit(result_manager: object) -> int | None:
    """How deeply a free-form value may nest in a result the store can save, if it says (``None`` otherwise).

    Asks a store that has the optional ``async value_depth_limit()`` method (the MySQL one: MariaDB's
    JSON columns hold less than agenteval's own limit), so that an evaluation fails a case whose
    values nest too deeply instead of failing the save of every case.
    """
    limit = getattr(result_manager, "value_depth_limit", None)
    return await limit() if callable(limit) else None


def filled_result(app_name: str, result: EvalSetResult, *, set_timestamp: bool = True) -> EvalSetResult:
    """A shallow copy of a checked result with its missing id, name and (optionally) creation time filled.

    The copy gets a generated id when it has none, the id as its name when it has none and, when
    ``set_timestamp`` is true, the current time when it has no creation time (a provided value,
    even ``0``, is kept). The caller's object is never changed.

    Args:
        app_name: The app the result belongs to.
        result: The result to save, already checked (:func:`agenteval._util.name_checks.check_result`).
        set_timestamp: Whether to fill a missing ``creation_timestamp`` (a database may do it).

    Returns:
        The copy; its ``eval_set_result_id`` is the id ``save`` returns.
    """
    result_id = result.eval_set_result_id or new_result_id(app_name, result.eval_set_id)
    filled: dict[str, object] = {
        "eval_set_result_id": result_id,
        "eval_set_result_name": result.eval_set_result_name or result_id,
    }
    if set_timestamp and result.creation_timestamp is None:
        filled["creation_timestamp"] = time.time()
    return result.model_copy(update=filled)


def result_json(result: EvalSetResult, *, indent: int | None = None) -> str:
    """Write a result as JSON, once, refusing what would not read back.

    Writing is the proof: it refuses a value JSON cannot represent and a value that does not fit
    its field (one assigned after validation), so the text written is a result that reads back,
    without the cost of parsing it again.

    Args:
        result: The result, as :func:`filled_result` gives it.
        indent: Spaces per indentation level; ``None`` for compact JSON.

    Returns:
        The text to store.

    Raises:
        ConfigError: ``clone result: ...`` when the result holds a value JSON cannot represent,
            such as a NaN anywhere (``field <path> is not a finite number ...``) or a function, or a
            value that does not fit its field (``field <path> (...) cannot be written as JSON``).
    """
    try:
        return result.to_json(indent=indent)
    except ConfigError as exc:
        raise ConfigError(f"clone result: {exc}") from None


_MARKER = "\u0000agenteval: the case results go here\u0000"
"""The id of the one case result a result's shell holds in place of its case results (JSON cannot hold it unescaped)."""


def result_pieces(result: EvalSetResult, *, indent: int | None = None) -> list[str]:
    """:func:`result_json`'s text in pieces, one per case result, so that no text of the whole result is ever made.

    Their concatenation is exactly what :func:`result_json` writes. A store keeps or writes the pieces as they
    are: a result of 20,000 cases is about 50 MB of compact JSON (110 MB indented), which one text would hold
    twice over while it is made.

    Args:
        result: The result, as :func:`filled_result` gives it.
        indent: Spaces per indentation level; ``None`` for compact JSON.

    Raises:
        ConfigError: As :func:`result_json`, naming the field in the whole result.
    """
    cases = result.eval_case_results
    # Anything but a list (assigned after validation) is for the whole text to refuse; a subclass would write
    # fields of its own alone that it does not write inside the result.
    if not isinstance(cases, list) or not cases or any(type(case) is not EvalCaseResult for case in cases):
        return [result_json(result, indent=indent)]
    return recorded_pieces(result.replaced(eval_case_results=[]), [_Written(case) for case in cases], indent=indent)


class WrittenCase(Protocol):
    """A case result that says how it is written: a model, or a :class:`~agenteval.evalresult.records.CaseRecord`."""

    @property
    def model(self) -> EvalCaseResult:
        """The case result."""
        ...

    def text(self, indent: int | None) -> str:
        """``model.to_json(indent=indent)``."""
        ...

    def stored_text(self) -> str | None:
        """The compact text it is written from as it stands (a record whose model was not read), else ``None``."""
        ...


def recorded_pieces(shell: EvalSetResult, cases: Sequence[WrittenCase], *, indent: int | None = None) -> list[str]:
    """The pieces of the result that is ``shell`` (which holds no case result) with ``cases`` as its case results.

    As :func:`result_pieces`, for case results that are written already (records keep the text their store
    writes, which is used as it is).

    Raises:
        ConfigError: As :func:`result_json`, naming the field in the whole result.
    """
    return list(streamed_pieces(shell, cases, indent=indent))


def streamed_pieces(shell: EvalSetResult, cases: Sequence[WrittenCase], *, indent: int | None = None) -> Iterator[str]:
    """:func:`recorded_pieces` as they are iterated: a file is written without holding its whole text.

    What can still change is written at the call (the shell, case results read as models); a record's stored
    text is taken at the call too, and only laid out with ``indent`` as the pieces are iterated, so iterating
    them later (in the thread that writes the file) writes the result as it was at the call. A 20,000-case
    result is ~110 MB indented, which the pieces would otherwise hold until the file is written.

    Raises:
        ConfigError: As :func:`result_json`, naming the field in the whole result (at the call).
    """
    if not cases:
        return iter([result_json(shell, indent=indent)])
    marker = EvalCaseResult.trusted(eval_id=_MARKER)
    # An element of evalCaseResults is two levels down: each of its lines after the first is indented twice more.
    nesting = "\n" + " " * (2 * indent) if indent is not None else ""
    texts: list[tuple[str, bool]] = []
    try:
        written = shell.replaced(eval_case_results=[marker]).to_json(indent=indent)
        before, found, after = written.partition(_nested(marker.to_json(indent=indent), nesting))
        if found:
            for case in cases:
                stored = case.stored_text() if indent is not None else None
                texts.append((stored, True) if stored is not None else (case.text(indent), False))
    except ConfigError:
        found = ""
    if not found:
        # The whole result, written at once, names the field that cannot be written by its path in the result.
        return iter([result_json(shell.replaced(eval_case_results=[case.model for case in cases]), indent=indent)])
    return _pieces(before, texts, after, indent, nesting)


def _pieces(before: str, texts: list[tuple[str, bool]], after: str, indent: int | None, nesting: str) -> Iterator[str]:
    """The result's pieces, laying out each stored compact text (``True`` beside it) as it is reached."""
    yield before
    separator = "," + nesting
    for number, (text, compact) in enumerate(texts):
        if number:
            yield separator
        # pydantic-core lays out its own JSON as it writes the model (see CaseRecord.text).
        yield _nested(to_json(from_json(text), indent=indent).decode() if compact else text, nesting)
    yield after


class _Written:
    """A case result model as a :class:`WrittenCase`."""

    __slots__ = ("model",)

    def __init__(self, model: EvalCaseResult) -> None:
        self.model = model

    def text(self, indent: int | None) -> str:
        return self.model.to_json(indent=indent)

    def stored_text(self) -> str | None:
        return None


def _nested(text: str, nesting: str) -> str:
    return text.replace("\n", nesting) if nesting else text
