"""The inter-process lock the local stores hold around every change to their files."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agenteval._util.files import ensure_inside
from agenteval.errors import StorageError

__all__ = ["LOCK_DIR", "LOCK_FILE", "directory_lock", "lock_file"]

LOCK_DIR = ".agenteval-locks"
"""Directory under a store's base directory that holds the lock files."""

LOCK_FILE = "dir.lock"
"""Name of the lock file of one data directory, inside its mirror under :data:`LOCK_DIR`."""

if sys.platform == "win32":
    import errno
    import msvcrt

    def _acquire(fd: int) -> None:
        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
                return
            except OSError as exc:
                # LK_LOCK gives up after about ten seconds; keep waiting, as flock does.
                if exc.errno != errno.EDEADLOCK:
                    raise

    def _release(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _acquire(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _release(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


def lock_file(base_dir: Path, path: Path) -> Path:
    """Return the lock file that guards the directory holding ``path``.

    It is ``<base_dir>/.agenteval-locks/<that directory, relative to base_dir>/dir.lock``: apart
    from the data, so no locator lists it and no ``*.evalset.json`` glob finds it, and named after
    the directory as the file system resolves it, so two spellings of one directory (a symlink, a
    different case on a case-insensitive disk) share one lock.

    Raises:
        ConfigError: The directory or the lock file would be outside ``base_dir``.
    """
    directory = ensure_inside(base_dir, path.parent).resolve()
    mirror = base_dir / LOCK_DIR / directory.relative_to(base_dir.resolve())
    return ensure_inside(base_dir, mirror / LOCK_FILE)


@contextmanager
def directory_lock(base_dir: Path, path: Path) -> Iterator[None]:
    """Hold the exclusive lock of the directory holding ``path`` (a store's data file).

    Every read-modify-write of a local store's file runs inside this lock, so writers in other
    processes, and other store objects in this process, never lose each other's changes. It is an
    OS lock (``flock``, or ``msvcrt.locking`` on Windows) on :func:`lock_file`: the OS drops it
    when its holder dies, and with ``flock`` a waiter sleeps in the kernel rather than polling
    (``msvcrt.locking`` retries once a second). One lock per
    directory rather than per file keeps lock names short whatever the ids; an edit is brief, so
    the coarser grain costs little. Lock files stay after use: removing one could let a waiter
    that already opened it lock a file nobody else sees.

    This blocks the calling thread, so async code must call it from a worker thread. It is not
    reentrant: a thread holding it must not take it again.

    Raises:
        ConfigError: The lock file would be outside ``base_dir``.
        StorageError: The lock file could not be created or locked.
    """
    lock_path = lock_file(base_dir, path)
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StorageError(f"create lock file {lock_path}: {exc}") from exc
    try:
        try:
            _acquire(fd)
        except OSError as exc:
            raise StorageError(f"lock {lock_path}: {exc}") from exc
        try:
            yield
        finally:
            _release(fd)
    finally:
        os.close(fd)
