"""Paired tests, confidence intervals and power for comparing evaluations, on plain numpy arrays.

The tests come from :mod:`scipy.stats`; the bootstrap is a vectorised numpy one. Everything random
draws from ``np.random.default_rng(seed)``, so the same inputs and seed give the same numbers.
:func:`agenteval.analysis.compare` and :meth:`agenteval.EvaluationReport.summary_table` build on these.

scipy is imported inside the functions that use it: it takes about a second to import, and
``compare()`` checks its arguments with this module before any test runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from agenteval.errors import ConfigError

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "PASS_RATE_LABEL",
    "PASS_RATE_ROW",
    "PERMUTATION_RESAMPLES",
    "RUN_PASS_RATE_LABEL",
    "RUN_PASS_RATE_ROW",
    "SCORE_LABEL",
    "SUMMARY_COLUMNS",
    "PairedDifference",
    "bootstrap_mean_interval",
    "check_level",
    "mcnemar_exact",
    "mean_interval",
    "min_detectable_difference",
    "paired_pass_rates",
    "paired_score_test",
    "paired_scores",
    "summary_rows",
    "wilson_interval",
]

PASS_RATE_ROW = "case_pass_rate"
"""The ``metric`` of the row for the share of cases whose overall status is passed, in
``Comparison.significance`` and ``EvaluationReport.summary_table()``; labelled :data:`PASS_RATE_LABEL`."""
PASS_RATE_LABEL = "cases passed (overall status)"
"""What the :data:`PASS_RATE_ROW` row counts: each case once, by the status the case aggregator gave
it across runs (by default: every metric, averaged over the runs, reaches its threshold, so with
thresholds of 1 a case passes only if it passed every run)."""
RUN_PASS_RATE_ROW = "run_pass_rate"
"""The ``metric`` of the row for the share of runs that passed, in ``Comparison.significance`` and
``EvaluationReport.summary_table()``; labelled :data:`RUN_PASS_RATE_LABEL`."""
RUN_PASS_RATE_LABEL = "runs passed (per-run pass rate)"
"""What the :data:`RUN_PASS_RATE_ROW` row counts: each case's share of its runs that passed (its
``pass_rate`` in ``case_table``), averaged over the cases; the per-case pass@1."""
SCORE_LABEL = "mean score"
"""The label of a metric's row: the mean of its per-case scores."""

SUMMARY_COLUMNS = ("metric", "label", "n_cases", "mean", "ci_low", "ci_high", "interval")
"""Columns of :meth:`agenteval.EvaluationReport.summary_table`: a row per pass rate, then one per metric and measure.

``metric`` names the row and ``label`` says what its ``mean`` counts. Rows:

- ``PASS_RATE_ROW`` (``cases passed (overall status)``): ``n_cases`` counts the cases that passed
  or failed (not evaluated ones are left out) and ``mean`` is the share that passed, by their
  overall status (as the case aggregator decided it across runs), bounded by the Wilson score
  interval (``interval`` is ``wilson``).
- ``RUN_PASS_RATE_ROW`` (``runs passed (per-run pass rate)``): ``n_cases`` counts the cases with a
  run that passed or failed and ``mean`` is the mean over them of each case's share of runs that
  passed (a run the case errored in failed; one it was not evaluated in is left out), bounded by
  the Student-t interval over the cases. With one run it equals the row above (for the default
  aggregator); with several it is the per-case pass@1, which the row above can sit far below.
- one per metric (``mean score``): ``n_cases`` counts the cases it scored and ``mean`` is the mean
  of their scores (each averaged over the case's runs), bounded by the Student-t interval
  ``mean ± t(n - 1) × sd / sqrt(n)`` (``interval`` is ``student t``; NaN with fewer than two cases).
- after a metric, one per measure it records (``<metric>:<measure>``, e.g. ``rouge:rougeL_f1``,
  labelled ``mean rougeL_f1``): the same over each case's measure averaged over its runs, the
  continuous value (a ROUGE F1) the metric's pass/fail score is decided from.
"""

BOOTSTRAP_RESAMPLES = 2000
"""Resamples of a bootstrap interval: enough for a 95% percentile interval, few enough for 1000 pairs in 10 ms."""
PERMUTATION_RESAMPLES = 9999
"""Random sign flips of a permutation test; with at most 13 differences all ``2**n`` flips are enumerated."""
_EXACT_WILCOXON_MAX = 50
"""Up to this many non-zero differences the Wilcoxon p-value is exact; above, the normal approximation."""
_FEW_PAIRS = 10
"""Below this many non-zero differences the permutation test is used: it is exact and uses the magnitudes."""

Array = npt.NDArray[np.float64]


@dataclass(slots=True, frozen=True)
class PairedDifference:
    """How a paired quantity moved from a baseline to a candidate (a row of ``Comparison.significance``)."""

    n_pairs: int
    """The pairs compared."""
    baseline_mean: float
    """The baseline's mean over the pairs (NaN without pairs)."""
    candidate_mean: float
    """The candidate's mean over the pairs (NaN without pairs)."""
    mean_diff: float
    """``candidate_mean - baseline_mean``."""
    ci_low: float
    """Lower end of the paired bootstrap interval of ``mean_diff``."""
    ci_high: float
    """Upper end of the paired bootstrap interval of ``mean_diff``."""
    p_value: float
    """Two-sided p-value of the test named in :attr:`test` (NaN when none could run)."""
    test: str
    """The test that gave :attr:`p_value`, or ``none: <why>``."""

    @classmethod
    def untested(cls, why: str) -> PairedDifference:
        """A difference that cannot be measured: no pairs, and ``why``."""
        return cls(0, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, f"none: {why}")


def check_level(value: float, name: str) -> float:
    """``value`` as a float if it is strictly between 0 and 1 (a confidence level or a power).

    Raises:
        ConfigError: It is not a number strictly between 0 and 1 (``name`` says which argument).
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise ConfigError(f"{name}={value!r} must be a number strictly between 0 and 1")
    return float(value)


def _vector(values: npt.ArrayLike) -> Array:
    return np.asarray(values, dtype=np.float64).reshape(-1)


def _pairs(baseline: npt.ArrayLike, candidate: npt.ArrayLike) -> tuple[Array, Array]:
    before, after = _vector(baseline), _vector(candidate)
    if before.shape != after.shape:
        raise ConfigError(
            f"paired values must come in pairs: {before.size} baseline values, {after.size} candidate values"
        )
    return before, after


def mcnemar_exact(baseline: npt.ArrayLike, candidate: npt.ArrayLike) -> float:
    """Two-sided exact McNemar p-value of paired pass/fail outcomes.

    The discordant pairs are ``b`` (passed in the baseline only) and ``c`` (passed in the candidate
    only); under no change each is equally likely, so the p-value is the two-sided binomial test of
    ``b`` successes in ``b + c`` trials at 0.5 (1.0 when no pair is discordant).

    Args:
        baseline: Whether each pair passed in the baseline.
        candidate: Whether each pair passed in the candidate, in the same order.

    Raises:
        ConfigError: The two sequences differ in length.
    """
    from scipy.stats import binomtest

    before, after = (side.astype(bool) for side in _pairs(baseline, candidate))
    b, c = int(np.sum(before & ~after)), int(np.sum(~before & after))
    return float(binomtest(b, b + c, 0.5).pvalue) if b + c else 1.0


def bootstrap_mean_interval(values: npt.ArrayLike, *, confidence: float, seed: int) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (``BOOTSTRAP_RESAMPLES`` resamples).

    For paired data pass the per-pair differences: resampling them resamples the pairs. One value
    gives a zero-width interval at it; none gives NaNs. With few values (or, for pass/fail pairs, few
    that differ) the interval runs narrow: in simulations a 95% interval of a pass-rate change
    covered it about 86% of the time with 20 pairs, 94% with 60 and 95% with 200.

    Raises:
        ConfigError: ``confidence`` is not strictly between 0 and 1.
    """
    confidence = check_level(confidence, "confidence")
    data = _vector(values)
    if not data.size:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = np.empty(BOOTSTRAP_RESAMPLES)
    # Blocks of about a million draws keep memory flat for large reports.
    block = max(1, 1_000_000 // data.size)
    for start in range(0, BOOTSTRAP_RESAMPLES, block):
        stop = min(start + block, BOOTSTRAP_RESAMPLES)
        means[start:stop] = data[rng.integers(0, data.size, size=(stop - start, data.size))].mean(axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


def _mean_of(data: Array, axis: int = -1) -> Array:
    return np.asarray(np.mean(data, axis=axis), dtype=np.float64)


def paired_score_test(differences: npt.ArrayLike, *, seed: int) -> tuple[float, str]:
    """Two-sided p-value that paired differences are centred on zero, and the test used.

    Zero differences carry no sign and are left out (Wilcoxon's ``wilcox`` convention); of the
    ``m`` others:

    - none: p = 1 (``none: every difference is zero``);
    - fewer than 10, or tied absolute values with at most 50: the sign-flip permutation test of the
      mean (:func:`scipy.stats.permutation_test`), exact (all ``2**m`` flips) when ``m <= 13``, else
      ``PERMUTATION_RESAMPLES`` random flips drawn from ``seed``;
    - at most 50 without ties: the Wilcoxon signed-rank test with its exact distribution;
    - more than 50: the Wilcoxon signed-rank test with the tie-corrected normal approximation.

    Args:
        differences: Candidate minus baseline, one per pair (finite).
        seed: Seeds the random sign flips.

    Returns:
        The p-value and the name of the test, as shown in ``Comparison.significance``.
    """
    from scipy.stats import permutation_test, wilcoxon

    data = _vector(differences)
    nonzero = data[data != 0]
    m = nonzero.size
    if not m:
        return 1.0, "none: every difference is zero"
    ties = np.unique(np.abs(nonzero)).size < m
    if m < _FEW_PAIRS or (ties and m <= _EXACT_WILCOXON_MAX):
        name = (
            "exact sign-flip permutation"
            if 2**m <= PERMUTATION_RESAMPLES
            else f"sign-flip permutation, {PERMUTATION_RESAMPLES} random flips"
        )
        if m == 1:  # both flips of a single difference are as extreme; scipy asks for two
            return 1.0, name
        result = permutation_test(
            (nonzero,),
            _mean_of,
            permutation_type="samples",
            vectorized=True,
            n_resamples=PERMUTATION_RESAMPLES,
            rng=seed,
        )
        return min(1.0, float(result.pvalue)), name
    if m <= _EXACT_WILCOXON_MAX:
        return float(wilcoxon(nonzero, method="exact").pvalue), "exact Wilcoxon signed-rank"
    # scipy's "auto" is its tie-corrected normal approximation above 50 differences.
    return float(wilcoxon(nonzero, method="auto").pvalue), "Wilcoxon signed-rank, normal approximation"


def _paired(
    before: Array, after: Array, *, p_value: float, test: str, confidence: float, seed: int
) -> PairedDifference:
    low, high = bootstrap_mean_interval(after - before, confidence=confidence, seed=seed)
    baseline_mean, candidate_mean = float(before.mean()), float(after.mean())
    return PairedDifference(
        n_pairs=int(before.size),
        baseline_mean=baseline_mean,
        candidate_mean=candidate_mean,
        mean_diff=float(np.mean(after - before)),
        ci_low=low,
        ci_high=high,
        p_value=p_value,
        test=test,
    )


def paired_pass_rates(
    baseline: npt.ArrayLike, candidate: npt.ArrayLike, *, confidence: float = 0.95, seed: int = 0
) -> PairedDifference:
    """The change of a pass rate over paired pass/fail outcomes: exact McNemar test and bootstrap interval.

    Args:
        baseline: Whether each case passed in the baseline (booleans or 0/1).
        candidate: Whether each case passed in the candidate, in the same order.
        confidence: Level of the interval.
        seed: Seeds the bootstrap.

    Raises:
        ConfigError: The two sequences differ in length, or ``confidence`` is not in (0, 1).
    """
    confidence = check_level(confidence, "confidence")
    before, after = _pairs(baseline, candidate)
    if not before.size:
        return PairedDifference.untested("no paired cases")
    p_value = mcnemar_exact(before, after)
    return _paired(before, after, p_value=p_value, test="exact McNemar", confidence=confidence, seed=seed)


def paired_scores(
    baseline: npt.ArrayLike, candidate: npt.ArrayLike, *, confidence: float = 0.95, seed: int = 0
) -> PairedDifference:
    """The change of a mean score over paired scores: :func:`paired_score_test` and a bootstrap interval.

    Pairs with a NaN on either side are left out.

    Args:
        baseline: Each case's baseline score.
        candidate: Each case's candidate score, in the same order.
        confidence: Level of the interval.
        seed: Seeds the bootstrap and the permutation test.

    Raises:
        ConfigError: The two sequences differ in length, or ``confidence`` is not in (0, 1).
    """
    confidence = check_level(confidence, "confidence")
    before, after = _pairs(baseline, candidate)
    both = np.isfinite(before) & np.isfinite(after)
    before, after = before[both], after[both]
    if not before.size:
        return PairedDifference.untested("no case has a score in both reports")
    p_value, test = paired_score_test(after - before, seed=seed)
    return _paired(before, after, p_value=p_value, test=test, confidence=confidence, seed=seed)


def wilson_interval(successes: int, trials: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion (:meth:`scipy.stats.binomtest` ``proportion_ci``); NaNs for 0 trials."""
    from scipy.stats import binomtest

    confidence = check_level(confidence, "confidence")
    if not trials:
        return math.nan, math.nan
    interval = binomtest(successes, trials).proportion_ci(confidence_level=confidence, method="wilson")
    return float(interval.low), float(interval.high)


def mean_interval(values: npt.ArrayLike, *, confidence: float = 0.95) -> tuple[float, float]:
    """Student-t interval of a mean: ``mean ± t(n - 1) × sd / sqrt(n)``; NaNs for fewer than two values."""
    from scipy.stats import t

    confidence = check_level(confidence, "confidence")
    data = _vector(values)
    if data.size < 2:
        return math.nan, math.nan
    half = float(t.ppf((1 + confidence) / 2, data.size - 1)) * float(np.std(data, ddof=1)) / math.sqrt(data.size)
    mean = float(data.mean())
    return mean - half, mean + half


def summary_rows(
    passed: npt.ArrayLike,
    run_pass_rates: npt.ArrayLike,
    scores: Mapping[str, npt.ArrayLike],
    *,
    measures: Mapping[tuple[str, str], npt.ArrayLike] | None = None,
    confidence: float = 0.95,
) -> list[dict[str, Any]]:
    """The rows of a report's ``summary_table()`` (``SUMMARY_COLUMNS``).

    Args:
        passed: Whether each decided case passed, by its overall status (leave out those not evaluated).
        run_pass_rates: Each case's share of runs that passed; NaN for a case with no run that passed or failed.
        scores: Per metric, each case's score; NaN where the metric did not score the case.
        measures: Per (metric, measure name), each case's measure; NaN where it has none. Each
            row follows its metric's.
        confidence: Level of the intervals.

    Raises:
        ConfigError: ``confidence`` is not strictly between 0 and 1.
    """
    confidence = check_level(confidence, "confidence")
    outcomes = np.asarray(passed, dtype=bool).reshape(-1)
    wins = int(outcomes.sum())
    low, high = wilson_interval(wins, outcomes.size, confidence=confidence)
    rate = wins / outcomes.size if outcomes.size else math.nan
    rows = [
        _summary_row(PASS_RATE_ROW, PASS_RATE_LABEL, outcomes.size, rate, (low, high), "wilson"),
        _mean_row(RUN_PASS_RATE_ROW, RUN_PASS_RATE_LABEL, run_pass_rates, confidence, within_unit=True),
    ]
    measured = dict(measures or {})
    for name, values in scores.items():
        rows.append(_mean_row(name, SCORE_LABEL, values, confidence))
        for metric, measure in [key for key in measured if key[0] == name]:
            values = measured.pop((metric, measure))
            rows.append(_measure_row(metric, measure, values, confidence))
    rows += [_measure_row(metric, measure, values, confidence) for (metric, measure), values in measured.items()]
    return rows


def _measure_row(metric: str, measure: str, values: npt.ArrayLike, confidence: float) -> dict[str, Any]:
    # ROUGE's precision, recall and F1 lie in [0, 1]; other measures (a JSON number difference) need not.
    bounded = measure.endswith(_UNIT_MEASURES)
    return _mean_row(f"{metric}:{measure}", f"mean {measure}", values, confidence, within_unit=bounded)


_UNIT_MEASURES = ("_f1", "_precision", "_recall")


def _mean_row(
    metric: str, label: str, values: npt.ArrayLike, confidence: float, *, within_unit: bool = False
) -> dict[str, Any]:
    """A row with the mean of ``values`` and its Student t interval, cut to [0, 1] when the values cannot leave it."""
    data = _vector(values)
    data = data[np.isfinite(data)]
    mean = float(data.mean()) if data.size else math.nan
    low, high = mean_interval(data, confidence=confidence)
    if within_unit:
        low, high = max(low, 0.0), min(high, 1.0)
    return _summary_row(metric, label, data.size, mean, (low, high), "student t")


def _summary_row(
    metric: str, label: str, n: int, mean: float, interval: tuple[float, float], how: str
) -> dict[str, Any]:
    return {
        "metric": metric,
        "label": label,
        "n_cases": n,
        "mean": mean,
        "ci_low": interval[0],
        "ci_high": interval[1],
        "interval": how,
    }


def min_detectable_difference(rate: float, n: int, *, power: float = 0.8, confidence: float = 0.95) -> float:
    """The smallest pass-rate change that a comparison of ``n`` cases at pass rate ``rate`` detects with ``power``.

    It solves the normal approximation of the McNemar test's power (Connor, 1987), with a continuity
    correction, for the change ``d`` from ``p1 = rate`` to ``p2 = rate ± d`` (toward 50%, the harder
    direction)::

        d * sqrt(n) - 1 / sqrt(n) = z(1 - alpha/2) * sqrt(psi) + z(power) * sqrt(psi - d**2)

    where ``psi = p1 * (1 - p2) + p2 * (1 - p1)`` is the share of cases whose outcome differs
    between the versions when they pass and fail independently, and ``alpha = 1 - confidence``.
    Simulated with independent outcomes, :func:`mcnemar_exact` then detects a change of ``d`` at
    least about as often as ``power`` says. Two versions of an agent usually pass and fail the same
    cases more often than independence predicts; fewer cases differ then, and smaller changes are
    detectable: the answer is conservative.

    Args:
        rate: The pass rate now, in [0, 1].
        n: The number of cases compared.
        power: The chance of detecting a change of that size, in (0, 1).
        confidence: The confidence level of the test, in (0, 1).

    Returns:
        The change as a fraction (0.25 is 25 points). ``inf`` when no change is detectable: even
        the largest possible one falls short, or ``n`` is below the ``log2(2 / alpha)`` cases (6 at
        95%) that the exact McNemar test needs to reach significance at all. NaN without cases or
        without a rate.

    Raises:
        ConfigError: ``power`` or ``confidence`` is not strictly between 0 and 1.
    """
    from scipy.optimize import brentq
    from scipy.stats import norm

    power = check_level(power, "power")
    alpha = 1 - check_level(confidence, "confidence")
    if n <= 0 or not 0 <= rate <= 1:
        return math.nan
    if 2 * 0.5**n >= alpha:
        return math.inf
    z_alpha, z_power = float(norm.ppf(1 - alpha / 2)), float(norm.ppf(power))
    sign = 1.0 if rate <= 0.5 else -1.0
    widest = 1 - rate if sign > 0 else rate

    def shortfall(change: float) -> float:
        other = min(1.0, max(0.0, rate + sign * change))
        discordant = rate * (1 - other) + other * (1 - rate)
        needed = z_alpha * math.sqrt(discordant) + z_power * math.sqrt(max(0.0, discordant - change**2))
        return change * math.sqrt(n) - 1 / math.sqrt(n) - needed

    if shortfall(widest) < 0:
        return math.inf
    # The continuity correction makes the shortfall negative at a change of 0.
    return float(brentq(shortfall, 0.0, widest))
