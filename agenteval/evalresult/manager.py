"""The result store interface."""

from __future__ import annotations

import builtins
from typing import Protocol, runtime_checkable

from agenteval.evalresult.models import EvalSetResult

__all__ = ["EvalResultManager"]


@runtime_checkable
class EvalResultManager(Protocol):
    """Stores eval-set results, per app.

    Validation, in this order: ``app name is empty``; ``eval set result is nil`` (``None``);
    ``the eval set id of eval set result is empty`` (save) / ``eval set result id is empty`` (get),
    each a :class:`~agenteval.errors.ConfigError`. A missing result is a
    :class:`~agenteval.errors.NotFoundError`.

    A store may also offer ``async save_recorded(app_name, result, records)``: the same save, for a
    result that holds no case results, whose case results are ``records``
    (:class:`~agenteval.evalresult.records.CaseRecord`, each with its compact JSON, ``record.text(indent)``).
    An evaluation saves through it, without reading the case results back, when the store's ``save`` is
    marked as its twin (:func:`~agenteval.evalresult.records.saves_records`); otherwise it calls ``save``
    with the whole result.
    """

    async def save(self, app_name: str, result: EvalSetResult) -> str:
        """Store a result and return its id.

        A missing id becomes ``<app>_<evalSetId>_<uuid4>``, a missing name the id, and a missing
        creation time now. The caller's object is never changed; saving an existing id replaces it.
        """
        ...

    async def get(self, app_name: str, eval_set_result_id: str) -> EvalSetResult:
        """Return a stored result (a copy)."""
        ...

    async def list(self, app_name: str) -> builtins.list[str]:
        """Return the app's result ids in a stable order (``[]`` for an unknown app)."""
        ...

    async def close(self) -> None:
        """Release resources."""
        ...
