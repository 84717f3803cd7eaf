"""The what-if explorer at widget-state level: controls set from code, tables, labels, flips and exports read back."""

from __future__ import annotations

import json

import ipywidgets
import pandas as pd
import pytest

import agenteval as ae
from agenteval._presentation import WhatIfView
from agenteval.analysis._what_if import AtLeastKMetricsPass, WeightedScoreAtLeast, WhatIf, WhatIfSettings
from agenteval.notebook import _explorer
from agenteval.notebook._explorer import WhatIfExplorer
from agenteval.notebook._html import html_to_text
from tests.test_what_if import ALWAYS_FAILS, assert_same_outcome, at_least_one_metric_passes, run_code, scored_report

CASES = 40


@pytest.fixture(scope="module")
def report() -> ae.EvaluationReport:
    return scored_report(cases=CASES, num_runs=3)


def assert_shows(explorer: WhatIfView, report: ae.EvaluationReport) -> None:
    """The explorer's outcome is that of its settings, and its exported code makes that very report."""
    expected = WhatIf(report).outcome(explorer.settings)
    pd.testing.assert_frame_equal(explorer.outcome.case_table, expected.case_table)
    pd.testing.assert_frame_equal(explorer.outcome.runs, expected.runs)
    pd.testing.assert_frame_equal(explorer.outcome.metric_table, expected.metric_table)
    derived = run_code(explorer.python_code.value, report)
    assert derived.case_table["status"].tolist() == explorer.outcome.case_table["status"].tolist()
    assert_same_outcome(explorer.what_if, explorer.settings, derived)


def text(widget: object) -> str:
    return html_to_text(widget.value)  # type: ignore[attr-defined]


def test_explore_returns_a_widget_at_the_reports_own_settings(report: ae.EvaluationReport) -> None:
    explorer = report.explore()

    assert isinstance(explorer, ipywidgets.VBox)
    assert {name: slider.value for name, slider in explorer.thresholds.items()} == {
        "accuracy": 0.5,
        "relevance": 0.5,
        "style": 0.75,
    }
    assert explorer.rule.value == "all"
    assert explorer.settings == WhatIfSettings()
    passed = (report.case_table["status"] == "passed").sum()
    assert f"{passed} of {CASES} cases pass" in text(explorer.summary)
    assert "No case flips" in text(explorer.summary)
    assert "None: every case keeps the report's status" in text(explorer.flips)
    assert explorer.python_code.value == "new_report = report.with_thresholds({})\n"
    assert json.loads(explorer.metrics_json.value) == [metric.to_dict() for metric in report.eval_metrics]
    assert explorer.k.layout.display == explorer.minimum.layout.display == "none"
    assert all(box.layout.display == "none" for box in explorer.weights.values())
    assert_shows(explorer, report)


def test_the_explorer_says_that_runs_that_failed_before_scoring_stay_failed(report: ae.EvaluationReport) -> None:
    explorer = WhatIfExplorer(report)
    heading = html_to_text(explorer.children[0].value)

    assert "neither the agent nor a judge runs" in heading
    assert "Runs that failed before scoring (an agent, metric or timeout error) stay failed" in heading
    assert "6 run(s) of 4 case(s) here" in heading
    for slider in explorer.thresholds.values():
        slider.value = slider.min
    assert explorer.outcome.case_table.set_index("eval_id")["status"][ALWAYS_FAILS] == "failed"


def test_moving_a_threshold_recomputes_the_tables_and_lists_the_flips(report: ae.EvaluationReport) -> None:
    explorer = WhatIfExplorer(report)

    explorer.thresholds["style"].value = 0.0

    assert explorer.settings == WhatIfSettings({"style": 0.0})
    flips = explorer.outcome.flips
    assert len(flips) > 0 and set(flips["status"]) == {"passed"}
    passed = explorer.outcome.passed
    assert f"{passed} of {CASES} cases pass" in text(explorer.summary)
    assert f"{len(flips)} cases flip: 0 passed → failed, {len(flips)} failed → passed" in text(explorer.summary)
    listed = text(explorer.flips)
    assert all(eval_id in listed for eval_id in flips["eval_id"])
    style = next(line for line in text(explorer.metric_table).splitlines() if line.startswith("style"))
    assert "| 0 | 0.75 |" in style and "| 100.0% |" in style
    rates = text(explorer.runs_table)
    assert all(f"{rate:.1%}" in rates for rate in explorer.outcome.runs["pass_rate"])
    # As in a metrics file, a threshold of 0 (the default) is left out.
    exported = [ae.EvalMetric.from_json(json.dumps(metric)) for metric in json.loads(explorer.metrics_json.value)]
    assert [metric.threshold for metric in exported] == [0.5, 0.5, 0.0]
    assert explorer.python_code.value == "new_report = report.with_thresholds({'style': 0.0})\n"
    assert_shows(explorer, report)


def test_the_k_of_n_rule_shows_k_and_exports_its_aggregator(report: ae.EvaluationReport) -> None:
    explorer = WhatIfExplorer(report)

    explorer.rule.value = "k_of_n"
    explorer.k.value = 2
    explorer.thresholds["accuracy"].value = 0.75

    assert explorer.settings == WhatIfSettings({"accuracy": 0.75}, AtLeastKMetricsPass(2))
    assert explorer.k.layout.display == ""
    assert "def at_least_k_metrics_pass(" in explorer.python_code.value
    assert "aggregator=at_least_k_metrics_pass)" in explorer.python_code.value
    assert_shows(explorer, report)


def test_the_weighted_rule_shows_weights_and_x_and_exports_its_aggregator(report: ae.EvaluationReport) -> None:
    explorer = WhatIfExplorer(report)

    explorer.rule.value = "weighted"
    explorer.weights["accuracy"].value = 3.0
    explorer.weights["style"].value = 0.0
    explorer.minimum.value = 0.6

    assert explorer.settings == WhatIfSettings(
        {}, WeightedScoreAtLeast(0.6, {"accuracy": 3.0, "relevance": 1.0, "style": 0.0})
    )
    assert explorer.minimum.layout.display == ""
    assert all(box.layout.display == "" for box in explorer.weights.values())
    assert "WEIGHTS = {'accuracy': 3.0, 'relevance': 1.0, 'style': 0.0}" in explorer.python_code.value
    assert explorer.python_code.value.endswith("new_report = report.reaggregate(weighted_score_at_least)\n")
    assert_shows(explorer, report)


def test_the_reset_button_puts_back_the_reports_settings(report: ae.EvaluationReport) -> None:
    explorer = WhatIfExplorer(report)
    explorer.rule.value = "k_of_n"
    explorer.k.value = 1
    explorer.thresholds["relevance"].value = 0.9
    assert not explorer.outcome.flips.empty

    explorer.reset.click()

    assert explorer.settings == WhatIfSettings()
    assert explorer.outcome.flips.empty
    assert explorer.k.layout.display == "none"
    assert explorer.python_code.value == "new_report = report.with_thresholds({})\n"


def test_a_slider_step_from_the_browser_is_rounded_off(report: ae.EvaluationReport) -> None:
    explorer = WhatIfExplorer(report)

    explorer.thresholds["accuracy"].value = 0.1 + 0.2  # 0.30000000000000004, as a browser may send

    assert explorer.settings.thresholds == {"accuracy": 0.3}
    assert "{'accuracy': 0.3}" in explorer.python_code.value


def test_the_flip_list_is_cut_and_says_how_many_it_holds(
    report: ae.EvaluationReport, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_explorer, "FLIPS_SHOWN", 2)
    explorer = WhatIfExplorer(report)

    explorer.thresholds["style"].value = 0.0

    flips = explorer.outcome.flips
    assert len(flips) > 2
    listed = text(explorer.flips)
    assert f"First 2 of {len(flips)}." in listed
    assert flips["eval_id"][1] in listed and flips["eval_id"][2] not in listed


def test_a_report_of_another_aggregator_says_what_the_flips_are_counted_against() -> None:
    report = scored_report(cases=8, num_runs=1, aggregator=at_least_one_metric_passes)

    heading = html_to_text(WhatIfExplorer(report).children[0].value)

    assert "decided by tests.test_what_if.at_least_one_metric_passes, not by these rules" in heading
