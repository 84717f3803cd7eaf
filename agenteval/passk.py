"""pass@k and pass^k: how likely an agent succeeds at least once, or every time, in k runs.

Both assume the runs are independent samples of the same agent: reset its state, memory and
tool caches between runs, or the estimates come out too high.
"""

from __future__ import annotations

import math

from agenteval.errors import ConfigError
from agenteval.evalresult.models import EvalSetResult

__all__ = ["parse_pass_nc", "pass_at_k", "pass_hat_k"]


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


def parse_pass_nc(result: EvalSetResult) -> tuple[int, int]:
    """Read ``(n, c)`` for :func:`pass_at_k` and :func:`pass_hat_k` from an evaluation's result.

    ``n`` is the number of runs and ``c`` the number of runs whose whole eval set passed (a run
    passes when no case failed and at least one passed); it does not count cases.

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
