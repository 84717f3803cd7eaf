"""A partial report says so by a field of its provenance, not by how its description begins."""

from __future__ import annotations

import json

import pytest

import agenteval as ae
from agenteval.errors import report_of
from tests.test_evaluation import APP, SET, RecordingResultManager, echo, fill, final_response, make_case
from tests.test_evaluation_robustness import failing_in_run


def _interrupted() -> tuple[ae.EvaluationReport, RecordingResultManager]:
    results = RecordingResultManager()
    ev = ae.Evaluator(APP, echo, eval_set_manager=fill([make_case("a")]), result_manager=results, num_runs=2)
    with pytest.raises(ae.AgentEvalError) as raised:
        ev.evaluate(SET, metrics=[final_response()], callbacks=failing_in_run(2))
    report = report_of(raised.value)
    assert isinstance(report, ae.EvaluationReport)
    return report, results


def test_an_interrupted_evaluation_records_partial_as_a_field_and_describes_why() -> None:
    report, results = _interrupted()

    assert report.partial
    assert report.provenance is not None and report.provenance.partial is True
    assert report.provenance.derived_from == "partial: stopped by CallbackError"
    saved = json.loads(results.saved[0].to_json())["summary"]["provenance"]
    assert saved["partial"] is True and saved["derivedFrom"] == "partial: stopped by CallbackError"


def test_a_report_derived_from_a_partial_one_is_not_partial() -> None:
    report, _ = _interrupted()

    lenient = report.with_thresholds({"final_response_avg_score": 0.0})

    assert not lenient.partial
    assert lenient.provenance is not None and lenient.provenance.partial is False
