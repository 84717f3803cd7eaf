"""The README's quick start runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    """The README's Python blocks, in order: each builds on the ones before it."""
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_quick_start_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = python_blocks()
    assert len(blocks) == 4
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme"}

    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)

    weather = namespace["weather_report"]
    assert weather.overall_status is namespace["ae"].EvalStatus.PASSED  # type: ignore[attr-defined]
    report, again = namespace["report"], namespace["again"]
    assert report.num_runs == 3  # type: ignore[attr-defined]
    assert again.cases.equals(report.cases)  # type: ignore[attr-defined]
    assert (tmp_path / "report.html").is_file()
