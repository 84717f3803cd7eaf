"""The what-if explorer, ``compare`` and the CLI's summaries read a report's rows, not its records.

A fresh report holds its case results as records and a loaded one as an index of its file; both read
every case's full record only when something asks for it. The explorer, a comparison of two reports
and the summary ``agenteval run`` prints must leave them unread (the CLI reads the failed cases whose
reasons it prints, alone) and show exactly what they show of the same reports once read.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import agenteval as ae
from agenteval._presentation import WhatIfView
from agenteval.analysis._headline import pass_k_text
from agenteval.cli._compare import _comparison_json, _comparison_text
from agenteval.cli._output import json_text
from agenteval.cli._summary import summary_json, summary_text
from tests.analysis.weather_cases import METRICS, weather_cases

APP = "lazy-views"


OSLO = ae.EvalCase.of("oslo", "Weather in Oslo?", expect="Snow")
CASES = weather_cases("lazy-views-set", OSLO)
EDITED = weather_cases("lazy-views-set", OSLO, rome="Rain")
"""The eval set with the case ``rome`` edited: the same ids, other content."""


def _baseline(message: str) -> str:
    if "Explode" in message:
        raise RuntimeError("the agent blew up")
    return "Sunny" if "Paris" in message else "Rain"  # wrong about Oslo and Rome


def _candidate() -> Callable[[str], str]:
    """Another agent: right about Rome and Oslo, and about Paris only every other time it is asked."""
    asked: dict[str, int] = {}

    def agent(message: str) -> str:
        asked[message] = asked.get(message, 0) + 1
        if "Explode" in message:
            raise RuntimeError("the agent blew up again")
        if "Paris" in message:
            return "Sunny" if asked[message] % 2 == 0 else "Cloudy"
        return "Sunny and warm" if "Rome" in message else "Snow"

    return agent


def _evaluated(agent: Callable[[str], str], num_runs: int, eval_set: ae.EvalSet = CASES) -> ae.EvaluationReport:
    return ae.Evaluator(APP, agent, progress=False, num_runs=num_runs).evaluate(eval_set, metrics=METRICS)


def _saved(report: ae.EvaluationReport, directory: Path) -> Path:
    result_id = report.save(ae.LocalEvalResultManager(directory))
    return directory / APP / f"{result_id}.evalset_result.json"


@pytest.fixture(scope="module", params=[1, 2], ids=["one-run", "two-runs"])
def runs(request: pytest.FixtureRequest) -> int:
    runs: int = request.param
    return runs


@pytest.fixture(scope="module")
def saved(runs: int, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Result files of the baseline and the candidate agent (failures, reasons and an agent error in both)."""
    directory = tmp_path_factory.mktemp("results")
    return _saved(_evaluated(_baseline, runs), directory), _saved(_evaluated(_candidate(), runs), directory)


KINDS: dict[str, Callable[[int, tuple[Path, Path]], tuple[ae.EvaluationReport, ae.EvaluationReport]]] = {
    "evaluated": lambda runs, saved: (_evaluated(_baseline, runs), _evaluated(_candidate(), runs)),
    "loaded": lambda runs, saved: (ae.EvaluationReport.load(saved[0]), ae.EvaluationReport.load(saved[1])),
    "derived": lambda runs, saved: (
        ae.EvaluationReport.load(saved[0]).with_thresholds({"rouge": 0.9}),
        ae.EvaluationReport.load(saved[1]).with_thresholds({"rouge": 0.9}),
    ),
}


@pytest.fixture(params=list(KINDS))
def pair(request: pytest.FixtureRequest, runs: int, saved: tuple[Path, Path]) -> tuple[Any, ...]:
    """A baseline and a candidate report that have not read their records."""
    reports = KINDS[request.param](runs, saved)
    assert not any(_read(report) for report in reports)
    return reports


def _read(report: ae.EvaluationReport) -> bool:
    """Whether the report has read its records."""
    return "_unread_records" not in report.__dict__


def _fully_read(report: ae.EvaluationReport) -> ae.EvaluationReport:
    """A copy of ``report`` that has read every record (made after what the tests ask of ``report``)."""
    copied = copy.copy(report)
    copied.result  # noqa: B018 - reads the records
    assert _read(copied) and not _read(report)
    return copied


# ------------------------------------------------------------------ the what-if explorer


def _explorer_state(explorer: WhatIfView) -> dict[str, Any]:
    """What the explorer shows: every output, the controls' ranges and values, and its outcome's tables."""
    sliders = [explorer.k, explorer.minimum, *explorer.thresholds.values()]
    return {
        "heading": explorer.children[0].value,  # type: ignore[attr-defined]
        "outputs": [
            widget.value
            for widget in (
                explorer.summary,
                explorer.runs_table,
                explorer.metric_table,
                explorer.flips,
                explorer.metrics_json,
                explorer.python_code,
            )
        ],
        "controls": [(slider.value, slider.min, slider.max, slider.step) for slider in sliders],
        "rule": (explorer.rule.value, explorer.rule.disabled),
        "shown": [explorer.k.layout.display, explorer.minimum.layout.display],
        "tables": {
            name: getattr(explorer.outcome, name) for name in ("cases", "case_table", "runs", "metric_table", "flips")
        },
    }


def _assert_same_state(state: dict[str, Any], expected: dict[str, Any]) -> None:
    for name, table in expected.pop("tables").items():
        pd.testing.assert_frame_equal(state["tables"][name], table)
    state.pop("tables")
    assert state == expected


def _moved(explorer: WhatIfView) -> None:
    """Move a threshold, then decide the cases by at least 2 of the 3 metrics."""
    explorer.thresholds["final_response_avg_score"].value = 0.5
    explorer.rule.value = "k_of_n"
    explorer.k.value = 2


def test_the_explorer_of_an_unread_report_shows_what_it_shows_of_the_report_read(pair: tuple[Any, ...]) -> None:
    report = pair[1]

    explorer = report.explore()
    opened = _explorer_state(explorer)
    _moved(explorer)
    moved = _explorer_state(explorer)
    assert not _read(report)

    whole = _fully_read(report).explore()
    _assert_same_state(opened, _explorer_state(whole))
    _moved(whole)
    _assert_same_state(moved, _explorer_state(whole))
    assert "run(s) of 1 case(s) here" in opened["heading"]  # the agent error of ``boom``
    assert "flip" in moved["outputs"][0]


# ------------------------------------------------------------------ compare


def _comparison_outputs(comparison: ae.Comparison) -> dict[str, Any]:
    frames = ("table", "cases", "regressions", "fixes", "significance", "unpaired")
    return {
        **{name: getattr(comparison, name) for name in frames},
        "summary": comparison.summary,
        "same_eval_set": comparison.same_eval_set,
        "repr": repr(comparison),
    }


def _assert_same_outputs(outputs: dict[str, Any], expected: dict[str, Any]) -> None:
    for name, value in expected.items():
        if isinstance(value, pd.DataFrame):
            pd.testing.assert_frame_equal(outputs[name], value)
        else:
            assert outputs[name] == value, name


def test_compare_of_unread_reports_is_compare_of_the_reports_read(pair: tuple[Any, ...]) -> None:
    baseline, candidate = pair

    outputs = _comparison_outputs(ae.compare(baseline, candidate, seed=3))
    assert not _read(baseline) and not _read(candidate)

    expected = _comparison_outputs(ae.compare(_fully_read(baseline), _fully_read(candidate), seed=3))
    _assert_same_outputs(outputs, expected)
    assert set(outputs["table"]["change"]) >= {"fixed", "unchanged"}
    assert outputs["summary"]["pairing"].startswith("5 cases paired by id (both reports evaluated the same")


def test_a_comparison_shown_in_jupyter_reads_only_the_case_it_shows(pair: tuple[Any, ...]) -> None:
    baseline, candidate = pair
    comparison = ae.compare(baseline, candidate, seed=3)

    shown = comparison._repr_html_(), comparison.show_case("rome")
    assert not _read(baseline) and not _read(candidate)

    read = ae.compare(_fully_read(baseline), _fully_read(candidate), seed=3)
    assert shown == (read._repr_html_(), read.show_case("rome"))
    with pytest.raises(ae.NotFoundError, match=r"no case 'lisbon' in either report; their cases are: 'trip', 'paris'"):
        comparison.show_case("lisbon")


def test_the_cli_comparison_of_unread_reports_is_that_of_the_reports_read(saved: tuple[Path, Path]) -> None:
    baseline, candidate = (ae.EvaluationReport.load(path) for path in saved)

    def printed(comparison: ae.Comparison) -> tuple[list[str], str]:
        return _comparison_text(comparison, *saved), json_text(_comparison_json(comparison, *saved))

    lazy = printed(ae.compare(baseline, candidate))
    assert not _read(baseline) and not _read(candidate)

    assert lazy == printed(ae.compare(_fully_read(baseline), _fully_read(candidate)))
    assert f"result {baseline.result_id})" in lazy[0][0]


def test_reports_of_an_edited_eval_set_pair_by_content_without_reading_their_records(runs: int) -> None:
    baseline, candidate = _evaluated(_baseline, runs), _evaluated(_candidate(), runs, EDITED)

    outputs = _comparison_outputs(ae.compare(baseline, candidate))
    assert not _read(baseline) and not _read(candidate)  # a fresh report holds its eval set

    _assert_same_outputs(outputs, _comparison_outputs(ae.compare(_fully_read(baseline), _fully_read(candidate))))
    assert outputs["summary"]["pairing"] == "4 cases paired by id and content; 1 left out (see comparison.unpaired)"
    assert outputs["unpaired"].values.tolist() == [["rome", "edited"]]


def test_a_loaded_report_without_its_eval_set_pairs_by_id_as_when_read(runs: int, tmp_path: Path) -> None:
    path = _saved(_evaluated(_baseline, runs), tmp_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["summary"]["provenance"]["evalSet"]
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    edited = _saved(_evaluated(_candidate(), runs, EDITED), tmp_path)
    baseline, candidate = ae.EvaluationReport.load(path), ae.EvaluationReport.load(edited)

    outputs = _comparison_outputs(ae.compare(baseline, candidate))
    assert not _read(baseline) and not _read(candidate)

    _assert_same_outputs(outputs, _comparison_outputs(ae.compare(_fully_read(baseline), _fully_read(candidate))))
    assert outputs["summary"]["pairing"] == (
        "5 cases paired by id without comparing their content: their eval sets differ (their content hashes do),"
        " so edited cases may be paired; the baseline report has no eval set (load with eval_set= to pair only"
        " unchanged cases)"
    )


def test_loaded_reports_of_an_edited_eval_set_pair_by_content_as_when_read(runs: int, tmp_path: Path) -> None:
    paths = _saved(_evaluated(_baseline, runs), tmp_path), _saved(_evaluated(_candidate(), runs, EDITED), tmp_path)
    baseline, candidate = (ae.EvaluationReport.load(path) for path in paths)

    # Telling edited cases apart reads the eval sets, which a loaded report reads with its records.
    outputs = _comparison_outputs(ae.compare(baseline, candidate))

    expected = [ae.EvaluationReport.load(path) for path in paths]
    for report in expected:
        report.result  # noqa: B018 - reads the records
    _assert_same_outputs(outputs, _comparison_outputs(ae.compare(*expected)))
    assert outputs["unpaired"].values.tolist() == [["rome", "edited"]]


# ------------------------------------------------------------------ the CLI's summary


def test_the_cli_summary_reads_only_the_failed_cases_it_gives_reasons_for(
    pair: tuple[Any, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    report = pair[0]
    asked: list[str] = []
    case_results = report.case_results

    def spy(eval_id: str) -> list[ae.EvalCaseResult]:
        asked.append(eval_id)
        results: list[ae.EvalCaseResult] = case_results(eval_id)
        return results

    monkeypatch.setattr(report, "case_results", spy)

    text = summary_text(report)
    document = json_text(summary_json(report, Path("result.json"), html=Path("report.html")))
    assert not _read(report)

    whole = _fully_read(report)
    assert text == summary_text(whole)
    assert document == json_text(summary_json(whole, Path("result.json"), html=Path("report.html")))
    if whole.num_runs > 1:
        assert pass_k_text(whole) in text.splitlines()
    # Only the failed cases that a metric failed are read, each once per summary: ``boom`` failed unscored.
    reasons = {case.eval_id for case in whole.case_summaries if case.overall_status == "failed"} - {"boom"}
    assert sorted(set(asked)) == sorted(reasons) and len(asked) == 2 * len(reasons)
    assert "  rome" in text and "RuntimeError: the agent blew up" in text
    if report.result_id:
        assert text.endswith(f"result saved as {report.result_id}")
