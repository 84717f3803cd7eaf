"""A store keeps working across a real restart of the MariaDB server on this machine."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time

import pytest

from agenteval.evalresult import MySQLEvalResultManager
from tests.evalresult._data import make_result
from tests.mysql.conftest import MySQLServer, unavailable

MARIADBD = "/usr/sbin/mariadbd"


def _daemon(*args: str, server_options: tuple[str, ...] = ()) -> None:
    subprocess.run(
        ["start-stop-daemon", *args, "--exec", MARIADBD, "--", *server_options],
        check=True,
        capture_output=True,
        timeout=40,
    )


def _wait_until_up(mysql: MySQLServer, deadline: float) -> None:
    while True:
        try:
            mysql.connect().close()
            return
        except mysql.pymysql.err.Error:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.mark.mysql
@pytest.mark.timeout(60)
def test_save_after_a_server_restart(mysql: MySQLServer) -> None:
    if shutil.which("start-stop-daemon") is None or not os.path.exists(MARIADBD) or os.geteuid() != 0:
        unavailable("restarting the server needs root, start-stop-daemon and /usr/sbin/mariadbd")
    if mysql.options.get("host") not in {"127.0.0.1", "localhost"}:
        unavailable("the test server is not the local mariadbd")
    store = MySQLEvalResultManager(mysql.dsn, table_prefix=mysql.prefix)
    # A restart forgets SET GLOBAL: the server comes back with the limit scripts/mariadb.sh gave it. Its
    # pid file singles it out from other mariadbd processes (such as test_large_results.py's own server).
    [(packet_limit, pid_file)] = mysql.query("SELECT @@GLOBAL.max_allowed_packet, @@GLOBAL.pid_file")
    this_server = ("--pidfile", pid_file)
    with asyncio.Runner() as runner:
        runner.run(store.save("app", make_result(eval_set_result_id="before")))
        assert store._client._idle, "the store should hold a pooled connection"
        try:
            _daemon("--stop", "--retry", "30", *this_server)
        finally:
            options = (f"--max-allowed-packet={packet_limit}",)
            _daemon("--start", "--oknodo", "--background", *this_server, server_options=options)
            _wait_until_up(mysql, time.monotonic() + 20)
        assert mysql.query("SELECT @@GLOBAL.max_allowed_packet") == [(packet_limit,)]
        # The pooled connection died with the old server: the save is retried on a new one.
        assert runner.run(store.save("app", make_result(eval_set_result_id="after"))) == "after"
        assert runner.run(store.list("app")) == ["after", "before"]
        runner.run(store.close())
