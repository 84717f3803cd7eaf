"""Iterating without re-running the agent: rescore, reaggregate, with_thresholds, load, compare."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agenteval as ae
from agenteval._util.sync_bridge import run_sync
from agenteval.aggregation import AggregationInput, AggregationResult
from agenteval.examples.math import APP_NAME, DATA_DIR, EVAL_SET_ID, calculator_agent
from agenteval.metric.criterion import Criterion, FinalResponseCriterion, TextCriterion, TextMatchStrategy
from agenteval.service import EvaluateConfig, EvaluateRequest, LocalService


class CountingAgent:
    """The example agent, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, message: str, turn: ae.Turn) -> str:
        self.calls += 1
        return calculator_agent(message, turn)


def _evaluator(agent: Any, **options: Any) -> ae.Evaluator:
    return ae.Evaluator(
        APP_NAME,
        agent,
        eval_set_manager=ae.LocalEvalSetManager(DATA_DIR),
        metric_manager=ae.LocalMetricManager(DATA_DIR),
        **options,
    )


def _contains_metric(threshold: float = 1.0) -> ae.EvalMetric:
    return ae.EvalMetric(
        metric_name="mentions_result",
        evaluator_name="final_response_avg_score",
        threshold=threshold,
        criterion=Criterion(
            final_response=FinalResponseCriterion(text=TextCriterion(match_strategy=TextMatchStrategy.CONTAINS))
        ),
    )


def _weighted(data: AggregationInput) -> AggregationResult:
    """Tool calls count 0.7, the final response 0.3; a case passes at 0.7."""
    weights = {"tool_trajectory_avg_score": 0.7, "final_response_avg_score": 0.3}
    score = sum(weights.get(result.metric_name, 0.0) * result.score for result in data.metric_results)
    return AggregationResult(score=score, status=ae.EvalStatus.PASSED if score >= 0.7 else ae.EvalStatus.FAILED)


def _case_view(report: ae.EvaluationReport) -> list[tuple[int, str, str, float]]:
    return [
        (case.run_id, case.eval_id, str(case.final_eval_status), round(case.score, 9))
        for case in report.result.eval_case_results
    ]


NO_EVAL_SET = r"this report has no eval set.*rebuilt from the result.*EvaluationReport\.load\(\.\.\., eval_set=\.\.\.\)"
"""How the warning reads when a report without its eval set is re-aggregated by a custom aggregator."""


@pytest.fixture
def report_and_agent() -> tuple[ae.EvaluationReport, CountingAgent]:
    agent = CountingAgent()
    report = _evaluator(agent, num_runs=2).evaluate(EVAL_SET_ID)
    return report, agent


def test_rescore_never_calls_the_agent_and_equals_scoring_the_same_turns(
    report_and_agent: tuple[ae.EvaluationReport, CountingAgent],
) -> None:
    report, agent = report_and_agent
    calls = agent.calls
    evaluator = _evaluator(agent)
    metrics = [*report.eval_metrics, _contains_metric()]

    rescored = evaluator.rescore(report, metrics=metrics)

    assert agent.calls == calls
    assert [m.metric_name for m in rescored.eval_metrics] == [
        "tool_trajectory_avg_score",
        "final_response_avg_score",
        "mentions_result",
    ]
    service = LocalService(agent, eval_set_manager=ae.LocalEvalSetManager(DATA_DIR))
    for run_id, inferences in enumerate(report.inference_results, start=1):
        direct = run_sync(
            service.evaluate(
                EvaluateRequest(
                    app_name=APP_NAME,
                    eval_set_id=EVAL_SET_ID,
                    inference_results=inferences,
                    evaluate_config=EvaluateConfig(eval_metrics=metrics),
                )
            )
        )
        rescored_run = [case for case in rescored.result.eval_case_results if case.run_id == run_id]
        assert [case.model_copy(update={"run_id": 0}) for case in rescored_run] == direct.eval_case_results
    assert rescored.provenance is not None and rescored.provenance.derived_from.startswith("rescore of ")
    assert report.eval_metrics != rescored.eval_metrics  # the original report is unchanged
    assert len(report.result.eval_case_results[0].overall_eval_metric_results) == 2


def test_reaggregate_never_calls_the_agent_and_equals_a_run_with_that_aggregator(
    report_and_agent: tuple[ae.EvaluationReport, CountingAgent],
) -> None:
    report, agent = report_and_agent
    calls = agent.calls
    before = _case_view(report)

    weighted = report.reaggregate(_weighted)

    assert agent.calls == calls
    assert _case_view(report) == before
    rescored = _evaluator(agent).rescore(report, aggregator=_weighted)
    assert _case_view(weighted) == _case_view(rescored)
    power = [case for case in weighted.result.eval_case_results if case.eval_id == "calc_power"]
    assert {case.score for case in power} == {0.0}
    assert weighted.result.summary is not None and rescored.result.summary is not None
    assert weighted.result.summary.eval_case_summaries == rescored.result.summary.eval_case_summaries
    assert weighted.result.summary.overall_status == rescored.result.summary.overall_status


def test_with_thresholds_recomputes_statuses_from_stored_scores(
    report_and_agent: tuple[ae.EvaluationReport, CountingAgent],
) -> None:
    report, agent = report_and_agent
    calls = agent.calls
    lenient = report.with_thresholds({"tool_trajectory_avg_score": 0.0, "final_response_avg_score": 0.0})

    assert agent.calls == calls
    assert lenient.overall_status is ae.EvalStatus.PASSED
    assert report.overall_status is ae.EvalStatus.FAILED
    assert set(lenient.metrics["threshold"]) == {0.0}
    assert set(lenient.invocations["status"]) == {"passed"}
    assert lenient.provenance is not None
    assert lenient.provenance.derived_from == f"with_thresholds of {report.result.eval_set_result_id}"
    rerun = _evaluator(agent).rescore(
        report, metrics=[metric.model_copy(update={"threshold": 0.0}) for metric in report.eval_metrics]
    )
    assert _case_view(lenient) == _case_view(rerun)
    assert lenient.metrics.equals(rerun.metrics)


def test_with_thresholds_rejects_unknown_metric_names(
    report_and_agent: tuple[ae.EvaluationReport, CountingAgent],
) -> None:
    report, _ = report_and_agent
    with pytest.raises(ae.ConfigError, match="no metric named"):
        report.with_thresholds({"typo_score": 0.5})


def test_a_failing_aggregator_keeps_the_metric_results_so_a_fix_can_be_tried(
    report_and_agent: tuple[ae.EvaluationReport, CountingAgent],
) -> None:
    report, _ = report_and_agent

    def broken(data: AggregationInput) -> AggregationResult:
        raise KeyError("weight")

    failed = report.reaggregate(broken)
    assert set(failed.cases["status"]) == {"failed"}
    assert all("aggregate eval case result: KeyError" in message for message in failed.cases["error_message"])
    assert len(failed.metrics) == len(report.metrics)

    fixed = failed.reaggregate(_weighted)
    assert _case_view(fixed) == _case_view(report.reaggregate(_weighted))


def test_a_saved_report_loads_back_and_can_be_rescored(
    report_and_agent: tuple[ae.EvaluationReport, CountingAgent], tmp_path: Path
) -> None:
    report, agent = report_and_agent
    store = ae.LocalEvalResultManager(tmp_path)
    result_id = report.save(store)

    from_file = ae.EvaluationReport.load(tmp_path / APP_NAME / f"{result_id}.evalset_result.json")
    from_store = ae.EvaluationReport.load(store, APP_NAME, result_id, eval_set=report.eval_set)

    for loaded in (from_file, from_store):
        assert loaded.app_name == APP_NAME
        assert loaded.num_runs == 2
        assert loaded.overall_status == report.overall_status
        assert [m.metric_name for m in loaded.eval_metrics] == [m.metric_name for m in report.eval_metrics]
        assert loaded.provenance is not None and report.provenance is not None
        assert loaded.provenance.eval_set_hash == report.provenance.eval_set_hash
        assert loaded.cases.equals(report.cases)
    calls = agent.calls
    for loaded in (from_file, from_store):
        rescored = _evaluator(agent).rescore(loaded)
        assert agent.calls == calls
        assert _case_view(rescored) == _case_view(report)
    # A result that does not hold its eval set (the reference's, an older agenteval's) cannot be re-scored alone.
    older = ae.EvaluationReport.load(_written_without_its_eval_set(report, tmp_path / "older"))
    with pytest.raises(ae.ConfigError, match="no eval set"):
        _evaluator(agent).rescore(older)


def test_compare_lines_up_cases_and_metrics(report_and_agent: tuple[ae.EvaluationReport, CountingAgent]) -> None:
    report, _ = report_and_agent
    strict = report.with_thresholds({"final_response_avg_score": 1.0})
    lenient = report.with_thresholds({"tool_trajectory_avg_score": 0.0, "final_response_avg_score": 0.0})

    diff = ae.compare(strict, lenient)

    table = diff.table
    assert list(table.columns)[:4] == ["eval_id", "metric_name", "baseline_score", "candidate_score"]
    power = table[table["eval_id"] == "calc_power"].set_index("metric_name")
    assert power.loc["tool_trajectory_avg_score", "change"] == "fixed"
    assert power.loc["tool_trajectory_avg_score", "baseline_pass_rate"] == 0.0
    assert power.loc["tool_trajectory_avg_score", "candidate_pass_rate"] == 1.0
    assert power.loc["tool_trajectory_avg_score", "score_change"] == 0.0
    assert len(diff.fixes) == 2 and len(diff.regressions) == 0
    assert diff.summary["cases"]["fixed"] == 1
    assert diff.summary["same_eval_set"] is True
    back = ae.compare(lenient, strict)
    assert len(back.regressions) == 2
    assert "Metric regressions (2)" in back._repr_html_()


def _crashes_on(message_part: str, every: int = 1) -> Any:
    """The example agent, raising on turns whose message contains ``message_part`` (every ``every``-th time)."""
    seen: list[str] = []

    def agent(message: str, turn: ae.Turn) -> str:
        if message_part in message:
            seen.append(message)
            if len(seen) % every == 0:
                raise RuntimeError("agent crashed")
        return calculator_agent(message, turn)

    return agent


def test_a_case_that_errors_in_the_candidate_is_a_regression_of_every_metric() -> None:
    baseline = _evaluator(calculator_agent).evaluate(EVAL_SET_ID)
    candidate = _evaluator(_crashes_on("calc add 2 3")).evaluate(EVAL_SET_ID)

    diff = ae.compare(baseline, candidate)

    add = diff.table[diff.table["eval_id"] == "calc_add"].set_index("metric_name")
    assert list(add.index) == [metric.metric_name for metric in baseline.eval_metrics]
    assert set(add["change"]) == {"regressed"}
    assert set(add["candidate_status"]) == {"failed"}
    assert add["candidate_score"].isna().all()
    assert add["candidate_pass_rate"].tolist() == [0.0, 0.0]
    assert sorted(diff.regressions["eval_id"]) == ["calc_add", "calc_add"]
    assert diff.summary["metrics"]["removed"] == 0
    assert "calc_add" in diff._repr_html_()
    back = ae.compare(candidate, baseline)
    assert sorted(back.fixes["eval_id"]) == ["calc_add", "calc_add"]


def test_a_run_that_errored_counts_against_the_metric_pass_rate() -> None:
    baseline = _evaluator(calculator_agent, num_runs=3).evaluate(EVAL_SET_ID)
    candidate = _evaluator(_crashes_on("calc add 2 3", every=3), num_runs=3).evaluate(EVAL_SET_ID)

    diff = ae.compare(baseline, candidate)

    add = diff.table[diff.table["eval_id"] == "calc_add"].set_index("metric_name")
    assert add["candidate_pass_rate"].round(6).tolist() == [0.666667, 0.666667]
    assert add["pass_rate_change"].round(6).tolist() == [-0.333333, -0.333333]
    [case] = diff.cases[diff.cases["eval_id"] == "calc_add"].to_dict("records")
    assert round(case["candidate_pass_rate"], 6) == 0.666667


def test_compare_reports_of_different_case_sets() -> None:
    baseline = _evaluator(calculator_agent).evaluate(EVAL_SET_ID, eval_case_ids=["calc_add", "calc_power"])
    candidate = _evaluator(calculator_agent).evaluate(EVAL_SET_ID, eval_case_ids=["calc_add", "calc_multiply"])

    diff = ae.compare(baseline, candidate)

    changes = {eval_id: set(frame["change"]) for eval_id, frame in diff.table.groupby("eval_id")}
    assert changes == {"calc_add": {"unchanged"}, "calc_multiply": {"new"}, "calc_power": {"removed"}}
    assert dict(zip(diff.cases["eval_id"], diff.cases["change"], strict=True)) == {
        "calc_add": "unchanged",
        "calc_multiply": "new",
        "calc_power": "removed",
    }


def test_the_saved_provenance_records_the_versions_that_wrote_it(
    report_and_agent: tuple[ae.EvaluationReport, CountingAgent], tmp_path: Path
) -> None:
    import json
    import sys

    from agenteval.evalresult.provenance import package_version

    report, _ = report_and_agent
    result_id = report.save(ae.LocalEvalResultManager(tmp_path))
    path = tmp_path / APP_NAME / f"{result_id}.evalset_result.json"
    saved = json.loads(path.read_text())["summary"]["provenance"]
    assert saved["agentevalVersion"] == package_version()
    assert saved["pythonVersion"] == sys.version.split()[0]
    assert saved["platform"]

    saved["pythonVersion"] = "3.99.0"
    document = json.loads(path.read_text())
    document["summary"]["provenance"] = saved
    path.write_text(json.dumps(document))
    loaded = ae.EvaluationReport.load(path)
    assert loaded.provenance is not None and loaded.provenance.python_version == "3.99.0"
    assert "3.99.0" in loaded.to_html(tmp_path / "report.html").read_text()


def test_derived_reports_record_their_own_metrics_hash(
    report_and_agent: tuple[ae.EvaluationReport, CountingAgent],
) -> None:
    from agenteval.evalresult.provenance import content_hash

    report, _ = report_and_agent
    lenient = report.with_thresholds({"final_response_avg_score": 0.0})

    assert lenient.provenance is not None and report.provenance is not None
    assert lenient.provenance.metrics_hash == content_hash(lenient.eval_metrics)
    assert lenient.provenance.metrics_hash != report.provenance.metrics_hash
    assert lenient.provenance.derived_from.startswith("with_thresholds of ")


REFERENCE_RESULTS = Path(__file__).parent / "interop" / "trpc-examples"
CASE_AGGREGATION_RESULT = next((REFERENCE_RESULTS / "caseaggregation" / "output").rglob("*.evalset_result.json"))
ALL_PASS_RESULT = next((REFERENCE_RESULTS / "local" / "output").rglob("*.evalset_result.json"))


def _support_weighted(data: AggregationInput) -> AggregationResult:
    """The reference example's aggregator: a substantive answer weighs 0.8, the length limit 0.2."""
    weights = {"answer_is_substantive": 0.8, "max_six_chars": 0.2}
    score = sum(weights[result.metric_name] * result.score for result in data.metric_results)
    return AggregationResult(score=score, status=ae.EvalStatus.PASSED if score >= 0.8 else ae.EvalStatus.FAILED)


def _same_thresholds(report: ae.EvaluationReport) -> dict[str, float]:
    return {metric.metric_name: metric.threshold for metric in report.eval_metrics}


def test_with_thresholds_on_a_reference_result_of_another_aggregator_needs_that_aggregator() -> None:
    report = ae.EvaluationReport.load(CASE_AGGREGATION_RESULT)
    assert _case_view(report) == [(1, "support_weighted_tradeoff", "passed", 0.8)]

    with pytest.raises(
        ae.ConfigError,
        match=r"stored case scores \(e\.g\. case support_weighted_tradeoff: 0\.8, passed\) were not produced by"
        r" the all-pass aggregator.*aggregator=\.\.\.",
    ):
        report.with_thresholds(_same_thresholds(report))

    # The reference's result holds no eval set: the aggregator gets the cases rebuilt from it.
    with pytest.warns(ae.errors.MissingEvalSetWarning, match=NO_EVAL_SET):
        again = report.with_thresholds(_same_thresholds(report), aggregator=_support_weighted)
    assert _case_view(again) == _case_view(report)


def test_with_thresholds_on_a_reference_result_of_all_pass_needs_no_aggregator() -> None:
    report = ae.EvaluationReport.load(ALL_PASS_RESULT)

    same = report.with_thresholds(_same_thresholds(report))

    assert [status for _, _, status, _ in _case_view(same)] == [status for _, _, status, _ in _case_view(report)]
    assert isinstance(same.aggregator, ae.AllPassAggregator)


def test_thresholds_may_be_numpy_numbers(report_and_agent: tuple[ae.EvaluationReport, CountingAgent]) -> None:
    import numpy as np

    report, _ = report_and_agent

    # As a DataFrame hands them out; NumPy scalars other than float64 are not typed as float.
    thresholds: dict[str, Any] = {"final_response_avg_score": np.int64(0), "tool_trajectory_avg_score": np.float32(0)}
    lenient = report.with_thresholds(thresholds)

    assert set(lenient.metrics["threshold"]) == {0.0}
    assert all(type(metric.threshold) is float for metric in lenient.eval_metrics)
    for bad in (True, np.bool_(True), "0.5", float("nan"), np.float64("inf")):
        with pytest.raises(ae.ConfigError, match="the threshold of final_response_avg_score must be a finite number"):
            report.with_thresholds({"final_response_avg_score": bad})  # type: ignore[dict-item]


def _always_passes(data: AggregationInput) -> AggregationResult:
    return AggregationResult(score=1.0, status=ae.EvalStatus.PASSED)


def test_with_several_runs_reaggregate_decides_the_runs_and_the_overall_status() -> None:
    """As documented in ``reaggregate``: across runs the aggregator decides each case too."""
    report = _evaluator(calculator_agent, num_runs=2).evaluate(EVAL_SET_ID)
    seen: list[int] = []

    def lenient_across_runs(data: AggregationInput) -> AggregationResult:
        seen.append(len(data.runs))
        return _always_passes(data)

    lenient = report.reaggregate(lenient_across_runs)

    assert set(lenient.cases["status"]) == {"passed"}
    power = lenient.case_table.set_index("eval_id").loc["calc_power"]
    assert (power["pass_rate"], power["mean_score"], power["status"], power["score"]) == (1.0, 1.0, "passed", 1.0)
    assert report.case_table.set_index("eval_id").loc["calc_power", "status"] == "failed"
    assert lenient.overall_status is ae.EvalStatus.PASSED
    assert lenient.result.summary is not None and lenient.result.summary.overall_status is ae.EvalStatus.PASSED
    assert lenient.set_pass_at_k(1) == 1.0 and report.set_pass_at_k(1) == 0.0
    # Once per case in each of the two runs, then once per case across the runs.
    cases = len(report.case_summaries)
    assert sorted(seen) == [0] * (2 * cases) + [2] * cases

    one_run = _evaluator(calculator_agent).evaluate(EVAL_SET_ID).reaggregate(_always_passes)
    assert set(one_run.case_table["status"]) == {"passed"}
    assert one_run.overall_status is ae.EvalStatus.PASSED


def test_a_report_loaded_without_its_eval_set_keeps_the_eval_set_order(tmp_path: Path) -> None:
    report = _evaluator(calculator_agent, num_runs=2).evaluate(EVAL_SET_ID)
    result_id = report.save(ae.LocalEvalResultManager(tmp_path))
    order = [case.eval_id for case in report.eval_set.eval_cases] if report.eval_set is not None else []
    assert order != sorted(order)

    loaded = ae.EvaluationReport.load(tmp_path / APP_NAME / f"{result_id}.evalset_result.json")

    assert list(loaded.case_table["eval_id"]) == list(report.case_table["eval_id"]) == order
    assert [summary.eval_id for summary in loaded.reaggregate(_weighted).case_summaries] == order
    shuffled = report.eval_set.model_copy(update={"eval_cases": report.eval_set.eval_cases[::-1]})  # type: ignore[union-attr]
    with_set = ae.EvaluationReport.load(tmp_path / APP_NAME / f"{result_id}.evalset_result.json", eval_set=shuffled)
    assert list(with_set.case_table["eval_id"]) == order[::-1]


def test_loading_an_eval_set_file_as_a_result_fails_clearly() -> None:
    path = Path(DATA_DIR) / APP_NAME / f"{EVAL_SET_ID}.evalset.json"

    with pytest.raises(ae.ConfigError, match=r"is not an eval set result: it has evalCases, so it is an eval set file"):
        ae.EvaluationReport.load(path)


def test_loaded_and_derived_reports_know_their_duration(
    report_and_agent: tuple[ae.EvaluationReport, CountingAgent], tmp_path: Path
) -> None:
    report, _ = report_and_agent
    result_id = report.save(ae.LocalEvalResultManager(tmp_path))
    assert report.provenance is not None
    assert report.provenance.started_at is not None and report.provenance.finished_at is not None

    loaded = ae.EvaluationReport.load(tmp_path / APP_NAME / f"{result_id}.evalset_result.json")
    derived = [loaded.reaggregate(_weighted), loaded.with_thresholds({}), report.with_thresholds({})]

    assert loaded.execution_time == pytest.approx(report.provenance.finished_at - report.provenance.started_at)
    assert loaded.execution_time > 0
    for other in derived:
        assert 0 < other.execution_time < 5
        assert other.provenance is not None and other.provenance.started_at is not None
        assert other.provenance.finished_at == pytest.approx(other.provenance.started_at + other.execution_time)
    assert ae.EvaluationReport.load(ALL_PASS_RESULT).execution_time == 0.0  # no provenance: unknown


@pytest.mark.parametrize(
    "path",
    sorted(REFERENCE_RESULTS.rglob("*.evalset_result.json")),
    ids=lambda path: path.name[:40],
)
def test_results_written_by_the_reference_can_be_reaggregated(path: Path) -> None:
    report = ae.EvaluationReport.load(path)

    # The case-aggregation example was not aggregated by all-pass, so it must be named (see below).
    if path == CASE_AGGREGATION_RESULT:
        with pytest.warns(ae.errors.MissingEvalSetWarning, match=NO_EVAL_SET):
            same = report.with_thresholds({}, aggregator=_support_weighted)
    else:
        same = report.with_thresholds({})
    again = report.reaggregate(ae.AllPassAggregator())

    for derived in (same, again):
        assert [case.eval_id for case in derived.result.eval_case_results] == [
            case.eval_id for case in report.result.eval_case_results
        ]
        assert derived.result.summary is not None


def test_with_thresholds_on_a_loaded_report_needs_its_custom_aggregator_again(tmp_path: Path) -> None:
    report = _evaluator(calculator_agent, aggregator=_weighted).evaluate(EVAL_SET_ID)
    result_id = report.save(ae.LocalEvalResultManager(tmp_path))
    loaded = ae.EvaluationReport.load(tmp_path / APP_NAME / f"{result_id}.evalset_result.json")

    with pytest.raises(ae.ConfigError, match=r"aggregated by tests\.test_reanalysis\._weighted,.*aggregator=\.\.\."):
        loaded.with_thresholds({"final_response_avg_score": 1.0})
    again = loaded.with_thresholds({"final_response_avg_score": 1.0}, aggregator=_weighted)
    assert _case_view(again) == _case_view(report.with_thresholds({"final_response_avg_score": 1.0}))

    default = _evaluator(calculator_agent).evaluate(EVAL_SET_ID)
    default_id = default.save(ae.LocalEvalResultManager(tmp_path))
    plain = ae.EvaluationReport.load(tmp_path / APP_NAME / f"{default_id}.evalset_result.json")
    assert _case_view(plain.with_thresholds({})) == _case_view(default)


def test_deriving_a_report_leaves_the_original_unchanged(
    report_and_agent: tuple[ae.EvaluationReport, CountingAgent],
) -> None:
    report, agent = report_and_agent
    before = report.result.model_dump()
    inferences_before = [[inference.model_dump() for inference in run] for run in report.inference_results]

    derived = [
        report.reaggregate(_weighted),
        report.with_thresholds({"final_response_avg_score": 0.5}),
        _evaluator(agent).rescore(report),
    ]

    assert all(other.result.model_dump() != before for other in derived[:2])
    assert report.result.model_dump() == before
    assert [[inference.model_dump() for inference in run] for run in report.inference_results] == inferences_before


def test_derived_reports_share_what_they_did_not_change(
    report_and_agent: tuple[ae.EvaluationReport, CountingAgent],
) -> None:
    # Keeping many derived reports of a large evaluation in a notebook costs little memory.
    report, _ = report_and_agent
    original = report.result.eval_case_results[0]
    by_name = {result.metric_name: result for result in original.overall_eval_metric_results}

    regrouped = report.reaggregate(_weighted).result.eval_case_results[0]
    rethresholded = report.with_thresholds({"final_response_avg_score": 0.5}).result.eval_case_results[0]

    assert regrouped is not original
    assert regrouped.overall_eval_metric_results == original.overall_eval_metric_results
    pairs = zip(regrouped.overall_eval_metric_results, original.overall_eval_metric_results, strict=True)
    assert all(new is old for new, old in pairs)
    changed = {result.metric_name: result for result in rethresholded.overall_eval_metric_results}
    assert changed["final_response_avg_score"] is not by_name["final_response_avg_score"]
    assert changed["final_response_avg_score"].threshold == 0.5
    assert by_name["final_response_avg_score"].threshold != 0.5
    assert changed["tool_trajectory_avg_score"] is by_name["tool_trajectory_avg_score"]


def test_a_result_file_moved_out_of_its_app_folder_keeps_its_app(
    report_and_agent: tuple[ae.EvaluationReport, CountingAgent], tmp_path: Path
) -> None:
    report, _ = report_and_agent
    result_id = report.save(ae.LocalEvalResultManager(tmp_path))
    moved = tmp_path / "Downloads" / "result.json"
    moved.parent.mkdir()
    (tmp_path / APP_NAME / f"{result_id}.evalset_result.json").rename(moved)

    assert ae.EvaluationReport.load(moved).app_name == APP_NAME
    assert ae.EvaluationReport.load(moved, app_name="other").app_name == "other"


def test_a_case_whose_aggregator_failed_is_a_regression_not_a_removal() -> None:
    def broken(data: AggregationInput) -> AggregationResult:
        raise KeyError("weight")

    baseline = _evaluator(calculator_agent).evaluate(EVAL_SET_ID, eval_case_ids=["calc_add"])
    candidate = _evaluator(calculator_agent, aggregator=broken).evaluate(EVAL_SET_ID, eval_case_ids=["calc_add"])

    diff = ae.compare(baseline, candidate)

    assert set(diff.table["change"]) == {"regressed"}
    assert set(diff.table["candidate_status"]) == {"failed"}
    assert diff.table["candidate_pass_rate"].tolist() == [0.0, 0.0]
    assert diff.cases["change"].tolist() == ["regressed"]


def _write_result(tmp_path: Path, cases: list[dict[str, Any]]) -> Path:
    path = tmp_path / APP_NAME / "r.evalset_result.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"evalSetResultId": "r", "evalCaseResults": cases}))
    return path


@pytest.mark.parametrize(
    ("cases", "problem"),
    [
        ([{}], "evalCaseResults[0] has no evalId: give it the evalId of the eval case it is a result of"),
        (
            [{"evalId": "a", "finalEvalStatus": "passed"}, {"evalId": "b", "runId": 1}],
            "evalCaseResults[1] (case b) has no finalEvalStatus: set it to passed, failed or not_evaluated",
        ),
        (
            [{"evalId": "a", "finalEvalStatus": "unknown"}],
            "evalCaseResults[0] (case a) has finalEvalStatus unknown, which a report cannot summarize: "
            "set it to passed, failed or not_evaluated",
        ),
    ],
    ids=["no-eval-id", "no-final-status", "unknown-status"],
)
def test_a_result_with_an_unplaceable_case_is_refused_naming_the_result_and_field(
    tmp_path: Path, cases: list[dict[str, Any]], problem: str
) -> None:
    path = _write_result(tmp_path, cases)
    manager = ae.LocalEvalResultManager(tmp_path)
    # The store stays lenient, as the reference's is; only a report needs every case placed.
    assert len(run_sync(manager.get(APP_NAME, "r")).eval_case_results) == len(cases)

    with pytest.raises(ae.ConfigError) as from_file:
        ae.EvaluationReport.load(path)
    with pytest.raises(ae.ConfigError) as from_store:
        ae.EvaluationReport.load(manager, APP_NAME, "r")
    with pytest.raises(ae.ConfigError) as unsaved:
        ae.EvaluationReport.from_result(ae.EvalSetResult.model_validate({"evalCaseResults": cases}))

    assert str(from_file.value) == f"result file {path}: {problem}"
    assert str(from_store.value) == f"result r: {problem}"
    assert str(unsaved.value) == f"result (without an evalSetResultId): {problem}"


@pytest.mark.parametrize("threshold", [80, -3])
def test_with_thresholds_refuses_a_threshold_outside_the_score_range(threshold: float) -> None:
    report = _evaluator(calculator_agent).evaluate(EVAL_SET_ID)

    with pytest.raises(ae.ConfigError, match=r"^the threshold of final_response_avg_score: threshold .* is outside"):
        report.with_thresholds({"final_response_avg_score": threshold})


def test_loading_a_result_with_another_eval_set_is_refused(tmp_path: Path) -> None:
    report = _evaluator(calculator_agent).evaluate(EVAL_SET_ID)
    result_id = report.save(ae.LocalEvalResultManager(tmp_path))
    other = ae.EvalSet.of("other", [ae.EvalCase.of("x", "hi")])

    with pytest.raises(ae.ConfigError, match=r"is of eval set 'math-basic', but eval_set= is 'other'"):
        ae.EvaluationReport.load(tmp_path / APP_NAME / f"{result_id}.evalset_result.json", eval_set=other)


# ------------------------------------------------------------------ aggregators see the whole case, turn by turn

TRIP = ae.EvalSet.of(
    "trips",
    [
        ae.EvalCase.of(
            "trip",
            ae.Invocation.of("Weather in Paris?", "Sunny"),
            ae.Invocation.of("And in Rome?", "Rain"),
            ae.Invocation.of("And in Oslo?", "Snow"),
            user_id="ada",
        ),
        ae.EvalCase.of("paris", "Weather in Paris?", expect="Sunny"),
    ],
)


def _trip_agent(message: str) -> str:
    return "Sunny" if "Paris" in message else "Rain"  # wrong about Oslo


def _most_turns_pass(data: AggregationInput) -> AggregationResult:
    """A case passes when at least two thirds of its turns pass every metric (the case's turns as written)."""
    turns = len(data.eval_case.conversation)
    passed = sum(
        all(result.eval_status == ae.EvalStatus.PASSED for result in turn.eval_metric_results)
        for turn in data.metric_results_per_invocation
    )
    score = passed / turns
    return AggregationResult(score=score, status=ae.EvalStatus.PASSED if score >= 2 / 3 else ae.EvalStatus.FAILED)


def _written_without_its_eval_set(report: ae.EvaluationReport, directory: Path) -> Path:
    """The report saved as a result that does not carry its eval set (the reference's, an older agenteval's)."""
    result_id = report.save(ae.LocalEvalResultManager(directory))
    path = directory / report.app_name / f"{result_id}.evalset_result.json"
    written = json.loads(path.read_text())
    written["summary"]["provenance"].pop("evalSet", None)
    path.write_text(json.dumps(written))
    return path


def _trip_report(num_runs: int = 1) -> ae.EvaluationReport:
    return ae.Evaluator("trips-app", _trip_agent, progress=False, num_runs=num_runs).evaluate(
        TRIP, metrics=[ae.EvalMetric.final_response()]
    )


def test_without_its_eval_set_an_aggregator_gets_the_case_rebuilt_from_the_result_and_a_warning(
    tmp_path: Path,
) -> None:
    report = _trip_report()
    loaded = ae.EvaluationReport.load(_written_without_its_eval_set(report, tmp_path))
    assert loaded.eval_set is None

    with pytest.warns(ae.errors.MissingEvalSetWarning, match=NO_EVAL_SET):
        again = loaded.reaggregate(_most_turns_pass)

    expected = report.reaggregate(_most_turns_pass)
    assert (
        _case_view(again) == _case_view(expected) == [(1, "trip", "passed", 0.666666667), (1, "paris", "passed", 1.0)]
    )
    assert set(again.cases["error_message"]) == {""}
    with pytest.warns(ae.errors.MissingEvalSetWarning, match=NO_EVAL_SET):
        lenient = loaded.with_thresholds({"final_response_avg_score": 0.0}, aggregator=_most_turns_pass)
    assert _case_view(lenient) == [(1, "trip", "passed", 1.0), (1, "paris", "passed", 1.0)]


def test_the_rebuilt_case_holds_what_the_result_records(tmp_path: Path) -> None:
    seen: list[ae.EvalCase] = []

    def recording(data: AggregationInput) -> AggregationResult:
        seen.append(data.eval_case)
        return _always_passes(data)

    report = _trip_report(num_runs=2)
    loaded = ae.EvaluationReport.load(_written_without_its_eval_set(report, tmp_path))

    with pytest.warns(ae.errors.MissingEvalSetWarning):
        loaded.reaggregate(recording)

    # Twice per case in the runs, once more across them.
    trips = [case for case in seen if case.eval_id == "trip"]
    assert len(trips) == 3
    written = TRIP.eval_cases[0]
    for case in trips:
        assert [turn.user_content for turn in case.conversation] == [turn.user_content for turn in written.conversation]
        assert [turn.final_response for turn in case.conversation] == [
            turn.final_response for turn in written.conversation
        ]
        assert case.session_input is not None and case.session_input.user_id == "ada"
        assert case.session_input.app_name == "trips-app"


def test_the_built_in_aggregators_need_no_case_and_no_warning(tmp_path: Path) -> None:
    loaded = ae.EvaluationReport.load(_written_without_its_eval_set(_trip_report(num_runs=2), tmp_path))

    loaded.reaggregate(ae.AllPassAggregator())
    loaded.reaggregate(ae.aggregation.at_least_k(1))
    loaded.with_thresholds({"final_response_avg_score": 0.5})


def test_with_new_thresholds_the_turns_an_aggregator_sees_are_rethresholded() -> None:
    report = _trip_report()
    seen: list[list[str]] = []

    def recording(data: AggregationInput) -> AggregationResult:
        seen.append(
            [
                str(result.eval_status)
                for turn in data.metric_results_per_invocation
                for result in turn.eval_metric_results
            ]
        )
        return _most_turns_pass(data)

    report.reaggregate(recording)
    assert seen == [["passed", "passed", "failed"], ["passed"]]
    seen.clear()
    report.with_thresholds({"final_response_avg_score": 0.0}, aggregator=recording)
    assert seen == [["passed", "passed", "passed"], ["passed"]]
