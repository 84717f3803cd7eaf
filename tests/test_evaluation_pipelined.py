"""The facade scores each case as its inference ends: the same report as the two phases, in a new callback order."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

import pytest

import agenteval as ae
from agenteval._util.sync_bridge import run_sync
from agenteval.evalresult.records import CaseRecord, CaseRecorder
from agenteval.evaluation import EvaluationOptions
from agenteval.evaluation._support import RecordedRun, in_runs
from agenteval.evaluation.plan import EvaluationPlan
from agenteval.notebook.progress import TextProgress
from agenteval.service.callbacks import AfterEvaluateCaseArgs, BeforeInferenceCaseArgs
from agenteval.service.local import CaseLimits, LocalService, ServiceRuntime
from agenteval.service.types import EvaluateConfig, EvaluateRequest, InferenceRequest
from tests.test_evaluation import APP, SET, RecordingResultManager, echo, fill, final_response, make_case

VOLATILE = {"evalSetResultId", "evalSetResultName", "invocationId", "startedAt", "finishedAt", "creationTimestamp"}
POINTS = (
    "before_inference_set",
    "before_inference_case",
    "after_inference_case",
    "after_inference_set",
    "before_evaluate_set",
    "before_evaluate_case",
    "after_evaluate_case",
    "after_evaluate_set",
)


class TwoPhaseEvaluator(ae.Evaluator):
    """The facade as it was: every run infers all its cases, then scores them."""

    async def _run_all(
        self,
        plan: EvaluationPlan,
        options: EvaluationOptions,
        recorder: CaseRecorder,
        ended: Callable[[int, Sequence[CaseRecord]], None],
    ) -> list[RecordedRun]:
        runtime = ServiceRuntime(limits=CaseLimits.of(options.parallelism), reuse=plan.reuse, cassettes=plan.cassettes)
        service = LocalService(self._agent(), options, runtime=runtime)
        eval_set = plan.eval_set

        async def run(run_id: int) -> RecordedRun:
            request = InferenceRequest(
                app_name=self.app_name,
                eval_set_id=eval_set.eval_set_id,
                eval_case_ids=list(options.eval_case_ids),
                run_id=run_id,
                eval_set=eval_set,
            )
            inferences = await service.inference(request)
            scored = await service.evaluate(
                EvaluateRequest(
                    app_name=self.app_name,
                    eval_set_id=eval_set.eval_set_id,
                    inference_results=inferences,
                    evaluate_config=EvaluateConfig(eval_metrics=plan.metrics),
                    run_id=run_id,
                    eval_set=eval_set,
                )
            )
            records = [recorder.record(case) for case in scored.eval_case_results]
            ended(run_id, records)
            return inferences, records

        return await in_runs(run, options.num_runs, parallel=options.parallel_runs)


def agent(text: str) -> str:
    """``say X`` -> ``X``, except that b's model is down and c answers wrongly."""
    if text == "say b":
        raise RuntimeError("model down")
    return "wrong" if text == "say c" else echo(text)


def refuse_d(context: ae.EvalContext, args: BeforeInferenceCaseArgs) -> None:
    if args.eval_case_id == "d":
        raise ValueError("d is refused")


def stable(data: Any) -> Any:
    """``data`` (JSON) without the ids and times that differ from one evaluation to the next."""
    if isinstance(data, dict):
        return {key: stable(value) for key, value in data.items() if key not in VOLATILE}
    if isinstance(data, list):
        return [stable(item) for item in data]
    return data


def agent_records(report: ae.EvaluationReport) -> Any:
    return stable([[json.loads(result.to_json()) for result in run] for run in report.inference_results])


def evaluate_both(**options: Any) -> tuple[ae.EvaluationReport, ae.EvaluationReport]:
    """The same evaluation through the facade and through the two-phase facade."""
    eval_set = ae.EvalSet(eval_set_id=SET, eval_cases=[make_case(eval_id) for eval_id in "abcde"])
    settings: dict[str, Any] = {
        "callbacks": ae.Callbacks().register_before_inference_case("refuse d", refuse_d),
        "session_id_supplier": lambda context: "session",
        "progress": False,
        **options,
    }
    pipelined = ae.Evaluator(APP, agent, **settings).evaluate(eval_set, metrics=[final_response()])
    two_phase = TwoPhaseEvaluator(APP, agent, **settings).evaluate(eval_set, metrics=[final_response()])
    return pipelined, two_phase


# ---------------------------------------------------------------------------------------------- same report


@pytest.mark.parametrize(
    "options",
    [
        {"parallel_inference": False, "parallel_evaluation": False},
        {"parallel_inference": True, "parallel_evaluation": False},
        {"parallel_inference": False, "parallel_evaluation": True},
        {"parallel_inference": True, "parallel_evaluation": True, "parallelism": 2},
        {"num_runs": 3},
        {"num_runs": 3, "parallel_runs": True, "parallelism": 2},
        {"num_runs": 2, "eval_case_ids": ["e", "b", "a"]},
    ],
    ids=["serial", "parallel-inference", "parallel-evaluation", "parallel", "runs", "parallel-runs", "case-ids"],
)
def test_the_report_is_the_two_phase_report(options: dict[str, Any]) -> None:
    pipelined, two_phase = evaluate_both(**options)

    assert stable(json.loads(pipelined.result.to_json())) == stable(json.loads(two_phase.result.to_json()))
    assert pipelined.case_table.equals(two_phase.case_table)
    assert pipelined.overall_status == two_phase.overall_status == ae.EvalStatus.FAILED
    assert pipelined.cases.equals(two_phase.cases)
    assert agent_records(pipelined) == agent_records(two_phase)


def test_failing_cases_fail_as_in_two_phases() -> None:
    pipelined, _ = evaluate_both(num_runs=2)

    statuses = pipelined.cases[["run_id", "eval_id", "status"]].values.tolist()
    assert statuses == [
        [run, eval_id, status]
        for run in (1, 2)
        for eval_id, status in zip("abcde", ["passed", "failed", "failed", "failed", "passed"], strict=True)
    ]
    messages = dict(zip(pipelined.cases["eval_id"], pipelined.cases["error_message"], strict=False))
    assert "model down" in messages["b"] and "d is refused" in messages["d"] and messages["c"] == ""


# ---------------------------------------------------------------------------------------------- callback order


def logged(log: list[str]) -> ae.Callbacks:
    callbacks = ae.Callbacks()
    for point in POINTS:

        def record(context: ae.EvalContext, args: Any, point: str = point) -> None:
            case = getattr(args, "eval_case_id", "") or (
                args.inference_result.eval_case_id if isinstance(args, AfterEvaluateCaseArgs) else ""
            )
            if not case and point == "after_inference_case":
                case = args.result.eval_case_id
            log.append(" ".join(filter(None, [f"{args.run_id}", point, case])))

        callbacks = getattr(callbacks, f"register_{point}")("log", record)
    return callbacks


def test_serial_runs_of_serial_cases_fire_callbacks_case_by_case() -> None:
    log: list[str] = []
    ev = ae.Evaluator(
        APP,
        echo,
        eval_set_manager=fill([make_case("a"), make_case("b")]),
        callbacks=logged(log),
        parallel_inference=False,
        parallel_evaluation=False,
        num_runs=2,
        progress=False,
    )

    ev.evaluate(SET, metrics=[final_response()])

    per_case = ["before_inference_case", "after_inference_case", "before_evaluate_case", "after_evaluate_case"]
    assert log == [
        entry
        for run in (1, 2)
        for entry in [
            f"{run} before_inference_set",
            f"{run} before_evaluate_set",
            *(f"{run} {point} {case}" for case in "ab" for point in per_case),
            f"{run} after_inference_set",
            f"{run} after_evaluate_set",
        ]
    ]


def test_a_run_error_names_the_run() -> None:
    def boom(context: ae.EvalContext, args: object) -> None:
        raise ValueError("boom")

    ev = ae.Evaluator(APP, echo, eval_set_manager=fill([make_case("a")]), progress=False, num_runs=2)

    expected = r"^run 1: run before evaluate set callbacks \(app=app, evalSetID=set\)"
    with pytest.raises(ae.AgentEvalError, match=expected):
        ev.evaluate(SET, metrics=[final_response()], callbacks=ae.Callbacks().register_before_evaluate_set("b", boom))


# ---------------------------------------------------------------------------------------------- interrupted evaluations


def test_an_evaluation_stopped_in_run_two_keeps_its_scored_and_its_unscored_cases(
    caplog: pytest.LogCaptureFixture,
) -> None:
    results = RecordingResultManager()

    def refuse_a_in_run_two(context: ae.EvalContext, args: Any) -> None:
        if args.run_id == 2 and args.eval_case_id == "a":
            raise RuntimeError("judge quota exceeded")

    ev = ae.Evaluator(
        APP, echo, eval_set_manager=fill([make_case("a"), make_case("b")]), result_manager=results, num_runs=2
    )

    with caplog.at_level(logging.WARNING, logger="agenteval"), pytest.raises(ae.AgentEvalError) as raised:
        ev.evaluate(
            SET,
            metrics=[final_response()],
            parallel_evaluation=False,
            callbacks=ae.Callbacks().register_before_evaluate_case("quota", refuse_a_in_run_two),
        )

    assert str(raised.value).startswith("run 2: evaluate case results (app=app, evalSetID=set): ")
    partial: ae.EvaluationReport = raised.value.report  # type: ignore[attr-defined]
    cases = partial.result.eval_case_results
    # Serial scoring stopped at a; b was inferred but never scored, so it is kept unscored.
    assert [(case.run_id, case.eval_id, case.final_eval_status) for case in cases] == [
        (1, "a", ae.EvalStatus.PASSED),
        (1, "b", ae.EvalStatus.PASSED),
        (2, "a", ae.EvalStatus.NOT_EVALUATED),
        (2, "b", ae.EvalStatus.NOT_EVALUATED),
    ]
    assert [case.error_message for case in cases[2:]] == ["", ""]
    assert len(results.saved) == 1 and partial.num_runs == 2
    assert "the 4 finished case results were saved" in caplog.text
    rescored = ae.Evaluator(APP).rescore(partial)
    assert rescored.cases[["run_id", "eval_id", "status"]].values.tolist() == [
        [run, eval_id, "passed"] for run in (1, 2) for eval_id in "ab"
    ]


def test_a_cancelled_evaluation_keeps_the_cases_already_scored() -> None:
    results = RecordingResultManager()
    blocked = asyncio.Event()

    async def stuck_on_c(text: str) -> str:
        if text == "say c":
            blocked.set()
            await asyncio.sleep(60)
        return echo(text)

    ev = ae.Evaluator(
        APP,
        stuck_on_c,
        eval_set_manager=fill([make_case(eval_id) for eval_id in "abc"]),
        result_manager=results,
        progress=False,
    )

    async def cancel_when_stuck() -> BaseException:
        task = asyncio.create_task(ev.aevaluate(SET, metrics=[final_response()]))
        await blocked.wait()
        await asyncio.sleep(0.01)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError as exc:
            return exc
        raise AssertionError("the evaluation was not cancelled")

    error = run_sync(cancel_when_stuck())

    partial: ae.EvaluationReport = error.report  # type: ignore[attr-defined]
    # a and b were scored while c was still running: they are kept scored, not just inferred.
    assert [(case.eval_id, case.final_eval_status) for case in partial.result.eval_case_results] == [
        ("a", ae.EvalStatus.PASSED),
        ("b", ae.EvalStatus.PASSED),
    ]
    assert len(results.saved) == 1


# ---------------------------------------------------------------------------------------------- progress


def test_progress_counts_every_case_and_knows_each_run_s_total_from_the_start() -> None:
    bar = TextProgress(io.StringIO(), width=120, min_interval=0, refresh=None)
    totals: list[tuple[int, int]] = []

    def look(context: ae.EvalContext, args: AfterEvaluateCaseArgs) -> None:
        run = bar.runs[args.run_id - 1]
        totals.append((run.inference_total, run.evaluation_total))

    callbacks = bar.callbacks().merged(ae.Callbacks().register_after_evaluate_case("look", look))
    cases = [make_case(eval_id) for eval_id in "abcd"]
    ev = ae.Evaluator(APP, agent, eval_set_manager=fill(cases), callbacks=callbacks, num_runs=2, progress=False)
    bar.start(title=SET, num_runs=2, cases_per_run=4, metric_names=["final_response_avg_score"])

    report = ev.evaluate(SET, metrics=[final_response()], parallel_runs=True)
    bar.finish(report=report)

    assert set(totals) == {(4, 4)}
    assert [(run.inference_done, run.evaluation_done) for run in bar.runs] == [(4, 4), (4, 4)]
    assert [(run.passed, run.failed, run.errors) for run in bar.runs] == [(2, 1, 1), (2, 1, 1)]
    assert [run.phase for run in bar.runs] == ["done", "done"]
    assert bar.outcome == "failed"
