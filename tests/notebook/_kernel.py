"""Running one cell in a real Jupyter kernel (the ``kernel`` fixture of ``conftest.py``) and reading what it sent."""

from __future__ import annotations

import queue
from typing import Any

import pytest


def cell_messages(client: Any, code: str) -> list[tuple[str, dict[str, Any]]]:
    """Execute ``code`` as a cell: each message it sent, as (type, content), until the kernel is idle again.

    A cell that raises fails the test with the kernel's traceback.
    """
    msg_id = client.execute(code)
    sent: list[tuple[str, dict[str, Any]]] = []
    while True:
        try:
            message = client.get_iopub_msg(timeout=60)
        except queue.Empty:  # pragma: no cover - a hung kernel
            pytest.fail("the kernel did not finish executing the cell")
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = message["msg_type"], message["content"]
        if kind == "error":
            pytest.fail("\n".join(content["traceback"]))
        if kind == "status" and content["execution_state"] == "idle":
            return sent
        sent.append((kind, content))


def cell_outputs(client: Any, code: str) -> list[dict[str, Any]]:
    """Execute ``code`` as a cell: the data of each display and result it produced."""
    return [
        content["data"] for kind, content in cell_messages(client, code) if kind in ("display_data", "execute_result")
    ]
