"""An eval-result store that keeps results in memory, for tests and notebooks."""

from __future__ import annotations

import builtins
import threading
from collections.abc import Sequence

from agenteval._util.gc_tuning import fewer_collections
from agenteval._util.name_checks import check_result, check_text_names, nonempty_names
from agenteval.errors import NotFoundError
from agenteval.evalresult._prepare import filled_result, recorded_pieces, result_pieces
from agenteval.evalresult.models import EvalSetResult
from agenteval.evalresult.records import CaseRecord, saves_records

__all__ = ["InMemoryEvalResultManager"]


class InMemoryEvalResultManager:
    """Keeps eval-set results in memory, per app.

    Results are kept as their compact JSON (an order of magnitude smaller than the objects, which
    matters when a notebook evaluates many times), in one piece per case result (so that no text of
    the whole result is made twice over while it is saved), and neither the caller's object nor a
    returned one is shared with the store. ``list`` returns ids in the order they were first saved. Safe to
    use from several threads and tasks.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._results: dict[str, dict[str, tuple[str, ...]]] = {}

    @saves_records
    @nonempty_names
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
        prepared = filled_result(app_name, check_result(result))
        self.check_new_result_id(app_name, prepared.eval_set_result_id)
        pieces = tuple(result_pieces(prepared))
        with self._lock:
            self._results.setdefault(app_name, {})[prepared.eval_set_result_id] = pieces
        return prepared.eval_set_result_id

    @nonempty_names
    async def save_recorded(self, app_name: str, result: EvalSetResult | None, records: Sequence[CaseRecord]) -> str:
        """As :meth:`save`, for a result whose case results are ``records`` (``result`` holds none).

        The records' texts are stored as they are.
        """
        prepared = filled_result(app_name, check_result(result))
        self.check_new_result_id(app_name, prepared.eval_set_result_id)
        pieces = tuple(recorded_pieces(prepared, records))
        with self._lock:
            self._results.setdefault(app_name, {})[prepared.eval_set_result_id] = pieces
        return prepared.eval_set_result_id

    def check_new_result_id(self, app_name: str, result_id: str) -> None:
        """Refuse a result id this store could not save a result under, before anything runs.

        Any length will do; a lone surrogate in the app name or the id will not, since the result's
        JSON could not hold it. The evaluator calls this before any agent runs; :meth:`save`
        applies the same check.

        Raises:
            ConfigError: The app name or the id is empty or holds a lone surrogate.
        """
        check_text_names(app_name=app_name, eval_set_result_id=result_id)

    @nonempty_names
    async def get(self, app_name: str, eval_set_result_id: str) -> EvalSetResult:
        """Return a copy of a stored result.

        Raises:
            ConfigError: An empty app name or id.
            NotFoundError: The app or the result is unknown.
        """
        with self._lock:
            results = self._results.get(app_name)
            if results is None:
                raise NotFoundError(f"app {app_name} not found")
            stored = results.get(eval_set_result_id)
        if stored is None:
            raise NotFoundError(f"eval set result {app_name}.{eval_set_result_id} not found")
        with fewer_collections():
            return EvalSetResult.from_json("".join(stored))

    @nonempty_names
    async def list(self, app_name: str) -> builtins.list[str]:
        """Return the app's result ids in first-save order (``[]`` for an unknown app).

        Raises:
            ConfigError: An empty app name.
        """
        with self._lock:
            return builtins.list(self._results.get(app_name, {}))

    async def close(self) -> None:
        """Do nothing: there is nothing to release."""

    def __repr__(self) -> str:
        with self._lock:
            apps = len(self._results)
            count = sum(len(results) for results in self._results.values())
        return f"InMemoryEvalResultManager(apps={apps}, results={count})"
