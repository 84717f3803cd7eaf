"""Behaviour specific to the local-file metric store."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from agenteval._util.file_lock import LOCK_DIR, directory_lock
from agenteval._util.files import load_json_file
from agenteval._util.sync_bridge import run_sync
from agenteval.errors import ConfigError, UnknownFieldWarning
from agenteval.metric.local import LocalMetricManager
from agenteval.metric.manager import all_metrics
from agenteval.metric.models import EvalMetric
from tests.conftest import REFERENCE_EXAMPLES
from tests.metric.test_managers import make_metric
from tests.test_filelock import run_in_processes

REFERENCE_APP = REFERENCE_EXAMPLES / "local" / "data" / "math-eval-app"


class FlatLocator:
    """Keeps every metrics file in one directory: ``<base>/<app>--<id>.json``."""

    def build(self, base_dir: Path, app_name: str, item_id: str) -> Path:
        return base_dir / f"{app_name}--{item_id}.json"

    def list(self, base_dir: Path, app_name: str) -> list[str]:
        raise AssertionError("the metric store never lists")


class EscapingLocator(FlatLocator):
    def build(self, base_dir: Path, app_name: str, item_id: str) -> Path:
        return base_dir / "sub" / ".." / ".." / f"{app_name}--{item_id}.json"


def files_under(root: Path) -> list[str]:
    """What is under ``root``, apart from the lock files (tests/test_filelock.py checks those)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if LOCK_DIR not in p.relative_to(root).parts)


@pytest.mark.asyncio
async def test_file_layout_and_format(tmp_path: Path) -> None:
    manager = LocalMetricManager(str(tmp_path))
    await manager.add("a", "s", make_metric("m1"))
    await manager.add("a", "s", EvalMetric(metric_name="m2", threshold=1.0))
    path = tmp_path / "a" / "s.metrics.json"
    assert files_under(tmp_path) == ["a", "a/s.metrics.json"]
    text = path.read_text(encoding="utf-8")
    assert text.startswith('[\n  {\n    "metricName": "m1",')
    assert text.endswith("]\n")
    assert json.loads(text)[1] == {"metricName": "m2", "threshold": 1}


@pytest.mark.asyncio
async def test_deleting_last_metric_leaves_empty_array(tmp_path: Path) -> None:
    manager = LocalMetricManager(tmp_path)
    await manager.add("a", "s", make_metric("m"))
    await manager.delete("a", "s", "m")
    assert (tmp_path / "a" / "s.metrics.json").read_text() == "[]\n"
    assert await manager.list("a", "s") == []


@pytest.mark.asyncio
async def test_api_key_is_not_written(tmp_path: Path) -> None:
    manager = LocalMetricManager(tmp_path)
    metric = make_metric("m")
    assert metric.criterion is not None and metric.criterion.llm_judge is not None
    assert metric.criterion.llm_judge.judge_model is not None
    metric.criterion.llm_judge.judge_model.api_key = "secret"
    await manager.add("a", "s", metric)
    assert "secret" not in (tmp_path / "a" / "s.metrics.json").read_text()


@pytest.mark.asyncio
@pytest.mark.parametrize("key", ["API-KEY", "api_key_", "API_KEY", "apikey_", "apiKye", "openai_api_key"])
async def test_a_misspelt_api_key_is_dropped_and_never_written(tmp_path: Path, key: str) -> None:
    path = tmp_path / "a" / "s.metrics.json"
    path.parent.mkdir()
    judge = {"modelName": "gpt", key: "sk-secret", "futureOption": 1}
    path.write_text(json.dumps([{"metricName": "m", "criterion": {"llmJudge": {"judgeModel": judge}}}]))
    manager = LocalMetricManager(tmp_path)

    with pytest.warns(UnknownFieldWarning) as warned:
        metric = await manager.get("a", "s", "m")
        await manager.add("a", "s", make_metric("other"))  # rewrites the file
    messages = [str(w.message) for w in warned]
    assert f"metrics file {path}: judgeModel key {key!r} was dropped because it looks like a secret" in "\n".join(
        messages
    )
    assert any("[0].criterion.llmJudge.judgeModel.futureOption" in message for message in messages)
    assert metric.criterion is not None and metric.criterion.llm_judge is not None
    assert metric.criterion.llm_judge.judge_model is not None
    assert metric.criterion.llm_judge.judge_model.api_key == ""
    assert "sk-secret" not in metric.to_json()
    written = path.read_text()
    assert "sk-secret" not in written
    assert json.loads(written)[0]["criterion"]["llmJudge"]["judgeModel"] == {"modelName": "gpt", "futureOption": 1}


@pytest.mark.asyncio
async def test_a_symlinked_app_dir_leading_outside_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "s.metrics.json").write_text('[{"metricName": "m"}]')
    base = tmp_path / "base"
    base.mkdir()
    (base / "a").symlink_to(outside, target_is_directory=True)
    manager = LocalMetricManager(base)

    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: manager.list("a", "s"),
        lambda: manager.add("a", "new", make_metric("m")),
    ]
    for call in calls:
        with pytest.raises(ConfigError, match="outside the base directory"):
            await call()
    assert sorted(entry.name for entry in outside.iterdir()) == ["s.metrics.json"]


@pytest.mark.asyncio
async def test_a_nan_constant_in_a_free_form_value_is_refused_on_load(tmp_path: Path) -> None:
    path = tmp_path / "a" / "s.metrics.json"
    path.parent.mkdir()
    path.write_text('[{"metricName": "m", "extension": {"weights": [1, Infinity]}}]')
    with pytest.raises(ConfigError) as info:
        await LocalMetricManager(tmp_path).list("a", "s")
    assert str(info.value).startswith(
        f"metrics file {path} is malformed: field [0].extension.weights[1] is not a finite number (Infinity)"
    )


@pytest.mark.asyncio
async def test_reference_file_loads_and_round_trips(tmp_path: Path) -> None:
    shutil.copytree(REFERENCE_APP, tmp_path / "math-eval-app")
    manager = LocalMetricManager(tmp_path)
    assert await manager.list("math-eval-app", "math-basic") == ["tool_trajectory_avg_score"]
    metric = await manager.get("math-eval-app", "math-basic", "tool_trajectory_avg_score")
    assert metric.threshold == 1.0
    assert metric.criterion is not None and metric.criterion.tool_trajectory is not None

    await manager.add("math-eval-app", "math-basic", EvalMetric(metric_name="extra", threshold=0.5))
    written = json.loads((tmp_path / "math-eval-app" / "math-basic.metrics.json").read_text())
    # Rewritten as the reference would: "orderSensitive": false is omitted (omitempty).
    assert written == [metric.to_dict(), {"metricName": "extra", "threshold": 0.5}]
    assert "orderSensitive" not in written[0]["criterion"]["toolTrajectory"]


@pytest.mark.asyncio
async def test_duplicate_metric_names_in_a_file_are_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "s.metrics.json").write_text(
        '[{"metricName": "m", "threshold": 0.1}, {"metricName": "m", "threshold": 0.2}]'
    )
    manager = LocalMetricManager(tmp_path)
    with pytest.raises(ConfigError, match=r"s\.metrics\.json.*\[1\]\.metricName 'm' repeats \[0\]"):
        await manager.list("a", "s")


@pytest.mark.asyncio
async def test_unnamed_metric_in_a_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "s.metrics.json").write_text('[{"metricName": "", "threshold": 0.1}]')
    with pytest.raises(ConfigError, match=r"\[0\]\.metricName is empty"):
        await LocalMetricManager(tmp_path).list("a", "s")


BAD_NAMES = ["..", ".", "a/b", "a\\b", "a\x00b", "../x", "/abs"]


@pytest.mark.asyncio
@pytest.mark.parametrize("name", BAD_NAMES)
async def test_path_escaping_names_are_rejected(tmp_path: Path, name: str) -> None:
    base = tmp_path / "base"
    base.mkdir()
    manager = LocalMetricManager(base)
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: manager.list(name, "s"),
        lambda: manager.list("a", name),
        lambda: manager.get_all(name, "s"),
        lambda: manager.get_all("a", name),
        lambda: manager.get(name, "s", "m"),
        lambda: manager.get("a", name, "m"),
        lambda: manager.add(name, "s", make_metric("m")),
        lambda: manager.add("a", name, make_metric("m")),
        lambda: manager.update("a", name, make_metric("m")),
        lambda: manager.delete("a", name, "m"),
    ]
    for call in calls:
        with pytest.raises(ConfigError, match="not allowed in a file name"):
            await call()
    assert files_under(tmp_path) == ["base"]


@pytest.mark.asyncio
async def test_all_metrics_reads_the_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manager = LocalMetricManager(tmp_path)
    assert await manager.get_all("a", "s") == []  # no file: no metrics, as list says
    for name in ["m1", "m2", "m3"]:
        await manager.add("a", "s", make_metric(name))
    reads: list[Path] = []

    def counted(path: Path, *args: Any) -> Any:
        reads.append(path)
        return load_json_file(path, *args)

    monkeypatch.setattr("agenteval.metric.local.load_json_file", counted)
    assert await all_metrics(manager, "a", "s") == [make_metric("m1"), make_metric("m2"), make_metric("m3")]
    assert reads == [tmp_path / "a" / "s.metrics.json"]


@pytest.mark.asyncio
async def test_custom_locator(tmp_path: Path) -> None:
    manager = LocalMetricManager(tmp_path, locator=FlatLocator())
    await manager.add("a", "s", make_metric("m"))
    await manager.add("b", "s", make_metric("n"))
    assert files_under(tmp_path) == ["a--s.json", "b--s.json"]
    assert await manager.list("a", "s") == ["m"]
    assert await manager.list("b", "s") == ["n"]


@pytest.mark.asyncio
async def test_escaping_locator_is_rejected(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (tmp_path / "a--s.json").write_text("[]")
    manager = LocalMetricManager(base, locator=EscapingLocator())
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: manager.list("a", "s"),
        lambda: manager.get_all("a", "s"),
        lambda: manager.get("a", "s", "m"),
        lambda: manager.add("a", "s", make_metric("m")),
        lambda: manager.delete("a", "s", "m"),
    ]
    for call in calls:
        with pytest.raises(ConfigError, match="outside the base directory"):
            await call()
    assert files_under(tmp_path) == ["a--s.json", "base"]
    assert (tmp_path / "a--s.json").read_text() == "[]"


MALFORMED = [
    ('[{"metricName": "m"', "not valid JSON"),
    ('[{"metricName": "m", "threshold": "high"}]', "field [0].threshold"),
    ('[{"metricName": "m", "criterion": {"llmJudge": {"rubrics": {}}}}]', "[0].criterion.llmJudge.rubrics"),
    ('{"metricName": "m"}', "document"),
    ("[null]", "[0]"),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(("content", "field"), MALFORMED)
async def test_malformed_file(tmp_path: Path, content: str, field: str) -> None:
    path = tmp_path / "a" / "s.metrics.json"
    path.parent.mkdir()
    path.write_text(content)
    manager = LocalMetricManager(tmp_path)
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: manager.list("a", "s"),
        lambda: manager.get_all("a", "s"),
        lambda: manager.get("a", "s", "m"),
        lambda: manager.add("a", "s", make_metric("new")),
        lambda: manager.update("a", "s", make_metric("m")),
        lambda: manager.delete("a", "s", "m"),
    ]
    messages = []
    for call in calls:
        with pytest.raises(ConfigError) as info:
            await call()
        assert str(path) in str(info.value)
        assert field in str(info.value)
        messages.append(str(info.value))
    with pytest.raises(ConfigError) as read:
        await all_metrics(manager, "a", "s")
    assert str(read.value) == f"list metrics: {messages[0]}"  # as an evaluation's list, then get, said it
    assert path.read_text() == content


@pytest.mark.asyncio
@pytest.mark.parametrize(("written", "shown"), [("NaN", "nan"), ("1e999", "inf"), ("-Infinity", "-inf")])
async def test_a_non_finite_threshold_is_a_clear_error(tmp_path: Path, written: str, shown: str) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "s.metrics.json").write_text(f'[{{"metricName": "m", "threshold": {written}}}]')
    with pytest.raises(ConfigError) as raised:
        await LocalMetricManager(tmp_path).get("a", "s", "m")
    assert str(raised.value) == (
        f"metrics file {tmp_path / 'a' / 's.metrics.json'} is malformed: field [0].threshold: "
        f"expected a finite number, got {shown} (JSON has no NaN or Infinity)"
    )


@pytest.mark.asyncio
async def test_a_misspelt_criterion_option_warns_naming_its_path(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    path = tmp_path / "a" / "s.metrics.json"
    path.write_text(
        '[{"metricName": "m", "threshold": 1, "criterion": {"finalResponse": {"text": {"caseInsensitve": true}}}}]'
    )
    with pytest.warns(UnknownFieldWarning) as warned:
        metric = await LocalMetricManager(tmp_path).get("a", "s", "m")

    assert [str(w.message) for w in warned] == [
        f"metrics file {path}: unknown field(s) [0].criterion.finalResponse.text.caseInsensitve have no effect; "
        "check their spelling (they are kept when the file is written back)"
    ]
    assert metric.criterion is not None
    assert metric.to_dict()["criterion"]["finalResponse"]["text"] == {"caseInsensitve": True}


# --- several writers on one directory ---


def _add_metrics(index: int, base: Path) -> None:
    """A writer process: add 25 metrics of its own to the shared set, then update and delete one."""

    async def work() -> None:
        manager = LocalMetricManager(base)
        for number in range(25):
            await manager.add("a", "s", make_metric(f"p{index}-{number}"))
        await manager.update("a", "s", make_metric(f"p{index}-0", threshold=0.9))
        await manager.delete("a", "s", f"p{index}-1")

    run_sync(work())


def test_processes_sharing_a_directory_lose_no_metric(tmp_path: Path) -> None:
    assert run_in_processes(_add_metrics, 4, tmp_path) == [None] * 4

    manager = LocalMetricManager(tmp_path)
    names = run_sync(manager.list("a", "s"))
    assert sorted(names) == sorted(f"p{index}-{n}" for index in range(4) for n in range(25) if n != 1)
    for index in range(4):
        assert run_sync(manager.get("a", "s", f"p{index}-0")).threshold == 0.9


@pytest.mark.asyncio
async def test_managers_sharing_a_directory_lose_no_metric(tmp_path: Path) -> None:
    managers = [LocalMetricManager(tmp_path), LocalMetricManager(tmp_path)]

    await asyncio.gather(*(managers[n % 2].add("a", "s", make_metric(f"m{n}")) for n in range(100)))

    for manager in managers:
        assert sorted(await manager.list("a", "s")) == sorted(f"m{n}" for n in range(100))


@pytest.mark.asyncio
async def test_an_edit_waits_for_the_lock_without_blocking_the_event_loop(tmp_path: Path) -> None:
    manager = LocalMetricManager(tmp_path)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with directory_lock(tmp_path, tmp_path / "a" / "s.metrics.json"):
            held.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    add = asyncio.create_task(manager.add("a", "s", make_metric("m")))
    ticks = 0
    for _ in range(10):
        await asyncio.sleep(0.01)
        ticks += 1
    assert ticks == 10
    assert not add.done()  # it waits for the lock, and the loop keeps running meanwhile
    release.set()
    await add
    holder.join(5)
    assert await manager.list("a", "s") == ["m"]


@pytest.mark.asyncio
async def test_reads_expand_environment_references_as_they_are_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a" / "s.metrics.json"
    path.parent.mkdir()
    path.write_text('[{"metricName": "m", "criterion": {"llmJudge": {"judgeModel": {"apiKey": "${JUDGE_KEY}"}}}}]')
    manager = LocalMetricManager(tmp_path)
    monkeypatch.setenv("JUDGE_KEY", "first")
    await manager.get("a", "s", "m")
    monkeypatch.setenv("JUDGE_KEY", "second")
    metric = await manager.get("a", "s", "m")
    assert metric.criterion is not None and metric.criterion.llm_judge is not None
    assert metric.criterion.llm_judge.judge_model is not None
    assert metric.criterion.llm_judge.judge_model.api_key == "second"


@pytest.mark.asyncio
async def test_editing_one_metric_keeps_the_environment_references_of_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_BASE", "https://internal.example/v1")
    monkeypatch.setenv("JUDGE_KEY", "sk-secret")
    judged = {
        "metricName": "judged",
        "evaluatorName": "llm_final_response",
        "threshold": 0.5,
        "criterion": {
            "llmJudge": {
                "judgeModel": {
                    "providerName": "openai",
                    "modelName": "${JUDGE_MODEL_UNSET}",
                    "baseURL": "${JUDGE_BASE}",
                    "apiKey": "${JUDGE_KEY}",
                }
            }
        },
    }
    (tmp_path / "app").mkdir()
    path = tmp_path / "app" / "set.metrics.json"
    path.write_text(json.dumps([judged, make_metric("other").to_dict()]), encoding="utf-8")
    manager = LocalMetricManager(tmp_path)

    loaded = await manager.get("app", "set", "judged")
    await manager.update("app", "set", make_metric("other").model_copy(update={"threshold": 0.9}))

    judge_model = loaded.criterion.llm_judge.judge_model  # type: ignore[union-attr]
    assert judge_model is not None and judge_model.base_url == "https://internal.example/v1"
    written = json.loads(path.read_text(encoding="utf-8"))[0]["criterion"]["llmJudge"]["judgeModel"]
    assert written == {
        "providerName": "openai",
        "modelName": "${JUDGE_MODEL_UNSET}",
        "baseURL": "${JUDGE_BASE}",
        "apiKey": "${JUDGE_KEY}",
    }
    assert "internal.example" not in path.read_text(encoding="utf-8")
    assert "sk-secret" not in path.read_text(encoding="utf-8")
