"""The inter-process lock of the local stores, and a helper to run store writers in processes."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path

import pytest

from agenteval._util.file_lock import LOCK_DIR, LOCK_FILE, directory_lock, lock_file
from agenteval.errors import ConfigError, StorageError

SPAWN = multiprocessing.get_context("spawn")


def _run_worker(
    worker: Callable[[int, Path], object],
    barrier: Barrier,
    results: multiprocessing.Queue[tuple[int, object]],
    index: int,
    base: Path,
) -> None:
    barrier.wait()  # start together, so the writers overlap
    try:
        outcome = worker(index, base)
    except Exception as exc:  # reported to the test rather than lost in a child's stderr
        outcome = f"worker {index} failed: {exc!r}"
    results.put((index, outcome))


def run_in_processes(worker: Callable[[int, Path], object], count: int, base: Path) -> list[object]:
    """Run ``worker(index, base)`` in ``count`` spawned processes at once; return the outcomes by index.

    ``worker`` must be a module-level function, so that a spawned process can import it.
    """
    barrier = SPAWN.Barrier(count)
    results: multiprocessing.Queue[tuple[int, object]] = SPAWN.Queue()
    processes = [
        SPAWN.Process(target=_run_worker, args=(worker, barrier, results, index, base)) for index in range(count)
    ]
    for process in processes:
        process.start()
    try:
        outcomes = [results.get(timeout=60) for _ in processes]
    finally:
        for process in processes:
            process.join(timeout=60)
    assert [process.exitcode for process in processes] == [0] * count
    return [outcome for _, outcome in sorted(outcomes, key=lambda item: item[0])]


def _hold_lock(base: Path, acquired: Event, release: Event) -> None:
    with directory_lock(base, base / "app" / "s.evalset.json"):
        acquired.set()
        release.wait(30)


def _lock_in_thread(base: Path, path: Path) -> threading.Event:
    """Take the lock in a new thread, which sets the returned event once it has it, then lets go."""
    acquired = threading.Event()

    def take() -> None:
        with directory_lock(base, path):
            acquired.set()

    threading.Thread(target=take, daemon=True).start()
    return acquired


def test_the_lock_file_mirrors_the_data_directory_under_the_base(tmp_path: Path) -> None:
    assert lock_file(tmp_path, tmp_path / "app" / "s.evalset.json") == tmp_path / LOCK_DIR / "app" / LOCK_FILE
    assert lock_file(tmp_path, tmp_path / "app--s.json") == tmp_path / LOCK_DIR / LOCK_FILE


def test_a_symlinked_directory_shares_its_targets_lock(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    assert lock_file(tmp_path, tmp_path / "alias" / "s.evalset.json") == tmp_path / LOCK_DIR / "real" / LOCK_FILE


def test_a_lock_directory_leading_outside_the_base_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    base = tmp_path / "base"
    base.mkdir()
    (base / LOCK_DIR).symlink_to(outside, target_is_directory=True)
    with pytest.raises(ConfigError, match="outside the base directory"), directory_lock(base, base / "app" / "s.json"):
        pass
    assert list(outside.iterdir()) == []


def test_a_lock_file_that_cannot_be_created_is_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / LOCK_DIR).write_text("not a directory")
    with pytest.raises(StorageError, match="create lock file"), directory_lock(tmp_path, tmp_path / "app" / "s.json"):
        pass


def test_another_thread_waits_for_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "app" / "s.evalset.json"
    with directory_lock(tmp_path, path):
        acquired = _lock_in_thread(tmp_path, path)
        assert not acquired.wait(0.2)
    assert acquired.wait(5)


def test_another_directory_has_its_own_lock(tmp_path: Path) -> None:
    with directory_lock(tmp_path, tmp_path / "a" / "s.evalset.json"):
        assert _lock_in_thread(tmp_path, tmp_path / "b" / "s.evalset.json").wait(5)


def test_the_lock_is_released_when_the_body_raises(tmp_path: Path) -> None:
    path = tmp_path / "app" / "s.evalset.json"
    with pytest.raises(RuntimeError), directory_lock(tmp_path, path):
        raise RuntimeError("boom")
    assert _lock_in_thread(tmp_path, path).wait(5)


def test_another_process_holding_the_lock_makes_this_one_wait(tmp_path: Path) -> None:
    acquired, release = SPAWN.Event(), SPAWN.Event()
    holder = SPAWN.Process(target=_hold_lock, args=(tmp_path, acquired, release))
    holder.start()
    try:
        assert acquired.wait(30)
        waiter = _lock_in_thread(tmp_path, tmp_path / "app" / "other.metrics.json")
        assert not waiter.wait(0.3)
        release.set()
        assert waiter.wait(10)
    finally:
        release.set()
        holder.join(30)
    assert holder.exitcode == 0


def test_a_dead_holder_leaves_the_lock_free(tmp_path: Path) -> None:
    acquired, release = SPAWN.Event(), SPAWN.Event()
    holder = SPAWN.Process(target=_hold_lock, args=(tmp_path, acquired, release))
    holder.start()
    assert acquired.wait(30)
    holder.kill()
    holder.join(30)
    assert _lock_in_thread(tmp_path, tmp_path / "app" / "s.evalset.json").wait(5)
