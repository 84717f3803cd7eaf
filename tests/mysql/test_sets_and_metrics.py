"""The MySQL eval-set and metric stores against the real server, beyond the shared contracts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from decimal import Decimal
from typing import Any

import pytest
import pytest_asyncio

from agenteval.errors import ConfigError, NotFoundError
from agenteval.evalset import MySQLEvalSetManager
from agenteval.evalset.models import EvalCase, EvalMode, Invocation
from agenteval.metric import MySQLMetricManager
from agenteval.metric.criterion import Criterion, JudgeModelOptions, LLMCriterion
from agenteval.metric.models import EvalMetric
from tests.mysql.conftest import MySQLServer
from tests.mysql.test_results import INJECTIONS

pytestmark = [pytest.mark.mysql, pytest.mark.asyncio]


@pytest_asyncio.fixture
async def sets(mysql: MySQLServer) -> AsyncIterator[MySQLEvalSetManager]:
    manager = MySQLEvalSetManager(mysql.dsn, table_prefix=mysql.prefix)
    yield manager
    await manager.close()


@pytest_asyncio.fixture
async def metrics(mysql: MySQLServer) -> AsyncIterator[MySQLMetricManager]:
    manager = MySQLMetricManager(mysql.dsn, table_prefix=mysql.prefix)
    yield manager
    await manager.close()


def sets_table(mysql: MySQLServer) -> str:
    return f"{mysql.prefix}evaluation_eval_sets"


def cases_table(mysql: MySQLServer) -> str:
    return f"{mysql.prefix}evaluation_eval_cases"


def metrics_table(mysql: MySQLServer) -> str:
    return f"{mysql.prefix}evaluation_metrics"


async def test_create_returns_the_stored_creation_time(sets: MySQLEvalSetManager, mysql: MySQLServer) -> None:
    created = await sets.create("app", "set")
    [(name, description, unix)] = mysql.query(
        f"SELECT name, description, UNIX_TIMESTAMP(created_at) FROM `{sets_table(mysql)}`"
    )
    assert (name, description) == ("set", "")
    assert isinstance(unix, Decimal)
    assert created.creation_timestamp == float(unix)
    assert (await sets.get("app", "set")).creation_timestamp == created.creation_timestamp


async def test_cases_are_rows_in_insertion_order(sets: MySQLEvalSetManager, mysql: MySQLServer) -> None:
    await sets.create("app", "set")
    await sets.create("app", "other")
    for eval_id in ["z", "a", "m"]:
        await sets.add_case("app", "set", EvalCase(eval_id=eval_id, eval_mode=EvalMode.TRACE))
    await sets.add_case("app", "other", EvalCase(eval_id="a"))
    rows = mysql.query(f"SELECT eval_set_id, eval_id, eval_mode FROM `{cases_table(mysql)}` ORDER BY id")
    assert rows == [("set", "z", "trace"), ("set", "a", "trace"), ("set", "m", "trace"), ("other", "a", "")]
    await sets.update_case("app", "set", EvalCase(eval_id="z", conversation=[Invocation(invocation_id="i")]))
    assert [c.eval_id for c in (await sets.get("app", "set")).eval_cases] == ["z", "a", "m"]
    [(mode,)] = mysql.query(f"SELECT eval_mode FROM `{cases_table(mysql)}` WHERE eval_id = 'z'")
    assert mode == ""

    await sets.delete("app", "set")
    assert mysql.query(f"SELECT eval_set_id, eval_id FROM `{cases_table(mysql)}`") == [("other", "a")]
    assert await sets.list("app") == ["other"]


async def test_a_concurrent_delete_leaves_no_orphan_cases(sets: MySQLEvalSetManager, mysql: MySQLServer) -> None:
    await sets.create("app", "set")
    adds = [sets.add_case("app", "set", EvalCase(eval_id=f"c{index}")) for index in range(30)]
    outcomes = await asyncio.gather(*adds[:15], sets.delete("app", "set"), *adds[15:], return_exceptions=True)
    assert outcomes[15] is None
    assert all(outcome is None or isinstance(outcome, NotFoundError) for outcome in outcomes)
    assert mysql.query(f"SELECT COUNT(*) FROM `{cases_table(mysql)}`") == [(0,)]


async def test_malformed_case_row_names_table_and_ids(sets: MySQLEvalSetManager, mysql: MySQLServer) -> None:
    await sets.create("app", "set")
    mysql.query(
        f"INSERT INTO `{cases_table(mysql)}` (app_name, eval_set_id, eval_id, eval_case)"
        """ VALUES ('app', 'set', 'bad', '{"evalId": ["not", "a", "string"]}')"""
    )
    prefix = f"eval case app.set.bad in table {cases_table(mysql)} is malformed: field evalId"
    with pytest.raises(ConfigError, match=f"^{prefix}"):
        await sets.get_case("app", "set", "bad")
    with pytest.raises(ConfigError, match=f"^{prefix}"):
        await sets.get("app", "set")


@pytest.mark.parametrize("template", INJECTIONS)
async def test_hostile_eval_set_names_are_stored_verbatim(
    sets: MySQLEvalSetManager, mysql: MySQLServer, template: str
) -> None:
    text = template.format(table=sets_table(mysql))
    created = await sets.create(text, text)
    assert created.eval_set_id == created.name == text
    await sets.add_case(text, text, EvalCase(eval_id=text))
    assert (await sets.get_case(text, text, text)).eval_id == text
    got = await sets.get(text, text)
    assert (got.eval_set_id, got.name, [c.eval_id for c in got.eval_cases]) == (text, text, [text])
    assert await sets.list(text) == [text]
    await sets.delete_case(text, text, text)
    await sets.delete(text, text)
    assert set(mysql.tables()) >= {sets_table(mysql), cases_table(mysql)}
    assert mysql.query(f"SELECT COUNT(*) FROM `{sets_table(mysql)}`") == [(0,)]


async def test_metrics_are_listed_in_insertion_order_and_keep_no_api_key(
    metrics: MySQLMetricManager, mysql: MySQLServer
) -> None:
    judge = JudgeModelOptions(model_name="gpt", api_key="secret-key")
    for name in ["z", "a", "m"]:
        await metrics.add(
            "app", "set", EvalMetric(metric_name=name, criterion=Criterion(llm_judge=LLMCriterion(judge_model=judge)))
        )
    assert await metrics.list("app", "set") == ["z", "a", "m"]
    stored = await metrics.get("app", "set", "a")
    assert stored.criterion is not None and stored.criterion.llm_judge is not None
    assert stored.criterion.llm_judge.judge_model is not None
    assert stored.criterion.llm_judge.judge_model.api_key == ""
    [(payload,)] = mysql.query(f"SELECT metric FROM `{metrics_table(mysql)}` WHERE metric_name = 'a'")
    assert "secret-key" not in payload
    assert payload.startswith('{"metricName":"a"')


async def test_malformed_metric_row_names_table_and_ids(metrics: MySQLMetricManager, mysql: MySQLServer) -> None:
    await metrics.list("app", "set")
    mysql.query(
        f"INSERT INTO `{metrics_table(mysql)}` (app_name, eval_set_id, metric_name, metric)"
        """ VALUES ('app', 'set', 'bad', '{"threshold": "high"}')"""
    )
    with pytest.raises(ConfigError, match=rf"^metric app\.set\.bad in table {metrics_table(mysql)} is malformed: "):
        await metrics.get("app", "set", "bad")
    with pytest.raises(ConfigError, match=rf"^metric app\.set\.bad in table {metrics_table(mysql)} is malformed: "):
        await metrics.get_all("app", "set")


@pytest.mark.parametrize("template", INJECTIONS)
async def test_hostile_metric_names_are_stored_verbatim(
    metrics: MySQLMetricManager, mysql: MySQLServer, template: str
) -> None:
    text = template.format(table=metrics_table(mysql))
    await metrics.add(text, text, EvalMetric(metric_name=text, threshold=0.5))
    assert await metrics.list(text, text) == [text]
    assert (await metrics.get(text, text, text)).metric_name == text
    await metrics.update(text, text, EvalMetric(metric_name=text, threshold=0.7))
    assert (await metrics.get(text, text, text)).threshold == 0.7
    await metrics.delete(text, text, text)
    assert metrics_table(mysql) in mysql.tables()
    assert mysql.query(f"SELECT COUNT(*) FROM `{metrics_table(mysql)}`") == [(0,)]


async def test_updating_with_identical_content_still_finds_the_row(metrics: MySQLMetricManager) -> None:
    metric = EvalMetric(metric_name="m", threshold=0.5)
    await metrics.add("app", "set", metric)
    await metrics.update("app", "set", metric)
    await metrics.update("app", "set", metric)
    assert await metrics.get("app", "set", "m") == metric


LOST = (2013, "Lost connection to MySQL server during query")


def lose_first_reply(store: MySQLEvalSetManager | MySQLMetricManager, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the first attempt of every operation run, commit, and then lose its connection."""
    pymysql = pytest.importorskip("pymysql")
    real_call = store._client.call

    async def call(operation: str, table: str, action: Callable[[Any], Any], **options: Any) -> Any:
        attempts: list[int] = []

        def reply_lost_once(conn: Any) -> Any:
            result = action(conn)
            attempts.append(1)
            if len(attempts) == 1:
                raise pymysql.err.OperationalError(*LOST)
            return result

        return await real_call(operation, table, reply_lost_once, **options)

    monkeypatch.setattr(store._client, "call", call)


async def test_inserts_whose_reply_was_lost_succeed_on_the_retry(
    sets: MySQLEvalSetManager, metrics: MySQLMetricManager, mysql: MySQLServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    lose_first_reply(sets, monkeypatch)
    lose_first_reply(metrics, monkeypatch)
    created = await sets.create("app", "set")
    await sets.add_case("app", "set", EvalCase(eval_id="c1", conversation=[Invocation(invocation_id="t1")]))
    await metrics.add("app", "set", EvalMetric(metric_name="m", evaluator_name="e", threshold=0.5))

    assert (await sets.get("app", "set")).creation_timestamp == created.creation_timestamp
    assert [case.eval_id for case in (await sets.get("app", "set")).eval_cases] == ["c1"]
    assert await metrics.list("app", "set") == ["m"]
    assert mysql.query(f"SELECT COUNT(*) FROM `{cases_table(mysql)}`") == [(1,)]


async def test_a_retry_that_finds_another_row_is_a_duplicate(
    metrics: MySQLMetricManager, mysql: MySQLServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pymysql = pytest.importorskip("pymysql")
    await metrics.add("app", "set", EvalMetric(metric_name="m", evaluator_name="theirs", threshold=0.5))
    real_call = metrics._client.call
    attempts: list[int] = []

    async def lost_before_the_server_saw_it(
        operation: str, table: str, action: Callable[[Any], Any], **options: Any
    ) -> Any:
        def lost_once(conn: Any) -> Any:
            attempts.append(1)
            if len(attempts) == 1:
                raise pymysql.err.OperationalError(*LOST)
            return action(conn)

        return await real_call(operation, table, lost_once, **options)

    monkeypatch.setattr(metrics._client, "call", lost_before_the_server_saw_it)
    with pytest.raises(ConfigError, match=r"^metric app\.set\.m already exists$"):
        await metrics.add("app", "set", EvalMetric(metric_name="m", evaluator_name="mine", threshold=0.5))
    assert len(attempts) == 2
    assert (await metrics.get("app", "set", "m")).evaluator_name == "theirs"
