"""pass@k and pass^k: how likely an agent succeeds at least once, or every time, in k runs.

Both assume the runs are independent samples of the same agent: reset its state, memory and
tool caches between runs, or the estimates come out too high.

Two levels: per case (:func:`parse_case_pass_nc`, :func:`mean_pass_at_k`, :func:`mean_pass_hat_k`),
each case's estimate from its own runs averaged over the cases, as HumanEval and tau-bench report
them; and per eval set (:func:`parse_pass_nc`), the reference framework's, where a run succeeds only
when every case in it passed (with many cases that is rarely, so the estimates there are often 0).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agenteval.errors import ConfigError
from agenteval.evalresult.models import EvalSetResult
from agenteval.evalresult.summarize import fail_if_errored
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    from agenteval.analysis._frames import RunView

__all__ = [
    "CaseRuns",
    "case_pass_nc",
    "mean_pass_at_k",
    "mean_pass_hat_k",
    "parse_case_pass_nc",
    "parse_pass_nc",
    "pass_at_k",
    "pass_hat_k",
    "pass_hat_k_unbiased",
]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Estimate pass@k: the chance that k of the n runs, drawn without replacement, include a success.

    This is the unbiased estimator ``1 - C(n-c, k) / C(n, k)`` of the Codex/HumanEval papers,
    computed in log space, accurate to about 1e-12 relative for every int64 ``n`` (no overflow).

    Args:
        n: Runs observed (``>= 0``).
        c: Successful runs among them (``0 <= c <= n``).
        k: Runs drawn (``1 <= k <= n``).

    Returns:
        A probability in ``[0, 1]``: ``0`` when ``c == 0``, ``1`` when fewer than ``k`` runs failed.

    Raises:
        ConfigError: An argument is out of range.
    """
    if n < 0:
        raise ConfigError("n must be >= 0")
    if k <= 0:
        raise ConfigError("k must be >= 1")
    if c < 0:
        raise ConfigError("c must be >= 0")
    if c > n:
        raise ConfigError("c cannot exceed n")
    if k > n:
        raise ConfigError(f"k={k} exceeds the number of runs n={n}")
    if c == 0:
        return 0.0
    if n - c < k:
        return 1.0
    # 1 - exp(x) loses precision when x is near 0; -expm1(x) does not.
    return -math.expm1(_log_all_failed(n, c, k))


# Up to this many factors the product is summed term by term; beyond, the sum is integrated.
_EXACT_TERMS = 10_000


def _log_all_failed(n: int, c: int, k: int) -> float:
    """``ln(C(n-c, k) / C(n, k))``, the log chance that k runs drawn from n are all failures.

    Needs ``1 <= c``, ``1 <= k`` and ``c + k <= n``. Log-gamma differences would cancel
    catastrophically (``lgamma(n)`` is about ``n ln n``, so for ``n = 10**7`` the error is already
    larger than ``c / n``); instead the ratio is written as ``m = min(c, k)`` factors,
    ``prod_{i<m} (1 - M / (n - i))`` with ``M = max(c, k)``, each taken by ``log1p``. Ratios are
    divisions of Python ints, which are correctly rounded and never overflow, whatever ``n``.
    """
    m, big = sorted((c, k))
    if m <= _EXACT_TERMS:
        return math.fsum(math.log1p(-big / (n - i)) for i in range(m))
    # Many factors: the sum over y = n-m+1 .. n of ln(1 - M/y) by the midpoint rule, the integral
    # from u = n-m+1/2 to w = n+1/2, in closed form: m ln(1 - M/w) + phi(u - M) - phi(u), where
    # phi(v) = v ln(1 + m/v) - m = m g(m/v). The rule's relative error is about 1/(12 y^2); it only
    # matters when the result is not 1.0 to double precision, and then y > m^2/40 > 2.5e6.
    first = math.log1p(-2 * big / (2 * n + 1))
    return m * (first + _g(2 * m / (2 * (n - m - big) + 1)) - _g(2 * m / (2 * (n - m) + 1)))


def _g(t: float) -> float:
    """``(ln(1 + t) - t) / t`` for ``t > 0``, accurate for small ``t`` too (where direct subtraction cancels)."""
    if t >= 0.01:
        return (math.log1p(t) - t) / t
    # The series -t/2 + t^2/3 - t^3/4 + ...; the first term left out is below 1e-17 relative.
    return math.fsum((-t) ** j / (j + 1) for j in range(1, 10))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Estimate pass^k: the chance that k independent runs all succeed, ``(c / n) ** k``.

    This is the reference framework's formula (``PassHatK``): the observed success rate to the
    power k. It overstates the chance when ``n`` is small (``(c/n)**k`` is biased upwards), so
    the per-case pass^k of a report uses :func:`pass_hat_k_unbiased` instead.

    Args:
        n: Runs observed (``> 0``).
        c: Successful runs among them (``0 <= c <= n``).
        k: Runs that must all succeed (``>= 1``; may exceed ``n``).

    Returns:
        A probability in ``[0, 1]``: ``0`` when ``c == 0``, ``1`` when ``c == n``.

    Raises:
        ConfigError: An argument is out of range.
    """
    if n <= 0:
        raise ConfigError("n must be > 0")
    if k <= 0:
        raise ConfigError("k must be >= 1")
    if c < 0:
        raise ConfigError("c must be >= 0")
    if c > n:
        raise ConfigError("c cannot exceed n")
    if c == 0:
        return 0.0
    if c == n:
        return 1.0
    # In log space, as the reference computes it. Near c == n, log1p of the failure share keeps the
    # digits that c / n would round away (to 1.0 for c = n - 1 and n > 2**53). Int divisions of
    # any size are correctly rounded and never overflow.
    log_share = math.log(c / n) if 2 * c <= n else math.log1p(-(n - c) / n)
    return math.exp(k * log_share)


def pass_hat_k_unbiased(n: int, c: int, k: int) -> float:
    """Estimate pass^k without bias: the chance that k of the n runs, drawn without replacement, all succeeded.

    This is ``C(c, k) / C(n, k)``, the estimator tau-bench reports pass^k with (Yao et al., 2024):
    unbiased for ``p ** k`` when each run succeeds with probability ``p``, where the reference's
    ``(c / n) ** k`` (:func:`pass_hat_k`) is not. Like :func:`pass_at_k`, it needs ``k <= n``.

    Args:
        n: Runs observed (``>= 0``).
        c: Successful runs among them (``0 <= c <= n``).
        k: Runs drawn (``1 <= k <= n``).

    Returns:
        A probability in ``[0, 1]``: ``0`` when fewer than ``k`` runs succeeded, ``1`` when all did.

    Raises:
        ConfigError: An argument is out of range.
    """
    if k <= 0:
        raise ConfigError("k must be >= 1")
    if c < 0:
        raise ConfigError("c must be >= 0")
    if c > n:
        raise ConfigError("c cannot exceed n")
    if k > n:
        raise ConfigError(f"k={k} exceeds the number of runs n={n}")
    if c == n:
        return 1.0
    if c < k:
        return 0.0
    # C(c, k) / C(n, k) is the chance that k draws all miss the n - c failures.
    return math.exp(_log_all_failed(n, n - c, k))


def parse_pass_nc(result: EvalSetResult) -> tuple[int, int]:
    """Read the eval-set level ``(n, c)`` for :func:`pass_at_k` and :func:`pass_hat_k` from an evaluation's result.

    ``n`` is the number of runs and ``c`` the number of runs whose whole eval set passed (a run
    passes when no case failed and at least one passed); it does not count cases. This is the
    reference framework's ``ParsePassNC``; :func:`parse_case_pass_nc` gives the per-case counts.

    Args:
        result: An eval-set result carrying the multi-run summary.

    Returns:
        ``(summary.num_runs, summary.run_status_counts.passed)``.

    Raises:
        ConfigError: The result has no summary or its summary has no run status counts.
    """
    summary = result.summary
    if summary is None:
        raise ConfigError("eval set result summary is missing: pass@k needs a result produced by an evaluation")
    counts = summary.run_status_counts
    if counts is None:
        raise ConfigError("run status counts is missing: pass@k needs a result produced by an evaluation")
    return summary.num_runs, counts.passed


@dataclass(frozen=True, slots=True)
class CaseRuns:
    """How many runs of one case passed or failed, and how many of those passed: its ``(n, c)``."""

    eval_id: str
    """The case."""
    runs: int
    """Its runs that passed or failed (``n``)."""
    passed: int
    """Those that passed (``c``)."""


def parse_case_pass_nc(result: EvalSetResult) -> list[CaseRuns]:
    """Read each case's ``(n, c)`` from an evaluation's result, in the order the cases first appear.

    A run in which the case failed with an error (the agent raised, say) is a failed run, whatever
    status the result records; a run in which the case was not evaluated (no metric applied to it)
    counts neither way, as in ``case_table``'s ``pass_rate``. A case none of whose runs passed or
    failed has ``runs == 0``.

    Args:
        result: An eval-set result; its summary is not needed.
    """
    return case_pass_nc(result.eval_case_results)


def case_pass_nc(runs: Iterable[RunView]) -> list[CaseRuns]:
    """:func:`parse_case_pass_nc` from the case results themselves, or their rows (a report that has not read them)."""
    counts: dict[str, list[int]] = {}
    for case in runs:
        status = fail_if_errored(case.final_eval_status or EvalStatus.NOT_EVALUATED, bool(case.error_message))
        count = counts.setdefault(case.eval_id, [0, 0])
        count[0] += status in (EvalStatus.PASSED, EvalStatus.FAILED)
        count[1] += status is EvalStatus.PASSED
    return [CaseRuns(eval_id, runs, passed) for eval_id, (runs, passed) in counts.items()]


def mean_pass_at_k(cases: Sequence[CaseRuns], k: int) -> float:
    """pass@k per case, averaged over the cases: each case's :func:`pass_at_k` from its own runs.

    This is how HumanEval reports pass@k: the mean over problems of the unbiased estimate, the
    chance that at least one of k runs of a case passes. Cases without a run that passed or failed
    are left out.

    Args:
        cases: Each case's runs (:func:`parse_case_pass_nc`).
        k: Runs drawn per case (``1 <= k <=`` the fewest runs of any case counted).

    Returns:
        The mean estimate; NaN when no case has a run that passed or failed.

    Raises:
        ConfigError: ``k`` is below 1 or more than a case's runs (the message names the case).
    """
    return _mean_over_cases(cases, k, pass_at_k)


def mean_pass_hat_k(cases: Sequence[CaseRuns], k: int) -> float:
    """pass^k per case, averaged over the cases: each case's :func:`pass_hat_k_unbiased` from its own runs.

    This is how tau-bench reports pass^k: the mean over tasks of ``C(c, k) / C(n, k)``, the chance
    that k runs of a case all pass (not the reference's ``(c / n) ** k``, which overstates it).
    Cases without a run that passed or failed are left out.

    Args:
        cases: Each case's runs (:func:`parse_case_pass_nc`).
        k: Runs drawn per case (``1 <= k <=`` the fewest runs of any case counted).

    Returns:
        The mean estimate; NaN when no case has a run that passed or failed.

    Raises:
        ConfigError: ``k`` is below 1 or more than a case's runs (the message names the case).
    """
    return _mean_over_cases(cases, k, pass_hat_k_unbiased)


def _mean_over_cases(cases: Sequence[CaseRuns], k: int, estimate: Callable[[int, int, int], float]) -> float:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k <= 0:
        raise ConfigError(f"k must be a whole number of runs of at least 1, got {k!r}")
    counted = [case for case in cases if case.runs]
    short = min(counted, key=lambda case: case.runs, default=None)
    if short is not None and k > short.runs:
        raise ConfigError(
            f"k={k} exceeds the {short.runs} runs that case {short.eval_id!r} passed or failed:"
            f" use k <= {short.runs} (the fewest runs of any case)"
        )
    if not counted:
        return math.nan
    return math.fsum(estimate(case.runs, case.passed, k) for case in counted) / len(counted)
