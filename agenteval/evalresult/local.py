"""An eval-result store that keeps one JSON file per result, in the reference framework's layout."""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import os
from pathlib import Path

from pydantic import TypeAdapter

from agenteval._util.files import ensure_inside, parse_json, read_data_file, write_atomic
from agenteval._util.name_checks import check_file_path, check_result, file_names
from agenteval.errors import ConfigError, NotFoundError, StorageError
from agenteval.evalresult._prepare import filled_result, result_json
from agenteval.evalresult.journal import JOURNAL_SUFFIX, ResultJournal, journal_result_id, read_journal
from agenteval.evalresult.models import EvalSetResult
from agenteval.evalresult.provenance import Provenance
from agenteval.storage import Locator, SuffixLocator

__all__ = ["RESULT_FILE_SUFFIX", "LocalEvalResultManager", "load_result_file"]

RESULT_FILE_SUFFIX = ".evalset_result.json"
"""File-name suffix of a result file in the default layout."""

_WHAT = "eval set result"
_LEGACY_TEXT: TypeAdapter[str] = TypeAdapter(str)
_ALIASES = {name: field.alias or name for name, field in EvalSetResult.model_fields.items()}


class LocalEvalResultManager:
    """Keeps each eval-set result in its own JSON file under a base directory.

    The default layout is the reference framework's,
    ``<base_dir>/<app>/<id>.evalset_result.json``, so both read each other's files. App names and
    ids that could leave the base directory are rejected, and every write is atomic.

    While an evaluation runs, its finished case results go to a journal beside the file it will
    write (``<id>.evalset_result.json.journal``, see :mod:`agenteval.evalresult.journal`), removed
    once the result is saved. A journal a killed process left is a partial result: :meth:`get` and
    :meth:`list` show it under its id, so ``ev.evaluate(..., resume=<id>)`` carries the evaluation on.

    Args:
        base_dir: Directory holding one sub-directory per app; created on the first save.
        locator: Where files go; defaults to ``SuffixLocator(".evalset_result.json")``.
    """

    def __init__(self, base_dir: str | os.PathLike[str], *, locator: Locator | None = None) -> None:
        self._base_dir = Path(base_dir)
        self._locator: Locator = locator if locator is not None else SuffixLocator(RESULT_FILE_SUFFIX)

    @property
    def base_dir(self) -> Path:
        """The directory the results live in."""
        return self._base_dir

    @property
    def locator(self) -> Locator:
        """The locator that maps (app, id) to a file."""
        return self._locator

    @file_names
    async def save(self, app_name: str, result: EvalSetResult | None) -> str:
        """Write a result to its file, replacing any previous version, and return its id.

        Args:
            app_name: The app the result belongs to.
            result: The result; a missing id, name or creation time is filled in on a copy.

        Returns:
            The result id.

        Raises:
            ConfigError: A bad argument, an app name or id unfit for a file name, or a result that
                cannot be serialised (``clone result: ...``).
            StorageError: The file could not be written; any previous version is intact.
        """
        prepared = filled_result(app_name, check_result(result))
        self.check_new_result_id(app_name, prepared.eval_set_result_id)
        # Serialised on the caller's task, so the file holds the object as it was at the call.
        text = result_json(prepared, indent=2)
        await asyncio.to_thread(self._write, app_name, prepared.eval_set_result_id, text)
        return prepared.eval_set_result_id

    def open_journal(
        self, app_name: str, result_id: str, *, eval_set_id: str, provenance: Provenance | None
    ) -> ResultJournal:
        """Start the journal of an evaluation that will save its result under ``result_id``.

        The evaluator calls this before any case runs and appends each finished case run; saving the
        result removes the journal.

        Raises:
            ConfigError: The app name or id cannot name a file here.
            StorageError: The journal could not be created.
        """
        self.check_new_result_id(app_name, result_id)
        return ResultJournal(
            self._journal_path(app_name, result_id),
            app_name=app_name,
            result_id=result_id,
            eval_set_id=eval_set_id,
            provenance=provenance,
        )

    def check_new_result_id(self, app_name: str, result_id: str) -> None:
        """Refuse a result id this store could not save a result under, before anything runs or is written.

        Its file name (the id and ``.evalset_result.json`` in the default layout) must fit the
        file system's limit of :data:`~agenteval._util.name_checks.FILE_NAME_LIMIT` bytes, and the app name
        and id must be text that can be a file name. The evaluator calls this with the id it will
        save under before any agent runs; :meth:`save` applies the same check.

        Raises:
            ConfigError: The app name or id cannot be part of a file name, or the id makes the file
                name too long (the message names the id, its length, the limit, and how to shorten it).
        """
        file_names.check(app_name=app_name, eval_set_result_id=result_id)
        self._located(app_name, result_id)

    @file_names
    async def get(self, app_name: str, eval_set_result_id: str) -> EvalSetResult:
        """Read a result from its file, or the partial result a killed evaluation's journal holds.

        The file may hold the result object, or the legacy form: a JSON string holding the
        object's JSON. The stored ``evalSetResultId`` is returned as it is, even if it differs from
        the file name.

        Raises:
            ConfigError: A bad argument, or a malformed file (the message names it).
            NotFoundError: There is no such file.
            StorageError: The file could not be read.
        """
        return await asyncio.to_thread(self._read, app_name, eval_set_result_id)

    @file_names
    async def list(self, app_name: str) -> builtins.list[str]:
        """Return the app's result ids in file-name order (``[]`` when the app has none).

        A result only a journal holds (its evaluation was killed) is listed too.

        Raises:
            ConfigError: A bad app name.
            StorageError: The directory could not be read.
        """
        return await asyncio.to_thread(self._list, app_name)

    async def close(self) -> None:
        """Do nothing: no file stays open between calls."""

    def __repr__(self) -> str:
        return f"LocalEvalResultManager({str(self._base_dir)!r}, locator={self._locator!r})"

    def _located(self, app_name: str, eval_set_result_id: str) -> Path:
        """The file of a result, once its file names are known to fit (nothing on disk is looked at)."""
        path = self._locator.build(self._base_dir, app_name, eval_set_result_id)
        check_file_path(self._base_dir, path, app_name=app_name, eval_set_result_id=eval_set_result_id)
        return path

    def _path(self, app_name: str, eval_set_result_id: str) -> Path:
        return ensure_inside(self._base_dir, self._located(app_name, eval_set_result_id))

    def _journal_path(self, app_name: str, eval_set_result_id: str) -> Path:
        path = self._path(app_name, eval_set_result_id)
        return path.with_name(path.name + JOURNAL_SUFFIX)

    def _write(self, app_name: str, eval_set_result_id: str, text: str) -> None:
        write_atomic(self._path(app_name, eval_set_result_id), text)
        # The result is whole on disk: the journal of the evaluation that made it has nothing more to give.
        try:
            self._journal_path(app_name, eval_set_result_id).unlink(missing_ok=True)
        except OSError as exc:
            raise StorageError(f"remove the journal of saved result {eval_set_result_id}: {exc}") from exc

    def _read(self, app_name: str, eval_set_result_id: str) -> EvalSetResult:
        path = self._path(app_name, eval_set_result_id)
        journal = path.with_name(path.name + JOURNAL_SUFFIX)
        # Saving a result removes its journal: one still here is of an evaluation that ran after the file was written.
        try:
            saved = load_result_file(path)
        except NotFoundError as exc:
            if journal.is_file():
                return read_journal(journal)
            raise NotFoundError(f"eval set result {app_name}.{eval_set_result_id} not found: {exc}") from exc
        return read_journal(journal, saved) if journal.is_file() else saved

    def _list(self, app_name: str) -> builtins.list[str]:
        # A symlinked app directory must not expose names from outside the base directory.
        directory = self._base_dir / app_name
        ensure_inside(self._base_dir, directory)
        try:
            ids = self._locator.list(self._base_dir, app_name)
            journals = sorted(directory.glob(f"*{JOURNAL_SUFFIX}")) if directory.is_dir() else []
        except OSError as exc:
            raise StorageError(f"list eval set results for app {app_name}: {exc}") from exc
        known = set(ids)
        for journal in journals:
            result_id = journal_result_id(journal)
            if not result_id or result_id in known:
                continue
            with contextlib.suppress(ConfigError):  # a header naming an id that cannot be a file here
                if self._journal_path(app_name, result_id) == journal:
                    known.add(result_id)
                    ids.append(result_id)
        return ids


def load_result_file(path: Path) -> EvalSetResult:
    """Load a result file, in the current form or the legacy double-encoded one.

    Raises:
        NotFoundError: The file does not exist.
        ConfigError: The path is not a regular file (a FIFO, a directory), or the file is malformed
            (the message names it and the field), or holds another kind of document (an eval set,
            metrics) rather than an eval set result.
        StorageError: The file could not be read.
    """
    data = read_data_file(path, _WHAT)
    source = f"{_WHAT} file {path}"
    try:
        result = parse_json(data, EvalSetResult, source)
    except ConfigError as error:
        try:
            inner = parse_json(data, _LEGACY_TEXT, source)
        except ConfigError:
            # Not a legacy file either: the object's error says what is wrong, unless it is no object at all.
            if data.lstrip()[:1] == b"[":
                raise _not_a_result(path, "it is a JSON array, as a metrics file is") from None
            raise error from None
        result = parse_json(inner, EvalSetResult, f"legacy content of {source}")
    # Every other document of the reference parses as a result with unknown keys: tell them apart.
    keys = {_ALIASES.get(name, name) for name in result.model_fields_set}  # unknown keys are in it too
    if not {"evalSetResultId", "evalCaseResults"} & keys:
        if "evalCases" in keys:
            raise _not_a_result(path, "it has evalCases, so it is an eval set file, not a result")
        listed = ", ".join(sorted(keys)) or "none"
        raise _not_a_result(path, f"it has neither evalSetResultId nor evalCaseResults (its keys: {listed})")
    return result


def _not_a_result(path: Path, why: str) -> ConfigError:
    return ConfigError(
        f"{_WHAT} file {path} is not an eval set result: {why}; load a result file"
        f" (<app>/<id>{RESULT_FILE_SUFFIX}) written by an evaluation"
    )
