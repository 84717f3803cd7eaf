"""Names and ids the MySQL tables cannot hold are refused before any SQL, never cut or half-sent.

The reference schema keeps every name and id in a ``VARCHAR(255)``. A server whose ``sql_mode``
is not strict (``sql_mode=''``, still common) cuts a longer value to 255 characters with only a
warning, so two result ids that differ after character 255 would land in one row. These tests run
on the tests' private MariaDB, whose ``sql_mode`` is empty (see ``private_server`` in conftest.py).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest

import agenteval as ae
from agenteval.errors import ConfigError, NotFoundError, StorageError
from agenteval.evalresult import MySQLEvalResultManager
from agenteval.evalresult.models import EvalSetResult
from agenteval.evalset import MySQLEvalSetManager
from agenteval.evalset.models import EvalCase
from agenteval.metric import MySQLMetricManager
from agenteval.metric.models import EvalMetric
from agenteval.storage import schema_text
from tests.evalresult._data import make_result
from tests.mysql._private_mariadb import PrivateMariaDB, free_port
from tests.mysql.conftest import MySQLServer, close_store

pytestmark = [pytest.mark.mysql]

LONG_FIRST = "r" * 255 + "-first"
LONG_SECOND = "r" * 255 + "-second"
SURROGATE = "a\ud800b"


def named(result_id: str, name: str) -> EvalSetResult:
    return make_result(eval_set_result_id=result_id, eval_set_result_name=name)


def rows(admin: Any, table: str) -> list[tuple[Any, ...]]:
    with admin.cursor() as cursor:
        cursor.execute(f"SELECT * FROM test.`{table}`")
        return list(cursor.fetchall())


def test_the_private_server_cuts_long_values_when_not_asked_to_be_strict(
    private_server: tuple[PrivateMariaDB, Any],
) -> None:
    # The premise of the tests below: this server really does cut, as a non-strict server does.
    _, admin = private_server
    with admin.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE test.cut (v VARCHAR(255))")
        cursor.execute("INSERT INTO test.cut VALUES (%s)", (LONG_FIRST,))
        cursor.execute("SELECT CHAR_LENGTH(v) FROM test.cut")
        assert cursor.fetchone() == (255,)
        cursor.execute("DROP TEMPORARY TABLE test.cut")


def test_two_long_result_ids_are_refused_not_cut_into_one_row(private_server: tuple[PrivateMariaDB, Any]) -> None:
    server, admin = private_server
    store = MySQLEvalResultManager(server.dsn, table_prefix="long_ids")
    with asyncio.Runner() as runner:
        assert runner.run(store.list("app")) == []  # creates the table
        for result_id in (LONG_FIRST, LONG_SECOND):
            with pytest.raises(ConfigError) as info:
                runner.run(store.save("app", named(result_id, result_id[-6:])))
            assert str(info.value) == (
                f"eval_set_result_id {result_id!r} is {len(result_id)} characters long; the MySQL store keeps it"
                " in a column of at most 255 characters. Use a shorter app name or eval set id (the default"
                " result id is <app name>_<eval set id>_<uuid4>, 38 characters more), or give the result an"
                " explicit, shorter id"
            )
        assert rows(admin, "long_ids_evaluation_eval_set_results") == []
        # 255 characters fit, and two ids that differ in their last one stay apart.
        kept = ["r" * 254 + "1", "r" * 254 + "2"]
        for result_id in kept:
            assert runner.run(store.save("app", named(result_id, result_id[-1]))) == result_id
        assert [runner.run(store.get("app", result_id)).eval_set_result_name for result_id in kept] == ["1", "2"]
        runner.run(store.close())


def test_a_default_result_id_too_long_is_refused_before_any_agent_runs(
    private_server: tuple[PrivateMariaDB, Any],
) -> None:
    server, admin = private_server
    store = MySQLEvalResultManager(server.dsn, table_prefix="default_ids")
    app, eval_set_id = "a" * 120, "s" * 120
    with pytest.raises(ConfigError, match=r"^eval_set_result_id 'a{120}_s{120}_[0-9a-f-]{36}' is 278 characters"):
        store.check_new_result_id(app, f"{app}_{eval_set_id}_{'0' * 8}-0000-4000-8000-{'0' * 12}")
    with asyncio.Runner() as runner:
        with pytest.raises(ConfigError, match=r"^eval_set_result_id 'a{120}_s{120}_[0-9a-f-]{36}' is 278 characters"):
            runner.run(store.save(app, make_result(eval_set_id=eval_set_id)))
        store.check_new_result_id(app, "short")
        assert runner.run(store.save(app, make_result(eval_set_id=eval_set_id, eval_set_result_id="short")))
        runner.run(store.close())
    with admin.cursor() as cursor:
        cursor.execute("SELECT eval_set_result_id FROM test.`default_ids_evaluation_eval_set_results`")
        assert cursor.fetchall() == (("short",),)


def test_long_names_are_refused_by_every_store(private_server: tuple[PrivateMariaDB, Any]) -> None:
    server, admin = private_server
    long = "n" * 256
    results = MySQLEvalResultManager(server.dsn, table_prefix="long_names")
    sets = MySQLEvalSetManager(server.dsn, table_prefix="long_names")
    metrics = MySQLMetricManager(server.dsn, table_prefix="long_names")
    limit = "the MySQL store keeps it in a column of at most 255 characters"
    calls: list[tuple[str, Callable[[], Coroutine[Any, Any, Any]]]] = [
        ("eval_set_id", lambda: sets.create("app", long)),
        ("app_name", lambda: sets.create(long, "set")),
        ("eval_id", lambda: sets.add_case("app", "set", EvalCase(eval_id=long))),
        ("eval_id", lambda: sets.update_case("app", "set", EvalCase(eval_id=long))),
        ("metric_name", lambda: metrics.add("app", "set", EvalMetric(metric_name=long))),
        ("metric_name", lambda: metrics.update("app", "set", EvalMetric(metric_name=long))),
        ("eval_set_id", lambda: results.save("app", make_result(eval_set_id=long, eval_set_result_id="r"))),
        ("eval_set_result_name", lambda: results.save("app", named("r", long))),
        ("app_name", lambda: results.save(long, named("r", "r"))),
    ]
    with asyncio.Runner() as runner:
        runner.run(sets.create("app", "set"))
        assert runner.run(metrics.list("app", "set")) == []  # creates the table
        assert runner.run(results.list("app")) == []
        for column, call in calls:
            with pytest.raises(ConfigError) as info:
                runner.run(call())
            assert str(info.value).startswith(f"{column} {long!r} is 256 characters long; {limit}"), str(info.value)
        for store in (results, sets, metrics):
            runner.run(store.close())
    for table in ("evaluation_eval_cases", "evaluation_metrics", "evaluation_eval_set_results"):
        assert rows(admin, f"long_names_{table}") == []
    [(_, app, eval_set_id, *_)] = rows(admin, "long_names_evaluation_eval_sets")
    assert (app, eval_set_id) == ("app", "set")


def test_sessions_are_strict_so_nothing_else_is_cut(private_server: tuple[PrivateMariaDB, Any]) -> None:
    # A table made by hand with a narrower column than the reference's: the server refuses the
    # value instead of cutting it, because the store's sessions are strict.
    server, admin = private_server
    ddl = schema_text("metric_schema.sql", "narrow").replace("`metric_name` VARCHAR(255)", "`metric_name` VARCHAR(8)")
    with admin.cursor() as cursor:
        cursor.execute("USE test")
        cursor.execute(ddl)
    store = MySQLMetricManager(server.dsn, table_prefix="narrow", skip_db_init=True)
    with asyncio.Runner() as runner:
        with pytest.raises(StorageError, match=r"MySQL error 1406: Data too long for column 'metric_name'"):
            runner.run(store.add("app", "set", EvalMetric(metric_name="twelve-chars")))
        assert runner.run(store.list("app", "set")) == []
        runner.run(store.close())


@pytest.mark.asyncio
async def test_strict_mode_keeps_the_modes_asked_for(mysql: MySQLServer) -> None:
    store = MySQLEvalResultManager(
        mysql.dsn, table_prefix=mysql.prefix, connect_options={"sql_mode": "NO_BACKSLASH_ESCAPES"}
    )

    def sql_mode(conn: Any) -> str:
        with conn.cursor() as cursor:
            cursor.execute("SELECT @@SESSION.sql_mode")
            mode: str = cursor.fetchone()[0]
            return mode

    modes = set((await store._client.call("read sql_mode", "-", sql_mode)).split(","))
    assert modes == {"NO_BACKSLASH_ESCAPES", "STRICT_ALL_TABLES"}
    await store.close()


def unreachable(store: type[Any]) -> Any:
    """A store on a port nobody listens on: any SQL would fail with a StorageError."""
    return store(f"mysql://root@127.0.0.1:{free_port()}/test", connect_options={"connect_timeout": 1})


def surrogate_calls() -> list[Any]:
    s = SURROGATE
    calls: list[tuple[str, str, Callable[[Any], Awaitable[Any]]]] = [
        ("sets.get", "app_name", lambda st: st.get(s, "set")),
        ("sets.create", "eval_set_id", lambda st: st.create("app", s)),
        ("sets.list", "app_name", lambda st: st.list(s)),
        ("sets.delete", "eval_set_id", lambda st: st.delete("app", s)),
        ("sets.get_case", "eval_id", lambda st: st.get_case("app", "set", s)),
        ("sets.add_case", "eval_id", lambda st: st.add_case("app", "set", EvalCase(eval_id=s))),
        ("sets.update_case", "eval_id", lambda st: st.update_case("app", "set", EvalCase(eval_id=s))),
        ("sets.delete_case", "eval_id", lambda st: st.delete_case("app", "set", s)),
        ("metrics.get", "metric_name", lambda st: st.get("app", "set", s)),
        ("metrics.list", "eval_set_id", lambda st: st.list("app", s)),
        ("metrics.add", "metric_name", lambda st: st.add("app", "set", EvalMetric(metric_name=s))),
        ("metrics.update", "metric_name", lambda st: st.update("app", "set", EvalMetric(metric_name=s))),
        ("metrics.delete", "metric_name", lambda st: st.delete("app", "set", s)),
        ("results.save-id", "eval_set_result_id", lambda st: st.save("app", named(s, "n"))),
        ("results.save-name", "eval_set_result_name", lambda st: st.save("app", named("r", s))),
        (
            "results.save-set",
            "eval_set_id",
            lambda st: st.save("app", make_result(eval_set_id=s, eval_set_result_id="r")),
        ),
        ("results.save-app", "app_name", lambda st: st.save(s, named("r", "n"))),
        ("results.get", "eval_set_result_id", lambda st: st.get("app", s)),
        ("results.list", "app_name", lambda st: st.list(s)),
    ]
    return [pytest.param(operation.split(".")[0], column, call, id=operation) for operation, column, call in calls]


STORES = {"sets": MySQLEvalSetManager, "metrics": MySQLMetricManager, "results": MySQLEvalResultManager}


@pytest.mark.asyncio
@pytest.mark.parametrize(("kind", "column", "call"), surrogate_calls())
async def test_a_lone_surrogate_is_a_config_error_before_any_sql(
    kind: str, column: str, call: Callable[[Any], Awaitable[Any]]
) -> None:
    store = unreachable(STORES[kind])
    with pytest.raises(ConfigError) as info:
        await call(store)
    assert str(info.value) == (
        f"{column} 'a\\ud800b' cannot be stored: it holds a lone surrogate ('\\ud800' at index 1), which is"
        " not a character and has no UTF-8 encoding; pass valid Unicode text"
    )


@pytest.mark.asyncio
async def test_check_new_result_id_refuses_a_lone_surrogate_in_the_app_name() -> None:
    store = unreachable(MySQLEvalResultManager)
    with pytest.raises(ConfigError, match=re.escape("app_name 'a\\ud800b' cannot be stored")):
        store.check_new_result_id(SURROGATE, "r")
    with pytest.raises(ConfigError, match=re.escape("eval_set_result_id 'a\\ud800b' cannot be stored")):
        store.check_new_result_id("app", SURROGATE)


@pytest.mark.asyncio
async def test_over_long_names_are_refused_on_reads_too(mysql: MySQLServer) -> None:
    # Nothing longer than its column can be stored, so asking for it is a mistake worth naming.
    store = MySQLEvalResultManager(mysql.dsn, table_prefix=mysql.prefix)
    with pytest.raises(ConfigError, match=r"^eval_set_result_id 'x{300}' is 300 characters long"):
        await store.get("app", "x" * 300)
    with pytest.raises(NotFoundError):
        await store.get("app", "x" * 255)
    await store.close()


def test_an_evaluation_whose_result_mysql_cannot_hold_fails_before_the_agent_runs(mysql: MySQLServer) -> None:
    calls: list[str] = []

    def agent(text: str) -> str:
        calls.append(text)
        return text

    store = MySQLEvalResultManager(mysql.dsn, table_prefix=mysql.prefix)
    evaluator = ae.Evaluator("a" * 120, agent, result_manager=store, progress=False)
    eval_set = ae.EvalSet.of("s" * 120, [ae.EvalCase.of("c1", "hi", expect="hi")])
    with pytest.raises(ConfigError, match=r"^eval_set_result_id 'a{120}_s{120}_[0-9a-f-]{36}' is 278 characters long"):
        evaluator.evaluate(eval_set, metrics=[ae.EvalMetric.final_response()])
    assert calls == []
    assert mysql.query(f"SELECT COUNT(*) FROM `{mysql.prefix}evaluation_eval_set_results`") == [(0,)]
    close_store(store)
