"""Loading results that cannot be read as runs of cases, and paths that are not regular files."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

import agenteval as ae
from agenteval._util.sync_bridge import run_sync
from agenteval.evalresult.local import LocalEvalResultManager
from agenteval.evalresult.models import EvalSetResult
from agenteval.evalset.local import LocalEvalSetManager
from agenteval.metric.local import LocalMetricManager
from tests._fifo_reads import outcome_within
from tests.evalresult._data import make_result


def _result_file(tmp_path: Path, run_ids: list[int], *, eval_ids: list[str] | None = None) -> Path:
    """A result file (``app/r1.evalset_result.json``, no summary) with one case result per run id."""
    result = make_result(eval_set_result_id="r1", summary=None)
    (case,) = result.eval_case_results
    result.eval_case_results = [
        case.model_copy(update={"run_id": run_id, "eval_id": eval_id})
        for run_id, eval_id in zip(run_ids, eval_ids or ["case-1"] * len(run_ids), strict=True)
    ]
    path = tmp_path / "app" / "r1.evalset_result.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(result.to_json(), encoding="utf-8")
    return path


def test_two_results_for_one_run_of_a_case_are_refused_naming_the_file_case_and_run(tmp_path: Path) -> None:
    path = _result_file(tmp_path, [1, 2, 2], eval_ids=["case-1", "case-1", "case-1"])

    with pytest.raises(ae.ConfigError) as raised:
        ae.EvaluationReport.load(path)

    assert str(raised.value) == (
        f"result file {path}: evalCaseResults[1] and evalCaseResults[2] are both run 2 of case 'case-1': a run"
        " holds one result per case; remove the one that does not belong"
    )


def test_a_result_without_a_run_id_is_run_1_so_beside_run_1_it_is_a_repeat(tmp_path: Path) -> None:
    path = _result_file(tmp_path, [0, 1])

    with pytest.raises(ae.ConfigError, match=r"evalCaseResults\[0\] and evalCaseResults\[1\] are both run 1"):
        ae.EvaluationReport.load(path)


def test_results_of_other_cases_or_runs_load(tmp_path: Path) -> None:
    path = _result_file(tmp_path, [1, 1, 2, 2], eval_ids=["case-1", "case-2", "case-1", "case-2"])

    report = ae.EvaluationReport.load(path)

    assert report.num_runs == 2
    assert [(summary.eval_id, len(summary.runs)) for summary in report.case_summaries] == [("case-1", 2), ("case-2", 2)]


@pytest.mark.parametrize("run_id", [-1, -(2**63)])
def test_a_negative_run_id_is_refused_naming_the_file_case_and_run(tmp_path: Path, run_id: int) -> None:
    path = _result_file(tmp_path, [run_id])

    with pytest.raises(ae.ConfigError) as raised:
        ae.EvaluationReport.load(path)

    assert str(raised.value) == (
        f"result file {path}: evalCaseResults[0] (case case-1) has runId {run_id}: runs are numbered from 1"
        " (a runId of 0, or none, stands for 1); correct it"
    )


def test_a_result_from_a_manager_is_checked_too(tmp_path: Path) -> None:
    _result_file(tmp_path, [1, 1])

    with pytest.raises(ae.ConfigError, match=r"^result r1: evalCaseResults\[0\] and evalCaseResults\[1\] are both"):
        ae.EvaluationReport.load(LocalEvalResultManager(tmp_path), "app", "r1")


def test_the_store_still_returns_such_a_result_as_it_is(tmp_path: Path) -> None:
    _result_file(tmp_path, [1, 1])

    result = run_sync(LocalEvalResultManager(tmp_path).get("app", "r1"))

    assert isinstance(result, EvalSetResult) and len(result.eval_case_results) == 2


def _read_eval_set(base: Path) -> object:
    return run_sync(LocalEvalSetManager(base).get("app", "s"))


def _read_metrics(base: Path) -> object:
    return run_sync(LocalMetricManager(base).list("app", "s"))


def _read_result(base: Path) -> object:
    return ae.EvaluationReport.load(base / "app" / "s.evalset_result.json")


def _read_stored_result(base: Path) -> object:
    return run_sync(LocalEvalResultManager(base).get("app", "s"))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize(
    ("file_name", "what", "read"),
    [
        ("s.evalset.json", "eval set", _read_eval_set),
        ("s.metrics.json", "metrics", _read_metrics),
        ("s.evalset_result.json", "eval set result", _read_result),
        ("s.evalset_result.json", "eval set result", _read_stored_result),
    ],
    ids=["eval-set", "metrics", "report-load", "result-store"],
)
def test_a_fifo_in_a_store_is_refused_before_it_is_opened(
    tmp_path: Path, file_name: str, what: str, read: Callable[[Path], object]
) -> None:
    path = tmp_path / "app" / file_name
    path.parent.mkdir()
    os.mkfifo(path)

    error = outcome_within(10, lambda: read(tmp_path), path)

    assert isinstance(error, ae.ConfigError)
    assert str(error) == f"{what} file {path} is a FIFO (named pipe), not a regular file: give the path of a file"


def test_a_directory_given_as_a_result_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ae.ConfigError, match=rf"^eval set result file {tmp_path} is a directory, not a regular file"):
        ae.EvaluationReport.load(tmp_path)
