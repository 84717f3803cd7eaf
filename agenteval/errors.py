"""Exceptions raised by agenteval.

The hierarchy::

    AgentEvalError(Exception)
    ├── ConfigError(AgentEvalError, ValueError)        bad arguments, bad files
    │   └── MissingDependencyError(ConfigError, ImportError)
    ├── NotFoundError(AgentEvalError, LookupError)     a missing eval set, case, metric or result
    └── StorageError(AgentEvalError)                    a store that failed

Failures of an agent or a metric are not exceptions: they are recorded in the results
(``status="failed"`` with an ``errorMessage``).
"""

from __future__ import annotations

__all__ = ["AgentEvalError", "ConfigError", "MissingDependencyError", "NotFoundError", "StorageError"]


class AgentEvalError(Exception):
    """Root of every exception agenteval raises on purpose."""


class ConfigError(AgentEvalError, ValueError):
    """A bad argument, or a malformed eval-set, metrics or result file."""


class MissingDependencyError(ConfigError, ImportError):
    """An optional dependency is not installed; the message gives the ``pip install`` line."""

    def __init__(self, feature: str, extra: str, package: str) -> None:
        super().__init__(f"{feature} needs the optional package {package!r}: pip install 'agenteval[{extra}]'")


class NotFoundError(AgentEvalError, LookupError):
    """An eval set, eval case, metric or result that does not exist."""


class StorageError(AgentEvalError):
    """A store could not read or write (I/O failure, lost database connection)."""
