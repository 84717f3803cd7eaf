"""Tests for the live progress displays: widget trait values and text output, no browser or kernel."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
import types
import warnings
from collections.abc import Sequence
from typing import Any

import pytest

from agenteval import (
    EvalCase,
    EvalContext,
    EvalMetric,
    EvalSet,
    EvalStatus,
    EvaluationReport,
    Evaluator,
    InMemoryEvalSetManager,
    InMemoryMetricManager,
    Invocation,
    Message,
    SessionInput,
)
from agenteval._util.sync_bridge import run_sync
from agenteval.errors import ProgressWarning
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalCaseResult
from agenteval.metric.criterion import Criterion, FinalResponseCriterion, TextCriterion, TextMatchStrategy
from agenteval.notebook import _env, progress
from agenteval.notebook.progress import RunState, TextProgress, WidgetProgress, create_progress
from agenteval.service.callbacks import (
    AfterEvaluateCaseArgs,
    AfterEvaluateSetArgs,
    AfterInferenceCaseArgs,
    AfterInferenceSetArgs,
    BeforeEvaluateCaseArgs,
    BeforeEvaluateSetArgs,
    BeforeInferenceCaseArgs,
    BeforeInferenceSetArgs,
    Callbacks,
)
from agenteval.service.types import EvalSetRunResult, EvaluateRequest, InferenceRequest

pytest.importorskip("ipywidgets")

APP = "app"
SET = "set"
CASES = ["c1", "c2", "c3", "c4", "c5"]
FAILING = "c5"
METRIC = "final_response_avg_score"
CTX = EvalContext()


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class TtyStringIO(io.StringIO):
    def isatty(self) -> bool:
        return True


class Exploding:
    """Stands in for a widget whose comm is gone: every trait assignment fails."""

    def __setattr__(self, name: str, value: object) -> None:
        raise RuntimeError("comm closed")


# ---------------------------------------------------------------------------------------------- driving by hand


class Driver:
    """Calls the eight callbacks of a container with hand-made args; each ``begin_inference`` starts the next run."""

    def __init__(self, callbacks: Callbacks) -> None:
        self.callbacks = callbacks
        self.runs = 0

    def call(self, point: str, args: Any) -> None:
        for named in getattr(self.callbacks, point):
            assert named.callback(CTX, args) is None

    def infer(
        self, request: InferenceRequest, case_id: str, *, error: str = "", reused: bool = False
    ) -> InferenceResult:
        self.call(
            "before_inference_case", BeforeInferenceCaseArgs(request=request, eval_case_id=case_id, session_id="")
        )
        result = InferenceResult(
            app_name=APP,
            eval_set_id=SET,
            eval_case_id=case_id,
            run_id=request.run_id,
            status=EvalStatus.FAILED if error else EvalStatus.PASSED,
            error_message=error,
        )
        self.call(
            "after_inference_case",
            AfterInferenceCaseArgs(request=request, result=result, error=None, start_time=0, reused=reused),
        )
        return result

    def evaluate(
        self,
        request: EvaluateRequest,
        inference: InferenceResult,
        status: EvalStatus,
        *,
        error: str = "",
        reused: bool = False,
    ) -> None:
        case_id = inference.eval_case_id
        self.call("before_evaluate_case", BeforeEvaluateCaseArgs(request=request, eval_case_id=case_id))
        result = EvalCaseResult(eval_set_id=SET, eval_id=case_id, final_eval_status=status, error_message=error)
        self.call(
            "after_evaluate_case",
            AfterEvaluateCaseArgs(
                request=request, inference_result=inference, result=result, error=None, start_time=0, reused=reused
            ),
        )

    def begin_inference(self) -> InferenceRequest:
        self.runs += 1
        request = InferenceRequest(app_name=APP, eval_set_id=SET, run_id=self.runs)
        self.call("before_inference_set", BeforeInferenceSetArgs(request=request))
        return request

    def end_inference(
        self, request: InferenceRequest, results: list[InferenceResult] | None, error: BaseException | None = None
    ) -> None:
        self.call(
            "after_inference_set", AfterInferenceSetArgs(request=request, results=results, error=error, start_time=0)
        )

    def begin_evaluation(self, results: list[InferenceResult], run_id: int | None = None) -> EvaluateRequest:
        run_id = run_id if run_id is not None else results[0].run_id
        request = EvaluateRequest(app_name=APP, eval_set_id=SET, inference_results=results, run_id=run_id)
        self.call("before_evaluate_set", BeforeEvaluateSetArgs(request=request))
        return request

    def end_evaluation(self, request: EvaluateRequest, error: BaseException | None = None) -> None:
        result = None if error else EvalSetRunResult(app_name=APP, eval_set_id=SET)
        self.call("after_evaluate_set", AfterEvaluateSetArgs(request=request, result=result, error=error, start_time=0))


def widget(clock: FakeClock | None = None, *, runs: int = 3, cases: int = 5) -> WidgetProgress:
    bar = WidgetProgress(display=False, min_interval=0, clock=clock or FakeClock(), refresh=None)
    bar.start(title=SET, num_runs=runs, cases_per_run=cases, metric_names=[METRIC, "tool_trajectory_avg_score"])
    return bar


def run_values(bar: WidgetProgress) -> list[tuple[int, int, int, int, str, str]]:
    return [
        (row.inference.value, row.inference.max, row.evaluation.value, row.evaluation.max, row.inference_count.value,
         row.evaluation_count.value)
        for row in bar.rows
    ]  # fmt: skip


def counts(run: RunState) -> tuple[int, int, int, int]:
    return run.passed, run.failed, run.errors, run.not_evaluated


def test_start_shows_title_metrics_and_one_empty_row_per_run() -> None:
    bar = widget()

    assert bar.title_label.value == "set: 5 cases × 3 runs"
    assert bar.metrics_label.value == f"metrics: {METRIC}, tool_trajectory_avg_score"
    assert [row.name.value for row in bar.rows] == ["run 1", "run 2", "run 3"]
    assert bar.rows_box.children == tuple(row.box for row in bar.rows)
    assert run_values(bar) == [(0, 5, 0, 5, "0/5", "0/5")] * 3
    assert [row.inference.bar_style for row in bar.rows] == [""] * 3
    assert (bar.bar.value, bar.bar.max, bar.bar.bar_style) == (0, 30, "")
    assert bar.footer.value == "0 passed, 0 failed, 0 errors · 0.0 s"


def test_runs_are_told_apart_by_their_run_ids() -> None:
    clock = FakeClock()
    bar = widget(clock, runs=2, cases=2)
    drive = Driver(bar.callbacks())

    first = drive.begin_inference()
    second = drive.begin_inference()
    drive.infer(second, "a")
    a1 = drive.infer(first, "a")
    b1 = drive.infer(first, "b")
    clock.advance(2)

    assert run_values(bar) == [(2, 2, 0, 2, "2/2", "0/2"), (1, 2, 0, 2, "1/2", "0/2")]
    drive.end_inference(first, [a1, b1])
    scoring = drive.begin_evaluation([a1, b1])
    drive.evaluate(scoring, a1, EvalStatus.PASSED)
    drive.evaluate(scoring, b1, EvalStatus.FAILED)
    drive.end_evaluation(scoring)

    one, two = bar.runs
    assert counts(one) == (1, 1, 0, 0)
    assert counts(two) == (0, 0, 0, 0)
    assert one.finished and not two.finished
    assert [row.evaluation.bar_style for row in bar.rows] == ["danger", ""]
    assert bar.rows[0].status.value == "1 passed, 1 failed, 0 errors · 2.0 s · 1.0 cases/s"
    assert bar.bar.bar_style == "danger"


def test_interleaved_runs_finishing_inference_out_of_order_land_on_their_own_rows() -> None:
    bar = widget(runs=3, cases=2)
    drive = Driver(bar.callbacks())
    requests = [drive.begin_inference() for _ in range(3)]
    results: list[list[InferenceResult]] = [[], [], []]
    for case_id in ("a", "b"):
        for index in (2, 0, 1):
            results[index].append(drive.infer(requests[index], case_id, error="boom" if index == 1 else ""))
    scorings: dict[int, EvaluateRequest] = {}
    for index in (2, 1, 0):  # the slowest run to start is the first to be scored
        drive.end_inference(requests[index], results[index])
        scorings[index] = drive.begin_evaluation(results[index])
    for case_number in range(2):
        for index in (0, 2, 1):
            inference = results[index][case_number]
            status = EvalStatus.FAILED if index == 1 else EvalStatus.PASSED
            drive.evaluate(scorings[index], inference, status, error=inference.error_message)
    for index in (1, 0, 2):
        drive.end_evaluation(scorings[index])

    assert [counts(run) for run in bar.runs] == [(2, 0, 0, 0), (0, 0, 2, 0), (2, 0, 0, 0)]
    assert run_values(bar) == [(2, 2, 2, 2, "2/2", "2/2")] * 3
    assert [row.inference.bar_style for row in bar.rows] == ["success", "danger", "success"]


def test_scoring_lands_on_the_run_the_request_names_whatever_results_it_holds() -> None:
    bar = widget(runs=2, cases=1)
    drive = Driver(bar.callbacks())
    first, second = drive.begin_inference(), drive.begin_inference()
    a2 = drive.infer(second, "a")
    drive.end_inference(second, [a2])
    a1 = drive.infer(first, "a")
    drive.end_inference(first, [a1])

    drive.begin_evaluation([a2.model_copy(update={"run_id": 0})], run_id=2)  # a user callback swapped the list

    assert [run.phase for run in bar.runs] == ["inference", "evaluation"]


def test_an_inference_error_is_counted_once_as_an_error_not_as_a_failure() -> None:
    bar = widget(runs=1, cases=2)
    drive = Driver(bar.callbacks())
    request = drive.begin_inference()
    broken = drive.infer(request, "a", error="inference eval case: agent crashed")
    fine = drive.infer(request, "b")

    assert counts(bar.runs[0]) == (0, 0, 1, 0)
    assert bar.rows[0].inference.bar_style == "danger"
    drive.end_inference(request, [broken, fine])
    scoring = drive.begin_evaluation([broken, fine])
    drive.evaluate(scoring, broken, EvalStatus.FAILED, error=broken.error_message)
    drive.evaluate(scoring, fine, EvalStatus.NOT_EVALUATED)
    drive.end_evaluation(scoring)

    assert counts(bar.runs[0]) == (0, 0, 1, 1)
    assert bar.footer.value.startswith("0 passed, 0 failed, 1 error, 1 not evaluated")


def test_more_runs_than_announced_get_new_rows_and_totals_follow_the_real_case_count() -> None:
    bar = widget(runs=1, cases=5)
    drive = Driver(bar.callbacks())
    first, second = drive.begin_inference(), drive.begin_inference()
    results = [drive.infer(first, case_id) for case_id in ("a", "b")]
    drive.end_inference(first, results)

    assert len(bar.rows) == 2
    assert bar.rows_box.children[1] is bar.rows[1].box
    assert run_values(bar) == [(2, 2, 0, 2, "2/2", "0/2"), (0, 5, 0, 5, "0/5", "0/5")]
    assert second is not first


def test_a_set_level_failure_stops_the_run_red_with_its_error() -> None:
    bar = widget(runs=1, cases=2)
    drive = Driver(bar.callbacks())
    request = drive.begin_inference()
    drive.end_inference(request, None, ValueError("eval set vanished"))

    assert bar.runs[0].finished
    assert bar.rows[0].status.value.endswith("error: ValueError: eval set vanished")
    assert bar.rows[0].inference.bar_style == "danger"


def test_a_hung_case_is_named_in_the_footer_by_the_periodic_refresh() -> None:
    clock = FakeClock()
    bar = WidgetProgress(display=False, min_interval=0, clock=clock, refresh=0.01)
    bar.start(title=SET, num_runs=1, cases_per_run=2, metric_names=[])
    drive = Driver(bar.callbacks())

    async def hang() -> None:
        request = drive.begin_inference()
        drive.infer(request, "a")
        drive.call("before_inference_case", BeforeInferenceCaseArgs(request=request, eval_case_id="b", session_id=""))
        clock.advance(5)
        await asyncio.sleep(0.05)

    run_sync(hang())

    assert bar.footer.value.endswith("waiting on b (run 1 inference, 5.0 s)")
    assert bar.rows[0].status.value == "0 passed, 0 failed, 0 errors · 5.0 s · 0.2 cases/s"
    bar.finish(error=KeyboardInterrupt())
    assert bar._tick is None


def test_cases_taken_from_a_cache_or_resumed_result_are_said_and_left_out_of_the_rate() -> None:
    clock = FakeClock()
    bar = widget(clock, runs=1, cases=5)
    drive = Driver(bar.callbacks())
    request = drive.begin_inference()
    taken = [drive.infer(request, case_id, reused=True) for case_id in ["a", "b", "c"]]
    scored_again = drive.infer(request, "d", reused=True)  # its metric changed: scored here
    clock.advance(2.0)
    fresh = drive.infer(request, "e")
    assert bar.runs[0].inference_reused == 4

    assert "cases/s" not in bar.live_text()
    evaluation = drive.begin_evaluation([*taken, scored_again, fresh])
    for inference in taken:
        drive.evaluate(evaluation, inference, EvalStatus.PASSED, reused=True)
    drive.evaluate(evaluation, scored_again, EvalStatus.PASSED)
    drive.evaluate(evaluation, fresh, EvalStatus.PASSED, reused=True)  # nothing to take for a new inference
    drive.end_inference(request, [*taken, scored_again, fresh])
    drive.end_evaluation(evaluation)

    run = bar.runs[0]
    assert run.reused == 3
    assert bar.run_text(run) == "5 passed, 0 failed, 0 errors · 3 reused · 2.0 s · 1.0 cases/s"
    assert bar.live_text().endswith(" · 2.0 s · 1.0 cases/s")


def test_an_evaluation_that_took_every_case_shows_no_rate() -> None:
    eval_set = EvalSet.of(SET, [case(eval_id) for eval_id in ["c1", "c2"]])
    ev = Evaluator(APP, str.upper, progress=False)
    earlier = ev.evaluate(eval_set, metrics=[exact_match()])
    bar = TextProgress(io.StringIO(), min_interval=0, refresh=None)
    bar.start(title=SET, num_runs=1, cases_per_run=2, metric_names=[METRIC])

    bar.finish(report=ev.evaluate(eval_set, metrics=[exact_match()], resume=earlier, callbacks=bar.callbacks()))

    assert bar.run_text(bar.runs[0]).startswith("0 passed, 2 failed, 0 errors · 2 reused · ")
    assert "cases/s" not in bar.run_text(bar.runs[0])
    assert "cases/s" not in bar.live_text()


def test_updates_are_throttled_but_phase_changes_run_ends_and_finish_always_draw() -> None:
    clock = FakeClock()
    bar = WidgetProgress(display=False, min_interval=1.0, clock=clock, refresh=None)
    bar.start(title=SET, num_runs=1, cases_per_run=3, metric_names=[])
    drive = Driver(bar.callbacks())
    request = drive.begin_inference()
    results = [drive.infer(request, "a"), drive.infer(request, "b")]

    assert bar.rows[0].inference.value == 0
    clock.advance(1.0)
    results.append(drive.infer(request, "c"))
    assert bar.rows[0].inference.value == 3
    drive.end_inference(request, results)
    scoring = drive.begin_evaluation(results)
    drive.evaluate(scoring, results[0], EvalStatus.PASSED)
    assert bar.rows[0].evaluation.value == 0
    drive.end_evaluation(scoring)
    assert bar.rows[0].evaluation_count.value == "1/3"
    bar.finish()
    assert bar.footer.value == "PASSED set: 1 of 3 case runs, 1 passed, 0 failed, 0 errors, 1.0 s"


def test_a_display_failure_warns_once_and_never_raises() -> None:
    bar = widget(runs=1, cases=2)
    drive = Driver(bar.callbacks())
    bar.footer = Exploding()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        request = drive.begin_inference()
        drive.infer(request, "a")
        bar.finish(error=ValueError("x"))

    assert [str(warning.message) for warning in caught] == ["progress display switched off: RuntimeError: comm closed"]
    assert caught[0].category is ProgressWarning
    assert bar.runs[0].phase == "inference"


def test_a_display_failure_does_not_raise_even_when_warnings_are_errors() -> None:
    bar = WidgetProgress(display=False, refresh=None)
    bar.title_label = Exploding()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bar.start(title=SET, num_runs=1, cases_per_run=1, metric_names=[])

    assert bar._broken


# ---------------------------------------------------------------------------------------------- end to end


def case(eval_id: str) -> EvalCase:
    reply = "something else" if eval_id == FAILING else eval_id
    return EvalCase(
        eval_id=eval_id,
        conversation=[Invocation(user_content=Message.user(f"say {eval_id}"), final_response=Message.assistant(reply))],
        session_input=SessionInput(app_name=APP, user_id="user"),
    )


def exact_match() -> EvalMetric:
    return EvalMetric(
        metric_name=METRIC,
        threshold=1.0,
        criterion=Criterion(
            final_response=FinalResponseCriterion(text=TextCriterion(match_strategy=TextMatchStrategy.EXACT))
        ),
    )


def evaluator(callbacks: Callbacks, cases: Sequence[str] = CASES, **options: Any) -> Evaluator:
    async def stores() -> tuple[InMemoryEvalSetManager, InMemoryMetricManager]:
        sets, metrics = InMemoryEvalSetManager(), InMemoryMetricManager()
        await sets.create(APP, SET)
        for eval_id in cases:
            await sets.add_case(APP, SET, case(eval_id))
        await metrics.add(APP, SET, exact_match())
        return sets, metrics

    sets, metrics = run_sync(stores())

    async def agent(text: str) -> str:
        await asyncio.sleep(0.001 * (int(text[-1]) % 3))  # cases finish out of order
        return text.removeprefix("say ")

    return Evaluator(APP, agent, eval_set_manager=sets, metric_manager=metrics, callbacks=callbacks, **options)


def evaluate_with(
    bar: WidgetProgress | TextProgress, *, cases: Sequence[str] = CASES, **options: Any
) -> EvaluationReport:
    ev = evaluator(bar.callbacks(), cases, **options)
    bar.start(title=SET, num_runs=options.get("num_runs", 1), cases_per_run=len(cases), metric_names=[METRIC])
    try:
        report = ev.evaluate(SET)
    except BaseException as exc:
        bar.finish(error=exc)
        raise
    bar.finish(report=report)
    return report


PARALLEL: dict[str, Any] = {"parallel_runs": True, "parallel_inference": True, "parallel_evaluation": True}


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_three_runs_of_five_cases_with_one_failing_case_end_red(parallel: bool) -> None:
    bar = WidgetProgress(display=False, refresh=None)

    report = evaluate_with(bar, num_runs=3, **(PARALLEL if parallel else {}))

    assert report.overall_status == EvalStatus.FAILED
    assert [counts(run) for run in bar.runs] == [(4, 1, 0, 0)] * 3
    assert run_values(bar) == [(5, 5, 5, 5, "5/5", "5/5")] * 3
    assert all(row.status.value.startswith("4 passed, 1 failed, 0 errors · ") for row in bar.rows)
    assert {row.inference.bar_style for row in bar.rows} == {"danger"}
    assert {row.evaluation.bar_style for row in bar.rows} == {"danger"}
    assert (bar.bar.value, bar.bar.max, bar.bar.bar_style, bar.bar.description) == (30, 30, "danger", "FAILED")
    assert bar.outcome == "failed"
    assert bar.footer.value.startswith("FAILED set: 5 cases × 3 runs, 4 passed, 1 failed, ")
    assert bar.footer.value.endswith(" s")


@pytest.mark.filterwarnings("ignore::agenteval.errors.NoMetricsWarning")
def test_an_evaluation_that_scored_nothing_ends_not_evaluated_not_passed() -> None:
    bar = WidgetProgress(display=False, refresh=None)
    ev = evaluator(bar.callbacks(), ["c1", "c2"])
    bar.start(title=SET, num_runs=1, cases_per_run=2, metric_names=[])

    report = ev.evaluate(SET, metrics=[])
    bar.finish(report=report)

    assert report.overall_status == EvalStatus.NOT_EVALUATED
    assert bar.outcome == "not evaluated"
    assert (bar.bar.bar_style, bar.bar.description) == ("warning", "not evaluated")
    assert bar.footer.value.startswith("NOT EVALUATED set: 2 cases × 1 run, 0 passed, 0 failed, ")


def test_an_evaluation_where_everything_passes_ends_green() -> None:
    bar = WidgetProgress(display=False, refresh=None)

    evaluate_with(bar, cases=["c1", "c2"], num_runs=2, parallel_runs=True)

    assert {row.evaluation.bar_style for row in bar.rows} == {"success"}
    assert (bar.bar.bar_style, bar.bar.description) == ("success", "passed")
    assert bar.footer.value.startswith("PASSED set: 2 cases × 2 runs, 2 passed, 0 failed, ")


def test_an_agent_that_raises_counts_as_an_error_in_every_run() -> None:
    bar = WidgetProgress(display=False, refresh=None)
    ev_cases = ["c1", "c2"]
    ev = evaluator(bar.callbacks(), ev_cases, num_runs=2)

    def crashing(text: str) -> str:
        if text == "say c2":
            raise ConnectionError("model down")
        return text.removeprefix("say ")

    ev.runner = Evaluator(APP, crashing).runner
    bar.start(title=SET, num_runs=2, cases_per_run=2, metric_names=[METRIC])
    bar.finish(report=ev.evaluate(SET))

    assert [counts(run) for run in bar.runs] == [(1, 0, 1, 0)] * 2
    assert bar.footer.value.startswith("FAILED set: 2 cases × 2 runs, 1 passed, 1 failed, 2 errors in case runs, ")


def test_a_callback_error_finishes_red_with_the_error() -> None:
    bar = WidgetProgress(display=False, refresh=None)

    def refuse(context: EvalContext, args: BeforeEvaluateSetArgs) -> None:
        raise RuntimeError("quota exceeded")

    callbacks = Callbacks().register_before_evaluate_set("quota", refuse).merged(bar.callbacks())
    ev = evaluator(callbacks, num_runs=2)
    bar.start(title=SET, num_runs=2, cases_per_run=5, metric_names=[METRIC])
    with pytest.raises(Exception, match="quota exceeded") as caught:
        ev.evaluate(SET)
    bar.finish(error=caught.value)

    assert bar.outcome == "failed"
    assert (bar.bar.bar_style, bar.bar.description) == ("danger", "FAILED")
    assert bar.footer.value.startswith("FAILED set: 0 of 10 case runs, 0 passed, 0 failed, 0 errors, ")
    assert "quota exceeded" in bar.footer.value
    # The evaluation's before_evaluate_set callbacks run before any case does (scoring follows each case's inference).
    assert run_values(bar)[0] == (0, 5, 0, 5, "0/5", "0/5")
    assert {row.evaluation.bar_style for row in bar.rows} == {"danger"}


def test_a_keyboard_interrupt_ends_red_and_interrupted() -> None:
    bar = widget(runs=2, cases=2)
    drive = Driver(bar.callbacks())
    request = drive.begin_inference()
    drive.infer(request, "a")
    drive.end_inference(request, None, asyncio.CancelledError())

    bar.finish(error=KeyboardInterrupt())

    assert bar.outcome == "interrupted"
    assert (bar.bar.bar_style, bar.bar.description) == ("danger", "interrupted")
    assert bar.footer.value.startswith("INTERRUPTED set: 0 of 4 case runs, ")
    assert [row.inference.bar_style for row in bar.rows] == ["danger", "danger"]
    assert bar.rows[0].status.value.endswith("cancelled")
    assert bar.rows[1].status.value.endswith("interrupted")


# ---------------------------------------------------------------------------------------------- text bar


def test_text_bar_on_a_terminal_redraws_one_line_and_ends_with_a_newline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    stream = TtyStringIO()
    bar = TextProgress(stream, width=200, min_interval=0, refresh=None)

    evaluate_with(bar, num_runs=3)

    output = stream.getvalue()
    lines = output.split("\n")
    assert output.endswith("\n")
    assert lines[0] == f"set: 5 cases × 3 runs · metrics: {METRIC}"
    assert "\r" in lines[1]
    assert lines[1].split("\r")[-1].startswith("run 1/3 done: 5 cases, 4 passed, 1 failed, 0 errors · ")
    assert "set |" in output
    assert " · inference 5/15 · evaluation 5/15 · " in output
    assert lines[-2].split("\r")[-1].startswith("\x1b[31mFAILED set: 5 cases × 3 runs, 4 passed, 1 failed, ")
    assert lines[-1] == ""


@pytest.mark.parametrize(("no_color", "agent_fails"), [("", False), ("", True), ("1", True)])
def test_text_bar_on_a_terminal_ends_green_when_passed_and_red_otherwise(
    monkeypatch: pytest.MonkeyPatch, no_color: str, agent_fails: bool
) -> None:
    monkeypatch.setenv("NO_COLOR", no_color)
    stream = TtyStringIO()
    bar = TextProgress(stream, width=200, min_interval=0, refresh=None)
    bar.start(title=SET, num_runs=1, cases_per_run=1, metric_names=[])

    bar.finish(error=RuntimeError("boom") if agent_fails else None)

    last = stream.getvalue().split("\n")[-2].split("\r")[-1]
    colour = "" if no_color else "\x1b[31m" if agent_fails else "\x1b[32m"
    assert last.startswith(colour + ("FAILED" if agent_fails else "PASSED"))
    assert last.rstrip().endswith("\x1b[0m") == bool(colour)


def test_text_bar_draws_both_phases_of_all_runs_truncated_to_the_width() -> None:
    stream = TtyStringIO()
    bar = TextProgress(stream, width=40, min_interval=0, refresh=None)
    bar.start(title=SET, num_runs=1, cases_per_run=1, metric_names=[])
    drive = Driver(bar.callbacks())
    request = drive.begin_inference()
    drive.infer(request, "a")

    redraws = stream.getvalue().split("\n")[-1].split("\r")[1:]
    assert redraws
    assert all(len(line) <= 39 for line in redraws)
    assert bar.live_line().startswith("set |██████████          | · inference 1/1 · evaluation 0/1 · 0 passed, ")


def test_text_bar_off_a_terminal_writes_one_line_per_run_and_no_carriage_returns() -> None:
    stream = io.StringIO()
    bar = TextProgress(stream, min_interval=0)

    evaluate_with(bar, num_runs=3, parallel_runs=True)

    output = stream.getvalue()
    assert "\r" not in output
    lines = output.splitlines()
    assert len(lines) == 5
    assert lines[0] == f"set: 5 cases × 3 runs · metrics: {METRIC}"
    assert sorted(line.split(":")[0] for line in lines[1:4]) == ["run 1/3 done", "run 2/3 done", "run 3/3 done"]
    assert all("4 passed, 1 failed, 0 errors" in line for line in lines[1:4])
    assert lines[4].startswith("FAILED set: 5 cases × 3 runs, 4 passed, 1 failed, ")
    assert bar._refresh is None


def test_text_bar_falls_back_to_ascii_on_a_stream_that_cannot_encode_the_symbols() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    bar = TextProgress(stream, refresh=None)

    bar.start(title=SET, num_runs=2, cases_per_run=1, metric_names=[])
    bar.finish(error=KeyboardInterrupt())

    stream.flush()
    assert raw.getvalue().decode("ascii").splitlines() == [
        "set: 1 case x 2 runs - metrics: none",
        "INTERRUPTED set: 0 of 2 case runs, 0 passed, 0 failed, 0 errors, 0.0 s",
    ]


# ---------------------------------------------------------------------------------------------- choosing a display


@pytest.mark.parametrize(
    ("option", "kernel", "widgets", "tty", "expected"),
    [
        (None, True, True, False, WidgetProgress),
        (None, True, False, False, None),
        (None, False, True, True, TextProgress),
        (None, False, True, False, None),
        (True, True, True, False, WidgetProgress),
        (True, False, True, False, TextProgress),
        (True, True, False, False, TextProgress),
        (False, True, True, True, None),
        (False, False, True, True, None),
    ],
)
def test_create_progress_decides_by_option_kernel_widgets_and_terminal(
    monkeypatch: pytest.MonkeyPatch, option: bool | None, kernel: bool, widgets: bool, tty: bool, expected: type | None
) -> None:
    monkeypatch.setattr(progress, "running_in_notebook", lambda: kernel)
    monkeypatch.setattr(progress, "widgets_available", lambda: widgets)
    monkeypatch.setattr(sys, "stderr", TtyStringIO() if tty else io.StringIO())
    monkeypatch.setattr(WidgetProgress, "_draw_start", lambda self: None)

    chosen = create_progress(option)

    assert chosen is None if expected is None else type(chosen) is expected
    if isinstance(chosen, TextProgress):
        assert chosen.stream is sys.stderr
        assert chosen.tty is tty


def test_kernel_detection_uses_the_ipkernelapp_config_of_a_loaded_ipython(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("IPython")
    shell: dict[str, object] = {}
    fake.get_ipython = lambda: types.SimpleNamespace(config=shell)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", fake)

    assert _env.running_in_notebook() is False
    shell["IPKernelApp"] = {}
    assert _env.running_in_notebook() is True
    monkeypatch.delitem(sys.modules, "IPython")
    assert _env.running_in_notebook() is False


def test_stream_is_terminal_survives_streams_without_a_working_isatty() -> None:
    closed = io.StringIO()
    closed.close()

    assert _env.stream_is_terminal(None) is False
    assert _env.stream_is_terminal(closed) is False
    assert _env.stream_is_terminal(TtyStringIO()) is True


def test_importing_agenteval_does_not_import_ipywidgets_or_ipython() -> None:
    code = (
        "import sys, agenteval, agenteval.notebook, agenteval.notebook.progress\n"
        "print(sorted(name for name in ('ipywidgets', 'IPython') if name in sys.modules))"
    )

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert done.stdout.strip() == "[]"
