"""What if: statuses and pass rates recomputed from stored scores equal those of with_thresholds and reaggregate."""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd
import pytest

import agenteval as ae
from agenteval._util.sync_bridge import run_sync
from agenteval.analysis._what_if import (
    AllMetricsPass,
    AtLeastKMetricsPass,
    CaseRule,
    WeightedScoreAtLeast,
    WhatIf,
    WhatIfSettings,
)
from agenteval.evaluators import EvaluateResult, PerInvocationResult, default_registry
from agenteval.evaluators.base import status_for

GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
"""Scores on a grid, so that averages land on thresholds and ties are decided as the report decides them."""
ALWAYS_FAILS = "case-05"
"""Its agent raises in every run."""
FAILS_IN_RUN_2 = ("case-07", "case-17")
"""Their agent raises in run 2 only."""
SKIPS_STYLE = ("case-03", "case-13")
"""Their style metric is not evaluated."""
AGGREGATOR_RAISES = "case-11"
"""The custom aggregator raises on it (its metric results are kept, so another rule can decide it)."""
STYLE_RAISES = "case-09"
"""Its style metric raises in run 1 (after the other metrics scored it)."""


def _part(index: int) -> Callable[..., EvaluateResult]:
    """An evaluator that reads the score of its metric from the agent's reply (``"0.5 1.0 -"``)."""

    def evaluate(actuals: Sequence[ae.Invocation], expecteds: object, metric: ae.EvalMetric) -> EvaluateResult:
        reply = actuals[0].final_response
        word = (reply.content if reply is not None else "").split()[index]
        if word == "!":
            raise RuntimeError("the style checker crashed")
        if word == "-":
            skipped = PerInvocationResult(score=0.0, status=ae.EvalStatus.NOT_EVALUATED)
            return EvaluateResult(
                overall_score=0.0, overall_status=ae.EvalStatus.NOT_EVALUATED, per_invocation_results=[skipped]
            )
        score = float(word)
        status = status_for(score, metric.threshold)
        turn = PerInvocationResult(score=score, status=status)
        return EvaluateResult(overall_score=score, overall_status=status, per_invocation_results=[turn])

    return evaluate


METRICS = [
    ae.EvalMetric(metric_name="accuracy", evaluator_name="part0", threshold=0.5),
    ae.EvalMetric(metric_name="relevance", evaluator_name="part1", threshold=0.5),
    ae.EvalMetric(metric_name="style", evaluator_name="part2", threshold=0.75),
]


def scored_report(cases: int = 40, num_runs: int = 3, aggregator: object = None) -> ae.EvaluationReport:
    """``cases`` cases × ``num_runs`` runs × 3 metrics with scores on :data:`GRID`, and agent errors."""
    calls: Counter[str] = Counter()

    def agent(message: str) -> str:
        calls[message] += 1
        if message == ALWAYS_FAILS or (message in FAILS_IN_RUN_2 and calls[message] == 2):
            raise RuntimeError(f"the agent is down for {message}")
        scores = random.Random(f"{message}/{calls[message]}").choices(GRID, k=3)
        style = "-" if message in SKIPS_STYLE else str(scores[2])
        style = "!" if message == STYLE_RAISES and calls[message] == 1 else style
        return f"{scores[0]} {scores[1]} {style}"

    registry = default_registry()
    for index in range(3):
        registry.register(f"part{index}", _part(index))
    eval_set = ae.EvalSet.of("what-if", [ae.EvalCase.of(f"case-{n:02d}", f"case-{n:02d}") for n in range(cases)])
    options: dict[str, object] = {} if aggregator is None else {"aggregator": aggregator}
    evaluator = ae.Evaluator("app", agent, num_runs=num_runs, registry=registry, progress=False, **options)
    return evaluator.evaluate(eval_set, metrics=METRICS)


def at_least_one_metric_passes(data: ae.AggregationInput) -> ae.AggregationResult:
    if data.eval_case.eval_id == AGGREGATOR_RAISES:
        raise ValueError("no verdict for this case")
    passed = any(result.eval_status == ae.EvalStatus.PASSED for result in data.metric_results)
    return ae.AggregationResult(score=float(passed), status=ae.EvalStatus.PASSED if passed else ae.EvalStatus.FAILED)


@pytest.fixture(scope="module", params=[1, 3], ids=["1 run", "3 runs"])
def report(request: pytest.FixtureRequest) -> ae.EvaluationReport:
    return scored_report(num_runs=request.param)


def assert_same_outcome(what_if: WhatIf, settings: WhatIfSettings, derived: ae.EvaluationReport) -> None:
    """The what-if outcome is the derived report's: per run, per case, per run's pass rate, per metric."""
    outcome = what_if.outcome(settings)
    table = derived.case_table
    assert outcome.case_table["eval_id"].tolist() == table["eval_id"].tolist()
    assert outcome.case_table["status"].tolist() == table["status"].tolist()
    assert outcome.case_table["score"].tolist() == pytest.approx(table["score"].tolist())
    assert outcome.case_table["runs_passed"].tolist() == table["runs_passed"].tolist()
    for name in what_if.metric_names:
        assert outcome.case_table[name].tolist() == pytest.approx(table[name].tolist(), nan_ok=True)
    key = ["run_id", "eval_id"]
    mine = outcome.cases.sort_values(key).reset_index(drop=True)
    theirs = derived.cases.sort_values(key).reset_index(drop=True)
    assert mine[key].values.tolist() == theirs[key].values.tolist()
    assert mine["status"].tolist() == theirs["status"].tolist()
    assert mine["score"].tolist() == pytest.approx(theirs["score"].tolist())
    decided = theirs[theirs["status"].isin(["passed", "failed"])]
    rates = decided.groupby("run_id")["status"].apply(lambda s: (s == "passed").mean())
    assert outcome.runs.set_index("run_id")["pass_rate"].to_dict() == pytest.approx(rates.to_dict())
    scored = derived.metrics.merge(derived.cases[key + ["error_message"]], on=key)
    scored = scored[(scored["error_message"] == "") & scored["status"].isin(["passed", "failed"])]
    metric_rates = scored.groupby("metric_name")["status"].apply(lambda s: (s == "passed").mean())
    assert outcome.metric_table.set_index("metric_name")["pass_rate"].to_dict() == pytest.approx(metric_rates.to_dict())
    flipped = table["status"] != outcome.case_table["before"]
    assert sorted(outcome.flips["eval_id"]) == sorted(table["eval_id"][flipped])
    assert outcome.passed == (table["status"] == "passed").sum()


def test_the_reports_own_settings_give_back_its_statuses(report: ae.EvaluationReport) -> None:
    outcome = WhatIf(report).outcome(WhatIfSettings())

    assert outcome.flips.empty
    assert outcome.case_table["status"].tolist() == report.case_table["status"].tolist()
    assert (outcome.cases["status"] == outcome.cases["before"]).all()
    assert outcome.pass_rate == outcome.pass_rate_before
    assert outcome.metric_table["pass_rate"].tolist() == outcome.metric_table["pass_rate_before"].tolist()
    assert_same_outcome(WhatIf(report), WhatIfSettings(), report)


@pytest.mark.parametrize(
    "thresholds",
    [
        {"accuracy": 0.75},
        {"accuracy": 0.25, "style": 0.5},
        {"relevance": 0.0, "style": 1.0},
        {"accuracy": 0.5 + 1 / 12},  # just above an average of 0.5, 0.5 and 0.75
    ],
)
def test_new_thresholds_decide_the_cases_as_with_thresholds(
    report: ae.EvaluationReport, thresholds: dict[str, float]
) -> None:
    assert_same_outcome(WhatIf(report), WhatIfSettings(thresholds), report.with_thresholds(thresholds))


def run_code(code: str, report: ae.EvaluationReport) -> ae.EvaluationReport:
    namespace: dict[str, object] = {"report": report}
    exec(compile(code, "<what-if code>", "exec"), namespace)
    derived = namespace["new_report"]
    assert isinstance(derived, ae.EvaluationReport)
    return derived


RULES: list[CaseRule] = [
    AllMetricsPass(),
    AtLeastKMetricsPass(1),
    AtLeastKMetricsPass(2),
    AtLeastKMetricsPass(3),
    WeightedScoreAtLeast(0.5, {"accuracy": 2.0, "relevance": 1.0, "style": 1.0}),
    WeightedScoreAtLeast(0.75, {"accuracy": 1.0, "relevance": 0.0, "style": 3.0}),
    WeightedScoreAtLeast(0.5, {"accuracy": 0.0, "relevance": 0.0, "style": 1.0}),
]


@pytest.mark.parametrize("rule", RULES, ids=repr)
@pytest.mark.parametrize("thresholds", [{}, {"accuracy": 0.75, "style": 0.5}], ids=["own thresholds", "new thresholds"])
def test_the_exported_code_makes_the_report_the_explorer_shows(
    report: ae.EvaluationReport, rule: CaseRule, thresholds: dict[str, float]
) -> None:
    what_if = WhatIf(report)
    settings = WhatIfSettings(thresholds, rule)

    code = what_if.python_code(settings)

    expected_call = (
        "report.with_thresholds(" if thresholds or isinstance(rule, AllMetricsPass) else "report.reaggregate("
    )
    assert expected_call in code
    assert_same_outcome(what_if, settings, run_code(code, report))


def test_the_exported_code_reads_as_the_rule() -> None:
    what_if = WhatIf(scored_report(cases=3, num_runs=1))

    assert what_if.python_code(WhatIfSettings({"accuracy": 0.8})) == (
        "new_report = report.with_thresholds({'accuracy': 0.8})\n"
    )
    k_of_n = what_if.python_code(WhatIfSettings({}, AtLeastKMetricsPass(2)))
    assert "if passed >= 2 else" in k_of_n
    assert k_of_n.endswith("new_report = report.reaggregate(at_least_k_metrics_pass)\n")
    weighted = what_if.python_code(WhatIfSettings({"style": 0.5}, WeightedScoreAtLeast(0.6, {"accuracy": 2})))
    assert "WEIGHTS = {'accuracy': 2.0, 'relevance': 0.0, 'style': 0.0}" in weighted
    assert "if score >= 0.6 else" in weighted
    assert weighted.endswith(
        "new_report = report.with_thresholds({'style': 0.5}, aggregator=weighted_score_at_least)\n"
    )


def test_a_report_of_another_aggregator_is_compared_as_it_was_decided() -> None:
    report = scored_report(num_runs=3, aggregator=at_least_one_metric_passes)
    what_if = WhatIf(report)

    outcome = what_if.outcome(WhatIfSettings())
    code = what_if.python_code(WhatIfSettings())

    assert not what_if.decided_by_all_pass
    assert what_if.aggregator_name == "tests.test_what_if.at_least_one_metric_passes"
    # Its aggregator failed on a case, which it decides again; only runs that failed before scoring stay failed.
    assert what_if.errored_runs == (report.cases["error_type"].isin(["agent", "metric"])).sum()
    assert (report.cases.loc[report.cases["eval_id"] == AGGREGATOR_RAISES, "error_type"] == "aggregator").all()
    lenient = what_if.outcome(WhatIfSettings(dict.fromkeys(what_if.metric_names, 0.0)))
    assert lenient.case_table.set_index("eval_id")["status"][AGGREGATOR_RAISES] == "passed"
    # The explorer's all-pass rule is stricter than the report's: the cases it fails are the flips.
    assert not outcome.flips.empty
    assert set(outcome.flips["before"]) == {"passed"} and set(outcome.flips["status"]) == {"failed"}
    assert code == "from agenteval import AllPassAggregator\n\n\nnew_report = report.reaggregate(AllPassAggregator())\n"
    assert_same_outcome(what_if, WhatIfSettings(), run_code(code, report))


def test_a_loaded_report_is_explored_as_the_report_it_was_saved_from(
    report: ae.EvaluationReport, tmp_path: Path
) -> None:
    manager = ae.LocalEvalResultManager(tmp_path)
    loaded = ae.EvaluationReport.load(manager, "app", report.save(manager))
    settings = WhatIfSettings({"accuracy": 0.75}, AtLeastKMetricsPass(2))

    what_if = WhatIf(loaded)

    assert what_if.decided_by_all_pass
    pd.testing.assert_frame_equal(what_if.outcome(settings).case_table, WhatIf(report).outcome(settings).case_table)
    assert_same_outcome(what_if, settings, run_code(what_if.python_code(settings), loaded))


@pytest.mark.parametrize("rule", RULES, ids=repr)
def test_runs_that_failed_before_scoring_stay_failed_whatever_the_settings(
    report: ae.EvaluationReport, rule: CaseRule
) -> None:
    what_if = WhatIf(report)

    outcome = what_if.outcome(WhatIfSettings(dict.fromkeys(what_if.metric_names, 0.0), rule))

    cases = outcome.cases.set_index(["run_id", "eval_id"])
    errored = report.cases.set_index(["run_id", "eval_id"])["error_message"] != ""
    assert errored.sum() == what_if.errored_runs > 0
    assert set(cases["status"][errored[errored].index]) == {"failed"}
    assert outcome.case_table.set_index("eval_id")["status"][ALWAYS_FAILS] == "failed"
    assert what_if.errored_cases == (2 if report.num_runs == 1 else 2 + len(FAILS_IN_RUN_2))


def test_the_tables_count_what_the_settings_change() -> None:
    report = scored_report(num_runs=3)
    what_if = WhatIf(report)

    outcome = what_if.outcome(WhatIfSettings({"style": 0.0}))

    # Lowering a threshold only makes cases pass.
    assert set(outcome.flips["before"]) == {"failed"} and set(outcome.flips["status"]) == {"passed"}
    assert outcome.passed == outcome.passed_before + len(outcome.flips)
    assert outcome.pass_rate > outcome.pass_rate_before
    style = outcome.metric_table.set_index("metric_name").loc["style"]
    assert style["threshold"] == 0.0 and style["threshold_before"] == 0.75
    assert style["pass_rate"] == 1.0 > style["pass_rate_before"]
    # Two cases skip style: their runs count for no style result.
    errored_runs = 3 + len(FAILS_IN_RUN_2) + 1
    assert style["scored"] == 40 * 3 - errored_runs - len(SKIPS_STYLE) * 3
    assert outcome.runs["run_id"].tolist() == [1, 2, 3]
    assert (outcome.runs["pass_rate"] >= outcome.runs["pass_rate_before"]).all()


def test_the_metrics_json_is_the_metrics_file_with_the_new_thresholds(tmp_path: Path) -> None:
    report = scored_report(cases=3, num_runs=1)
    what_if = WhatIf(report)
    manager = ae.LocalMetricManager(tmp_path)

    async def write_metrics() -> None:
        for metric in report.eval_metrics:
            await manager.add("app", "what-if", metric)

    run_sync(write_metrics())
    written = (tmp_path / "app" / "what-if.metrics.json").read_text(encoding="utf-8")

    assert what_if.metrics_json(WhatIfSettings()) == written.rstrip("\n")
    exported = json.loads(what_if.metrics_json(WhatIfSettings({"style": 0.25})))
    assert [metric["threshold"] for metric in exported] == [0.5, 0.5, 0.25]
    assert exported[2]["evaluatorName"] == "part2"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (WhatIfSettings({"speed": 0.5}), r"no metric named \['speed'\] in this report"),
        (WhatIfSettings({"accuracy": math.nan}), "the threshold of accuracy must be a finite number, got nan"),
        (WhatIfSettings({}, AtLeastKMetricsPass(4)), "k must be a whole number from 1 to 3 .* got 4"),
        (WhatIfSettings({}, AtLeastKMetricsPass(0)), "k must be a whole number from 1 to 3 .* got 0"),
        (WhatIfSettings({}, WeightedScoreAtLeast(0.5, {"accuracy": -1})), "the weight of accuracy must be .* got -1"),
        (WhatIfSettings({}, WeightedScoreAtLeast(0.5, {"speed": 1})), r"weighted score: no metric named \['speed'\]"),
        (WhatIfSettings({}, WeightedScoreAtLeast(math.inf)), "x must be a finite number, got inf"),
    ],
)
def test_settings_that_cannot_apply_are_refused_naming_the_value(settings: WhatIfSettings, message: str) -> None:
    what_if = WhatIf(scored_report(cases=3, num_runs=1))

    with pytest.raises(ae.ConfigError, match=message):
        what_if.outcome(settings)
    with pytest.raises(ae.ConfigError, match=message):
        what_if.python_code(settings)


def test_a_threshold_outside_a_built_in_metrics_range_is_refused_and_the_range_is_the_sliders() -> None:
    eval_set = ae.EvalSet.of("s", [ae.EvalCase.of("a", "hi", expect="hi")])
    report = ae.Evaluator("app", lambda message: message, progress=False).evaluate(
        eval_set, metrics=[ae.EvalMetric.final_response()]
    )
    what_if = WhatIf(report)

    assert what_if.score_range("final_response_avg_score") == (0.0, 1.0)
    with pytest.raises(ae.ConfigError, match="the threshold of final_response_avg_score: threshold 80 is outside"):
        what_if.outcome(WhatIfSettings({"final_response_avg_score": 80}))


def test_a_custom_metrics_range_holds_its_scores() -> None:
    what_if = WhatIf(scored_report(cases=3, num_runs=1))

    assert what_if.score_range("accuracy") == (0.0, 1.0)
