"""The eval-set store interface."""

from __future__ import annotations

import builtins
from typing import Protocol, runtime_checkable

from agenteval.evalset.models import EvalCase, EvalSet

__all__ = ["EvalSetManager"]


@runtime_checkable
class EvalSetManager(Protocol):
    """Stores eval sets and their cases, per app.

    Every method raises :class:`~agenteval.errors.ConfigError` for an empty or unusable app
    name or id, and :class:`~agenteval.errors.NotFoundError` for a missing set or case. Returned
    objects are copies: changing them does not change the store.
    """

    async def get(self, app_name: str, eval_set_id: str) -> EvalSet:
        """Return an eval set."""
        ...

    async def create(self, app_name: str, eval_set_id: str) -> EvalSet:
        """Create an empty eval set (name = id, creation time = now); an existing id is an error."""
        ...

    async def save(self, app_name: str, eval_set: EvalSet) -> EvalSet:
        """Store a whole eval set under its id, replacing any set with that id, and return it as stored.

        Its name (the id when empty), description and cases are kept, in order; missing creation
        times (the set's, its cases' and their turns') are set to now, as :meth:`add_case` does.
        A case without an id or two cases with one id are a :class:`~agenteval.errors.ConfigError`,
        and nothing is stored.
        """
        ...

    async def list(self, app_name: str) -> builtins.list[str]:
        """Return the ids of the app's eval sets (``[]`` for an unknown app)."""
        ...

    async def delete(self, app_name: str, eval_set_id: str) -> None:
        """Delete an eval set."""
        ...

    async def get_case(self, app_name: str, eval_set_id: str, eval_case_id: str) -> EvalCase:
        """Return one case of an eval set."""
        ...

    async def add_case(self, app_name: str, eval_set_id: str, eval_case: EvalCase) -> None:
        """Append a case; its id must be new in the set. Missing creation times are set to now."""
        ...

    async def update_case(self, app_name: str, eval_set_id: str, eval_case: EvalCase) -> None:
        """Replace the case with the same id."""
        ...

    async def delete_case(self, app_name: str, eval_set_id: str, eval_case_id: str) -> None:
        """Remove a case."""
        ...

    async def close(self) -> None:
        """Release resources."""
        ...
