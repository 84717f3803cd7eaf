"""An eval-set store that keeps one JSON file per eval set."""

from __future__ import annotations

import asyncio
import builtins
import os
import threading
from pathlib import Path

from agenteval._util.file_lock import directory_lock
from agenteval._util.files import ensure_inside, load_json_file, warn_unknown_fields, write_atomic
from agenteval._util.name_checks import check_file_path, file_names
from agenteval.errors import ConfigError, NotFoundError, StorageError
from agenteval.evalset._case_edits import CaseEdit, StoredSet, appender, new_set, remover, replacer, whole_set
from agenteval.evalset.models import EvalCase, EvalSet
from agenteval.storage import Locator, SuffixLocator

__all__ = ["LocalEvalSetManager"]

_Stamp = tuple[int, int, int, int]


def _stamp(path: Path) -> _Stamp | None:
    """What tells one version of a file from another: device, inode, size, modification time."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


class LocalEvalSetManager:
    """An :class:`~agenteval.evalset.manager.EvalSetManager` over ``<base>/<app>/<id>.evalset.json`` files.

    Files are written with a 2-space indent, atomically; sets are listed in file-name order.
    Nothing is read or written outside ``base_dir``. Edits rewrite the file of the requested id,
    even when its ``evalSetId`` says otherwise (the reference writes to the file of the stored
    id): the file read is the file replaced, so an edit never creates or overwrites another file.

    Several processes, and several managers in one process, may share a directory: every change
    (create, delete, and each case edit's read-modify-write) holds an inter-process lock on the
    set's directory (see :mod:`agenteval._util.file_lock`; the lock files live under
    ``<base>/.agenteval-locks``), so none is lost. A manager keeps the last version of each set it
    read or wrote, and reuses it while the file's identity, size and modification time are
    unchanged, so adding a case costs one write, not a parse of every case already there (a
    rewrite in place that keeps the size within the file system's timestamp resolution would go
    unnoticed; the stores replace files, which gives them a new identity). Unknown fields are
    warned about whenever a file is read from disk. Everything returned is a copy.

    Args:
        base_dir: Directory holding one sub-directory per app.
        locator: Maps (app, id) to a file and lists an app's ids; defaults to the reference layout.
    """

    def __init__(self, base_dir: str | os.PathLike[str], *, locator: Locator | None = None) -> None:
        self._base_dir = Path(base_dir)
        self._locator: Locator = locator if locator is not None else SuffixLocator(".evalset.json")
        # Guards _cache, and orders this manager's own threads before they take the file lock.
        self._lock = threading.Lock()
        self._cache: dict[Path, tuple[_Stamp, StoredSet]] = {}

    def _path(self, app_name: str, eval_set_id: str) -> Path:
        path = self._locator.build(self._base_dir, app_name, eval_set_id)
        check_file_path(self._base_dir, path, app_name=app_name, eval_set_id=eval_set_id)
        return ensure_inside(self._base_dir, path)

    def _current(self, path: Path, app_name: str, eval_set_id: str) -> StoredSet:
        """The set in ``path``: the cached one if the file is unchanged, else read from disk (hold ``_lock``)."""
        # Stat before reading: if the file is replaced in between, the stamp is older than the
        # content, so the next call reads again rather than trusting a stale copy.
        stamp = _stamp(path)
        cached = self._cache.get(path)
        if cached is not None and stamp is not None and cached[0] == stamp:
            return cached[1]
        self._cache.pop(path, None)
        try:
            eval_set = load_json_file(path, EvalSet, "eval set")
        except NotFoundError as exc:
            raise NotFoundError(f"eval set {app_name}.{eval_set_id} not found: {exc}") from exc
        warn_unknown_fields(eval_set, f"eval set file {path}")
        stored = StoredSet(eval_set)
        if stamp is not None:
            self._cache[path] = (stamp, stored)
        return stored

    def _write(self, path: Path, stored: StoredSet) -> None:
        """Write the set to ``path`` and cache it (hold ``_lock`` and the directory lock)."""
        write_atomic(path, stored.eval_set.to_json())
        stamp = _stamp(path)
        if stamp is not None:
            self._cache[path] = (stamp, stored)

    def _edit(self, app_name: str, eval_set_id: str, change: CaseEdit) -> None:
        path = self._path(app_name, eval_set_id)
        with self._lock, directory_lock(self._base_dir, path):
            stored = self._current(path, app_name, eval_set_id)
            # The change is made in place: until the file holds it, the copy must not be reused.
            self._cache.pop(path, None)
            change(stored)
            self._write(path, stored)

    def _create(self, app_name: str, eval_set_id: str) -> EvalSet:
        path = self._path(app_name, eval_set_id)
        with self._lock, directory_lock(self._base_dir, path):
            if path.exists():
                raise ConfigError(f"eval set {app_name}.{eval_set_id} already exists")
            eval_set = new_set(eval_set_id)
            self._write(path, StoredSet(eval_set))
            return eval_set.deep_copy()

    def _save(self, app_name: str, header: EvalSet, texts: builtins.list[str]) -> EvalSet:
        path = self._path(app_name, header.eval_set_id)
        saved = header.model_copy(update={"eval_cases": [EvalCase.model_validate_json(text) for text in texts]})
        with self._lock, directory_lock(self._base_dir, path):
            self._write(path, StoredSet(saved))
            return saved.deep_copy()

    def _delete(self, app_name: str, eval_set_id: str) -> None:
        path = self._path(app_name, eval_set_id)
        with self._lock, directory_lock(self._base_dir, path):
            self._cache.pop(path, None)
            try:
                path.unlink()
            except FileNotFoundError as exc:
                raise NotFoundError(
                    f"eval set {app_name}.{eval_set_id} not found: eval set file {path} does not exist"
                ) from exc
            except OSError as exc:
                raise StorageError(f"remove eval set file {path}: {exc}") from exc

    def _list(self, app_name: str) -> builtins.list[str]:
        # A symlinked app directory must not expose names from outside the base directory.
        ensure_inside(self._base_dir, self._base_dir / app_name)
        try:
            return self._locator.list(self._base_dir, app_name)
        except OSError as exc:
            raise StorageError(f"list eval sets of app {app_name}: {exc}") from exc

    def _get(self, app_name: str, eval_set_id: str) -> EvalSet:
        path = self._path(app_name, eval_set_id)
        with self._lock:
            return self._current(path, app_name, eval_set_id).eval_set.deep_copy()

    def _get_case(self, app_name: str, eval_set_id: str, eval_case_id: str) -> EvalCase:
        path = self._path(app_name, eval_set_id)
        with self._lock:
            stored = self._current(path, app_name, eval_set_id)
            position = stored.position(f"{app_name}.{eval_set_id}", eval_case_id)
            return stored.eval_set.eval_cases[position].deep_copy()

    @file_names
    async def get(self, app_name: str, eval_set_id: str) -> EvalSet:
        """Read an eval set from its file."""
        return await asyncio.to_thread(self._get, app_name, eval_set_id)

    @file_names
    async def create(self, app_name: str, eval_set_id: str) -> EvalSet:
        """Write a new, empty eval set; an existing file is a :class:`ConfigError`."""
        return await asyncio.to_thread(self._create, app_name, eval_set_id)

    async def save(self, app_name: str, eval_set: EvalSet) -> EvalSet:
        """Write a whole eval set to its file, replacing the file if there is one."""
        header, texts = whole_set(app_name, eval_set)
        file_names.check(app_name=app_name, eval_set_id=header.eval_set_id)
        return await asyncio.to_thread(self._save, app_name, header, texts)

    @file_names
    async def list(self, app_name: str) -> builtins.list[str]:
        """Return the app's eval-set ids, as the locator lists them (file-name order by default).

        Raises:
            ConfigError: A bad app name, or an app directory that leads outside ``base_dir``.
            StorageError: The directory could not be read.
        """
        return await asyncio.to_thread(self._list, app_name)

    @file_names
    async def delete(self, app_name: str, eval_set_id: str) -> None:
        """Remove an eval set's file."""
        await asyncio.to_thread(self._delete, app_name, eval_set_id)

    @file_names
    async def get_case(self, app_name: str, eval_set_id: str, eval_case_id: str) -> EvalCase:
        """Read one case of an eval set."""
        return await asyncio.to_thread(self._get_case, app_name, eval_set_id, eval_case_id)

    @file_names
    async def add_case(self, app_name: str, eval_set_id: str, eval_case: EvalCase) -> None:
        """Append a case, filling missing creation times, and rewrite the file."""
        await asyncio.to_thread(self._edit, app_name, eval_set_id, appender(app_name, eval_set_id, eval_case))

    @file_names
    async def update_case(self, app_name: str, eval_set_id: str, eval_case: EvalCase) -> None:
        """Replace the case with the same id and rewrite the file."""
        await asyncio.to_thread(self._edit, app_name, eval_set_id, replacer(app_name, eval_set_id, eval_case))

    @file_names
    async def delete_case(self, app_name: str, eval_set_id: str, eval_case_id: str) -> None:
        """Remove a case and rewrite the file."""
        await asyncio.to_thread(self._edit, app_name, eval_set_id, remover(app_name, eval_set_id, eval_case_id))

    async def close(self) -> None:
        """Do nothing: no file stays open."""
