"""Checking, copying and indexing the cases the eval-set stores keep.

Every store checks a case it is given and writes it as JSON once (:func:`new_case`). The local
store keeps whole eval sets and edits one case at a time: each edit checks and copies the case up
front and returns the change to apply to the stored set while the store's lock is held. A stored
set indexes its case ids, so that adding the n-th case does not scan the n - 1 before it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from agenteval._util.name_checks import check_names
from agenteval._util.trpc_json import json_copy, written_json
from agenteval.errors import ConfigError, NotFoundError
from agenteval.evalset.models import EvalCase, EvalSet, Invocation

__all__ = [
    "CaseEdit",
    "StoredSet",
    "appender",
    "checked",
    "new_case",
    "new_set",
    "remover",
    "replacer",
    "whole_set",
]


def checked(eval_case: EvalCase | None) -> EvalCase:
    """The case, once it is known to be one and to have an id."""
    if eval_case is None:
        raise ConfigError("eval case is None")
    check_names(eval_case_id=eval_case.eval_id)
    return eval_case


def _stamped(eval_case: EvalCase) -> EvalCase:
    """A shallow copy of a case whose missing creation times, its own and its turns', are now."""
    now = time.time()

    def turns(invocations: list[Invocation]) -> list[Invocation]:
        return [
            turn if turn.creation_timestamp is not None else turn.model_copy(update={"creation_timestamp": now})
            for turn in invocations
        ]

    return eval_case.model_copy(
        update={
            "creation_timestamp": now if eval_case.creation_timestamp is None else eval_case.creation_timestamp,
            "conversation": turns(eval_case.conversation),
            "actual_conversation": turns(eval_case.actual_conversation),
        }
    )


def new_case(app_name: str, eval_set_id: str, eval_case: EvalCase | None) -> tuple[EvalCase, str]:
    """Check a case to add and fill its missing creation times; return the copy to keep and its JSON.

    The JSON is written once: a database stores it, and reading it back makes the copy the other
    stores keep (and proves it can be read back).
    """
    case = checked(eval_case)
    text = written_json(_stamped(case), f"eval case {app_name}.{eval_set_id}.{case.eval_id}")
    return type(case).model_validate_json(text), text


def new_set(eval_set_id: str) -> EvalSet:
    """An empty eval set created now."""
    return EvalSet(eval_set_id=eval_set_id, name=eval_set_id, eval_cases=[], creation_timestamp=time.time())


def whole_set(app_name: str, eval_set: EvalSet | None) -> tuple[EvalSet, list[str]]:
    """Check an eval set to save whole; return the copy to keep (without its cases) and each case's JSON.

    The copy keeps the set's name (its id when empty), description and creation time (now when
    unset); each case is checked and time-stamped as :func:`new_case` does.

    Raises:
        ConfigError: Not an eval set, no id, a case without an id, or a case id used twice.
    """
    if not isinstance(eval_set, EvalSet):
        raise ConfigError(f"save: expected an ae.EvalSet, got {type(eval_set).__name__}")
    eval_set_id = eval_set.eval_set_id
    if not eval_set_id:
        raise ConfigError("save: the eval set has no eval_set_id; give it one (ae.EvalSet.of('my-set', cases))")
    check_names(app_name=app_name, eval_set_id=eval_set_id)
    texts: dict[str, str] = {}
    for index, eval_case in enumerate(eval_set.eval_cases):
        if not eval_case.eval_id:
            raise ConfigError(f"save: eval set {app_name}.{eval_set_id}: the case at index {index} has no eval_id")
        if eval_case.eval_id in texts:
            raise ConfigError(
                f"save: eval set {app_name}.{eval_set_id} has more than one case with id {eval_case.eval_id!r};"
                " make case ids unique"
            )
        texts[eval_case.eval_id] = new_case(app_name, eval_set_id, eval_case)[1]
    created = eval_set.creation_timestamp if eval_set.creation_timestamp is not None else time.time()
    header = eval_set.model_copy(
        update={"name": eval_set.name or eval_set_id, "eval_cases": [], "creation_timestamp": created}
    )
    return json_copy(header, f"eval set {app_name}.{eval_set_id}"), list(texts.values())


class StoredSet:
    """An eval set as a store keeps it, with the position of each case id.

    The set's cases are changed only through :meth:`append`, :meth:`replace` and :meth:`remove`,
    which keep the index true. Their ``where`` (``"<app>.<eval set id>"``, as requested) names the
    set in errors.
    """

    __slots__ = ("_positions", "eval_set")

    def __init__(self, eval_set: EvalSet) -> None:
        self.eval_set = eval_set
        self._positions: dict[str, int] | None = None

    def _index(self) -> dict[str, int]:
        if self._positions is None:
            positions: dict[str, int] = {}
            for position, case in enumerate(self.eval_set.eval_cases):
                # The first of a repeated id, as EvalSet.case finds it.
                positions.setdefault(case.eval_id, position)
            self._positions = positions
        return self._positions

    def position(self, where: str, eval_case_id: str) -> int:
        """Where the case is in the set's list.

        Raises:
            NotFoundError: The set has no case with this id.
        """
        position = self._index().get(eval_case_id)
        if position is None:
            raise NotFoundError(f"eval case {where}.{eval_case_id} not found")
        return position

    def append(self, where: str, case: EvalCase) -> None:
        """Add ``case`` at the end.

        Raises:
            ConfigError: The set already has a case with its id.
        """
        index = self._index()
        if case.eval_id in index:
            raise ConfigError(f"eval case {where}.{case.eval_id} already exists")
        index[case.eval_id] = len(self.eval_set.eval_cases)
        self.eval_set.eval_cases.append(case)

    def replace(self, where: str, case: EvalCase) -> None:
        """Put ``case`` in the place of the case with its id (see :meth:`position`)."""
        self.eval_set.eval_cases[self.position(where, case.eval_id)] = case

    def remove(self, where: str, eval_case_id: str) -> None:
        """Remove the case with this id (see :meth:`position`)."""
        self.eval_set.eval_cases.pop(self.position(where, eval_case_id))
        self._positions = None


CaseEdit = Callable[[StoredSet], object]
"""One change to a stored set, made while the store's lock is held."""


def appender(app_name: str, eval_set_id: str, eval_case: EvalCase) -> CaseEdit:
    """The edit that adds a checked, time-stamped copy of ``eval_case``."""
    case, _ = new_case(app_name, eval_set_id, eval_case)
    return lambda stored: stored.append(f"{app_name}.{eval_set_id}", case)


def replacer(app_name: str, eval_set_id: str, eval_case: EvalCase) -> CaseEdit:
    """The edit that replaces the case with ``eval_case``'s id by a copy of it, made through its JSON.

    A case that JSON cannot hold is refused here, and the copy holds exactly what the file and
    database stores would give back, so the three stores behave alike.
    """
    case = json_copy(checked(eval_case), f"eval case {app_name}.{eval_set_id}.{eval_case.eval_id}")
    return lambda stored: stored.replace(f"{app_name}.{eval_set_id}", case)


def remover(app_name: str, eval_set_id: str, eval_case_id: str) -> CaseEdit:
    """The edit that removes a case."""
    return lambda stored: stored.remove(f"{app_name}.{eval_set_id}", eval_case_id)
