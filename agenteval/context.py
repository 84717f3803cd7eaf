"""The evaluation context: values that callbacks hand to later callbacks and stages.

It plays the role of Go's ``context.Context`` in the reference framework. A callback may return a
new context (see :mod:`agenteval.service.callbacks`); the runner, the session-id supplier, the
evaluators and the case aggregator of that scope then see it, through their arguments or through
:func:`current_context`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

__all__ = ["EvalContext", "current_context"]


class EvalContext(Mapping[str, Any]):
    """An immutable mapping of context values.

    Args:
        values: Initial values.
    """

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any] | None = None, /, **kwargs: Any) -> None:
        self._values: dict[str, Any] = {**(values or {}), **kwargs}

    def with_values(self, **values: Any) -> EvalContext:
        """Return a new context with ``values`` added or replaced."""
        return EvalContext(self._values, **values)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"EvalContext({self._values!r})"


_CURRENT: ContextVar[EvalContext] = ContextVar("agenteval_context", default=EvalContext())  # noqa: B039


def current_context() -> EvalContext:
    """Return the context of the stage that is running (empty outside an evaluation)."""
    return _CURRENT.get()


@contextlib.contextmanager
def use_context(context: EvalContext) -> Iterator[None]:
    """Make ``context`` the :func:`current_context` inside the ``with`` block."""
    token = _CURRENT.set(context)
    try:
        yield
    finally:
        _CURRENT.reset(token)
