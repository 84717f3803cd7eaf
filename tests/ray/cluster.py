"""Start and stop a real Ray cluster on 127.0.0.1: a head and one more node (``ray start``), one CPU each."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Cluster:
    address: str
    dashboard: str
    """The state API's address (``ray.util.state`` reads the cluster's state through the dashboard)."""


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
    env = {
        **os.environ,
        # Ray reads and writes ~/.ray (an auth token there turns on token authentication): never the real home.
        "HOME": temp,
        "RAY_TMPDIR": temp,
        "RAY_USAGE_STATS_ENABLED": "0",
        # The workers import the test agents by name.
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
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
