"""A custom case aggregator decides a case across runs too, wherever a case's status is shown or saved."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

import agenteval as ae
from agenteval.aggregation import AggregationInput, AggregationResult
from tests.test_evaluation import APP, SET, final_response, make_case, turn

PASSED = ae.EvalStatus.PASSED
FAILED = ae.EvalStatus.FAILED


def always_pass(data: AggregationInput) -> AggregationResult:
    return AggregationResult(score=1.0, status=PASSED)


def eval_set() -> ae.EvalSet:
    return ae.EvalSet(eval_set_id=SET, eval_cases=[make_case("a", turn("hi", "hello")), make_case("b")])


def nope(text: str) -> str:
    return "nope"


def evaluate(
    agent: object = nope, num_runs: int = 3, *, cases: ae.EvalSet | None = None, **options: object
) -> ae.EvaluationReport:
    ev = ae.Evaluator(APP, agent, num_runs=num_runs, progress=False, **options)  # type: ignore[arg-type]
    return ev.evaluate(cases or eval_set(), metrics=[final_response()])


@pytest.mark.parametrize("num_runs", [1, 3])
def test_a_custom_aggregator_decides_the_case_whatever_num_runs(num_runs: int) -> None:
    report = evaluate(num_runs=num_runs, aggregator=always_pass)

    table = report.case_table
    assert list(table["status"]) == ["passed", "passed"]
    assert list(table["score"]) == [1.0, 1.0]
    assert list(table["pass_rate"]) == [1.0, 1.0]
    assert report.overall_status is PASSED
    assert report.result.summary is not None
    assert report.result.summary.overall_status is PASSED
    assert [summary.overall_status for summary in report.result.summary.eval_case_summaries] == [PASSED, PASSED]


def test_the_aggregator_sees_the_averaged_metrics_and_the_runs() -> None:
    replies = itertools.cycle(["hello", "wrong", "wrong"])
    seen: list[AggregationInput] = []

    def majority(data: AggregationInput) -> AggregationResult:
        if not data.runs:
            return ae.AllPassAggregator().aggregate(data)
        seen.append(data)
        passed = sum(run.final_eval_status == PASSED for run in data.runs)
        status = PASSED if passed * 2 > len(data.runs) else FAILED
        return AggregationResult(score=passed / len(data.runs), status=status)

    report = evaluate(lambda text: next(replies) if text == "hi" else text.removeprefix("say "), aggregator=majority)

    a = next(data for data in seen if data.eval_case.eval_id == "a")
    assert [run.run_id for run in a.runs] == [1, 2, 3]
    (averaged,) = a.metric_results
    assert averaged.metric_name == "final_response_avg_score"
    assert averaged.score == pytest.approx(1 / 3)
    assert averaged.eval_status is FAILED
    assert [metric.metric_name for metric in a.eval_metrics] == ["final_response_avg_score"]
    rows = report.case_table.set_index("eval_id")
    assert rows.loc["a", "status"] == "failed"
    assert rows.loc["a", "score"] == pytest.approx(1 / 3)
    assert (rows.loc["b", "status"], rows.loc["b", "score"]) == ("passed", 1.0)


def test_the_default_aggregator_keeps_the_reference_rule_and_summary() -> None:
    replies = itertools.cycle(["hello", "hello", "wrong"])
    report = evaluate(lambda text: next(replies) if text == "hi" else text.removeprefix("say "))

    rows = report.case_table.set_index("eval_id")
    # 2 runs of 3 passed: the averaged score 0.67 misses the threshold 1, so the case fails.
    assert (rows.loc["a", "status"], rows.loc["a", "score"]) == ("failed", 0.0)
    assert rows.loc["a", "pass_rate"] == pytest.approx(2 / 3)
    written = json.loads(report.result.to_json())
    # Nothing beyond the reference's summary fields: the default's score follows from the status.
    assert all("overallScore" not in case for case in written["summary"]["evalCaseSummaries"])
    assert all("errorMessage" not in case for case in written["summary"]["evalCaseSummaries"])


def test_the_saved_summary_records_a_custom_score_and_a_loaded_report_keeps_it(tmp_path: Path) -> None:
    def scaled(data: AggregationInput) -> AggregationResult:
        return AggregationResult(score=0.25 if data.runs else 0.5, status=PASSED)

    report = evaluate(aggregator=scaled, result_manager=ae.LocalEvalResultManager(tmp_path))
    path = tmp_path / APP / f"{report.result.eval_set_result_id}.evalset_result.json"
    written = json.loads(path.read_text())
    assert [case["overallScore"] for case in written["summary"]["evalCaseSummaries"]] == [0.25, 0.25]

    loaded = ae.EvaluationReport.load(path)
    assert list(loaded.case_table["status"]) == ["passed", "passed"]
    assert list(loaded.case_table["score"]) == [0.25, 0.25]
    assert list(loaded.case_table["mean_score"]) == [0.5, 0.5]
    assert loaded.overall_status is PASSED


def test_an_aggregator_that_raises_across_runs_fails_the_case_with_its_error() -> None:
    def broken_across_runs(data: AggregationInput) -> AggregationResult:
        if data.runs:
            raise RuntimeError("no verdict across runs")
        return AggregationResult(score=1.0, status=PASSED)

    report = evaluate(aggregator=broken_across_runs)

    assert list(report.case_table["status"]) == ["failed", "failed"]
    assert set(report.cases["status"]) == {"passed"}
    summary = report.case_summaries[0]
    assert summary.error_message.startswith("aggregate eval case result: RuntimeError: no verdict across runs")
    line = line_of('raise RuntimeError("no verdict across runs")')
    assert summary.error_message.endswith(f"{Path(__file__).name}:{line} in broken_across_runs)")
    assert report.result.summary is not None
    assert report.result.summary.eval_case_summaries[0].error_message == summary.error_message


def test_reaggregate_with_thresholds_rescore_and_compare_follow_the_aggregator() -> None:
    strict = evaluate()
    assert list(strict.case_table["status"]) == ["failed", "failed"]

    lenient = strict.reaggregate(always_pass)
    assert list(lenient.case_table["status"]) == ["passed", "passed"]
    assert lenient.overall_status is PASSED

    rethresholded = strict.with_thresholds({"final_response_avg_score": 1.0}, aggregator=always_pass)
    assert list(rethresholded.case_table["status"]) == ["passed", "passed"]

    rescored = ae.Evaluator(APP, progress=False).rescore(strict, aggregator=always_pass)
    assert list(rescored.case_table["status"]) == ["passed", "passed"]
    assert lenient.reaggregate(ae.AllPassAggregator()).overall_status is FAILED

    diff = ae.compare(strict, lenient)
    assert list(diff.cases["change"]) == ["fixed", "fixed"]
    assert list(diff.cases["candidate_status"]) == ["passed", "passed"]


def line_of(text: str) -> int:
    """The line of this file that holds ``text`` (once)."""
    (number,) = [
        n
        for n, line in enumerate(Path(__file__).read_text().splitlines(), start=1)
        if text in line and "line_of" not in line
    ]
    return number


def test_each_run_gives_its_turns_and_across_runs_they_are_in_the_runs() -> None:
    seen: list[AggregationInput] = []

    def recording(data: AggregationInput) -> AggregationResult:
        seen.append(data)
        return ae.AllPassAggregator().aggregate(data)

    report = evaluate(echo_two_turns, num_runs=2, aggregator=recording, cases=two_turn_set())

    per_run = [data for data in seen if not data.runs]
    across = [data for data in seen if data.runs]
    assert len(per_run) == 2 and len(across) == 1
    for data in per_run:
        assert [len(turn.eval_metric_results) for turn in data.metric_results_per_invocation] == [1, 1]
        assert [turn.eval_metric_results[0].eval_status for turn in data.metric_results_per_invocation] == [
            PASSED,
            FAILED,
        ]
    (data,) = across
    assert data.metric_results_per_invocation == ()
    assert [len(run.eval_metric_result_per_invocation) for run in data.runs] == [2, 2]
    assert report.case_table["status"].tolist() == ["failed"]


def two_turn_set() -> ae.EvalSet:
    return ae.EvalSet(eval_set_id=SET, eval_cases=[make_case("t", turn("say one", "one"), turn("say two", "2"))])


def echo_two_turns(text: str) -> str:
    return text.removeprefix("say ")


def _raises(text: str) -> str:
    raise RuntimeError("model down")


@pytest.mark.parametrize(
    "aggregator",
    [always_pass, ae.aggregation.mean_of_runs(0.0), ae.aggregation.at_least_k(1)],
    ids=["passes anything", "mean of runs at 0", "at least 1"],
)
def test_a_case_whose_every_run_errored_fails_whatever_the_aggregator(aggregator: object) -> None:
    report = evaluate(_raises, aggregator=aggregator)

    assert report.overall_status is FAILED
    table = report.case_table.set_index("eval_id")
    assert list(table["status"]) == ["failed", "failed"]
    assert list(table["score"]) == [0.0, 0.0]
    assert (table["error_type"] == "agent").all()
    # The table leaves out the reference's prefix, which repeats the row's case and session.
    assert str(table.loc["a", "error_message"]).startswith("run 1: RuntimeError: model down (raised at ")
