"""The result journal: a killed evaluation's finished cases stay on disk, and resume= carries it on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import agenteval as ae
from agenteval._util.sync_bridge import run_sync
from agenteval.evalresult.journal import ResultJournal, read_journal
from agenteval.service import AfterEvaluateCaseArgs

APP = "journal_app"


def words(count: int) -> ae.EvalSet:
    return ae.EvalSet.of("words", [ae.EvalCase.of(f"c{i}", f"w{i}", expect=f"W{i}") for i in range(count)])


METRICS = [ae.EvalMetric.final_response()]


def outcome(report: ae.EvaluationReport) -> list[tuple[str, int, str, float, str]]:
    """Each case run's id, run, status, score and reply, in a stable order."""
    rows = []
    for case in report.result.eval_case_results:
        turn = case.eval_metric_result_per_invocation[0].actual_invocation
        reply = turn.final_response.content if turn is not None and turn.final_response is not None else ""
        rows.append((case.eval_id, case.run_id, str(case.final_eval_status), case.score, reply))
    return sorted(rows)


def test_a_saved_result_leaves_no_journal(tmp_path: Path) -> None:
    store = ae.LocalEvalResultManager(tmp_path)
    report = ae.Evaluator(APP, str.upper, result_manager=store, progress=False).evaluate(words(3), metrics=METRICS)

    assert report.passed
    assert sorted(p.name for p in (tmp_path / APP).iterdir()) == [
        f"{report.result.eval_set_result_id}.evalset_result.json"
    ]


def test_a_case_is_in_the_journal_before_the_user_hears_it_finished(tmp_path: Path) -> None:
    store = ae.LocalEvalResultManager(tmp_path)
    seen: list[list[str]] = []

    def after_case(context: ae.EvalContext, args: AfterEvaluateCaseArgs) -> None:
        (journal,) = (tmp_path / APP).glob("*.journal")
        seen.append([json.loads(line)["evalId"] for line in journal.read_text().splitlines()[1:]])

    callbacks = ae.Callbacks().register_after_evaluate_case("watch", after_case)
    ae.Evaluator(APP, str.upper, result_manager=store, progress=False, callbacks=callbacks).evaluate(
        words(3), metrics=METRICS
    )

    assert seen == [["c0"], ["c0", "c1"], ["c0", "c1", "c2"]]


def test_a_torn_last_line_is_left_out_and_a_damaged_one_named(tmp_path: Path) -> None:
    report = ae.Evaluator(APP, str.upper, progress=False).evaluate(words(2), metrics=METRICS)
    path = tmp_path / "r.evalset_result.json.journal"
    journal = ResultJournal(path, app_name=APP, result_id="r", eval_set_id="words", provenance=report.provenance)
    for case in report.result.eval_case_results:
        journal.append(case)
    journal.close()
    whole = path.read_bytes()
    path.write_bytes(whole[: whole.rindex(b"\n", 0, len(whole) - 1) + 20])  # the last line cut short

    partial = read_journal(path)

    assert [case.eval_id for case in partial.eval_case_results] == ["c0"]
    assert partial.summary is not None and partial.summary.provenance is not None
    assert partial.summary.provenance.partial
    lines = whole.split(b"\n")
    path.write_bytes(b"\n".join([lines[0], b'{"evalId": 3', *lines[1:]]))
    with pytest.raises(ae.ConfigError, match=r"journal .*r\.evalset_result\.json\.journal, line 2"):
        read_journal(path)


_CHILD = textwrap.dedent(
    """
    import asyncio, os, sys
    import agenteval as ae

    base, log = sys.argv[1], sys.argv[2]

    async def agent(message: str) -> str:
        await asyncio.sleep(0.05)
        return message.upper()

    def done(context, args):
        os.write(fd, f"{args.inference_result.eval_case_id}\\n".encode())

    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    cases = [ae.EvalCase.of(f"c{i}", f"w{i}", expect=f"W{i}") for i in range(40)]
    callbacks = ae.Callbacks().register_after_evaluate_case("log", done)
    ev = ae.Evaluator(
        "journal_app", agent, result_manager=ae.LocalEvalResultManager(base), progress=False,
        parallelism=2, parallel_inference=True, callbacks=callbacks,
    )
    ev.evaluate(ae.EvalSet.of("words", cases), metrics=[ae.EvalMetric.final_response()])
    """
)


def test_resume_carries_on_an_evaluation_killed_with_sigkill(tmp_path: Path) -> None:
    script, log = tmp_path / "child_eval.py", tmp_path / "done.log"
    script.write_text(_CHILD)
    base = tmp_path / "results"
    command = [sys.executable, str(script), str(base), str(log)]
    child = subprocess.Popen(command, env={**os.environ, "HOME": str(tmp_path)})
    try:
        deadline = time.monotonic() + 60
        while (not log.exists() or len(log.read_text().split()) < 10) and time.monotonic() < deadline:
            assert child.poll() is None, "the evaluation ended before it was killed"
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    finished = set(log.read_text().split())
    assert len(finished) >= 10

    store = ae.LocalEvalResultManager(base)
    (result_id,) = run_sync(store.list(APP))
    partial = ae.EvaluationReport.load(store, APP, result_id)
    assert partial.partial
    assert finished <= {case.eval_id for case in partial.result.eval_case_results}

    ran: list[str] = []

    def agent(message: str) -> str:
        ran.append(message)
        return message.upper()

    eval_set = ae.EvalSet.of("words", [ae.EvalCase.of(f"c{i}", f"w{i}", expect=f"W{i}") for i in range(40)])
    final = ae.Evaluator(APP, agent, result_manager=store, progress=False).evaluate(
        eval_set, metrics=METRICS, resume=result_id
    )

    assert final.result.eval_set_result_id == result_id and not final.partial
    assert not {f"w{case[1:]}" for case in finished} & set(ran)  # nothing finished ran again
    fresh = ae.Evaluator(APP, str.upper, progress=False).evaluate(eval_set, metrics=METRICS)
    assert outcome(final) == outcome(fresh)
    assert sorted(p.name for p in (base / APP).iterdir()) == [f"{result_id}.evalset_result.json"]
    saved = json.loads((base / APP / f"{result_id}.evalset_result.json").read_text())
    assert len(saved["evalCaseResults"]) == 40
