"""Every command runs in a scratch directory, its ``sys.path`` and imported agent modules undone afterwards."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    # Agent modules the tests wrote are imported by name: a later test may write another of that name.
    for name in set(sys.modules) - before:
        module_file = getattr(sys.modules[name], "__file__", None) or ""
        if module_file.startswith(str(tmp_path)):
            del sys.modules[name]
