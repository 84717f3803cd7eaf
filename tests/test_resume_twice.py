"""Two resumes of one partial result: the second never overwrites the first's result, and says so."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

import agenteval as ae
from agenteval._util.sync_bridge import run_sync
from agenteval.evalresult.manager import EvalResultManager

APP = "twice-app"
METRICS = [ae.EvalMetric.final_response()]
ALREADY_RESUMED = r"result .*, which this evaluation resumed, was replaced by another evaluation that resumed it first"


def words() -> ae.EvalSet:
    return ae.EvalSet.of(
        "words", [ae.EvalCase.of(f"c{index}", f"word{index}", expect=f"WORD{index}") for index in range(4)]
    )


class StopsOnce:
    """Upper-cases its message; its second call is interrupted (Ctrl-C), once."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, message: str) -> str:
        self.calls += 1
        if self.calls == 2:
            raise KeyboardInterrupt
        return message.upper()


def stores(tmp_path: Path) -> dict[str, Callable[[], EvalResultManager]]:
    """Makers of result stores that share their results: a new manager object each call, one store."""
    memory = ae.InMemoryEvalResultManager()
    return {"memory": lambda: memory, "local": lambda: ae.LocalEvalResultManager(tmp_path / "results")}


def evaluator(results: EvalResultManager, agent: Callable[[str], str] = str.upper) -> ae.Evaluator:
    return ae.Evaluator(
        APP, agent, result_manager=results, parallel_inference=False, parallel_evaluation=False, progress=False
    )


def partial_result(results: EvalResultManager) -> ae.EvaluationReport:
    with pytest.raises(KeyboardInterrupt) as raised:
        evaluator(results, StopsOnce()).evaluate(words(), metrics=METRICS)
    report: ae.EvaluationReport = raised.value.report  # type: ignore[attr-defined]
    assert report.partial
    return report


def stored_finish(results: EvalResultManager, result_id: str) -> float | None:
    stored = run_sync(results.get(APP, result_id))
    assert stored.summary is not None and stored.summary.provenance is not None
    return stored.summary.provenance.finished_at


@pytest.mark.parametrize("store", ["memory", "local"])
def test_a_second_resume_of_one_partial_is_saved_under_a_new_id_with_a_warning(tmp_path: Path, store: str) -> None:
    make = stores(tmp_path)[store]
    partial = partial_result(make())

    first = evaluator(make()).evaluate(words(), metrics=METRICS, resume=partial)
    with pytest.warns(ae.errors.ResumeWarning, match=ALREADY_RESUMED) as warned:
        second = evaluator(make()).evaluate(words(), metrics=METRICS, resume=partial)

    partial_id = partial.result.eval_set_result_id
    assert first.result.eval_set_result_id == partial_id
    assert second.result.eval_set_result_id not in ("", partial_id)
    message = str(warned[0].message)
    assert partial_id in message and second.result.eval_set_result_id in message
    # Each report's id loads that report's own result.
    for report in (first, second):
        assert report.provenance is not None
        assert stored_finish(make(), report.result.eval_set_result_id) == report.provenance.finished_at
    assert sorted(run_sync(make().list(APP))) == sorted([partial_id, second.result.eval_set_result_id])


@pytest.mark.parametrize("store", ["memory", "local"])
def test_a_second_resume_by_id_after_the_first_finished_replaces_nothing_it_did_not_resume(
    tmp_path: Path, store: str
) -> None:
    make = stores(tmp_path)[store]
    partial = partial_result(make())
    partial_id = partial.result.eval_set_result_id

    first = evaluator(make()).evaluate(words(), metrics=METRICS, resume=partial_id)
    # By id, the second resume takes what is stored now: the first one's complete result, which it may replace.
    again = evaluator(make()).evaluate(words(), metrics=METRICS, resume=partial_id)

    assert first.result.eval_set_result_id == again.result.eval_set_result_id == partial_id
    assert again.provenance is not None
    assert stored_finish(make(), partial_id) == again.provenance.finished_at


@pytest.mark.parametrize("store", ["memory", "local"])
def test_two_resumes_of_one_partial_running_at_once_keep_both_results(tmp_path: Path, store: str) -> None:
    make = stores(tmp_path)[store]
    partial = partial_result(make())

    async def slow_upper(message: str) -> str:
        await asyncio.sleep(0.02)
        return message.upper()

    async def both() -> list[ae.EvaluationReport]:
        return list(
            await asyncio.gather(
                *(
                    ae.Evaluator(APP, slow_upper, result_manager=make(), progress=False).aevaluate(
                        words(), metrics=METRICS, resume=partial
                    )
                    for _ in range(2)
                )
            )
        )

    with pytest.warns(ae.errors.ResumeWarning, match=ALREADY_RESUMED) as warned:
        reports = run_sync(both())

    assert len(warned) == 1
    ids = sorted(report.result.eval_set_result_id for report in reports)
    assert partial.result.eval_set_result_id in ids and len(set(ids)) == 2
    for report in reports:
        assert report.provenance is not None
        assert stored_finish(make(), report.result.eval_set_result_id) == report.provenance.finished_at
