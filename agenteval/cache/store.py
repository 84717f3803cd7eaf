"""Where the cache keeps its entries: one SQLite database of JSON texts, by kind and key, bounded in size.

The database is ``cache.sqlite3`` in the cache's directory. It runs in WAL mode, so readers never wait for
a writer, and every write is one transaction: a process killed in the middle of one (SIGKILL, a kernel
restart) leaves the entries as they were before it, never a half-written one. A power cut may lose the
last writes (``synchronous = NORMAL``), never damage the file. Several processes and threads may use one
cache at once; each thread has its own connection, as sqlite3 connections must not cross threads, and a
child made by ``fork`` opens its own. WAL mode needs a local file system: not a network share.

A writer that puts entries in batches keeps them in a :class:`~agenteval.cache.journal.Journal` of its own
until they are in the database (:meth:`Cache.journal`): a process killed before it wrote a batch leaves the
journal, which the next :class:`Cache` opened on the directory folds into the database.

A cache this process cannot write (a read-only file system, a directory or file it has no write permission
for) is opened read-only: its entries are read as usual, and a write is a :class:`StorageError` that says
the cache is read-only and why.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final, NoReturn, Self

from agenteval.cache.journal import SUPPORTED as JOURNALS_SUPPORTED
from agenteval.cache.journal import Journal, fold_journals
from agenteval.errors import ConfigError, NotFoundError, StorageError

__all__ = ["DATABASE_FILE", "KINDS", "Cache", "CacheStats"]

KINDS: Final = ("inference", "score")
"""The kinds of entries: an agent's run of a case, and a metric's score of one."""

DATABASE_FILE: Final = "cache.sqlite3"
"""The database's file name inside the cache directory."""

_APPLICATION_ID: Final = 0x61657663
"""Marks the database as an agenteval cache (``aevc``), so a foreign SQLite file is never taken for one."""

_SCHEMA_VERSION: Final = 1

_BUSY_TIMEOUT_SECONDS: Final = 60.0
"""How long an operation waits for another process's write before giving up."""

_EVICT_TO: Final = 0.9
"""Eviction brings the total size down to this share of ``max_bytes``."""

_PAGE_SIZE: Final = 16384
"""Bytes per database page: several values of a few KiB fit in one (4 KiB pages would hold one each)."""

_JOURNAL_SIZE_LIMIT: Final = 64 << 20
"""The write-ahead log is cut back to this size once its pages are in the database."""

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS entries (
    kind TEXT NOT NULL CHECK (kind IN ('inference', 'score')),
    key TEXT NOT NULL,
    size INTEGER NOT NULL,
    created_at REAL NOT NULL,
    last_used REAL NOT NULL,
    PRIMARY KEY (kind, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entries_by_last_use ON entries (last_used);
CREATE TABLE IF NOT EXISTS entry_values (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (kind, key)
);
CREATE TABLE IF NOT EXISTS totals (kind TEXT PRIMARY KEY, entries INTEGER NOT NULL, bytes INTEGER NOT NULL);
INSERT OR IGNORE INTO totals VALUES ('inference', 0, 0), ('score', 0, 0);
"""
"""The tables. An entry's value is in a table of its own, so that marking an entry as used rewrites a few bytes,
not its value. ``totals`` holds the count and size of the entries of each kind, changed in the transaction that
changes them (rather than by triggers, which would make writing ten thousand entries three times slower).
"""

_PUT_VALUE: Final = "INSERT OR REPLACE INTO entry_values (kind, key, value) VALUES (?, ?, ?)"

_PUT_ENTRY: Final = """
INSERT INTO entries (kind, key, size, created_at, last_used) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (kind, key) DO UPDATE SET
    size = excluded.size, created_at = excluded.created_at, last_used = excluded.last_used
"""

_WANTED: Final = "kind = ? AND key IN (SELECT value FROM json_each(?))"
"""The entries of one kind whose keys are in a JSON list: one parameter, as SQLite caps their number."""

_IGNORED_FILES: Final = {".gitignore": "*\n", "CACHEDIR.TAG": "Signature: 8a477f597d28d172789f06886806bc55\n"}
"""Written into a new cache directory: git and backup tools then leave it out."""


@dataclass(frozen=True, slots=True)
class CacheStats:
    """What a cache holds, as :meth:`Cache.stats` found it."""

    path: Path
    """The cache's directory."""
    entries: Mapping[str, int]
    """Entries per kind (``"inference"``, ``"score"``)."""
    bytes: Mapping[str, int]
    """Size per kind: the UTF-8 bytes of the keys and values."""
    total_bytes: int
    """Size of all entries; eviction keeps it at most :attr:`max_bytes`."""
    max_bytes: int
    """The bound the cache was opened with."""


class Cache:
    """A persistent store of JSON texts by kind and key, safe to share between processes and threads.

    Entries are of two kinds, ``"inference"`` and ``"score"``; each maps a key to a value, both
    strings (the value is JSON text its caller produced; it is stored as it is). An entry also
    records its size, when it was written and when it was last read or written.

    Eviction: after a write that takes the size of all entries (UTF-8 bytes of keys and values)
    over ``max_bytes``, the least recently used entries, of either kind, are deleted until the size
    is at most 90% of ``max_bytes``. A single value larger than that is therefore not kept. The
    database file is somewhat larger than the entries (SQLite's pages and index) and gives back
    the space eviction and :meth:`clear` free.

    The cache only holds what can be computed again: when its file is damaged, delete its directory.

    A cache this process cannot write (a read-only file system, no write permission) is opened read-only
    (:attr:`read_only` says why): :meth:`get` and :meth:`stats` work, without marking entries as used, and
    :meth:`put` and :meth:`clear` are a :class:`~agenteval.errors.StorageError` saying so. Reading a cache
    that does not exist yet, and cannot be created here, finds nothing; writing to it says why it cannot
    be created.

    A cache opened on a directory whose database exists, or first read or written, takes in the entries
    that writers killed before they put them left in their journals (:meth:`journal`); a read-only one
    does not.

    The directory (with its parents) and the database are created when entries are first read or
    written, as an evaluation with ``cache=`` does, not when the object is made: :meth:`stats` and
    :meth:`clear` of a directory that holds no cache (a misspelt path) are a
    :class:`~agenteval.errors.NotFoundError` and create nothing.

    Args:
        path: The cache's directory.
        max_bytes: The bound on the size of all entries (default 1 GiB).

    Raises:
        ConfigError: ``path`` is a file, or ``max_bytes`` is not a positive integer.
        StorageError: The directory holds a database that is not an agenteval cache (damaged, or
            another program's file); the message says to delete the directory.

    Example::

        with Cache(".agenteval-cache") as cache:
            cache.put("score", key, '{"score": 1.0}')
            cache.get("score", key)            # '{"score": 1.0}'
            cache.stats().entries["score"]     # 1
    """

    def __init__(self, path: str | os.PathLike[str], *, max_bytes: int = 1 << 30) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
            raise ConfigError(f"Cache(max_bytes={max_bytes!r}): give a positive number of bytes, e.g. 1 << 30")
        self._path = Path(path).absolute()
        self._file = self._path / DATABASE_FILE
        self._max_bytes = max_bytes
        if self._path.exists() and not self._path.is_dir():
            raise ConfigError(
                f"Cache({str(self._path)!r}): that is a file; give a directory (it is created if missing)"
            )
        self._access = _Access()
        self._connections = _ThreadConnections(functools.partial(_connect, self._file, self._access))
        self._closed = False
        self._made = False
        self._making = threading.Lock()
        weakref.finalize(self, self._connections.close)
        if self._file.exists():
            # Opened now so that a damaged or foreign file is reported here rather than at the first use.
            self._connection()

    @property
    def path(self) -> Path:
        """The cache's directory."""
        return self._path

    @property
    def max_bytes(self) -> int:
        """The bound on the size of all entries."""
        return self._max_bytes

    @property
    def read_only(self) -> str | None:
        """Why the cache is opened read-only (``"it is on a read-only file system"``), or ``None``.

        Known once the cache was first opened: when the object is made, if its database exists, else at the
        first read or write.
        """
        return self._access.read_only

    def get(self, kind: str, key: str) -> str | None:
        """The value stored under ``key``, or ``None``; marks the entry as just used.

        Args:
            kind: ``"inference"`` or ``"score"``.
            key: The entry's key.

        Returns:
            The value as it was put, or ``None`` when there is no such entry.

        Raises:
            ConfigError: An unknown kind.
            StorageError: The database could not be read or written (the message says why).
        """
        return self.get_many(kind, [key]).get(key)

    def get_many(self, kind: str, keys: Iterable[str]) -> dict[str, str]:
        """The values stored under ``keys``, in one query; marks those entries as just used.

        Args:
            kind: ``"inference"`` or ``"score"``.
            keys: The keys to look up, as many as needed.

        Returns:
            Key to value, for the keys that have an entry (the others are left out).

        Raises:
            ConfigError: An unknown kind, or a key that is not a string.
            StorageError: The database could not be read or written.
        """
        _check_kind(kind)
        wanted = list(keys)
        _check_strings("key", wanted)
        if not wanted:
            return {}
        keys_json = json.dumps(wanted, ensure_ascii=False)
        try:
            db = self._connection()
        except StorageError:
            if self._closed or self._file.exists():
                raise
            # No cache here, and none can be made (a read-only file system): nothing to read. A write says why.
            return {}
        select = f"SELECT key, value FROM entry_values WHERE {_WANTED}"
        if self._access.read_only is not None:
            with self._errors_as_storage_errors():
                return dict(db.execute(select, (kind, keys_json)).fetchall())
        with self._transaction() as db:
            db.execute(f"UPDATE entries SET last_used = ? WHERE {_WANTED}", (time.time(), kind, keys_json))
            rows = db.execute(select, (kind, keys_json)).fetchall()
        return dict(rows)

    def put(self, kind: str, key: str, value: str) -> None:
        """Store ``value`` under ``key``, replacing any entry there, then evict if the cache is over its bound.

        Args:
            kind: ``"inference"`` or ``"score"``.
            key: The entry's key.
            value: JSON text (stored as it is).

        Raises:
            ConfigError: An unknown kind, or a key or value that is not a string.
            StorageError: The database could not be written; the cache is as it was before the call.
        """
        self.put_many(kind, {key: value})

    def put_many(self, kind: str, items: Mapping[str, str]) -> None:
        """Store several entries in one transaction (all or none), then evict if the cache is over its bound.

        Args:
            kind: ``"inference"`` or ``"score"``.
            items: Key to value (JSON text, stored as it is).

        Raises:
            ConfigError: An unknown kind, or a key or value that is not a string.
            StorageError: The database could not be written; the cache is as it was before the call.
        """
        _check_kind(kind)
        _check_strings("key", items.keys())
        _check_strings("value (JSON text)", items.values())
        if not items:
            return
        with self._transaction() as db:
            _put(db, kind, items)
            evicted = _evict_over(db, self._max_bytes)
        if evicted:
            self._give_back_space(db)

    def journal(self) -> Journal | None:
        """A new write-ahead journal in the cache's directory, for a writer that puts entries in batches.

        The writer appends each entry to it as soon as it has it, and deletes it (:meth:`Journal.discard`)
        once :meth:`put_many` has written them: a process killed in between leaves the journal, and the next
        :class:`Cache` opened on the directory writes its entries to the database. Each writer has a journal
        of its own, locked while it is open, so processes sharing a cache never fold each other's.

        Returns:
            The journal; ``None`` on Windows, which has no ``flock`` (a killed process loses its batch).

        Raises:
            StorageError: The cache cannot be written (it is read-only, say), or the journal not created.
        """
        with self._errors_as_storage_errors():
            self._connection()
            self._check_writable()
        return Journal(self._path) if JOURNALS_SUPPORTED else None

    def stats(self) -> CacheStats:
        """How many entries of each kind the cache holds, and their size.

        Raises:
            NotFoundError: The directory holds no cache (it is created by an evaluation with ``cache=``).
            StorageError: The database could not be read.
        """
        with self._errors_as_storage_errors():
            rows = self._existing_connection().execute("SELECT kind, entries, bytes FROM totals").fetchall()
        return CacheStats(
            path=self._path,
            entries={kind: entries for kind, entries, _ in rows},
            bytes={kind: size for kind, _, size in rows},
            total_bytes=sum(size for _, _, size in rows),
            max_bytes=self._max_bytes,
        )

    def clear(self, kind: str | None = None) -> None:
        """Delete every entry, or every entry of one kind, and give the space back to the file system.

        Args:
            kind: ``"inference"`` or ``"score"``; ``None`` for both.

        Raises:
            ConfigError: An unknown kind.
            NotFoundError: The directory holds no cache (it is created by an evaluation with ``cache=``).
            StorageError: The database could not be written.
        """
        if kind is not None:
            _check_kind(kind)
        kinds = KINDS if kind is None else (kind,)
        self._existing_connection()
        with self._transaction() as db:
            for cleared in kinds:
                for table in ("entries", "entry_values"):
                    db.execute(f"DELETE FROM {table} WHERE kind = ?", (cleared,))
                db.execute("UPDATE totals SET entries = 0, bytes = 0 WHERE kind = ?", (cleared,))
        self._give_back_space(db)

    def close(self) -> None:
        """Close the cache's connections; using it afterwards is a :class:`~agenteval.errors.StorageError`.

        Call it when no other thread is using the cache. Closing twice is harmless.
        """
        self._closed = True
        self._connections.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        where = str(self._path)
        if self._closed:
            return f"Cache({where!r}, closed)"
        try:
            stats = self.stats()
        except NotFoundError:
            return f"Cache({where!r}, no cache there yet)"
        except StorageError:
            return f"Cache({where!r}, unreadable)"
        count = sum(stats.entries.values())
        entries = "1 entry" if count == 1 else f"{count} entries"
        size = f"{_readable_size(stats.total_bytes)} of {_readable_size(self._max_bytes)}"
        read_only = ", read-only" if self.read_only is not None else ""
        return f"Cache({where!r}, {entries}, {size}{read_only})"

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection; the cache's directory and database are created on first use."""
        if self._closed:
            raise StorageError(f"the cache at {self._path} is closed; open it again with Cache({str(self._path)!r})")
        if not self._made:
            with self._making:
                if not self._made:
                    _make_directory(self._path)
                    # The first connection creates the database: threads that start together wait for it,
                    # and for the entries of killed writers' journals.
                    db = self._connections.get()
                    if self._access.read_only is None:
                        with self._errors_as_storage_errors():
                            fold_journals(self._path, KINDS, functools.partial(self._fold, db))
                    self._made = True
        return self._connections.get()

    def _existing_connection(self) -> sqlite3.Connection:
        """:meth:`_connection`, for what only looks at a cache: a directory that holds none is an error."""
        if not self._closed and not self._file.exists():
            raise NotFoundError(
                f"no cache at {self._path}: it holds no agenteval cache ({DATABASE_FILE}). Check the path; a cache"
                f" is created by an evaluation with cache=, e.g. ev.evaluate(..., cache={str(self._path)!r})"
            )
        return self._connection()

    def _fold(self, db: sqlite3.Connection, entries: Mapping[str, Mapping[str, str]]) -> None:
        """Write the entries of killed writers' journals, by kind, in one transaction.

        On ``db``: this runs while the first connection is made, which :meth:`_connection` waits for.
        """
        with _immediate(db):
            for kind, items in entries.items():
                _put(db, kind, items)
            evicted = _evict_over(db, self._max_bytes)
        if evicted:
            self._give_back_space(db)

    def _check_writable(self) -> None:
        if self._access.read_only is not None:
            raise StorageError(
                f"the cache {self._path} is read-only ({self._access.read_only}): its entries are read, but"
                " nothing can be written to it; give cache= a directory this process can write, or make this"
                " one writable"
            )

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: taken at once (so the busy timeout applies), committed whole or not at all."""
        with self._errors_as_storage_errors():
            db = self._connection()
            self._check_writable()
            with _immediate(db):
                yield db

    @contextmanager
    def _errors_as_storage_errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            _raise_storage_error(self._file, exc)

    def _give_back_space(self, db: sqlite3.Connection) -> None:
        with self._errors_as_storage_errors():
            # execute() would step the pragma once, which frees one page; a script runs it to the end.
            db.executescript("PRAGMA incremental_vacuum;")
            # The file shrinks when the log is copied into it; PASSIVE never waits for other processes.
            db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


class _Access:
    """Whether the cache's database is opened read-only, and why; shared by its connections."""

    __slots__ = ("read_only",)

    def __init__(self) -> None:
        self.read_only: str | None = None


class _ThreadConnections:
    """One connection per thread of this process, all to one database; closed together.

    Holds no reference to its :class:`Cache`, so that a cache nobody closed is still collected, and
    its connections closed by the finalizer.
    """

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect
        self._lock = threading.Lock()
        self._by_thread: dict[int, sqlite3.Connection] = {}
        self._pid = os.getpid()

    def get(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use."""
        if os.getpid() != self._pid:
            self._forget_parents_connections()
        db = self._by_thread.get(threading.get_ident())
        if db is None:
            db = self._open()
        return db

    def close(self) -> None:
        """Close every connection (of this process: a forked child never touches its parent's)."""
        with self._lock:
            connections = list(self._by_thread.values()) if os.getpid() == self._pid else []
            self._by_thread.clear()
        for db in connections:
            db.close()

    def _open(self) -> sqlite3.Connection:
        db = self._connect()
        with self._lock:
            # A thread that ended leaves its connection behind: closed here rather than kept forever.
            alive = {thread.ident for thread in threading.enumerate()}
            for ident in [ident for ident in self._by_thread if ident not in alive]:
                self._by_thread.pop(ident).close()
            # current_thread() registers a thread Python did not start, so that enumerate() lists it above.
            self._by_thread[threading.current_thread().ident or threading.get_ident()] = db
        return db

    def _forget_parents_connections(self) -> None:
        # SQLite's connections must not be used, nor closed, in a child made by fork: the parent's stay
        # referenced so that they are never finalized here.
        with self._lock:
            _FORKED_AWAY.extend(self._by_thread.values())
            self._by_thread = {}
            self._pid = os.getpid()


_FORKED_AWAY: list[sqlite3.Connection] = []


def _connect(file: Path, access: _Access) -> sqlite3.Connection:
    """A connection to the cache database at ``file``, made ready (created when new, checked when not).

    Read-only when ``access`` says so, when this process cannot write the database (the reason is kept in
    ``access``), or when SQLite finds it cannot.
    """
    if access.read_only is None and file.exists():
        access.read_only = _why_read_only(file)
    if access.read_only is not None:
        return _connect_read_only(file, access.read_only)
    try:
        return _connect_read_write(file)
    except sqlite3.Error as exc:
        if not (file.exists() and _refused_writing(exc)):
            _raise_storage_error(file, exc)
        error = exc
    # Allowed by the file system's permissions, refused all the same (an ACL, a mount made read-only).
    access.read_only = f"SQLite could not open it for writing: {error}"
    return _connect_read_only(file, access.read_only)


def _connect_read_write(file: Path) -> sqlite3.Connection:
    # check_same_thread=False only lets close() reach every thread's connection; each is used by one thread.
    db = sqlite3.connect(file, timeout=_BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False)
    try:
        if not _holds_cache(db, file):
            _create_schema(db)
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute(f"PRAGMA journal_size_limit = {_JOURNAL_SIZE_LIMIT}").fetchall()
    except BaseException:
        db.close()
        raise
    return db


_READ_ONLY_MODES: Final = ("mode=ro", "mode=ro&immutable=1")
"""How a database this process cannot write is opened: read-only, which sees other processes' writes, then,
where SQLite cannot make the shared-memory file that needs (a read-only directory), as a file that does not
change while it is read."""


def _connect_read_only(file: Path, reason: str) -> sqlite3.Connection:
    """A read-only connection to the cache database at ``file``, which this process cannot write for ``reason``."""
    error: sqlite3.Error | None = None
    for mode in _READ_ONLY_MODES:
        try:
            db = sqlite3.connect(
                f"{file.as_uri()}?{mode}",
                uri=True,
                timeout=_BUSY_TIMEOUT_SECONDS,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            error = exc
            continue
        try:
            if not _holds_cache(db, file):
                raise StorageError(f"{file} is empty, and read-only ({reason}): it holds no cache to read")
        except sqlite3.Error as exc:
            db.close()
            error = exc
            continue
        except BaseException:
            db.close()
            raise
        return db
    raise StorageError(
        f"the cache {file} is read-only ({reason}), and could not be opened for reading either: {error}"
    ) from error


def _why_read_only(file: Path) -> str | None:
    """Why this process cannot write the database ``file`` (or create it), as the file system says; else ``None``.

    SQLite writes the file and, in WAL mode, its ``-wal`` and ``-shm`` files beside it, which it creates
    in the directory when they are missing.
    """
    directory = file.parent
    with suppress(OSError):
        if os.statvfs(directory).f_flag & os.ST_RDONLY:
            return "it is on a read-only file system"
    if file.exists():
        if not os.access(file, os.W_OK):
            return f"this process may not write the file {file}"
        if all(os.access(f"{file}{beside}", os.W_OK) for beside in ("-wal", "-shm")):
            return None
    if not os.access(directory, os.W_OK):
        return f"this process may not write to the directory {directory}"
    return None


def _refused_writing(exc: sqlite3.Error) -> bool:
    """Whether SQLite failed because it may not write (or create its files), rather than for another reason."""
    return getattr(exc, "sqlite_errorname", "").startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM"))


def _holds_cache(db: sqlite3.Connection, file: Path) -> bool:
    """Whether the database holds the cache's tables (``False``: it is new and empty).

    Raises:
        StorageError: The file is another program's database, or a newer agenteval's cache.
    """
    # One statement, so one snapshot: read apart, another process creating the cache could commit between
    # them, and its tables would be seen without its application id (another program's database).
    application_id, tables, version = db.execute(
        "SELECT (SELECT * FROM pragma_application_id()), (SELECT count(*) FROM sqlite_master),"
        " (SELECT * FROM pragma_user_version())"
    ).fetchone()
    if application_id == 0 and tables == 0:
        return False
    if application_id != _APPLICATION_ID:
        raise StorageError(f"{file} is not an agenteval cache (it is another program's SQLite database); {_fix(file)}")
    if version > _SCHEMA_VERSION:
        raise StorageError(
            f"{file} is a cache written by a newer agenteval (format {version}, this one reads {_SCHEMA_VERSION}): "
            f"upgrade agenteval, or delete the directory {file.parent} to start an empty cache"
        )
    return True


def _create_schema(db: sqlite3.Connection) -> None:
    """Create the tables in a new database; safe when several processes do it at once."""
    # These must be set before the first table exists; a second process finds them already set.
    db.execute(f"PRAGMA page_size = {_PAGE_SIZE}")
    db.execute("PRAGMA auto_vacuum = INCREMENTAL")
    db.execute("PRAGMA journal_mode = WAL").fetchall()
    try:
        db.executescript(
            f"BEGIN IMMEDIATE; {_SCHEMA}; PRAGMA application_id = {_APPLICATION_ID}; "
            f"PRAGMA user_version = {_SCHEMA_VERSION}; COMMIT;"
        )
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


_FIX: Final = "delete the directory {directory} (the cache only holds what can be computed again) and run again"


def _raise_storage_error(file: Path, exc: sqlite3.Error) -> NoReturn:
    """Raise the :class:`StorageError` that says what went wrong with the cache database, and what to do."""
    name = getattr(exc, "sqlite_errorname", "")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        message = (
            f"the cache {file} stayed locked by another process for over {_BUSY_TIMEOUT_SECONDS:g} s ({exc}); "
            "try again when that process is done"
        )
    elif name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        message = f"{file} is not a readable agenteval cache ({exc}): it is damaged, or not a cache; {_fix(file)}"
    elif _refused_writing(exc) and (reason := _why_read_only(file)) is not None:
        message = f"the cache {file} cannot be written ({exc}): {reason}"
    else:
        message = f"the cache {file} failed: {exc}"
    raise StorageError(message) from exc


def _fix(file: Path) -> str:
    return _FIX.format(directory=file.parent)


def _make_directory(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
        for name, text in _IGNORED_FILES.items():
            marker = path / name
            if not marker.exists():
                marker.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise StorageError(f"cannot create the cache directory {path}: {exc}") from exc


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ConfigError(f"unknown cache kind {kind!r}; the kinds are {', '.join(map(repr, KINDS))}")


def _check_strings(what: str, values: Iterable[object]) -> None:
    for value in values:
        if not isinstance(value, str):
            raise ConfigError(f"a cache entry's {what} must be a string, got {type(value).__name__}: {value!r:.80}")


@contextmanager
def _immediate(db: sqlite3.Connection) -> Iterator[None]:
    """A write transaction on ``db``: taken at once (so the busy timeout applies), committed whole or not at all."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")


def _put(db: sqlite3.Connection, kind: str, items: Mapping[str, str]) -> None:
    """Store ``items`` of ``kind`` in the transaction on ``db``, keeping the totals right."""
    now = time.time()
    entries = [(kind, key, _size(key, value), now, now) for key, value in items.items()]
    replaced, replaced_bytes = db.execute(
        f"SELECT count(*), coalesce(sum(size), 0) FROM entries WHERE {_WANTED}", (kind, json.dumps(list(items)))
    ).fetchone()
    db.executemany(_PUT_VALUE, [(kind, key, value) for key, value in items.items()])
    db.executemany(_PUT_ENTRY, entries)
    added_bytes = sum(entry[2] for entry in entries)
    _add_to_totals(db, kind, len(entries) - replaced, added_bytes - replaced_bytes)


def _size(key: str, value: str) -> int:
    return len(key.encode()) + len(value.encode())


def _add_to_totals(db: sqlite3.Connection, kind: str, entries: int, size: int) -> None:
    db.execute("UPDATE totals SET entries = entries + ?, bytes = bytes + ? WHERE kind = ?", (entries, size, kind))


def _evict_over(db: sqlite3.Connection, max_bytes: int) -> bool:
    """Delete the least recently used entries when the total is over ``max_bytes``; whether any were."""
    total = db.execute("SELECT sum(bytes) FROM totals").fetchone()[0]
    if total <= max_bytes:
        return False
    to_free = total - int(max_bytes * _EVICT_TO)
    victims: list[tuple[str, str]] = []
    freed = dict.fromkeys(KINDS, 0)
    oldest_first = db.execute("SELECT kind, key, size FROM entries ORDER BY last_used, kind, key")
    while to_free > 0 and (batch := oldest_first.fetchmany(512)):
        for kind, key, size in batch:
            victims.append((kind, key))
            freed[kind] += size
            to_free -= size
            if to_free <= 0:
                break
    oldest_first.close()
    for table in ("entries", "entry_values"):
        db.executemany(f"DELETE FROM {table} WHERE kind = ? AND key = ?", victims)
    for kind, size in freed.items():
        _add_to_totals(db, kind, -sum(1 for victim in victims if victim[0] == kind), -size)
    return True


def _readable_size(size: int) -> str:
    """``512 bytes``, ``1.5 KiB``, ``1.0 GiB``."""
    units = ("bytes", "KiB", "MiB", "GiB", "TiB")
    power = min((size.bit_length() - 1) // 10, len(units) - 1) if size > 0 else 0
    return f"{size} bytes" if power == 0 else f"{size / 1024**power:.1f} {units[power]}"
