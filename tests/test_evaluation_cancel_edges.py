"""Stopping an evaluation at its edges: before any case finished, and on an event loop the caller owns."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import agenteval as ae
from agenteval._util.sync_bridge import run_sync

ROOT = Path(__file__).resolve().parents[1]
APP = "edges-app"
METRICS = [ae.EvalMetric.final_response()]
DEADLINE = 60.0
"""Seconds a child process gets to reach a step; only a hang comes near it."""
EXIT_AFTER_PARTIAL = 3.0
"""Seconds the process may take to exit once it said where the partial result is (it took the rest of the
agent's blocking call, here a minute, when ``asyncio.run`` waited for the call's thread)."""


def words() -> ae.EvalSet:
    return ae.EvalSet.of(
        "words", [ae.EvalCase.of(f"c{index}", f"word{index}", expect=f"WORD{index}") for index in range(3)]
    )


# ------------------------------------------------------------------ nothing finished yet


def test_a_run_cancelled_before_any_case_finished_leaves_an_empty_partial_report_that_resume_takes() -> None:
    results = ae.InMemoryEvalResultManager()

    async def main() -> tuple[ae.EvaluationReport | None, ae.EvaluationReport]:
        entered = asyncio.Event()

        async def never_answers(message: str) -> str:
            entered.set()
            await asyncio.Event().wait()
            return message

        run = ae.Evaluator(APP, never_answers, result_manager=results).start(words(), metrics=METRICS)
        await asyncio.wait_for(entered.wait(), DEADLINE)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        resumed = await ae.Evaluator(APP, str.upper, result_manager=results, progress=False).aevaluate(
            words(), metrics=METRICS, resume=run.report
        )
        return run.report, resumed

    partial, resumed = run_sync(main())

    assert partial is not None and partial.partial
    assert partial.result.eval_case_results == []
    assert run_sync(results.list(APP)) == [partial.result.eval_set_result_id]
    assert resumed.result.eval_set_result_id == partial.result.eval_set_result_id
    assert [case.final_eval_status for case in resumed.result.eval_case_results] == [ae.EvalStatus.PASSED] * 3


def test_ctrl_c_before_any_case_finished_leaves_an_empty_partial_report_that_resume_takes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    results = ae.InMemoryEvalResultManager()

    def interrupted(message: str) -> str:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as raised:
        ae.Evaluator(APP, interrupted, result_manager=results, progress=False).evaluate(words(), metrics=METRICS)
    partial: ae.EvaluationReport | None = getattr(raised.value, "report", None)

    assert partial is not None and partial.partial and partial.result.eval_case_results == []
    result_id = partial.result.eval_set_result_id
    assert f"no case had finished: an empty partial result, which resume= carries on, was saved as {result_id}" in (
        caplog.text
    )
    resumed = ae.Evaluator(APP, str.upper, result_manager=results, progress=False).evaluate(
        words(), metrics=METRICS, resume=result_id
    )
    assert resumed.result.eval_set_result_id == result_id
    assert len(resumed.result.eval_case_results) == 3


def test_an_error_before_any_case_finished_saves_no_empty_result() -> None:
    results = ae.InMemoryEvalResultManager()

    def refuse(context: object, args: object) -> None:
        raise RuntimeError("no")

    callbacks = ae.Callbacks().register_before_evaluate_set("refuse", refuse)
    with pytest.raises(ae.errors.CallbackError) as raised:
        ae.Evaluator(APP, str.upper, result_manager=results, callbacks=callbacks, progress=False).evaluate(
            words(), metrics=METRICS
        )

    assert getattr(raised.value, "report", None) is None
    assert run_sync(results.list(APP)) == []


# ------------------------------------------------------------------ Ctrl-C on the caller's own event loop

SCRIPT = """
import asyncio, signal, sys, time
from pathlib import Path
import agenteval as ae

signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, whatever the test runner does

async def agent(message):
    if message == "slow":
        Path("stuck").touch()
        await asyncio.to_thread(time.sleep, 60)  # a blocking call, as a framework's sync tool makes
    return message

cases = [ae.EvalCase.of("fast", "fast", expect="fast"), ae.EvalCase.of("slow", "slow", expect="slow")]
ev = ae.Evaluator("app", agent, parallel_inference=False, progress=False)
evaluation = ev.aevaluate(ae.EvalSet.of("s", cases), metrics=[ae.EvalMetric.final_response()])

async def started():
    return await ev.start(ae.EvalSet.of("s", cases), metrics=[ae.EvalMetric.final_response()])

asyncio.run(evaluation if sys.argv[1] == "aevaluate" else started())
"""


def child(tmp_path: Path, how: str) -> subprocess.Popen[str]:
    (tmp_path / "script.py").write_text(textwrap.dedent(SCRIPT))
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    # Output to files: no pipe can fill up and block the child.
    with (tmp_path / "stderr.txt").open("w") as stderr:
        return subprocess.Popen(
            [sys.executable, "script.py", how],
            cwd=tmp_path,
            env=environment,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            text=True,
        )


def wait_for(what: str, check: Callable[[], bool], process: subprocess.Popen[str], tmp_path: Path) -> None:
    deadline = time.monotonic() + DEADLINE
    while not check():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            process.wait()
            pytest.fail(f"never saw {what}; stderr:\n{(tmp_path / 'stderr.txt').read_text()[-3000:]}")
        time.sleep(0.02)


@pytest.mark.parametrize("how", ["aevaluate", "start"])
def test_ctrl_c_ends_a_process_whose_own_event_loop_runs_the_evaluation_once_the_partial_is_saved(
    tmp_path: Path, how: str
) -> None:
    process = child(tmp_path, how)
    wait_for("the agent's blocking call", (tmp_path / "stuck").exists, process, tmp_path)

    process.send_signal(signal.SIGINT)
    wait_for("the partial result", lambda: "were saved as" in (tmp_path / "stderr.txt").read_text(), process, tmp_path)
    saved_at = time.monotonic()
    try:
        process.wait(timeout=EXIT_AFTER_PARTIAL)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail(f"the process was still running {EXIT_AFTER_PARTIAL} s after it saved the partial result")

    assert time.monotonic() - saved_at < EXIT_AFTER_PARTIAL
    assert process.returncode != 0
