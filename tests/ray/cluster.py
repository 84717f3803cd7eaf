"""Start and stop a real Ray cluster on 127.0.0.1: a head and one more node (``ray start``), one CPU each."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Cluster:
    address: str
    dashboard: str
    """The state API's address (``ray.util.state`` reads the cluster's state through the dashboard)."""


def _ray_environment(temp: str) -> dict[str, str]:
    """The environment of the ``ray`` commands and of the processes they start."""
    return {
        **os.environ,
        # Ray reads and writes ~/.ray (an auth token there turns on token authentication): never the real home.
        "HOME": temp,
        "RAY_TMPDIR": temp,
        "RAY_USAGE_STATS_ENABLED": "0",
        # The workers import the test agents by name.
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def local_cluster() -> Iterator[Cluster]:
    """A two-node cluster, this process connected to it; ``ray stop --force`` at the end, also on failure.

    Ray's files go to a new directory under /tmp (never the home directory), removed at the end.
    """
    import ray

    # Short: Ray's socket paths must fit in 107 bytes.
    temp = tempfile.mkdtemp(prefix="aeray", dir="/tmp")
    ray_bin = str(Path(sys.executable).with_name("ray"))
    port, dashboard_port = _free_port(), _free_port()
    env = _ray_environment(temp)
    head = [
        ray_bin, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=1",
        f"--temp-dir={temp}", "--disable-usage-stats",
        # The state API (worker PIDs) is served by the dashboard; bound to loopback only.
        "--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard_port}",
    ]  # fmt: skip
    node = [ray_bin, "start", f"--address=127.0.0.1:{port}", "--node-ip-address=127.0.0.1", "--num-cpus=1"]
    saved = {name: os.environ.get(name) for name in ("HOME", "RAY_TMPDIR", "RAY_USAGE_STATS_ENABLED")}
    os.environ.update(HOME=temp, RAY_TMPDIR=temp, RAY_USAGE_STATS_ENABLED="0")
    try:
        for command in (head, node):
            subprocess.run(command, env=env, check=True, capture_output=True, timeout=90)
        ray.init(address=f"127.0.0.1:{port}", logging_level=logging.WARNING)
        yield Cluster(f"127.0.0.1:{port}", f"http://127.0.0.1:{dashboard_port}")
    finally:
        ray.shutdown()
        subprocess.run([ray_bin, "stop", "--force"], env=env, capture_output=True, timeout=90)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(temp, ignore_errors=True)


@dataclass
class DriverCluster:
    """A two-node cluster this process is not connected to: a driver runs in a subprocess, with ``env``."""

    address: str
    client_address: str
    """The head's Ray client server (``ray://``): a driver connected there runs no Ray node of its own."""
    env: dict[str, str]
    """The environment of a driver on this machine: Ray's files in the cluster's directory, the tests importable."""
    directory: str
    orphans: dict[int, str] = field(default_factory=dict)
    """Processes of a raylet the test killed (its workers and agents), by pid with their command lines: killed at
    the end too, if still there."""

    def kill_raylet(self, socket_name: str) -> None:
        """SIGKILL the raylet serving ``socket_name`` (its node's ``RayletSocketName``), as the OOM killer would."""
        table = _process_table()
        raylet = next(
            pid
            for pid, (_, command) in table.items()
            if re.search(rf"--raylet_socket_name={re.escape(socket_name)}(\s|$)", command)
        )
        self.orphans |= {pid: table[pid][1] for pid in _with_descendants({raylet}, table) - {raylet}}
        os.kill(raylet, signal.SIGKILL)


@contextlib.contextmanager
def driver_cluster() -> Iterator[DriverCluster]:
    """A two-node cluster for a driver subprocess; at the end every process of it is killed by pid, also on failure.

    Not ``ray stop``, which ends every Ray process of the machine (another test's cluster too). Ray's files go to
    a new directory under /tmp (never the home directory), removed at the end.
    """
    temp = tempfile.mkdtemp(prefix="aeray", dir="/tmp")
    ray_bin = str(Path(sys.executable).with_name("ray"))
    port, client_port = _free_port(), _free_port()
    env = _ray_environment(temp)
    head = [
        ray_bin, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=1",
        f"--temp-dir={temp}", "--disable-usage-stats", "--include-dashboard=false",
        f"--ray-client-server-port={client_port}",
    ]  # fmt: skip
    node = [ray_bin, "start", f"--address=127.0.0.1:{port}", "--node-ip-address=127.0.0.1", "--num-cpus=1"]
    cluster = DriverCluster(f"127.0.0.1:{port}", f"ray://127.0.0.1:{client_port}", env, temp)
    try:
        for command in (head, node):
            subprocess.run(command, env=env, check=True, capture_output=True, timeout=90)
        yield cluster
    finally:
        _kill_cluster(temp, client_port, cluster.orphans)
        shutil.rmtree(temp, ignore_errors=True)


def _kill_cluster(directory: str, client_port: int, orphans: dict[int, str]) -> None:
    """SIGKILL the processes started for the cluster and theirs.

    They name the cluster's ``directory`` in their command lines, but for the Ray client server, named by its port.
    """
    table = _process_table()
    mentions = re.compile(rf"{re.escape(directory)}(/|\s|$)|ray\.util\.client\.server .*--port={client_port}(\s|$)")
    started = {pid for pid, (_, command) in table.items() if mentions.search(command) and pid != os.getpid()}
    doomed = _with_descendants(started, table) | {
        pid for pid, command in orphans.items() if table.get(pid, (0, ""))[1] == command
    }
    for pid in doomed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while any(_running(pid) for pid in doomed) and time.monotonic() < deadline:
        time.sleep(0.1)


def _process_table() -> dict[int, tuple[int, str]]:
    """Every process of the machine: its parent's pid and its command line (from /proc)."""
    table: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            parent = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        table[int(entry.name)] = (parent, command)
    return table


def _with_descendants(pids: set[int], table: dict[int, tuple[int, str]]) -> set[int]:
    found = set(pids)
    while new := {pid for pid, (parent, _) in table.items() if parent in found} - found:
        found |= new
    return found


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its parent does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False
