"""Tests for :func:`agenteval._util.sync_bridge.run_sync`, the one sync-over-async bridge.

Everything that runs inside an already running loop happens in a subprocess: patching a loop
with ``nest_asyncio2`` changes asyncio process-wide and must not leak into the other tests.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
import traceback
from pathlib import Path

import pytest

from agenteval import NotFoundError
from agenteval._util.sync_bridge import run_sync

ROOT = Path(__file__).resolve().parents[1]


def run_python(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def last_json(completed: subprocess.CompletedProcess[str]) -> object:
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------- no running loop


def test_returns_the_coroutine_result_outside_a_loop() -> None:
    async def compute(value: int) -> int:
        await asyncio.sleep(0)
        return value * 2

    assert run_sync(compute(21)) == 42
    assert run_sync(compute(1)) == 2  # again, on a fresh loop
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()


def test_each_call_outside_a_loop_gets_a_new_loop_that_is_closed_afterwards() -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    async def capture() -> None:
        loops.append(asyncio.get_running_loop())

    run_sync(capture())
    run_sync(capture())

    assert loops[0] is not loops[1]
    assert all(loop.is_closed() for loop in loops)


def test_exceptions_propagate_unchanged() -> None:
    error = NotFoundError("eval set app.x not found")

    async def fail() -> None:
        await asyncio.sleep(0)
        raise error

    with pytest.raises(NotFoundError) as caught:
        run_sync(fail())

    assert caught.value is error


def test_an_error_outside_a_loop_is_not_chained_to_the_missing_loop() -> None:
    # A script's traceback must show only the real error, not "no running event loop" before it.
    async def fail() -> None:
        await asyncio.sleep(0)
        raise NotFoundError("eval set app.x not found")

    with pytest.raises(NotFoundError) as caught:
        run_sync(fail())

    assert caught.value.__context__ is None
    shown = "".join(traceback.format_exception(caught.value))
    assert "no running event loop" not in shown
    assert "During handling of the above exception" not in shown


def test_works_from_a_worker_thread() -> None:
    outcome: list[object] = []

    async def answer() -> str:
        await asyncio.sleep(0)
        return threading.current_thread().name

    worker = threading.Thread(target=lambda: outcome.append(run_sync(answer())), name="worker")
    worker.start()
    worker.join(10)

    assert outcome == ["worker"]


def test_importing_agenteval_patches_nothing(tmp_path: Path) -> None:
    outcome = last_json(
        run_python(
            """
            import asyncio, json
            original_run = asyncio.run
            import agenteval
            from agenteval._util.sync_bridge import run_sync

            async def work():
                return 7

            value = run_sync(work())
            print(json.dumps({
                "value": value,
                "asyncio_patched": hasattr(asyncio, "_nest_patched"),
                "run_replaced": asyncio.run is not original_run,
                "nest_imported": "nest_asyncio2" in __import__("sys").modules,
            }))
            """,
            tmp_path,
        )
    )

    assert outcome == {"value": 7, "asyncio_patched": False, "run_replaced": False, "nest_imported": False}


# ---------------------------------------------------------------------------------------------- inside a running loop


def test_runs_on_the_running_loop_when_called_inside_one(tmp_path: Path) -> None:
    outcome = last_json(
        run_python(
            """
            import asyncio, json
            from agenteval._util.sync_bridge import run_sync

            async def inner(loop, ready):
                # Objects bound to the outer loop keep working inside the nested run.
                await ready
                await asyncio.sleep(0.01)
                return asyncio.get_running_loop() is loop

            async def failing():
                await asyncio.sleep(0)
                raise KeyError("missing")

            async def main():
                loop = asyncio.get_running_loop()
                ready = loop.create_future()
                loop.call_later(0.01, ready.set_result, None)
                same_loop = [run_sync(inner(loop, ready)), run_sync(inner(loop, ready))]
                try:
                    run_sync(failing())
                    error = None
                except KeyError as exc:
                    error = repr(exc)
                after = await asyncio.sleep(0, result="awaitable afterwards")
                return {"same_loop": same_loop, "error": error, "after": after}

            print(json.dumps(asyncio.run(main())))
            """,
            tmp_path,
        )
    )

    assert outcome == {"same_loop": [True, True], "error": "KeyError('missing')", "after": "awaitable afterwards"}


def test_ctrl_c_inside_a_running_loop_cancels_the_coroutine_and_reraises(tmp_path: Path) -> None:
    outcome = last_json(
        run_python(
            """
            import asyncio, json, signal
            from agenteval._util.sync_bridge import run_sync

            events = []

            async def slow():
                try:
                    await asyncio.sleep(30)
                except asyncio.CancelledError:
                    events.append("cancelled")
                    raise
                finally:
                    events.append("finally")

            async def cell():
                # As in a kernel, Ctrl-C raises KeyboardInterrupt wherever the main thread is.
                asyncio.get_running_loop().call_later(0.05, signal.raise_signal, signal.SIGINT)
                try:
                    run_sync(slow())
                except KeyboardInterrupt:
                    events.append("interrupted")

            loop = asyncio.new_event_loop()
            loop.run_until_complete(cell())
            loop.close()
            print(json.dumps(events))
            """,
            tmp_path,
        )
    )

    assert outcome == ["cancelled", "finally", "interrupted"]


def test_ctrl_c_outside_a_loop_cancels_the_coroutine_and_reraises(tmp_path: Path) -> None:
    outcome = last_json(
        run_python(
            """
            import asyncio, json, signal
            from agenteval._util.sync_bridge import run_sync

            events = []

            async def slow():
                asyncio.get_running_loop().call_later(0.05, signal.raise_signal, signal.SIGINT)
                try:
                    await asyncio.sleep(30)
                finally:
                    events.append("finally")

            try:
                run_sync(slow())
            except KeyboardInterrupt:
                events.append("interrupted")
            print(json.dumps(events))
            """,
            tmp_path,
        )
    )

    assert outcome == ["finally", "interrupted"]


@pytest.mark.parametrize("inside_a_loop", [False, True], ids=["script", "kernel-like loop"])
def test_ctrl_c_during_evaluate_carries_the_partial_report(tmp_path: Path, inside_a_loop: bool) -> None:
    outcome = last_json(
        run_python(
            f"""
            import asyncio, json, signal, time
            import agenteval as ae
            from agenteval.examples.math import DATA_DIR, calculator_agent

            calls = []

            def agent(message, turn):
                calls.append(message)
                if len(calls) == 3:
                    signal.raise_signal(signal.SIGINT)  # as if the user pressed Ctrl-C now
                    time.sleep(1)
                return calculator_agent(message, turn)

            ev = ae.Evaluator(
                "math-eval-app", agent, eval_set_manager=ae.LocalEvalSetManager(DATA_DIR),
                metric_manager=ae.LocalMetricManager(DATA_DIR), progress=False, parallel_inference=False,
            )

            def cell():
                try:
                    ev.evaluate("math-basic")
                except KeyboardInterrupt as exc:
                    report = getattr(exc, "report", None)
                    return None if report is None else report.cases["eval_id"].tolist()

            async def in_loop():
                return cell()

            if {inside_a_loop!r}:
                loop = asyncio.new_event_loop()
                kept = loop.run_until_complete(in_loop())
                loop.close()
            else:
                kept = cell()
            print(json.dumps(kept))
            """,
            tmp_path,
        )
    )

    assert outcome == ["calc_add", "calc_multiply"]
