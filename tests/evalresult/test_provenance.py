"""Provenance is a declared field of the summary: written as before, left out when unknown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agenteval as ae
from agenteval.evalresult.provenance import Provenance
from agenteval.evalresult.summary import EvalSetResultSummary


def test_provenance_is_written_last_in_the_summary_and_read_back() -> None:
    provenance = Provenance(app_name="app", eval_set_id="set", num_runs=2, agent="my_agent")
    summary = EvalSetResultSummary(num_runs=2, provenance=provenance)

    written = json.loads(summary.to_json())

    assert list(written) == ["numRuns", "provenance"]
    assert written["provenance"] == {"appName": "app", "evalSetId": "set", "agent": "my_agent", "numRuns": 2}
    assert EvalSetResultSummary.from_json(summary.to_json()).provenance == provenance


def test_a_summary_without_provenance_writes_no_key() -> None:
    assert "provenance" not in json.loads(EvalSetResultSummary(num_runs=1).to_json())


def test_a_malformed_provenance_is_refused_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "app" / "r.evalset_result.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"evalSetId": "s", "summary": {"numRuns": 1, "provenance": {"numRuns": "two"}}}))

    with pytest.raises(ae.ConfigError, match=r"field summary\.provenance\.numRuns"):
        ae.EvaluationReport.load(path)
