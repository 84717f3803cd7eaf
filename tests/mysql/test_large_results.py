"""Results near and over the server's ``max_allowed_packet``: the MySQL store writes a result in one statement.

The limit tests run on the tests' private MariaDB instance (its own data directory and port, with a
1 MiB ``max_allowed_packet``; see ``private_server`` in conftest.py); they are skipped only when the
MariaDB binaries are not installed.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from agenteval._util.trpc_json import WireModel
from agenteval.errors import StorageError
from agenteval.evalresult import MySQLEvalResultManager
from agenteval.evalresult.models import EvalSetResult
from agenteval.evalset import MySQLEvalSetManager
from agenteval.evalset.message import Message
from agenteval.evalset.models import EvalCase, Invocation
from agenteval.metric import MySQLMetricManager
from agenteval.metric.models import EvalMetric
from tests.evalresult._data import make_result
from tests.mysql._private_mariadb import PrivateMariaDB
from tests.mysql.conftest import PRIVATE_PACKET_LIMIT, MySQLServer

pytestmark = [pytest.mark.mysql]

SMALL_LIMIT = PRIVATE_PACKET_LIMIT
HOSTILE = "a'b\\c\"d %s ünïcödé 日本語 🙂\n\t"


def padded(result_id: str, filler: str, count: int) -> EvalSetResult:
    """A one-case result whose tool call returned ``filler * count``."""
    result = make_result(eval_set_result_id=result_id)
    invocation = result.eval_case_results[0].eval_metric_result_per_invocation[0].actual_invocation
    assert invocation is not None
    invocation.tools[0].result = filler * count
    return result


def content(result: EvalSetResult) -> tuple[Any, ...]:
    return result.eval_set_result_id, result.eval_set_id, result.eval_case_results, result.summary


@pytest.fixture
def small_server(private_server: tuple[PrivateMariaDB, Any]) -> tuple[PrivateMariaDB, Any]:
    """The private MariaDB, whose ``max_allowed_packet`` is 1 MiB."""
    return private_server


def bytes_received(admin: Any) -> int:
    with admin.cursor() as cursor:
        cursor.execute("SHOW GLOBAL STATUS LIKE 'Bytes_received'")
        return int(cursor.fetchone()[1])


def statement_size(error: StorageError) -> int:
    found = re.search(r"needs a [\d.]+ MiB statement \(([\d,]+) bytes\)", str(error))
    assert found, str(error)
    return int(found[1].replace(",", ""))


@pytest.mark.timeout(120)
def test_a_result_over_the_limit_fails_at_once_and_writes_nothing(small_server: tuple[PrivateMariaDB, Any]) -> None:
    server, admin = small_server
    table = "evaluation_eval_set_results"
    store = MySQLEvalResultManager(server.dsn)
    with asyncio.Runner() as runner:
        runner.run(store.save("app", padded("kept", "x", 10)))
        runner.run(store.save("app", padded("big", "x", 10)))
        # How large a statement is, for a result of a given size, is read from the error itself.
        with pytest.raises(StorageError) as probe:
            runner.run(store.save("app", padded("big", "x", SMALL_LIMIT)))
        # A statement is sent as one command packet, one byte longer. The server refuses a packet of
        # max_allowed_packet bytes and takes one a byte shorter: the check refuses exactly what it would.
        over = SMALL_LIMIT + SMALL_LIMIT - statement_size(probe.value)

        received = bytes_received(admin)
        started = time.monotonic()
        with pytest.raises(StorageError) as info:
            runner.run(store.save("app", padded("big", "x", over)))
        elapsed = time.monotonic() - started
        assert bytes_received(admin) - received < 10_000, "the statement was sent"
        assert elapsed < 5
        assert str(info.value) == (
            f"mysql 127.0.0.1:{server.port}: store eval set result app.big (table {table}) failed: the result needs"
            " a 1.0 MiB statement (1,048,576 bytes), too large for the server's max_allowed_packet of 1.0 MiB"
            " (1,048,576 bytes); nothing was written. Raise the limit on the server: SET GLOBAL"
            " max_allowed_packet = 2097152 (as an administrator; new connections get it), or"
            " max_allowed_packet = 2097152 under [mysqld] in my.cnf and restart"
        )
        assert runner.run(store.list("app")) == ["big", "kept"]
        assert runner.run(store.get("app", "big")).eval_case_results == padded("big", "x", 10).eval_case_results

        just_fits = padded("big", "x", over - 1)
        assert runner.run(store.save("app", just_fits)) == "big"
        assert runner.run(store.get("app", "big")).eval_case_results == just_fits.eval_case_results
        runner.run(store.close())


@pytest.mark.timeout(120)
def test_a_raised_limit_is_used_by_the_next_save(small_server: tuple[PrivateMariaDB, Any]) -> None:
    server, admin = small_server
    store = MySQLEvalResultManager(server.dsn, table_prefix="raised")
    large = padded("r1", "x", SMALL_LIMIT)
    with asyncio.Runner() as runner:
        with pytest.raises(StorageError, match="SET GLOBAL max_allowed_packet = 2097152"):
            runner.run(store.save("app", large))
        assert store._client._idle, "the store should hold a pooled connection opened with the old limit"
        with admin.cursor() as cursor:
            cursor.execute("SET GLOBAL max_allowed_packet = 2097152")
        try:
            assert runner.run(store.save("app", large)) == "r1"
            assert runner.run(store.get("app", "r1")).eval_case_results == large.eval_case_results
        finally:
            with admin.cursor() as cursor:
                cursor.execute(f"SET GLOBAL max_allowed_packet = {SMALL_LIMIT}")
        runner.run(store.close())


def too_large(error: StorageError, port: int, operation: str, table: str, what: str) -> bool:
    """Whether ``error`` is the refusal of a 4 MiB statement over the 1 MiB limit, before anything was sent."""
    return (
        re.fullmatch(
            rf"mysql 127\.0\.0\.1:{port}: {re.escape(operation)} \(table {table}\) failed: {re.escape(what)} needs a"
            r" 4\.0 MiB statement \(4,\d{3},\d{3} bytes\), too large for the server's max_allowed_packet of 1\.0 MiB"
            r" \(1,048,576 bytes\); nothing was written\. Raise the limit on the server: .*",
            str(error),
        )
        is not None
    )


@pytest.mark.timeout(120)
def test_eval_cases_and_metrics_over_the_limit_fail_at_once_and_write_nothing(
    small_server: tuple[PrivateMariaDB, Any],
) -> None:
    # These writes were sent whole; the server dropped the connection, and the store sent them again
    # before failing with "MySQL server has gone away".
    server, admin = small_server
    sets = MySQLEvalSetManager(server.dsn, table_prefix="big")
    metrics = MySQLMetricManager(server.dsn, table_prefix="big")
    huge = "x" * (4 * SMALL_LIMIT)
    big_case = EvalCase(eval_id="c1", conversation=[Invocation(user_content=Message.user(huge))])
    with asyncio.Runner() as runner:
        runner.run(sets.create("app", "set"))
        runner.run(sets.add_case("app", "set", EvalCase(eval_id="c1")))
        runner.run(metrics.add("app", "set", EvalMetric(metric_name="m1", threshold=1)))
        received = bytes_received(admin)
        failures = {
            ("add eval case app.set.c2", "big_evaluation_eval_cases", "eval case app.set.c2"): sets.add_case(
                "app", "set", big_case.model_copy(update={"eval_id": "c2"})
            ),
            ("update eval case app.set.c1", "big_evaluation_eval_cases", "eval case app.set.c1"): sets.update_case(
                "app", "set", big_case
            ),
            ("add metric app.set.m2", "big_evaluation_metrics", "metric app.set.m2"): metrics.add(
                "app", "set", EvalMetric(metric_name="m2", extension=huge)
            ),
            ("update metric app.set.m1", "big_evaluation_metrics", "metric app.set.m1"): metrics.update(
                "app", "set", EvalMetric(metric_name="m1", extension=huge)
            ),
        }
        for (operation, table, what), call in failures.items():
            with pytest.raises(StorageError) as info:
                runner.run(call)
            assert too_large(info.value, server.port, operation, table, what), str(info.value)
        assert bytes_received(admin) - received < 10_000, "a statement was sent"
        assert runner.run(sets.get("app", "set")).eval_cases[0].conversation == []
        assert [case.eval_id for case in runner.run(sets.get("app", "set")).eval_cases] == ["c1"]
        assert runner.run(metrics.list("app", "set")) == ["m1"]
        assert runner.run(metrics.get("app", "set", "m1")).extension is None
        runner.run(sets.close())
        runner.run(metrics.close())


@pytest_asyncio.fixture
async def store(mysql: MySQLServer) -> AsyncIterator[MySQLEvalResultManager]:
    manager = MySQLEvalResultManager(mysql.dsn, table_prefix=mysql.prefix)
    yield manager
    await manager.close()


@pytest.mark.asyncio
@pytest.mark.timeout(120)
async def test_a_result_larger_than_16_mib_round_trips(store: MySQLEvalResultManager, mysql: MySQLServer) -> None:
    [(limit,)] = mysql.query("SELECT @@GLOBAL.max_allowed_packet")
    if limit < 64 << 20:
        pytest.fail(
            f"the test server's max_allowed_packet is {limit} bytes; scripts/mariadb.sh raises it to 256 MiB"
            " (or run SET GLOBAL max_allowed_packet = 268435456 as root)",
            pytrace=False,
        )
    # 17 MiB of text, several times over in the statement: JSON escapes \\, " and \n, SQL escapes \\ and '.
    result = padded("large", HOSTILE, (17 << 20) // len(HOSTILE))
    assert await store.save("app", result) == "large"
    loaded = await store.get("app", "large")
    assert content(loaded) == content(result)
    [(size,)] = mysql.query(
        f"SELECT LENGTH(eval_case_results) FROM `{mysql.prefix}evaluation_eval_set_results`"
        " WHERE eval_set_result_id = 'large'"
    )
    assert size > 16 << 20


@pytest.mark.asyncio
async def test_hostile_text_round_trips_with_no_backslash_escapes(mysql: MySQLServer) -> None:
    store = MySQLEvalResultManager(
        mysql.dsn, table_prefix=mysql.prefix, connect_options={"sql_mode": "NO_BACKSLASH_ESCAPES"}
    )
    result = padded("hostile", HOSTILE + "\\'; DROP TABLE x; --", 3)
    assert await store.save(HOSTILE, result) == "hostile"
    assert content(await store.get(HOSTILE, "hostile")) == content(result)
    await store.close()


@pytest.mark.asyncio
async def test_each_column_is_written_once(store: MySQLEvalResultManager, monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[tuple[str, set[str]]] = []
    to_json = WireModel.to_json

    def counted(self: WireModel, *, indent: int | None = 2) -> str:
        written.append((type(self).__name__, self.model_fields_set))
        return to_json(self, indent=indent)

    monkeypatch.setattr(WireModel, "to_json", counted)
    await store.save("app", make_result(eval_set_result_id="r1"))
    assert written == [("EvalSetResult", {"eval_case_results"}), ("EvalSetResult", {"summary"})]
