"""An eval-result store that keeps results in memory, for tests and notebooks."""

from __future__ import annotations

import builtins
import threading

from agenteval.errors import NotFoundError
from agenteval.evalresult._prepare import clone_result, prepare_result, validate_get, validate_list
from agenteval.evalresult.models import EvalSetResult

__all__ = ["InMemoryEvalResultManager"]


class InMemoryEvalResultManager:
    """Keeps eval-set results in memory, per app.

    Results are deep-copied on the way in and out, so neither the caller's object nor a returned
    one is shared with the store. ``list`` returns ids in the order they were first saved. Safe to
    use from several threads and tasks.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._results: dict[str, dict[str, EvalSetResult]] = {}

    async def save(self, app_name: str, result: EvalSetResult | None) -> str:
        """Store a copy of a result and return its id.

        Args:
            app_name: The app the result belongs to.
            result: The result; a missing id, name or creation time is filled in on the copy.

        Returns:
            The result id.

        Raises:
            ConfigError: A bad argument, or a result that cannot be serialised
                (``clone result: ...``).
        """
        prepared = prepare_result(app_name, result)
        result_id = prepared.eval_set_result_id
        with self._lock:
            self._results.setdefault(app_name, {})[result_id] = prepared
        return result_id

    async def get(self, app_name: str, eval_set_result_id: str) -> EvalSetResult:
        """Return a copy of a stored result.

        Raises:
            ConfigError: An empty app name or id.
            NotFoundError: The app or the result is unknown.
        """
        validate_get(app_name, eval_set_result_id)
        with self._lock:
            results = self._results.get(app_name)
            if results is None:
                raise NotFoundError(f"app {app_name} not found")
            stored = results.get(eval_set_result_id)
        if stored is None:
            raise NotFoundError(f"eval set result {app_name}.{eval_set_result_id} not found")
        # Stored objects are never mutated, only replaced, so copying outside the lock is safe.
        return clone_result(stored, f"clone eval set result {app_name}.{eval_set_result_id}")

    async def list(self, app_name: str) -> builtins.list[str]:
        """Return the app's result ids in first-save order (``[]`` for an unknown app).

        Raises:
            ConfigError: An empty app name.
        """
        validate_list(app_name)
        with self._lock:
            return builtins.list(self._results.get(app_name, {}))

    async def close(self) -> None:
        """Do nothing: there is nothing to release."""

    def __repr__(self) -> str:
        with self._lock:
            apps = len(self._results)
            count = sum(len(results) for results in self._results.values())
        return f"InMemoryEvalResultManager(apps={apps}, results={count})"
