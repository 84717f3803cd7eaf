"""What ``agenteval run`` and ``demo`` take besides the agent: the notebook's options, files to write, JSON."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import agenteval as ae
from agenteval.examples.math import APP_NAME, DATA_DIR, EVAL_SET_ID
from tests.cli._invoke import run_cli

AGENT = "agenteval.examples.math.agent:calculator_agent"


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """A copy of the demo's app directory, to edit."""
    return Path(shutil.copytree(DATA_DIR / APP_NAME, tmp_path / "apps" / APP_NAME))


def metrics_of(app: Path) -> list[dict[str, Any]]:
    metrics: list[dict[str, Any]] = json.loads((app / f"{EVAL_SET_ID}.metrics.json").read_text())
    return metrics


def saved_results(output: Path) -> list[Path]:
    return sorted(output.glob(f"{APP_NAME}/*.evalset_result.json"))


def test_json_puts_a_summary_for_scripts_alone_on_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ran = run_cli(["demo", "--json", "--num-runs", "2", "--output", "out"], capsys)

    assert ran.status == 0
    summary = ran.json()
    assert summary["passed"] is False
    (only,) = summary["evalSets"]
    (saved,) = saved_results(tmp_path / "out")
    assert only["resultFile"] == str(saved)
    assert only["evalSetResultId"] == saved.name.removesuffix(".evalset_result.json")
    assert (only["appName"], only["evalSetId"], only["overallStatus"], only["numRuns"]) == (
        APP_NAME,
        EVAL_SET_ID,
        "failed",
        2,
    )
    assert only["passK"] == {"passAt1": 0.8, "k": 2, "passHatK": 0.8}
    cases = {case["evalId"]: case for case in only["cases"]}
    assert cases["calc_add"]["status"] == "passed"
    assert cases["calc_add"]["metrics"]["final_response_avg_score"] == {"score": 1.0, "status": "passed"}
    power = cases["calc_power"]
    assert (power["status"], power["score"], power["errors"]) == ("failed", 0.0, [])
    assert [(failed["metricName"], failed["runs"]) for failed in power["failedMetrics"]] == [
        ("tool_trajectory_avg_score", [1, 2]),
        ("final_response_avg_score", [1, 2]),
    ]
    assert power["failedMetrics"][1]["reason"].startswith("final response mismatch: text mismatch: actual")
    # What people read went to stderr.
    assert "4/5 cases passed; overall failed" in ran.err
    assert "results are in" in ran.err


def test_strict_makes_a_misspelt_evaluator_an_error_before_the_agent_runs(
    app: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    metrics = metrics_of(app)
    metrics[1]["evaluatorName"] = "final_respons_avg_score"
    (app / f"{EVAL_SET_ID}.metrics.json").write_text(json.dumps(metrics))

    ran = run_cli(["run", str(app), "--agent", AGENT, "--strict", "--output", "out"], capsys)

    assert ran.status == 2
    assert ran.err.startswith(
        "agenteval: metric 'final_response_avg_score' names evaluator 'final_respons_avg_score', which is not"
        " registered (did you mean 'final_response_avg_score'?): strict=True refuses to skip it; correct its"
        " evaluatorName"
    )
    assert ran.out == ""
    assert saved_results(app.parent.parent / "out") == []


@pytest.mark.filterwarnings("always")
def test_without_strict_a_misspelt_evaluator_is_a_warning(app: Path, capsys: pytest.CaptureFixture[str]) -> None:
    metrics = metrics_of(app)
    metrics[1]["evaluatorName"] = "final_respons_avg_score"
    (app / f"{EVAL_SET_ID}.metrics.json").write_text(json.dumps(metrics))

    ran = run_cli(["run", str(app), "--agent", AGENT, "--output", "out"], capsys)

    assert ran.status == 1
    assert "SkippedMetricWarning: metric 'final_response_avg_score' names evaluator 'final_respons_avg_score'" in (
        ran.err
    )


def test_strict_makes_an_unknown_field_of_the_metrics_file_an_error(
    app: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    metrics = metrics_of(app)
    metrics[1]["criterion"]["finalResponse"]["text"]["caseInsensitiv"] = True
    (app / f"{EVAL_SET_ID}.metrics.json").write_text(json.dumps(metrics))

    ran = run_cli(["run", str(app), "--agent", AGENT, "--strict", "--output", "out"], capsys)

    assert ran.status == 2
    assert ran.err == (
        f"agenteval: list metrics: metrics file {app / f'{EVAL_SET_ID}.metrics.json'}: unknown field(s)"
        " [1].criterion.finalResponse.text.caseInsensitiv have no effect: correct their spelling or remove them"
        " (strict=True refuses them)\n"
    )


def test_metrics_file_replaces_the_eval_sets_metrics(
    tmp_path: Path, app: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contains = ae.EvalMetric.final_response("contains", name="reply_contains").to_dict()
    (tmp_path / "loose.metrics.json").write_text(json.dumps([contains]))

    ran = run_cli(["run", str(app), "--agent", AGENT, "--metrics", "loose.metrics.json", "--json"], capsys)

    (summary,) = ran.json()["evalSets"]
    assert [list(case["metrics"]) for case in summary["cases"]] == [["reply_contains"]] * 5
    assert "reply_contains" in ran.err.splitlines()[1]


def test_a_missing_metrics_file_exits_2(app: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ran = run_cli(["run", str(app), "--agent", AGENT, "--metrics", "nope.json"], capsys)

    assert (ran.status, ran.err) == (2, "agenteval: --metrics nope.json: there is no such file\n")


def test_html_and_bundle_are_written_and_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ran = run_cli(["demo", "--html", "page/report.html", "--bundle", "report.agenteval.zip", "--output", "out"], capsys)

    assert ran.status == 0
    html, bundle = tmp_path / "page" / "report.html", tmp_path / "report.agenteval.zip"
    assert f"html written to {html}" in ran.out
    assert f"bundle written to {bundle}" in ran.out
    assert "calc_power" in html.read_text(encoding="utf-8")
    loaded = ae.EvaluationReport.load(bundle)
    assert loaded.eval_set is not None
    assert [case.eval_id for case in loaded.case_summaries if case.overall_status == "failed"] == ["calc_power"]


def test_html_and_bundle_are_in_the_json_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ran = run_cli(["demo", "--json", "--html", "r.html", "--bundle", "r.zip", "--output", "out"], capsys)

    (summary,) = ran.json()["evalSets"]
    assert (summary["html"], summary["bundle"]) == (str(tmp_path / "r.html"), str(tmp_path / "r.zip"))


def test_files_for_one_eval_set_are_refused_with_several(app: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = json.loads((app / f"{EVAL_SET_ID}.evalset.json").read_text())
    (app / "again.evalset.json").write_text(json.dumps({**document, "evalSetId": "again"}))

    ran = run_cli(["run", str(app), "--agent", AGENT, "--html", "r.html", "--resume", "x"], capsys)

    assert ran.status == 2
    assert ran.err == (
        "agenteval: --resume and --html are for one eval set, and this would evaluate 2 ('again', 'math-basic'):"
        " choose one with --eval-set ID\n"
    )


def test_cache_serves_an_unchanged_second_run(tmp_path: Path, app: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = run_cli(["run", str(app), "--cache", "--agent", AGENT], capsys)
    again = run_cli(["run", str(app), "--cache", "--agent", AGENT], capsys)
    elsewhere = run_cli(["run", "--cache=my-cache", str(app), "--agent", AGENT], capsys)

    assert "from the cache" not in first.out
    assert "5/5 inferences and 10/10 scores from the cache" in again.out
    assert (tmp_path / ".agenteval-cache").is_dir()
    assert "from the cache" not in elsewhere.out
    assert (tmp_path / "my-cache").is_dir()


def test_resume_carries_on_a_saved_result_under_its_id(app: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = run_cli(["run", str(app), "--agent", AGENT, "--json"], capsys)
    result_id = first.json()["evalSets"][0]["evalSetResultId"]

    again = run_cli(["run", str(app), "--agent", AGENT, "--resume", result_id], capsys)
    unknown = run_cli(["run", str(app), "--agent", AGENT, "--resume", "no-such-result"], capsys)

    assert again.status == 1
    assert f"result saved as {result_id}" in again.out
    assert "5/5 inferences and 10/10 scores from" in again.out
    assert unknown.status == 2
    assert "resume='no-such-result': no such result of app 'math-eval-app'" in unknown.err


def test_agent_version_is_recorded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ran = run_cli(["demo", "--agent-version", "prompt-v2", "--output", "out"], capsys)

    assert ran.status == 0
    (saved,) = saved_results(tmp_path / "out")
    assert json.loads(saved.read_text())["summary"]["provenance"]["agentVersion"] == "prompt-v2"
