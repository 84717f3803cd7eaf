"""An eval-set store that keeps everything in memory."""

from __future__ import annotations

import builtins
import threading
from dataclasses import dataclass, field

from pydantic import TypeAdapter

from agenteval._util.gc_tuning import fewer_collections
from agenteval._util.name_checks import nonempty_names
from agenteval._util.trpc_json import written_json
from agenteval.errors import ConfigError, NotFoundError
from agenteval.evalset._case_edits import checked, new_case, new_set, whole_set
from agenteval.evalset.models import EvalCase, EvalSet

__all__ = ["InMemoryEvalSetManager"]

_CASES = TypeAdapter(list[EvalCase])


@dataclass(slots=True)
class _Stored:
    """An eval set as the store keeps it: its own fields, and each case's compact JSON by id, in order."""

    header: EvalSet
    """The set without its cases."""
    cases: dict[str, str] = field(default_factory=dict)


class InMemoryEvalSetManager:
    """An :class:`~agenteval.evalset.manager.EvalSetManager` backed by dictionaries.

    Sets are listed in creation order. Everything stored and returned is a deep copy. Cases are
    kept as their compact JSON (written once, and read back once to prove it reads), which is a
    fraction of the objects' size and nothing for the garbage collector to scan; every read parses
    it again.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sets: dict[str, dict[str, _Stored]] = {}

    def _find(self, app_name: str, eval_set_id: str) -> _Stored:
        stored = self._sets.get(app_name, {}).get(eval_set_id)
        if stored is None:
            raise NotFoundError(f"eval set {app_name}.{eval_set_id} not found")
        return stored

    @nonempty_names
    async def get(self, app_name: str, eval_set_id: str) -> EvalSet:
        """Return a copy of an eval set."""
        with self._lock:
            stored = self._find(app_name, eval_set_id)
            header, texts = stored.header, builtins.list(stored.cases.values())
        with fewer_collections():
            cases = _CASES.validate_json(f"[{','.join(texts)}]")
        return header.model_copy(update={"eval_cases": cases})

    @nonempty_names
    async def create(self, app_name: str, eval_set_id: str) -> EvalSet:
        """Create an empty eval set; an existing id is a :class:`ConfigError`."""
        with self._lock:
            sets = self._sets.setdefault(app_name, {})
            if eval_set_id in sets:
                raise ConfigError(f"eval set {app_name}.{eval_set_id} already exists")
            header = new_set(eval_set_id)
            sets[eval_set_id] = _Stored(header)
            return header.model_copy(update={"eval_cases": []})

    async def save(self, app_name: str, eval_set: EvalSet) -> EvalSet:
        """Store a copy of a whole eval set, replacing any set with its id (which keeps its place in the list)."""
        header, texts = whole_set(app_name, eval_set)
        stored = _Stored(header, {case.eval_id: text for case, text in zip(eval_set.eval_cases, texts, strict=True)})
        with self._lock:
            self._sets.setdefault(app_name, {})[header.eval_set_id] = stored
        return await self.get(app_name, header.eval_set_id)

    @nonempty_names
    async def list(self, app_name: str) -> builtins.list[str]:
        """Return the app's eval-set ids in creation order."""
        with self._lock:
            return builtins.list(self._sets.get(app_name, {}))

    @nonempty_names
    async def delete(self, app_name: str, eval_set_id: str) -> None:
        """Delete an eval set."""
        with self._lock:
            self._find(app_name, eval_set_id)
            del self._sets[app_name][eval_set_id]

    @nonempty_names
    async def get_case(self, app_name: str, eval_set_id: str, eval_case_id: str) -> EvalCase:
        """Return a copy of one case."""
        with self._lock:
            text = self._find(app_name, eval_set_id).cases.get(eval_case_id)
        if text is None:
            raise NotFoundError(f"eval case {app_name}.{eval_set_id}.{eval_case_id} not found")
        return EvalCase.model_validate_json(text)

    @nonempty_names
    async def add_case(self, app_name: str, eval_set_id: str, eval_case: EvalCase) -> None:
        """Append a copy of a case, filling missing creation times."""
        case, text = new_case(app_name, eval_set_id, eval_case)
        with self._lock:
            cases = self._find(app_name, eval_set_id).cases
            if case.eval_id in cases:
                raise ConfigError(f"eval case {app_name}.{eval_set_id}.{case.eval_id} already exists")
            cases[case.eval_id] = text

    @nonempty_names
    async def update_case(self, app_name: str, eval_set_id: str, eval_case: EvalCase) -> None:
        """Replace the case with the same id by a copy of ``eval_case``."""
        case_id = checked(eval_case).eval_id
        text = written_json(eval_case, f"eval case {app_name}.{eval_set_id}.{case_id}")
        # Read back once, as every store does: what cannot be read must not be stored.
        EvalCase.model_validate_json(text)
        with self._lock:
            cases = self._find(app_name, eval_set_id).cases
            if case_id not in cases:
                raise NotFoundError(f"eval case {app_name}.{eval_set_id}.{case_id} not found")
            cases[case_id] = text

    @nonempty_names
    async def delete_case(self, app_name: str, eval_set_id: str, eval_case_id: str) -> None:
        """Remove a case."""
        with self._lock:
            cases = self._find(app_name, eval_set_id).cases
            if cases.pop(eval_case_id, None) is None:
                raise NotFoundError(f"eval case {app_name}.{eval_set_id}.{eval_case_id} not found")

    async def close(self) -> None:
        """Do nothing: there is nothing to release."""
