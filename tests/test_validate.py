"""The checks of store arguments (``agenteval._util.name_checks``), with the reference framework's messages."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping
from typing import Any

import pytest

from agenteval._util.name_checks import (
    STORE_NAMES,
    NameRule,
    check_file_names,
    check_names,
    check_result,
    file_names,
    nonempty_names,
)
from agenteval.errors import ConfigError
from agenteval.evalresult.local import LocalEvalResultManager
from agenteval.evalresult.memory import InMemoryEvalResultManager
from agenteval.evalresult.models import EvalSetResult
from agenteval.evalresult.mysql import MySQLEvalResultManager
from agenteval.evalset.local import LocalEvalSetManager
from agenteval.evalset.memory import InMemoryEvalSetManager
from agenteval.evalset.mysql import MySQLEvalSetManager
from agenteval.metric.local import LocalMetricManager
from agenteval.metric.memory import InMemoryMetricManager
from agenteval.metric.mysql import MySQLMetricManager
from tests.evalresult._data import make_result


def test_check_names_words_the_keyword_and_checks_in_order() -> None:
    with pytest.raises(ConfigError, match="^app name is empty$"):
        check_names(app_name="", eval_set_result_id="")
    with pytest.raises(ConfigError, match="^eval set result id is empty$"):
        check_names(app_name="app", eval_set_result_id="")
    with pytest.raises(ConfigError, match="^eval case id is empty$"):
        check_names(app_name="app", eval_set_id="set", eval_case_id="")
    check_names(app_name="app", eval_set_id="set", metric_name="m")


@pytest.mark.parametrize("name", ["math-basic", "math_basic.v2", "app.name", "a..b", "...", "评估集", "x y"])
def test_check_file_names_accepts_ordinary_ids(name: str) -> None:
    check_file_names(eval_set_id=name)


def test_check_file_names_rejects_an_empty_name() -> None:
    with pytest.raises(ConfigError, match="^eval set id is empty$"):
        check_file_names(eval_set_id="")


@pytest.mark.parametrize("name", [".", "..", "a/b", "../etc", "/abs", "dir/", "a\\b", "..\\up", "nul\0byte"])
def test_check_file_names_rejects_names_that_could_leave_the_directory(name: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_file_names(eval_set_id=name)
    assert str(info.value).startswith(f"eval set id {name!r} is not allowed in a file name")


def test_check_file_names_checks_one_name_at_a_time_in_order() -> None:
    with pytest.raises(ConfigError, match="^app name 'a/b' is not allowed"):
        check_file_names(app_name="a/b", eval_set_id="")
    with pytest.raises(ConfigError, match="^eval set id is empty$"):
        check_file_names(app_name="app", eval_set_id="")


def test_check_result_order() -> None:
    with pytest.raises(ConfigError, match="^eval set result is None$"):
        check_result(None)
    with pytest.raises(ConfigError, match="^the eval set id of eval set result is empty$"):
        check_result(EvalSetResult())
    result = make_result()
    assert check_result(result) is result


class Store:
    """A store whose methods record what reached them."""

    def __init__(self) -> None:
        self.reached: list[tuple[str, ...]] = []

    @nonempty_names
    async def get(self, app_name: str, eval_set_id: str, eval_case_id: str, *, deep: bool = False) -> str:
        """Return one case."""
        self.reached.append((app_name, eval_set_id, eval_case_id))
        return eval_case_id

    @file_names
    async def get_metric(self, app_name: str, eval_set_id: str, metric_name: str) -> str:
        self.reached.append((app_name, eval_set_id, metric_name))
        return metric_name


@pytest.mark.asyncio
async def test_a_rule_checks_the_named_arguments_by_position_or_keyword_in_parameter_order() -> None:
    store = Store()
    assert await store.get("app", "set", "case") == "case"
    assert await store.get("app", eval_case_id="case", eval_set_id="set") == "case"
    calls: list[tuple[tuple[str, ...], dict[str, Any], str]] = [
        (("", "", ""), {}, "app name is empty"),
        (("app", "", ""), {}, "eval set id is empty"),
        (("app",), {"eval_case_id": "", "eval_set_id": ""}, "eval set id is empty"),
        (("app", "set"), {"eval_case_id": ""}, "eval case id is empty"),
    ]
    for args, kwargs, message in calls:
        with pytest.raises(ConfigError, match=f"^{message}$"):
            await store.get(*args, **kwargs)
    assert store.reached == [("app", "set", "case")] * 2


@pytest.mark.asyncio
async def test_the_file_rule_checks_file_names_and_only_emptiness_of_names_inside_a_file() -> None:
    store = Store()
    assert await store.get_metric("app", "set", "a/b") == "a/b"  # a metric name is no file name
    with pytest.raises(ConfigError, match="^eval set id 'a/b' is not allowed in a file name"):
        await store.get_metric("app", "a/b", "")
    with pytest.raises(ConfigError, match="^metric name is empty$"):
        await store.get_metric("app", "set", "")


@pytest.mark.asyncio
async def test_a_rule_checks_when_the_call_is_awaited_and_keeps_the_method_s_face() -> None:
    store = Store()
    pending = store.get("", "set", "case")  # no error yet, as with a check in the method's body
    with pytest.raises(ConfigError, match="^app name is empty$"):
        await pending
    assert Store.get.__name__ == "get"
    assert Store.get.__doc__ == "Return one case."
    assert list(inspect.signature(Store.get).parameters) == ["self", "app_name", "eval_set_id", "eval_case_id", "deep"]
    assert inspect.iscoroutinefunction(Store.get)


def test_then_adds_a_check_given_the_names_under_its_own_keywords() -> None:
    seen: list[Mapping[str, Any]] = []
    rule = nonempty_names.then(lambda **names: seen.append(names), eval_case_id="eval_id")
    rule.check(app_name="app", eval_case_id="case")
    assert seen == [{"app_name": "app", "eval_id": "case"}]
    with pytest.raises(ConfigError, match="^app name is empty$"):
        rule.check(app_name="", eval_case_id="case")
    assert len(seen) == 1


def test_a_method_without_names_cannot_be_decorated() -> None:
    async def close(self: object) -> None: ...

    with pytest.raises(TypeError, match="^test_a_method_without_names_cannot_be_decorated.<locals>.close takes none"):
        NameRule(lambda names: None)(close)


STORES = [
    InMemoryEvalSetManager,
    LocalEvalSetManager,
    MySQLEvalSetManager,
    InMemoryMetricManager,
    LocalMetricManager,
    MySQLMetricManager,
    InMemoryEvalResultManager,
    LocalEvalResultManager,
    MySQLEvalResultManager,
]


@pytest.mark.parametrize("store", STORES, ids=[store.__name__ for store in STORES])
def test_every_store_method_taking_names_checks_them_through_a_rule(store: type) -> None:
    # An eval-set store's save checks the set it is given, then the app name with the set's id
    # (evalset/_case_edits.whole_set), as it always has.
    unchecked = {"save"} if "EvalSet" in store.__name__ else set()
    taking_names = [
        name
        for name, method in vars(store).items()
        if not name.startswith("_")
        and asyncio.iscoroutinefunction(method)
        and STORE_NAMES & set(inspect.signature(method).parameters)
    ]
    assert taking_names
    assert {name for name in taking_names if not hasattr(vars(store)[name], "__wrapped__")} == unchecked
