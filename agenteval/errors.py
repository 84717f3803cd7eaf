"""Exceptions and warnings raised by agenteval.

The hierarchy::

    AgentEvalError(Exception)
    ├── ConfigError(AgentEvalError, ValueError)        bad arguments, bad files
    │   └── MissingDependencyError(ConfigError, ImportError)
    ├── NotFoundError(AgentEvalError, LookupError)     a missing eval set, case, metric or result
    ├── StorageError(AgentEvalError)                    a store that failed
    │   └── SaveError(StorageError)                     an evaluation whose result could not be saved
    ├── CallbackError(AgentEvalError)                   a lifecycle callback raised
    ├── ChatModelError(AgentEvalError)                  a chat-completions call that failed for good
    ├── JudgeOutputError(AgentEvalError)                a judge reply that cannot be scored
    ├── JSONPathError(AgentEvalError, ValueError)       a template judge's JSON path that does not apply
    ├── TemplateRenderError(AgentEvalError)             a template judge prompt that cannot be rendered
    ├── ToolMockError(AgentEvalError)                   a mocked tool call no rule matches
    ├── AgentFrameworkError(AgentEvalError)             an agent framework reported a failure without raising
    ├── CassetteMissError(AgentEvalError)               a replayed case-run sent a request its cassette lacks
    └── ScriptExhaustedError(AgentEvalError)            a scripted test double asked for more than its script

    CaseFailure(Exception)     internal: a failure inside one case, recorded as its errorMessage

    UserWarning
    ├── UnknownFieldWarning     keys in an eval-set or metrics file that no field takes
    ├── SkippedMetricWarning    a metric whose evaluator is not registered (skipped)
    ├── NoMetricsWarning        an evaluation with no metrics at all
    ├── DroppedDataWarning      data in an imported file (ADK, pydantic-evals) that agenteval has no place for
    ├── MissingEvalSetWarning   a report re-aggregated without its eval set: aggregators get cases rebuilt from it
    ├── EvalSetChangedWarning   a result loaded, re-scored or compared with an eval set other than the one it evaluated
    ├── MissingCassettesWarning a report bundled without the cassettes its evaluation recorded (they are not here)
    ├── ProgressWarning         a progress display that failed and was switched off
    ├── ResumeWarning           a resume that could not carry on exactly as asked (saved under a new id, or
    │                           finished scores compared by configuration only)
    └── CacheIdentityWarning    an agent's cache identity rests on what it cannot see, or changed as it ran

Failures of an agent or a metric are not exceptions: they are recorded in the results
(``status="failed"`` with an ``errorMessage`` and an ``errorType``); the errors of a case (a judge's
unusable reply, an unmatched tool mock, …) become its message.

An evaluation that stops early (an exception, Ctrl-C) raises its error carrying the report of what it
finished as ``exc.report`` (see :func:`attach_report` and :func:`report_of`), as :class:`SaveError` carries
the report it could not save.
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = [
    "AgentEvalError",
    "AgentFrameworkError",
    "CacheIdentityWarning",
    "CallbackError",
    "CaseFailure",
    "CassetteMissError",
    "ChatModelError",
    "ConfigError",
    "DroppedDataWarning",
    "EvalSetChangedWarning",
    "JSONPathError",
    "JudgeOutputError",
    "MissingCassettesWarning",
    "MissingDependencyError",
    "MissingEvalSetWarning",
    "NoMetricsWarning",
    "NotFoundError",
    "ProgressWarning",
    "ResumeWarning",
    "SaveError",
    "ScriptExhaustedError",
    "SkippedMetricWarning",
    "StorageError",
    "TemplateRenderError",
    "ToolMockError",
    "UnknownFieldWarning",
    "attach_report",
    "describe_exception",
    "report_of",
    "rewrap",
    "warn_user",
]


class AgentEvalError(Exception):
    """Root of every exception agenteval raises on purpose."""

    def __init__(self, *args: object) -> None:
        # A message quoting a name with a lone surrogate could not be printed: show it escaped, as \ud800.
        super().__init__(*(_printable(arg) if isinstance(arg, str) else arg for arg in args))


def _printable(text: str) -> str:
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")


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


class MissingCassettesWarning(UserWarning):
    """A report is bundled without the cassettes its evaluation recorded: they are not where it recorded them."""


class ResumeWarning(UserWarning):
    """A resume that could not carry on exactly as asked.

    Another evaluation resumed the same partial result first (this one is saved under a new id), or the
    partial result records no metric definition hashes (its scores are compared by configuration only).
    """


class EvalSetChangedWarning(UserWarning):
    """A result used with an eval set other than the one it evaluated (loaded, re-scored or compared)."""


class MissingEvalSetWarning(UserWarning):
    """A report without its eval set was re-aggregated: the aggregator got each case rebuilt from the result."""


class DroppedDataWarning(UserWarning):
    """An imported file (another tool's eval set) has data that agenteval has no place for; it is left out."""


class NotFoundError(AgentEvalError, LookupError):
    """An eval set, eval case, metric or result that does not exist."""


class StorageError(AgentEvalError):
    """A store could not read or write (I/O failure, lost database connection)."""


class CallbackError(AgentEvalError):
    """A lifecycle callback raised; the message names the point, the index and the callback.

    The callback's own exception is the ``__cause__``.
    """


class SaveError(StorageError):
    """The evaluation finished but its result could not be saved; nothing is lost.

    Attributes:
        report: The complete :class:`~agenteval.EvaluationReport`, not saved (its result id was
            never stored); ``exc.report.save(other_manager)`` keeps it elsewhere.
    """

    def __init__(self, message: str, report: Any) -> None:
        super().__init__(message)
        self.report = report


class ChatModelError(AgentEvalError):
    """A chat-completions call that failed for good (after the client's retries).

    Attributes:
        model: The model asked.
        base_url: The endpoint.
        status_code: The HTTP status of the last attempt when it was an error status, else ``None``.
    """

    def __init__(self, message: str, *, model: str, base_url: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.model = model
        self.base_url = base_url
        self.status_code = status_code


class JudgeOutputError(AgentEvalError):
    """The judge answered something that cannot be scored (the case fails with this message)."""


class JSONPathError(AgentEvalError, ValueError):
    """A path that is not valid, or that does not match the value."""


class TemplateRenderError(AgentEvalError):
    """A template prompt could not be rendered for a turn (a missing value, an unbound placeholder)."""


class ToolMockError(AgentEvalError):
    """A mocked tool was called with arguments no rule matches, or its result could not be generated."""


class AgentFrameworkError(AgentEvalError):
    """An agent framework reported a failure as data rather than by raising (an ADK error event)."""


class CassetteMissError(AgentEvalError):
    """A case-run replayed from its cassette sent a request the cassette has no (unused) response for.

    The message names the case-run, the request, the cassette file and how to record it.
    """


class ScriptExhaustedError(AgentEvalError):
    """A scripted double was asked for more than its script holds."""


class CaseFailure(Exception):
    """Internal: a failure inside one case, which the service records as the case's ``errorMessage``.

    It never reaches a caller: the case is failed with its message and :attr:`error_type`.

    Attributes:
        traces: Execution traces gathered before the failure (kept on the failed result).
        error_type: What failed (an :class:`~agenteval.evalresult.models.ErrorType` value); the case itself by default.
    """

    def __init__(self, message: str, traces: list[Any] | None = None, *, error_type: str = "case") -> None:
        super().__init__(message)
        self.traces = traces or []
        self.error_type = error_type


class ProgressWarning(UserWarning):
    """The progress display failed and was switched off; the evaluation itself went on."""


class CacheIdentityWarning(UserWarning):
    """With ``cache=``, the agent's identity rests on state it cannot see, or changed while the agent ran.

    The first could serve a stale answer (set ``agent_version=``); the second makes the next evaluation
    miss (give the agent a ``cache_identity()`` method). Each place is named once per process.
    """


_REPORT = "report"
"""The attribute an error carries its report in: ``exc.report``, as users read it."""


def attach_report(error: BaseException, report: Any) -> None:
    """Let ``error`` carry ``report`` (an :class:`~agenteval.EvaluationReport`) as ``error.report``.

    The report of what an evaluation finished before ``error`` stopped it; :func:`report_of` reads it back.
    """
    setattr(error, _REPORT, report)


def report_of(error: BaseException) -> Any:
    """The report ``error`` carries (:func:`attach_report`, :class:`SaveError`), else ``None``.

    Typed ``Any`` because this bottom layer imports nothing of agenteval: it is an
    :class:`~agenteval.EvaluationReport`.
    """
    return getattr(error, _REPORT, None)


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
    """Warn, pointing at the user's line: the first caller outside agenteval, the event loop and the import system.

    An evaluation runs inside an event loop (and ``nest_asyncio2`` in a kernel), so a fixed
    ``stacklevel`` would point into the library.
    """
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and (_internal(frame.f_code.co_filename) or _importing(frame)):
        frame = frame.f_back
        # warnings.warn leaves the import system's frames out when it counts levels, so they are not counted.
        level += not _importing(frame)
    warnings.warn(message, category, stacklevel=level + 1)


def _importing(frame: FrameType) -> bool:
    """Whether ``frame`` is the import system's (an old module path is used through an import statement)."""
    filename = frame.f_code.co_filename
    return "importlib" in filename and "_bootstrap" in filename
