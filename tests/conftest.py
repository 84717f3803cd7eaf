"""Shared fixtures: every test runs with a scratch HOME and no network access to models."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

REFERENCE_EXAMPLES = Path(__file__).resolve().parents[1] / "tests" / "interop" / "trpc-examples"


@pytest.fixture(autouse=True)
def _scratch_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Point HOME at a temporary directory so no test can touch the real one."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    yield
