"""An eval-set store that keeps everything in memory."""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Callable

from agenteval._json import json_copy, written_json
from agenteval._validate import check_names
from agenteval.errors import ConfigError, NotFoundError
from agenteval.evalset.models import EvalCase, EvalSet, Invocation

__all__ = ["InMemoryEvalSetManager"]


def _checked(eval_case: EvalCase | None) -> EvalCase:
    """The case, once it is known to be one and to have an id."""
    if eval_case is None:
        raise ConfigError("eval case is None")
    check_names(eval_case_id=eval_case.eval_id)
    return eval_case


def _checked_copy(app_name: str, eval_set_id: str, eval_case: EvalCase) -> tuple[str, EvalCase]:
    """Validate a case to be stored and return its id and a copy made through its JSON.

    A case that JSON cannot hold is refused here, and the copy holds exactly what the file and
    database stores would give back, so the three stores behave alike.
    """
    case_id = _checked(eval_case).eval_id
    return case_id, json_copy(eval_case, f"eval case {app_name}.{eval_set_id}.{case_id}")


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


def _new_case(app_name: str, eval_set_id: str, eval_case: EvalCase | None) -> tuple[EvalCase, str]:
    """Check a case to add and fill its missing creation times; return the copy to keep and its JSON.

    The JSON is written once: a database stores it, and reading it back makes the copy the other
    stores keep (and proves it can be read back).
    """
    case = _checked(eval_case)
    text = written_json(_stamped(case), f"eval case {app_name}.{eval_set_id}.{case.eval_id}")
    return type(case).model_validate_json(text), text


def _new_set(eval_set_id: str) -> EvalSet:
    return EvalSet(eval_set_id=eval_set_id, name=eval_set_id, eval_cases=[], creation_timestamp=time.time())


def _case_index(eval_set: EvalSet, app_name: str, eval_set_id: str, eval_case_id: str) -> int:
    for index, case in enumerate(eval_set.eval_cases):
        if case.eval_id == eval_case_id:
            return index
    raise NotFoundError(f"eval case {app_name}.{eval_set_id}.{eval_case_id} not found")


# The case edits below are shared with the local store: each checks and copies the case it is given
# up front and returns the change to apply to the loaded set while the store's lock is held.


def _appender(app_name: str, eval_set_id: str, eval_case: EvalCase) -> Callable[[EvalSet], object]:
    case, _ = _new_case(app_name, eval_set_id, eval_case)

    def append(eval_set: EvalSet) -> None:
        if eval_set.case(case.eval_id) is not None:
            raise ConfigError(f"eval case {app_name}.{eval_set_id}.{case.eval_id} already exists")
        eval_set.eval_cases.append(case)

    return append


def _replacer(app_name: str, eval_set_id: str, eval_case: EvalCase) -> Callable[[EvalSet], object]:
    case_id, case = _checked_copy(app_name, eval_set_id, eval_case)

    def replace(eval_set: EvalSet) -> None:
        eval_set.eval_cases[_case_index(eval_set, app_name, eval_set_id, case_id)] = case

    return replace


def _remover(app_name: str, eval_set_id: str, eval_case_id: str) -> Callable[[EvalSet], object]:
    return lambda eval_set: eval_set.eval_cases.pop(_case_index(eval_set, app_name, eval_set_id, eval_case_id))


class InMemoryEvalSetManager:
    """An :class:`~agenteval.evalset.manager.EvalSetManager` backed by dictionaries.

    Sets are listed in creation order. Everything stored and returned is a deep copy.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sets: dict[str, dict[str, EvalSet]] = {}

    def _find(self, app_name: str, eval_set_id: str) -> EvalSet:
        eval_set = self._sets.get(app_name, {}).get(eval_set_id)
        if eval_set is None:
            raise NotFoundError(f"eval set {app_name}.{eval_set_id} not found")
        return eval_set

    def _change(self, app_name: str, eval_set_id: str, change: Callable[[EvalSet], object]) -> None:
        with self._lock:
            change(self._find(app_name, eval_set_id))

    async def get(self, app_name: str, eval_set_id: str) -> EvalSet:
        """Return a copy of an eval set."""
        check_names(app_name=app_name, eval_set_id=eval_set_id)
        with self._lock:
            return self._find(app_name, eval_set_id).deep_copy()

    async def create(self, app_name: str, eval_set_id: str) -> EvalSet:
        """Create an empty eval set; an existing id is a :class:`ConfigError`."""
        check_names(app_name=app_name, eval_set_id=eval_set_id)
        with self._lock:
            sets = self._sets.setdefault(app_name, {})
            if eval_set_id in sets:
                raise ConfigError(f"eval set {app_name}.{eval_set_id} already exists")
            eval_set = sets[eval_set_id] = _new_set(eval_set_id)
            return eval_set.deep_copy()

    async def list(self, app_name: str) -> builtins.list[str]:
        """Return the app's eval-set ids in creation order."""
        check_names(app_name=app_name)
        with self._lock:
            return builtins.list(self._sets.get(app_name, {}))

    async def delete(self, app_name: str, eval_set_id: str) -> None:
        """Delete an eval set."""
        check_names(app_name=app_name, eval_set_id=eval_set_id)
        with self._lock:
            self._find(app_name, eval_set_id)
            del self._sets[app_name][eval_set_id]

    async def get_case(self, app_name: str, eval_set_id: str, eval_case_id: str) -> EvalCase:
        """Return a copy of one case."""
        check_names(app_name=app_name, eval_set_id=eval_set_id, eval_case_id=eval_case_id)
        with self._lock:
            eval_set = self._find(app_name, eval_set_id)
            return eval_set.eval_cases[_case_index(eval_set, app_name, eval_set_id, eval_case_id)].deep_copy()

    async def add_case(self, app_name: str, eval_set_id: str, eval_case: EvalCase) -> None:
        """Append a copy of a case, filling missing creation times."""
        check_names(app_name=app_name, eval_set_id=eval_set_id)
        self._change(app_name, eval_set_id, _appender(app_name, eval_set_id, eval_case))

    async def update_case(self, app_name: str, eval_set_id: str, eval_case: EvalCase) -> None:
        """Replace the case with the same id by a copy of ``eval_case``."""
        check_names(app_name=app_name, eval_set_id=eval_set_id)
        self._change(app_name, eval_set_id, _replacer(app_name, eval_set_id, eval_case))

    async def delete_case(self, app_name: str, eval_set_id: str, eval_case_id: str) -> None:
        """Remove a case."""
        check_names(app_name=app_name, eval_set_id=eval_set_id, eval_case_id=eval_case_id)
        self._change(app_name, eval_set_id, _remover(app_name, eval_set_id, eval_case_id))

    async def close(self) -> None:
        """Do nothing: there is nothing to release."""
