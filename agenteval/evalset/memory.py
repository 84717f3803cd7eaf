"""An eval-set store that keeps everything in memory."""

from __future__ import annotations

import builtins
import threading

from agenteval._validate import check_names
from agenteval.errors import ConfigError, NotFoundError
from agenteval.evalset._case_edits import CaseEdit, StoredSet, appender, new_set, remover, replacer
from agenteval.evalset.models import EvalCase, EvalSet

__all__ = ["InMemoryEvalSetManager"]


class InMemoryEvalSetManager:
    """An :class:`~agenteval.evalset.manager.EvalSetManager` backed by dictionaries.

    Sets are listed in creation order. Everything stored and returned is a deep copy.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sets: dict[str, dict[str, StoredSet]] = {}

    def _find(self, app_name: str, eval_set_id: str) -> StoredSet:
        stored = self._sets.get(app_name, {}).get(eval_set_id)
        if stored is None:
            raise NotFoundError(f"eval set {app_name}.{eval_set_id} not found")
        return stored

    def _change(self, app_name: str, eval_set_id: str, change: CaseEdit) -> None:
        with self._lock:
            change(self._find(app_name, eval_set_id))

    async def get(self, app_name: str, eval_set_id: str) -> EvalSet:
        """Return a copy of an eval set."""
        check_names(app_name=app_name, eval_set_id=eval_set_id)
        with self._lock:
            return self._find(app_name, eval_set_id).eval_set.deep_copy()

    async def create(self, app_name: str, eval_set_id: str) -> EvalSet:
        """Create an empty eval set; an existing id is a :class:`ConfigError`."""
        check_names(app_name=app_name, eval_set_id=eval_set_id)
        with self._lock:
            sets = self._sets.setdefault(app_name, {})
            if eval_set_id in sets:
                raise ConfigError(f"eval set {app_name}.{eval_set_id} already exists")
            eval_set = new_set(eval_set_id)
            sets[eval_set_id] = StoredSet(eval_set)
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
            stored = self._find(app_name, eval_set_id)
            position = stored.position(f"{app_name}.{eval_set_id}", eval_case_id)
            return stored.eval_set.eval_cases[position].deep_copy()

    async def add_case(self, app_name: str, eval_set_id: str, eval_case: EvalCase) -> None:
        """Append a copy of a case, filling missing creation times."""
        check_names(app_name=app_name, eval_set_id=eval_set_id)
        self._change(app_name, eval_set_id, appender(app_name, eval_set_id, eval_case))

    async def update_case(self, app_name: str, eval_set_id: str, eval_case: EvalCase) -> None:
        """Replace the case with the same id by a copy of ``eval_case``."""
        check_names(app_name=app_name, eval_set_id=eval_set_id)
        self._change(app_name, eval_set_id, replacer(app_name, eval_set_id, eval_case))

    async def delete_case(self, app_name: str, eval_set_id: str, eval_case_id: str) -> None:
        """Remove a case."""
        check_names(app_name=app_name, eval_set_id=eval_set_id, eval_case_id=eval_case_id)
        self._change(app_name, eval_set_id, remover(app_name, eval_set_id, eval_case_id))

    async def close(self) -> None:
        """Do nothing: there is nothing to release."""
