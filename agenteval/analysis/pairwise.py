"""Judge-based A/B between two reports: an LLM verifier says, case by case, which version answered better."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agenteval._util.sync_bridge import run_sync
from agenteval.analysis._judged_pairs import Judged, conversations, gathered, judge_pair, outcome, verifier_metric
from agenteval.analysis.compare import Comparison, compare
from agenteval.analysis.report import EvaluationReport
from agenteval.errors import ConfigError
from agenteval.llm.base import ChatModel

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PAIRWISE_COLUMNS", "PairwiseComparison", "apairwise", "pairwise"]

PAIRWISE_COLUMNS = ("eval_id", "preference", "winner", "reason")
"""Columns of :attr:`PairwiseComparison.table`: one row per paired case.

``preference`` is how much the verifier prefers the candidate's answers to the baseline's, in
``[0, 1]``, averaged over the case's turns (0.5: as good); NaN when the case could not be judged.
``winner`` is ``candidate``, ``baseline``, ``tie`` or ``not judged``; ``reason`` holds the verifier's
expected grades per turn, or why the case was not judged.
"""


@dataclass(slots=True, frozen=True)
class PairwiseComparison:
    """The verifier's verdicts on two reports' paired cases; see :func:`pairwise`."""

    comparison: Comparison
    """The statistical comparison of the same two reports (:func:`agenteval.analysis.compare`)."""
    table: pd.DataFrame
    """One row per paired case (``PAIRWISE_COLUMNS``)."""
    confidence: float = field(default=0.95, kw_only=True)
    seed: int = field(default=0, kw_only=True)

    @property
    def summary(self) -> dict[str, Any]:
        """The candidate's win rate over the judged cases and its bootstrap interval.

        Keys: ``wins``, ``losses``, ``ties``, ``not_judged`` (case counts), ``win_rate`` (wins plus
        half the ties, over the judged cases; NaN when none was judged), ``ci_low`` and ``ci_high``
        (percentile bootstrap interval of the win rate at :attr:`confidence`) and ``mean_preference``.
        """
        from agenteval.analysis.statistics import bootstrap_mean_interval

        judged = [value for value in self.table["preference"] if not math.isnan(value)]
        outcomes = [outcome(value) for value in judged]
        low, high = bootstrap_mean_interval(outcomes, confidence=self.confidence, seed=self.seed)
        return {
            "wins": outcomes.count(1.0),
            "losses": outcomes.count(0.0),
            "ties": outcomes.count(0.5),
            "not_judged": len(self.table) - len(judged),
            "win_rate": sum(outcomes) / len(outcomes) if outcomes else math.nan,
            "ci_low": low,
            "ci_high": high,
            "mean_preference": sum(judged) / len(judged) if judged else math.nan,
        }

    @property
    def win_rate(self) -> float:
        """The candidate's share of judged cases won, ties counted as half (see :attr:`summary`)."""
        rate: float = self.summary["win_rate"]
        return rate

    def _repr_html_(self) -> str:
        s = self.summary
        level = f"{self.confidence:.0%}"
        headline = (
            f"Candidate preferred by the verifier in {s['win_rate']:.0%} of {s['wins'] + s['losses'] + s['ties']} "
            f"judged cases ({level} CI {s['ci_low']:.0%} to {s['ci_high']:.0%}): {s['wins']} won, {s['losses']} lost, "
            f"{s['ties']} tied, {s['not_judged']} not judged."
            if s["wins"] + s["losses"] + s["ties"]
            else f"No case could be judged ({s['not_judged']} not judged)."
        )
        section = (
            "<section><h3>Judge A/B (llm_verifier_pairwise)</h3>"
            f"<p>{html.escape(headline)}</p>{self.table.to_html(index=False, escape=True, na_rep='')}</section>"
        )
        return self.comparison._repr_html_() + section

    def __repr__(self) -> str:
        s = self.summary
        return (
            f"PairwiseComparison(win_rate={s['win_rate']:.3f}, wins={s['wins']}, losses={s['losses']}, "
            f"ties={s['ties']}, not_judged={s['not_judged']})"
        )


def _winner(judged: Judged) -> str:
    if not judged.judged:
        return "not judged"
    return {1.0: "candidate", 0.0: "baseline", 0.5: "tie"}[outcome(judged.preference)]


async def apairwise(
    baseline: EvaluationReport,
    candidate: EvaluationReport,
    *,
    judge: ChatModel,
    rubrics: Mapping[str, str] | None = None,
    num_samples: int = 1,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairwiseComparison:
    """The async form of :func:`pairwise`."""
    comparison = compare(baseline, candidate, confidence=confidence, seed=seed)
    metric = verifier_metric(rubrics)
    if num_samples <= 0:
        raise ConfigError(f"num_samples={num_samples} must be at least 1")
    if not baseline.inference_results or not candidate.inference_results:
        raise ConfigError(
            "pairwise needs what each agent did: a report without inference results cannot be judged "
            "(load it with EvaluationReport.load, which rebuilds them from the saved turns)"
        )
    old = conversations(baseline.inference_results[0])
    new = conversations(candidate.inference_results[0])
    left_out = set(comparison.unpaired["eval_id"])
    paired = [s.eval_id for s in candidate.case_summaries if s.eval_id not in left_out]
    verdicts = await gathered(
        judge_pair(new[eval_id], old[eval_id], judge=judge, metric=metric, samples=num_samples)
        if eval_id in old and eval_id in new
        else _unjudged("the agent failed in " + ("the baseline" if eval_id not in old else "the candidate"))
        for eval_id in paired
    )
    return PairwiseComparison(comparison, _frame(paired, verdicts), confidence=confidence, seed=seed)


async def _unjudged(why: str) -> Judged:
    return Judged(math.nan, f"not judged: {why}")


def _frame(eval_ids: list[str], verdicts: list[Judged]) -> pd.DataFrame:
    import pandas as pd

    rows = [
        {"eval_id": eval_id, "preference": v.preference, "winner": _winner(v), "reason": v.reason}
        for eval_id, v in zip(eval_ids, verdicts, strict=True)
    ]
    return pd.DataFrame.from_records(rows, columns=list(PAIRWISE_COLUMNS))


def pairwise(
    baseline: EvaluationReport,
    candidate: EvaluationReport,
    *,
    judge: ChatModel,
    rubrics: Mapping[str, str] | None = None,
    num_samples: int = 1,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairwiseComparison:
    """Ask an LLM verifier, case by case, whether the candidate answered better than the baseline.

    The judge-based counterpart of :func:`agenteval.analysis.compare`: for every case both reports share
    unchanged (as :attr:`~agenteval.analysis.compare.Comparison.unpaired` decides), the ``llm_verifier_pairwise``
    judge grades the candidate's answers (Candidate A) against the baseline's (Candidate B) turn by turn,
    on ``rubrics``, and reads its preference from the label logprobs. The first run of each report is
    judged. A case that failed in either report, or whose conversations differ in length, is listed as
    not judged with why; a judge failure too, so one bad answer does not stop the A/B.

    Example::

        ab = pairwise(report_before, report_after, judge=OpenAIChatModel("gpt-4o-mini"))
        ab.table            # per case: preference, winner, reason
        ab.summary          # win rate of the candidate with its confidence interval
        ab                  # in a notebook: the comparison's view, then the judge's verdicts

    Args:
        baseline: The report to compare against (Candidate B).
        candidate: The new report (Candidate A).
        judge: The verifier; it must return token logprobs (the request asks for them).
        rubrics: What to grade on, rubric id to text; by default whether the task was done.
        num_samples: Judge samples per turn (majority vote).
        confidence: The level of the win rate's interval (and of the comparison's).
        seed: Seeds the bootstrap resamples.

    Returns:
        The verdicts, with the statistical comparison of the two reports.

    Raises:
        ConfigError: Empty rubrics, ``num_samples`` below 1, an invalid ``confidence`` or ``seed``, or a
            report without inference results.
    """
    return run_sync(
        apairwise(
            baseline,
            candidate,
            judge=judge,
            rubrics=rubrics,
            num_samples=num_samples,
            confidence=confidence,
            seed=seed,
        )
    )
