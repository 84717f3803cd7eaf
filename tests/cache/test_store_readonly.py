"""A cache this process cannot write: hits are served read-only, and new work is not kept, with one warning.

The condition is real, whoever runs the tests: the cache's directory and files lose their write permission,
and the evaluation runs in a child process that the kernel holds to them. As a user other than root that
is so already; root, which the kernel lets write anything (``CAP_DAC_OVERRIDE``), runs the child without
that capability, as a container started with ``--cap-drop DAC_OVERRIDE`` would.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agenteval.cache.store import DATABASE_FILE

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 120.0

LAUNCH = """
import ctypes, os, sys
if os.geteuid() == 0:
    # Out of the bounding set, so that the program exec'd next does not get them back as root: writing,
    # reading and owning what the permissions deny.
    libc = ctypes.CDLL(None, use_errno=True)
    PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER = 24, 1, 2, 3
    for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed: root without CAP_SETPCAP")
os.execv(sys.executable, [sys.executable, "-c", sys.argv[1], *sys.argv[2:]])
"""

EVALUATE = """
import json, logging, sys
import agenteval as ae

cache_dir, count = sys.argv[1], int(sys.argv[2])
calls = []

def agent(message):
    calls.append(message)
    return message.upper()

warnings = []

class Kept(logging.Handler):
    def emit(self, record):
        warnings.append(record.getMessage())

logging.getLogger("agenteval").addHandler(Kept(logging.WARNING))
cases = [ae.EvalCase.of(f"c{index}", f"word{index}", expect=f"WORD{index}") for index in range(count)]
report = ae.Evaluator("app", agent, progress=False).evaluate(
    ae.EvalSet.of("s", cases), metrics=[ae.EvalMetric.final_response()], cache=cache_dir
)
cache = ae.Cache(cache_dir)
try:
    cache.put("score", "k", "1")
    refused = ""
except ae.errors.StorageError as exc:
    refused = str(exc)
try:
    stats = cache.stats().entries
except ae.errors.AgentEvalError as exc:
    stats = str(exc)
print(json.dumps({
    "calls": calls,
    "statuses": [str(case.final_eval_status) for case in report.result.eval_case_results],
    "reused": report.reuse_summary,
    "warnings": warnings,
    "refused": refused,
    "read_only": getattr(cache, "read_only", None),  # getattr: new in this version
    "repr": repr(cache),
    "stats": stats,
}))
"""


def fill(directory: Path, count: int) -> None:
    """A cache holding the inferences and scores of :data:`EVALUATE`'s first ``count`` cases, closed."""
    outcome = evaluate(directory, count)
    assert len(outcome["calls"]) == count  # type: ignore[arg-type]
    assert not list(directory.glob(f"{DATABASE_FILE}-*"))  # no -wal or -shm file left


@pytest.fixture
def unwritable() -> Iterator[list[Path]]:
    """Paths made read-only by a test (listed by it), writable again afterwards so that they can be removed."""
    paths: list[Path] = []
    yield paths
    for path in paths:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


def read_only(paths: list[Path], *made: Path) -> None:
    for path in made:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        paths.append(path)


def evaluate(cache_dir: Path, count: int = 4, *, launch: str = "") -> dict[str, object]:
    """Run :data:`EVALUATE` on ``count`` cases in a child process; ``launch`` is the code that starts it."""
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    arguments = ["-c", launch, EVALUATE] if launch else ["-c", EVALUATE]
    done = subprocess.run(
        [sys.executable, *arguments, str(cache_dir), str(count)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=DEADLINE,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    outcome: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return outcome


def evaluate_without_write_permission(cache_dir: Path) -> dict[str, object]:
    """:func:`evaluate` on four cases in a child process that the file permissions bind, root or not."""
    return evaluate(cache_dir, launch=LAUNCH)


def test_a_cache_this_process_cannot_write_serves_its_entries_and_warns_once_that_new_work_is_not_kept(
    tmp_path: Path, unwritable: list[Path]
) -> None:
    cache_dir = tmp_path / "cache"
    fill(cache_dir, 3)
    database = cache_dir / DATABASE_FILE
    before = database.read_bytes()
    read_only(unwritable, *cache_dir.iterdir(), cache_dir)

    outcome = evaluate_without_write_permission(cache_dir)

    # The three cached cases come from the cache; only the new one runs the agent.
    assert outcome["calls"] == ["word3"]
    assert outcome["statuses"] == ["passed"] * 4
    assert outcome["reused"] == "3/4 inferences and 3/4 scores from the cache"
    warnings = outcome["warnings"]
    assert isinstance(warnings, list) and len(warnings) == 1, warnings
    assert str(cache_dir) in warnings[0]
    assert f"read-only (this process may not write the file {database})" in warnings[0]
    assert "not kept" in warnings[0]
    assert str(outcome["refused"]).startswith(f"the cache {cache_dir} is read-only (")
    assert outcome["read_only"] == f"this process may not write the file {database}"
    assert str(outcome["repr"]).startswith(f"Cache({str(cache_dir)!r}, 7 entries, ")
    assert str(outcome["repr"]).endswith(", read-only)")
    # The three cases' inferences and scores, and the score the filling process put.
    assert outcome["stats"] == {"inference": 3, "score": 4}
    assert database.read_bytes() == before


def test_a_cache_in_a_directory_this_process_cannot_write_serves_its_entries(
    tmp_path: Path, unwritable: list[Path]
) -> None:
    # The database file itself may be written; SQLite could not make its -wal and -shm files beside it.
    cache_dir = tmp_path / "cache"
    fill(cache_dir, 4)
    read_only(unwritable, cache_dir)

    outcome = evaluate_without_write_permission(cache_dir)

    assert outcome["calls"] == []
    assert outcome["reused"] == "4/4 inferences and 4/4 scores from the cache"
    assert outcome["warnings"] == []
    assert outcome["read_only"] == f"this process may not write to the directory {cache_dir}"


def test_a_cache_that_cannot_be_created_leaves_the_evaluation_running_without_it_with_one_warning(
    tmp_path: Path, unwritable: list[Path]
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    read_only(unwritable, locked)
    cache_dir = locked / "cache"

    outcome = evaluate_without_write_permission(cache_dir)

    assert outcome["calls"] == [f"word{index}" for index in range(4)]
    assert outcome["statuses"] == ["passed"] * 4
    warnings = outcome["warnings"]
    assert isinstance(warnings, list) and len(warnings) == 1, warnings
    assert f"cannot create the cache directory {cache_dir}" in warnings[0]
    assert "Permission denied" in warnings[0]
    assert not cache_dir.exists()
