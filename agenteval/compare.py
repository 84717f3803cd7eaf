"""Line two reports up by case and metric: what got better, what got worse."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from agenteval._gc import fewer_collections
from agenteval._presentation import presenter
from agenteval.evalresult.models import EvalCaseResult
from agenteval.evalresult.summarize import scored_metric_results
from agenteval.report import EvaluationReport
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CASE_COMPARISON_COLUMNS", "COMPARISON_COLUMNS", "Comparison", "compare"]

K = TypeVar("K")

COMPARISON_COLUMNS = (
    "eval_id",
    "metric_name",
    "baseline_score",
    "candidate_score",
    "score_change",
    "baseline_status",
    "candidate_status",
    "change",
    "baseline_pass_rate",
    "candidate_pass_rate",
    "pass_rate_change",
)
"""Columns of :attr:`Comparison.table`: one row per (case, metric) present in either report.

Scores are averaged over each report's runs; pass rates are the share of runs in which the metric
passed. A run in which the case failed with an error (the agent or the aggregator raised, say) counts
as a failed run of every metric, and a case never scored has failed rows with no score. ``change`` is
``fixed`` (now passes), ``regressed`` (passed before, not now), ``changed`` (between failed and not
evaluated), ``unchanged``, ``new`` or ``removed``.
"""

CASE_COMPARISON_COLUMNS = (
    "eval_id",
    "baseline_status",
    "candidate_status",
    "change",
    "baseline_pass_rate",
    "candidate_pass_rate",
    "pass_rate_change",
)
"""Columns of :attr:`Comparison.cases`: one row per case; pass rates are the share of runs that passed."""


@dataclass(slots=True, frozen=True)
class _Side:
    score: float | None = None
    status: str = ""
    pass_rate: float | None = None


def _change(before: _Side | None, after: _Side | None) -> str:
    if before is None:
        return "new"
    if after is None:
        return "removed"
    if before.status == after.status:
        return "unchanged"
    if after.status == EvalStatus.PASSED:
        return "fixed"
    if before.status == EvalStatus.PASSED:
        return "regressed"
    # failed <-> not evaluated: no verdict either way, but not the same outcome.
    return "changed"


def _pass_rate(statuses: Iterable[EvalStatus | None]) -> float | None:
    evaluated = [status for status in statuses if status in (EvalStatus.PASSED, EvalStatus.FAILED)]
    return sum(status == EvalStatus.PASSED for status in evaluated) / len(evaluated) if evaluated else None


def _metric_sides(report: EvaluationReport) -> dict[tuple[str, str], _Side]:
    """Each (case, metric): the averaged result, and the pass rate over the runs.

    A run in which the case failed before it was scored (the agent errored, say) counts as a failed
    run of every metric; a case that was never scored gets failed rows with no score.
    """
    sides: dict[tuple[str, str], _Side] = {}
    names = report.metric_names
    for summary in report.case_summaries:
        averaged = {metric.metric_name: metric for metric in summary.metric_results}
        errored = any(_failed_unscored(run) for run in summary.runs)
        for name in names:
            runs = [status for run in summary.runs if (status := _run_status(run, name)) is not None]
            metric = averaged.get(name)
            if metric is not None:
                sides[(summary.eval_id, name)] = _Side(metric.score, str(metric.eval_status or ""), _pass_rate(runs))
            elif errored:
                sides[(summary.eval_id, name)] = _Side(None, str(EvalStatus.FAILED), _pass_rate(runs))
    return sides


def _failed_unscored(run: EvalCaseResult) -> bool:
    return run.final_eval_status is EvalStatus.FAILED and not scored_metric_results(run)


def _run_status(run: EvalCaseResult, metric_name: str) -> EvalStatus | None:
    """The metric's status in one run: failed if the run failed unscored, ``None`` if it does not apply."""
    for result in scored_metric_results(run):
        if result.metric_name == metric_name:
            return result.eval_status
    return EvalStatus.FAILED if _failed_unscored(run) else None


def _case_sides(report: EvaluationReport) -> dict[str, _Side]:
    return {
        summary.eval_id: _Side(
            None, str(summary.overall_status), _pass_rate(run.final_eval_status for run in summary.runs)
        )
        for summary in report.case_summaries
    }


def _difference(after: float | None, before: float | None) -> float | None:
    return after - before if after is not None and before is not None else None


def _status_columns(old: _Side | None, new: _Side | None) -> dict[str, Any]:
    """The status, change and pass-rate columns of a row of :attr:`Comparison.table` or :attr:`Comparison.cases`."""
    old_rate, new_rate = (old.pass_rate if old else None), (new.pass_rate if new else None)
    return {
        "baseline_status": old.status if old else "",
        "candidate_status": new.status if new else "",
        "change": _change(old, new),
        "baseline_pass_rate": old_rate,
        "candidate_pass_rate": new_rate,
        "pass_rate_change": _difference(new_rate, old_rate),
    }


@dataclass(slots=True, frozen=True)
class Comparison:
    """Two reports lined up; see :func:`compare`."""

    baseline: EvaluationReport
    candidate: EvaluationReport

    @property
    def table(self) -> pd.DataFrame:
        """One row per (case, metric): scores, statuses, pass rates and the change (``COMPARISON_COLUMNS``)."""
        with fewer_collections():  # the first import of pandas, next to two reports
            import pandas as pd

        rows = []
        for (eval_id, metric_name), old, new in _paired(_metric_sides(self.baseline), _metric_sides(self.candidate)):
            old_score, new_score = (old.score if old else None), (new.score if new else None)
            rows.append(
                {
                    "eval_id": eval_id,
                    "metric_name": metric_name,
                    "baseline_score": old_score,
                    "candidate_score": new_score,
                    "score_change": _difference(new_score, old_score),
                    **_status_columns(old, new),
                }
            )
        return pd.DataFrame.from_records(rows, columns=list(COMPARISON_COLUMNS))

    @property
    def cases(self) -> pd.DataFrame:
        """One row per case: statuses, pass rates across runs and the change (``CASE_COMPARISON_COLUMNS``)."""
        with fewer_collections():  # the first import of pandas, next to two reports
            import pandas as pd

        rows = [
            {"eval_id": eval_id, **_status_columns(old, new)}
            for eval_id, old, new in _paired(_case_sides(self.baseline), _case_sides(self.candidate))
        ]
        return pd.DataFrame.from_records(rows, columns=list(CASE_COMPARISON_COLUMNS))

    @property
    def regressions(self) -> pd.DataFrame:
        """The rows of :attr:`table` that passed in the baseline and do not in the candidate."""
        table = self.table
        return table[table["change"] == "regressed"].reset_index(drop=True)

    @property
    def fixes(self) -> pd.DataFrame:
        """The rows of :attr:`table` that did not pass in the baseline and pass in the candidate."""
        table = self.table
        return table[table["change"] == "fixed"].reset_index(drop=True)

    @property
    def same_eval_set(self) -> bool | None:
        """Whether both reports evaluated the same eval set content (``None`` when unknown)."""
        hashes = [
            report.provenance.eval_set_hash if report.provenance else "" for report in (self.baseline, self.candidate)
        ]
        return hashes[0] == hashes[1] if all(hashes) else None

    @property
    def summary(self) -> dict[str, Any]:
        """Counts of case and metric changes, and the mean score change per metric."""
        table, cases = self.table, self.cases
        per_metric = table.dropna(subset=["score_change"]).groupby("metric_name", sort=False)["score_change"].mean()
        return {
            "cases": {change: int((cases["change"] == change).sum()) for change in _CHANGES},
            "metrics": {change: int((table["change"] == change).sum()) for change in _CHANGES},
            "mean_score_change": {name: float(value) for name, value in per_metric.items()},
            "same_eval_set": self.same_eval_set,
        }

    def _repr_html_(self) -> str:
        return presenter().comparison_html(self)

    def to_html(self, path: str | os.PathLike[str]) -> Path:
        """Write one self-contained HTML file of the comparison that opens without a kernel.

        It is styled like :meth:`EvaluationReport.to_html`: both reports, the counts of fixed and
        regressed cases and (case, metric) results, a note when the eval sets differ, each metric's
        mean score change, the cases whose status changed (from :attr:`cases`), the metric
        regressions and fixes (:attr:`regressions`, :attr:`fixes`), and the full :attr:`table` and
        :attr:`cases` (folded).

        Args:
            path: Where to write; parent directories are created. The file is replaced atomically.

        Returns:
            The path written.

        Raises:
            StorageError: The file could not be written.
        """
        return presenter().export_comparison(self, Path(path))

    def __repr__(self) -> str:
        summary = self.summary
        return f"Comparison(cases: {_counted(summary['cases'])}; metrics: {_counted(summary['metrics'])})"


def _counted(counts: dict[str, int]) -> str:
    """``3 fixed, 1 regressed, 5 unchanged``: fixed and regressed always, the other changes when they happened."""
    return ", ".join(
        f"{count} {change}" for change, count in counts.items() if count or change in ("fixed", "regressed")
    )


_CHANGES = ("fixed", "regressed", "changed", "unchanged", "new", "removed")


def _paired(before: dict[K, _Side], after: dict[K, _Side]) -> list[tuple[K, _Side | None, _Side | None]]:
    """Each key with its baseline and candidate sides: the candidate's keys in order, then the baseline's others."""
    keys = [*after, *(key for key in before if key not in after)]
    return [(key, before.get(key), after.get(key)) for key in keys]


def compare(baseline: EvaluationReport, candidate: EvaluationReport) -> Comparison:
    """Line up two reports of the same eval set by case and metric.

    Example::

        diff = ae.compare(report_before, report_after)
        diff.regressions        # (case, metric) rows that passed before and fail now
        diff.table              # every (case, metric) with both scores and pass rates

    Args:
        baseline: The report to compare against.
        candidate: The new report.

    Returns:
        The comparison; its tables are computed when accessed.
    """
    return Comparison(baseline, candidate)
