"""The README's quick start runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def runnable_blocks() -> list[str]:
    """The README's Python blocks that start with an import; the others are fragments to adapt."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)
    return [block for block in blocks if block.startswith(("import ", "from "))]


def test_the_quick_start_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = runnable_blocks()
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme"}

    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)

    report, again = namespace["report"], namespace["again"]
    assert report.num_runs == 3  # type: ignore[attr-defined]
    assert again.cases.equals(report.cases)  # type: ignore[attr-defined]
    assert (tmp_path / "report.html").is_file()
