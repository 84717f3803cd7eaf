"""The paired tests, intervals and power of agenteval.analysis.statistics, checked against scipy and known answers."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest
from scipy.stats import binomtest, norm, wilcoxon

from agenteval.analysis import statistics
from agenteval.analysis.statistics import (
    PASS_RATE_ROW,
    RUN_PASS_RATE_ROW,
    SUMMARY_COLUMNS,
    bootstrap_mean_interval,
    mcnemar_exact,
    mean_interval,
    min_detectable_difference,
    paired_pass_rates,
    paired_score_test,
    paired_scores,
    summary_rows,
    wilson_interval,
)
from agenteval.errors import ConfigError


@pytest.mark.parametrize(("seed", "n"), [(0, 20), (1, 40), (2, 7), (3, 200)])
def test_mcnemar_p_value_is_the_binomial_test_of_the_discordant_pairs(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    before, after = rng.random(n) < 0.5, rng.random(n) < 0.7
    b, c = int(np.sum(before & ~after)), int(np.sum(~before & after))

    assert b + c > 0
    assert mcnemar_exact(before, after) == binomtest(b, b + c, 0.5).pvalue
    assert paired_pass_rates(before, after).p_value == binomtest(b, b + c, 0.5).pvalue


def test_mcnemar_without_discordant_pairs_is_one() -> None:
    assert mcnemar_exact([True, False, True], [True, False, True]) == 1.0


def test_pass_rate_change_is_reported_with_its_means_and_test() -> None:
    result = paired_pass_rates([1] * 10 + [0] * 10, [1] * 16 + [0] * 4)

    assert (result.n_pairs, result.baseline_mean, result.candidate_mean) == (20, 0.5, 0.8)
    assert result.mean_diff == pytest.approx(0.3)
    assert result.p_value == binomtest(0, 6, 0.5).pvalue == 2 * 0.5**6
    assert result.test == "exact McNemar"
    assert result.ci_low <= 0.3 <= result.ci_high


def test_the_same_seed_gives_the_same_numbers_and_another_seed_other_resamples() -> None:
    rng = np.random.default_rng(5)
    before = rng.random(60)
    after = np.round(before + rng.normal(0.05, 0.2, 60), 1)  # rounded: ties, so the permutation test runs

    first, again = paired_scores(before, after, seed=11), paired_scores(before, after, seed=11)
    other = paired_scores(before, after, seed=12)

    assert first == again
    assert (first.ci_low, first.ci_high) != (other.ci_low, other.ci_high)
    assert first.mean_diff == other.mean_diff


def test_a_percentile_bootstrap_interval_of_a_mean() -> None:
    values = np.arange(100, dtype=float)

    low, high = bootstrap_mean_interval(values, confidence=0.95, seed=0)

    # The mean of 100 draws from 0..99 has sd 28.87 / 10: the interval is about 49.5 ± 1.96 × 2.887.
    assert low == pytest.approx(49.5 - 1.96 * 2.887, abs=0.5)
    assert high == pytest.approx(49.5 + 1.96 * 2.887, abs=0.5)
    assert bootstrap_mean_interval([3.0], confidence=0.9, seed=0) == (3.0, 3.0)
    assert all(math.isnan(end) for end in bootstrap_mean_interval([], confidence=0.9, seed=0))


def brute_force_sign_flip_p(differences: list[float]) -> float:
    observed = abs(np.mean(differences))
    flips = [
        abs(np.mean(np.array(signs) * differences)) for signs in itertools.product((1, -1), repeat=len(differences))
    ]
    return float(np.mean([flip >= observed - 1e-12 for flip in flips]))


@pytest.mark.parametrize(
    "differences",
    [[0.1, -0.3, 0.5, 0.7, 0.2], [1.0, 1.0, 1.0], [0.4, 0.4, -0.1, 0.25, 0.3, 0.6, 0.2, 0.9, 0.1, -0.2, 0.4, 0.5]],
)
def test_few_or_tied_differences_get_the_exact_sign_flip_test(differences: list[float]) -> None:
    p_value, test = paired_score_test(differences, seed=0)

    assert test == "exact sign-flip permutation"
    assert p_value == pytest.approx(brute_force_sign_flip_p(differences))


def test_many_distinct_differences_get_the_exact_wilcoxon_test() -> None:
    differences = np.random.default_rng(3).normal(0.3, 1.0, 30)

    p_value, test = paired_score_test(differences, seed=0)

    assert test == "exact Wilcoxon signed-rank"
    assert p_value == wilcoxon(differences, method="exact").pvalue


def test_more_than_fifty_differences_get_the_normal_approximation() -> None:
    differences = np.round(np.random.default_rng(4).normal(0.1, 1.0, 80), 1)

    p_value, test = paired_score_test(differences, seed=0)

    assert test == "Wilcoxon signed-rank, normal approximation"
    nonzero = differences[differences != 0]
    assert p_value == wilcoxon(nonzero, method="auto").pvalue


def test_tied_differences_beyond_enumeration_get_random_sign_flips() -> None:
    differences = [1.0] * 14 + [-1.0] * 6

    p_value, test = paired_score_test(differences, seed=0)

    assert test == f"sign-flip permutation, {statistics.PERMUTATION_RESAMPLES} random flips"
    # Flipping the signs of ±1 is the sign test.
    assert p_value == pytest.approx(binomtest(14, 20, 0.5).pvalue, abs=0.01)


def test_zero_differences_are_left_out_of_the_test_but_counted_in_the_pairs() -> None:
    result = paired_scores([0.5, 0.5, 0.2, 0.3], [0.5, 0.5, 0.4, 0.6])

    assert result.n_pairs == 4
    assert result.mean_diff == pytest.approx(0.125)
    assert result.p_value == pytest.approx(brute_force_sign_flip_p([0.2, 0.3]))


def test_edge_cases_give_clear_rows() -> None:
    empty = paired_scores([], [])
    assert (empty.n_pairs, empty.test) == (0, "none: no case has a score in both reports")
    assert all(math.isnan(value) for value in (empty.baseline_mean, empty.mean_diff, empty.ci_low, empty.p_value))
    assert paired_pass_rates([], []).test == "none: no paired cases"

    one = paired_scores([0.2], [0.7])
    assert (one.n_pairs, one.p_value, one.test) == (1, 1.0, "exact sign-flip permutation")
    assert (one.ci_low, one.ci_high) == pytest.approx((0.5, 0.5))

    same = paired_scores([0.2, 0.4, 1.0], [0.2, 0.4, 1.0])
    assert (same.mean_diff, same.ci_low, same.ci_high, same.p_value) == (0.0, 0.0, 0.0, 1.0)
    assert same.test == "none: every difference is zero"

    nans = paired_scores([math.nan, 0.3, math.nan], [0.1, math.nan, math.nan])
    assert (nans.n_pairs, nans.test) == (0, "none: no case has a score in both reports")

    partly = paired_scores([math.nan, 0.3, 0.5], [0.1, 0.4, 0.9])
    assert (partly.n_pairs, partly.baseline_mean) == (2, 0.4)
    assert partly.candidate_mean == pytest.approx(0.65)


def test_bad_arguments_are_refused_with_the_value() -> None:
    with pytest.raises(ConfigError, match="confidence=1.5 must be a number strictly between 0 and 1"):
        paired_scores([1.0], [1.0], confidence=1.5)
    with pytest.raises(ConfigError, match="2 baseline values, 3 candidate values"):
        paired_pass_rates([1, 0], [1, 0, 1])
    with pytest.raises(ConfigError, match="power=1 must be"):
        min_detectable_difference(0.5, 20, power=1)


def test_wilson_interval_matches_its_formula() -> None:
    k, n, z = 15, 20, norm.ppf(0.975)
    p = k / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z / (1 + z**2 / n) * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))

    assert wilson_interval(k, n) == pytest.approx((centre - half, centre + half))
    low, high = wilson_interval(20, 20)
    assert 0.8 < low < 1.0 and high == pytest.approx(1.0)
    assert all(math.isnan(end) for end in wilson_interval(0, 0))


def test_mean_interval_is_the_student_t_interval() -> None:
    low, high = mean_interval([1.0, 2.0, 3.0], confidence=0.95)

    assert (low + high) / 2 == pytest.approx(2.0)
    assert (high - low) / 2 == pytest.approx(4.302653 * 1.0 / math.sqrt(3), rel=1e-6)
    assert all(math.isnan(end) for end in mean_interval([0.5]))


def test_summary_rows_label_each_rate_by_what_it_counts() -> None:
    rows = summary_rows(
        [True] * 15 + [False] * 5,
        [1.0, 2 / 3, 0.0, math.nan],
        {"m": [1.0, 2.0, 3.0, math.nan], "empty": [math.nan]},
        measures={("m", "rougeL_f1"): [0.5, 0.7, math.nan, 0.9]},
    )

    assert [list(row) for row in rows] == [list(SUMMARY_COLUMNS)] * 5
    assert rows[0] == {
        "metric": PASS_RATE_ROW,
        "label": "cases passed (overall status)",
        "n_cases": 20,
        "mean": 0.75,
        "ci_low": wilson_interval(15, 20)[0],
        "ci_high": wilson_interval(15, 20)[1],
        "interval": "wilson",
    }
    # Each case's share of runs that passed, averaged over the cases that passed or failed a run.
    assert rows[1]["metric"] == RUN_PASS_RATE_ROW and rows[1]["label"] == "runs passed (per-run pass rate)"
    assert (rows[1]["n_cases"], rows[1]["mean"]) == (3, pytest.approx(5 / 9))
    # The t interval, cut to [0, 1]: a share of runs cannot leave it.
    low, high = mean_interval([1.0, 2 / 3, 0.0])
    assert (rows[1]["ci_low"], rows[1]["ci_high"], rows[1]["interval"]) == (max(low, 0.0), min(high, 1.0), "student t")
    assert (rows[2]["metric"], rows[2]["label"], rows[2]["n_cases"], rows[2]["mean"]) == ("m", "mean score", 3, 2.0)
    assert (rows[2]["ci_low"], rows[2]["ci_high"]) == mean_interval([1.0, 2.0, 3.0])
    assert rows[2]["interval"] == "student t"
    # The metric's measure follows it: the continuous mean that papers report (a ROUGE F1).
    assert (rows[3]["metric"], rows[3]["label"], rows[3]["n_cases"]) == ("m:rougeL_f1", "mean rougeL_f1", 3)
    assert rows[3]["mean"] == pytest.approx(0.7)
    low, high = mean_interval([0.5, 0.7, 0.9])
    assert (rows[3]["ci_low"], rows[3]["ci_high"]) == (max(low, 0.0), min(high, 1.0))
    assert rows[4]["n_cases"] == 0 and math.isnan(rows[4]["mean"]) and math.isnan(rows[4]["ci_low"])


def test_min_detectable_difference_solves_its_equation() -> None:
    rate, n = 0.7, 40
    change = min_detectable_difference(rate, n, power=0.8, confidence=0.95)
    other = rate - change
    discordant = rate * (1 - other) + other * (1 - rate)

    left = change * math.sqrt(n) - 1 / math.sqrt(n)
    right = norm.ppf(0.975) * math.sqrt(discordant) + norm.ppf(0.8) * math.sqrt(discordant - change**2)
    assert left == pytest.approx(right)


def test_min_detectable_difference_answers_how_many_cases_are_enough() -> None:
    sizes = [min_detectable_difference(0.5, n) for n in (20, 50, 200, 1000)]

    assert sizes == sorted(sizes, reverse=True)
    assert sizes[0] == pytest.approx(0.46, abs=0.01) and sizes[2] == pytest.approx(0.14, abs=0.01)
    assert min_detectable_difference(0.2, 100) == pytest.approx(min_detectable_difference(0.8, 100))
    assert min_detectable_difference(0.5, 100, power=0.9) > min_detectable_difference(0.5, 100, power=0.8)
    assert min_detectable_difference(0.5, 100, confidence=0.99) > min_detectable_difference(0.5, 100)
    # All passing is no shortcut: a drop must still be detected.
    assert 0 < min_detectable_difference(1.0, 20) < 1


def test_min_detectable_difference_says_when_nothing_is_detectable() -> None:
    # Five cases: even all five flipping gives p = 2 / 32 > 0.05.
    assert min_detectable_difference(0.0, 5) == math.inf
    assert min_detectable_difference(0.5, 10) == math.inf  # a full 50-point move falls short at 80% power
    assert math.isnan(min_detectable_difference(0.5, 0))
    assert math.isnan(min_detectable_difference(math.nan, 10))


def test_a_thousand_cases_and_three_metrics_take_well_under_a_second() -> None:
    rng = np.random.default_rng(0)
    paired_scores([0.1, 0.2], [0.3, 0.4])  # scipy's first import is not the work measured
    before, after = rng.random((3, 1000)), np.round(rng.random((3, 1000)), 1)

    started = time.perf_counter()
    paired_pass_rates(before[0] > 0.5, after[0] > 0.4)
    for metric in range(3):
        paired_scores(before[metric], after[metric])
    assert time.perf_counter() - started < 0.5


@pytest.mark.slow
def test_the_interval_covers_a_planted_difference_at_the_stated_rate() -> None:
    """Over 1000 seeds, the 90% interval of a planted mean difference of 0.1 covers it in about 90% of them."""
    planted, confidence, trials, n = 0.1, 0.9, 1000, 40
    covered = 0
    for seed in range(trials):
        rng = np.random.default_rng(seed)
        before = rng.random(n)
        after = np.clip(before + planted + rng.normal(0, 0.2, n), -1, 2)  # clipping far outside: the mean holds
        result = paired_scores(before, after, confidence=confidence, seed=seed)
        covered += result.ci_low <= planted <= result.ci_high
    # Binomial sd at 1000 trials is 0.0095; a percentile bootstrap at n = 40 runs about a point narrow.
    assert 0.86 <= covered / trials <= 0.93


@pytest.mark.slow
def test_the_pass_rate_interval_covers_a_planted_change_and_the_test_holds_its_level() -> None:
    """A planted change of the pass rate is covered at about 95%, and under no change McNemar rejects at most 5%."""
    trials, n = 1000, 150
    covered = rejected = 0
    for seed in range(trials):
        rng = np.random.default_rng(seed)
        before = rng.random(n) < 0.5
        after = np.where(rng.random(n) < 0.3, rng.random(n) < 0.7, before)  # expected change: 0.3 × 0.2
        covered += (result := paired_pass_rates(before, after, seed=seed)).ci_low <= 0.06 <= result.ci_high
        same = np.where(rng.random(n) < 0.3, rng.random(n) < 0.5, before)
        rejected += paired_pass_rates(before, same, seed=seed).p_value < 0.05
    # Binomial sd at 1000 trials is 0.007.
    assert 0.925 <= covered / trials <= 0.97
    assert rejected / trials <= 0.06
