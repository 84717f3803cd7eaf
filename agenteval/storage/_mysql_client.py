"""Connections for the MySQL stores: DSN parsing, named instances, a small pool, one retry.

Shared by the three MySQL stores (:mod:`agenteval.evalset.mysql`, :mod:`agenteval.metric.mysql`,
:mod:`agenteval.evalresult.mysql`); :class:`MySQLStore` is their common construction.

PyMySQL is synchronous, so every query runs in a worker thread (:func:`asyncio.to_thread`) on a
connection taken from a small thread-safe pool. Connections are opened on first use, use UTC as
the session time zone, a strict ``sql_mode`` (nothing is cut to fit a column) and autocommit, and
give up on a server that does not answer (:data:`DEFAULT_TIMEOUTS`); each reads the server's
``max_allowed_packet`` when it opens, so a statement too large for it
(:meth:`MySQLClient.execute_sized`) fails before anything is sent. A connection the server
dropped is replaced and the operation retried once; any other database failure is a
:class:`~agenteval.errors.StorageError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import math
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any, ClassVar, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

from agenteval.errors import AgentEvalError, ConfigError, MissingDependencyError, StorageError
from agenteval.storage._mysql_json import too_deep
from agenteval.storage._mysql_schema import Statement, load_schema, normalize_table_prefix

__all__ = [
    "DEFAULT_TIMEOUTS",
    "MySQLClient",
    "MySQLStore",
    "NewRow",
    "error_code",
    "parse_dsn",
    "register_mysql_instance",
    "sql_literal",
    "transaction",
    "unregister_mysql_instance",
]

T = TypeVar("T")

DEFAULT_INIT_TIMEOUT = 30.0
# PyMySQL waits forever for an answer unless given a read timeout, so a hung server would hang the
# caller. Both read and write timeouts bound one socket operation, not a whole query: the read
# timeout is the longest the server may stay silent, the write timeout the longest one send of at
# most 16 MiB (PyMySQL sends a statement in packets of that size) may take. 120 s covers the
# slowest legitimate silence: the server checking and writing a 256 MiB result (~10 s on a local
# MariaDB, so a 10x slower server still fits) or a row lock wait (innodb_lock_wait_timeout, 50 s
# by default); and it sends 16 MiB over a link as slow as ~1.1 Mbit/s. 10 s is ample to open a TCP
# connection. The DSN (timeout, readTimeout, writeTimeout) or connect_options override them.
DEFAULT_TIMEOUTS: dict[str, float] = {"connect_timeout": 10.0, "read_timeout": 120.0, "write_timeout": 120.0}
"""The default connect, read and write timeouts in seconds, as PyMySQL ``connect`` arguments."""
_POOL_SIZE = 8
_DEADLOCK_RETRIES = 3
# Server gone away, lost connection, packets out of order; MariaDB's "connection killed" and
# MySQL's "disconnected for inactivity" are the same event reported as a server error.
_DROPPED = frozenset({2006, 2013, 2055, 1927, 4031})
_DEADLOCK = 1213
_DUPLICATE_KEY_NAME = 1061
_DUPLICATE_ENTRY = 1062
# MariaDB: a CHECK constraint failed (a JSON column's JSON_VALID); MySQL: a JSON document too deep.
_JSON_REFUSED = frozenset({4025, 3157})
# PyMySQL's codes for a failure to connect, and to send (a timed-out read reports 2013).
_CONNECT_FAILED, _SEND_FAILED = 2003, 2006
# How deeply nested a JSON document the probe of a server's limit tries at most.
_DEEPEST_PROBE = 1024
# Added to the session's sql_mode: without it a server may cut a value to fit its column, and
# only warn.
_STRICT_SQL_MODE = "IF(@@SESSION.sql_mode = '', 'STRICT_ALL_TABLES', CONCAT(@@SESSION.sql_mode, ',STRICT_ALL_TABLES'))"
_EPOCH = datetime(1970, 1, 1)
_GO_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_URL_SCHEMES = {"mysql", "mariadb", "mysql+pymysql"}
# The largest max_allowed_packet a server can be given (1 GiB).
_MAX_PACKET_CEILING = 1 << 30

_instances: dict[str, dict[str, Any]] = {}
_instances_lock = threading.Lock()


def _pymysql() -> Any:
    try:
        import pymysql
    except ImportError:
        raise MissingDependencyError("the MySQL store", "mysql", "PyMySQL") from None
    return pymysql


def _seconds(name: str, value: str) -> float:
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        parts = _GO_DURATION.findall(text)
        if not parts or "".join(number + unit for number, unit in parts) != text:
            raise ConfigError(f"invalid mysql dsn: parameter {name} is not a duration: {value!r}") from None
        seconds = sum(float(number) * _GO_UNITS[unit] for number, unit in parts)
    if seconds <= 0:
        raise ConfigError(f"invalid mysql dsn: parameter {name} must be positive, got {value!r}")
    return seconds


def _params(query: str) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key == "charset":
            options["charset"] = value.split(",")[0]
        elif key == "collation":
            options["collation"] = value
        elif key in {"timeout", "connect_timeout"}:
            options["connect_timeout"] = _seconds(key, value)
        elif key in {"readTimeout", "read_timeout"}:
            options["read_timeout"] = _seconds(key, value)
        elif key in {"writeTimeout", "write_timeout"}:
            options["write_timeout"] = _seconds(key, value)
        elif key in {"unix_socket", "socket"}:
            options["unix_socket"] = value
        elif key == "tls" and value.lower() not in {"", "false"}:
            # Connecting without TLS when it was asked for would be a silent downgrade.
            raise ConfigError("invalid mysql dsn: tls is not supported in the DSN; pass ssl options in connect_options")
        # Anything else (parseTime, loc, allowNativePasswords, ...) only matters to the Go driver.
    return options


def _parse_url(dsn: str) -> dict[str, Any]:
    parts = urlsplit(dsn)
    if parts.scheme.lower() not in _URL_SCHEMES:
        raise ConfigError(f"invalid mysql dsn: unsupported scheme {parts.scheme!r} (use mysql://)")
    try:
        port = parts.port or 3306
    except ValueError:
        raise ConfigError("invalid mysql dsn: the port is not a number") from None
    options: dict[str, Any] = {
        "host": parts.hostname or "127.0.0.1",
        "port": port,
        "user": unquote(parts.username or ""),
        "password": unquote(parts.password or ""),
    }
    database = unquote(parts.path.lstrip("/"))
    if database:
        options["database"] = database
    options.update(_params(parts.query))
    return options


def _host_port(address: str) -> tuple[str, int]:
    host, port_text = address, ""
    if address.startswith("["):
        host, _, rest = address[1:].partition("]")
        port_text = rest.removeprefix(":")
    elif address.count(":") == 1:
        host, _, port_text = address.partition(":")
    if port_text and not port_text.isdigit():
        raise ConfigError("invalid mysql dsn: the port is not a number")
    return host or "127.0.0.1", int(port_text or 3306)


def _parse_go(dsn: str) -> dict[str, Any]:
    # The Go driver's grammar: [user[:password]@][net[(addr)]]/dbname[?params]; the password is
    # taken verbatim, as that driver does, and may hold ':', '@' or '/'.
    slash = dsn.rfind("/")
    if slash < 0:
        raise ConfigError("invalid mysql dsn: missing the '/' before the database name")
    head, tail = dsn[:slash], dsn[slash + 1 :]
    at = head.rfind("@")
    credentials, target = (head[:at], head[at + 1 :]) if at >= 0 else ("", head)
    user, _, password = credentials.partition(":")
    net, address = target, ""
    if "(" in target:
        if not target.endswith(")"):
            raise ConfigError("invalid mysql dsn: the network address must be enclosed in '(' and ')'")
        net, _, address = target[:-1].partition("(")
    database, _, query = tail.partition("?")
    options: dict[str, Any] = {"user": user, "password": password}
    if net == "unix":
        options["unix_socket"] = address or "/tmp/mysql.sock"
    elif net in {"", "tcp", "tcp6"}:
        host, port = _host_port(address)
        options.update(host=host, port=port)
    else:
        raise ConfigError(f"invalid mysql dsn: unsupported network {net!r} (use tcp or unix)")
    if database:
        options["database"] = unquote(database)
    options.update(_params(query))
    return options


def parse_dsn(dsn: str) -> dict[str, Any]:
    """Turn a DSN into PyMySQL connect arguments.

    Two forms are accepted: a URL, ``mysql://user:pass@host:3306/db?charset=utf8mb4`` (user and
    password URL-decoded), and the Go driver's form, ``user:pass@tcp(host:3306)/db?parseTime=true``
    (``unix(/path/to.sock)`` for a socket; the password verbatim). ``charset``, ``collation`` and
    the timeouts (Go durations such as ``5s`` or plain seconds) are mapped; Go-only parameters
    such as ``parseTime`` or ``loc`` are ignored.

    Raises:
        ConfigError: An empty or malformed DSN (the message never repeats the password).
    """
    dsn = dsn.strip()
    if not dsn:
        raise ConfigError("mysql: dsn is empty")
    return _parse_url(dsn) if "://" in dsn else _parse_go(dsn)


def register_mysql_instance(name: str, *, dsn: str = "", **connect_options: Any) -> None:
    """Register connection settings under a name, for the stores' ``instance=`` argument.

    Registering a name again replaces its settings.

    Args:
        name: The instance name.
        dsn: A DSN (see :func:`parse_dsn`).
        **connect_options: Further PyMySQL ``connect`` arguments; they override the DSN's.

    Raises:
        ConfigError: An empty name, a malformed DSN, or neither a DSN nor options.
    """
    if not name:
        raise ConfigError("mysql instance name is empty")
    if not dsn and not connect_options:
        raise ConfigError("mysql: dsn is empty")
    options = {**(parse_dsn(dsn) if dsn else {}), **connect_options}
    with _instances_lock:
        _instances[name] = options


def unregister_mysql_instance(name: str) -> None:
    """Forget a registered instance (nothing happens for an unknown name)."""
    with _instances_lock:
        _instances.pop(name, None)


# Options the stores rely on: rows as tuples (the default cursor) and autocommit between their own transactions.
_MANAGED_OPTIONS = frozenset({"cursorclass", "autocommit"})


def _resolve(dsn: str, instance: str, connect_options: Mapping[str, Any] | None) -> dict[str, Any]:
    if dsn:
        base = parse_dsn(dsn)
    elif instance:
        with _instances_lock:
            registered = _instances.get(instance)
        if registered is None:
            raise ConfigError(f"mysql instance {instance} not found")
        base = dict(registered)
    else:
        raise ConfigError("mysql: dsn is empty")
    options = {"charset": "utf8mb4", **DEFAULT_TIMEOUTS, **base, **(connect_options or {})}
    accepted = set(inspect.signature(_pymysql().connections.Connection.__init__).parameters) - {"self"}
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise ConfigError(f"unknown PyMySQL connect option(s): {', '.join(unknown)}")
    managed = sorted(set(options) & _MANAGED_OPTIONS)
    if managed:
        raise ConfigError(
            f"PyMySQL connect option(s) {', '.join(managed)} cannot be set: the MySQL stores read rows as"
            " tuples and commit each operation themselves; remove them from the DSN or connect_options"
        )
    return options


def error_code(error: BaseException) -> int | None:
    """Return the MySQL error number of a PyMySQL exception, if it carries one."""
    args = getattr(error, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


class NewRow:
    """An ``INSERT`` of a row whose key must be new, safe to run again after a lost connection.

    When the connection drops during the ``INSERT`` (or its ``COMMIT``), nobody knows whether the
    server wrote the row, and :meth:`MySQLClient.run` runs the action again. If that second
    attempt finds the key taken, ``check_sql`` reads the row back: when it holds the values this
    insert wrote (JSON compared by content), the first attempt went through and the insert
    succeeds; otherwise the key belonged to somebody else.

    Args:
        sql: The ``INSERT`` statement.
        args: Its parameters.
        what: The row in words, for ``<what> already exists``.
        check_sql: A ``SELECT`` of the identifying columns of the row with the same key.
        check_args: Its parameters.
        written: The values those columns hold when the row is this insert's own.
    """

    def __init__(
        self,
        sql: str,
        args: tuple[Any, ...],
        what: str,
        *,
        check_sql: str,
        check_args: tuple[Any, ...],
        written: tuple[Any, ...],
    ) -> None:
        self._sql, self._args, self._what = sql, args, what
        self._check_sql, self._check_args, self._written = check_sql, check_args, written
        self._attempts = 0

    def execute(self, client: MySQLClient, cursor: Any) -> None:
        """Run the insert on ``cursor``, a cursor of a connection ``client`` opened.

        Raises:
            ConfigError: ``<what> already exists`` when the key is taken by another row.
        """
        self._attempts += 1
        try:
            client.execute_sized(cursor, self._sql, self._what, self._args)
        except Exception as exc:
            if error_code(exc) != _DUPLICATE_ENTRY:
                raise
            if self._attempts > 1 and self._is_own_row(cursor):
                return
            raise ConfigError(f"{self._what} already exists") from None

    def _is_own_row(self, cursor: Any) -> bool:
        cursor.execute(self._check_sql, self._check_args)
        row = cursor.fetchone()
        return row is not None and len(row) == len(self._written) and all(map(_same_value, row, self._written))


def _same_value(stored: Any, written: Any) -> bool:
    if stored == written:
        return True
    if isinstance(stored, str | bytes) and isinstance(written, str):
        # MySQL normalises JSON columns; MariaDB keeps the text.
        with contextlib.suppress(ValueError):
            return bool(json.loads(stored) == json.loads(written))
    return False


def _describe(error: BaseException) -> str:
    code = error_code(error)
    if code is not None and len(error.args) > 1:
        return f"MySQL error {code}: {error.args[1]}" if code else f"{type(error).__name__}: {error.args[1]!r}"
    return f"{type(error).__name__}: {error}"


@contextlib.contextmanager
def transaction(conn: Any) -> Iterator[Any]:
    """Run a block in a transaction on ``conn`` and yield a cursor; roll back if it raises."""
    conn.begin()
    try:
        with conn.cursor() as cursor:
            yield cursor
        conn.commit()
    except BaseException:
        with contextlib.suppress(Exception):
            conn.rollback()
        raise


def sql_literal(conn: Any, text: str) -> str:
    """Quote ``text`` as an SQL string literal for ``conn``, for a statement built by hand.

    Inside a quoted literal only the quote and (unless the server's ``sql_mode`` has
    ``NO_BACKSLASH_ESCAPES``) the backslash are special. Escaping just those with
    :meth:`str.replace` takes ~0.02 s for 40 MB of JSON, where PyMySQL's per-character table,
    which also escapes ``"`` and control characters, takes ~1 s and makes the statement larger.
    """
    if conn.server_status & _pymysql().constants.SERVER_STATUS.SERVER_STATUS_NO_BACKSLASH_ESCAPES:
        return "'" + text.replace("'", "''") + "'"
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


class _TooLarge(Exception):
    """A statement the connection's ``max_allowed_packet`` would refuse; nothing was sent."""

    def __init__(self, what: str, size: int, limit: int) -> None:
        super().__init__(what, size, limit)
        self.what, self.size, self.limit = what, size, limit

    def __str__(self) -> str:
        sizes = f"a {_mib(self.size)} statement ({self.size:,} bytes)"
        server = f"the server's max_allowed_packet of {_mib(self.limit)} ({self.limit:,} bytes)"
        if self.size >= _MAX_PACKET_CEILING:
            return f"{self.what} needs {sizes}, too large for {server} even at its largest (1 GiB); nothing was written"
        wanted = min(1 << self.size.bit_length(), _MAX_PACKET_CEILING)
        return (
            f"{self.what} needs {sizes}, too large for {server}; nothing was written. Raise the limit on the"
            f" server: SET GLOBAL max_allowed_packet = {wanted} (as an administrator; new connections get it),"
            f" or max_allowed_packet = {wanted} under [mysqld] in my.cnf and restart"
        )


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def to_seconds(value: datetime) -> float:
    """Turn a naive UTC ``datetime`` read from a ``TIMESTAMP(6)`` column into Unix seconds."""
    return ((value - _EPOCH) // timedelta(microseconds=1)) / 1_000_000


def from_seconds(seconds: float) -> datetime:
    """Turn Unix seconds into the naive UTC ``datetime`` a ``TIMESTAMP(6)`` column takes, to the microsecond."""
    return _EPOCH + timedelta(microseconds=round(seconds * 1_000_000))


def utc_now() -> tuple[datetime, float]:
    """Return now, truncated to the microsecond, as a naive UTC ``datetime`` and as Unix seconds."""
    micros = time.time_ns() // 1000
    return _EPOCH + timedelta(microseconds=micros), micros / 1_000_000


class _Unreachable(Exception):
    pass


class MySQLClient:
    """A thread-safe pool of PyMySQL connections that creates the schema before first use.

    Args:
        options: PyMySQL ``connect`` arguments.
        schema: DDL to run once before the first operation, or ``None`` to run none.
        init_timeout: Seconds the DDL may take.
    """

    def __init__(self, options: Mapping[str, Any], *, schema: list[Statement] | None, init_timeout: float) -> None:
        self._pymysql = _pymysql()
        client_flag = int(options.get("client_flag", 0)) | self._pymysql.constants.CLIENT.FOUND_ROWS
        # Rows affected must mean rows matched, so an update that changes nothing still finds its row.
        self._options = {**options, "autocommit": True, "client_flag": client_flag}
        self.address = str(
            options.get("unix_socket") or f"{options.get('host') or 'localhost'}:{options.get('port') or 3306}"
        )
        self._schema = schema
        self._init_timeout = init_timeout
        self._lock = threading.Lock()
        self._init_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(_POOL_SIZE)
        self._idle: list[Any] = []
        self._generation = 0
        # Each connection's max_allowed_packet, read when it opened (the server fixes a session's then).
        self._packet_limits: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()

    def _connect(self, **overrides: Any) -> Any:
        try:
            conn = self._pymysql.connect(**{**self._options, **overrides})
        except (self._pymysql.err.Error, OSError) as exc:
            raise _Unreachable(self._explain(exc)) from exc
        try:
            with conn.cursor() as cursor:
                cursor.execute(f"SET time_zone = '+00:00', sql_mode = {_STRICT_SQL_MODE}")
                cursor.execute("SELECT @@max_allowed_packet")
                (limit,) = cursor.fetchone()
        except (self._pymysql.err.Error, OSError) as exc:
            _close_quietly(conn)
            raise _Unreachable(self._explain(exc)) from exc
        with self._lock:
            self._packet_limits[conn] = int(limit)
        return conn

    def _ensure_schema(self) -> None:
        if self._schema is None:
            return
        with self._init_lock:
            if self._schema is None:
                return
            try:
                conn, generation, _ = self._acquire(fresh=False)
            except _Unreachable as exc:
                self.close()
                raise StorageError(f"init database failed: mysql {self.address}: cannot connect: {exc}") from exc
            healthy = False
            try:
                self._run_ddl(conn, self._schema)
                healthy = True
            except AgentEvalError as exc:
                failure = exc
            finally:
                self._release(conn, generation, healthy)
            if not healthy:
                self.close()
                raise StorageError(f"init database failed: {failure}") from failure
            self._schema = None

    def _run_ddl(self, conn: Any, schema: list[Statement]) -> None:
        deadline = time.monotonic() + self._init_timeout
        tables = sorted({statement.table for statement in schema})
        existing: set[tuple[str, str]] | None = None
        what = "read the existing indexes"
        try:
            with conn.cursor() as cursor:
                for statement in schema:
                    what = (
                        f"create index {statement.index} on table {statement.table}"
                        if statement.index
                        else f"create table {statement.table}"
                    )
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise StorageError(f"{what} failed: timed out after {self._init_timeout:g}s")
                    # DDL waits for metadata locks; bound that wait by the time left.
                    cursor.execute("SET SESSION lock_wait_timeout = %s", (max(1, math.ceil(remaining)),))
                    if statement.index:
                        if existing is None:
                            existing = _existing_indexes(cursor, tables)
                        if (statement.table, statement.index) in existing:
                            continue
                    try:
                        cursor.execute(statement.sql)
                    except self._pymysql.err.Error as exc:
                        if not statement.index or error_code(exc) != _DUPLICATE_KEY_NAME:
                            raise
                what = "reset lock_wait_timeout"
                cursor.execute("SET SESSION lock_wait_timeout = DEFAULT")
        except self._pymysql.err.Error as exc:
            raise StorageError(f"{what} failed: {self._explain(exc)}") from exc

    def _timeout(self, error: BaseException) -> str | None:
        """Say which timeout ran out, when a PyMySQL error comes from one."""
        if not isinstance(error.__context__, TimeoutError):
            return None
        code = error_code(error)
        if code == _CONNECT_FAILED:
            what, option, parameter = "did not accept a connection within the connect", "connect_timeout", "timeout"
        elif code == _SEND_FAILED:
            what, option, parameter = "took no data for the write", "write_timeout", "writeTimeout"
        else:
            what, option, parameter = "did not answer within the read", "read_timeout", "readTimeout"
        return (
            f"the server {what} timeout of {self._options[option]:g}s; it may be hung or overloaded"
            f" (the DSN's {parameter} parameter or connect_options {option} sets the timeout)"
        )

    def _explain(self, error: BaseException) -> str:
        return self._timeout(error) or _describe(error)

    def _json_depth_limit(self, conn: Any) -> int | None:
        """The most levels of JSON nesting the server accepts (binary search), or ``None`` above a sane depth."""
        valid, refused = 0, _DEEPEST_PROBE + 1
        with conn.cursor() as cursor:
            while refused - valid > 1:
                depth = (valid + refused) // 2
                try:
                    cursor.execute("SELECT JSON_VALID(CONCAT(REPEAT('[', %s), REPEAT(']', %s)))", (depth, depth))
                    accepted = bool(cursor.fetchone()[0])
                except self._pymysql.err.Error as exc:
                    if error_code(exc) not in _JSON_REFUSED:  # MySQL raises for a document too deep
                        raise
                    accepted = False
                valid, refused = (depth, refused) if accepted else (valid, depth)
        return valid if valid < _DEEPEST_PROBE else None

    def _refused_json(self, conn: Any, error: BaseException, documents: Mapping[str, str]) -> str | None:
        """Explain a JSON document the server refused for its nesting depth, or ``None`` if that was not why."""
        if error_code(error) not in _JSON_REFUSED or not documents:
            return None
        try:
            limit = self._json_depth_limit(conn)
        except self._pymysql.err.Error:
            return None
        nesting = None if limit is None else too_deep(documents, limit)
        if nesting is None:
            return None
        case = f"in eval case {nesting.eval_id!r}, " if nesting.eval_id else ""
        return (
            f"JSON nested too deeply: {case}the value at {nesting.path} is nested {nesting.level} levels deep, and the"
            f" server accepts at most {limit} levels of JSON arrays and objects ({_describe(error)}); nothing was"
            " written. Flatten the value, or keep it as a JSON string"
        )

    def _acquire(self, *, fresh: bool) -> tuple[Any, int, bool]:
        """Take a pooled connection (unless ``fresh``) or open one; the flag says whether it is new."""
        self._slots.acquire()
        try:
            with self._lock:
                generation = self._generation
                conn = self._idle.pop() if self._idle and not fresh else None
            return (conn, generation, False) if conn is not None else (self._connect(), generation, True)
        except BaseException:
            self._slots.release()
            raise

    def _release(self, conn: Any, generation: int, healthy: bool) -> None:
        try:
            if healthy and conn.server_status & self._pymysql.constants.SERVER_STATUS.SERVER_STATUS_IN_TRANS:
                try:
                    conn.rollback()
                except self._pymysql.err.Error:
                    healthy = False
            with self._lock:
                if healthy and generation == self._generation:
                    self._idle.append(conn)
                    return
            _close_quietly(conn)
        finally:
            self._slots.release()

    def _drop_idle(self) -> None:
        with self._lock:
            stale, self._idle = self._idle, []
        for conn in stale:
            _close_quietly(conn)

    def _is_dropped(self, error: BaseException) -> bool:
        return isinstance(error, self._pymysql.err.InterfaceError) or (
            isinstance(error, self._pymysql.err.OperationalError) and error_code(error) in _DROPPED
        )

    def run(
        self, operation: str, table: str, action: Callable[[Any], T], *, documents: Mapping[str, str] | None = None
    ) -> T:
        """Run ``action(connection)`` in this thread, creating the schema first if needed.

        A dropped connection is replaced and ``action`` run once more; a deadlock is retried a
        few times. A timeout is not retried: a server that did not answer once is not waited for
        again. Errors of ours raised by ``action`` pass through. A statement too large for a
        pooled connection (:meth:`execute_sized`) is tried once on a new connection, which reads
        the server's current limit; nothing is sent before it fits.

        Args:
            operation: What is done, for errors (e.g. ``store eval set result app.r1``).
            table: The table it concerns, for errors.
            action: The work, given a connection.
            documents: The JSON documents ``action`` writes, by the path of their root (e.g.
                ``{"evalCaseResults": "[...]"}``), to say where one nests deeper than the server
                accepts should the server refuse it.

        Raises:
            StorageError: The database failed, did not answer within a timeout, or refused a
                statement larger than its ``max_allowed_packet`` or a JSON document nested
                deeper than it accepts; the message names the server, the operation and the table.
        """
        self._ensure_schema()
        retried, deadlocks = False, 0
        where = f"mysql {self.address}: {operation} (table {table})"
        while True:
            try:
                conn, generation, new = self._acquire(fresh=retried)
            except _Unreachable as exc:
                raise StorageError(f"{where} failed: cannot connect: {exc}") from exc.__cause__
            healthy = True
            try:
                return action(conn)
            except _TooLarge as exc:
                if not new and not retried:
                    # The limit may have been raised since the pooled connections opened.
                    healthy = False
                    self._drop_idle()
                    retried = True
                    continue
                raise StorageError(f"{where} failed: {exc}") from None
            except self._pymysql.err.Error as exc:
                timeout = self._timeout(exc)
                if timeout is not None:
                    healthy = False
                    self._drop_idle()
                    raise StorageError(f"{where} failed: {timeout}") from exc
                if self._is_dropped(exc):
                    healthy = False
                    if not retried:
                        # The others were opened before the same outage; replace them all.
                        self._drop_idle()
                        retried = True
                        continue
                    raise StorageError(f"{where} failed: the connection was lost again: {_describe(exc)}") from exc
                if error_code(exc) == _DEADLOCK and deadlocks < _DEADLOCK_RETRIES:
                    deadlocks += 1
                    continue
                refused = self._refused_json(conn, exc, documents or {})
                raise StorageError(f"{where} failed: {refused or _describe(exc)}") from exc
            finally:
                self._release(conn, generation, healthy)

    def execute_sized(self, cursor: Any, sql: str, what: str, args: tuple[Any, ...] | None = None) -> None:
        """Run a statement that writes data on ``cursor``, if the server accepts its size.

        A server refuses a packet larger than its ``max_allowed_packet`` only as it arrives, and
        drops the connection, which looks like a lost connection worth sending it again. So the
        size is checked here, against the limit the connection read when it opened, and nothing
        is sent when it does not fit.

        Args:
            cursor: A cursor of a connection this client opened.
            sql: The statement: complete (built by hand, see :func:`sql_literal`), or with
                placeholders for ``args``.
            what: What the statement writes, for the error (e.g. ``the result``).
            args: The parameters, or ``None`` for a complete statement.

        Raises:
            _TooLarge: The statement does not fit; :meth:`run` turns it into a ``StorageError``.
        """
        conn = cursor.connection
        # What cursor.execute(sql, args) would send, built the same way.
        statement = sql if args is None else cursor.mogrify(sql, args)
        # The server refuses a command packet (the statement and one command byte) of max_allowed_packet bytes.
        size = len(statement.encode(conn.encoding, "surrogateescape")) + 1
        with self._lock:
            limit = self._packet_limits[conn]
        if size >= limit:
            raise _TooLarge(what, size, limit)
        cursor.execute(statement)

    async def call(
        self, operation: str, table: str, action: Callable[[Any], T], *, documents: Mapping[str, str] | None = None
    ) -> T:
        """Run :meth:`run` in a worker thread."""
        return await asyncio.to_thread(self.run, operation, table, action, documents=documents)

    async def first_column(self, operation: str, table: str, sql: str, args: tuple[Any, ...]) -> list[str]:
        """The first column of every row ``sql`` selects, in the order it gives them (a store's ``list``).

        Raises:
            StorageError: The database failed.
        """

        def values(conn: Any) -> list[str]:
            with conn.cursor() as cursor:
                cursor.execute(sql, args)
                return [row[0] for row in cursor.fetchall()]

        return await self.call(operation, table, values)

    async def json_depth_limit(self, table: str) -> int | None:
        """The most levels of JSON arrays and objects the server accepts in a document, or ``None`` if no low limit.

        MariaDB's ``JSON_VALID`` (the CHECK of the JSON columns) accepts 31; MySQL 100.

        Raises:
            StorageError: The database failed.
        """
        return await self.call("read the server's JSON nesting limit", table, self._json_depth_limit)

    def close(self) -> None:
        """Close the idle connections; those in use are closed when released. Later calls reconnect."""
        with self._lock:
            self._generation += 1
        self._drop_idle()


def _existing_indexes(cursor: Any, tables: list[str]) -> set[tuple[str, str]]:
    # Asking first is much cheaper than a CREATE INDEX that fails with 1061 (a table rebuild check).
    marks = ", ".join(["%s"] * len(tables))
    cursor.execute(
        "SELECT table_name, index_name FROM information_schema.statistics"
        f" WHERE table_schema = DATABASE() AND table_name IN ({marks})",
        tables,
    )
    return {(str(table), str(index)) for table, index in cursor.fetchall()}


def _close_quietly(conn: Any) -> None:
    with contextlib.suppress(Exception):
        conn.close()


class MySQLStore:
    """Shared construction of the MySQL stores.

    A call gives up on a server that does not answer: 10 s to connect, 120 s of silence while
    reading or writing (:data:`DEFAULT_TIMEOUTS`), unless the DSN (``timeout``, ``readTimeout``,
    ``writeTimeout``) or ``connect_options`` say otherwise. Sessions run with a strict
    ``sql_mode`` added to the server's, so a value is never cut to fit its column.

    Args:
        dsn: A DSN (see :func:`parse_dsn`); wins over ``instance``.
        instance: The name of an instance registered with :func:`register_mysql_instance`.
        connect_options: Extra PyMySQL ``connect`` arguments, overriding the DSN's or instance's.
        table_prefix: Prefix of the table names (``_`` appended when missing; ``""`` for none).
        skip_db_init: Do not create the tables and indexes.
        init_timeout: Seconds the schema creation may take; ``<= 0`` keeps the default 30.

    Raises:
        ConfigError: An invalid prefix, DSN or option, an unknown instance, or no DSN at all.
        MissingDependencyError: PyMySQL is not installed.
    """

    _SCHEMA_FILES: ClassVar[tuple[str, ...]] = ()
    _TABLES: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        dsn: str = "",
        *,
        instance: str = "",
        connect_options: Mapping[str, Any] | None = None,
        table_prefix: str = "",
        skip_db_init: bool = False,
        init_timeout: float = DEFAULT_INIT_TIMEOUT,
    ) -> None:
        self._prefix = normalize_table_prefix(table_prefix)
        options = _resolve(dsn, instance, connect_options)
        timeout = float(init_timeout) if init_timeout > 0 else DEFAULT_INIT_TIMEOUT
        schema = None if skip_db_init else load_schema(self._SCHEMA_FILES, self._prefix)
        self._client = MySQLClient(options, schema=schema, init_timeout=timeout)
        self._database = str(options.get("database") or "")

    @property
    def tables(self) -> tuple[str, ...]:
        """The full names of the tables this store uses."""
        return tuple(self._prefix + base for base in self._TABLES)

    async def close(self) -> None:
        """Close the pooled connections; a later call opens new ones."""
        await asyncio.to_thread(self._client.close)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(address={self._client.address!r}, database={self._database!r}, "
            f"table_prefix={self._prefix!r})"
        )
