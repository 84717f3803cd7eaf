"""``resume=``: an interrupted evaluation carries on where it stopped, and a killed one does so from the cache."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import agenteval as ae
from agenteval._util.sync_bridge import run_sync

APP = "resume-app"
N = 5
STOP_AT = 3


class Interrupting:
    """An agent that counts its calls and, once, is interrupted (Ctrl-C) at its ``STOP_AT``-th call."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.interrupt = True

    def __call__(self, message: str) -> str:
        self.calls.append(message)
        if self.interrupt and len(self.calls) == STOP_AT:
            self.interrupt = False
            raise KeyboardInterrupt
        return message.upper()


def words(*, edited: str | None = None) -> ae.EvalSet:
    cases = [ae.EvalCase.of(f"c{index}", f"word{index}", expect=f"WORD{index}") for index in range(N)]
    if edited is not None:
        cases[0] = ae.EvalCase.of("c0", edited, expect=edited.upper())
    return ae.EvalSet.of("words", cases)


METRICS = [ae.EvalMetric.final_response()]


def sequential(agent: Interrupting, results: ae.InMemoryEvalResultManager) -> ae.Evaluator:
    # One case at a time, each scored before the next: the interruption falls after exactly two cases.
    return ae.Evaluator(
        APP, agent, result_manager=results, parallel_inference=False, parallel_evaluation=False, progress=False
    )


def interrupted(ev: ae.Evaluator, eval_set: ae.EvalSet) -> ae.EvaluationReport:
    with pytest.raises(KeyboardInterrupt) as raised:
        ev.evaluate(eval_set, metrics=METRICS)
    partial: ae.EvaluationReport = raised.value.report  # type: ignore[attr-defined]
    return partial


def outcome(report: ae.EvaluationReport) -> list[tuple[object, ...]]:
    return list(report.metrics[["run_id", "eval_id", "status", "score"]].itertuples(index=False, name=None))


def test_resuming_the_report_of_an_interrupted_evaluation_runs_only_the_unfinished_cases() -> None:
    agent, results = Interrupting(), ae.InMemoryEvalResultManager()
    ev = sequential(agent, results)
    partial = interrupted(ev, words())
    assert len(partial.result.eval_case_results) == STOP_AT - 1
    calls_before = len(agent.calls)

    report = ev.evaluate(words(), metrics=METRICS, resume=partial)

    assert agent.calls[calls_before:] == [f"word{index}" for index in range(STOP_AT - 1, N)]
    uninterrupted = ae.Evaluator(APP, str.upper, progress=False).evaluate(words(), metrics=METRICS)
    assert outcome(report) == outcome(uninterrupted)
    # The final result takes the partial one's place in the store.
    assert report.result.eval_set_result_id == partial.result.eval_set_result_id
    assert run_sync(results.list(APP)) == [partial.result.eval_set_result_id]
    assert list(report.cases["cached_inference"]) == [True, True, False, False, False]
    assert report.reuse_summary.endswith(f"from resume of {partial.result.eval_set_result_id}")


def test_resuming_by_the_id_of_the_saved_partial_result() -> None:
    agent, results = Interrupting(), ae.InMemoryEvalResultManager()
    ev = sequential(agent, results)
    partial_id = interrupted(ev, words()).result.eval_set_result_id
    calls_before = len(agent.calls)

    report = ev.evaluate(words(), metrics=METRICS, resume=partial_id)

    assert len(agent.calls) - calls_before == N - (STOP_AT - 1)
    assert report.passed
    assert report.result.eval_set_result_name == partial_id


def test_a_case_edited_since_the_interruption_runs_again() -> None:
    agent, results = Interrupting(), ae.InMemoryEvalResultManager()
    ev = sequential(agent, results)
    partial = interrupted(ev, words())
    calls_before = len(agent.calls)

    ev.evaluate(words(edited="changed"), metrics=METRICS, resume=partial)

    assert agent.calls[calls_before:] == ["changed", *(f"word{index}" for index in range(STOP_AT - 1, N))]


def test_resume_refuses_a_report_of_another_eval_set_or_a_bad_value() -> None:
    agent, results = Interrupting(), ae.InMemoryEvalResultManager()
    ev = sequential(agent, results)
    partial = interrupted(ev, words())
    other = ae.EvalSet.of("other", [ae.EvalCase.of("c0", "x", expect="X")])

    with pytest.raises(ae.ConfigError, match="the report is of eval set 'words', not 'other'"):
        ev.evaluate(other, metrics=METRICS, resume=partial)
    with pytest.raises(ae.ConfigError, match="no such result"):
        ev.evaluate(words(), metrics=METRICS, resume="no-such-id")
    with pytest.raises(ae.ConfigError, match="resume must be the report"):
        ev.evaluate(words(), metrics=METRICS, resume=3)  # type: ignore[arg-type]


KILLED_RUN = """
import json
import sys
import time

import agenteval as ae


def agent(message):
    with open(CALLS, "a") as calls:
        calls.write(message + "\\n")
    time.sleep(0.1)
    return message.upper()


CALLS = sys.argv[2]
ev = ae.Evaluator("killed-app", agent, cache=sys.argv[1], parallelism=2, progress=False)
cases = [ae.EvalCase.of(f"c{index}", f"w{index}", expect=f"W{index}") for index in range(CASES)]
report = ev.evaluate(ae.EvalSet.of("s", cases), metrics=[ae.EvalMetric.final_response()], num_runs=RUNS)
rows = report.metrics[["run_id", "eval_id", "status", "score"]].itertuples(index=False, name=None)
print(json.dumps({"rows": [list(row) for row in rows], "cached": int(report.cases["cached_inference"].sum())}))
"""

CASES, RUNS = 16, 2


def run_script(script: Path, cache: Path, calls: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONHASHSEED": "random"}
    return subprocess.Popen(
        [sys.executable, str(script), str(cache), str(calls)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_an_evaluation_killed_half_way_runs_only_the_missing_pairs_again(tmp_path: Path) -> None:
    script = tmp_path / "evaluate.py"
    script.write_text(KILLED_RUN.replace("CASES", str(CASES)).replace("RUNS", str(RUNS)))
    cache, calls = tmp_path / "cache", tmp_path / "calls.txt"
    calls.touch()

    killed = run_script(script, cache, calls)
    deadline = time.monotonic() + 60
    # Past the first writes to the cache (every 0.5 s) and well before the end (1.6 s).
    while len(calls.read_text().splitlines()) < 20 and time.monotonic() < deadline:
        time.sleep(0.02)
    killed.send_signal(signal.SIGKILL)
    killed.communicate(timeout=30)
    called_before = len(calls.read_text().splitlines())
    kept = ae.Cache(cache).stats().entries["inference"]
    assert 0 < kept < CASES * RUNS

    finished = run_script(script, cache, calls)
    out, err = finished.communicate(timeout=120)
    assert finished.returncode == 0, err

    assert len(calls.read_text().splitlines()) - called_before == CASES * RUNS - kept
    result = json.loads(out)
    assert result["cached"] == kept
    expected = [[run, f"c{index}", "passed", 1.0] for run in range(1, RUNS + 1) for index in range(CASES)]
    assert result["rows"] == expected
