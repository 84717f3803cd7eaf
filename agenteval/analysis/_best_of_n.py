"""Best-of-N over a report's runs: per case, the run an LLM verifier prefers in a round-robin tournament."""

from __future__ import annotations

import html
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agenteval.analysis._judged_pairs import Judged, conversations, gathered, judge_pair, outcome, verifier_metric
from agenteval.errors import ConfigError
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalCaseResult
from agenteval.evalset.models import Invocation
from agenteval.llm.base import ChatModel
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["BEST_OF_N_COLUMNS", "BestOfN", "best_of_n"]

BEST_OF_N_COLUMNS = ("eval_id", "best_run", "wins", "runs_judged", "best_passes", "run1_passes", "reason")
"""Columns of :attr:`BestOfN.table`: one row per case.

``best_run`` is the run (1-based) with the most tournament wins (a tie counts half; equal wins go to
the earlier run), ``wins`` its points, ``runs_judged`` how many runs took part (runs whose agent failed do
not). ``best_passes`` and ``run1_passes`` say whether that run and run 1 pass the deterministic metrics.
``reason`` lists each run's points, or why there was no tournament.
"""


@dataclass(slots=True, frozen=True)
class BestOfN:
    """The verifier's pick per case among a report's runs; see :meth:`agenteval.EvaluationReport.best_of_n`."""

    table: pd.DataFrame
    """One row per case (``BEST_OF_N_COLUMNS``)."""
    decided_by: str
    """What "passes" means: the deterministic metrics named, or the run's status when there are none."""

    @property
    def summary(self) -> dict[str, Any]:
        """``best_pass_rate`` and ``run1_pass_rate`` (shares of cases passing), ``cases`` and ``decided_by``."""
        cases = len(self.table)
        return {
            "cases": cases,
            "best_pass_rate": float(self.table["best_passes"].mean()) if cases else float("nan"),
            "run1_pass_rate": float(self.table["run1_passes"].mean()) if cases else float("nan"),
            "decided_by": self.decided_by,
        }

    def _repr_html_(self) -> str:
        s = self.summary
        headline = (
            f"Best-of-N by the verifier passes {s['best_pass_rate']:.0%} of {s['cases']} cases, run 1 "
            f"{s['run1_pass_rate']:.0%} (passing: {s['decided_by']})."
        )
        return (
            f"<section><h3>Best-of-N (llm_verifier_pairwise)</h3><p>{html.escape(headline)}</p>"
            f"{self.table.to_html(index=False, escape=True)}</section>"
        )

    def __repr__(self) -> str:
        s = self.summary
        rates = f"best_pass_rate={s['best_pass_rate']:.3f}, run1_pass_rate={s['run1_pass_rate']:.3f}"
        return f"BestOfN(cases={s['cases']}, {rates})"


def _deterministic(metrics: Sequence[EvalMetric]) -> list[str]:
    return [metric.metric_name for metric in metrics if not metric.evaluator.startswith("llm_")]


def _passes(run: EvalCaseResult | None, deterministic: list[str]) -> bool:
    if run is None or run.error_message:
        return False
    if not deterministic:
        return run.final_eval_status == EvalStatus.PASSED
    statuses = {result.metric_name: result.eval_status for result in run.overall_eval_metric_results}
    return all(statuses.get(name) == EvalStatus.PASSED for name in deterministic)


def _standings(run_ids: list[int], verdicts: Mapping[tuple[int, int], Judged]) -> dict[int, float]:
    points = dict.fromkeys(run_ids, 0.0)
    for (first, second), judged in verdicts.items():
        if judged.judged:
            points[first] += outcome(judged.preference)
            points[second] += 1 - outcome(judged.preference)
    return points


def _reason(run_ids: list[int], points: dict[int, float], verdicts: Mapping[tuple[int, int], Judged]) -> str:
    if not run_ids:
        return "no run of this case succeeded"
    reason = "points: " + ", ".join(f"run {number}: {points[number]:g}" for number in run_ids)
    failed = [judged.reason for judged in verdicts.values() if not judged.judged]
    if failed:
        reason += f"; {len(failed)} of {len(verdicts)} pairs not judged ({failed[0]})"
    return reason


async def best_of_n(
    runs: Mapping[str, Sequence[EvalCaseResult]],
    inference_results: Sequence[Sequence[InferenceResult]],
    metrics: Sequence[EvalMetric],
    *,
    judge: ChatModel,
    rubrics: Mapping[str, str] | None,
    num_samples: int,
) -> BestOfN:
    """Run the tournament of every case (see :meth:`agenteval.EvaluationReport.best_of_n`)."""
    import pandas as pd

    if len(inference_results) < 2:
        raise ConfigError(
            f"best_of_n needs a report of several runs, this one has {len(inference_results)}; "
            "evaluate with num_runs=3 (or more)"
        )
    if num_samples <= 0:
        raise ConfigError(f"num_samples={num_samples} must be at least 1")
    metric = verifier_metric(rubrics)
    turns: list[dict[str, list[Invocation]]] = [conversations(run) for run in inference_results]
    pairs: list[tuple[str, int, int]] = []
    for eval_id in runs:
        run_ids = [number for number, run in enumerate(turns, start=1) if eval_id in run]
        pairs.extend((eval_id, first, second) for first, second in itertools.combinations(run_ids, 2))
    verdicts = await gathered(
        judge_pair(turns[a - 1][eval_id], turns[b - 1][eval_id], judge=judge, metric=metric, samples=num_samples)
        for eval_id, a, b in pairs
    )
    by_case: dict[str, dict[tuple[int, int], Judged]] = {}
    for (eval_id, a, b), judged in zip(pairs, verdicts, strict=True):
        by_case.setdefault(eval_id, {})[(a, b)] = judged
    deterministic = _deterministic(metrics)
    rows = []
    for eval_id, case_runs in runs.items():
        run_ids = [number for number, run in enumerate(turns, start=1) if eval_id in run]
        points = _standings(run_ids, by_case.get(eval_id, {}))
        best = max(run_ids, key=lambda number: (points[number], -number)) if run_ids else 1
        by_run = {run.run_id or 1: run for run in case_runs}
        reason = _reason(run_ids, points, by_case.get(eval_id, {}))
        rows.append(
            {
                "eval_id": eval_id,
                "best_run": best,
                "wins": points.get(best, 0.0),
                "runs_judged": len(run_ids),
                "best_passes": _passes(by_run.get(best), deterministic),
                "run1_passes": _passes(by_run.get(1), deterministic),
                "reason": reason,
            }
        )
    decided_by = (
        f"deterministic metrics {deterministic}" if deterministic else "the run's status (no deterministic metric)"
    )
    return BestOfN(pd.DataFrame.from_records(rows, columns=list(BEST_OF_N_COLUMNS)), decided_by)
