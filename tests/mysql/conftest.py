"""Fixtures for the MySQL store tests: a real server, one table prefix per test run.

The server is ``AGENTEVAL_MYSQL_DSN`` (default ``mysql://root@127.0.0.1:3306/test``). When it is
unreachable the tests that need it are skipped, unless ``AGENTEVAL_REQUIRE_MYSQL=1`` (set in CI),
which makes them fail instead. Every table the run creates starts with a random prefix
``t_<hex>_`` and is dropped at the end.
"""

from __future__ import annotations

import os
import secrets
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from agenteval.storage import parse_dsn
from agenteval.storage._mysql_schema import SCHEMA_FILES, load_schema
from tests.mysql._private_mariadb import PrivateMariaDB, start_private_mariadb

DSN = os.environ.get("AGENTEVAL_MYSQL_DSN", "mysql://root@127.0.0.1:3306/test")
REQUIRED = os.environ.get("AGENTEVAL_REQUIRE_MYSQL") == "1"


def unavailable(reason: str) -> None:
    """Skip the test, or fail it when the server is required."""
    if REQUIRED:
        pytest.fail(f"AGENTEVAL_REQUIRE_MYSQL=1 but {reason}", pytrace=False)
    pytest.skip(reason)


class MySQLServer:
    """The test server: its DSN, this run's table prefix and an admin connection."""

    def __init__(self, pymysql: Any, dsn: str, prefix: str) -> None:
        self.pymysql = pymysql
        self.dsn = dsn
        self.prefix = prefix
        self.options = parse_dsn(dsn)
        self._admin: Any = None

    def connect(self) -> Any:
        """Open a new autocommit connection."""
        return self.pymysql.connect(**self.options, autocommit=True)

    def query(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        """Run one statement on the admin connection (reconnecting if needed) and return its rows."""
        if self._admin is not None:
            try:
                self._admin.ping()
            except self.pymysql.err.Error:
                self._admin = None  # lost (e.g. the server restarted): open a new one
        if self._admin is None:
            self._admin = self.connect()
        with self._admin.cursor() as cursor:
            cursor.execute(sql, args)
            return list(cursor.fetchall())

    def tables(self, prefix: str | None = None) -> list[str]:
        """Return the tables of the database whose names start with ``prefix`` (default: this run's)."""
        like = (prefix or self.prefix).replace("\\", "\\\\").replace("_", "\\_").replace("%", "\\%") + "%"
        rows = self.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE %s",
            (like,),
        )
        return sorted(row[0] for row in rows)

    def clear(self) -> None:
        """Empty this run's shared tables."""
        for statement in load_schema(SCHEMA_FILES, self.prefix):
            if not statement.index:
                self.query(f"DELETE FROM `{statement.table}`")

    def close(self) -> None:
        """Drop every table of this run and close the admin connection."""
        for table in self.tables():
            self.query(f"DROP TABLE IF EXISTS `{table}`")
        if self._admin is not None:
            self._admin.close()


@pytest.fixture(scope="session")
def mysql_server() -> Iterator[MySQLServer]:
    """The test server with this run's tables created; they are dropped at the end."""
    try:
        import pymysql
    except ImportError:
        unavailable("PyMySQL is not installed (pip install 'agenteval[mysql]')")
    server = MySQLServer(pymysql, DSN, f"t_{secrets.token_hex(4)}_")
    try:
        server.connect().close()
    except pymysql.err.Error as exc:
        unavailable(f"the MySQL server of {DSN} is unreachable: {exc}")
    try:
        for statement in load_schema(SCHEMA_FILES, server.prefix):
            if not statement.index:  # the tables declare their keys
                server.query(statement.sql)
        yield server
    finally:
        server.close()


@pytest.fixture
def mysql(mysql_server: MySQLServer) -> MySQLServer:
    """The test server, with this run's tables emptied."""
    mysql_server.clear()
    return mysql_server


PRIVATE_PACKET_LIMIT = 1 << 20
"""The ``max_allowed_packet`` of :func:`private_server`."""


@pytest.fixture(scope="session")
def private_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrivateMariaDB, Any]]:
    """A private MariaDB, and a root connection to it, set up as servers the stores must cope with.

    Its ``max_allowed_packet`` is 1 MiB, and its ``sql_mode`` is empty (not strict), as on many
    older servers: there an over-long value is cut to fit its column with only a warning.
    """
    server, admin = start_private_mariadb(
        tmp_path_factory.mktemp("mariadb"), f"--max-allowed-packet={PRIVATE_PACKET_LIMIT}", "--sql-mode="
    )
    try:
        yield server, admin
        admin.close()
    finally:
        server.stop()


def close_store(store: Any) -> None:
    """Close a store's connections from synchronous code (a fixture's teardown)."""
    store._client.close()


def adopt_contract(
    module: types.ModuleType, fixtures: frozenset[str], xfail: Mapping[str, str]
) -> tuple[dict[str, Callable[..., Any]], list[str]]:
    """Copy a contract module's tests that use one of ``fixtures``, to collect them again here.

    Each test is a fresh function object sharing the original's code and marks, so marking the
    copy (``xfail``: test name -> reason) does not change the original module's test.

    Returns:
        The copies by name, and the names of the tests left out (they do not use the fixtures).
    """
    adopted: dict[str, Callable[..., Any]] = {}
    skipped: list[str] = []
    for name, value in vars(module).items():
        if not name.startswith("test_") or not isinstance(value, types.FunctionType):
            continue
        if not fixtures & set(value.__code__.co_varnames[: value.__code__.co_argcount]):
            skipped.append(name)
            continue
        copy = types.FunctionType(value.__code__, value.__globals__, name, value.__defaults__, value.__closure__)
        copy.__dict__.update(value.__dict__)
        copy.__kwdefaults__ = value.__kwdefaults__
        copy.__doc__ = value.__doc__
        marks = list(getattr(value, "pytestmark", []))
        if name in xfail:
            marks.append(pytest.mark.xfail(reason=xfail[name], strict=True, raises=AssertionError))
        copy.pytestmark = [*marks, pytest.mark.mysql]  # type: ignore[attr-defined]
        adopted[name] = copy
    unknown = set(xfail) - set(adopted)
    if unknown:
        raise ValueError(f"xfail names no adopted test: {sorted(unknown)}")
    return adopted, skipped
