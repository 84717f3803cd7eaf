"""compare()'s statistics on synthetic reports whose answer is known; a report's intervals and detectable change.

The agents are deterministic: each answers "add i 1" right unless i is in its set of wrong cases, so
which cases pass in each report, and so every count the tests depend on, is fixed.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import binomtest

import agenteval as ae
from agenteval.analysis.compare import SIGNIFICANCE_COLUMNS, UNPAIRED_COLUMNS
from agenteval.analysis.statistics import (
    PASS_RATE_ROW,
    RUN_PASS_RATE_ROW,
    SUMMARY_COLUMNS,
    min_detectable_difference,
    paired_scores,
)
from agenteval.errors import ConfigError
from agenteval.status import EvalStatus
from tests.notebook.test_display import visible_text
from tests.notebook.test_html_export import Tags

HOSTILE_ID = "<script>alert('x & \"y\"')</script>"
METRICS = [ae.EvalMetric.final_response(), ae.EvalMetric.final_response("contains", name="contains")]
NAMES = [PASS_RATE_ROW, RUN_PASS_RATE_ROW, "final_response_avg_score", "contains"]


def case(number: int, eval_id: str = "", expect: str = "") -> ae.EvalCase:
    return ae.EvalCase.of(eval_id or f"case_{number:02d}", f"add {number} 1", expect=expect or str(number + 1))


def eval_set(cases: Iterable[ae.EvalCase] | None = None, eval_set_id: str = "set") -> ae.EvalSet:
    return ae.EvalSet.of(eval_set_id, list(cases) if cases is not None else [case(i) for i in range(20)])


def agent(wrong: Iterable[int]) -> Callable[[str], str]:
    """Adds right, except for the cases numbered in ``wrong``."""
    bad = set(wrong)

    def answer(message: str) -> str:
        number = int(message.split()[1])
        return "no idea" if number in bad else str(number + 1)

    return answer


def evaluate(
    wrong: Iterable[int],
    cases: ae.EvalSet | None = None,
    metrics: list[ae.EvalMetric] | None = None,
) -> ae.EvaluationReport:
    return ae.Evaluator("app", agent(wrong), progress=False).evaluate(cases or eval_set(), metrics=metrics or METRICS)


@pytest.fixture(scope="module")
def half_wrong() -> ae.EvaluationReport:
    """Cases 0-9 fail, 10-19 pass."""
    return evaluate(range(10))


@pytest.fixture(scope="module")
def improved(half_wrong: ae.EvaluationReport) -> ae.Comparison:
    """Eight cases fixed (2-9), none broken: 50% → 90%."""
    return ae.compare(half_wrong, evaluate({0, 1}))


def test_one_row_for_the_pass_rate_and_one_per_metric_with_the_known_answer(improved: ae.Comparison) -> None:
    table = improved.significance

    assert list(table.columns) == list(SIGNIFICANCE_COLUMNS)
    assert list(table["metric"]) == NAMES
    for row in table.to_dict("records"):
        assert (row["n_pairs"], row["baseline_mean"], row["candidate_mean"]) == (20, 0.5, 0.9)
        assert row["mean_diff"] == pytest.approx(0.4)
        assert row["ci_low"] <= 0.4 <= row["ci_high"]
        # 8 cases fixed, none broken: both tests put the chance of that at 2 / 2**8.
        assert row["p_value"] == pytest.approx(2 / 2**8)
    assert table.loc[0, "test"] == "exact McNemar"
    assert table.loc[0, "p_value"] == binomtest(0, 8, 0.5).pvalue
    assert set(table["test"][1:]) == {"exact sign-flip permutation"}
    assert list(table["label"]) == [
        "cases passed (overall status)",
        "runs passed (per-run pass rate)",
        *["mean score"] * 2,
    ]


def test_mcnemar_counts_the_discordant_cases_both_ways() -> None:
    # Cases 0-2 fixed, 5-10 broken, 3-4 still failing: b = 6, c = 3.
    diff = ae.compare(evaluate(range(5)), evaluate(range(3, 11)))

    row = diff.significance.iloc[0]
    assert row["p_value"] == binomtest(6, 9, 0.5).pvalue
    assert row["mean_diff"] == pytest.approx(-3 / 20)
    assert diff.summary["significant"][PASS_RATE_ROW] is False


def test_the_summary_says_in_words_whether_each_change_is_significant(improved: ae.Comparison) -> None:
    summary = improved.summary

    assert summary["confidence"] == 0.95
    assert summary["significant"] == dict.fromkeys(NAMES, True)
    assert summary["pairing"] == "20 cases paired by id (both reports evaluated the same eval set content)"
    sentence = summary["significance"][PASS_RATE_ROW]
    assert re.fullmatch(
        r"cases passed \(overall status\): 50% → 90% \(\+40 pts, 95% CI \+\d+ to \+\d+ pts\) over 20 paired cases: "
        r"significant at the 5% level \(exact McNemar, p = 0\.00781\)",
        sentence,
    ), sentence
    assert re.fullmatch(
        r"contains: mean 0\.50 → 0\.90 \(\+0\.40, 95% CI \+0\.\d\d to \+0\.\d\d\) over 20 paired cases: "
        r"significant at the 5% level \(exact sign-flip permutation, p = 0\.00781\)",
        summary["significance"]["contains"],
    )


def test_confidence_sets_the_level_of_the_verdict_and_the_intervals(half_wrong: ae.EvaluationReport) -> None:
    candidate = evaluate(range(4))  # six fixed: p = 2 / 2**6 = 0.031

    at_95, at_99 = ae.compare(half_wrong, candidate), ae.compare(half_wrong, candidate, confidence=0.99)

    assert at_95.summary["significant"][PASS_RATE_ROW] is True
    assert at_99.summary["significant"][PASS_RATE_ROW] is False
    assert "99% CI" in at_99.summary["significance"][PASS_RATE_ROW]
    assert "not significant at the 1% level (exact McNemar, p = 0.0312)" in at_99.summary["significance"][PASS_RATE_ROW]
    wide, narrow = at_99.significance.iloc[1], at_95.significance.iloc[1]
    assert wide["ci_low"] <= narrow["ci_low"] and wide["ci_high"] >= narrow["ci_high"]


def test_a_seed_makes_the_resamples_reproducible(half_wrong: ae.EvaluationReport) -> None:
    candidate = evaluate({0, 1, 12, 15})

    first = ae.compare(half_wrong, candidate, seed=3).significance
    pd.testing.assert_frame_equal(first, ae.compare(half_wrong, candidate, seed=3).significance)
    # The seed reaches the statistics: the same numbers from the per-case scores directly.
    before = [0.0] * 10 + [1.0] * 10
    after = [0.0, 0.0] + [1.0] * 10 + [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    direct = paired_scores(before, after, seed=3)
    assert first.iloc[1][["ci_low", "ci_high", "p_value"]].tolist() == [direct.ci_low, direct.ci_high, direct.p_value]


def test_with_several_runs_the_per_case_means_are_paired() -> None:
    calls: dict[str, int] = {}
    lock = threading.Lock()

    def first_try_wrong(message: str) -> str:
        """Cases 0-5 answer wrong in the first of their runs (whichever runs first), right after."""
        number = int(message.split()[1])
        with lock:
            calls[message] = calls.get(message, 0) + 1
            first = calls[message] == 1
        return "no idea" if first and number < 6 else str(number + 1)

    baseline = ae.Evaluator("app", agent(()), num_runs=3, progress=False).evaluate(eval_set(), metrics=METRICS)
    candidate = ae.Evaluator("app", first_try_wrong, num_runs=3, progress=False).evaluate(eval_set(), metrics=METRICS)

    table = ae.compare(baseline, candidate).significance.set_index("metric")
    scores = table.loc["final_response_avg_score"]
    assert scores["n_pairs"] == 20  # cases, not runs
    assert (scores["baseline_mean"], scores["candidate_mean"]) == (1.0, pytest.approx((14 + 6 * 2 / 3) / 20))
    assert scores["p_value"] == pytest.approx(2 / 2**6)
    # A case passes overall when its averaged metrics reach their thresholds: 2/3 does not.
    assert table.loc[PASS_RATE_ROW, "candidate_mean"] == pytest.approx(14 / 20)


def test_edited_and_missing_cases_are_left_out_with_the_reason(half_wrong: ae.EvaluationReport) -> None:
    cases = [case(i) for i in range(19)]
    cases[3] = case(3, expect="four")  # the same id asks something else now
    cases += [case(30, eval_id="added"), case(31, eval_id=HOSTILE_ID)]
    diff = ae.compare(half_wrong, evaluate(range(10), eval_set(cases)))

    assert list(diff.unpaired.columns) == list(UNPAIRED_COLUMNS)
    assert diff.unpaired.values.tolist() == [
        ["case_03", "edited"],
        ["added", "only in candidate"],
        [HOSTILE_ID, "only in candidate"],
        ["case_19", "only in baseline"],
    ]
    assert set(diff.significance["n_pairs"]) == {18}
    assert diff.summary["pairing"] == "18 cases paired by id and content; 4 left out (see comparison.unpaired)"


def test_a_loaded_report_keeps_its_eval_set_and_pairs_by_content(half_wrong: ae.EvaluationReport) -> None:
    reloaded = ae.EvaluationReport.from_result(ae.EvalSetResult.from_json(half_wrong.result.to_json()))
    assert reloaded.eval_set is not None

    cases = [case(i) for i in range(20)]
    cases[3] = case(3, expect="four")
    diff = ae.compare(reloaded, evaluate(range(10), eval_set(cases)))
    assert diff.unpaired.values.tolist() == [["case_03", "edited"]]


def test_a_loaded_report_without_its_eval_set_is_paired_by_id(half_wrong: ae.EvaluationReport) -> None:
    # A result saved before results held their eval set, or by the reference framework.
    older = half_wrong.result.model_copy(deep=True)
    assert older.summary is not None and older.summary.provenance is not None
    older.summary.provenance = older.summary.provenance.model_copy(update={"eval_set": None})
    loaded = ae.EvaluationReport.from_result(older)
    assert loaded.eval_set is None

    same = ae.compare(loaded, evaluate({0, 1}))
    assert same.summary["pairing"].endswith("paired by id (both reports evaluated the same eval set content)")

    cases = [case(i) for i in range(20)]
    cases[3] = case(3, expect="four")
    edited = evaluate(range(10), eval_set(cases))
    unchecked = ae.compare(loaded, edited)
    assert unchecked.summary["pairing"] == (
        "20 cases paired by id without comparing their content: their eval sets differ (their content hashes"
        " do), so edited cases may be paired; the baseline report has no eval set (load with eval_set= to pair"
        " only unchanged cases)"
    )
    assert unchecked.unpaired.empty
    checked = ae.compare(ae.EvaluationReport.from_result(half_wrong.result, eval_set=eval_set()), edited)
    assert checked.unpaired.values.tolist() == [["case_03", "edited"]]


def test_no_pairs_give_untested_rows_not_errors(half_wrong: ae.EvaluationReport) -> None:
    other = evaluate((), eval_set([case(i, eval_id=f"other_{i}") for i in range(3)]))

    diff = ae.compare(half_wrong, other)
    table = diff.significance

    assert list(table["n_pairs"]) == [0, 0, 0, 0]
    assert table["p_value"].isna().all() and table["ci_low"].isna().all()
    assert list(table["test"]) == [*["none: no paired cases"] * 2, *["none: no case has a score in both reports"] * 2]
    assert diff.summary["significant"] == dict.fromkeys(NAMES, None)
    assert diff.summary["significance"][PASS_RATE_ROW] == "cases passed (overall status): not tested (no paired cases)"
    assert (
        diff.summary["significance"][RUN_PASS_RATE_ROW]
        == "runs passed (per-run pass rate): not tested (no paired cases)"
    )
    assert "not tested (no paired cases)" in visible_text(diff._repr_html_())


def test_one_pair_is_tested_and_never_significant() -> None:
    one = eval_set([case(0)])

    table = ae.compare(evaluate({0}, one), evaluate((), one)).significance

    assert list(table["n_pairs"]) == [1, 1, 1, 1]
    assert list(table["p_value"]) == [1.0, 1.0, 1.0, 1.0]
    assert list(table["mean_diff"]) == [1.0, 1.0, 1.0, 1.0]
    assert list(table["test"]) == ["exact McNemar", *["exact sign-flip permutation"] * 3]


def test_a_report_against_itself_changes_nothing(half_wrong: ae.EvaluationReport) -> None:
    diff = ae.compare(half_wrong, half_wrong)
    table = diff.significance

    assert list(table["mean_diff"]) == [0.0] * 4 and list(table["p_value"]) == [1.0] * 4
    assert list(table["test"]) == ["exact McNemar", *["none: every difference is zero"] * 3]
    assert diff.summary["significant"] == dict.fromkeys(NAMES, False)
    assert diff.summary["significance"]["contains"].endswith(
        "not significant at the 5% level (every difference is zero, p = 1)"
    )


def not_evaluated(report: ae.EvaluationReport, metric_name: str) -> ae.EvaluationReport:
    """The report as if ``metric_name`` had not applied to any case."""
    result = report.result.model_copy(deep=True)
    for case_result in result.eval_case_results:
        for metric in case_result.overall_eval_metric_results:
            if metric.metric_name == metric_name:
                metric.eval_status = EvalStatus.NOT_EVALUATED
    return ae.EvaluationReport.from_result(result, eval_set=report.eval_set)


def test_a_metric_without_scores_is_reported_untested(half_wrong: ae.EvaluationReport, improved: ae.Comparison) -> None:
    diff = ae.compare(not_evaluated(half_wrong, "contains"), not_evaluated(improved.candidate, "contains"))

    row = diff.significance.set_index("metric").loc["contains"].to_dict()
    assert row["n_pairs"] == 0 and math.isnan(row["p_value"])
    assert row["test"] == "none: no case has a score in both reports"
    assert diff.summary["significance"]["contains"] == "contains: not tested (no case has a score in both reports)"


def test_a_metric_in_one_report_only_says_which(half_wrong: ae.EvaluationReport) -> None:
    metrics = [METRICS[0], ae.EvalMetric.final_response("regex", name="pattern")]

    table = ae.compare(half_wrong, evaluate({0, 1}, metrics=metrics)).significance

    assert list(table["metric"]) == [
        PASS_RATE_ROW,
        RUN_PASS_RATE_ROW,
        "final_response_avg_score",
        "pattern",
        "contains",
    ]
    assert table.loc[3, "test"] == "none: only the candidate has this metric"
    assert table.loc[4, "test"] == "none: only the baseline has this metric"
    assert table.loc[3:, "n_pairs"].tolist() == [0, 0]
    assert table.loc[2, "n_pairs"] == 20


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"confidence": 0}, "confidence=0 must be a number strictly between 0 and 1"),
        ({"confidence": "95%"}, "confidence='95%' must be"),
        ({"seed": -1}, "seed=-1 must be a non-negative int"),
        ({"seed": True}, "seed=True must be a non-negative int"),
    ],
)
def test_bad_options_are_refused(half_wrong: ae.EvaluationReport, options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        ae.compare(half_wrong, half_wrong, **options)  # type: ignore[arg-type]


def test_the_html_says_in_words_which_changes_are_significant(half_wrong: ae.EvaluationReport) -> None:
    better = ae.compare(half_wrong, evaluate({0, 1}))
    worse = ae.compare(evaluate({0, 1}), half_wrong)
    noise = ae.compare(half_wrong, evaluate({*range(9), 12}))  # one fixed, one broken

    markup = better._repr_html_()
    section = markup[markup.index("<h4>Significance</h4>") : markup.index("<h4>Cases whose status changed")]
    text = visible_text(section)
    assert better.summary["significance"][PASS_RATE_ROW] in text
    assert "20 cases paired by id (both reports evaluated the same eval set content)." in text
    assert "A change is significant when its p-value is below 5%" in text
    assert section.count('<li class="ae-up">') == 4
    for heading in (
        "Metric",
        "Counts",
        "Pairs",
        "Baseline mean",
        "Candidate mean",
        "Change",
        "CI low",
        "CI high",
        "p-value",
    ):
        assert f"<th>{heading}</th>" in section
    assert '<td class="ae-num">0.00781</td>' in section
    assert worse._repr_html_().count('<li class="ae-down">') == 4
    quiet = visible_text(noise._repr_html_())
    assert "cases passed (overall status): 50% → 50% (0 pts" in quiet and "not significant at the 5% level" in quiet
    assert '<li class="">' in noise._repr_html_()


def test_the_html_folds_the_unpaired_cases_escaped(half_wrong: ae.EvaluationReport) -> None:
    cases = [case(i) for i in range(20)] + [case(31, eval_id=HOSTILE_ID)]
    markup = ae.compare(half_wrong, evaluate(range(10), eval_set(cases)))._repr_html_()

    assert (
        '<details class="ae-fold"><summary><code>comparison.unpaired</code> '
        '<span class="ae-muted">(1 rows: cases left out of the tests)</span>' in markup
    )
    assert "only in candidate" in visible_text(markup)
    tags = Tags()
    tags.feed(markup)
    assert "script" not in {tag for tag, _ in tags.found}


def test_the_exported_page_has_a_significance_section(improved: ae.Comparison, tmp_path: Path) -> None:
    page = improved.to_html(tmp_path / "diff.html").read_text(encoding="utf-8")

    assert '<a href="#significance">Significance</a>' in page
    assert '<section id="significance"><h2>Significance</h2>' in page
    assert "significant at the 5% level (exact McNemar, p = 0.00781)" in page


def test_summary_table_gives_means_with_intervals(half_wrong: ae.EvaluationReport) -> None:
    table = half_wrong.summary_table()

    assert list(table.columns) == list(SUMMARY_COLUMNS)
    assert list(table["metric"]) == NAMES
    assert list(table["label"]) == [
        "cases passed (overall status)",
        "runs passed (per-run pass rate)",
        *["mean score"] * 2,
    ]
    rate = table.iloc[0]
    assert (rate["n_cases"], rate["mean"], rate["interval"]) == (20, 0.5, "wilson")
    interval = binomtest(10, 20).proportion_ci(0.95, method="wilson")
    assert (rate["ci_low"], rate["ci_high"]) == pytest.approx((interval.low, interval.high))
    runs = table.iloc[1]  # one run each: the share of runs passed is the share of cases
    assert (runs["n_cases"], runs["mean"], runs["interval"]) == (20, 0.5, "student t")
    scores = table.iloc[2]
    assert (scores["n_cases"], scores["mean"], scores["interval"]) == (20, 0.5, "student t")
    assert scores["ci_low"] < 0.5 < scores["ci_high"]
    assert (table.iloc[0]["ci_high"] - table.iloc[0]["ci_low"]) > (
        half_wrong.summary_table(confidence=0.8).iloc[0]["ci_high"]
        - half_wrong.summary_table(confidence=0.8).iloc[0]["ci_low"]
    )


def test_summary_table_leaves_out_what_was_not_evaluated(half_wrong: ae.EvaluationReport) -> None:
    rows = {row["metric"]: row for row in not_evaluated(half_wrong, "contains").summary_table().to_dict("records")}

    assert rows["contains"]["n_cases"] == 0 and math.isnan(rows["contains"]["mean"])
    assert rows[PASS_RATE_ROW]["n_cases"] == 20


def test_min_detectable_effect_says_whether_twenty_cases_are_enough(half_wrong: ae.EvaluationReport) -> None:
    effect = half_wrong.min_detectable_effect()

    assert effect == min_detectable_difference(0.5, 20, power=0.8, confidence=0.95)
    assert effect == pytest.approx(0.46, abs=0.01)
    assert half_wrong.min_detectable_effect(power=0.9) > effect
    assert half_wrong.min_detectable_effect(confidence=0.99) > effect
    assert evaluate((), eval_set([case(i) for i in range(4)])).min_detectable_effect() == math.inf
    with pytest.raises(ConfigError, match="power=80 must be a number strictly between 0 and 1"):
        half_wrong.min_detectable_effect(power=80)


def test_a_thousand_cases_and_three_metrics_compare_well_under_a_second() -> None:
    metrics = [*METRICS, ae.EvalMetric.final_response("regex", name="pattern")]
    cases = [case(i) for i in range(1000)]
    baseline = evaluate(range(0, 1000, 3), eval_set(cases), metrics)
    cases[5] = case(5, expect="six")  # another eval set: every case's content is compared
    candidate = evaluate(range(0, 1000, 4), eval_set(cases), metrics)
    assert len(ae.compare(baseline, baseline).significance) == 5  # scipy's first import is not the work measured

    started = time.perf_counter()
    table = ae.compare(baseline, candidate).significance
    elapsed = time.perf_counter() - started

    assert list(table["n_pairs"]) == [999] * 5
    assert elapsed < 1.0


def test_a_p_value_equal_to_the_level_is_not_significant() -> None:
    from agenteval.analysis.compare import _alpha, _significant

    assert _alpha(0.95) == 0.05 and _alpha(0.99) == 0.01
    assert _significant(0.05, _alpha(0.95)) is False
    assert _significant(0.0499, _alpha(0.95)) is True


def test_comparing_reports_of_different_eval_sets_warns(half_wrong: ae.EvaluationReport) -> None:
    other = evaluate(range(5), eval_set(eval_set_id="another-set"))

    with pytest.warns(ae.errors.EvalSetChangedWarning, match=r"different eval sets \('set' and 'another-set'\)"):
        diff = ae.compare(half_wrong, other)
    assert set(diff.significance["n_pairs"]) == {20}  # same ids and content: they pair
