"""Behaviour specific to the local-file eval-set store."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import threading
import time
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from agenteval._util.file_lock import LOCK_DIR, LOCK_FILE, directory_lock
from agenteval._util.files import load_json_file, write_atomic
from agenteval._util.sync_bridge import run_sync
from agenteval.errors import ConfigError, NotFoundError, StorageError, UnknownFieldWarning
from agenteval.evalset import local as local_module
from agenteval.evalset.local import LocalEvalSetManager
from agenteval.evalset.models import EvalCase, EvalSet, Tool
from tests.conftest import REFERENCE_EXAMPLES
from tests.evalset.test_managers import make_case
from tests.test_filelock import run_in_processes

APP = "my-app"
REFERENCE_APP = REFERENCE_EXAMPLES / "local" / "data" / "math-eval-app"


class FlatLocator:
    """Keeps every set of every app in one directory: ``<base>/<app>--<id>.json``."""

    def build(self, base_dir: Path, app_name: str, item_id: str) -> Path:
        return base_dir / f"{app_name}--{item_id}.json"

    def list(self, base_dir: Path, app_name: str) -> list[str]:
        prefix = f"{app_name}--"
        return sorted(p.stem.removeprefix(prefix) for p in base_dir.glob(f"{prefix}*.json"))


class EscapingLocator(FlatLocator):
    def build(self, base_dir: Path, app_name: str, item_id: str) -> Path:
        return base_dir / ".." / f"{app_name}--{item_id}.json"


def files_under(root: Path) -> list[str]:
    """What is under ``root``, apart from the lock files (tests/test_filelock.py checks those)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if LOCK_DIR not in p.relative_to(root).parts)


@pytest.mark.asyncio
async def test_file_layout_and_format(tmp_path: Path) -> None:
    manager = LocalEvalSetManager(str(tmp_path))
    await manager.create(APP, "s1")
    await manager.add_case(APP, "s1", make_case("c1", text="héllo"))
    path = tmp_path / APP / "s1.evalset.json"
    assert files_under(tmp_path) == [APP, f"{APP}/s1.evalset.json"]
    text = path.read_text(encoding="utf-8")
    assert text.endswith("}\n")
    assert not text.endswith("\n\n")
    assert text.splitlines()[1] == '  "evalSetId": "s1",'
    assert "héllo" in text
    assert json.loads(text) == (await manager.get(APP, "s1")).to_dict()
    assert json.loads(text)["evalCases"][0]["evalId"] == "c1"


@pytest.mark.asyncio
async def test_reference_file_loads_and_round_trips(tmp_path: Path) -> None:
    shutil.copytree(REFERENCE_APP, tmp_path / "math-eval-app")
    manager = LocalEvalSetManager(tmp_path)
    assert await manager.list("math-eval-app") == ["math-basic"]
    eval_set = await manager.get("math-eval-app", "math-basic")
    assert eval_set.eval_set_id == "math-basic"
    assert [c.eval_id for c in eval_set.eval_cases] == ["calc_add", "calc_multiply"]
    case = await manager.get_case("math-eval-app", "math-basic", "calc_add")
    assert case.conversation[0].tools[0].arguments == {"operation": "add", "a": 2, "b": 3}

    original = json.loads((REFERENCE_APP / "math-basic.evalset.json").read_text())
    await manager.add_case("math-eval-app", "math-basic", EvalCase(eval_id="new", creation_timestamp=1.5))
    written = json.loads((tmp_path / "math-eval-app" / "math-basic.evalset.json").read_text())
    assert written["evalCases"][:2] == original["evalCases"]
    assert written["evalCases"][2] == {"evalId": "new", "creationTimestamp": 1.5}


@pytest.mark.asyncio
async def test_null_cases_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "s.evalset.json").write_text('{"evalSetId": "s", "evalCases": [null, {"evalId": "c"}, null]}')
    manager = LocalEvalSetManager(tmp_path)
    assert [c.eval_id for c in (await manager.get("a", "s")).eval_cases] == ["c"]


@pytest.mark.asyncio
async def test_requested_id_decides_the_file(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "s.evalset.json").write_text('{"evalSetId": "other"}')
    manager = LocalEvalSetManager(tmp_path)
    assert (await manager.get("a", "s")).eval_set_id == "other"
    await manager.add_case("a", "s", make_case("c"))
    assert files_under(tmp_path) == ["a", "a/s.evalset.json"]
    assert [c.eval_id for c in (await manager.get("a", "s")).eval_cases] == ["c"]


@pytest.mark.asyncio
async def test_create_over_existing_file(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "s.evalset.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"eval set a\.s already exists"):
        await LocalEvalSetManager(tmp_path).create("a", "s")
    assert (tmp_path / "a" / "s.evalset.json").read_text() == "{}"


@pytest.mark.asyncio
async def test_delete_removes_the_file(tmp_path: Path) -> None:
    manager = LocalEvalSetManager(tmp_path)
    await manager.create("a", "s")
    await manager.delete("a", "s")
    assert files_under(tmp_path) == ["a"]


@pytest.mark.asyncio
async def test_list_ignores_other_entries(tmp_path: Path) -> None:
    app = tmp_path / "a"
    (app / "dir.evalset.json").mkdir(parents=True)
    (app / "notes.txt").write_text("x")
    (app / "s.metrics.json").write_text("[]")
    (app / "s.evalset.json.tmp").write_text("{}")
    (app / "s.evalset.json").write_text("{}")
    (tmp_path / "b.evalset.json").write_text("{}")
    assert await LocalEvalSetManager(tmp_path).list("a") == ["s"]


@pytest.mark.asyncio
async def test_list_is_in_file_name_order(tmp_path: Path) -> None:
    manager = LocalEvalSetManager(tmp_path)
    for eval_set_id in ["run", "run-2", "run.b", "run_1"]:
        await manager.create("a", eval_set_id)
    # Sorted by "<id>.evalset.json", as os.ReadDir sorts: not the same as sorting the ids.
    assert await manager.list("a") == ["run-2", "run.b", "run", "run_1"]


@pytest.mark.asyncio
async def test_a_symlinked_app_dir_leading_outside_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "s.evalset.json").write_text('{"evalSetId": "s"}')
    base = tmp_path / "base"
    base.mkdir()
    (base / "a").symlink_to(outside, target_is_directory=True)
    manager = LocalEvalSetManager(base)

    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: manager.list("a"),
        lambda: manager.get("a", "s"),
        lambda: manager.create("a", "new"),
    ]
    for call in calls:
        with pytest.raises(ConfigError, match="outside the base directory"):
            await call()
    assert sorted(entry.name for entry in outside.iterdir()) == ["s.evalset.json"]


@pytest.mark.asyncio
async def test_a_nan_constant_in_a_file_is_refused_on_load(tmp_path: Path) -> None:
    path = tmp_path / "a" / "s.evalset.json"
    path.parent.mkdir()
    path.write_text(
        '{"evalSetId": "s", "evalCases": [{"evalId": "c", "conversation": [{"tools": [{"arguments": {"x": NaN}}]}]}]}'
    )
    manager = LocalEvalSetManager(tmp_path)
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: manager.get("a", "s"),
        lambda: manager.add_case("a", "s", make_case("d")),
    ]
    for call in calls:
        with pytest.raises(ConfigError) as info:
            await call()
        assert str(info.value).startswith(
            f"eval set file {path} is malformed: field evalCases[0].conversation[0].tools[0].arguments.x "
            "is not a finite number (NaN)"
        )
    assert "NaN" in path.read_text()


@pytest.mark.asyncio
async def test_a_case_json_cannot_hold_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    manager = LocalEvalSetManager(tmp_path)
    await manager.create("a", "s")
    before = (tmp_path / "a" / "s.evalset.json").read_text()
    case = make_case("c")
    case.conversation[0].tools = [Tool(name="t", arguments={"x": float("nan")})]
    with pytest.raises(ConfigError, match=r"arguments\.x is not a finite number \(NaN\)"):
        await manager.add_case("a", "s", case)
    assert (tmp_path / "a" / "s.evalset.json").read_text() == before
    assert "null" not in before


BAD_NAMES = ["..", ".", "a/b", "a\\b", "a\x00b", "../x", "/abs"]


@pytest.mark.asyncio
@pytest.mark.parametrize("name", BAD_NAMES)
async def test_path_escaping_names_are_rejected(tmp_path: Path, name: str) -> None:
    base = tmp_path / "base"
    base.mkdir()
    manager = LocalEvalSetManager(base)
    await manager.create("app", "s")
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: manager.create(name, "s"),
        lambda: manager.create("app", name),
        lambda: manager.get(name, "s"),
        lambda: manager.get("app", name),
        lambda: manager.list(name),
        lambda: manager.delete("app", name),
        lambda: manager.add_case(name, "s", make_case("c")),
        lambda: manager.add_case("app", name, make_case("c")),
        lambda: manager.update_case("app", name, make_case("c")),
        lambda: manager.get_case("app", name, "c"),
        lambda: manager.delete_case("app", name, "c"),
    ]
    for call in calls:
        with pytest.raises(ConfigError, match="not allowed in a file name"):
            await call()
    assert files_under(tmp_path) == ["base", "base/app", "base/app/s.evalset.json"]


@pytest.mark.asyncio
async def test_custom_locator(tmp_path: Path) -> None:
    manager = LocalEvalSetManager(tmp_path, locator=FlatLocator())
    await manager.create("a", "s2")
    await manager.create("a", "s1")
    await manager.create("b", "s1")
    await manager.add_case("a", "s1", make_case("c"))
    assert files_under(tmp_path) == ["a--s1.json", "a--s2.json", "b--s1.json"]
    assert await manager.list("a") == ["s1", "s2"]
    assert (await manager.get_case("a", "s1", "c")).eval_id == "c"
    await manager.delete("a", "s2")
    assert await manager.list("a") == ["s1"]


@pytest.mark.asyncio
async def test_escaping_locator_is_rejected(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (tmp_path / "a--s.json").write_text("{}")
    manager = LocalEvalSetManager(base, locator=EscapingLocator())
    with pytest.raises(ConfigError, match="outside the base directory"):
        await manager.create("a", "t")
    with pytest.raises(ConfigError, match="outside the base directory"):
        await manager.get("a", "s")
    with pytest.raises(ConfigError, match="outside the base directory"):
        await manager.add_case("a", "s", make_case("c"))
    with pytest.raises(ConfigError, match="outside the base directory"):
        await manager.delete("a", "s")
    assert files_under(tmp_path) == ["a--s.json", "base"]


MALFORMED = [
    ('{"evalSetId": "s", "evalCases": [', "not valid JSON"),
    ('{"evalSetId": 5}', "field evalSetId"),
    (
        '{"evalCases": [{"evalId": "c", "conversation": [{"creationTimestamp": "now"}]}]}',
        "evalCases[0].conversation[0]",
    ),
    ('{"evalCases": {"evalId": "c"}}', "field evalCases"),
    ("[]", "document"),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(("content", "field"), MALFORMED)
async def test_malformed_file(tmp_path: Path, content: str, field: str) -> None:
    path = tmp_path / "a" / "s.evalset.json"
    path.parent.mkdir()
    path.write_text(content)
    manager = LocalEvalSetManager(tmp_path)
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: manager.get("a", "s"),
        lambda: manager.get_case("a", "s", "c"),
        lambda: manager.add_case("a", "s", make_case("new")),
        lambda: manager.delete_case("a", "s", "c"),
    ]
    for call in calls:
        with pytest.raises(ConfigError) as info:
            await call()
        assert str(path) in str(info.value)
        assert field in str(info.value)
    assert path.read_text() == content


@pytest.mark.asyncio
async def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="s.evalset.json does not exist"):
        await LocalEvalSetManager(tmp_path).get("a", "s")


@pytest.mark.asyncio
async def test_unwritable_base_is_storage_error(tmp_path: Path) -> None:
    base = tmp_path / "file"
    base.write_text("not a directory")
    with pytest.raises(StorageError):
        await LocalEvalSetManager(base).create("a", "s")


@pytest.mark.asyncio
async def test_unknown_keys_in_an_eval_set_file_warn_once_with_every_path(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    path = tmp_path / "app" / "s.evalset.json"
    path.write_text(
        json.dumps(
            {
                "evalSetId": "s",
                "evalCase": [{"evalId": "c", "conversations": [], "sessionInput": {"appName": "app", "userID": "u"}}],
            }
        )
    )
    with pytest.warns(UnknownFieldWarning) as warned:
        eval_set = await LocalEvalSetManager(tmp_path).get("app", "s")

    assert len(warned) == 1
    assert str(warned[0].message).startswith(f"eval set file {path}: unknown field(s) evalCase have no effect")
    assert eval_set.eval_cases == []


# --- several writers on one directory ---


def _create_and_add_cases(index: int, base: Path) -> str:
    """A writer process: try to create the shared set, then add 25 cases of its own."""

    async def work() -> str:
        manager = LocalEvalSetManager(base)
        try:
            await manager.create(APP, "shared")
            outcome = "created"
        except ConfigError as exc:
            outcome = str(exc)
        for number in range(25):
            await manager.add_case(APP, "shared", make_case(f"p{index}-{number}"))
        return outcome

    return run_sync(work())


def test_processes_sharing_a_directory_lose_no_case_and_create_once(tmp_path: Path) -> None:
    outcomes = run_in_processes(_create_and_add_cases, 4, tmp_path)

    assert sorted(outcomes, key=str) == ["created"] + [f"eval set {APP}.shared already exists"] * 3
    cases = {case.eval_id for case in run_sync(LocalEvalSetManager(tmp_path).get(APP, "shared")).eval_cases}
    assert cases == {f"p{index}-{number}" for index in range(4) for number in range(25)}


@pytest.mark.asyncio
async def test_managers_sharing_a_directory_lose_no_case(tmp_path: Path) -> None:
    managers = [LocalEvalSetManager(tmp_path), LocalEvalSetManager(tmp_path)]
    await managers[0].create(APP, "s")

    await asyncio.gather(*(managers[n % 2].add_case(APP, "s", make_case(f"c{n}")) for n in range(100)))

    for manager in managers:
        assert sorted(c.eval_id for c in (await manager.get(APP, "s")).eval_cases) == sorted(
            f"c{n}" for n in range(100)
        )


@pytest.mark.asyncio
async def test_concurrent_creates_of_one_set_succeed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def slow_write(path: Path, text: str) -> None:
        time.sleep(0.1)  # widen the gap between the existence check and the write
        write_atomic(path, text)

    monkeypatch.setattr(local_module, "write_atomic", slow_write)
    managers = [LocalEvalSetManager(tmp_path) for _ in range(3)]

    outcomes = await asyncio.gather(*(m.create(APP, "s") for m in managers), return_exceptions=True)

    created = [o for o in outcomes if isinstance(o, EvalSet)]
    refused = [o for o in outcomes if isinstance(o, ConfigError)]
    assert len(created) == 1
    assert [str(error) for error in refused] == [f"eval set {APP}.s already exists"] * 2


@pytest.mark.asyncio
async def test_a_concurrent_delete_is_not_undone_by_an_edit(tmp_path: Path) -> None:
    editor, deleter = LocalEvalSetManager(tmp_path), LocalEvalSetManager(tmp_path)
    await editor.create(APP, "s")
    path = tmp_path / APP / "s.evalset.json"
    with directory_lock(tmp_path, path):
        edit = asyncio.create_task(editor.add_case(APP, "s", make_case("c")))
        delete = asyncio.create_task(deleter.delete(APP, "s"))
        await asyncio.sleep(0.1)
        assert not edit.done() and not delete.done()
    edited, deleted = await asyncio.gather(edit, delete, return_exceptions=True)
    # Edit then delete, or delete then a failed edit: either way the set is gone, not rewritten.
    assert deleted is None
    assert edited is None or isinstance(edited, NotFoundError)
    assert not path.exists()


@pytest.mark.asyncio
async def test_an_edit_waits_for_the_lock_without_blocking_the_event_loop(tmp_path: Path) -> None:
    manager = LocalEvalSetManager(tmp_path)
    await manager.create(APP, "s")
    path = tmp_path / APP / "s.evalset.json"
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with directory_lock(tmp_path, path):
            held.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    add = asyncio.create_task(manager.add_case(APP, "s", make_case("c")))
    ticks = 0
    for _ in range(10):
        await asyncio.sleep(0.01)
        ticks += 1
    assert ticks == 10
    assert not add.done()  # it waits for the lock, and the loop keeps running meanwhile
    release.set()
    await add
    holder.join(5)
    assert [c.eval_id for c in (await manager.get(APP, "s")).eval_cases] == ["c"]


@pytest.mark.asyncio
async def test_lock_files_stay_in_the_base_directory_and_are_not_listed(tmp_path: Path) -> None:
    manager = LocalEvalSetManager(tmp_path)
    for eval_set_id in ["s1", "s2"]:
        await manager.create(APP, eval_set_id)
        await manager.add_case(APP, eval_set_id, make_case("c"))
    await manager.delete(APP, "s2")

    assert await manager.list(APP) == ["s1"]
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.evalset.json")) == [f"{APP}/s1.evalset.json"]
    assert [p.relative_to(tmp_path) for p in (tmp_path / LOCK_DIR).rglob("*") if p.is_file()] == [
        Path(LOCK_DIR, APP, LOCK_FILE)
    ]


# --- the copy of each set a manager keeps ---


def first_text(case: EvalCase) -> str:
    message = case.conversation[0].user_content
    assert message is not None
    return message.content


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Record every eval-set file the local store parses."""
    reads: list[Path] = []

    def counting_load(path: Path, adapter: type[EvalSet], what: str) -> EvalSet:
        reads.append(path)
        return load_json_file(path, adapter, what)

    monkeypatch.setattr(local_module, "load_json_file", counting_load)
    return reads


@pytest.mark.asyncio
async def test_adding_cases_does_not_parse_the_file_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = count_reads(monkeypatch)
    manager = LocalEvalSetManager(tmp_path)
    await manager.create(APP, "s")
    for n in range(20):
        await manager.add_case(APP, "s", make_case(f"c{n}"))
    await manager.update_case(APP, "s", make_case("c0", text="changed"))
    await manager.delete_case(APP, "s", "c1")
    assert first_text(await manager.get_case(APP, "s", "c0")) == "changed"
    assert len((await manager.get(APP, "s")).eval_cases) == 19
    assert reads == []
    on_disk = json.loads((tmp_path / APP / "s.evalset.json").read_text())
    assert [case["evalId"] for case in on_disk["evalCases"]] == ["c0", *(f"c{n}" for n in range(2, 20))]


@pytest.mark.asyncio
async def test_a_file_changed_by_another_writer_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = count_reads(monkeypatch)
    mine, theirs = LocalEvalSetManager(tmp_path), LocalEvalSetManager(tmp_path)
    await mine.create(APP, "s")
    await mine.add_case(APP, "s", make_case("a"))
    await theirs.add_case(APP, "s", make_case("b"))
    await mine.add_case(APP, "s", make_case("c"))
    assert len(reads) == 2  # theirs, which had no copy; then mine, whose copy was out of date
    assert [c.eval_id for c in (await theirs.get(APP, "s")).eval_cases] == ["a", "b", "c"]


@pytest.mark.asyncio
async def test_a_rewrite_in_place_of_the_same_size_is_read_again(tmp_path: Path) -> None:
    manager = LocalEvalSetManager(tmp_path)
    await manager.create(APP, "s")
    await manager.add_case(APP, "s", make_case("c", text="before"))
    path = tmp_path / APP / "s.evalset.json"
    before = path.stat()
    with path.open("r+", encoding="utf-8") as handle:  # same inode, same size
        text = handle.read()
        handle.seek(0)
        handle.write(text.replace('"before"', '"after!"'))
    # A coarse clock could give the rewrite the old time; only the time tells the versions apart here.
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    assert (path.stat().st_ino, path.stat().st_size) == (before.st_ino, before.st_size)
    assert first_text(await manager.get_case(APP, "s", "c")) == "after!"


@pytest.mark.asyncio
async def test_returned_sets_and_cases_are_copies(tmp_path: Path) -> None:
    manager = LocalEvalSetManager(tmp_path)
    created = await manager.create(APP, "s")
    created.eval_cases.append(make_case("from-create"))
    await manager.add_case(APP, "s", make_case("c", text="stored"))
    got = await manager.get(APP, "s")
    got.eval_cases[0].conversation[0].user_content = None
    got.eval_cases.append(make_case("from-get"))
    case = await manager.get_case(APP, "s", "c")
    case.conversation.clear()

    await manager.add_case(APP, "s", make_case("d"))

    for eval_set in [await manager.get(APP, "s"), await LocalEvalSetManager(tmp_path).get(APP, "s")]:
        assert [c.eval_id for c in eval_set.eval_cases] == ["c", "d"]
        assert first_text(eval_set.eval_cases[0]) == "stored"


@pytest.mark.asyncio
async def test_a_failed_write_does_not_leave_the_change_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manager = LocalEvalSetManager(tmp_path)
    await manager.create(APP, "s")
    await manager.add_case(APP, "s", make_case("a"))

    def failing_write(path: Path, text: str) -> None:
        raise StorageError(f"write {path}: disk full")

    monkeypatch.setattr(local_module, "write_atomic", failing_write)
    with pytest.raises(StorageError, match="disk full"):
        await manager.add_case(APP, "s", make_case("b"))
    with pytest.raises(StorageError, match="disk full"):
        await manager.delete_case(APP, "s", "a")
    assert [c.eval_id for c in (await manager.get(APP, "s")).eval_cases] == ["a"]


@pytest.mark.asyncio
async def test_unknown_keys_warn_each_time_the_file_is_read_from_disk(tmp_path: Path) -> None:
    path = tmp_path / "app" / "s.evalset.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"evalSetId": "s", "owner": "me"}))
    manager = LocalEvalSetManager(tmp_path)
    with pytest.warns(UnknownFieldWarning, match="unknown field.s. owner"):
        await manager.get("app", "s")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        await manager.add_case("app", "s", make_case("c"))  # unchanged since read: the kept copy is used
        await manager.get("app", "s")
    path.write_text(path.read_text().replace('"owner": "me"', '"owner": "someone else"'))
    with pytest.warns(UnknownFieldWarning, match="unknown field.s. owner"):
        await manager.get("app", "s")
    assert json.loads(path.read_text())["owner"] == "someone else"
