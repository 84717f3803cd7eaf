"""Contract tests shared by the in-memory and local metric stores."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from agenteval.errors import ConfigError, NotFoundError
from agenteval.metric.criterion import Criterion, JudgeModelOptions, LLMCriterion
from agenteval.metric.local import LocalMetricManager
from agenteval.metric.manager import MetricManager, all_metrics
from agenteval.metric.memory import InMemoryMetricManager
from agenteval.metric.models import EvalMetric
from agenteval.metric.mysql import MySQLMetricManager
from tests.evalset._store_contract import empty_name_params, in_several_event_loops

APP = "app"
SET = "set"


def make_metric(name: str, threshold: float = 0.5) -> EvalMetric:
    return EvalMetric(
        metric_name=name,
        evaluator_name="llm_rubric_response",
        threshold=threshold,
        criterion=Criterion(llm_judge=LLMCriterion(judge_model=JudgeModelOptions(model_name="gpt", num_samples=3))),
        extension={"weights": [1, 2]},
    )


@pytest.fixture(params=["memory", "local"])
def manager(request: pytest.FixtureRequest, tmp_path: Path) -> MetricManager:
    if request.param == "memory":
        return InMemoryMetricManager()
    return LocalMetricManager(tmp_path)


def reads_all(manager: MetricManager) -> InMemoryMetricManager | LocalMetricManager | MySQLMetricManager:
    """A shipped store, which has ``get_all``."""
    assert isinstance(manager, InMemoryMetricManager | LocalMetricManager | MySQLMetricManager)
    return manager


def test_satisfies_protocol(manager: MetricManager) -> None:
    assert isinstance(manager, MetricManager)


@pytest.mark.asyncio
async def test_list_empty(manager: MetricManager) -> None:
    assert await manager.list(APP, SET) == []
    await manager.add("other-app", SET, make_metric("m"))
    await manager.add(APP, "other-set", make_metric("m"))
    assert await manager.list(APP, SET) == []


@pytest.mark.asyncio
async def test_add_get_list_in_order(manager: MetricManager) -> None:
    for name in ["z", "a", "m"]:
        await manager.add(APP, SET, make_metric(name))
    assert await manager.list(APP, SET) == ["z", "a", "m"]
    assert await manager.get(APP, SET, "a") == make_metric("a")


@pytest.mark.asyncio
async def test_get_all_reads_every_metric_in_order(manager: MetricManager) -> None:
    assert await reads_all(manager).get_all(APP, SET) == []
    for name in ["z", "a", "m"]:
        await manager.add(APP, SET, make_metric(name))
    await manager.add(APP, "other-set", make_metric("other"))
    await manager.add("other-app", SET, make_metric("other"))
    expected = [await manager.get(APP, SET, name) for name in await manager.list(APP, SET)]
    assert expected == [make_metric("z"), make_metric("a"), make_metric("m")]
    assert await reads_all(manager).get_all(APP, SET) == expected
    assert await all_metrics(manager, APP, SET) == expected


@pytest.mark.asyncio
async def test_get_all_returns_copies(manager: MetricManager) -> None:
    await manager.add(APP, SET, make_metric("m"))
    [got] = await reads_all(manager).get_all(APP, SET)
    got.threshold = 0.9
    got.extension["weights"].clear()
    assert await reads_all(manager).get_all(APP, SET) == [make_metric("m")]


@pytest.mark.asyncio
async def test_sets_are_independent(manager: MetricManager) -> None:
    await manager.add(APP, SET, make_metric("m", 0.1))
    await manager.add(APP, "t", make_metric("m", 0.2))
    await manager.add("b", SET, make_metric("m", 0.3))
    assert (await manager.get(APP, SET, "m")).threshold == 0.1
    assert (await manager.get(APP, "t", "m")).threshold == 0.2
    assert (await manager.get("b", SET, "m")).threshold == 0.3


@pytest.mark.asyncio
async def test_add_duplicate(manager: MetricManager) -> None:
    await manager.add(APP, SET, make_metric("m", 0.1))
    with pytest.raises(ConfigError, match=r"^metric app\.set\.m already exists$"):
        await manager.add(APP, SET, make_metric("m", 0.9))
    assert await manager.list(APP, SET) == ["m"]
    assert (await manager.get(APP, SET, "m")).threshold == 0.1


@pytest.mark.asyncio
async def test_get_missing(manager: MetricManager) -> None:
    with pytest.raises(NotFoundError, match=r"^metric app\.set\.m not found$"):
        await manager.get(APP, SET, "m")
    await manager.add(APP, SET, make_metric("other"))
    with pytest.raises(NotFoundError, match=r"^metric app\.set\.m not found$"):
        await manager.get(APP, SET, "m")


@pytest.mark.asyncio
async def test_update(manager: MetricManager) -> None:
    for name in ["a", "b", "c"]:
        await manager.add(APP, SET, make_metric(name))
    replacement = EvalMetric(metric_name="b", threshold=1.0)
    await manager.update(APP, SET, replacement)
    assert await manager.list(APP, SET) == ["a", "b", "c"]
    assert await manager.get(APP, SET, "b") == replacement


@pytest.mark.asyncio
async def test_update_missing(manager: MetricManager) -> None:
    with pytest.raises(NotFoundError, match=r"^metric app\.set\.m not found$"):
        await manager.update(APP, SET, make_metric("m"))
    await manager.add(APP, SET, make_metric("other"))
    with pytest.raises(NotFoundError, match=r"^metric app\.set\.m not found$"):
        await manager.update(APP, SET, make_metric("m"))
    assert await manager.list(APP, SET) == ["other"]


@pytest.mark.asyncio
async def test_delete(manager: MetricManager) -> None:
    for name in ["a", "b", "c"]:
        await manager.add(APP, SET, make_metric(name))
    await manager.delete(APP, SET, "b")
    assert await manager.list(APP, SET) == ["a", "c"]
    with pytest.raises(NotFoundError, match=r"^metric app\.set\.b not found$"):
        await manager.delete(APP, SET, "b")
    await manager.delete(APP, SET, "a")
    await manager.delete(APP, SET, "c")
    assert await manager.list(APP, SET) == []
    await manager.add(APP, SET, make_metric("b"))  # the name is free again
    assert await manager.list(APP, SET) == ["b"]


@pytest.mark.asyncio
async def test_delete_missing_set(manager: MetricManager) -> None:
    with pytest.raises(NotFoundError, match=r"^metric app\.set\.m not found$"):
        await manager.delete(APP, SET, "m")


@pytest.mark.asyncio
async def test_invalid_metric_argument(manager: MetricManager) -> None:
    for method in [manager.add, manager.update]:
        with pytest.raises(ConfigError, match=r"^metric is None$"):
            await method(APP, SET, None)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match=r"^metric name is empty$"):
            await method(APP, SET, EvalMetric(threshold=1))
    assert await manager.list(APP, SET) == []


@pytest.mark.asyncio
async def test_a_metric_json_cannot_hold_is_rejected(manager: MetricManager) -> None:
    await manager.add(APP, SET, make_metric("m"))
    with_nan = make_metric("m")
    with_nan.extension = {"weights": [1, float("nan")]}
    with_inf = make_metric("new")
    with_inf.threshold = float("-inf")

    with pytest.raises(ConfigError) as info:
        await manager.update(APP, SET, with_nan)
    assert str(info.value) == (
        "metric app.set.m: field extension.weights[1] is not a finite number (NaN); "
        "JSON has no NaN or Infinity, so store a finite number (or a string) instead"
    )
    with pytest.raises(
        ConfigError, match=r"^metric app\.set\.new: field threshold is not a finite number \(-Infinity\)"
    ):
        await manager.add(APP, SET, with_inf)
    assert await manager.list(APP, SET) == ["m"]
    assert await manager.get(APP, SET, "m") == make_metric("m")


@pytest.mark.asyncio
async def test_copies(manager: MetricManager) -> None:
    metric = make_metric("m")
    await manager.add(APP, SET, metric)
    metric.threshold = 0.9
    metric.extension["weights"].append(3)

    got = await manager.get(APP, SET, "m")
    assert got == make_metric("m")
    got.extension["weights"].clear()
    assert got.criterion is not None
    got.criterion.llm_judge = None
    assert await manager.get(APP, SET, "m") == make_metric("m")

    replacement = make_metric("m", 0.7)
    await manager.update(APP, SET, replacement)
    replacement.extension["weights"].clear()
    assert (await manager.get(APP, SET, "m")).extension == {"weights": [1, 2]}


Call = Callable[[MetricManager], Awaitable[object]]

EMPTY_NAME_CALLS: list[tuple[str, Call, str]] = [
    ("list-app", lambda m: m.list("", SET), "app name is empty"),
    ("list-set", lambda m: m.list(APP, ""), "eval set id is empty"),
    ("get-app", lambda m: m.get("", SET, "m"), "app name is empty"),
    ("get-set", lambda m: m.get(APP, "", "m"), "eval set id is empty"),
    ("get-metric", lambda m: m.get(APP, SET, ""), "metric name is empty"),
    ("get_all-app", lambda m: reads_all(m).get_all("", SET), "app name is empty"),
    ("get_all-set", lambda m: reads_all(m).get_all(APP, ""), "eval set id is empty"),
    ("add-app", lambda m: m.add("", SET, make_metric("m")), "app name is empty"),
    ("add-set", lambda m: m.add(APP, "", make_metric("m")), "eval set id is empty"),
    ("update-app", lambda m: m.update("", SET, make_metric("m")), "app name is empty"),
    ("update-set", lambda m: m.update(APP, "", make_metric("m")), "eval set id is empty"),
    ("delete-app", lambda m: m.delete("", SET, "m"), "app name is empty"),
    ("delete-set", lambda m: m.delete(APP, "", "m"), "eval set id is empty"),
    ("delete-metric", lambda m: m.delete(APP, SET, ""), "metric name is empty"),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(("call", "message"), empty_name_params(EMPTY_NAME_CALLS))
async def test_empty_names(manager: MetricManager, call: Call, message: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{message}$"):
        await call(manager)


@pytest.mark.asyncio
async def test_close(manager: MetricManager) -> None:
    assert await manager.close() is None  # type: ignore[func-returns-value]


@pytest.mark.asyncio
async def test_concurrent_add_loses_nothing(manager: MetricManager) -> None:
    names = [f"metric-{i:03d}" for i in range(100)]
    await asyncio.gather(*(manager.add(APP, SET, make_metric(n)) for n in names))
    assert sorted(await manager.list(APP, SET)) == names


def test_used_from_several_event_loops(manager: MetricManager) -> None:
    async def add_many(prefix: str) -> None:
        await asyncio.gather(*(manager.add(APP, SET, make_metric(f"{prefix}-{i}")) for i in range(15)))

    in_several_event_loops(add_many)
    with asyncio.Runner() as runner:
        assert len(runner.run(manager.list(APP, SET))) == 45


@pytest.mark.asyncio
async def test_memory_keeps_api_key() -> None:
    manager = InMemoryMetricManager()
    metric = make_metric("m")
    assert metric.criterion is not None and metric.criterion.llm_judge is not None
    assert metric.criterion.llm_judge.judge_model is not None
    metric.criterion.llm_judge.judge_model.api_key = "secret"
    await manager.add(APP, SET, metric)
    metric.criterion.llm_judge.judge_model.api_key = "changed"

    got = await manager.get(APP, SET, "m")
    assert got.criterion is not None and got.criterion.llm_judge is not None
    assert got.criterion.llm_judge.judge_model is not None
    assert got.criterion.llm_judge.judge_model.api_key == "secret"
    got.criterion.llm_judge.judge_model.api_key = "mutated"
    again = await manager.get(APP, SET, "m")
    assert again.criterion is not None and again.criterion.llm_judge is not None
    assert again.criterion.llm_judge.judge_model is not None
    assert again.criterion.llm_judge.judge_model.api_key == "secret"


class ListAndGet:
    """A metric manager written without ``get_all``, as a user's own store may be."""

    def __init__(self, metrics: list[EvalMetric], failing: str = "") -> None:
        self.metrics = metrics
        self.failing = failing
        self.calls: list[str] = []

    async def list(self, app_name: str, eval_set_id: str) -> list[str]:
        self.calls.append("list")
        return [metric.metric_name for metric in self.metrics]

    async def get(self, app_name: str, eval_set_id: str, metric_name: str) -> EvalMetric:
        self.calls.append(f"get {metric_name}")
        if metric_name == self.failing:
            raise NotFoundError(f"metric {app_name}.{eval_set_id}.{metric_name} not found")
        return next(metric for metric in self.metrics if metric.metric_name == metric_name)

    async def add(self, app_name: str, eval_set_id: str, metric: EvalMetric) -> None:
        raise NotImplementedError

    async def update(self, app_name: str, eval_set_id: str, metric: EvalMetric) -> None:
        raise NotImplementedError

    async def delete(self, app_name: str, eval_set_id: str, metric_name: str) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        """Nothing to release."""


@pytest.mark.asyncio
async def test_all_metrics_lists_then_gets_from_a_store_without_get_all() -> None:
    store = ListAndGet([make_metric("a"), make_metric("b")])
    assert isinstance(store, MetricManager)
    assert await all_metrics(store, APP, SET) == [make_metric("a"), make_metric("b")]
    assert store.calls == ["list", "get a", "get b"]

    with pytest.raises(NotFoundError, match=r"^get metric b: metric app\.set\.b not found$"):
        await all_metrics(ListAndGet([make_metric("a"), make_metric("b")], failing="b"), APP, SET)


@pytest.mark.asyncio
async def test_all_metrics_reads_a_shipped_store_at_once(
    manager: MetricManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    await manager.add(APP, SET, make_metric("a"))
    await manager.add(APP, SET, make_metric("b"))

    async def refused(*args: object) -> object:
        raise AssertionError("all_metrics must not list and get one by one")

    monkeypatch.setattr(manager, "list", refused)
    monkeypatch.setattr(manager, "get", refused)
    assert await all_metrics(manager, APP, SET) == [make_metric("a"), make_metric("b")]
    with pytest.raises(ConfigError, match=r"^list metrics: app name is empty$"):
        await all_metrics(manager, "", SET)


class Strict(InMemoryMetricManager):
    """A user's store that changes what ``get`` returns: every threshold raised to 1."""

    async def get(self, app_name: str, eval_set_id: str, metric_name: str) -> EvalMetric:
        metric = await super().get(app_name, eval_set_id, metric_name)
        return metric.model_copy(update={"threshold": 1.0})


class OnlyA(InMemoryMetricManager):
    """A user's store that lists only some of the metrics it holds."""

    async def list(self, app_name: str, eval_set_id: str) -> list[str]:
        return [name for name in await super().list(app_name, eval_set_id) if name == "a"]


@pytest.mark.asyncio
@pytest.mark.parametrize("store_class", [Strict, OnlyA])
async def test_all_metrics_reads_through_a_subclass_that_overrides_list_or_get(
    store_class: type[InMemoryMetricManager],
) -> None:
    store = store_class()
    await store.add(APP, SET, make_metric("a"))
    await store.add(APP, SET, make_metric("b"))
    names = await store.list(APP, SET)

    assert await all_metrics(store, APP, SET) == [await store.get(APP, SET, name) for name in names]
