"""An agent that never returns, or that blocks the event loop, must not keep the process alive.

Every test runs a real process (a small script, or the ``agenteval`` command) and sends it at most one
Ctrl-C (SIGINT): what is checked is that the process exits by itself, with the report and the partial
result the user was promised. Each wait has a deadline, so a regression fails instead of hanging.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agenteval import (
    Callbacks,
    EvalCase,
    EvalMetric,
    EvalSet,
    Evaluator,
    LocalEvalSetManager,
    LocalMetricManager,
)
from agenteval._util import loop_watchdog as _loop_watchdog
from agenteval._util.sync_bridge import run_sync
from agenteval.context import EvalContext
from agenteval.service.callbacks import AfterEvaluateSetArgs

ROOT = Path(__file__).resolve().parents[1]
DEADLINE = 30.0
"""Seconds a process gets to do what is awaited of it; only a hang comes near it."""

PRELUDE = """
import json, signal, sys, threading
from pathlib import Path
import agenteval as ae

# As in a terminal, whatever the test runner does with Ctrl-C.
signal.signal(signal.SIGINT, signal.default_int_handler)
here = Path.cwd()
cases = [ae.EvalCase.of("fast", "hello", expect="hello"), ae.EvalCase.of("stuck", "hang", expect="hang")]
eval_set = ae.EvalSet.of("s", cases)

def kept(report):
    return {
        "cases": [case.eval_id for case in report.result.eval_case_results],
        "result_id": report.result.eval_set_result_id,
        "saved": sorted(path.name for path in (here / "out").rglob("*.json")),
    }
"""

HUNG_SYNC_AGENT = """
def agent(message):
    if message == "hang":
        (here / "stuck").touch()
        threading.Event().wait()  # never returns
    return message
"""

BUSY_ASYNC_AGENT = """
async def agent(message):
    if message == "hang":
        (here / "stuck").touch()
        while True:  # never yields to the event loop
            pass
    return message
"""

EVALUATE = """
ev = ae.Evaluator("app", agent, result_manager=ae.LocalEvalResultManager(here / "out"), progress=False, {options})
try:
    report = ev.evaluate(eval_set, metrics=[ae.EvalMetric.final_response()])
    outcome = {{"statuses": {{c.eval_id: str(c.final_eval_status) for c in report.result.eval_case_results}},
               "errors": {{c.eval_id: c.error_message for c in report.result.eval_case_results}}}}
except KeyboardInterrupt as exc:
    outcome = {{"interrupted": True, **kept(exc.report), "notes": getattr(exc, "__notes__", [])}}
print(json.dumps(outcome))
"""


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def start(arguments: list[str], cwd: Path) -> subprocess.Popen[str]:
    """Start a process writing to files in ``cwd`` (no pipe can fill up and block it)."""
    with (cwd / "stdout.txt").open("w") as stdout, (cwd / "stderr.txt").open("w") as stderr:
        return subprocess.Popen(
            [sys.executable, *arguments], cwd=cwd, env=environment(), stdout=stdout, stderr=stderr, text=True
        )


def start_script(code: str, cwd: Path) -> subprocess.Popen[str]:
    (cwd / "script.py").write_text(textwrap.dedent(code))
    return start(["script.py"], cwd)


def wait_until(what: str, check: Callable[[], bool], process: subprocess.Popen[str], cwd: Path) -> None:
    deadline = time.monotonic() + DEADLINE
    while not check():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            process.wait()
            pytest.fail(f"never saw {what}; stderr:\n{(cwd / 'stderr.txt').read_text()[-3000:]}")
        time.sleep(0.05)


def wait_stuck(process: subprocess.Popen[str], cwd: Path) -> None:
    wait_until("the agent get stuck", (cwd / "stuck").exists, process, cwd)


def warned(cwd: Path) -> Callable[[], bool]:
    return lambda: "blocking it" in (cwd / "stderr.txt").read_text()


def finished(process: subprocess.Popen[str], cwd: Path) -> tuple[int, str, str]:
    """The exit status, stdout and stderr of ``process``, which must exit by itself within the deadline."""
    try:
        status = process.wait(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail(f"the process did not exit; stderr:\n{(cwd / 'stderr.txt').read_text()[-3000:]}")
    return status, (cwd / "stdout.txt").read_text(), (cwd / "stderr.txt").read_text()


def outcome_of(stdout: str) -> dict[str, object]:
    result: dict[str, object] = json.loads(stdout.strip().splitlines()[-1])
    return result


# ---------------------------------------------------------------------------------------------- a hung sync agent


def test_a_timed_out_sync_agent_does_not_keep_the_process_alive(tmp_path: Path) -> None:
    process = start_script(PRELUDE + HUNG_SYNC_AGENT + EVALUATE.format(options="turn_timeout=0.5"), tmp_path)

    status, stdout, stderr = finished(process, tmp_path)

    assert status == 0, stderr
    outcome = outcome_of(stdout)
    assert outcome["statuses"] == {"fast": "passed", "stuck": "failed"}
    assert str(outcome["errors"]["stuck"]).endswith("turn 1 timed out after 0.5 s (turn_timeout)")  # type: ignore[index]


ASYNC_AGENT_BLOCKED_IN_A_THREAD = """
import asyncio

async def agent(message):
    if message == "hang":
        (here / "stuck").touch()
        await asyncio.to_thread(threading.Event().wait)  # the thread never returns
    return message
"""

PYDANTIC_AI_AGENT_WITH_A_HUNG_SYNC_TOOL = """
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel
from agenteval.adapters.pydantic_ai import PydanticAIRunner

def model(messages, info):
    last = messages[-1].parts[-1]
    if isinstance(last, ToolReturnPart):
        return ModelResponse(parts=[TextPart(last.content)])
    return ModelResponse(parts=[ToolCallPart("echo", {"text": last.content})])

pydantic_agent = Agent(FunctionModel(model))

@pydantic_agent.tool_plain
def echo(text: str) -> str:
    if text == "hang":
        (here / "stuck").touch()
        threading.Event().wait()  # a sync tool pydantic-ai runs in a thread; never returns
    return text

agent = PydanticAIRunner(pydantic_agent)
"""


@pytest.mark.parametrize(
    "agent",
    [ASYNC_AGENT_BLOCKED_IN_A_THREAD, PYDANTIC_AI_AGENT_WITH_A_HUNG_SYNC_TOOL],
    ids=["to_thread", "pydantic_ai"],
)
def test_a_timed_out_call_stuck_in_a_thread_the_agent_started_does_not_keep_the_process_alive(
    tmp_path: Path, agent: str
) -> None:
    process = start_script(PRELUDE + agent + EVALUATE.format(options="turn_timeout=0.5"), tmp_path)

    status, stdout, stderr = finished(process, tmp_path)

    assert status == 0, stderr
    outcome = outcome_of(stdout)
    assert outcome["statuses"] == {"fast": "passed", "stuck": "failed"}
    assert str(outcome["errors"]["stuck"]).endswith("turn 1 timed out after 0.5 s (turn_timeout)")  # type: ignore[index]


def test_one_ctrl_c_ends_a_hung_sync_agent_with_the_partial_report_and_the_process_exits(tmp_path: Path) -> None:
    process = start_script(PRELUDE + HUNG_SYNC_AGENT + EVALUATE.format(options="parallel_inference=False"), tmp_path)
    wait_stuck(process, tmp_path)

    process.send_signal(signal.SIGINT)
    status, stdout, stderr = finished(process, tmp_path)

    assert status == 0, stderr
    outcome = outcome_of(stdout)
    assert outcome["interrupted"] is True
    assert outcome["cases"] == ["fast"]
    assert outcome["saved"] == [f"{outcome['result_id']}.evalset_result.json"]
    assert "Traceback" not in stderr


# ---------------------------------------------------------------------------------------------- the command line


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    """``apps/app`` with eval set ``s`` (cases ``fast`` and ``stuck``), and the agent module ``hung.py``."""

    async def write() -> None:
        eval_set = EvalSet.of(
            "s", [EvalCase.of("fast", "hello", expect="hello"), EvalCase.of("stuck", "hang", expect="hang")]
        )
        sets = LocalEvalSetManager(tmp_path / "apps")
        await sets.create("app", "s")
        for case in eval_set.eval_cases:
            await sets.add_case("app", "s", case)
        await LocalMetricManager(tmp_path / "apps").add("app", "s", EvalMetric.final_response())

    run_sync(write())
    (tmp_path / "hung.py").write_text(
        textwrap.dedent(
            """
            import threading
            from pathlib import Path

            def agent(message):
                if message == "hang":
                    Path("stuck").touch()
                    threading.Event().wait()  # never returns
                return message
            """
        )
    )
    return tmp_path / "apps" / "app"


def start_cli(arguments: list[str], cwd: Path) -> subprocess.Popen[str]:
    # The command itself, with Ctrl-C handled as in a terminal whatever the test runner does with it.
    command = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from agenteval.cli import main; sys.exit(main())"
    )
    return start(["-c", command, *arguments], cwd)


def test_the_command_line_turn_timeout_fails_the_hung_case_and_exits(tmp_path: Path, app_dir: Path) -> None:
    process = start_cli(["run", str(app_dir), "--agent", "hung:agent", "--turn-timeout", "0.5", "--serial"], tmp_path)

    status, stdout, stderr = finished(process, tmp_path)

    assert status == 1, stderr
    stuck = next(line for line in stdout.splitlines() if line.startswith("stuck"))
    assert "failed" in stuck
    assert "turn 1 timed out after 0.5 s (turn_timeout)" in stuck
    assert "1/2 cases passed" in stdout


def test_one_ctrl_c_stops_the_command_without_a_traceback_and_keeps_the_partial_result(
    tmp_path: Path, app_dir: Path
) -> None:
    process = start_cli(["run", str(app_dir), "--agent", "hung:agent", "--serial", "--output", "out"], tmp_path)
    wait_stuck(process, tmp_path)

    process.send_signal(signal.SIGINT)
    status, _, stderr = finished(process, tmp_path)

    assert status == 130, stderr
    assert "Traceback" not in stderr
    saved = list((tmp_path / "out" / "app").glob("*.evalset_result.json"))
    assert len(saved) == 1
    result_id = saved[0].name.removesuffix(".evalset_result.json")
    assert f"agenteval: interrupted; the finished cases were saved as {result_id} in {saved[0].parent}" in stderr
    assert json.loads(saved[0].read_text())["evalCaseResults"][0]["evalId"] == "fast"


# ------------------------------------------------------------------------------------ an async agent that never yields


def test_an_async_agent_blocking_the_loop_is_named_and_one_ctrl_c_stops_it_with_the_report(tmp_path: Path) -> None:
    process = start_script(PRELUDE + BUSY_ASYNC_AGENT + EVALUATE.format(options="turn_timeout=1"), tmp_path)
    wait_until("the warning", warned(tmp_path), process, tmp_path)

    process.send_signal(signal.SIGINT)
    status, stdout, stderr = finished(process, tmp_path)

    assert status == 0, stderr
    warning = next(line for line in stderr.splitlines() if "blocking it" in line)
    assert "the event loop has not run for 5 s: case 'stuck' (run 1), turn 1 is blocking it" in warning
    assert "at script.py:" in warning
    assert " in agent" in warning
    outcome = outcome_of(stdout)
    assert outcome["cases"] == ["fast"]
    assert outcome["saved"] == [f"{outcome['result_id']}.evalset_result.json"]
    assert any(str(outcome["result_id"]) in note for note in outcome["notes"])  # type: ignore[attr-defined]
    assert "Traceback" not in stderr


@pytest.mark.parametrize("options", ["parallel_inference=False", "num_runs=2, parallel_runs=True"])
def test_one_ctrl_c_stops_an_async_agent_blocking_the_loop_at_once(tmp_path: Path, options: str) -> None:
    process = start_script(PRELUDE + BUSY_ASYNC_AGENT + EVALUATE.format(options=options), tmp_path)
    wait_stuck(process, tmp_path)

    process.send_signal(signal.SIGINT)  # before any watchdog warning: the loop has been blocked for no time yet
    status, stdout, stderr = finished(process, tmp_path)

    assert status == 0, stderr
    outcome = outcome_of(stdout)
    assert outcome["interrupted"] is True
    assert "fast" in outcome["cases"]  # type: ignore[operator]
    assert outcome["saved"] == [f"{outcome['result_id']}.evalset_result.json"]
    assert "Traceback" not in stderr


def test_inside_a_running_loop_an_async_agent_blocking_it_is_named_too(tmp_path: Path) -> None:
    script = (
        PRELUDE
        + BUSY_ASYNC_AGENT
        + textwrap.dedent(
            """
        import asyncio

        async def cell():  # as in a notebook: the kernel's loop is running
            ev = ae.Evaluator("app", agent, result_manager=ae.LocalEvalResultManager(here / "out"), progress=False)
            try:
                ev.evaluate(eval_set, metrics=[ae.EvalMetric.final_response()])
            except KeyboardInterrupt as exc:
                return kept(exc.report)

        loop = asyncio.new_event_loop()
        print(json.dumps(loop.run_until_complete(cell())))
        """
        )
    )
    process = start_script(script, tmp_path)
    wait_until("the warning", warned(tmp_path), process, tmp_path)

    process.send_signal(signal.SIGINT)
    status, stdout, stderr = finished(process, tmp_path)

    assert status == 0, stderr
    assert "case 'stuck' (run 1), turn 1 is blocking it" in stderr
    outcome = outcome_of(stdout)
    assert outcome["cases"] == ["fast"]


# ------------------------------------------------------------------------------------ the watchdog, in this process


def evaluate_in_process(agent: object, **options: object) -> None:
    cases = [EvalCase.of("quick", "hello", expect="hello"), EvalCase.of("slow", "sleep", expect="sleep")]
    evaluator = Evaluator("app", agent, progress=False, **options)  # type: ignore[arg-type]
    evaluator.evaluate(EvalSet.of("s", cases), metrics=[EvalMetric.final_response()])


def test_a_case_blocking_the_loop_is_named_and_so_is_the_end_of_the_stall(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_loop_watchdog, "STALL_WARNING_AFTER", 0.5)

    async def agent(message: str) -> str:
        if message == "sleep":
            time.sleep(2)  # a blocking call in an async agent
        return message

    with caplog.at_level(logging.WARNING, logger="agenteval"):
        evaluate_in_process(agent)

    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 2, messages
    assert messages[0].startswith("the event loop has not run for 0.5 s: case 'slow' (run 1), turn 1 is blocking it")
    assert ", at test_hung_agents.py:" in messages[0]
    assert " in agent. Code on the event loop must await" in messages[0]
    assert messages[1].startswith("the event loop runs again, after ")


def test_a_long_stretch_outside_the_cases_is_not_reported(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_loop_watchdog, "STALL_WARNING_AFTER", 0.5)

    def after_set(context: EvalContext, args: AfterEvaluateSetArgs) -> None:
        time.sleep(1.5)  # as building a report of many cases may take

    callbacks = Callbacks().register_after_evaluate_set("slow", after_set)
    with caplog.at_level(logging.WARNING, logger="agenteval"):
        evaluate_in_process(lambda message: message, callbacks=callbacks)

    assert caplog.records == []
