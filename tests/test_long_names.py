"""Names a file system cannot hold (too long, or with a lone surrogate) are refused before any file operation."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import agenteval as ae
from agenteval._util.name_checks import FILE_NAME_LIMIT
from agenteval._util.sync_bridge import run_sync
from agenteval.errors import ConfigError, NotFoundError
from agenteval.evalresult.local import LocalEvalResultManager
from agenteval.evalresult.memory import InMemoryEvalResultManager
from agenteval.evalset.local import LocalEvalSetManager
from agenteval.evalset.models import EvalCase
from agenteval.metric.local import LocalMetricManager
from agenteval.metric.models import EvalMetric
from tests.evalresult._data import make_result

SURROGATE = "a\ud800b"
SHOWN = repr(SURROGATE)  # 'a\ud800b': the escape is visible in the message


def _entries(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


Operation = Callable[[Path, str, str], Awaitable[Any]]

OPERATIONS: dict[str, Operation] = {
    "set.create": lambda base, app, name: LocalEvalSetManager(base).create(app, name),
    "set.get": lambda base, app, name: LocalEvalSetManager(base).get(app, name),
    "set.delete": lambda base, app, name: LocalEvalSetManager(base).delete(app, name),
    "set.get_case": lambda base, app, name: LocalEvalSetManager(base).get_case(app, name, "c"),
    "set.add_case": lambda base, app, name: LocalEvalSetManager(base).add_case(app, name, EvalCase.of("c", "hi")),
    "set.update_case": lambda base, app, name: LocalEvalSetManager(base).update_case(app, name, EvalCase.of("c", "hi")),
    "set.delete_case": lambda base, app, name: LocalEvalSetManager(base).delete_case(app, name, "c"),
    "metric.list": lambda base, app, name: LocalMetricManager(base).list(app, name),
    "metric.get": lambda base, app, name: LocalMetricManager(base).get(app, name, "m"),
    "metric.add": lambda base, app, name: LocalMetricManager(base).add(app, name, EvalMetric(metric_name="m")),
    "metric.update": lambda base, app, name: LocalMetricManager(base).update(app, name, EvalMetric(metric_name="m")),
    "metric.delete": lambda base, app, name: LocalMetricManager(base).delete(app, name, "m"),
    "result.get": lambda base, app, name: LocalEvalResultManager(base).get(app, name),
    "result.save": lambda base, app, name: LocalEvalResultManager(base).save(app, make_result(eval_set_result_id=name)),
}

APP_ONLY: dict[str, Callable[[Path, str], Awaitable[Any]]] = {
    "set.list": lambda base, app: LocalEvalSetManager(base).list(app),
    "result.list": lambda base, app: LocalEvalResultManager(base).list(app),
    "result.save": lambda base, app: LocalEvalResultManager(base).save(app, make_result()),
}


@pytest.mark.asyncio
@pytest.mark.parametrize("operation", OPERATIONS)
async def test_a_lone_surrogate_in_an_id_is_a_config_error_naming_it(tmp_path: Path, operation: str) -> None:
    with pytest.raises(ConfigError) as info:
        await OPERATIONS[operation](tmp_path, "app", SURROGATE)

    assert SHOWN in str(info.value)
    assert "surrogate" in str(info.value)
    assert _entries(tmp_path) == []


@pytest.mark.asyncio
@pytest.mark.parametrize("operation", [*OPERATIONS, *APP_ONLY])
async def test_a_lone_surrogate_in_the_app_name_is_a_config_error_naming_it(tmp_path: Path, operation: str) -> None:
    with pytest.raises(ConfigError) as info:
        if operation in OPERATIONS:
            await OPERATIONS[operation](tmp_path, SURROGATE, "set")
        else:
            await APP_ONLY[operation](tmp_path, SURROGATE)

    assert f"app name {SHOWN}" in str(info.value)
    assert _entries(tmp_path) == []


@pytest.mark.asyncio
@pytest.mark.parametrize("operation", OPERATIONS)
async def test_an_id_too_long_for_its_file_name_is_a_config_error_naming_the_limit(
    tmp_path: Path, operation: str
) -> None:
    # 243 + ".evalset.json" (or ".metrics.json") is 256 bytes: one over the limit.
    with pytest.raises(ConfigError) as info:
        await OPERATIONS[operation](tmp_path, "app", "x" * 243)

    message = str(info.value)
    assert "'xxxxxxxxxx" in message
    assert f"{FILE_NAME_LIMIT}-byte" in message
    assert _entries(tmp_path) == []


@pytest.mark.asyncio
async def test_the_limit_counts_utf8_bytes_and_the_longest_id_that_fits_works(tmp_path: Path) -> None:
    store = LocalEvalSetManager(tmp_path)
    with pytest.raises(ConfigError) as info:
        await store.create("app", "é" * 122)  # 244 bytes + 13 > 255
    assert "244 bytes" in str(info.value)
    assert "at most 242 bytes" in str(info.value)

    await store.create("app", "é" * 121)  # 242 bytes + 13 = 255
    assert await store.list("app") == ["é" * 121]


@pytest.mark.asyncio
@pytest.mark.parametrize("operation", [*OPERATIONS, *APP_ONLY])
async def test_an_app_name_too_long_for_a_directory_is_a_config_error(tmp_path: Path, operation: str) -> None:
    app = "a" * (FILE_NAME_LIMIT + 1)
    with pytest.raises(ConfigError, match=rf"app name 'a+\S*' .*{FILE_NAME_LIMIT + 1} bytes"):
        if operation in OPERATIONS:
            await OPERATIONS[operation](tmp_path, app, "set")
        else:
            await APP_ONLY[operation](tmp_path, app)
    assert _entries(tmp_path) == []


@pytest.mark.asyncio
async def test_a_custom_locator_s_file_names_are_checked_too(tmp_path: Path) -> None:
    class Nested:
        def build(self, base_dir: Path, app_name: str, item_id: str) -> Path:
            return base_dir / app_name / "sets" / f"{item_id}-{item_id}.json"

        def list(self, base_dir: Path, app_name: str) -> list[str]:
            return []

    store = LocalEvalSetManager(tmp_path, locator=Nested())
    with pytest.raises(ConfigError, match=r"eval set id 'x+'…'x+' \(200 bytes\).*406 bytes.*at most 124 bytes"):
        await store.create("app", "x" * 200)
    assert _entries(tmp_path) == []


# --- result ids: checked before the agent runs ---


def test_the_local_result_store_checks_a_new_result_id(tmp_path: Path) -> None:
    store = LocalEvalResultManager(tmp_path)
    store.check_new_result_id("app", "r" * 235)  # + ".evalset_result.json" = 255 bytes

    with pytest.raises(ConfigError) as info:
        store.check_new_result_id("app", "r" * 236)

    message = str(info.value)
    assert "eval set result id 'rrrr" in message
    assert "236 bytes" in message
    assert "at most 235 bytes" in message
    assert "shorter app name or eval set id" in message
    assert _entries(tmp_path) == []


@pytest.mark.asyncio
async def test_saving_a_result_whose_file_name_is_too_long_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="eval set result id"):
        await LocalEvalResultManager(tmp_path).save("app", make_result(eval_set_result_id="r" * 236))
    assert _entries(tmp_path) == []


def test_the_in_memory_result_store_takes_long_ids_but_not_lone_surrogates() -> None:
    store = InMemoryEvalResultManager()
    store.check_new_result_id("app", "r" * 10_000)

    with pytest.raises(ConfigError, match=f"eval set result id {re.escape(SHOWN)}.*surrogate"):
        store.check_new_result_id("app", SURROGATE)
    with pytest.raises(ConfigError, match="app name"):
        store.check_new_result_id(SURROGATE, "r")


def _agent_that_counts(calls: list[str]) -> Callable[[str], str]:
    def agent(message: str) -> str:
        calls.append(message)
        return "hi"

    return agent


def test_an_eval_set_whose_default_result_id_is_too_long_fails_before_the_agent_runs(tmp_path: Path) -> None:
    calls: list[str] = []
    evaluator = ae.Evaluator(
        "app", _agent_that_counts(calls), result_manager=LocalEvalResultManager(tmp_path), progress=False
    )
    eval_set = ae.EvalSet.of("s" * 200, [ae.EvalCase.of("c1", "hi", expect="hi")])

    with pytest.raises(ConfigError) as info:
        evaluator.evaluate(eval_set, metrics=[ae.EvalMetric.final_response()])

    assert "eval set result id 'app_ssss" in str(info.value)
    assert "shorter app name or eval set id" in str(info.value)
    assert calls == []
    assert _entries(tmp_path) == []


def test_an_app_name_with_a_lone_surrogate_fails_before_the_agent_runs() -> None:
    calls: list[str] = []
    evaluator = ae.Evaluator(SURROGATE, _agent_that_counts(calls), progress=False)
    eval_set = ae.EvalSet.of("set", [ae.EvalCase.of("c1", "hi", expect="hi")])

    with pytest.raises(ConfigError, match="surrogate"):
        evaluator.evaluate(eval_set, metrics=[ae.EvalMetric.final_response()])

    assert calls == []


def test_an_error_naming_a_lone_surrogate_can_be_printed(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError) as info:
        run_sync(LocalMetricManager(tmp_path).get("app", "set", "m\ud800"))

    assert str(info.value) == "metric app.set.m\\ud800 not found"
    str(info.value).encode("utf-8")  # printable: no lone surrogate left in the message
    assert str(ConfigError("café 日本")) == "café 日本"  # other text is left as it is
