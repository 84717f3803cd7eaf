"""``Evaluator.start``: an evaluation in the background on the running loop, watched, awaited or cancelled."""

from __future__ import annotations

import asyncio

import pytest

import agenteval as ae
from agenteval.evaluation.run import EvaluationRun

APP = "background-app"
METRICS = [ae.EvalMetric.final_response()]


def words(count: int = 6) -> ae.EvalSet:
    return ae.EvalSet.of(
        "words", [ae.EvalCase.of(f"c{index}", f"w{index}", expect=f"W{index}") for index in range(count)]
    )


def slow_agent(delay: float, suffix: str = "") -> object:
    async def agent(message: str) -> str:
        await asyncio.sleep(delay)
        return message.upper() + suffix

    return agent


def evaluator(agent: object, **options: object) -> ae.Evaluator:
    return ae.Evaluator(APP, agent, progress=False, parallelism=2, **options)  # type: ignore[arg-type]


def test_start_outside_a_running_loop_points_to_evaluate() -> None:
    with pytest.raises(ae.ConfigError, match=r"needs a running event loop.*ev.evaluate"):
        evaluator(str.upper).start(words(), metrics=METRICS)


@pytest.mark.asyncio
async def test_start_returns_at_once_and_the_finished_cases_grow_until_the_report() -> None:
    run = evaluator(slow_agent(0.05)).start(words(), metrics=METRICS, num_runs=2)

    assert isinstance(run, EvaluationRun)
    assert not run.done and run.finished == 0 and len(run.cases) == 0
    assert run.eta is None
    seen = []
    while not run.done:
        seen.append(len(run.cases))
        await asyncio.sleep(0.03)
    report = await run

    # All twelve cases can be in before the report is built and saved, so 12 may be seen while not done.
    assert seen == sorted(seen) and any(0 < count < 12 for count in seen)
    assert len(run.cases) == 12 and len(run.metrics) == 12
    assert {run_id: (p.finished, p.total) for run_id, p in run.progress.items()} == {1: (6, 6), 2: (6, 6)}
    assert run.counts["passed"] == 12 and run.eta == 0.0
    assert run.result() is report is run.report
    assert report.passed and run.error is None
    assert run.elapsed > 0.1


@pytest.mark.asyncio
async def test_cancel_leaves_a_saved_partial_report_that_resume_carries_on() -> None:
    results = ae.InMemoryEvalResultManager()
    ev = evaluator(slow_agent(0.05), result_manager=results)
    run = ev.start(words(10), metrics=METRICS)
    while run.finished < 3:
        await asyncio.sleep(0.01)

    assert run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run

    assert isinstance(run.error, asyncio.CancelledError)
    partial = run.report
    assert partial is not None and 3 <= len(partial.result.eval_case_results) < 10
    assert await results.list(APP) == [partial.result.eval_set_result_id]
    with pytest.raises(asyncio.CancelledError):
        run.result()

    final = await ev.aevaluate(words(10), metrics=METRICS, resume=partial)
    assert final.passed and final.result.eval_set_result_id == partial.result.eval_set_result_id
    assert final.cases["cached_inference"].sum() == len(partial.result.eval_case_results)


@pytest.mark.asyncio
async def test_two_runs_on_one_loop_keep_their_results_apart() -> None:
    first = evaluator(slow_agent(0.02)).start(words(), metrics=METRICS)
    second = evaluator(slow_agent(0.03, suffix="!")).start(words(), metrics=METRICS)

    reports = await asyncio.gather(first, second)

    assert reports[0].passed and not reports[1].passed
    assert list(first.cases["status"]) == ["passed"] * 6
    assert list(second.cases["status"]) == ["failed"] * 6
    assert first.finished == second.finished == 6


@pytest.mark.asyncio
async def test_bad_options_are_refused_before_the_run_is_scheduled() -> None:
    with pytest.raises(ae.ConfigError, match="num_runs must be greater than 0"):
        evaluator(str.upper).start(words(), metrics=METRICS, num_runs=0)


@pytest.mark.asyncio
async def test_the_report_a_cancelled_run_leaves_says_it_is_partial() -> None:
    run = evaluator(slow_agent(0.05)).start(words(10), metrics=METRICS)
    while run.finished < 2:
        await asyncio.sleep(0.01)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run

    assert run.report is not None and run.report.partial
    assert repr(run.report).endswith(", partial)")
    assert "<b>partial</b>" in run.report._repr_html_()
    assert not (await evaluator(str.upper).aevaluate(words(2), metrics=METRICS)).partial


@pytest.mark.asyncio
async def test_cases_taken_from_a_resumed_report_do_not_set_the_pace() -> None:
    release = asyncio.Event()
    release.set()

    async def agent(message: str) -> str:
        await release.wait()
        return message.upper()

    ev = evaluator(agent)
    earlier = await ev.aevaluate(words(4), metrics=METRICS)
    release.clear()

    run = ev.start(words(6), metrics=METRICS, resume=earlier)
    while run.finished < 4:
        await asyncio.sleep(0.01)

    # Four cases came at no cost and none has run here yet: there is no pace to go by.
    assert run.reused == 4
    assert run.eta is None
    release.set()
    report = await run
    assert report.passed and run.reused == 4 and run.eta == 0.0


@pytest.mark.asyncio
async def test_a_run_seen_done_has_its_report_at_once() -> None:
    # Polled every turn of the loop, the task is seen done in the turn it ends, before its done callbacks run.
    for _ in range(5):
        run = evaluator(str.upper).start(words(), metrics=METRICS)
        assert run._task is not None
        while not run._task.done():
            await asyncio.sleep(0)
        report = await run
        assert run.done and run.report is report and run.result() is report
