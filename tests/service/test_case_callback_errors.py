"""A case-level callback that raises, through ``Evaluator.evaluate``: what fails, what stops, what is kept.

As in the reference: an inference-case callback's error fails only its case (error type ``callback``); an
evaluate-case callback's error stops the run once its other cases are scored, and the partial report keeps
every case scored by then, the one whose ``after_evaluate_case`` callback raised included.
"""

from __future__ import annotations

from typing import Any

import pytest

import agenteval as ae
from agenteval._util.sync_bridge import run_sync
from agenteval.context import EvalContext
from agenteval.errors import CallbackError
from agenteval.service.callbacks import Callback, Callbacks

APP = "callbacks-app"
METRICS = [ae.EvalMetric.final_response()]


def letters() -> ae.EvalSet:
    return ae.EvalSet.of("letters", [ae.EvalCase.of(name, name, expect=name.upper()) for name in "abc"])


CASE_OF = {
    "before_inference_case": lambda args: args.eval_case_id,
    "after_inference_case": lambda args: args.result.eval_case_id,
    "before_evaluate_case": lambda args: args.eval_case_id,
    "after_evaluate_case": lambda args: args.inference_result.eval_case_id,
}


def failing_case_b(point: str) -> Callbacks:
    def audit(context: EvalContext, args: Any) -> None:
        if CASE_OF[point](args) == "b":
            raise ValueError("audit log is full")

    return Callbacks().register("audit", Callback(**{point: audit}))


def evaluate(point: str, *, parallel: bool = True) -> ae.EvaluationReport:
    ev = ae.Evaluator(
        APP,
        str.upper,
        callbacks=failing_case_b(point),
        parallel_inference=parallel,
        parallel_evaluation=parallel,
        progress=False,
    )
    return ev.evaluate(letters(), metrics=METRICS)


def statuses(report: ae.EvaluationReport) -> dict[str, str]:
    return {case.eval_id: str(case.final_eval_status) for case in report.result.eval_case_results}


@pytest.mark.parametrize("parallel", [True, False])
def test_an_after_evaluate_case_error_stops_the_run_and_the_partial_report_keeps_that_case_scored(
    parallel: bool,
) -> None:
    with pytest.raises(CallbackError) as raised:
        evaluate("after_evaluate_case", parallel=parallel)

    message = str(raised.value)
    assert "evalCaseID=b" in message
    assert "AfterEvaluateCase callback[0] (audit): ValueError: audit log is full" in message
    partial: ae.EvaluationReport = raised.value.report  # type: ignore[attr-defined]
    assert partial.partial
    # Case b was scored before its callback raised; serial scoring stops there, parallel scores c too.
    expected = {"a": "passed", "b": "passed"} | ({"c": "passed"} if parallel else {"c": "not_evaluated"})
    assert statuses(partial) == expected
    assert partial.metrics.set_index("eval_id").loc["b", "score"] == 1.0


def test_a_before_evaluate_case_error_stops_the_run_and_the_partial_report_keeps_the_other_cases() -> None:
    with pytest.raises(CallbackError, match=r"evalCaseID=b.*BeforeEvaluateCase callback\[0\] \(audit\)") as raised:
        evaluate("before_evaluate_case")

    partial: ae.EvaluationReport = raised.value.report  # type: ignore[attr-defined]
    # b was answered but never scored: kept as not evaluated, so rescore(partial) scores it.
    assert statuses(partial) == {"a": "passed", "b": "not_evaluated", "c": "passed"}


@pytest.mark.parametrize("point", ["before_inference_case", "after_inference_case"])
def test_an_inference_case_callback_error_fails_only_its_case(point: str) -> None:
    report = evaluate(point)

    assert statuses(report) == {"a": "passed", "b": "failed", "c": "passed"}
    row = report.cases.set_index("eval_id").loc["b"]
    assert row["error_type"] == "callback"
    assert "audit log is full" in row["error_message"]


def test_an_observer_of_the_run_sees_the_case_whose_after_evaluate_case_callback_raised() -> None:
    async def main() -> int:
        run = ae.Evaluator(APP, str.upper, callbacks=failing_case_b("after_evaluate_case")).start(
            letters(), metrics=METRICS
        )
        with pytest.raises(CallbackError):
            await run
        return run.finished

    assert run_sync(main()) == 3
