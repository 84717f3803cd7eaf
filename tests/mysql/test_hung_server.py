"""A server that does not answer fails a call within the connection's timeouts, never hangs it.

Three kinds of silence: a port whose listen queue is full (the connection is never accepted), a
listener that accepts and never says a word, and the tests' private MariaDB stopped with SIGSTOP
between two calls. Each test gives a 1 s timeout in the DSN; pytest-timeout ends a test that hangs.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from agenteval.errors import StorageError
from agenteval.evalresult import MySQLEvalResultManager
from tests.evalresult._data import make_result
from tests.mysql._private_mariadb import PrivateMariaDB

pytestmark = [pytest.mark.mysql, pytest.mark.timeout(60)]


class SilentListener:
    """A TCP listener on 127.0.0.1 that accepts connections and never sends a byte."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        self._accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:  # closed
                return
            self._accepted.append(connection)

    def close(self) -> None:
        self._socket.shutdown(socket.SHUT_RDWR)
        self._socket.close()
        self._thread.join(timeout=5)
        for connection in self._accepted:
            connection.close()


@pytest.fixture
def silent_listener() -> Iterator[SilentListener]:
    listener = SilentListener()
    yield listener
    listener.close()


@pytest.fixture
def full_port() -> Iterator[int]:
    """A port whose listen queue is full: a new connection is neither accepted nor refused (Linux)."""
    server = socket.create_server(("127.0.0.1", 0), backlog=0)
    port: int = server.getsockname()[1]
    queued: list[socket.socket] = []
    try:
        for _ in range(16):
            client = socket.socket()
            client.settimeout(0.5)
            queued.append(client)
            try:
                client.connect(("127.0.0.1", port))
            except TimeoutError:
                break
        else:
            pytest.skip("this system's TCP stack accepts every connection into the listen queue")
        yield port
    finally:
        for client in queued:
            client.close()
        server.close()


@pytest.mark.asyncio
async def test_a_server_that_never_accepts_fails_within_the_connect_timeout(full_port: int) -> None:
    store = MySQLEvalResultManager(f"root@tcp(127.0.0.1:{full_port})/test?timeout=1s")
    with pytest.raises(StorageError) as info:
        await store.list("app")
    assert str(info.value) == (
        f"init database failed: mysql 127.0.0.1:{full_port}: cannot connect: the server did not accept a connection"
        " within the connect timeout of 1s; it may be hung or overloaded (the DSN's timeout parameter or"
        " connect_options connect_timeout sets the timeout)"
    )


@pytest.mark.asyncio
@pytest.mark.parametrize("form", ["url", "go"])
async def test_a_server_that_accepts_and_never_answers_fails_within_the_read_timeout(
    silent_listener: SilentListener, form: str
) -> None:
    address = f"127.0.0.1:{silent_listener.port}"
    dsn = {
        "url": f"mysql://root@{address}/test?readTimeout=1s",
        "go": f"root@tcp({address})/test?readTimeout=1s&parseTime=true",
    }[form]
    store = MySQLEvalResultManager(dsn, skip_db_init=True)
    with pytest.raises(StorageError) as info:
        await store.get("app", "r1")
    assert str(info.value) == (
        f"mysql {address}: load eval set result app.r1 (table evaluation_eval_set_results) failed: cannot connect:"
        " the server did not answer within the read timeout of 1s; it may be hung or overloaded (the DSN's"
        " readTimeout parameter or connect_options read_timeout sets the timeout)"
    )


def test_a_hung_server_fails_a_call_within_the_read_timeout_and_is_not_retried(
    private_server: tuple[PrivateMariaDB, Any],
) -> None:
    server, _ = private_server
    store = MySQLEvalResultManager(f"{server.dsn}?readTimeout=1s", table_prefix="hung")
    with asyncio.Runner() as runner:
        runner.run(store.save("app", make_result(eval_set_result_id="r1")))
        server.pause()
        try:
            with pytest.raises(StorageError) as info:
                runner.run(store.get("app", "r1"))
        finally:
            server.resume()
        assert str(info.value) == (
            f"mysql 127.0.0.1:{server.port}: load eval set result app.r1 (table hung_evaluation_eval_set_results)"
            " failed: the server did not answer within the read timeout of 1s; it may be hung or overloaded (the"
            " DSN's readTimeout parameter or connect_options read_timeout sets the timeout)"
        )
        # The timed-out connection is not reused: the next call, on a server that answers again, works.
        assert runner.run(store.get("app", "r1")).eval_set_result_id == "r1"
        runner.run(store.close())
