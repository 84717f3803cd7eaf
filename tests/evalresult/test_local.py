"""Behaviour of the local-file eval-result store beyond the shared contract."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from agenteval.errors import ConfigError, NotFoundError, StorageError, UnknownFieldWarning
from agenteval.evalresult.local import RESULT_FILE_SUFFIX, LocalEvalResultManager, load_result_file
from agenteval.evalresult.models import EvalSetResult
from agenteval.storage import Locator, SuffixLocator
from tests.evalresult._data import INTEROP_RESULTS, make_result


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path / "results"


@pytest.fixture
def store(base: Path) -> LocalEvalResultManager:
    return LocalEvalResultManager(base)


def _files(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*") if not path.is_dir())


def _write(base: Path, app: str, result_id: str, text: str) -> Path:
    path = base / app / f"{result_id}{RESULT_FILE_SUFFIX}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults(base: Path) -> None:
    store = LocalEvalResultManager(str(base))
    assert store.base_dir == base
    assert isinstance(store.locator, SuffixLocator)
    assert store.locator.suffix == ".evalset_result.json"
    assert str(base) in repr(store)
    assert not base.exists()


@pytest.mark.asyncio
async def test_save_writes_the_reference_layout(store: LocalEvalResultManager, base: Path) -> None:
    result_id = await store.save("app", make_result(creation_timestamp=1761134484.5))

    path = base / "app" / f"{result_id}.evalset_result.json"
    assert _files(base) == [f"app/{result_id}.evalset_result.json"]
    text = path.read_text(encoding="utf-8")
    assert text.startswith('{\n  "evalSetResultId": ')
    assert text.endswith("}\n")
    stored = await store.get("app", result_id)
    assert text == stored.to_json() + "\n"
    data = json.loads(text)
    assert data["evalSetResultId"] == result_id
    assert data["evalSetResultName"] == result_id
    assert data["creationTimestamp"] == 1761134484.5


@pytest.mark.asyncio
async def test_execution_trace_is_persisted(store: LocalEvalResultManager, base: Path) -> None:
    await store.save("app", make_result(eval_set_result_id="r1"))

    data = json.loads((base / "app" / "r1.evalset_result.json").read_text(encoding="utf-8"))
    invocation = data["evalCaseResults"][0]["evalMetricResultPerInvocation"][0]["actualInvocation"]
    assert invocation["executionTrace"]["RootAgentName"] == "math"
    assert invocation["executionTrace"]["Steps"][0]["Tools"][0]["Arguments"] == {"a": 1}
    stored = await store.get("app", "r1")
    trace = stored.eval_case_results[0].eval_metric_result_per_invocation[0].actual_invocation
    assert trace is not None and trace.execution_trace is not None
    assert trace.execution_trace.status == "completed"


@pytest.mark.asyncio
async def test_relative_base_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = LocalEvalResultManager("out")
    await store.save("app", make_result(eval_set_result_id="r1"))
    assert (tmp_path / "out" / "app" / "r1.evalset_result.json").is_file()
    assert await store.list("app") == ["r1"]


@pytest.mark.asyncio
async def test_missing_file_names_app_and_id(store: LocalEvalResultManager) -> None:
    await store.save("app", make_result(eval_set_result_id="r1"))
    for app, result_id in [("app", "r2"), ("other", "r1")]:
        with pytest.raises(NotFoundError) as info:
            await store.get(app, result_id)
        assert f"{app}.{result_id}" in str(info.value)


@pytest.mark.asyncio
@pytest.mark.parametrize("path", INTEROP_RESULTS, ids=lambda path: path.parts[-4])
async def test_reads_files_written_by_the_reference(store: LocalEvalResultManager, base: Path, path: Path) -> None:
    app = path.parent.name
    (base / app).mkdir(parents=True)
    shutil.copy(path, base / app / path.name)
    result_id = path.name.removesuffix(RESULT_FILE_SUFFIX)

    assert await store.list(app) == [result_id]
    stored = await store.get(app, result_id)
    assert stored.eval_set_result_id == result_id
    assert stored.eval_case_results
    assert stored.to_dict() == EvalSetResult.from_json(path.read_bytes()).to_dict()


@pytest.mark.asyncio
async def test_legacy_double_encoded_file_loads(store: LocalEvalResultManager, base: Path) -> None:
    original = make_result(eval_set_result_id="legacy-id", eval_set_result_name="old", creation_timestamp=12.25)
    _write(base, "app", "legacy", json.dumps(json.dumps(original.to_dict())))

    stored = await store.get("app", "legacy")
    # The stored id is returned as it is, even though the file is named differently.
    assert stored.eval_set_result_id == "legacy-id"
    assert stored.to_dict() == original.to_dict()
    assert await store.list("app") == ["legacy"]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ("", "not valid JSON"),
        ("[1, 2]", "it is a JSON array, as a metrics file is"),
        ("42", "document"),
        ('{"evalSetId": "set", "evalCaseResults": "oops"}', "field evalCaseResults"),
        ('{"evalSetId": "set", "creationTimestamp": "2025-01-01"}', "field creationTimestamp"),
    ],
)
async def test_malformed_file_names_the_file(
    store: LocalEvalResultManager, base: Path, text: str, fragment: str
) -> None:
    path = _write(base, "app", "bad", text)
    with pytest.raises(ConfigError) as info:
        await store.get("app", "bad")
    assert str(path) in str(info.value)
    assert fragment in str(info.value)
    assert "legacy content" not in str(info.value)


EXAMPLE_DATA = Path(__file__).resolve().parents[2] / "agenteval" / "examples" / "math" / "data" / "math-eval-app"


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        (EXAMPLE_DATA / "math-basic.evalset.json", "it has evalCases, so it is an eval set file, not a result"),
        (EXAMPLE_DATA / "math-basic.metrics.json", "it is a JSON array, as a metrics file is"),
    ],
    ids=["eval-set", "metrics"],
)
def test_another_kind_of_file_is_not_loaded_as_an_empty_result(path: Path, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_result_file(path)

    assert str(info.value).startswith(f"eval set result file {path} is not an eval set result: {fragment}; ")
    assert RESULT_FILE_SUFFIX in str(info.value)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"evalSetId": "set", "evalCases": []}', "it has evalCases, so it is an eval set file"),
        (json.dumps('{"evalSetId": "set", "evalCases": []}'), "it has evalCases, so it is an eval set file"),
        ('{"evalSetId": "set", "note": 1}', "it has neither evalSetResultId nor evalCaseResults (its keys: evalSetId"),
        ("{}", "it has neither evalSetResultId nor evalCaseResults (its keys: none)"),
    ],
    ids=["eval-set", "legacy-eval-set", "other-object", "empty-object"],
)
async def test_a_document_without_result_keys_is_refused(
    store: LocalEvalResultManager, base: Path, text: str, fragment: str
) -> None:
    path = _write(base, "app", "r1", text)

    with pytest.raises(ConfigError) as info:
        await store.get("app", "r1")

    assert f"eval set result file {path} is not an eval set result: {fragment}" in str(info.value)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "text", ['{"evalSetResultId": "r1"}', '{"evalCaseResults": []}', json.dumps('{"evalSetResultId": "r1"}')]
)
async def test_either_result_key_is_enough(store: LocalEvalResultManager, base: Path, text: str) -> None:
    _write(base, "app", "r1", text)

    assert (await store.get("app", "r1")).eval_case_results == []


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("inner", "fragment"),
    [("{not json", "not valid JSON"), ('{"evalSetId": "set", "evalCaseResults": 1}', "field evalCaseResults")],
)
async def test_malformed_legacy_content_names_the_file(
    store: LocalEvalResultManager, base: Path, inner: str, fragment: str
) -> None:
    path = _write(base, "app", "bad", json.dumps(inner))
    with pytest.raises(ConfigError) as info:
        await store.get("app", "bad")
    message = str(info.value)
    assert str(path) in message
    assert "legacy content of eval set result file" in message
    assert fragment in message


@pytest.mark.asyncio
async def test_list_is_sorted_and_ignores_other_entries(store: LocalEvalResultManager, base: Path) -> None:
    for result_id in ["b", "c", "a"]:
        await store.save("app", make_result(eval_set_result_id=result_id))
    app_dir = base / "app"
    (app_dir / "dir.evalset_result.json").mkdir()
    (app_dir / "notes.txt").write_text("x")
    (app_dir / "d.json").write_text("{}")
    (app_dir / "e.evalset_result.json.tmp").write_text("{}")
    (app_dir / "f.evalset_result.json.1234.tmp").write_text("{}")

    assert await store.list("app") == ["a", "b", "c"]
    assert await store.list("missing") == []


@pytest.mark.asyncio
async def test_list_is_in_file_name_order(store: LocalEvalResultManager) -> None:
    for result_id in ["run", "run-2", "run.b", "run_1"]:
        await store.save("app", make_result(eval_set_result_id=result_id))
    # Sorted by "<id>.evalset_result.json", as os.ReadDir sorts: not the same as sorting the ids.
    assert await store.list("app") == ["run-2", "run.b", "run", "run_1"]


@pytest.mark.asyncio
async def test_a_nan_constant_in_a_file_is_refused_on_load(store: LocalEvalResultManager, base: Path) -> None:
    path = _write(base, "app", "r1", '{"evalSetId": "s", "creationTimestamp": NaN}')
    with pytest.raises(ConfigError) as info:
        await store.get("app", "r1")
    assert str(info.value) == (
        f"eval set result file {path} is malformed: field creationTimestamp: expected a finite number, got nan "
        "(JSON has no NaN or Infinity)"
    )

    path = _write(base, "app", "r2", json.dumps(make_result().to_dict()).replace('"sum": 3', '"sum": Infinity'))
    with pytest.raises(ConfigError) as info:
        await store.get("app", "r2")
    assert str(info.value).startswith(
        f"eval set result file {path} is malformed: field evalCaseResults[0].evalMetricResultPerInvocation[0]"
        ".actualInvocation.tools[0].result.sum is not a finite number (Infinity)"
    )


@pytest.mark.asyncio
async def test_a_misspelt_api_key_in_a_result_file_is_dropped(store: LocalEvalResultManager, base: Path) -> None:
    document = make_result(eval_set_result_id="r1").to_dict()
    metric = document["evalCaseResults"][0]["overallEvalMetricResults"][0]
    metric["criterion"] = {"llmJudge": {"judgeModel": {"modelName": "gpt", "API-KEY": "sk-secret"}}}
    path = _write(base, "app", "r1", json.dumps(document))

    with pytest.warns(UnknownFieldWarning, match="'API-KEY' was dropped because it looks like a secret"):
        loaded = await store.get("app", "r1")
    await store.save("app", loaded)
    assert "sk-secret" not in path.read_text()
    assert '"modelName": "gpt"' in path.read_text()


@pytest.mark.asyncio
async def test_failed_replace_keeps_the_previous_version(
    store: LocalEvalResultManager, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.save("app", make_result("v1", eval_set_result_id="r1"))
    path = base / "app" / "r1.evalset_result.json"
    before = path.read_bytes()

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(StorageError, match="disk full"):
        await store.save("app", make_result("v2", eval_set_result_id="r1"))
    monkeypatch.undo()

    assert path.read_bytes() == before
    assert sorted(entry.name for entry in path.parent.iterdir()) == ["r1.evalset_result.json"]
    assert (await store.get("app", "r1")).eval_set_id == "v1"


@pytest.mark.asyncio
async def test_encode_failure_writes_nothing(store: LocalEvalResultManager, base: Path) -> None:
    await store.save("app", make_result(eval_set_result_id="r0"))
    result = make_result(eval_set_result_id="r1")
    invocation = result.eval_case_results[0].eval_metric_result_per_invocation[0].actual_invocation
    assert invocation is not None
    invocation.tools[0].result = {"handle": object()}

    with pytest.raises(ConfigError, match="^clone result: "):
        await store.save("app", result)
    assert _files(base) == ["app/r0.evalset_result.json"]
    with pytest.raises(NotFoundError):
        await store.get("app", "r1")


@pytest.mark.asyncio
async def test_base_dir_that_is_a_file(tmp_path: Path) -> None:
    base = tmp_path / "results"
    base.write_text("not a directory")
    store = LocalEvalResultManager(base)
    with pytest.raises(StorageError):
        await store.save("app", make_result())
    assert base.read_text() == "not a directory"
    assert await store.list("app") == []


_BAD_NAMES = [".", "..", "a/b", "a\\b", "a\0b", "../escape", "/abs"]


@pytest.mark.asyncio
@pytest.mark.parametrize("name", _BAD_NAMES)
async def test_unsafe_app_names_are_rejected(tmp_path: Path, name: str) -> None:
    store = LocalEvalResultManager(tmp_path / "base" / "results")
    with pytest.raises(ConfigError, match="app name"):
        await store.save(name, make_result())
    with pytest.raises(ConfigError, match="app name"):
        await store.get(name, "r1")
    with pytest.raises(ConfigError, match="app name"):
        await store.list(name)
    assert _files(tmp_path) == []


@pytest.mark.asyncio
@pytest.mark.parametrize("name", _BAD_NAMES)
async def test_unsafe_ids_are_rejected(tmp_path: Path, name: str) -> None:
    store = LocalEvalResultManager(tmp_path / "base" / "results")
    with pytest.raises(ConfigError, match="eval set result id"):
        await store.save("app", make_result(eval_set_result_id=name))
    with pytest.raises(ConfigError, match="eval set result id"):
        await store.get("app", name)
    assert _files(tmp_path) == []


@pytest.mark.asyncio
async def test_an_eval_set_id_that_would_make_an_unsafe_id_is_rejected(store: LocalEvalResultManager) -> None:
    with pytest.raises(ConfigError, match="eval set result id"):
        await store.save("app", make_result("../../x"))


@pytest.mark.asyncio
async def test_a_symlinked_app_dir_leading_outside_is_refused(tmp_path: Path, base: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "r1.evalset_result.json").write_text(make_result(eval_set_result_id="r1").to_json())
    base.mkdir()
    (base / "app").symlink_to(outside, target_is_directory=True)
    store = LocalEvalResultManager(base)

    with pytest.raises(ConfigError, match="outside the base directory"):
        await store.save("app", make_result(eval_set_result_id="r2"))
    with pytest.raises(ConfigError, match="outside the base directory"):
        await store.get("app", "r1")
    with pytest.raises(ConfigError, match="outside the base directory"):
        await store.list("app")
    assert sorted(entry.name for entry in outside.iterdir()) == ["r1.evalset_result.json"]


class FlatLocator:
    """Keeps every result of every app in one directory: ``<base>/<app>--<id>.json``."""

    def build(self, base_dir: Path, app_name: str, item_id: str) -> Path:
        return base_dir / f"{app_name}--{item_id}.json"

    def list(self, base_dir: Path, app_name: str) -> list[str]:
        prefix = f"{app_name}--"
        if not base_dir.is_dir():
            return []
        return sorted(path.name.removeprefix(prefix).removesuffix(".json") for path in base_dir.glob(f"{prefix}*.json"))


class EscapingLocator(FlatLocator):
    def build(self, base_dir: Path, app_name: str, item_id: str) -> Path:
        return base_dir.parent / f"{item_id}.json"


class BrokenLocator(FlatLocator):
    def list(self, base_dir: Path, app_name: str) -> list[str]:
        raise PermissionError("permission denied")


@pytest.mark.asyncio
async def test_custom_locator(base: Path) -> None:
    locator = FlatLocator()
    assert isinstance(locator, Locator)
    store = LocalEvalResultManager(base, locator=locator)
    await store.save("app", make_result(eval_set_result_id="r2"))
    await store.save("app", make_result(eval_set_result_id="r1"))
    await store.save("other", make_result(eval_set_result_id="r3"))

    assert _files(base) == ["app--r1.json", "app--r2.json", "other--r3.json"]
    assert await store.list("app") == ["r1", "r2"]
    assert (await store.get("other", "r3")).eval_set_result_id == "r3"
    with pytest.raises(NotFoundError):
        await store.get("other", "r1")


@pytest.mark.asyncio
async def test_a_locator_leading_outside_is_refused(tmp_path: Path, base: Path) -> None:
    store = LocalEvalResultManager(base, locator=EscapingLocator())
    with pytest.raises(ConfigError, match="outside the base directory"):
        await store.save("app", make_result(eval_set_result_id="r1"))
    (tmp_path / "r1.json").write_text(make_result(eval_set_result_id="r1").to_json())
    with pytest.raises(ConfigError, match="outside the base directory"):
        await store.get("app", "r1")
    assert _files(tmp_path) == ["r1.json"]


@pytest.mark.asyncio
async def test_a_failing_listing_is_a_storage_error(base: Path) -> None:
    store = LocalEvalResultManager(base, locator=BrokenLocator())
    with pytest.raises(StorageError, match="list eval set results for app app: permission denied"):
        await store.list("app")


@pytest.mark.asyncio
async def test_two_stores_share_the_directory(base: Path) -> None:
    writer = LocalEvalResultManager(base)
    reader = LocalEvalResultManager(base)
    result_id = await writer.save("app", make_result())
    assert await reader.list("app") == [result_id]
    assert (await reader.get("app", result_id)).eval_set_result_id == result_id
