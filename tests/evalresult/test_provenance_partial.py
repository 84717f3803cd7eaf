"""Whether a report is partial is a declared field of its provenance, written only when true."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

import agenteval as ae
from agenteval.evalresult.provenance import PARTIAL_PREFIX, Provenance
from agenteval.evalresult.summary import EvalSetResultSummary
from agenteval.metric.models import EvalMetric
from tests.test_evaluation import APP, SET, echo, fill, final_response, make_case


def test_a_complete_result_writes_no_partial_key() -> None:
    report = ae.Evaluator(APP, echo, eval_set_manager=fill([make_case("a")])).evaluate(SET, metrics=[final_response()])

    assert report.provenance is not None and report.provenance.partial is False
    assert report.result.summary is not None
    assert "partial" not in json.loads(report.result.to_json())["summary"]["provenance"]


def test_a_partial_provenance_is_written_and_read_back() -> None:
    provenance = Provenance(app_name="app", derived_from=f"{PARTIAL_PREFIX}stopped by KeyboardInterrupt", partial=True)
    summary = EvalSetResultSummary(num_runs=1, provenance=provenance)

    written = json.loads(summary.to_json())["provenance"]

    assert written == {"appName": "app", "derivedFrom": "partial: stopped by KeyboardInterrupt", "partial": True}
    assert EvalSetResultSummary.from_json(summary.to_json()).provenance == provenance


def test_the_field_is_read_without_the_description() -> None:
    assert Provenance.model_validate({"partial": True}).partial is True
    assert Provenance.model_validate({"derivedFrom": "rescore of r1"}).partial is False


def test_a_result_saved_before_the_field_is_partial_by_its_description(tmp_path: Path) -> None:
    path = tmp_path / "app" / "r1.evalset_result.json"
    path.parent.mkdir()
    provenance = {"appName": "app", "evalSetId": "s", "derivedFrom": "partial: stopped by KeyboardInterrupt"}
    document = {"evalSetResultId": "r1", "evalSetId": "s", "summary": {"numRuns": 1, "provenance": provenance}}
    path.write_text(json.dumps(document), encoding="utf-8")

    report = ae.EvaluationReport.load(path)

    assert report.provenance is not None and report.provenance.partial is True
    assert report.partial


@pytest.mark.parametrize(("derived_from", "partial"), [("partial: stopped by KeyboardInterrupt", True), ("", False)])
def test_a_provenance_pickled_before_partial_was_a_field_unpickles_with_it(derived_from: str, partial: bool) -> None:
    state = Provenance(app_name="app", derived_from=derived_from).__getstate__()
    del state["__dict__"]["partial"]  # as an earlier version pickled it
    unpickled = Provenance.__new__(Provenance)

    unpickled.__setstate__(state)

    assert unpickled.partial is partial
    assert unpickled.model_copy(update={"app_name": "other"}).partial is partial


def test_any_model_pickled_before_a_field_was_added_unpickles_with_its_default() -> None:
    metric = EvalMetric(metric_name="m", threshold=0.5)
    state = metric.__getstate__()
    del state["__dict__"]["criterion"]
    unpickled = EvalMetric.__new__(EvalMetric)

    unpickled.__setstate__(state)

    assert unpickled == EvalMetric(metric_name="m", threshold=0.5)
    assert pickle.loads(pickle.dumps(metric)) == metric
