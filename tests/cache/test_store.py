"""The cache's store: entries by kind and key in SQLite, bounded, safe with several processes and after a crash."""

from __future__ import annotations

import json
import multiprocessing
import re
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agenteval.cache import Cache, CacheStats
from agenteval.cache import store as store_module
from agenteval.cache.store import DATABASE_FILE
from agenteval.errors import ConfigError, NotFoundError, StorageError


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[Cache]:
    with Cache(tmp_path / "cache") as opened:
        yield opened


def entry_size(key: str, value: str) -> int:
    return len(key.encode()) + len(value.encode())


# --- entries -------------------------------------------------------------------------------------


def test_a_value_is_read_back_exactly_as_it_was_put(cache: Cache) -> None:
    value = json.dumps({"reply": "Température: 21 °C ✓", "tools": [{"name": "get_weather"}]}, ensure_ascii=False)

    cache.put("inference", "k1", value)

    assert cache.get("inference", "k1") == value


def test_a_missing_key_reads_as_none(cache: Cache) -> None:
    assert cache.get("score", "nothing here") is None
    assert cache.get_many("score", ["nothing", "here"]) == {}
    assert cache.get_many("score", []) == {}


def test_the_two_kinds_are_separate(cache: Cache) -> None:
    cache.put("inference", "same key", '"an inference"')
    cache.put("score", "same key", '"a score"')

    assert cache.get("inference", "same key") == '"an inference"'
    assert cache.get("score", "same key") == '"a score"'


def test_put_replaces_an_entry_and_it_counts_once(cache: Cache) -> None:
    cache.put("score", "k", '"first"')
    cache.put("score", "k", '"second, longer"')

    assert cache.get("score", "k") == '"second, longer"'
    stats = cache.stats()
    assert stats.entries["score"] == 1
    assert stats.bytes["score"] == entry_size("k", '"second, longer"')


def test_get_many_finds_tens_of_thousands_of_keys_in_one_call(cache: Cache) -> None:
    # More keys than SQLite takes parameters in one statement (32,766).
    items = {f"key-{index}": str(index) for index in range(40_000)}
    cache.put_many("inference", items)

    found = cache.get_many("inference", [*items, "absent-1", "absent-2"])

    assert found == items


def test_put_many_with_nothing_is_harmless(cache: Cache) -> None:
    cache.put("score", "k", "1")

    cache.put_many("score", {})

    assert cache.stats().entries == {"inference": 0, "score": 1}


def test_entries_outlive_the_cache_object(tmp_path: Path) -> None:
    with Cache(tmp_path / "c") as first:
        first.put_many("score", {"a": "1", "b": "2"})

    with Cache(tmp_path / "c") as second:
        assert second.get_many("score", ["a", "b"]) == {"a": "1", "b": "2"}


def test_stats_count_entries_and_utf8_bytes_per_kind(cache: Cache) -> None:
    cache.put_many("inference", {"i1": '"é"', "i2": '"two"'})
    cache.put("score", "s1", "0.5")

    stats = cache.stats()

    assert stats == CacheStats(
        path=cache.path,
        entries={"inference": 2, "score": 1},
        bytes={"inference": entry_size("i1", '"é"') + entry_size("i2", '"two"'), "score": entry_size("s1", "0.5")},
        total_bytes=entry_size("i1", '"é"') + entry_size("i2", '"two"') + entry_size("s1", "0.5"),
        max_bytes=1 << 30,
    )
    assert entry_size("i1", '"é"') == 6  # é is two bytes in UTF-8


def test_clear_one_kind_keeps_the_other(cache: Cache) -> None:
    cache.put("inference", "i", "1")
    cache.put("score", "s", "2")

    cache.clear("score")

    assert cache.get("score", "s") is None
    assert cache.get("inference", "i") == "1"
    assert cache.stats().entries == {"inference": 1, "score": 0}
    assert cache.stats().bytes["score"] == 0


def test_clear_deletes_everything_and_gives_the_space_back(tmp_path: Path) -> None:
    database = tmp_path / "c" / DATABASE_FILE
    with Cache(tmp_path / "c") as cache:
        cache.put_many("inference", {f"k{index}": json.dumps("x" * 2000) for index in range(2000)})
        full = database.stat().st_size + Path(f"{database}-wal").stat().st_size
        assert full > 4_000_000

        cache.clear()

        assert cache.stats().total_bytes == 0
        assert cache.get("inference", "k1") is None
    assert database.stat().st_size < 500_000


# --- eviction ------------------------------------------------------------------------------------


def test_a_put_over_the_bound_evicts_the_least_recently_used_down_to_90_percent(tmp_path: Path) -> None:
    value = json.dumps("v" * 990)
    size = entry_size("k00", value)
    with Cache(tmp_path / "c", max_bytes=10 * size) as cache:
        cache.put_many("inference", {f"k{index:02}": value for index in range(10)})  # exactly at the bound
        assert cache.stats().entries["inference"] == 10
        cache.get("inference", "k00")  # read: now the most recently used
        cache.get_many("score", ["k01"])  # another kind: does not touch k01

        cache.put("score", "s00", value[:-1])  # over the bound: k01 and k02 make room

        stats = cache.stats()
        assert stats.total_bytes <= 9 * size
        left = set(cache.get_many("inference", [f"k{index:02}" for index in range(10)]))
        assert left == {"k00", *(f"k{index:02}" for index in range(3, 10))}
        assert cache.get("score", "s00") == value[:-1]


def test_eviction_takes_entries_of_either_kind_oldest_first(tmp_path: Path) -> None:
    value = "x" * 98
    with Cache(tmp_path / "c", max_bytes=1000) as cache:
        cache.put("score", "s0", value)
        cache.put_many("inference", {f"i{index}": value for index in range(8)})
        cache.put("score", "s1", value)  # 1,000 bytes: at the bound
        cache.put("score", "s2", value)  # over: down to 900

        assert cache.get("score", "s0") is None
        assert cache.get("inference", "i0") is None
        assert cache.get("score", "s2") == value
        assert cache.stats().total_bytes == 900


def test_a_value_larger_than_the_bound_is_not_kept(tmp_path: Path) -> None:
    with Cache(tmp_path / "c", max_bytes=1000) as cache:
        cache.put("score", "small", "1")

        cache.put("inference", "huge", "x" * 5000)

        assert cache.get("inference", "huge") is None
        assert cache.stats().total_bytes == 0


# --- the object ----------------------------------------------------------------------------------


def test_repr_says_where_and_how_big(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "c", max_bytes=1 << 20)
    cache.put("score", "k", "x" * 2046)

    assert repr(cache) == f"Cache({str(tmp_path / 'c')!r}, 1 entry, 2.0 KiB of 1.0 MiB)"
    cache.close()
    assert repr(cache) == f"Cache({str(tmp_path / 'c')!r}, closed)"


def test_a_closed_cache_refuses_to_be_used(tmp_path: Path) -> None:
    with Cache(tmp_path / "c") as cache:
        cache.put("score", "k", "1")

    with pytest.raises(StorageError, match=r"is closed; open it again with Cache\("):
        cache.get("score", "k")
    cache.close()  # twice is harmless


def test_the_directory_is_made_with_files_that_keep_it_out_of_git_and_backups(tmp_path: Path) -> None:
    with Cache(tmp_path / "deep" / "cache") as cache:
        cache.get("score", "k")  # first use

    directory = tmp_path / "deep" / "cache"
    assert (directory / DATABASE_FILE).is_file()
    assert (directory / ".gitignore").read_text(encoding="utf-8") == "*\n"
    assert (
        (directory / "CACHEDIR.TAG")
        .read_text(encoding="utf-8")
        .startswith("Signature: 8a477f597d28d172789f06886806bc55")
    )


def test_a_cache_nobody_closed_is_collected_with_its_connections(tmp_path: Path) -> None:
    import gc
    import weakref

    cache = Cache(tmp_path / "c")
    cache.put("score", "k", "1")
    ref = weakref.ref(cache)
    del cache
    gc.collect()

    assert ref() is None
    with Cache(tmp_path / "c") as again:
        assert again.get("score", "k") == "1"


@pytest.mark.parametrize("look", [Cache.stats, Cache.clear], ids=["stats", "clear"])
def test_looking_into_a_directory_that_holds_no_cache_is_an_error_and_creates_nothing(
    tmp_path: Path, look: object
) -> None:
    typo = tmp_path / "typo-dir"
    empty = tmp_path / "empty"
    empty.mkdir()

    for path in (typo, empty):
        cache = Cache(path)
        message = (
            f"no cache at {path}: it holds no agenteval cache (cache.sqlite3). Check the path; a cache is created"
            f" by an evaluation with cache=, e.g. ev.evaluate(..., cache='{path}')"
        )
        with pytest.raises(NotFoundError, match=f"^{re.escape(message)}$"):
            look(cache)  # type: ignore[operator]
        assert repr(cache) == f"Cache({str(path)!r}, no cache there yet)"

    assert not typo.exists()
    assert list(empty.iterdir()) == []


def test_an_evaluation_with_the_cache_creates_it_even_when_it_keeps_nothing(tmp_path: Path) -> None:
    import agenteval as ae

    def failing(message: str) -> str:
        raise RuntimeError("no model")

    eval_set = ae.EvalSet.of("s", [ae.EvalCase.of("a", "hi", expect="hi")])
    ae.Evaluator("app", failing, progress=False).evaluate(
        eval_set, metrics=[ae.EvalMetric.final_response()], cache=tmp_path / "new"
    )

    assert Cache(tmp_path / "new").stats().entries == {"inference": 0, "score": 0}


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda cache: cache.get("scores", "k"),
        lambda cache: cache.get_many("Inference", ["k"]),
        lambda cache: cache.put("result", "k", "1"),
        lambda cache: cache.put_many("", {"k": "1"}),
        lambda cache: cache.clear("all"),
    ],
)
def test_an_unknown_kind_is_a_config_error_naming_the_kinds(cache: Cache, call: object) -> None:
    with pytest.raises(ConfigError, match=r"unknown cache kind .*; the kinds are 'inference', 'score'"):
        call(cache)  # type: ignore[operator]


def test_a_value_that_is_not_text_is_refused(cache: Cache) -> None:
    with pytest.raises(ConfigError, match=r"entry's value \(JSON text\) must be a string, got dict: \{'score': 1\}"):
        cache.put("score", "k", {"score": 1})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="entry's key must be a string, got int: 1"):
        cache.put_many("score", {1: "1"})  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match="entry's key must be a string, got bytes"):
        cache.get_many("score", [b"k"])  # type: ignore[list-item]
    assert not cache.path.exists()


@pytest.mark.parametrize("max_bytes", [0, -1, 1.5, True, "1GB"])
def test_max_bytes_must_be_a_positive_integer(tmp_path: Path, max_bytes: object) -> None:
    with pytest.raises(ConfigError, match=r"Cache\(max_bytes=.*\): give a positive number of bytes"):
        Cache(tmp_path / "c", max_bytes=max_bytes)  # type: ignore[arg-type]


def test_a_file_as_the_cache_path_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello", encoding="utf-8")

    with pytest.raises(ConfigError, match="notes.txt.*that is a file; give a directory"):
        Cache(path)


# --- damaged or foreign files --------------------------------------------------------------------


def assert_names_the_file_and_the_fix(error: pytest.ExceptionInfo[StorageError], directory: Path) -> None:
    message = str(error.value)
    assert str(directory / DATABASE_FILE) in message
    assert f"delete the directory {directory}" in message


def test_a_file_that_is_not_a_database_is_a_storage_error_that_says_to_delete_the_directory(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    directory.mkdir()
    (directory / DATABASE_FILE).write_bytes(b"these are not the pages you are looking for " * 200)

    with pytest.raises(StorageError, match="is not a readable agenteval cache .file is not a database.") as error:
        Cache(directory)

    assert_names_the_file_and_the_fix(error, directory)


def test_another_programs_sqlite_database_is_a_storage_error(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    directory.mkdir()
    with sqlite3.connect(directory / DATABASE_FILE) as db:
        db.execute("CREATE TABLE entries (anything TEXT)")
    db.close()

    with pytest.raises(StorageError, match="is not an agenteval cache .it is another program's SQLite") as error:
        Cache(directory)

    assert_names_the_file_and_the_fix(error, directory)


def test_a_cache_from_a_newer_agenteval_is_a_storage_error(tmp_path: Path) -> None:
    with Cache(tmp_path / "c") as cache:
        cache.put("score", "k", "1")
    with sqlite3.connect(tmp_path / "c" / DATABASE_FILE) as db:
        db.execute("PRAGMA user_version = 99")
    db.close()

    with pytest.raises(StorageError, match="written by a newer agenteval .format 99, this one reads 1.: upgrade"):
        Cache(tmp_path / "c")


def test_a_damaged_database_is_a_storage_error_that_says_to_delete_the_directory(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    with Cache(directory) as cache:
        cache.put_many("inference", {f"k{index}": json.dumps("x" * 500) for index in range(3000)})
    database = directory / DATABASE_FILE
    data = bytearray(database.read_bytes())
    data[16384 * 2 :] = b"\xa5" * (len(data) - 16384 * 2)  # every page after the first two
    database.write_bytes(bytes(data))

    with (
        pytest.raises(
            StorageError, match="is not a readable agenteval cache .database disk image is malformed."
        ) as error,
        Cache(directory) as damaged,
    ):
        damaged.get_many("inference", [f"k{index}" for index in range(3000)])

    assert_names_the_file_and_the_fix(error, directory)


def test_a_cache_locked_too_long_by_another_process_is_a_storage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "_BUSY_TIMEOUT_SECONDS", 0.2)
    with Cache(tmp_path / "c") as cache:
        cache.put("score", "k", "0")
        other = sqlite3.connect(tmp_path / "c" / DATABASE_FILE, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(StorageError, match="stayed locked by another process for over 0.2 s"):
                cache.put("score", "k", "1")
        finally:
            other.execute("ROLLBACK")
            other.close()

        cache.put("score", "k", "1")
        assert cache.get("score", "k") == "1"


# --- threads and processes -----------------------------------------------------------------------


def test_threads_share_one_cache(cache: Cache) -> None:
    def work(worker: int) -> int:
        checked = 0
        for round_ in range(25):
            items = {f"w{worker}-r{round_}-{index}": json.dumps([worker, round_, index]) for index in range(20)}
            cache.put_many("inference", items)
            assert cache.get_many("inference", items) == items
            checked += len(items)
        return checked

    with ThreadPoolExecutor(max_workers=8) as pool:
        checked = sum(pool.map(work, range(8)))

    assert checked == 8 * 25 * 20
    assert cache.stats().entries["inference"] == checked


def child_uses_the_parents_cache(cache: Cache) -> None:
    cache.put("score", "from the child", '"child"')
    assert cache.get("score", "from the parent") == '"parent"'


@pytest.mark.skipif(sys.platform != "linux", reason="fork")
@pytest.mark.filterwarnings("ignore:.*multi-threaded, use of fork:DeprecationWarning")
def test_a_forked_child_opens_its_own_connection(cache: Cache) -> None:
    cache.put("score", "from the parent", '"parent"')
    child = multiprocessing.get_context("fork").Process(target=child_uses_the_parents_cache, args=(cache,))
    child.start()
    child.join(60)

    assert child.exitcode == 0
    assert cache.get("score", "from the child") == '"child"'


VALUE_PAD = 1500

WORKER = """
import hashlib, json, sys
from agenteval.cache import Cache

path, worker, rounds, max_bytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

def value(key):
    return json.dumps({"key": key, "pad": "x" * PAD, "check": hashlib.sha256(key.encode()).hexdigest()})

def check(found):
    for key, text in found.items():
        data = json.loads(text)
        assert data["key"] == key and data["pad"] == "x" * PAD, key
        assert data["check"] == hashlib.sha256(key.encode()).hexdigest(), key

with Cache(path, max_bytes=max_bytes) as cache:
    for round_ in range(rounds):
        mine = {f"w{worker}-r{round_}-{index}": None for index in range(40)}
        shared = {f"shared-{index}": None for index in range(40)}
        cache.put_many("inference", {key: value(key) for key in mine})
        cache.put_many("score", {key: value(key) for key in shared})
        cache.put("score", f"w{worker}-single-{round_}", value(f"w{worker}-single-{round_}"))
        others = [f"w{other}-r{round_}-{index}" for other in range(4) for index in range(40)]
        check(cache.get_many("inference", others))
        check(cache.get_many("score", shared))
        found = cache.get("score", f"w{worker}-single-{round_}")
        if found is not None:
            check({f"w{worker}-single-{round_}": found})
print("ok", flush=True)
""".replace("PAD", str(VALUE_PAD))


def every_key(workers: int, rounds: int) -> tuple[list[str], list[str]]:
    inference = [
        f"w{worker}-r{round_}-{index}" for worker in range(workers) for round_ in range(rounds) for index in range(40)
    ]
    score = [f"shared-{index}" for index in range(40)] + [
        f"w{worker}-single-{round_}" for worker in range(workers) for round_ in range(rounds)
    ]
    return inference, score


def check_complete(cache: Cache, kind: str, keys: list[str]) -> dict[str, str]:
    found = cache.get_many(kind, keys)
    for key, text in found.items():
        data = json.loads(text)
        assert data["key"] == key
        assert data["pad"] == "x" * VALUE_PAD
    return found


def assert_totals_match_the_entries(cache: Cache, found: dict[str, dict[str, str]]) -> None:
    stats = cache.stats()
    for kind, entries in found.items():
        assert stats.entries[kind] == len(entries)
        assert stats.bytes[kind] == sum(entry_size(key, value) for key, value in entries.items())


@pytest.mark.parametrize("max_bytes", [1 << 30, 300_000], ids=["unbounded", "evicting"])
def test_several_processes_write_and_read_one_new_cache_at_once(tmp_path: Path, max_bytes: int) -> None:
    path = tmp_path / "shared-cache"  # created by whichever process comes first
    workers, rounds = 4, 15
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(path), str(worker), str(rounds), str(max_bytes)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for worker in range(workers)
    ]
    outputs = [process.communicate(timeout=100) for process in processes]

    assert [process.returncode for process in processes] == [0] * workers, [err for _, err in outputs]
    inference, score = every_key(workers, rounds)
    with Cache(path, max_bytes=max_bytes) as cache:
        found = {
            "inference": check_complete(cache, "inference", inference),
            "score": check_complete(cache, "score", score),
        }
        assert_totals_match_the_entries(cache, found)
        if max_bytes == 1 << 30:
            assert len(found["inference"]) == len(inference)
            assert len(found["score"]) == len(score)
        else:
            assert cache.stats().total_bytes <= max_bytes
            assert len(found["inference"]) < len(inference)  # entries were evicted while the others read


KILLED_WRITER = """
import json, sys
from agenteval.cache import Cache

cache = Cache(sys.argv[1])
first = int(sys.argv[2])
for batch in range(first, first + 1_000_000):
    keys = [f"b{batch}-{index}" for index in range(200)]
    cache.put_many("inference", {key: json.dumps({"key": key, "pad": "x" * PAD}) for key in keys})
    print(batch, flush=True)
""".replace("PAD", str(VALUE_PAD))


def test_a_writer_killed_mid_write_leaves_only_complete_entries(tmp_path: Path) -> None:
    path = tmp_path / "c"
    written: list[int] = []
    for first_batch, kill_after in ((0, 3), (1000, 8), (2000, 15)):
        writer = subprocess.Popen(
            [sys.executable, "-c", KILLED_WRITER, str(path), str(first_batch)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert writer.stdout is not None
        try:
            for _ in range(kill_after):
                written.append(int(writer.stdout.readline()))
        finally:
            writer.send_signal(signal.SIGKILL)  # most likely inside the next batch's transaction
            writer.communicate(timeout=60)
        assert writer.returncode == -signal.SIGKILL

    with Cache(path) as cache:
        batches = [batch for first in (0, 1000, 2000) for batch in range(first, first + 20)]
        found: dict[str, str] = {}
        for batch in batches:
            in_batch = check_complete(cache, "inference", [f"b{batch}-{index}" for index in range(200)])
            assert len(in_batch) in (0, 200), f"batch {batch} is partly written"
            assert batch not in written or len(in_batch) == 200
            found |= in_batch
        assert_totals_match_the_entries(cache, {"inference": found, "score": {}})

        cache.put("score", "after the crash", "1")  # no lock was left behind
        assert cache.get("score", "after the crash") == "1"


def test_a_cache_created_while_another_process_looks_at_it_is_taken_for_a_cache(tmp_path: Path) -> None:
    """The creator's commit may land between the looker's reads: it must see the whole cache or none of it."""
    file = tmp_path / DATABASE_FILE
    looker = sqlite3.connect(file, isolation_level=None)
    creator = sqlite3.connect(file, isolation_level=None)
    created = False

    def create_once(statement: str) -> None:
        nonlocal created
        if not created and "sqlite_master" in statement:
            created = True
            store_module._create_schema(creator)

    looker.set_trace_callback(create_once)
    try:
        assert store_module._holds_cache(looker, file) is True
    finally:
        looker.close()
        creator.close()
