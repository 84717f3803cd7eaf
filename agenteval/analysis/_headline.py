"""The pass@k numbers that head a report, in the HTML view, the exported page and the CLI."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agenteval.analysis.passk import case_pass_nc, mean_pass_at_k, mean_pass_hat_k
from agenteval.analysis.report import run_views

if TYPE_CHECKING:
    from agenteval.analysis.report import EvaluationReport

__all__ = ["PassKEstimate", "pass_k_estimates", "pass_k_text"]


@dataclass(frozen=True, slots=True)
class PassKEstimate:
    """One headline number, labelled by what it counts."""

    label: str
    """E.g. ``pass^3 (per case)``."""
    value: float
    """The estimate, in [0, 1]."""
    description: str
    """What it estimates, in a sentence (a tooltip in the HTML)."""


def pass_k_estimates(report: EvaluationReport) -> list[PassKEstimate]:
    """pass@1 and pass^k per case, k the fewest runs any case passed or failed; none with one run.

    Per case, as :meth:`~agenteval.EvaluationReport.pass_at_k` and
    :meth:`~agenteval.EvaluationReport.pass_hat_k` give them: the eval-set level numbers
    (``set_pass_at_k``) are 0 whenever every run has a failed case, which says little. Read from the
    case results' rows: a report that has not read its records leaves them unread.
    """
    if report.num_runs <= 1:
        return []
    counted = [case for case in case_pass_nc(run_views(report)) if case.runs]
    if not counted:
        return []
    k = min(case.runs for case in counted)
    cases = f"averaged over the {len(counted)} case{'s' if len(counted) != 1 else ''} that passed or failed"
    estimates = [
        PassKEstimate(
            "pass@1 (per case)",
            mean_pass_at_k(counted, 1),
            f"the chance that one run of a case passes (the share of its runs that passed), {cases}",
        )
    ]
    if k > 1:
        estimates.append(
            PassKEstimate(
                f"pass^{k} (per case)",
                mean_pass_hat_k(counted, k),
                f"the chance that every one of {k} runs of a case passes (C(c, {k}) / C(n, {k}) of its n runs,"
                f" c passed), {cases}",
            )
        )
    return estimates


def pass_k_text(report: EvaluationReport) -> str:
    """The headline estimates in a line, ``pass@1 (per case) 0.75, pass^3 (per case) 0.25``; ``""`` with one run."""
    return ", ".join(f"{estimate.label} {estimate.value:.2f}" for estimate in pass_k_estimates(report))
