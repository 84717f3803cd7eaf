"""The cache's write-ahead journal: work kept by a process killed before its batch reached SQLite is not lost.

A writer appends its entries to a journal of its own, locked while it lives; the next cache opened on the
directory folds the journals whose writer is gone into SQLite and deletes them, and leaves a live writer's alone.
"""

from __future__ import annotations

import gc
import os
import re
import selectors
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agenteval.cache import Cache
from agenteval.cache.journal import PREFIX, SUFFIX, Journal
from agenteval.cache.reuse import WorkReuse
from agenteval.errors import StorageError
from tests.cache.test_store_readonly import LAUNCH, read_only, unwritable

__all__ = ["unwritable"]  # a fixture: imported to be found by the tests below

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 60.0

WRITER = """
import sys
from agenteval.cache import Cache
from agenteval.cache.reuse import WorkReuse

cache_dir, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
reuse = WorkReuse(Cache(cache_dir), agent="agent", scoring=lambda metric, evaluator: "", case_hashes={}, evaluators={})
for index in range(count):
    reuse.write("inference", {f"{name}-inference-{index}": f'{{"n": {index}}}'})
    reuse.write("score", {f"{name}-score-{index}": f'{{"score": {index}}}'})
print("written", flush=True)
if sys.stdin.readline() == "flush\\n":
    reuse.flush()
    print("flushed", flush=True)
"""
"""Keeps ``count`` inferences and scores under ``name`` (no event loop: nothing reaches SQLite by itself), says
``written``, then waits: to be killed, or told to flush."""


class Writer:
    """A child process running :data:`WRITER`; every wait for it is bounded."""

    def __init__(self, cache_dir: Path, name: str, count: int) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(cache_dir), name, str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )

    def said(self) -> str:
        """The child's next line of output."""
        assert self.process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            assert selector.select(DEADLINE), f"the writer said nothing for {DEADLINE} s"
        line = self.process.stdout.readline().decode().strip()
        assert line, self.finish()
        return line

    def tell(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{line}\n".encode())
        self.process.stdin.flush()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        assert self.process.wait(timeout=DEADLINE) == -signal.SIGKILL

    def finish(self) -> str:
        """Wait for the child to end (killing it after the deadline); what it wrote to stderr."""
        try:
            _, stderr = self.process.communicate(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, stderr = self.process.communicate(timeout=DEADLINE)
        return stderr.decode(errors="replace")


@pytest.fixture
def writers() -> Iterator[list[Writer]]:
    """The writers a test starts; ended afterwards, whatever happened."""
    started: list[Writer] = []
    yield started
    for writer in started:
        if writer.process.poll() is None:
            writer.process.kill()
        writer.finish()


def journals(cache_dir: Path) -> list[Path]:
    return sorted(cache_dir.glob(f"{PREFIX}*{SUFFIX}"))


def entries_of(name: str, count: int) -> dict[str, dict[str, str]]:
    """What :data:`WRITER` keeps under ``name``, by kind."""
    return {
        "inference": {f"{name}-inference-{index}": f'{{"n": {index}}}' for index in range(count)},
        "score": {f"{name}-score-{index}": f'{{"score": {index}}}' for index in range(count)},
    }


def found(cache_dir: Path, wanted: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """What a cache newly opened on ``cache_dir`` holds of ``wanted``'s keys, by kind."""
    with Cache(cache_dir) as cache:
        return {kind: cache.get_many(kind, list(items)) for kind, items in wanted.items()}


def abandoned_journal(cache_dir: Path, *batches: tuple[str, dict[str, str]]) -> Journal:
    """A journal holding ``batches``, as a writer killed before it wrote them to the database leaves it."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    journal = Journal(cache_dir)
    for kind, items in batches:
        journal.append(kind, items)
    journal.close()
    return journal


def test_work_kept_by_a_process_killed_before_its_batch_reached_sqlite_is_found_by_the_next_cache(
    tmp_path: Path, writers: list[Writer]
) -> None:
    cache_dir = tmp_path / "cache"
    writers.append(writer := Writer(cache_dir, "w", 20))
    assert writer.said() == "written"
    assert len(journals(cache_dir)) == 1

    writer.kill()

    assert found(cache_dir, entries_of("w", 20)) == entries_of("w", 20)
    # Folded into the database once, and deleted.
    assert journals(cache_dir) == []
    with Cache(cache_dir) as cache:
        assert cache.stats().entries == {"inference": 20, "score": 20}


def test_a_live_process_s_journal_is_left_to_it_and_folded_once_it_is_gone(
    tmp_path: Path, writers: list[Writer]
) -> None:
    cache_dir = tmp_path / "cache"
    writers.append(writer := Writer(cache_dir, "w", 3))
    assert writer.said() == "written"

    # Its writer still runs (and holds the lock): another process's cache neither takes nor deletes it.
    assert found(cache_dir, entries_of("w", 3)) == {"inference": {}, "score": {}}
    assert len(journals(cache_dir)) == 1

    # Ended without writing its batch (an exception, say): the lock goes with the process.
    writer.tell("exit")
    assert writer.finish() == ""
    assert found(cache_dir, entries_of("w", 3)) == entries_of("w", 3)
    assert journals(cache_dir) == []


def test_a_journal_open_in_this_process_is_not_folded_by_another_cache_object(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    with Cache(cache_dir) as writing:
        journal = writing.journal()
        assert journal is not None
        journal.append("score", {"k": "1"})

        assert found(cache_dir, {"score": {"k": "1"}}) == {"score": {}}

        journal.close()
    assert found(cache_dir, {"score": {"k": "1"}}) == {"score": {"k": "1"}}


def test_a_journal_dropped_unclosed_is_unlocked_when_collected_and_a_closed_one_refuses_entries(
    tmp_path: Path,
) -> None:
    cache_dir = tmp_path / "cache"
    with Cache(cache_dir) as cache:
        journal = cache.journal()
        assert journal is not None
        journal.append("score", {"k": "1"})
        path = journal.path
        del journal
        gc.collect()

    assert found(cache_dir, {"score": {"k": "1"}}) == {"score": {"k": "1"}}
    assert not path.exists()
    closed = abandoned_journal(cache_dir)
    with pytest.raises(StorageError, match=re.escape(f"the cache's journal {closed.path} is closed")):
        closed.append("score", {"k": "2"})


def test_a_batch_written_to_the_database_deletes_its_journal(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    with Cache(cache_dir) as cache:
        reuse = WorkReuse(cache, agent="agent", scoring=lambda metric, evaluator: "", case_hashes={}, evaluators={})
        reuse.write("score", {"k": "1"})
        assert len(journals(cache_dir)) == 1

        reuse.flush()

        assert journals(cache_dir) == []
        assert cache.get("score", "k") == "1"
        # The next entry starts a new journal.
        reuse.write("score", {"k2": "2"})
        assert len(journals(cache_dir)) == 1
        reuse.flush()
    assert journals(cache_dir) == []


def test_a_torn_last_line_and_a_damaged_one_are_left_out_and_the_rest_is_taken(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    path = abandoned_journal(cache_dir, ("score", {"a": "1"})).path
    with path.open("ab") as file:
        file.write(b"not a journal line\n")
        file.write(b'["elsewhere",{"b":"2"}]\n')
    abandoned = Journal(cache_dir)
    abandoned.append("inference", {"c": "3"})
    abandoned.close()
    # Killed in the middle of writing a line: no newline at its end.
    with abandoned.path.open("ab") as file:
        file.write(b'["score",{"d":"4"')

    assert found(cache_dir, {"score": {"a": "", "b": "", "d": ""}, "inference": {"c": ""}}) == {
        "score": {"a": "1"},
        "inference": {"c": "3"},
    }
    assert journals(cache_dir) == []


def test_entries_both_in_the_database_and_in_a_journal_count_once(tmp_path: Path) -> None:
    # A writer killed after its batch was committed and before it deleted the journal.
    cache_dir = tmp_path / "cache"
    with Cache(cache_dir) as cache:
        cache.put_many("score", {"a": "1", "b": "22"})
    abandoned_journal(cache_dir, ("score", {"a": "1"}), ("score", {"b": "22"}), ("score", {"c": "333"}))

    with Cache(cache_dir) as cache:
        stats = cache.stats()

    assert stats.entries == {"inference": 0, "score": 3}
    assert stats.bytes["score"] == len("a1b22c333")


def test_later_lines_replace_earlier_ones_and_values_keep_every_character(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    text = '{"reply": "Température\\n21 °C ✓ \U0001f600"}'
    abandoned_journal(cache_dir, ("score", {"k": '"old"'}), ("score", {"k": text}))

    assert found(cache_dir, {"score": {"k": ""}}) == {"score": {"k": text}}


def test_processes_sharing_a_cache_keep_a_journal_each(tmp_path: Path, writers: list[Writer]) -> None:
    cache_dir = tmp_path / "cache"
    writers.extend([Writer(cache_dir, "one", 30), Writer(cache_dir, "two", 30)])
    assert [writer.said() for writer in writers] == ["written", "written"]
    assert len(journals(cache_dir)) == 2

    # One is killed; the other lives on and writes its batch itself.
    writers[0].kill()
    writers[1].tell("flush")
    assert writers[1].said() == "flushed"
    assert writers[1].finish() == ""

    wanted = entries_of("one", 30)
    for kind, items in entries_of("two", 30).items():
        wanted[kind].update(items)
    assert found(cache_dir, wanted) == wanted
    assert journals(cache_dir) == []


def test_a_read_only_cache_keeps_no_journal_and_folds_none(tmp_path: Path, unwritable: list[Path]) -> None:
    cache_dir = tmp_path / "cache"
    with Cache(cache_dir) as cache:
        cache.put("score", "in the database", "1")
    journal = abandoned_journal(cache_dir, ("score", {"in a journal": "2"})).path
    read_only(unwritable, *cache_dir.iterdir(), cache_dir)
    look = """
import sys
from agenteval.cache import Cache
from agenteval.cache.reuse import WorkReuse
from agenteval.errors import StorageError

cache = Cache(sys.argv[1])
print(cache.get_many("score", ["in the database", "in a journal"]))
try:
    cache.journal()
except StorageError as exc:
    print(exc)
reuse = WorkReuse(cache, agent="agent", scoring=lambda metric, evaluator: "", case_hashes={}, evaluators={})
reuse.write("score", {"new": "3"})
reuse.flush()
"""
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH, look, str(cache_dir)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=DEADLINE,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    found_line, refused = done.stdout.splitlines()
    assert found_line == "{'in the database': '1'}"
    assert refused.startswith(f"the cache {cache_dir} is read-only (this process may not write")
    # The writer says once that its work is not kept, and keeps no journal.
    assert done.stderr.count("cannot be written, so this evaluation's work is not kept") == 1
    assert journals(cache_dir) == [journal]


FULL = """
import resource, signal, sys
from agenteval.cache import Cache
from agenteval.cache.reuse import WorkReuse

cache = Cache(sys.argv[1])
reuse = WorkReuse(cache, agent="agent", scoring=lambda metric, evaluator: "", case_hashes={}, evaluators={})
reuse.write("score", {"small": "1"})
# Files may grow no further, as on a full disk: a write past the limit fails (EFBIG) instead of killing us.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
reuse.write("score", {"big": "x" * 8192})
reuse.write("score", {"later": "2"})
reuse.flush()
"""


def test_a_journal_that_cannot_be_written_stops_the_writer_with_one_warning_naming_it(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    done = subprocess.run(
        [sys.executable, "-c", FULL, str(cache_dir)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=DEADLINE,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.count("cannot be written, so this evaluation's work is not kept") == 1, done.stderr
    (journal,) = journals(cache_dir)
    assert f"cannot write the cache's journal {journal}: [Errno 27] File too large" in done.stderr
    # What it journaled before is kept, for the next cache opened.
    assert found(cache_dir, {"score": {"small": "", "big": "", "later": ""}}) == {"score": {"small": "1"}}


def test_a_journal_line_is_in_the_file_when_append_returns(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    with Cache(cache_dir) as cache:
        journal = cache.journal()
        assert journal is not None
        journal.append("inference", {"k": '{"n": 1}'})
        assert journal.path.read_bytes() == b'["inference",{"k":"{\\"n\\": 1}"}]\n'
        journal.discard()
    assert journals(cache_dir) == []
