"""Tests for the ``agenteval`` command line."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from agenteval import EvalCase, EvalMetric, LocalEvalSetManager, LocalMetricManager
from agenteval._util.sync_bridge import run_sync
from agenteval.cli import main
from agenteval.examples.math import APP_NAME, DATA_DIR, EVAL_SET_ID

ROOT = Path(__file__).resolve().parents[1]
AGENT = "agenteval.examples.math.agent:calculator_agent"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every command in a scratch directory and undo its ``sys.path`` changes."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))


def run_cli(argv: Sequence[str]) -> tuple[int, str]:
    """The exit status the process would have, and any message a ``SystemExit`` carried."""
    try:
        return main(list(argv)), ""
    except SystemExit as exc:
        if exc.code is None:
            return 0, ""
        if isinstance(exc.code, int):
            return exc.code, ""
        # Python prints a non-integer code to stderr and exits with status 1.
        return 1, str(exc.code)


def result_files(directory: Path) -> list[Path]:
    return sorted(directory.glob(f"{APP_NAME}/*.evalset_result.json"))


def test_demo_prints_the_summary_and_saves_the_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "out"

    assert main(["demo", "--output", str(output)]) == 0

    out = capsys.readouterr().out
    assert f"eval set {EVAL_SET_ID} (1 run," in out
    power = next(line for line in out.splitlines() if line.startswith("calc_power"))
    assert power.split()[1] == "failed"
    for case in ("calc_add", "calc_multiply", "calc_divide_by_zero", "calc_follow_up"):
        assert next(line for line in out.splitlines() if line.startswith(case)).split()[1] == "passed"
    assert "4/5 cases passed; overall failed" in out
    files = result_files(output)
    assert len(files) == 1
    assert f"result saved as {files[0].name.removesuffix('.evalset_result.json')}" in out
    assert f"results are in {output.resolve() / APP_NAME}" in out


def test_the_demo_says_why_its_failing_case_failed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--output", str(tmp_path)]) == 0

    lines = capsys.readouterr().out.splitlines()
    power = next(index for index, line in enumerate(lines) if line.startswith("calc_power"))
    assert lines[power + 1] == (
        "  calc_power: tool_trajectory_avg_score 0.00 — tool trajectory mismatch: number of tool calls mismatch:"
        ' actual(0) != expected(1), actual [], expected ["calculator"]'
    )
    assert lines[power + 2].startswith(
        "  calc_power: final_response_avg_score 0.00 — final response mismatch: text mismatch: actual"
        ' "Sorry, I cannot power;'
    )
    assert lines[power + 3] == "4/5 cases passed; overall failed"
    # Passed cases get no such line.
    assert [line for line in lines if line.startswith("  ")] == lines[power + 1 : power + 3]


def test_with_several_runs_the_reasons_name_their_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--num-runs", "2", "--output", str(tmp_path)]) == 0

    out = capsys.readouterr().out
    assert "  calc_power (runs 1, 2): final_response_avg_score 0.00 — final response mismatch: " in out


def test_demo_with_runs_and_parallelism_reports_pass_k(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--num-runs", "2", "--serial", "--output", str(tmp_path)]) == 0

    out = capsys.readouterr().out
    assert f"eval set {EVAL_SET_ID} (2 runs," in out
    assert "pass@1 (per case) 0.80, pass^2 (per case) 0.80" in out
    assert len(result_files(tmp_path)) == 1


def test_no_arguments_runs_the_demo_into_the_default_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([]) == 0

    assert "4/5 cases passed" in capsys.readouterr().out
    assert len(result_files(tmp_path / "agenteval-results")) == 1


def test_options_without_a_command_run_the_demo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--output", str(tmp_path / "o")]) == 0

    assert "4/5 cases passed" in capsys.readouterr().out
    assert len(result_files(tmp_path / "o")) == 1


def test_run_exits_1_when_a_case_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "results"

    code = main(["run", str(DATA_DIR / APP_NAME), "--agent", AGENT, "--output", str(output)])

    assert code == 1
    out = capsys.readouterr().out
    assert "4/5 cases passed; overall failed" in out
    assert len(result_files(output)) == 1


def test_run_exits_0_when_every_case_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    app = tmp_path / "apps" / APP_NAME
    shutil.copytree(DATA_DIR / APP_NAME, app)
    (app / "agent_ok.py").write_text(
        "from agenteval.examples.math.agent import calculator_agent\n"
        "def agent(message, turn):\n"
        "    if message == 'calc power 2 10':\n"
        "        turn.record_tool('calculator', {'operation': 'power', 'a': 2, 'b': 10},\n"
        "                         {'operation': 'power', 'a': 2, 'b': 10, 'result': 1024})\n"
        "        return 'calc result: 1024'\n"
        "    return calculator_agent(message, turn)\n"
    )
    monkeypatch.chdir(app)  # --agent modules are imported from the current directory

    try:
        code = main(
            ["run", str(app), "--agent", "agent_ok:agent", "--eval-set", EVAL_SET_ID, "--output", str(tmp_path)]
        )
    finally:
        sys.modules.pop("agent_ok", None)

    assert code == 0, capsys.readouterr()
    assert "5/5 cases passed; overall passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        ("no_colon_here", "--agent must look like 'package.module:function'"),
        (":calculator_agent", "--agent must look like 'package.module:function'"),
        ("agenteval.examples.math.agent:", "--agent must look like 'package.module:function'"),
        ("no_such_module_xyz:agent", "cannot import 'no_such_module_xyz'"),
        ("agenteval.examples.math.agent:missing", "has no attribute 'missing'"),
    ],
)
def test_bad_agent_gives_a_clear_error_and_exit_code_2(
    agent: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, carried = run_cli(["run", str(DATA_DIR / APP_NAME), "--agent", agent, "--output", str(tmp_path)])

    captured = capsys.readouterr()
    text = captured.err + captured.out + carried
    assert message in text
    assert code == 2
    assert result_files(tmp_path) == []


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("def agent(message):\n    return message +\n", "SyntaxError: "),
        ("raise RuntimeError('OPENAI_API_KEY is not set')\n", "RuntimeError: OPENAI_API_KEY is not set"),
    ],
    ids=["syntax-error", "raises-at-import"],
)
def test_an_agent_module_that_fails_to_import_gives_a_one_line_error_and_exit_code_2(
    source: str, error: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "broken_agent_module.py").write_text(source)
    argv = ["run", str(DATA_DIR / APP_NAME), "--agent", "broken_agent_module:agent", "--output", str(tmp_path)]

    code, carried = run_cli(argv)

    captured = capsys.readouterr()
    assert (code, carried, captured.out) == (2, "", "")
    (line,) = captured.err.splitlines()
    assert line.startswith(f"agenteval: cannot import 'broken_agent_module' for --agent: importing it raised {error}")
    assert line.endswith("; fix the module")
    if error.startswith("SyntaxError"):
        assert "broken_agent_module.py, line 2" in line
    assert result_files(tmp_path) == []


def test_missing_app_directory_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere"

    assert run_cli(["run", str(missing), "--agent", AGENT, "--output", str(tmp_path)]) == (2, "")

    assert f"agenteval: {missing} is not a directory" in capsys.readouterr().err


def test_directory_without_eval_sets_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty-app"
    empty.mkdir()

    assert run_cli(["run", str(empty), "--agent", AGENT, "--output", str(tmp_path)]) == (2, "")

    assert "no *.evalset.json files in" in capsys.readouterr().err


def test_unknown_eval_set_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = run_cli(["run", str(DATA_DIR / APP_NAME), "--agent", AGENT, "--eval-set", "nope", "--output", str(tmp_path)])

    assert code == (2, "")
    assert "agenteval: get eval set:" in capsys.readouterr().err


def test_run_requires_an_agent(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["run", str(DATA_DIR / APP_NAME)]) == (2, "")

    assert "--agent" in capsys.readouterr().err


def test_python_dash_m_agenteval_help(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}

    completed = subprocess.run(
        [sys.executable, "-m", "agenteval", "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("usage: agenteval")
    for command in ("demo", "run"):
        assert command in completed.stdout
    assert list(tmp_path.iterdir()) == []  # --help writes nothing


def test_bad_agent_process_exit_status_is_2(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}

    completed = subprocess.run(
        [sys.executable, "-m", "agenteval", "run", str(DATA_DIR / APP_NAME), "--agent", "no_colon_here"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert "--agent must look like 'package.module:function', got 'no_colon_here'" in completed.stderr
    assert completed.returncode == 2


def test_version_and_exit_status_are_documented(capsys: pytest.CaptureFixture[str]) -> None:
    from agenteval.cli import main
    from agenteval.evalresult.provenance import package_version

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"agenteval {package_version()}"
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    statuses = out[out.index("exit status:") :].splitlines()
    assert statuses[1:] == [
        "  demo     0 it ran (its failing case is on purpose)",
        "  run      0 every eval set ran and none failed; 1 an eval set failed",
        "  compare  0 both results were read and compared, whatever changed",
        "  replay   0 every case run matches the bundle; 1 a case run differs from it",
        "  all      2 bad arguments or configuration",
        "           130 interrupted (Ctrl-C); an evaluation saves its finished cases first",
    ]


@pytest.mark.parametrize("command", [[], ["demo"], ["run"], ["compare"], ["replay"]])
def test_help_is_plain_text_with_each_commands_exit_statuses(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*command, "--help"])

    out = capsys.readouterr().out
    assert exited.value.code == 0
    assert out.startswith(f"usage: agenteval {command[0] if command else ''}".rstrip())
    for markup in ("``", ":mod:", ":func:", ":class:", ":meth:", "**"):
        assert markup not in out, f"{markup!r} in the help of {command}"
    assert "exit status:" in out
    if command:
        assert "\n  2    bad arguments or configuration\n" in out
        assert max(len(line) for line in out.splitlines()) <= 100


# ------------------------------------------------------------------------------------------ what reaches the terminal

UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""What must never reach the terminal raw: control characters (but newline), DEL and bidi overrides."""

HIDING_ID = "c\x1b[8mHIDDEN"
REVERSED_ID = "b\u202eevil"


@pytest.fixture
def hostile_app(tmp_path: Path) -> Path:
    """App ``app`` with eval set ``s``: a case whose id hides text, one whose id reverses it and whose agent
    error erases the line."""

    async def write() -> None:
        sets = LocalEvalSetManager(tmp_path / "apps")
        await sets.create("app", "s")
        for eval_id, message in ((HIDING_ID, "hello"), (REVERSED_ID, "fail")):
            await sets.add_case("app", "s", EvalCase.of(eval_id, message, expect=message))
        await LocalMetricManager(tmp_path / "apps").add("app", "s", EvalMetric.final_response())

    run_sync(write())
    (tmp_path / "hostile_agent.py").write_text(
        "def agent(message):\n"
        "    if message == 'fail':\n"
        "        raise RuntimeError('bad\\x1b[2Kall is well\\x9b\\u2066\\x7f')\n"
        "    return message\n"
    )
    return tmp_path / "apps" / "app"


def test_ids_and_error_messages_are_printed_with_their_control_characters_escaped(
    hostile_app: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", str(hostile_app), "--agent", "hostile_agent:agent", "--output", "out"])

    out = capsys.readouterr().out
    assert code == 1
    assert not UNSAFE.search(out), out
    assert next(line for line in out.splitlines() if line.startswith("c\\x1b[8mHIDDEN ")).split()[1] == "passed"
    failed = next(line for line in out.splitlines() if line.startswith("b\\u202eevil "))
    # The error column leaves out the prefix that repeats the row's case (and session).
    assert "  RuntimeError: bad\\x1b[2Kall is well\\x9b\\u2066\\x7f" in failed
    assert "inference eval case" not in failed


def test_a_failure_reason_quoting_a_hostile_reply_is_printed_escaped(
    hostile_app: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (hostile_app.parent.parent / "hiding_agent.py").write_text(
        "def agent(message):\n    return 'fine\\x1b[8m\\tsecret\\u202e'\n"
    )

    code = main(["run", str(hostile_app), "--agent", "hiding_agent:agent", "--output", "out"])

    out = capsys.readouterr().out
    assert code == 1
    assert not UNSAFE.search(out), out
    reason = next(line for line in out.splitlines() if line.startswith("  b\\u202eevil: final_response_avg_score"))
    assert 'actual "fine\\u001b[8m\\tsecret\\u202e" and expected "fail" do not match' in reason


def test_an_error_message_naming_a_hostile_id_is_printed_escaped(
    hostile_app: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "run",
        str(hostile_app),
        "--agent",
        "hostile_agent:agent",
        "--eval-set",
        "x\x1b[2K\u202e",
        "--output",
        "out",
    ]

    code, _ = run_cli(argv)

    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("agenteval: ")
    assert not UNSAFE.search(err), err
    assert "x\\x1b[2K\\u202e" in err


@pytest.mark.parametrize("seconds", ["0", "-1", "nan", "inf"])
def test_a_turn_timeout_that_is_not_a_positive_number_of_seconds_exits_2(
    seconds: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = run_cli(["run", str(DATA_DIR / APP_NAME), "--agent", AGENT, "--turn-timeout", seconds])

    assert code == 2
    assert f"argument --turn-timeout: must be a positive number of seconds, got {seconds!r}" in capsys.readouterr().err


def test_turn_timeout_fails_a_slow_case_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "slow_agent.py").write_text(
        "import time\n"
        "from agenteval.examples.math.agent import calculator_agent\n"
        "def agent(message, turn):\n"
        "    if message == 'calc power 2 10':\n"
        "        time.sleep(2)\n"
        "    return calculator_agent(message, turn)\n"
    )

    code = main(["run", str(DATA_DIR / APP_NAME), "--agent", "slow_agent:agent", "--turn-timeout", "0.2"])

    out = capsys.readouterr().out
    assert code == 1
    power = next(line for line in out.splitlines() if line.startswith("calc_power"))
    assert "turn 1 timed out after 0.2 s (turn_timeout)" in power
    assert "4/5 cases passed" in out


@pytest.mark.filterwarnings("always")
def test_a_warning_naming_a_hostile_key_is_printed_escaped(
    hostile_app: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    metrics_file = hostile_app / "s.metrics.json"
    metrics = json.loads(metrics_file.read_text())
    metrics[0]["threshhold\x1b[2K\u202e"] = 1
    metrics_file.write_text(json.dumps(metrics))

    main(["run", str(hostile_app), "--agent", "hostile_agent:agent", "--output", "out"])

    err = capsys.readouterr().err
    assert "UnknownFieldWarning" in err
    assert not UNSAFE.search(err), err
    assert "threshhold\\x1b[2K\\u202e" in err
