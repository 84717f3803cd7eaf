"""A MariaDB server of the tests' own, for behaviour the shared server must not be switched to.

:class:`PrivateMariaDB` installs a data directory with ``mariadb-install-db`` and runs ``mariadbd``
on a free port with the options a test needs (a small ``max_allowed_packet``, a non-strict
``sql_mode``); it can be paused with SIGSTOP to play a hung server.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

__all__ = ["PrivateMariaDB", "free_port", "start_private_mariadb"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


class PrivateMariaDB:
    """A MariaDB server of a test's own: ``mariadb-install-db`` into ``base``, then ``mariadbd`` on a free port.

    Args:
        base: An empty directory for the data directory, socket, pid file and error log.
        daemon: The ``mariadbd`` binary.
        install: The ``mariadb-install-db`` binary.
        server_options: Further ``mariadbd`` options, e.g. ``--sql-mode=``.
    """

    def __init__(self, base: Path, daemon: str, install: str, *server_options: str) -> None:
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
                *server_options,
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

    def pause(self) -> None:
        """Stop the server process (SIGSTOP): it keeps its connections but answers nothing.

        Returns once the kernel reports the process stopped: the signal is delivered asynchronously,
        and a busy machine could otherwise let the server answer one more query.
        """
        self.process.send_signal(signal.SIGSTOP)
        stat = Path(f"/proc/{self.process.pid}/stat")
        deadline = time.monotonic() + 10
        # The state is the field after the parenthesised command name: "T" once stopped.
        while stat.read_text().rpartition(")")[2].split()[0] != "T":
            if time.monotonic() > deadline:
                raise RuntimeError("the private MariaDB did not stop on SIGSTOP within 10 s")
            time.sleep(0.01)

    def resume(self) -> None:
        """Let a paused server run again (SIGCONT)."""
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """Stop the server (resuming it first, should it be paused) and wait for it to exit."""
        self.resume()
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_private_mariadb(base: Path, *server_options: str) -> tuple[PrivateMariaDB, Any]:
    """Start a private MariaDB with database ``test`` and return it with a root connection.

    The test is skipped when the MariaDB binaries are not installed. The caller stops the server.
    """
    daemon = shutil.which("mariadbd") or shutil.which("mariadbd", path="/usr/sbin:/usr/local/sbin")
    install = shutil.which("mariadb-install-db")
    if daemon is None or install is None:
        pytest.skip("mariadbd and mariadb-install-db are not installed (apt-get install mariadb-server)")
    import pymysql

    server = PrivateMariaDB(base, daemon, install, *server_options)
    try:
        admin = server.admin(pymysql, time.monotonic() + 60)
        with admin.cursor() as cursor:
            cursor.execute("CREATE DATABASE test")
    except BaseException:
        server.stop()
        raise
    return server, admin
