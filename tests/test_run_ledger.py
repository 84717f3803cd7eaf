"""The one record of a running evaluation (``RunLedger``): what the progress display, ``EvaluationRun`` and the
partial report read, so that they agree."""

from __future__ import annotations

import asyncio
import io
import threading
from typing import Any

import pytest

import agenteval as ae
from agenteval._presentation import CANCELLED, RunState
from agenteval.context import EvalContext
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalCaseResult
from agenteval.evalset.models import Invocation
from agenteval.evaluation.ledger import RunLedger, RunProgress
from agenteval.evaluation.run import EvaluationRun
from agenteval.service.callbacks import (
    AfterEvaluateCaseArgs,
    AfterEvaluateSetArgs,
    AfterInferenceCaseArgs,
    AfterInferenceSetArgs,
    BeforeEvaluateCaseArgs,
    BeforeEvaluateSetArgs,
    BeforeInferenceCaseArgs,
    BeforeInferenceSetArgs,
)
from agenteval.service.types import EvalSetRunResult, EvaluateRequest, InferenceRequest

APP, SET = "app", "set"
CTX = EvalContext()


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Feed:
    """Calls a ledger's callbacks with hand-made arguments, as the service would, one run at a time."""

    def __init__(self, ledger: RunLedger) -> None:
        self.callbacks = ledger.callbacks()

    def call(self, point: str, args: Any) -> None:
        for named in getattr(self.callbacks, point):
            assert named.callback(CTX, args) is None

    def begin(self, run_id: int, cases: list[str]) -> tuple[InferenceRequest, EvaluateRequest]:
        inference = InferenceRequest(app_name=APP, eval_set_id=SET, run_id=run_id)
        self.call("before_inference_set", BeforeInferenceSetArgs(request=inference))
        placeholders = [InferenceResult(app_name=APP, eval_set_id=SET, eval_case_id=case) for case in cases]
        scoring = EvaluateRequest(app_name=APP, eval_set_id=SET, inference_results=placeholders, run_id=run_id)
        self.call("before_evaluate_set", BeforeEvaluateSetArgs(request=scoring))
        return inference, scoring

    def infer(
        self, request: InferenceRequest, case_id: str, *, failed: bool = False, reused: bool = False
    ) -> InferenceResult:
        before = BeforeInferenceCaseArgs(request=request, eval_case_id=case_id, session_id="")
        self.call("before_inference_case", before)
        result = InferenceResult(
            app_name=APP,
            eval_set_id=SET,
            eval_case_id=case_id,
            run_id=request.run_id,
            inferences=[] if failed else [Invocation.of("hi", "HI")],
            status=ae.EvalStatus.FAILED if failed else ae.EvalStatus.PASSED,
            error_message="agent crashed" if failed else "",
        )
        self.call(
            "after_inference_case",
            AfterInferenceCaseArgs(request=request, result=result, error=None, start_time=0, reused=reused),
        )
        return result

    def score(
        self, request: EvaluateRequest, inference: InferenceResult, status: ae.EvalStatus, *, reused: bool = False
    ) -> EvalCaseResult:
        case_id = inference.eval_case_id
        self.call("before_evaluate_case", BeforeEvaluateCaseArgs(request=request, eval_case_id=case_id))
        result = EvalCaseResult(eval_set_id=SET, eval_id=case_id, run_id=request.run_id, final_eval_status=status)
        self.call(
            "after_evaluate_case",
            AfterEvaluateCaseArgs(
                request=request, inference_result=inference, result=result, error=None, start_time=0, reused=reused
            ),
        )
        return result

    def end(self, inference: InferenceRequest, scoring: EvaluateRequest, results: list[InferenceResult]) -> None:
        self.call(
            "after_inference_set",
            AfterInferenceSetArgs(request=inference, results=results, error=None, start_time=0),
        )
        done = EvalSetRunResult(app_name=APP, eval_set_id=SET)
        self.call("after_evaluate_set", AfterEvaluateSetArgs(request=scoring, result=done, error=None, start_time=0))


def test_the_progress_display_and_the_run_show_the_eta_and_counts_of_one_ledger() -> None:
    from agenteval.notebook._html import fmt_duration
    from agenteval.notebook._live_board import status_line
    from agenteval.notebook.progress import TextProgress

    clock = FakeClock()
    ledger = RunLedger(title=f"{APP} / {SET}", num_runs=2, cases_per_run=4, metric_names=["m"], clock=clock)
    run = EvaluationRun(ledger)
    bar = TextProgress(io.StringIO(), min_interval=0, refresh=None, source=ledger)
    bar.show()
    feed = Feed(ledger)
    first, scoring = feed.begin(1, ["a", "b", "c", "d"])
    taken = feed.infer(first, "a", reused=True)
    feed.score(scoring, taken, ae.EvalStatus.PASSED, reused=True)  # costs nothing: not part of the pace
    clock.now += 4.0
    for case_id, status in [("b", ae.EvalStatus.PASSED), ("c", ae.EvalStatus.FAILED)]:
        feed.score(scoring, feed.infer(first, case_id), status)

    # 3 of 8 case runs done, 2 of them here in 4 s: 5 left at 2 s each.
    assert ledger.eta == run.eta == pytest.approx(10.0)
    assert ledger.rate == pytest.approx(0.5)
    assert " · 0.5 cases/s · ETA 10.0 s" in bar.live_text()
    assert f"ETA {fmt_duration(10.0)}" in status_line(run)
    assert run.counts == {"passed": 2, "failed": 1, "not_evaluated": 0}
    assert bar.live_text().startswith("2 passed, 1 failed, 0 errors · 4.0 s")
    assert run.progress == {1: RunProgress(1, 3, 4), 2: RunProgress(2, 0, 4)}
    assert [(state.evaluation_done, state.evaluation_total) for state in bar.runs] == [(3, 4), (0, 4)]
    assert (run.finished, run.total, run.reused, run.elapsed) == (3, 8, 1, 4.0)
    assert bar.runs == ledger.runs and bar.runs[0] is ledger.runs[0]

    ledger.end(error=KeyboardInterrupt())
    clock.now += 60.0

    assert ledger.eta == 0.0 and run.elapsed == 4.0
    assert "ETA" not in bar.live_text()
    assert bar.outcome == "interrupted"
    assert bar.summary == "INTERRUPTED app / set: 3 of 8 case runs, 2 passed, 1 failed, 0 errors, 4.0 s"


def test_the_finished_work_of_a_stopped_evaluation_is_by_run_then_in_eval_set_order() -> None:
    eval_set = ae.EvalSet.of(SET, [ae.EvalCase.of(case_id, "hi", expect="HI") for case_id in ["a", "b", "c", "d"]])
    ledger = RunLedger(num_runs=3, cases_per_run=4)
    feed = Feed(ledger)
    first, scoring = feed.begin(1, ["a", "b", "c", "d"])
    answered = [feed.infer(first, case_id) for case_id in ["c", "a", "b"]]
    feed.score(scoring, answered[0], ae.EvalStatus.FAILED)
    broken = feed.infer(first, "d", failed=True)
    second, _ = feed.begin(2, ["a", "b", "c", "d"])
    feed.infer(second, "b")

    records, inferences = ledger.finished_work(eval_set)
    cases = [record.model for record in records]

    # Run 3 never began: it is not part of what finished.
    assert [[inference.eval_case_id for inference in run] for run in inferences] == [["a", "b", "c", "d"], ["b"]]
    assert [(case.run_id, case.eval_id, case.final_eval_status) for case in cases] == [
        (1, "a", ae.EvalStatus.NOT_EVALUATED),
        (1, "b", ae.EvalStatus.NOT_EVALUATED),
        (1, "c", ae.EvalStatus.FAILED),
        (1, "d", ae.EvalStatus.FAILED),
        (2, "b", ae.EvalStatus.NOT_EVALUATED),
    ]
    by_key = {(case.run_id, case.eval_id): case for case in cases}
    assert by_key[(1, "a")].error_message == ""  # answered, not yet scored: nothing went wrong
    assert by_key[(1, "d")].error_message == broken.error_message
    assert [len(turns.eval_metric_result_per_invocation) for turns in cases[:2]] == [1, 1]


def test_a_run_s_rows_counts_and_end_are_those_the_callbacks_said() -> None:
    clock = FakeClock()
    ledger = RunLedger(num_runs=1, cases_per_run=5, clock=clock)
    feed = Feed(ledger)
    inference, scoring = feed.begin(3, ["a", "b"])  # a run beyond those planned gets rows up to it
    results = [feed.infer(inference, "a", failed=True), feed.infer(inference, "b")]
    feed.score(scoring, results[0], ae.EvalStatus.FAILED)
    feed.score(scoring, results[1], ae.EvalStatus.PASSED)
    clock.now += 2.0
    feed.end(inference, scoring, results)

    one, two, three = ledger.runs
    assert [run.run for run in ledger.runs] == [1, 2, 3]
    assert (one.evaluation_total, two.evaluation_total, three.evaluation_total) == (5, 5, 2)
    assert (three.passed, three.failed, three.errors, three.phase, three.finished) == (1, 0, 1, "done", True)
    assert ledger.run_rate(three) == pytest.approx(1.0)
    assert ledger.counts == {"passed": 1, "failed": 1, "not_evaluated": 0}

    ledger.end(error=asyncio.CancelledError())
    ledger.end()  # only the first end counts
    assert ledger.ended_at == 102.0


def test_a_stopped_run_says_why_once_even_when_both_phases_report_it() -> None:
    ledger = RunLedger(num_runs=1, cases_per_run=1)
    feed = Feed(ledger)
    inference, scoring = feed.begin(1, ["a"])
    ended: list[RunState] = []

    class Listener:
        def run_added(self, run: RunState) -> None: ...
        def phase_began(self, run: RunState) -> None: ...
        def case_inferred(self, run: RunState) -> None: ...
        def inference_ended(self, run: RunState) -> None: ...
        def case_scored(self, run: RunState) -> None: ...
        def run_ended(self, run: RunState) -> None:
            ended.append(run)

        def ended(self, report: object, error: BaseException | None) -> None: ...

    ledger.listen(Listener())
    cancelled = asyncio.CancelledError()
    feed.call(
        "after_inference_set", AfterInferenceSetArgs(request=inference, results=None, error=cancelled, start_time=0)
    )
    feed.call("after_evaluate_set", AfterEvaluateSetArgs(request=scoring, result=None, error=cancelled, start_time=0))

    assert ended == ledger.runs and ledger.runs[0].error == CANCELLED


def test_a_plan_made_before_the_first_case_sets_the_counts_of_the_runs_not_begun() -> None:
    ledger = RunLedger(title="app / set", num_runs=2, cases_per_run=0)
    feed = Feed(ledger)
    feed.begin(1, ["a", "b", "c"])

    ledger.plan(title="app / set", num_runs=3, cases_per_run=4, metric_names=["m"])

    assert [run.evaluation_total for run in ledger.runs] == [3, 4, 4]
    assert (ledger.cases_per_run, ledger.metric_names, ledger.total) == (4, ["m"], 11)


def test_the_old_names_of_both_progress_classes_still_import() -> None:
    from agenteval.evaluation import run as run_module
    from agenteval.notebook import RunState as NotebookRunState

    with pytest.warns(DeprecationWarning, match=r"agenteval.notebook.RunProgress is now RunState"):
        from agenteval.notebook import RunProgress as NotebookRunProgress
    with pytest.warns(DeprecationWarning, match=r"agenteval.notebook.progress.RunProgress is now RunState"):
        from agenteval.notebook.progress import RunProgress as ProgressModuleRunProgress

    assert run_module.RunProgress is RunProgress
    assert repr(RunProgress(1, 3, 6)) == "run 1: 3/6"
    assert NotebookRunProgress is ProgressModuleRunProgress is NotebookRunState is RunState
    assert RunProgress.__name__ != RunState.__name__  # two classes, two names


@pytest.mark.asyncio
async def test_a_thread_can_read_the_ledger_while_the_loop_feeds_it() -> None:
    async def agent(message: str) -> str:
        await asyncio.sleep(0)
        return message.upper()

    cases = ae.EvalSet.of(SET, [ae.EvalCase.of(f"c{index}", f"w{index}", expect=f"W{index}") for index in range(300)])
    run = ae.Evaluator(APP, agent, progress=False, parallelism=20).start(
        cases, metrics=[ae.EvalMetric.final_response()], num_runs=2
    )
    stop = threading.Event()
    problems: list[BaseException] = []
    reads = 0

    def read() -> None:
        nonlocal reads
        while not stop.is_set():
            try:
                progress = run.progress
                assert sum(runs.finished for runs in progress.values()) <= 600
                assert len(run.finished_results) <= 600
                run.ledger.finished_work(cases)
                _ = (run.eta, run.counts, run.finished, run.total, run.elapsed)
                reads += 1
            except BaseException as exc:
                problems.append(exc)
                return

    reader = threading.Thread(target=read)
    reader.start()
    try:
        report = await run
    finally:
        stop.set()
        reader.join()

    assert problems == [] and reads > 0
    assert report.passed and run.finished == 600 and len(run.finished_results) == 600


def test_the_facade_does_not_import_the_notebook() -> None:
    import ast
    from pathlib import Path

    import agenteval.evaluation.evaluator as facade

    tree = ast.parse(Path(facade.__file__).read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}

    assert sorted(name for name in imported if name.startswith("agenteval.notebook")) == []


@pytest.mark.asyncio
async def test_a_started_run_and_its_progress_display_read_one_ledger(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agenteval.notebook import progress
    from agenteval.notebook._progress_base import ProgressBase

    displays: list[ProgressBase] = []
    create = progress.create_progress

    def recorded(option: bool | None, source: Any = None) -> Any:
        display = create(option, source)
        assert isinstance(display, ProgressBase)
        displays.append(display)
        return display

    monkeypatch.setattr(progress, "create_progress", recorded)
    release = asyncio.Event()

    async def agent(message: str) -> str:
        if message == "w3":
            await release.wait()
        return message.upper()

    cases = ae.EvalSet.of(SET, [ae.EvalCase.of(f"c{index}", f"w{index}", expect=f"W{index}") for index in range(4)])
    run = ae.Evaluator(APP, agent, parallelism=1).start(cases, metrics=[ae.EvalMetric.final_response()], progress=True)
    async with asyncio.timeout(10):
        while run.finished < 3:
            await asyncio.sleep(0.005)

    [display] = displays
    assert display.source is run.ledger
    assert [(state.evaluation_done, state.evaluation_total) for state in display.runs] == [(3, 4)]
    assert display.live_text().startswith("3 passed, 0 failed, 0 errors · ")
    assert run.counts["passed"] == 3 and run.eta is not None
    release.set()
    await run

    assert display.outcome == "passed" and run.eta == 0.0
    assert f"PASSED {APP} / {SET}: 4 cases × 1 run, 4 passed, 0 failed" in capsys.readouterr().err
