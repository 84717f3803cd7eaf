"""A running evaluation's finished case results, on disk as they finish: what a killed process leaves behind.

The local result store keeps, beside each result file it will write, an append-only journal
(``<id>.evalset_result.journal`` next to ``<id>.evalset_result.json``): a first line describing the
evaluation (app, eval set, result id, provenance), then one line of compact JSON per finished case
run. Each line reaches the file with one ``write`` call on a file opened for appending, so a process
killed outright (SIGKILL, the OOM killer, a restarted notebook kernel) loses only the cases still in
flight: the kernel keeps what was written. A power cut may lose more (lines are not synced one by
one). The final result file is written, as always, atomically; the journal is then removed.

A journal left behind is read as the partial result it holds (:func:`read_journal`): the store's
``get`` and ``list`` show it under its result id, so ``ev.evaluate(..., resume=<id>)`` carries the
evaluation on and ``EvaluationReport.load`` opens it. A line cut short by the kill is ignored.
"""

from __future__ import annotations

import contextlib
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

__all__ = ["JOURNAL_SUFFIX", "ResultJournal", "journal_result_id", "read_journal"]

JOURNAL_SUFFIX: Final = ".journal"
"""Added to a result file's name to name its journal."""

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
        path: The journal file; created (with its directory). A journal of the same result already there
            (an evaluation of it was killed, and this one resumes it) is kept and appended to.
        app_name: The app evaluated.
        result_id: The id the result is saved under.
        eval_set_id: The eval set evaluated.
        provenance: What produced the evaluation (recorded as partial in the journal).

    Raises:
        StorageError: The file could not be created.
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
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            kept = _header_result_id(path) == result_id
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (0 if kept else os.O_TRUNC)
            self._fd: int | None = os.open(path, flags, 0o644)
            if not kept:
                self._write(json.dumps(header, ensure_ascii=False))
        except OSError as exc:
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
        """Close and remove the journal: its result was saved, or the evaluation kept what finished another way."""
        self.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def _write(self, text: str) -> None:
        data = (text + "\n").encode("utf-8", "surrogatepass")
        with self._lock:
            if self._fd is None:
                return
            # One write: a line is in the file whole or, if the process dies inside the call, cut short.
            written = os.write(self._fd, data)
            while written < len(data):
                written += os.write(self._fd, data[written:])


def _header_result_id(path: Path) -> str:
    """The result id the header of the journal at ``path`` names (``""``: no journal, or not one)."""
    try:
        with path.open("rb") as file:
            header = json.loads(file.readline())
    except (OSError, ValueError):
        return ""
    if not isinstance(header, dict) or header.get(_FORMAT) != _VERSION:
        return ""
    result_id = header.get("evalSetResultId")
    return result_id if isinstance(result_id, str) else ""


def journal_result_id(path: Path) -> str:
    """The result id the journal at ``path`` is of (``""`` when it is no readable journal)."""
    return _header_result_id(path)


def read_journal(path: Path, saved: EvalSetResult | None = None) -> EvalSetResult:
    """The partial result a journal holds: the case results that finished, under the evaluation's result id.

    Its provenance says it is partial, and why; a last line cut short by the end of the process is left out.
    A case run written twice (a resumed evaluation gives the runs it took over again) counts once, as last
    written.

    Args:
        path: The journal.
        saved: The result saved under the same id before (the partial result the journaled evaluation
            resumed): its case runs the journal does not hold are kept, in front, and its name and summary
            are the result's (it is still that partial result, with more cases finished).

    Raises:
        NotFoundError: The file does not exist.
        ConfigError: The file is not a result journal, or a line other than the last is damaged (the
            message names the file and the line).
        StorageError: The file could not be read.
    """
    source = f"{_WHAT} {path}"
    lines = read_data_file(path, _WHAT).split(b"\n")
    complete = lines[:-1]  # what follows the last newline was cut short (or is empty)
    if not complete:
        raise ConfigError(f"{source} is empty: it holds no header; delete it")
    try:
        header = json.loads(complete[0])
    except ValueError as exc:
        raise ConfigError(f"{source}, line 1: not JSON ({exc}); delete the file") from None
    if not isinstance(header, dict) or header.get(_FORMAT) != _VERSION:
        raise ConfigError(f"{source}, line 1: not the header of an agenteval result journal (version {_VERSION})")
    runs: dict[tuple[str, int], EvalCaseResult] = {}
    if saved is not None:
        runs.update(((case.eval_id, case.run_id), case) for case in saved.eval_case_results)
    for number, line in enumerate(complete[1:], start=2):
        if line.strip():
            case = parse_json(line, EvalCaseResult, f"{source}, line {number}")
            runs[(case.eval_id, case.run_id)] = case
    cases = list(runs.values())
    if saved is not None:
        return saved.model_copy(update={"eval_case_results": cases})
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
