"""Exceptions raised by agenteval.

The hierarchy::

    AgentEvalError(Exception)
    ├── ConfigError(AgentEvalError, ValueError)        bad arguments, bad files
    │   └── MissingDependencyError(ConfigError, ImportError)
    ├── NotFoundError(AgentEvalError, LookupError)     a missing eval set, case, metric or result
    ├── StorageError(AgentEvalError)                    a store that failed
    └── CallbackError(AgentEvalError)                   a lifecycle callback raised

Failures of an agent or a metric are not exceptions: they are recorded in the results
(``status="failed"`` with an ``errorMessage``).

:class:`UnknownFieldWarning` (a ``UserWarning``) flags keys in an eval-set or metrics file that
no field takes, such as a misspelt criterion option; :class:`SkippedMetricWarning` a metric whose
evaluator is not registered; :class:`NoMetricsWarning` an evaluation with no metrics at all.
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from pathlib import Path

__all__ = [
    "AgentEvalError",
    "CallbackError",
    "ConfigError",
    "MissingDependencyError",
    "NoMetricsWarning",
    "NotFoundError",
    "SkippedMetricWarning",
    "StorageError",
    "UnknownFieldWarning",
    "describe_exception",
    "rewrap",
    "warn_user",
]


class AgentEvalError(Exception):
    """Root of every exception agenteval raises on purpose."""


class ConfigError(AgentEvalError, ValueError):
    """A bad argument, or a malformed eval-set, metrics or result file."""


class MissingDependencyError(ConfigError, ImportError):
    """An optional dependency is not installed; the message gives the ``pip install`` line."""

    def __init__(self, feature: str, extra: str, package: str) -> None:
        super().__init__(f"{feature} needs the optional package {package!r}: pip install 'agenteval[{extra}]'")


class UnknownFieldWarning(UserWarning):
    """An eval-set or metrics file has keys that no field takes; they are kept but have no effect."""


class SkippedMetricWarning(UserWarning):
    """A metric names an evaluator that is not registered, so it is skipped (as the reference skips it)."""


class NoMetricsWarning(UserWarning):
    """An evaluation has no metrics at all, so every case will be ``not_evaluated``."""


class NotFoundError(AgentEvalError, LookupError):
    """An eval set, eval case, metric or result that does not exist."""


class StorageError(AgentEvalError):
    """A store could not read or write (I/O failure, lost database connection)."""


class CallbackError(AgentEvalError):
    """A lifecycle callback raised; the message names the point, the index and the callback.

    The callback's own exception is the ``__cause__``.
    """


def describe_exception(error: BaseException) -> str:
    """Render an exception for an error message: ours as they are, others with their type name."""
    if isinstance(error, AgentEvalError):
        return str(error)
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def rewrap(prefix: str, error: BaseException) -> AgentEvalError:
    """Return an error of the same agenteval type whose message is ``<prefix>: <error>``.

    Keeping the type lets callers still catch, say, :class:`NotFoundError` after context has been
    added; anything else becomes an :class:`AgentEvalError`. Raise the result ``from error``.
    """
    message = f"{prefix}: {describe_exception(error)}"
    for kind in (NotFoundError, StorageError, CallbackError, ConfigError):
        if isinstance(error, kind):
            return kind(message)
    return AgentEvalError(message)


# Frames of these folders are the library and the event loop between the user's call and a warning.
_INTERNAL = (str(Path(__file__).parent), str(Path(asyncio.__file__).parent))


def _internal(filename: str) -> bool:
    return filename.startswith(_INTERNAL) or "nest_asyncio" in filename


def warn_user(message: str, category: type[Warning]) -> None:
    """Warn, pointing at the user's line: the first caller outside agenteval and the event loop.

    An evaluation runs inside an event loop (and ``nest_asyncio2`` in a kernel), so a fixed
    ``stacklevel`` would point into the library.
    """
    level, frame = 1, sys._getframe(1)
    while _internal(frame.f_code.co_filename) and frame.f_back is not None:
        level, frame = level + 1, frame.f_back
    warnings.warn(message, category, stacklevel=level + 1)
