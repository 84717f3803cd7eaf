"""Loaded and derived reports read their records only when asked for, and are what the eager ones are.

``EvaluationReport.load`` of a file an evaluation wrote indexes it (each case's outcome and scores)
and leaves the turns unread; ``reaggregate`` and ``with_thresholds`` hold new outcomes and make their
records when read. Everything a user sees (tables, statuses, records, errors) must be what loading
the whole file, and deriving from the records, gives.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import agenteval as ae
from agenteval.aggregation import AggregationInput, AggregationResult
from agenteval.analysis._reanalysis import ReportData, _LazyInput, _Sources
from agenteval.analysis.report import report_from_result
from agenteval.evalresult.local import load_result_file
from tests.analysis.weather_cases import METRICS, weather_cases

APP = "lazy-app"

CASES = weather_cases("lazy-set")


def _agent(message: str) -> str:
    if "Explode" in message:
        raise RuntimeError("the agent blew up")
    return "Sunny" if "Paris" in message else "Rain"  # wrong about Oslo and Rome


def _evaluated(num_runs: int) -> ae.EvaluationReport:
    return ae.Evaluator(APP, _agent, progress=False, num_runs=num_runs).evaluate(CASES, metrics=METRICS)


@pytest.fixture(scope="module", params=[1, 2], ids=["one-run", "two-runs"])
def saved(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A result file an evaluation of ``CASES`` wrote (with failures, reasons, measures and an agent error)."""
    report = _evaluated(request.param)
    directory = tmp_path_factory.mktemp("results")
    result_id = report.save(ae.LocalEvalResultManager(directory))
    return directory / APP / f"{result_id}.evalset_result.json"


def _whole(path: Path) -> ae.EvaluationReport:
    """The report as loading the whole file makes it (what a lazy load must equal)."""
    return report_from_result(load_result_file(path), app_name=APP, source=f"result file {path}")


def _read(report: ae.EvaluationReport) -> bool:
    """Whether the report has read its records."""
    return "_unread_records" not in report.__dict__


def _frames(report: ae.EvaluationReport) -> list[pd.DataFrame]:
    return [report.cases, report.case_table, report.metrics]


def _assert_same_frames(report: ae.EvaluationReport, expected: ae.EvaluationReport) -> None:
    for frame, wanted in zip(_frames(report), _frames(expected), strict=True):
        pd.testing.assert_frame_equal(frame, wanted)


def _without_times(report: ae.EvaluationReport) -> dict[str, Any]:
    """The result's JSON without the times and environment a derivation records when it runs."""
    data: dict[str, Any] = report.result.to_dict()
    provenance = data.get("summary", {}).get("provenance", {})
    for key in ("startedAt", "finishedAt"):
        provenance.pop(key, None)
    return data


def _assert_same_records(report: ae.EvaluationReport, expected: ae.EvaluationReport) -> None:
    assert _without_times(report) == _without_times(expected)
    assert [
        (case.eval_id, case.overall_status, case.score, case.metric_results, case.error_message, case.runs)
        for case in report.case_summaries
    ] == [
        (case.eval_id, case.overall_status, case.score, case.metric_results, case.error_message, case.runs)
        for case in expected.case_summaries
    ]
    assert report.inference_results == expected.inference_results
    assert report.eval_set == expected.eval_set


# ------------------------------------------------------------------ a loaded report


def test_a_loaded_report_opens_without_reading_its_records_and_its_tables_are_the_whole_files(saved: Path) -> None:
    report, whole = ae.EvaluationReport.load(saved), _whole(saved)

    assert not _read(report)
    assert (report.overall_status, report.num_runs, report.eval_metrics, report.execution_time) == (
        whole.overall_status,
        whole.num_runs,
        whole.eval_metrics,
        whole.execution_time,
    )
    assert (report.metric_names, report.partial, report.reuse_summary) == (
        whole.metric_names,
        whole.partial,
        whole.reuse_summary,
    )
    assert repr(report) == repr(whole)
    _assert_same_frames(report, whole)
    assert "turn 3: " in " ".join(report.metrics["reason"]) or report.num_runs == 2
    assert not _read(report)


def test_a_loaded_report_reads_its_records_when_asked_and_they_are_the_whole_files(saved: Path) -> None:
    report, whole = ae.EvaluationReport.load(saved), _whole(saved)

    assert report.provenance == whole.provenance
    assert _read(report)
    _assert_same_records(report, whole)
    assert report.provenance is report.result.summary.provenance  # type: ignore[union-attr]
    assert report.eval_set is report.provenance.eval_set  # type: ignore[union-attr]
    _assert_same_frames(report, whole)
    assert report == whole


def test_a_loaded_report_shows_what_the_evaluation_returned(tmp_path: Path) -> None:
    evaluated = _evaluated(2)
    result_id = evaluated.save(ae.LocalEvalResultManager(tmp_path))

    loaded = ae.EvaluationReport.load(tmp_path / APP / f"{result_id}.evalset_result.json")

    assert not _read(loaded)
    _assert_same_frames(loaded, evaluated)
    assert loaded.overall_status == evaluated.overall_status


def test_a_file_in_another_layout_loads_whole_with_the_same_report(saved: Path, tmp_path: Path) -> None:
    compact = tmp_path / APP / saved.name
    compact.parent.mkdir()
    compact.write_text(json.dumps(json.loads(saved.read_text())), encoding="utf-8")

    report = ae.EvaluationReport.load(compact)

    assert _read(report)
    _assert_same_frames(report, _whole(saved))


_PARIS_END = '"\n    },\n    {\n      "evalSetId": "lazy-set",\n      "evalId": "boom"'
_PARIS_TURNS_END = '\n      ],\n      "sessionId"'


@pytest.mark.parametrize(
    ("edits", "indexed"),
    [
        # Whitespace the index does not cut at: still read by the index.
        ([('\n      "sessionId"', '\n   "sessionId"')], True),
        # The turns of a case, or the end of its metric results, where the layout does not put them.
        ([('\n      "evalMetricResultPerInvocation": [', '\n     "evalMetricResultPerInvocation": [')], False),
        (
            [('\n      ],\n      "evalMetricResultPerInvocation', '\n    ],\n      "evalMetricResultPerInvocation')],
            False,
        ),
        # A case's end re-indented: two cases in one part of the text; and its turns' end too, so that
        # cutting them out could reach into the next case (which has no turns: its agent failed).
        ([(_PARIS_END, _PARIS_END.replace("\n    },", "\n  },"))], False),
        (
            [(_PARIS_END, _PARIS_END.replace("\n    },", "\n  },")), (_PARIS_TURNS_END, '\n    ],\n      "sessionId"')],
            False,
        ),
    ],
    ids=["spaces", "turns-key", "metrics-end", "case-end", "case-and-turns-end"],
)
def test_a_hand_edit_of_the_layout_gives_the_same_report(
    saved: Path, tmp_path: Path, edits: list[tuple[str, str]], indexed: bool
) -> None:
    text = saved.read_text()
    paris = text.index('"evalId": "paris"')  # the edits are to the first case result of case paris on
    for old, new in edits:
        at = text.index(old, paris)
        text = text[:at] + new + text[at + len(old) :]
    edited = tmp_path / APP / saved.name
    edited.parent.mkdir()
    edited.write_text(text, encoding="utf-8")

    report = ae.EvaluationReport.load(edited)

    assert _read(report) is not indexed
    _assert_same_frames(report, _whole(saved))
    _assert_same_records(report, _whole(saved))


def test_a_bad_value_in_a_turn_is_the_whole_files_error_when_the_turns_are_read(saved: Path, tmp_path: Path) -> None:
    text = saved.read_text()
    at = text.index('"userContent"')
    edited_text = text[:at] + text[at:].replace('"role": "user"', '"role": 7', 1)
    edited = tmp_path / APP / saved.name
    edited.parent.mkdir()
    edited.write_text(edited_text, encoding="utf-8")
    with pytest.raises(ae.ConfigError) as whole_error:
        load_result_file(edited)
    assert "evalCaseResults[0].evalMetricResultPerInvocation[0]" in str(whole_error.value)

    report = ae.EvaluationReport.load(edited)
    whole = _whole(saved)
    # The outcomes are intact; only a turn is broken, which the reasons in the metrics table come from.
    pd.testing.assert_frame_equal(report.cases, whole.cases)
    pd.testing.assert_frame_equal(report.case_table, whole.case_table)

    reads = (lambda: report.metrics, lambda: report.result, lambda: report.case_summaries, lambda: report.turns)
    for read in reads:
        with pytest.raises(ae.ConfigError) as raised:
            read()
        assert str(raised.value) == str(whole_error.value)


def test_an_aggregator_reading_a_broken_turn_fails_the_derivation_not_each_case(saved: Path, tmp_path: Path) -> None:
    text = saved.read_text()
    at = text.index('"userContent"')
    edited = tmp_path / APP / saved.name
    edited.parent.mkdir()
    edited.write_text(text[:at] + text[at:].replace('"role": "user"', '"role": 7', 1), encoding="utf-8")
    report = ae.EvaluationReport.load(edited)

    def reads_the_turns(data: AggregationInput) -> AggregationResult:
        return AggregationResult(score=len(data.metric_results_per_invocation), status=ae.EvalStatus.PASSED)

    with pytest.raises(ae.ConfigError, match=re.escape("evalCaseResults[0].evalMetricResultPerInvocation[0]")):
        report.reaggregate(reads_the_turns)
    # An aggregator of scores needs no turn.
    assert report.reaggregate(_mean_score).case_table["status"].tolist()


def test_errors_in_what_the_index_reads_are_the_whole_files_at_load(saved: Path, tmp_path: Path) -> None:
    text = saved.read_text()
    edited = tmp_path / APP / saved.name
    edited.parent.mkdir()
    edited.write_text(text.replace('"finalEvalStatus": "failed"', '"finalEvalStatus": "broken"', 1), encoding="utf-8")
    with pytest.raises(ae.ConfigError) as whole_error:
        load_result_file(edited)

    with pytest.raises(ae.ConfigError) as raised:
        ae.EvaluationReport.load(edited)

    assert str(raised.value) == str(whole_error.value)


# ------------------------------------------------------------------ derived reports


def _mean_score(data: AggregationInput) -> AggregationResult:
    scores = [result.score for result in data.metric_results]
    score = sum(scores) / len(scores) if scores else 0.0
    return AggregationResult(score=score, status=ae.EvalStatus.PASSED if score >= 0.5 else ae.EvalStatus.FAILED)


def _most_turns_pass(data: AggregationInput) -> AggregationResult:
    """Reads the case as written and the turns: passes when two thirds of its turns pass every metric."""
    if data.runs:
        passed = sum(run.final_eval_status == ae.EvalStatus.PASSED for run in data.runs)
        return AggregationResult(score=passed / len(data.runs), status=ae.EvalStatus.PASSED)
    turns = len(data.eval_case.conversation)
    passed = sum(
        all(result.eval_status == ae.EvalStatus.PASSED for result in turn.eval_metric_results)
        for turn in data.metric_results_per_invocation
    )
    score = passed / turns if turns else 0.0
    assert data.inference_result.eval_case_id == data.eval_case.eval_id
    assert [metric.metric_name for metric in data.eval_metrics] == [r.metric_name for r in data.metric_results]
    return AggregationResult(score=score, status=ae.EvalStatus.PASSED if score >= 2 / 3 else ae.EvalStatus.FAILED)


DERIVATIONS = {
    "reaggregate-scores": lambda report: report.reaggregate(_mean_score),
    "reaggregate-turns": lambda report: report.reaggregate(_most_turns_pass),
    "reaggregate-all-pass": lambda report: report.reaggregate(ae.AllPassAggregator()),
    "thresholds": lambda report: report.with_thresholds({"mentions": 0.0, "rouge": 0.9}),
    "thresholds-turns": lambda report: report.with_thresholds({"final_response_avg_score": 0.0}, _most_turns_pass),
    "twice": lambda report: report.with_thresholds({"rouge": 0.1}).reaggregate(_mean_score),
}


@pytest.mark.parametrize("derive", list(DERIVATIONS.values()), ids=list(DERIVATIONS))
def test_a_derived_report_of_a_loaded_one_is_the_one_derived_from_the_whole_file(saved: Path, derive: Any) -> None:
    loaded = ae.EvaluationReport.load(saved)

    derived, expected = derive(loaded), derive(_whole(saved))

    assert derived.overall_status == expected.overall_status
    _assert_same_frames(derived, expected)
    assert not _read(derived)
    _assert_same_records(derived, expected)
    assert derived.provenance.derived_from == expected.provenance.derived_from


@pytest.mark.parametrize("derive", list(DERIVATIONS.values()), ids=list(DERIVATIONS))
def test_a_derived_report_of_an_evaluated_one_has_the_records_a_derivation_of_them_gives(derive: Any) -> None:
    evaluated = _evaluated(2)

    derived = derive(evaluated)

    assert not _read(derived)
    tables = [frame.copy() for frame in _frames(derived)]
    derived.result  # noqa: B018 - reads the records
    # Read, the same report makes its tables from its records: they are the ones it had.
    for frame, before in zip(_frames(derived), tables, strict=True):
        pd.testing.assert_frame_equal(frame, before)
    assert [summary.overall_status for summary in derived.case_summaries] == derived.case_table["status"].tolist()


def test_derived_reports_share_the_records_they_did_not_change_when_read(saved: Path) -> None:
    loaded = ae.EvaluationReport.load(saved)
    derived = loaded.with_thresholds({"mentions": 0.0})

    first, original = derived.result.eval_case_results[0], loaded.result.eval_case_results[0]

    assert first is not original
    assert first.eval_metric_result_per_invocation[0].actual_invocation is (
        original.eval_metric_result_per_invocation[0].actual_invocation
    )
    by_name = {result.metric_name: result for result in original.overall_eval_metric_results}
    for result in first.overall_eval_metric_results:
        assert (result is by_name[result.metric_name]) == (result.metric_name != "mentions")


def test_a_derivation_leaves_the_report_it_was_made_from_unread(saved: Path) -> None:
    loaded = ae.EvaluationReport.load(saved)

    loaded.reaggregate(_mean_score).with_thresholds({"rouge": 0.2}).case_table  # noqa: B018

    assert not _read(loaded)


def test_replacing_a_field_of_an_unread_report_reads_it(saved: Path) -> None:
    loaded = ae.EvaluationReport.load(saved)

    renamed = dataclasses.replace(loaded, app_name="other")

    assert renamed.app_name == "other" and _read(renamed)
    assert renamed.result == _whole(saved).result


# ------------------------------------------------------------------ the aggregator's input


def test_the_lazy_aggregator_input_sets_every_field_and_is_an_aggregation_input(saved: Path) -> None:
    report = ae.EvaluationReport.load(saved)
    data: ReportData = report._reanalysis_data()
    sources = _Sources(data, list(data.eval_metrics), {})

    made = sources.run_input(0, data.runs[0])

    assert isinstance(made, AggregationInput) and isinstance(made, _LazyInput)
    every = {field.name: getattr(made, field.name) for field in dataclasses.fields(AggregationInput)}
    assert every["eval_case"].eval_id == data.runs[0].eval_id
    assert every["metric_results_per_invocation"]
    assert dataclasses.replace(made, app_name="x").eval_case == every["eval_case"]
    assert repr(made).startswith("_LazyInput(app_name=")


# ------------------------------------------------------------------ what reads one case, or none


REPORT_KINDS = {
    "evaluated": lambda saved: _evaluated(2),
    "loaded": lambda saved: ae.EvaluationReport.load(saved),
    "derived": lambda saved: ae.EvaluationReport.load(saved).with_thresholds({"rouge": 0.9}),
}


@pytest.mark.parametrize("kind", list(REPORT_KINDS.values()), ids=list(REPORT_KINDS))
def test_one_cases_results_are_read_alone_and_are_what_the_whole_report_holds(saved: Path, kind: Any) -> None:
    report = kind(saved)

    alone = {eval_id: report.case_results(eval_id) for eval_id in ("trip", "boom")}
    assert not _read(report)
    with pytest.raises(ae.NotFoundError, match=r"no case 'lisbon' in this report; its cases are: 'trip', 'paris'"):
        report.case_results("lisbon")

    whole = {summary.eval_id: summary.runs for summary in report.case_summaries}  # reads every record
    assert alone == {eval_id: whole[eval_id] for eval_id in alone}
    assert report.case_results("paris") == whole["paris"]


@pytest.mark.parametrize("kind", list(REPORT_KINDS.values()), ids=list(REPORT_KINDS))
def test_pass_at_k_the_summary_table_and_the_result_id_leave_the_records_unread(saved: Path, kind: Any) -> None:
    report = kind(saved)
    k = report.num_runs

    def answers() -> tuple[Any, ...]:
        return report.pass_at_k(1), report.pass_hat_k(k), report.summary_table(), report.result_id, repr(report)

    lazy = answers()
    assert not _read(report)
    report.result  # noqa: B018 - reads the records
    read = answers()
    assert lazy[:2] == read[:2] and lazy[3:] == read[3:]
    pd.testing.assert_frame_equal(lazy[2], read[2])
    assert read[3] == report.result.eval_set_result_id


def test_a_reports_result_id_is_the_one_its_first_save_gave(tmp_path: Path) -> None:
    report = _evaluated(1)
    assert report.result_id  # the evaluation saved it in memory

    derived = report.with_thresholds({"rouge": 0.9})
    assert derived.result_id == ""
    saved_as = derived.save(ae.LocalEvalResultManager(tmp_path))
    assert derived.result_id == saved_as == derived.result.eval_set_result_id
