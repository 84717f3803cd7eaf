"""Every rate says what it counts, beside the per-run pass rate; ROUGE's continuous mean F1 is reported."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

import pytest

import agenteval as ae
from agenteval.analysis.statistics import (
    PASS_RATE_LABEL,
    PASS_RATE_ROW,
    RUN_PASS_RATE_LABEL,
    RUN_PASS_RATE_ROW,
    mean_interval,
)
from tests.notebook.test_display import visible_text

CASES = ae.EvalSet.of("set", [ae.EvalCase.of(f"case_{i}", f"add {i} 1", expect=str(i + 1)) for i in range(10)])
METRIC = [ae.EvalMetric.final_response()]


def wrong_in_first_runs(failures: dict[int, int]) -> Callable[[str], str]:
    """Case i answers wrong in its first ``failures[i]`` calls (runs are serial: its first runs), right after."""
    calls: dict[int, int] = {}
    lock = threading.Lock()

    def answer(message: str) -> str:
        number = int(message.split()[1])
        with lock:
            calls[number] = calls.get(number, 0) + 1
            call = calls[number]
        return "no idea" if call <= failures.get(number, 0) else str(number + 1)

    return answer


def evaluate(failures: dict[int, int]) -> ae.EvaluationReport:
    evaluator = ae.Evaluator("app", wrong_in_first_runs(failures), num_runs=3, progress=False)
    return evaluator.evaluate(CASES, metrics=METRIC)


@pytest.fixture(scope="module")
def once_each() -> ae.EvaluationReport:
    """Cases 0-5 fail one run of three, 6-9 pass all three: 4 cases pass overall, 80% of runs pass."""
    return evaluate(dict.fromkeys(range(6), 1))


def test_summary_table_labels_the_overall_status_and_shows_the_per_run_rate(once_each: ae.EvaluationReport) -> None:
    table = once_each.summary_table().set_index("metric")

    cases, runs = table.loc[PASS_RATE_ROW], table.loc[RUN_PASS_RATE_ROW]
    assert (cases["label"], cases["n_cases"], cases["mean"]) == (PASS_RATE_LABEL, 10, pytest.approx(0.4))
    assert (runs["label"], runs["n_cases"], runs["mean"]) == (RUN_PASS_RATE_LABEL, 10, pytest.approx(0.8))
    assert (runs["ci_low"], runs["ci_high"]) == pytest.approx(mean_interval([2 / 3] * 6 + [1.0] * 4))
    assert runs["mean"] == pytest.approx(once_each.pass_at_k(1))
    assert table.loc["final_response_avg_score", "label"] == "mean score"


def test_compare_tests_both_rates_and_says_what_each_counts(once_each: ae.EvaluationReport) -> None:
    diff = ae.compare(evaluate(dict.fromkeys(range(6), 2)), once_each)  # each of cases 0-5 fails one run fewer
    table = diff.significance.set_index("metric")

    assert table.loc[PASS_RATE_ROW, "label"] == PASS_RATE_LABEL
    # The overall status did not move (0-5 still fail a run, with a threshold of 1): the runs did.
    assert (table.loc[PASS_RATE_ROW, "baseline_mean"], table.loc[PASS_RATE_ROW, "candidate_mean"]) == (0.4, 0.4)
    runs = table.loc[RUN_PASS_RATE_ROW]
    assert runs["label"] == RUN_PASS_RATE_LABEL and runs["n_pairs"] == 10
    assert (runs["baseline_mean"], runs["candidate_mean"]) == (pytest.approx(0.6), pytest.approx(0.8))
    assert runs["test"] == "exact sign-flip permutation" and runs["p_value"] == pytest.approx(2 / 2**6)
    words = diff.summary["significance"]
    assert words[PASS_RATE_ROW].startswith("cases passed (overall status): 40% → 40% (0 pts")
    assert re.match(
        r"runs passed \(per-run pass rate\): 60% → 80% \(\+20 pts, 95% CI \+\d+ to \+\d+ pts\)",
        words[RUN_PASS_RATE_ROW],
    )
    assert diff.summary["significant"][RUN_PASS_RATE_ROW] is True
    text = visible_text(diff._repr_html_())
    assert words[RUN_PASS_RATE_ROW] in text and RUN_PASS_RATE_LABEL in text


def rouge_report() -> ae.EvaluationReport:
    cases = ae.EvalSet.of(
        "set",
        [
            ae.EvalCase.of("close", "a", expect="the cat sat on the mat"),
            ae.EvalCase.of("far", "b", expect="the dog ran in the park"),
        ],
    )
    replies = {"a": "the cat sat on a mat", "b": "the bird flew"}
    metric = ae.EvalMetric.rouge("rouge1", f1=0.5, name="rouge")
    return ae.Evaluator("app", lambda message: replies[message], progress=False).evaluate(cases, metrics=[metric])


def test_summary_table_gives_rouges_mean_f1_beside_its_pass_fail_score() -> None:
    report = rouge_report()
    measures = report.metrics.set_index("eval_id")["measure"]

    table = report.summary_table().set_index("metric")

    assert table.loc["rouge", "mean"] == 0.5  # one turn of two reaches F1 0.5: the 0/1 rule
    f1 = table.loc["rouge:rouge1_f1"]
    assert (f1["label"], f1["n_cases"]) == ("mean rouge1_f1", 2)
    assert f1["mean"] == pytest.approx((measures["close"] + measures["far"]) / 2)
    assert 0 < measures["far"] < 0.5 < measures["close"] < 1
    assert list(table.index) == [PASS_RATE_ROW, RUN_PASS_RATE_ROW, "rouge", "rouge:rouge1_f1"]


def test_a_measure_that_is_the_score_itself_gets_no_row() -> None:
    # As an LLM judge records its score as the measure judge_score.
    report = rouge_report()
    result = report.result.model_copy(deep=True)
    for case in result.eval_case_results:
        for metric in case.overall_eval_metric_results:
            assert metric.details is not None
            metric.details.measures = {"judge_score": metric.score}
    table = ae.EvaluationReport.from_result(result).summary_table()

    assert "rouge:judge_score" not in set(table["metric"])


def test_intervals_of_rates_and_rouge_measures_stay_within_0_and_1() -> None:
    from agenteval.analysis.statistics import summary_rows

    rows = summary_rows(
        [True, False, True],
        [1.0, 0.0, 1.0],
        {"rouge": [1.0, 0.0, 1.0]},
        measures={("rouge", "rougeL_f1"): [0.95, 0.05, 0.99], ("json", "json_number_difference"): [5.0, -3.0, 9.0]},
    )
    by_metric = {row["metric"]: row for row in rows}
    for name in ("run_pass_rate", "rouge:rougeL_f1"):
        assert 0.0 <= by_metric[name]["ci_low"] <= by_metric[name]["ci_high"] <= 1.0, by_metric[name]
    assert by_metric["json:json_number_difference"]["ci_low"] < 0.0
