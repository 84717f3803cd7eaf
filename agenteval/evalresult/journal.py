"""A running evaluation's finished case results, on disk as they finish: what a killed process leaves behind.

The local result store keeps, for each evaluation it will save, an append-only journal in the app's
``.journals/`` directory (named as the result file will be): a first line describing the evaluation
(app, eval set, result id, provenance), then one line of compact JSON per finished case run. Each line
reaches the file with one ``write`` call on a file opened for appending, so a process killed outright
(SIGKILL, the OOM killer, a restarted notebook kernel) loses only the cases still in flight: the kernel
keeps what was written. A power cut may lose more (lines are not synced one by one). The writer holds
an exclusive ``flock`` on its journal while it lives, so a journal can be told from one still being
written. The final result file is written, as always, atomically; the journal is then removed.

An evaluation always journals under a result id of its own (a resume too: the result it resumes is
never written to before its final save), so a journal is the whole partial result of one killed
evaluation: :func:`read_journal` reads it, the store's ``get`` and ``list`` show it under its id, and
``ev.evaluate(..., resume=<id>)`` carries it on. A line cut short by the kill is ignored.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from pathlib import Path
from typing import Any, Final

from agenteval._util.files import parse_json, read_data_file
from agenteval.errors import ConfigError, StorageError
from agenteval.evalresult.models import EvalCaseResult, EvalSetResult
from agenteval.evalresult.provenance import PARTIAL_PREFIX, Provenance
from agenteval.evalresult.summary import EvalSetResultSummary

__all__ = [
    "JOURNAL_DIRECTORY",
    "ResultJournal",
    "is_being_written",
    "journal_result_id",
    "read_journal",
    "remove_journal",
]

JOURNAL_DIRECTORY: Final = ".journals"
"""The directory, beside a result file, that holds the journal of the evaluation that will write it (same name)."""

_FORMAT: Final = "agentevalResultJournal"
_VERSION: Final = 1
_WHAT: Final = "eval set result journal"
_PARTIAL_NAME: Final = " (partial: the process ended before the evaluation finished)"
_STOPPED: Final = f"{PARTIAL_PREFIX}the process ended before the evaluation finished (read from its journal)"


class ResultJournal:
    """Appends an evaluation's finished case results to its journal file, one line each.

    Safe to call from several threads. Writing errors are raised once as :class:`StorageError` by
    :meth:`append` and then the journal stops: the evaluation goes on, its final save is unaffected.

    Args:
        path: The journal file; created (with its directory), replacing one of the same name.
        app_name: The app evaluated.
        result_id: The id the result is saved under.
        eval_set_id: The eval set evaluated.
        provenance: What produced the evaluation (recorded as partial in the journal).

    Raises:
        StorageError: The file could not be created, or another process is writing it.
    """

    def __init__(
        self, path: Path, *, app_name: str, result_id: str, eval_set_id: str, provenance: Provenance | None
    ) -> None:
        self.path = path
        self.cases_written = 0
        """How many case runs this object appended."""
        self._lock = threading.Lock()
        header: dict[str, Any] = {
            _FORMAT: _VERSION,
            "appName": app_name,
            "evalSetResultId": result_id,
            "evalSetId": eval_set_id,
        }
        if provenance is not None:
            header["provenance"] = json.loads(provenance.to_json(indent=None))
        self._fd: int | None = None
        try:
            fd = _created(path)
        except OSError as exc:
            raise StorageError(f"create the result journal {path}: {exc}") from exc
        try:
            # Held while this process lives: readers tell a running evaluation's journal from a dead one's.
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.ftruncate(fd, 0)
        except OSError as exc:
            os.close(fd)
            raise StorageError(f"create the result journal {path}: another evaluation is writing it ({exc})") from exc
        self._fd = fd
        try:
            self._write(json.dumps(header, ensure_ascii=False))
        except OSError as exc:
            self.discard()
            raise StorageError(f"create the result journal {path}: {exc}") from exc

    def append(self, case: EvalCaseResult) -> None:
        """Write one finished case run (compact JSON, one line, one ``write`` call).

        Raises:
            ConfigError: The case result cannot be written as JSON (the final save refuses it too).
            StorageError: The file could not be written; later calls do nothing.
        """
        if self._fd is None:
            return
        line = case.to_json(indent=None)
        try:
            self._write(line)
            self.cases_written += 1
        except OSError as exc:
            self.close()
            raise StorageError(f"write the result journal {self.path}: {exc}") from exc

    def close(self) -> None:
        """Stop writing (the file stays: :meth:`discard` removes it)."""
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def discard(self) -> None:
        """Close and remove the journal (and its directory, when no other journal is in it)."""
        self.close()
        remove_journal(self.path)

    def _write(self, text: str) -> None:
        data = (text + "\n").encode("utf-8", "surrogatepass")
        with self._lock:
            if self._fd is None:
                return
            # One write: a line is in the file whole or, if the process dies inside the call, cut short.
            written = os.write(self._fd, data)
            while written < len(data):
                written += os.write(self._fd, data[written:])


def journal_result_id(path: Path) -> str:
    """The result id the journal at ``path`` is of (``""`` when it is no readable journal)."""
    try:
        with path.open("rb") as file:
            header = json.loads(file.readline())
    except (OSError, ValueError):
        return ""
    if not isinstance(header, dict) or header.get(_FORMAT) != _VERSION:
        return ""
    result_id = header.get("evalSetResultId")
    return result_id if isinstance(result_id, str) else ""


def remove_journal(path: Path) -> None:
    """Remove a journal, and its directory when that holds no other; a journal already gone is no error."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    with contextlib.suppress(OSError):  # not empty: another evaluation's journal is in it
        path.parent.rmdir()


def _created(path: Path) -> int:
    """Open ``path`` for appending, creating it and its directory (again, if another process just removed it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except FileNotFoundError:  # the directory was removed in between, with the last journal another evaluation held
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)


def is_being_written(path: Path) -> bool:
    """Whether a live process holds the journal at ``path`` (its evaluation is still running)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def read_journal(path: Path) -> EvalSetResult:
    """The partial result a journal holds: the case results that finished, under the evaluation's result id.

    Its provenance says it is partial, and why; a last line cut short by the end of the process is left out.
    A case run written twice counts once, as last written.

    Raises:
        NotFoundError: The file does not exist.
        ConfigError: The file is not a result journal, or a line other than the last is damaged (the
            message names the file and the line, and says to delete the file to drop the partial result).
        StorageError: The file could not be read.
    """
    source = f"{_WHAT} {path}"
    fix = f"; delete {path} to drop this partial result"
    lines = read_data_file(path, _WHAT).split(b"\n")
    complete = lines[:-1]  # what follows the last newline was cut short (or is empty)
    if not complete:
        raise ConfigError(f"{source} is empty: it holds no header{fix}")
    try:
        header = json.loads(complete[0])
    except ValueError as exc:
        raise ConfigError(f"{source}, line 1: not JSON ({exc}){fix}") from None
    if not isinstance(header, dict) or header.get(_FORMAT) != _VERSION:
        raise ConfigError(f"{source}, line 1: not the header of an agenteval result journal (version {_VERSION}){fix}")
    runs: dict[tuple[str, int], EvalCaseResult] = {}
    for number, line in enumerate(complete[1:], start=2):
        if line.strip():
            try:
                case = parse_json(line, EvalCaseResult, f"{source}, line {number}")
            except ConfigError as exc:
                raise ConfigError(f"{exc}{fix}") from None
            runs[(case.eval_id, case.run_id)] = case
    cases = list(runs.values())
    provenance = None
    if isinstance(header.get("provenance"), dict):
        recorded = parse_json(json.dumps(header["provenance"]), Provenance, f"{source}, line 1 (provenance)")
        provenance = recorded.model_copy(update={"partial": True, "derived_from": _STOPPED})
    result_id = str(header.get("evalSetResultId", ""))
    return EvalSetResult(
        eval_set_result_id=result_id,
        eval_set_result_name=result_id + _PARTIAL_NAME,
        eval_set_id=str(header.get("evalSetId", "")),
        eval_case_results=cases,
        summary=EvalSetResultSummary(provenance=provenance) if provenance is not None else None,
    )
