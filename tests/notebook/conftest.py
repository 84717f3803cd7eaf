"""A real Jupyter kernel for the tests that run cells in one, started once per module that asks for it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from jupyter_client.manager import KernelManager


@pytest.fixture(scope="module")
def kernel() -> Iterator[Any]:
    manager = KernelManager()
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    try:
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
