"""The result journal: a killed evaluation's finished cases stay on disk, and resume= carries it on."""

from __future__ import annotations

import contextvars
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
        (journal,) = (tmp_path / APP / ".journals").iterdir()
        seen.append([json.loads(line)["evalId"] for line in journal.read_text().splitlines()[1:]])

    callbacks = ae.Callbacks().register_after_evaluate_case("watch", after_case)
    ae.Evaluator(APP, str.upper, result_manager=store, progress=False, callbacks=callbacks).evaluate(
        words(3), metrics=METRICS
    )

    assert seen == [["c0"], ["c0", "c1"], ["c0", "c1", "c2"]]


def test_a_torn_last_line_is_left_out_and_a_damaged_one_named(tmp_path: Path) -> None:
    report = ae.Evaluator(APP, str.upper, progress=False).evaluate(words(2), metrics=METRICS)
    path = tmp_path / "r.evalset_result.json"
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
    with pytest.raises(ae.ConfigError, match=r"journal .*r\.evalset_result\.json, line 2.*delete .* to drop"):
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


def killed_journal(store: ae.LocalEvalResultManager, report: ae.EvaluationReport, result_id: str, cases: int) -> None:
    """What a killed evaluation leaves: a journal of its first ``cases`` case runs, its lock released."""
    journal = store.open_journal(APP, result_id, eval_set_id="words", provenance=report.provenance)
    for case in report.result.eval_case_results[:cases]:
        journal.append(case)
    journal.close()


def test_a_running_evaluations_journal_is_not_offered_as_a_partial_result(tmp_path: Path) -> None:
    store = ae.LocalEvalResultManager(tmp_path)
    report = ae.Evaluator(APP, str.upper, progress=False).evaluate(words(3), metrics=METRICS)
    journal = store.open_journal(APP, "live", eval_set_id="words", provenance=report.provenance)
    journal.append(report.result.eval_case_results[0])

    assert run_sync(store.list(APP)) == []
    with pytest.raises(ae.NotFoundError, match="still running"):
        run_sync(store.get(APP, "live"))
    journal.close()  # as the process ending does
    assert run_sync(store.list(APP)) == ["live"]
    assert [case.eval_id for case in run_sync(store.get(APP, "live")).eval_case_results] == ["c0"]


def test_a_resume_that_fails_keeps_the_killed_evaluations_journal(tmp_path: Path) -> None:
    store = ae.LocalEvalResultManager(tmp_path)
    killed_journal(store, ae.Evaluator(APP, str.upper, progress=False).evaluate(words(4), metrics=METRICS), "k", 2)

    def refuse(context: object, args: object) -> None:
        raise RuntimeError("not now")

    callbacks = ae.Callbacks().register_before_inference_set("refuse", refuse)
    with pytest.raises(ae.errors.CallbackError):
        ae.Evaluator(APP, str.upper, result_manager=store, callbacks=callbacks, progress=False).evaluate(
            words(4), metrics=METRICS, resume="k"
        )

    assert "k" in run_sync(store.list(APP))
    assert len(run_sync(store.get(APP, "k")).eval_case_results) == 2


def test_resuming_a_saved_result_never_writes_to_it_before_its_final_save(tmp_path: Path) -> None:
    store = ae.LocalEvalResultManager(tmp_path)
    saved = ae.Evaluator(APP, str.upper, result_manager=store, progress=False).evaluate(words(3), metrics=METRICS)
    result_id = saved.result.eval_set_result_id
    before = (tmp_path / APP / f"{result_id}.evalset_result.json").read_bytes()
    journal_ids: list[str] = []

    def after_case(context: ae.EvalContext, args: AfterEvaluateCaseArgs) -> None:
        journal_ids.extend(path.name for path in (tmp_path / APP / ".journals").iterdir())
        # The saved result is as it was while the resume runs (a kill now would leave it so).
        assert (tmp_path / APP / f"{result_id}.evalset_result.json").read_bytes() == before

    callbacks = ae.Callbacks().register_after_evaluate_case("watch", after_case)
    changed = [ae.EvalMetric.final_response(case_insensitive=True)]
    final = ae.Evaluator(APP, str.upper, result_manager=store, callbacks=callbacks, progress=False).evaluate(
        words(3), metrics=changed, resume=result_id
    )

    assert final.result.eval_set_result_id == result_id
    assert journal_ids and f"{result_id}.evalset_result.json" not in journal_ids
    assert not (tmp_path / APP / ".journals").exists()


def test_a_long_result_id_saves_and_loads_with_its_journal(tmp_path: Path) -> None:
    store = ae.LocalEvalResultManager(tmp_path)
    result_id = "r" * (255 - len(".evalset_result.json"))
    report = ae.Evaluator(APP, str.upper, progress=False).evaluate(words(2), metrics=METRICS)

    killed_journal(store, report, result_id, 1)
    assert run_sync(store.list(APP)) == [result_id]
    assert len(run_sync(store.get(APP, result_id)).eval_case_results) == 1
    report.result.eval_set_result_id = result_id
    assert run_sync(store.save(APP, report.result)) == result_id
    assert len(run_sync(store.get(APP, result_id)).eval_case_results) == 2


@pytest.mark.asyncio
async def test_a_context_variable_an_agent_sets_stays_in_its_case() -> None:
    trace: contextvars.ContextVar[str | None] = contextvars.ContextVar("trace", default=None)
    seen: dict[str, str | None] = {}

    async def agent(message: str) -> str:
        seen[message] = trace.get()
        trace.set(f"trace of {message}")  # a tracer that does not reset what it set
        return message.upper()

    ev = ae.Evaluator(APP, agent, progress=False, parallel_inference=True, parallelism=2)
    await ev.aevaluate(words(6), metrics=METRICS)

    assert seen == {f"w{i}": None for i in range(6)}
