"""``agenteval compare A B``: the significance table, in words, and the changed cases, in the terminal or as JSON."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agenteval.examples.math import APP_NAME, DATA_DIR
from tests.cli._invoke import run_cli

FIXED_AGENT = """\
from agenteval.examples.math.agent import calculator_agent

def agent(message, turn):
    if message == "calc power 2 10":
        turn.record_tool("calculator", {"operation": "power", "a": 2, "b": 10},
                         {"operation": "power", "a": 2, "b": 10, "result": 1024})
        return "calc result: 1024"
    return calculator_agent(message, turn)
"""


@pytest.fixture
def two_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    """The demo's result (calc_power fails), then a bundle of an agent that fixes it (two runs each)."""
    (tmp_path / "fixed_agent.py").write_text(FIXED_AGENT)
    before = run_cli(["demo", "--num-runs", "2", "--json", "--output", "out"], capsys).json()
    run_cli(
        ["run", str(DATA_DIR / APP_NAME), "--agent", "fixed_agent:agent", "--num-runs", "2", "--bundle", "after.zip"],
        capsys,
    )
    return Path(before["evalSets"][0]["resultFile"]), tmp_path / "after.zip"


def test_compare_prints_the_significance_and_the_changed_cases(
    two_results: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    baseline, candidate = two_results

    ran = run_cli(["compare", str(baseline), str(candidate)], capsys)

    assert (ran.status, ran.err) == (0, "")
    lines = ran.out.splitlines()
    assert lines[0].startswith(f"baseline: {baseline} (eval set math-basic, 2 runs, result ")
    assert lines[1].startswith(f"candidate: {candidate} (eval set math-basic, 2 runs, result ")
    assert (
        lines[2]
        == "cases: 1 fixed, 0 regressed, 4 unchanged; (case, metric) results: 2 fixed, 0 regressed, 8 unchanged"
    )
    assert lines[3].startswith("pairing: 5 cases paired")
    table = lines[lines.index("significance (95% confidence; only paired cases count):") + 1 :]
    assert table[0].split() == ["metric", "counts", "pairs", "baseline", "candidate", "change", "interval", "p", "test"]
    rows = {line.split()[0]: line for line in table[2:6]}
    assert set(rows) == {"case_pass_rate", "run_pass_rate", "tool_trajectory_avg_score", "final_response_avg_score"}
    assert "0.80" in rows["case_pass_rate"] and "1.00" in rows["case_pass_rate"] and "+0.20" in rows["case_pass_rate"]
    assert "exact McNemar" in rows["case_pass_rate"]
    assert any(
        line.startswith("  cases passed (overall status): 80% → 100% (+20 pts") and "not significant" in line
        for line in lines
    )
    changed = lines[lines.index("changed cases:") + 1 :]
    assert changed[0].split()[:4] == ["case", "baseline", "candidate", "change"]
    assert changed[2].split() == ["calc_power", "failed", "passed", "fixed", "0.00", "1.00"]
    fixes = lines[lines.index("fixes (case, metric: baseline → candidate score):") + 1 :]
    assert fixes == [
        "  calc_power, tool_trajectory_avg_score: 0.00 → 1.00",
        "  calc_power, final_response_avg_score: 0.00 → 1.00",
    ]
    assert "regressions (case, metric: baseline → candidate score):" not in lines


def test_compare_json(two_results: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    baseline, candidate = two_results

    ran = run_cli(["compare", str(candidate), str(baseline), "--json"], capsys)

    assert ran.status == 0
    comparison = ran.json()
    assert comparison["baseline"]["file"] == str(candidate)
    assert comparison["cases"]["regressed"] == 1
    assert comparison["sameEvalSet"] is True
    first = comparison["significance"][0]
    assert (first["metric"], first["nPairs"], first["baselineMean"], first["candidateMean"]) == (
        "case_pass_rate",
        5,
        1.0,
        0.8,
    )
    assert first["significant"] is False
    assert first["inWords"].startswith("cases passed (overall status): 100% → 80% (-20 pts")
    assert [case["evalId"] for case in comparison["changedCases"]] == ["calc_power"]
    assert comparison["changedCases"][0]["change"] == "regressed"
    assert {row["metricName"] for row in comparison["regressions"]} == {
        "tool_trajectory_avg_score",
        "final_response_avg_score",
    }
    assert comparison["fixes"] == []


def test_compare_of_a_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ran = run_cli(["compare", "nope.json", "nope.zip"], capsys)

    assert ran.status == 2
    assert ran.err.startswith("agenteval: ") and "nope.json" in ran.err
    assert ran.out == ""


def test_compare_needs_two_files(capsys: pytest.CaptureFixture[str]) -> None:
    ran = run_cli(["compare", "only-one.json"], capsys)

    assert ran.status == 2
    assert "the following arguments are required: candidate" in ran.err


def test_the_installed_agenteval_command_compares(
    two_results: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The console script pyproject declares (agenteval.cli:main), run as a user would."""
    command = Path(sys.executable).with_name("agenteval")
    assert command.is_file(), f"{command}: install the package (pip install -e .) to test its command"
    baseline, candidate = two_results

    completed = subprocess.run(
        [str(command), "compare", str(baseline), str(candidate), "--json"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("{")
    assert '"fixed": 1' in completed.stdout


def test_a_reader_that_stops_reading_ends_the_command_without_a_traceback(
    two_results: tuple[Path, Path], tmp_path: Path
) -> None:
    """``agenteval compare A B --json | head -c 1``: the pipe closes before the JSON is written."""
    command = Path(sys.executable).with_name("agenteval")
    baseline, candidate = two_results
    process = subprocess.Popen(
        [str(command), "compare", str(baseline), str(candidate), "--json"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    with process:
        errors = process.stderr.read().decode()
        status = process.wait(timeout=120)

    assert status == 141, errors
    assert "Traceback" not in errors and "BrokenPipeError" not in errors
