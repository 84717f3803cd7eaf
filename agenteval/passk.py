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
    computed in log space so that large ``n`` does not overflow.

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
    nf, cf, kf = float(n), float(c), float(k)
    # ln C(n-c, k) - ln C(n, k) = ln (n-c)! + ln (n-k)! - ln (n-c-k)! - ln n!
    log_all_failed = (
        math.lgamma(nf - cf + 1) + math.lgamma(nf - kf + 1) - math.lgamma(nf - cf - kf + 1) - math.lgamma(nf + 1)
    )
    # 1 - exp(x) loses precision when x is near 0; -expm1(x) does not.
    return -math.expm1(log_all_failed)


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
    # In log space, as the reference computes it.
    return math.exp(float(k) * math.log(float(c) / float(n)))


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
