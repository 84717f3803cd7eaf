"""The MySQL result store against the real server, beyond the shared contract."""

from __future__ import annotations

import asyncio
import re
import socket
import time
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

import agenteval as ae
from agenteval.errors import ConfigError, NotFoundError, StorageError
from agenteval.evalresult import MySQLEvalResultManager
from agenteval.evalresult.local import LocalEvalResultManager
from agenteval.evalresult.models import EvalCaseResult, EvalSetResult
from agenteval.evalresult.records import CaseRecord
from agenteval.evalresult.summary import EvalSetResultSummary
from agenteval.storage import schema_text
from tests.evalresult._data import INTEROP_RESULTS, make_result
from tests.mysql.conftest import MySQLServer

pytestmark = [pytest.mark.mysql, pytest.mark.asyncio]

INJECTIONS = [
    "x'; DROP TABLE {table}; --",
    'x"; DROP TABLE {table}; --',
    "`{table}`; DELETE FROM `{table}`",
    "a\\'b\\\\c %s %(x)s ?",
    "ünïcödé 日本語 — emoji 🙂",
    "' OR '1'='1",
]


@pytest_asyncio.fixture
async def store(mysql: MySQLServer) -> AsyncIterator[MySQLEvalResultManager]:
    manager = MySQLEvalResultManager(mysql.dsn, table_prefix=mysql.prefix)
    yield manager
    await manager.close()


def table(mysql: MySQLServer) -> str:
    return f"{mysql.prefix}evaluation_eval_set_results"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def without_timestamp(result: EvalSetResult) -> dict[str, Any]:
    data = result.to_dict()
    data.pop("creationTimestamp", None)
    return data


@pytest.mark.parametrize(
    "result",
    [
        *(EvalSetResult.from_json(path.read_text(encoding="utf-8")) for path in INTEROP_RESULTS),
        make_result(eval_set_result_id="mine", eval_set_result_name="nightly"),
        make_result(eval_set_result_id="no-summary", summary=None),
        EvalSetResult(eval_set_result_id="empty", eval_set_id="s"),
    ],
    ids=lambda result: result.eval_set_result_id or "generated",
)
async def test_local_and_mysql_read_back_equal(
    store: MySQLEvalResultManager, tmp_path: Path, result: EvalSetResult
) -> None:
    local = LocalEvalResultManager(tmp_path)
    local_id = await local.save("app", result)
    mysql_id = await store.save("app", result)
    assert local_id == mysql_id
    from_local = await local.get("app", local_id)
    from_mysql = await store.get("app", mysql_id)
    expected = result.model_copy(update={"eval_set_result_name": result.eval_set_result_name or mysql_id})
    assert without_timestamp(from_mysql) == without_timestamp(from_local) == without_timestamp(expected)
    assert from_mysql.creation_timestamp is not None


async def test_stored_row(store: MySQLEvalResultManager, mysql: MySQLServer) -> None:
    await store.save("app", EvalSetResult(eval_set_result_id="bare", eval_set_id="set"))
    await store.save("app", make_result(eval_set_result_id="full", summary=EvalSetResultSummary(num_runs=1)))
    rows = mysql.query(
        "SELECT eval_set_result_id, eval_set_id, eval_set_result_name, eval_case_results, summary"
        f" FROM `{table(mysql)}` ORDER BY id"
    )
    assert rows[0] == ("bare", "set", "bare", "[]", None)
    assert rows[1][4] == '{"numRuns":1}'
    assert rows[1][3].startswith('[{"evalSetId":"set","evalId":"case-1"')


async def test_upsert_keeps_created_at(store: MySQLEvalResultManager, mysql: MySQLServer) -> None:
    await store.save("app", make_result("set-1", eval_set_result_id="r1", eval_set_result_name="old"))
    first = await store.get("app", "r1")
    await asyncio.sleep(0.01)
    await store.save("app", make_result("set-2", eval_set_result_id="r1", eval_case_results=[]))
    second = await store.get("app", "r1")
    assert second.creation_timestamp == first.creation_timestamp
    assert (second.eval_set_id, second.eval_set_result_name, second.eval_case_results) == ("set-2", "r1", [])
    assert second.summary is not None
    [(created, updated, count)] = mysql.query(
        f"SELECT created_at, updated_at, (SELECT COUNT(*) FROM `{table(mysql)}`) FROM `{table(mysql)}`"
    )
    assert updated > created
    assert count == 1


async def test_list_is_newest_first_with_ties_by_insertion(store: MySQLEvalResultManager, mysql: MySQLServer) -> None:
    for result_id in ["r1", "r2", "r3"]:
        await store.save("app", make_result(eval_set_result_id=result_id))
    await store.save("other", make_result(eval_set_result_id="r4"))
    assert await store.list("app") == ["r3", "r2", "r1"]
    await store.save("app", make_result("changed", eval_set_result_id="r1"))
    assert await store.list("app") == ["r3", "r2", "r1"]
    mysql.query(f"UPDATE `{table(mysql)}` SET created_at = '2030-01-01 00:00:00.000001' WHERE app_name = 'app'")
    assert await store.list("app") == ["r3", "r2", "r1"]
    assert await store.list("app") == await store.list("app")


async def test_creation_time_is_exact_utc_whatever_the_server_time_zone(
    store: MySQLEvalResultManager, mysql: MySQLServer
) -> None:
    [(original,)] = mysql.query("SELECT @@GLOBAL.time_zone")
    mysql.query("SET GLOBAL time_zone = '+05:30'")
    try:
        before = time.time()
        await store.save("app", make_result(eval_set_result_id="r1"))
        stored = await store.get("app", "r1")
    finally:
        mysql.query("SET GLOBAL time_zone = %s", (original,))
    [(unix,)] = mysql.query(f"SELECT UNIX_TIMESTAMP(created_at) FROM `{table(mysql)}`")
    assert isinstance(unix, Decimal)
    assert stored.creation_timestamp == float(unix)
    assert stored.creation_timestamp is not None
    assert before - 1 <= stored.creation_timestamp <= time.time() + 1


@pytest.mark.parametrize(
    ("cases", "summary", "field"),
    [
        ('{"evalId": "not a list"}', None, "eval_case_results"),
        ('[{"evalId": 7}]', None, "eval_case_results"),
        ("[]", '{"numRuns": "one"}', "summary"),
        ("[]", "[1]", "summary"),
    ],
)
async def test_malformed_row_names_table_app_and_id(
    store: MySQLEvalResultManager, mysql: MySQLServer, cases: str, summary: str | None, field: str
) -> None:
    await store.list("app")  # create the table
    mysql.query(
        f"INSERT INTO `{table(mysql)}` (app_name, eval_set_result_id, eval_set_id, eval_set_result_name,"
        " eval_case_results, summary) VALUES ('app', 'bad', 's', 'bad', %s, %s)",
        (cases, summary),
    )
    with pytest.raises(ConfigError) as info:
        await store.get("app", "bad")
    assert str(info.value).startswith(f"{field} of row app.bad of table {table(mysql)} is malformed: ")


async def test_null_payloads(store: MySQLEvalResultManager, mysql: MySQLServer) -> None:
    await store.list("app")
    mysql.query(
        f"INSERT INTO `{table(mysql)}` (app_name, eval_set_result_id, eval_set_id, eval_set_result_name,"
        " eval_case_results, summary) VALUES ('app', 'r', 's', 'n', 'null', 'null')"
    )
    stored = await store.get("app", "r")
    assert (stored.eval_case_results, stored.summary) == ([], None)


async def test_one_hundred_concurrent_saves(store: MySQLEvalResultManager) -> None:
    results = [make_result(f"set-{index}", eval_set_result_name=f"run {index}") for index in range(100)]
    ids = await asyncio.gather(*(store.save("app", result) for result in results))
    assert len(set(ids)) == 100
    assert sorted(await store.list("app")) == sorted(ids)
    loaded = await asyncio.gather(*(store.get("app", result_id) for result_id in ids))
    assert [stored.eval_set_result_name for stored in loaded] == [f"run {index}" for index in range(100)]


@pytest.mark.parametrize("template", INJECTIONS)
async def test_hostile_names_are_stored_verbatim(
    store: MySQLEvalResultManager, mysql: MySQLServer, template: str
) -> None:
    text = template.format(table=table(mysql))
    result = make_result(text, eval_set_result_id=text, eval_set_result_name=text)
    assert await store.save(text, result) == text
    stored = await store.get(text, text)
    assert (stored.eval_set_result_id, stored.eval_set_result_name, stored.eval_set_id) == (text, text, text)
    assert stored.eval_case_results[0].eval_set_id == text
    assert await store.list(text) == [text]
    generated = await store.save(text, make_result(text))
    assert generated.startswith(f"{text}_{text}_")
    assert (await store.get(text, generated)).eval_set_result_id == generated
    assert table(mysql) in mysql.tables()
    [(count,)] = mysql.query(f"SELECT COUNT(*) FROM `{table(mysql)}`")
    assert count == 2


async def test_killed_connections_are_replaced(store: MySQLEvalResultManager, mysql: MySQLServer) -> None:
    await asyncio.gather(*(store.save("app", make_result(eval_set_result_id=f"r{i}")) for i in range(6)))
    idle = [conn.thread_id() for conn in store._client._idle]
    assert idle
    for thread_id in idle:
        mysql.query("KILL %s", (thread_id,))
    await store.save("app", make_result(eval_set_result_id="after"))
    assert (await store.get("app", "after")).eval_set_result_id == "after"
    assert not {conn.thread_id() for conn in store._client._idle} & set(idle)

    [current] = [conn.thread_id() for conn in store._client._idle]
    mysql.query("KILL %s", (current,))
    assert (await store.get("app", "r1")).eval_set_result_id == "r1"


async def test_a_second_loss_is_a_storage_error(store: MySQLEvalResultManager, mysql: MySQLServer) -> None:
    pymysql = mysql.pymysql
    calls: list[int] = []

    def always_lost(conn: Any) -> None:
        calls.append(conn.thread_id())
        raise pymysql.err.OperationalError(2013, "Lost connection to MySQL server during query")

    with pytest.raises(StorageError) as info:
        await store._client.call("store eval set result app.r1", table(mysql), always_lost)
    assert len(calls) == 2
    assert str(info.value) == (
        f"mysql 127.0.0.1:3306: store eval set result app.r1 (table {table(mysql)}) failed: the connection was "
        "lost again: MySQL error 2013: Lost connection to MySQL server during query"
    )
    assert store._client._idle == []


async def test_deadlocks_are_retried(store: MySQLEvalResultManager, mysql: MySQLServer) -> None:
    pymysql = mysql.pymysql
    calls: list[int] = []

    def deadlock_twice(conn: Any) -> str:
        calls.append(1)
        if len(calls) <= 2:
            raise pymysql.err.OperationalError(1213, "Deadlock found when trying to get lock")
        return "done"

    assert await store._client.call("op", "t", deadlock_twice) == "done"
    assert len(calls) == 3


async def test_other_database_errors_are_storage_errors(mysql: MySQLServer) -> None:
    # A table made by hand with a narrower column than the reference's: strict sessions refuse what does not fit.
    prefix = mysql.prefix + "narrow_"
    mysql.query(schema_text("schema.sql", prefix).replace("`eval_set_id` VARCHAR(255)", "`eval_set_id` VARCHAR(8)"))
    store = MySQLEvalResultManager(mysql.dsn, table_prefix=prefix, skip_db_init=True)
    with pytest.raises(StorageError) as info:
        await store.save("app", make_result("a-long-set-id", eval_set_result_id="r1"))
    assert str(info.value) == (
        f"mysql 127.0.0.1:3306: store eval set result app.r1 (table {prefix}evaluation_eval_set_results) failed:"
        " MySQL error 1406: Data too long for column 'eval_set_id' at row 1"
    )
    with pytest.raises(NotFoundError):
        await store.get("app", "r1")
    await store.close()


async def test_unreachable_server_names_host_and_port() -> None:
    port = closed_port()
    store = MySQLEvalResultManager(f"mysql://root@127.0.0.1:{port}/test", connect_options={"connect_timeout": 2})
    with pytest.raises(StorageError, match=rf"^init database failed: mysql 127\.0\.0\.1:{port}: cannot connect: "):
        await store.save("app", make_result())
    skipping = MySQLEvalResultManager(f"root@tcp(127.0.0.1:{port})/test", skip_db_init=True)
    with pytest.raises(StorageError) as info:
        await skipping.list("app")
    assert str(info.value).startswith(
        f"mysql 127.0.0.1:{port}: list eval set results for app app (table evaluation_eval_set_results) failed: "
        "cannot connect: MySQL error 2003: "
    )


async def test_skip_db_init_runs_no_ddl(mysql: MySQLServer) -> None:
    prefix = mysql.prefix + "skip_"
    store = MySQLEvalResultManager(mysql.dsn, table_prefix=prefix, skip_db_init=True)
    with pytest.raises(StorageError, match="MySQL error 1146"):
        await store.save("app", make_result())
    assert mysql.tables(prefix) == []
    await store.close()


async def test_ddl_failure_closes_connections(mysql: MySQLServer) -> None:
    prefix = mysql.prefix + "y" * 30  # fine as a prefix, too long once the table name is added
    store = MySQLEvalResultManager(mysql.dsn, table_prefix=prefix)
    for _ in range(2):  # the next call tries again
        with pytest.raises(StorageError) as info:
            await store.list("app")
        # 1059 "identifier too long" on MySQL, 1103 "incorrect table name" on MariaDB.
        assert re.match(
            f"init database failed: create table {prefix}_evaluation_eval_set_results failed: MySQL error 1(059|103): ",
            str(info.value),
        )
        assert store._client._idle == []


async def test_init_is_idempotent_and_adds_missing_indexes(mysql: MySQLServer) -> None:
    prefix = mysql.prefix + "idx_"
    name = f"{prefix}evaluation_eval_set_results"
    first = MySQLEvalResultManager(mysql.dsn, table_prefix=prefix)
    await first.save("app", make_result(eval_set_result_id="r1"))
    mysql.query(f"DROP INDEX idx_results_app_created ON `{name}`")
    second = MySQLEvalResultManager(mysql.dsn, table_prefix=prefix)
    assert (await second.get("app", "r1")).eval_set_result_id == "r1"
    indexes = {row[2] for row in mysql.query(f"SHOW INDEX FROM `{name}`")}
    assert indexes == {
        "PRIMARY",
        "uniq_results_app_result_id",
        "idx_results_app_created",
        "idx_results_app_set_created",
    }
    await first.close()
    await second.close()


async def test_init_timeout_bounds_the_schema_creation(mysql: MySQLServer) -> None:
    prefix = mysql.prefix + "locked_"
    ready = MySQLEvalResultManager(mysql.dsn, table_prefix=prefix)
    await ready.list("app")
    await ready.close()
    holder = mysql.connect()
    try:
        with holder.cursor() as cursor:
            cursor.execute(f"LOCK TABLES `{prefix}evaluation_eval_set_results` WRITE")
        store = MySQLEvalResultManager(mysql.dsn, table_prefix=prefix, init_timeout=1)
        started = time.monotonic()
        with pytest.raises(StorageError, match=r"^init database failed: create table \S+ failed: MySQL error 1205: "):
            await store.list("app")
        assert time.monotonic() - started < 5
    finally:
        holder.close()
    assert await store.list("app") == []
    await store.close()


async def test_close_then_use_reconnects(store: MySQLEvalResultManager) -> None:
    await store.save("app", make_result(eval_set_result_id="r1"))
    await store.close()
    assert store._client._idle == []
    assert (await store.get("app", "r1")).eval_case_results[0] == EvalCaseResult.model_validate(
        make_result().eval_case_results[0].to_dict()
    )


async def test_a_report_from_the_in_memory_default_exports_to_mysql(store: MySQLEvalResultManager) -> None:
    from agenteval import Evaluator, LocalEvalSetManager, LocalMetricManager
    from agenteval.examples.math import APP_NAME, DATA_DIR, EVAL_SET_ID, calculator_agent

    evaluator = Evaluator(
        APP_NAME,
        calculator_agent,
        eval_set_manager=LocalEvalSetManager(DATA_DIR),
        metric_manager=LocalMetricManager(DATA_DIR),
        num_runs=2,
    )
    report = await evaluator.aevaluate(EVAL_SET_ID)

    saved_id = await report.asave(store)

    assert saved_id == report.result.eval_set_result_id
    loaded = await store.get(APP_NAME, saved_id)
    assert without_timestamp(loaded) == without_timestamp(report.result)
    assert loaded.summary is not None and loaded.summary.num_runs == 2


async def test_a_fresh_report_saves_its_records_as_the_result_written_whole(
    store: MySQLEvalResultManager, mysql: MySQLServer
) -> None:
    cases = [ae.EvalCase.of(f"c{i}", f"w{i}", expect=f"W{i}" if i % 2 else "other") for i in range(5)]
    report = await ae.Evaluator("app", str.upper, progress=False, result_manager=store).aevaluate(
        ae.EvalSet.of("words", cases), metrics=[ae.EvalMetric.final_response()]
    )
    result_id = report.result.eval_set_result_id
    [(recorded, recorded_summary)] = mysql.query(
        f"SELECT eval_case_results, summary FROM `{table(mysql)}` WHERE eval_set_result_id = %s", (result_id,)
    )
    await store.save("app", report.result)  # the whole result, as a store is given it otherwise
    [(whole, whole_summary)] = mysql.query(
        f"SELECT eval_case_results, summary FROM `{table(mysql)}` WHERE eval_set_result_id = %s", (result_id,)
    )
    assert (recorded, recorded_summary) == (whole, whole_summary)
    assert without_timestamp(await store.get("app", result_id)) == without_timestamp(report.result)


async def test_a_record_that_cannot_be_written_is_named_by_its_path(store: MySQLEvalResultManager) -> None:
    broken = EvalCaseResult(eval_id="b")
    broken.score = float("nan")
    shell = make_result(eval_set_result_id="r").replaced(eval_case_results=[])
    records = [CaseRecord(make_result(eval_set_result_id="r").eval_case_results[0]), CaseRecord(broken)]
    with pytest.raises(ConfigError, match=r"evalCaseResults\[1\]\.score is not a finite number"):
        await store.save_recorded("app", shell, records)
