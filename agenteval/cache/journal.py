"""The cache's write-ahead journal: new entries reach a file at once, and SQLite in batches.

Writing each entry to SQLite in a transaction of its own would cost more than most agents' turns, so a
writer (:class:`~agenteval.cache.reuse.WorkReuse`) batches them; without a journal, a process killed outright
(SIGKILL, the OOM killer) would lose the batch it had not written yet. A writer therefore first appends what
it keeps to a :class:`Journal` of its own, a file in the cache's directory: one line per call, written with
a single ``os.write`` to a file opened with ``O_APPEND``, with no buffer in this process. Once the write
returns the kernel holds the line, so a process killed after it loses nothing. When the batch is in SQLite,
the writer deletes its journal and starts a new one with its next entry.

The writer holds an exclusive ``flock`` on its journal while it is open, and the operating system drops it
when the process dies. When a :class:`~agenteval.cache.Cache` is opened, it folds the journals whose lock it
can take (their writer is gone) into SQLite, in one transaction, and deletes them (:func:`fold_journals`):
the next evaluation finds their entries. A line cut short by the kill (no newline at its end) is left out.

A journal guards against the process dying, not the machine: nothing is synced to the disk per entry, so a
power cut may lose the lines written in the seconds before it, as it may SQLite's last commits.

On Windows, which has no ``flock``, there is no journal (:data:`SUPPORTED`): a batch not yet in SQLite is
lost with its process.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import weakref
from collections.abc import Callable, Collection, Mapping
from contextlib import suppress
from json.encoder import encode_basestring_ascii as quoted
from pathlib import Path
from typing import Final

from agenteval.errors import StorageError

if sys.platform != "win32":
    import fcntl

__all__ = ["PREFIX", "SUFFIX", "SUPPORTED", "Journal", "fold_journals"]

SUPPORTED: Final = sys.platform != "win32"
"""Whether this system keeps journals (it needs ``flock``)."""

PREFIX: Final = "journal-"
SUFFIX: Final = ".jsonl"
"""A journal is ``journal-<pid>-<random>.jsonl`` in the cache's directory."""

_ATTEMPTS: Final = 100


class Journal:
    """One writer's journal in a cache's directory, locked until it is closed or its process ends.

    Args:
        directory: The cache's directory (it must exist).

    Raises:
        StorageError: The file could not be created or locked (the message names it).
    """

    def __init__(self, directory: Path) -> None:
        self._fd, self.path = _create(directory)
        # A journal dropped unclosed (its writer abandoned) is closed, and so unlocked, when collected.
        self._closer = weakref.finalize(self, os.close, self._fd)

    def append(self, kind: str, entries: Mapping[str, str]) -> None:
        """Add ``entries`` of ``kind`` (key to value) to the journal, in one write, before returning.

        Raises:
            StorageError: The write failed (a full disk, say), or the journal is closed.
        """
        if not self._closer.alive:
            # Its descriptor's number may belong to another file by now.
            raise StorageError(f"the cache's journal {self.path} is closed")
        # The JSON of [kind, entries], put together here: half the time of json.dumps. ASCII (a lone surrogate
        # is escaped, not an error), with no newline but the last byte.
        items = ",".join([f"{quoted(key)}:{quoted(value)}" for key, value in entries.items()])
        line = f"[{quoted(kind)},{{{items}}}]\n".encode("ascii")
        try:
            written = os.write(self._fd, line)
            # A regular file takes the whole line unless the disk is full: then the rest is tried, to say why.
            while written < len(line):
                written += os.write(self._fd, line[written:])
        except OSError as exc:
            raise StorageError(f"cannot write the cache's journal {self.path}: {exc}") from exc

    def discard(self) -> None:
        """Delete the journal and close it: the cache's database holds every entry it had."""
        with suppress(OSError):  # a file left behind is folded again by the next opener: no entry is lost
            self.path.unlink()
        self.close()

    def close(self) -> None:
        """Close the journal and keep its file, for the next :class:`~agenteval.cache.Cache` opened to fold."""
        self._closer()


def fold_journals(directory: Path, kinds: Collection[str], put: Callable[[dict[str, dict[str, str]]], None]) -> None:
    """Give ``put`` the entries in the journals of writers that are gone, by kind, then delete those journals.

    ``put`` is called once (when there is any entry); when it raises, the journals are kept and the error
    goes on. A journal whose writer still runs (its lock is held) is left alone, and so are lines of a kind
    not in ``kinds``, damaged lines, and a last line cut short.
    """
    if not SUPPORTED:
        return
    locked: list[tuple[int, Path]] = []
    try:
        entries: dict[str, dict[str, str]] = {}
        for path in sorted(directory.glob(f"{PREFIX}*{SUFFIX}")):
            fd = _lock_if_abandoned(path)
            if fd is None:
                continue
            locked.append((fd, path))
            with open(fd, "rb", closefd=False) as file:
                _read_lines(file.read(), kinds, entries)
        if any(entries.values()):
            put(entries)
        for _, path in locked:
            with suppress(FileNotFoundError):
                path.unlink()
    finally:
        for fd, _ in locked:
            os.close(fd)


def _create(directory: Path) -> tuple[int, Path]:
    """A new journal file in ``directory``, opened for appending and locked."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC
    for _ in range(_ATTEMPTS):
        path = directory / f"{PREFIX}{os.getpid()}-{secrets.token_hex(6)}{SUFFIX}"
        try:
            fd = os.open(path, flags, 0o644)
        except FileExistsError:
            continue
        except OSError as exc:
            raise StorageError(f"cannot create the cache's journal {path}: {exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # Another process folding journals may have locked the new, empty file first and deleted it.
            if os.fstat(fd).st_nlink > 0:
                return fd, path
        except BlockingIOError:
            pass
        except OSError as exc:
            os.close(fd)
            raise StorageError(f"cannot lock the cache's journal {path}: {exc}") from exc
        os.close(fd)
    raise StorageError(f"cannot create a journal in the cache directory {directory}: {_ATTEMPTS} attempts failed")


def _lock_if_abandoned(path: Path) -> int | None:
    """The journal at ``path`` opened and locked, when its writer is gone; ``None`` while it runs (or was folded)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(fd).st_nlink > 0:
            return fd
    except BlockingIOError:
        pass
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    return None


def _read_lines(data: bytes, kinds: Collection[str], entries: dict[str, dict[str, str]]) -> None:
    """Add the entries of a journal's ``data`` to ``entries``, later lines replacing earlier ones."""
    lines = data.split(b"\n")
    # What follows the last newline is a line the writer was killed while writing (or nothing).
    for line in lines[:-1]:
        try:
            kind, items = json.loads(line)
        except (ValueError, TypeError):
            continue
        if (
            isinstance(kind, str)
            and kind in kinds
            and isinstance(items, dict)
            and all(isinstance(value, str) for value in items.values())
        ):
            entries.setdefault(kind, {}).update(items)
