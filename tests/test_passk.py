"""Tests for pass@k, pass^k and reading (n, c) from a result."""

from __future__ import annotations

import itertools
import math
import re
from decimal import Decimal, localcontext
from fractions import Fraction

import pytest

from agenteval.analysis.passk import (
    CaseRuns,
    mean_pass_at_k,
    mean_pass_hat_k,
    parse_case_pass_nc,
    parse_pass_nc,
    pass_at_k,
    pass_hat_k,
    pass_hat_k_unbiased,
)
from agenteval.errors import ConfigError
from agenteval.evalresult.models import EvalCaseResult, EvalSetResult
from agenteval.evalresult.summarize import summarize_multi_run
from agenteval.evalresult.summary import EvalSetResultSummary, EvalStatusCounts
from agenteval.status import EvalStatus


def exact_pass_at_k(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def decimal_pass_at_k(n: int, c: int, k: int) -> float:
    """``1 - C(n-c, k) / C(n, k)`` as the product of min(c, k) factors, to 60 digits."""
    few, many = sorted((c, k))
    with localcontext(prec=60):
        all_failed = Decimal(1)
        for i in range(few):
            all_failed *= Decimal(n - many - i) / Decimal(n - i)
        return float(1 - all_failed)


def enumerated_pass_at_k(n: int, c: int, k: int) -> Fraction:
    """Share of the k-subsets of n runs (the first c successful) that contain a success."""
    subsets = list(itertools.combinations(range(n), k))
    return Fraction(sum(1 for subset in subsets if min(subset) < c), len(subsets))


# pass@k


@pytest.mark.parametrize(
    ("n", "c", "k", "message"),
    [
        (-1, 0, 1, "n must be >= 0"),
        (1, 0, 0, "k must be >= 1"),
        (1, -1, 1, "c must be >= 0"),
        (1, 2, 1, "c cannot exceed n"),
        (1, 0, 2, "k=2 exceeds the number of runs n=1"),
        (0, 0, 1, "k=1 exceeds the number of runs n=0"),
        (2, 1, 3, "k=3 exceeds the number of runs n=2"),
        (2, 3, 3, "c cannot exceed n"),
    ],
)
def test_pass_at_k_validates(n: int, c: int, k: int, message: str) -> None:
    with pytest.raises(ConfigError, match=f"^{message}$"):
        pass_at_k(n, c, k)


def test_pass_at_k_edge_values() -> None:
    assert pass_at_k(10, 0, 1) == 0.0
    assert pass_at_k(10, 10, 1) == 1.0
    assert pass_at_k(5, 4, 2) == 1.0  # one failure cannot fill two draws
    assert pass_at_k(5, 1, 5) == 1.0


@pytest.mark.parametrize(("n", "c", "k"), [(5, 1, 1), (5, 1, 2), (10, 3, 1), (10, 3, 5), (20, 7, 3)])
def test_pass_at_k_known_values(n: int, c: int, k: int) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(float(exact_pass_at_k(n, c, k)), rel=1e-12)


def test_pass_at_k_matches_enumeration_for_small_n() -> None:
    for n in range(1, 9):
        for c in range(n + 1):
            for k in range(1, n + 1):
                want = float(enumerated_pass_at_k(n, c, k))
                assert pass_at_k(n, c, k) == pytest.approx(want, rel=1e-12, abs=1e-15), (n, c, k)


def test_pass_at_k_is_stable_for_large_n() -> None:
    for n, c, k in [(1000, 1, 1), (100_000, 3, 50), (10**6, 999_000, 10)]:
        got = pass_at_k(n, c, k)
        assert 0.0 <= got <= 1.0
        assert not math.isnan(got)
        assert got == pytest.approx(float(exact_pass_at_k(n, c, k)), rel=1e-6)


INT64_MAX = 2**63 - 1


@pytest.mark.parametrize(
    ("n", "c", "k"),
    [
        (10**7, 1, 1),  # log-gamma differences were 49% off here
        (10**12, 1, 1),
        (INT64_MAX, 1, 1),
        (10**9, 3, 10**8),
        (INT64_MAX, 3, 10**12),
        # More than 10**4 factors: integrated rather than summed term by term.
        (10**9, 10_001, 10_001),
        (10**12, 20_000, 20_000),
        (10**12, 10_001, 10**6),
        (10**8, 10_001, 30_000),
        (10**7, 12_000, 12_000),
        (INT64_MAX, 30_000, 10**12),
    ],
)
def test_pass_at_k_is_accurate_for_huge_n(n: int, c: int, k: int) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(decimal_pass_at_k(n, c, k), rel=1e-12)


def test_pass_at_k_takes_any_int64_n_without_overflow() -> None:
    # Too many factors to multiply out; ln(1 - x) ~ -x - x^2/2 gives -(mM/n)(1 + (m + M - 1) / 2n) to ~1e-19.
    m = big = 10**9
    expected = -math.expm1(-(m * big / INT64_MAX) * (1 + (m + big - 1) / (2 * INT64_MAX)))
    assert pass_at_k(INT64_MAX, m, big) == pytest.approx(expected, rel=1e-12)
    assert pass_at_k(INT64_MAX, 2**62, 2**62 - 1) == 1.0
    assert pass_at_k(INT64_MAX, INT64_MAX, INT64_MAX) == 1.0
    assert pass_at_k(10**6, 5 * 10**5, 5 * 10**5) == 1.0  # c + k == n: every draw of k holds a success
    assert pass_at_k(10**310, 1, 1) == pytest.approx(1e-310)  # beyond floats, still no OverflowError


# pass^k


@pytest.mark.parametrize(
    ("n", "c", "k", "message"),
    [
        (0, 0, 1, "n must be > 0"),
        (-1, 0, 1, "n must be > 0"),
        (1, 0, 0, "k must be >= 1"),
        (1, -1, 1, "c must be >= 0"),
        (1, 2, 1, "c cannot exceed n"),
    ],
)
def test_pass_hat_k_validates(n: int, c: int, k: int, message: str) -> None:
    with pytest.raises(ConfigError, match=f"^{message}$"):
        pass_hat_k(n, c, k)


def test_pass_hat_k_edge_and_known_values() -> None:
    assert pass_hat_k(10, 0, 3) == 0.0
    assert pass_hat_k(10, 10, 3) == 1.0
    assert pass_hat_k(10, 5, 2) == pytest.approx(0.25, abs=1e-12)
    assert pass_hat_k(2, 1, 10) == pytest.approx(2.0**-10, rel=1e-12)  # k may exceed n


def test_pass_hat_k_is_accurate_for_any_int64_n() -> None:
    # c / n rounds to 1.0 here, and ln(1.0) would lose the whole answer, (1 - 2**-62) ** (2**62) ~ 1/e.
    assert pass_hat_k(2**62, 2**62 - 1, 2**62) == pytest.approx(math.exp(-1), rel=1e-12)
    assert pass_hat_k(INT64_MAX, 1, 1) == pytest.approx(1 / INT64_MAX, rel=1e-15)
    assert pass_hat_k(INT64_MAX, INT64_MAX - 1, INT64_MAX) == pytest.approx(math.exp(-1), rel=1e-12)
    assert pass_hat_k(INT64_MAX, 1, INT64_MAX) == 0.0
    assert pass_hat_k(10**310, 10**309, 2) == pytest.approx(0.01)


def test_pass_hat_k_matches_enumeration_for_small_n() -> None:
    for n in range(1, 6):
        for c in range(n + 1):
            for k in range(1, 5):
                draws = list(itertools.product(range(n), repeat=k))
                want = Fraction(sum(1 for draw in draws if max(draw) < c), len(draws))
                assert pass_hat_k(n, c, k) == pytest.approx(float(want), rel=1e-12), (n, c, k)


# parse_pass_nc


def test_parse_pass_nc_reads_runs_and_passed_runs() -> None:
    result = EvalSetResult(
        summary=EvalSetResultSummary(num_runs=4, run_status_counts=EvalStatusCounts(passed=2, failed=2))
    )
    assert parse_pass_nc(result) == (4, 2)


def test_parse_pass_nc_counts_runs_not_cases() -> None:
    cases = [
        EvalCaseResult(eval_id=eval_id, run_id=run_id, final_eval_status=status)
        for eval_id, run_id, status in [
            ("A", 1, EvalStatus.PASSED),
            ("B", 1, EvalStatus.PASSED),
            ("A", 2, EvalStatus.PASSED),
            ("B", 2, EvalStatus.FAILED),
            ("A", 3, EvalStatus.FAILED),
            ("B", 3, EvalStatus.FAILED),
        ]
    ]
    result = EvalSetResult(eval_case_results=cases, summary=summarize_multi_run(cases, 3))
    n, c = parse_pass_nc(result)
    assert (n, c) == (3, 1)
    assert pass_at_k(n, c, 2) == pytest.approx(2 / 3)


def test_parse_pass_nc_without_summary_raises() -> None:
    with pytest.raises(ConfigError, match="summary is missing.*produced by an evaluation"):
        parse_pass_nc(EvalSetResult())


def test_parse_pass_nc_without_run_status_counts_raises() -> None:
    with pytest.raises(ConfigError, match="run status counts is missing.*produced by an evaluation"):
        parse_pass_nc(EvalSetResult(summary=EvalSetResultSummary()))


# pass^k, unbiased (tau-bench's estimator)


def enumerated_pass_hat_k(n: int, c: int, k: int) -> Fraction:
    """Share of the k-subsets of n runs (the first c successful) made of successes only."""
    subsets = list(itertools.combinations(range(n), k))
    return Fraction(sum(1 for subset in subsets if max(subset) < c), len(subsets))


def test_unbiased_pass_hat_k_is_the_share_of_k_runs_that_all_passed() -> None:
    for n in range(1, 9):
        for c in range(n + 1):
            for k in range(1, n + 1):
                want = float(enumerated_pass_hat_k(n, c, k))
                assert pass_hat_k_unbiased(n, c, k) == pytest.approx(want, rel=1e-12, abs=1e-15), (n, c, k)
    # 4 of 5 runs passed: three drawn all passed in 4 of the 10 ways to draw them, not (4/5)**3.
    assert pass_hat_k_unbiased(5, 4, 3) == pytest.approx(0.4)
    assert pass_hat_k(5, 4, 3) == pytest.approx(0.512)


def test_unbiased_pass_hat_k_is_accurate_for_large_n() -> None:
    n, c, k = 10**12, 10**12 - 10**6, 1000
    expected = math.exp(math.fsum(math.log1p(-(n - c) / (n - i)) for i in range(k)))
    assert pass_hat_k_unbiased(n, c, k) == pytest.approx(expected, rel=1e-12)
    assert pass_hat_k_unbiased(INT64_MAX, INT64_MAX, INT64_MAX) == 1.0


@pytest.mark.parametrize(
    ("n", "c", "k", "message"),
    [
        (0, 0, 1, "k=1 exceeds the number of runs n=0"),
        (3, 1, 4, "k=4 exceeds the number of runs n=3"),
        (3, 1, 0, "k must be >= 1"),
        (3, -1, 1, "c must be >= 0"),
        (3, 4, 1, "c cannot exceed n"),
    ],
)
def test_unbiased_pass_hat_k_validates(n: int, c: int, k: int, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        pass_hat_k_unbiased(n, c, k)


# per case


def results(*runs: tuple[str, int, EvalStatus, str]) -> EvalSetResult:
    return EvalSetResult(
        eval_case_results=[
            EvalCaseResult(eval_id=eval_id, run_id=run_id, final_eval_status=status, error_message=error)
            for eval_id, run_id, status, error in runs
        ]
    )


P, F, N = EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED


def test_case_runs_count_each_case_and_leave_out_runs_not_evaluated() -> None:
    result = results(
        ("a", 1, P, ""),
        ("b", 1, F, ""),
        ("a", 2, P, ""),
        ("b", 2, N, ""),  # no metric applied: neither passed nor failed
        ("a", 3, F, ""),
        ("b", 3, N, "agent raised"),  # errored: a failed run, whatever a foreign result calls it
        ("c", 1, N, ""),
    )

    assert parse_case_pass_nc(result) == [CaseRuns("a", 3, 2), CaseRuns("b", 2, 0), CaseRuns("c", 0, 0)]


def test_per_case_estimates_average_each_cases_estimate() -> None:
    cases = [CaseRuns("a", 5, 5), CaseRuns("b", 5, 4), CaseRuns("c", 5, 3), CaseRuns("d", 5, 0), CaseRuns("e", 0, 0)]

    # Every run has a failing case, so the set-level estimates are 0; per case they are not.
    assert mean_pass_at_k(cases, 1) == pytest.approx((1 + 0.8 + 0.6 + 0) / 4)
    assert mean_pass_at_k(cases, 3) == pytest.approx((1 + 1 + 1 + 0) / 4)
    assert mean_pass_hat_k(cases, 3) == pytest.approx((1 + 0.4 + 0.1 + 0) / 4)
    assert math.isnan(mean_pass_at_k([CaseRuns("e", 0, 0)], 1))
    assert math.isnan(mean_pass_hat_k([], 2))


def test_per_case_k_beyond_a_cases_runs_names_the_case() -> None:
    cases = [CaseRuns("a", 3, 2), CaseRuns("short", 2, 2)]

    message = "k=3 exceeds the 2 runs that case 'short' passed or failed: use k <= 2 (the fewest runs of any case)"
    with pytest.raises(ConfigError, match=re.escape(message)):
        mean_pass_at_k(cases, 3)
    with pytest.raises(ConfigError, match=re.escape(message)):
        mean_pass_hat_k(cases, 3)
    with pytest.raises(ConfigError, match="k must be a whole number of runs of at least 1, got 0"):
        mean_pass_at_k(cases, 0)
