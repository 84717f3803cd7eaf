"""Results near and over the server's ``max_allowed_packet``: the MySQL store writes a result in one statement.

The limit tests run on a MariaDB instance of their own (its own data directory and port, with a
1 MiB ``max_allowed_packet``), started here and stopped at the end; they are skipped only when the
MariaDB binaries are not installed.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import re
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from agenteval._json import WireModel
from agenteval.errors import StorageError
from agenteval.evalresult import MySQLEvalResultManager
from agenteval.evalresult.models import EvalSetResult
from tests.evalresult._data import make_result
from tests.mysql.conftest import MySQLServer

pytestmark = [pytest.mark.mysql]

SMALL_LIMIT = 1 << 20
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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


class PrivateMariaDB:
    """A MariaDB server of a test's own: ``mariadb-install-db`` into ``base``, then ``mariadbd`` on a free port."""

    def __init__(self, base: Path, daemon: str, install: str, max_allowed_packet: int) -> None:
        self.base, self.port = base, free_port()
        self.dsn = f"mysql://root@127.0.0.1:{self.port}/test"
        user = pwd.getpwuid(os.geteuid()).pw_name  # mariadbd runs as root only when told to
        # --no-defaults: nothing from the machine's my.cnf (its port, socket, log and data directory).
        common = ["--no-defaults", f"--datadir={base / 'data'}", f"--user={user}"]
        installed = subprocess.run(
            [install, *common, "--auth-root-authentication-method=normal", "--skip-test-db"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if installed.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed:\n{installed.stdout[-2000:]}{installed.stderr[-2000:]}")
        self.log = base / "error.log"
        self.process = subprocess.Popen(
            [
                daemon,
                *common,
                f"--port={self.port}",
                "--bind-address=127.0.0.1",
                f"--socket={base / 'mysqld.sock'}",
                f"--pid-file={base / 'mysqld.pid'}",
                f"--log-error={self.log}",
                f"--max-allowed-packet={max_allowed_packet}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def admin(self, pymysql: Any, deadline: float) -> Any:
        """An autocommit root connection, waiting for the server to accept one."""
        while True:
            try:
                return pymysql.connect(host="127.0.0.1", port=self.port, user="root", autocommit=True)
            except pymysql.err.OperationalError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
                    raise RuntimeError(f"the private MariaDB did not start:\n{log}") from None
                time.sleep(0.1)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def small_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrivateMariaDB, Any]]:
    """A private MariaDB with a 1 MiB ``max_allowed_packet``, and a root connection to it."""
    daemon = shutil.which("mariadbd") or shutil.which("mariadbd", path="/usr/sbin:/usr/local/sbin")
    install = shutil.which("mariadb-install-db")
    if daemon is None or install is None:
        pytest.skip("mariadbd and mariadb-install-db are not installed (apt-get install mariadb-server)")
    import pymysql

    server = PrivateMariaDB(tmp_path_factory.mktemp("mariadb"), daemon, install, SMALL_LIMIT)
    try:
        admin = server.admin(pymysql, time.monotonic() + 60)
        with admin.cursor() as cursor:
            cursor.execute("CREATE DATABASE test")
        yield server, admin
        admin.close()
    finally:
        server.stop()


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
