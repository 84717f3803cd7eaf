"""Line two reports up by case and metric: what got better, what got worse."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from agenteval._presentation import presenter
from agenteval._util.gc_tuning import fewer_collections
from agenteval.analysis.passk import case_pass_nc
from agenteval.analysis.report import CaseSummary, EvaluationReport, case_views, run_views
from agenteval.errors import ConfigError, EvalSetChangedWarning, warn_user
from agenteval.evalresult.summarize import averaged_metrics
from agenteval.evalset.identity import case_hash
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from agenteval._presentation import HTMLView
    from agenteval.analysis._frames import CaseAcrossRuns, MetricView, RunView
    from agenteval.analysis.statistics import PairedDifference
    from agenteval.evalset.models import EvalCase

__all__ = [
    "CASE_COMPARISON_COLUMNS",
    "COMPARISON_COLUMNS",
    "SIGNIFICANCE_COLUMNS",
    "UNPAIRED_COLUMNS",
    "Comparison",
    "compare",
]

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

SIGNIFICANCE_COLUMNS = (
    "metric",
    "label",
    "n_pairs",
    "baseline_mean",
    "candidate_mean",
    "mean_diff",
    "ci_low",
    "ci_high",
    "p_value",
    "test",
)
"""Columns of :attr:`Comparison.significance`: a row for each pass rate, then one per metric.

``metric`` names the row and ``label`` says what it counts. The first row (``case_pass_rate``,
:data:`agenteval.analysis.statistics.PASS_RATE_ROW`, ``cases passed (overall status)``) counts each case once,
by the overall status the case aggregator gave it across runs (by default every metric averaged over
the runs reaches its threshold: with thresholds of 1, a case passes only if it passed every run). The
second (``run_pass_rate``, :data:`agenteval.analysis.statistics.RUN_PASS_RATE_ROW`, ``runs passed (per-run
pass rate)``) pairs each case's share of runs that passed (a run the case errored in failed; one it was
not evaluated in is left out): it moves when a case passes more of its runs, even if its overall status
does not. The metric rows are labelled ``mean score``.

Only paired cases count (see :attr:`Comparison.unpaired`). ``n_pairs`` is how many paired cases have a
value in both reports: for the first row, those passed or failed in both; for the second, those with a
run that passed or failed in both; for a metric, those it scored in both (each case's score averaged
over its runs, so with several runs per case the per-case means are paired).

``baseline_mean`` and ``candidate_mean`` are the means over those cases (a pass rate as a fraction)
and ``mean_diff`` their difference; ``ci_low`` and ``ci_high`` bound it with a paired percentile
bootstrap interval at the comparison's confidence (narrow with few pairs, see
:func:`agenteval.analysis.statistics.bootstrap_mean_interval`). ``p_value`` is two-sided, from the test that
``test`` names: ``exact McNemar`` for the cases passed (a binomial test of the cases that passed only in
the baseline against those that passed only in the candidate); for the runs passed and for a metric a
Wilcoxon signed-rank or a sign-flip permutation test (the permutation test when fewer than 10
differences are non-zero, or their sizes tie; see :func:`agenteval.analysis.statistics.paired_score_test`). The
tests are exact for small samples. When nothing can be tested, ``test`` says why (``none: only the
candidate has this metric``, ``none: no paired cases``, ...) and the numbers are NaN; when every
difference is zero, ``test`` is ``none: every difference is zero`` and ``p_value`` is 1.
"""

UNPAIRED_COLUMNS = ("eval_id", "reason")
"""Columns of :attr:`Comparison.unpaired`: the cases left out of :attr:`Comparison.significance`.

``reason`` is ``edited`` (both reports have the case, but its content differs between their eval
sets), ``only in baseline`` or ``only in candidate``.
"""


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
    for summary in case_views(report):
        averaged = _averaged(summary)
        errored = any(_failed_unscored(run) for run in summary.runs)
        for name in names:
            runs = [status for run in summary.runs if (status := _run_status(run, name)) is not None]
            metric = averaged.get(name)
            if metric is not None:
                sides[(summary.eval_id, name)] = _Side(metric[0], metric[1], _pass_rate(runs))
            elif errored:
                sides[(summary.eval_id, name)] = _Side(None, str(EvalStatus.FAILED), _pass_rate(runs))
    return sides


def _averaged(case: CaseAcrossRuns) -> dict[str, tuple[float, str]]:
    """Each metric's score averaged over the case's runs, and whether the average passes, by metric name.

    A report that has read its records has them (:attr:`CaseSummary.metric_results`); from the rows of one that
    has not, they are what reading them would give (:func:`~agenteval.evalresult.summarize.average_metric_results`:
    the same sums in the same order, the threshold of the first run that evaluated the metric).
    """
    if isinstance(case, CaseSummary):
        return {metric.metric_name: (metric.score, str(metric.eval_status or "")) for metric in case.metric_results}
    return {metric.metric_name: (metric.score, str(metric.eval_status)) for metric in averaged_metrics(case.runs)}


def _scored(run: RunView) -> Sequence[MetricView]:
    """The metric results that count for a run (:func:`~agenteval.evalresult.summarize.scored_metric_results`)."""
    return () if run.error_message else run.overall_eval_metric_results


def _failed_unscored(run: RunView) -> bool:
    return run.final_eval_status is EvalStatus.FAILED and not _scored(run)


def _run_status(run: RunView, metric_name: str) -> EvalStatus | None:
    """The metric's status in one run: failed if the run failed unscored, ``None`` if it does not apply."""
    for result in _scored(run):
        if result.metric_name == metric_name:
            return result.eval_status
    return EvalStatus.FAILED if _failed_unscored(run) else None


def _case_sides(report: EvaluationReport) -> dict[str, _Side]:
    return {
        summary.eval_id: _Side(
            None, str(summary.overall_status), _pass_rate(run.final_eval_status for run in summary.runs)
        )
        for summary in case_views(report)
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
    confidence: float = field(default=0.95, kw_only=True)
    """The level of the intervals of :attr:`significance`; a change is significant when ``p < 1 - confidence``."""
    seed: int = field(default=0, kw_only=True)
    """Seeds the bootstrap and permutation resamples: the same seed gives the same :attr:`significance`."""

    def __post_init__(self) -> None:
        from agenteval.analysis.statistics import check_level

        check_level(self.confidence, "confidence")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"seed={self.seed!r} must be a non-negative int, e.g. seed=0")

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
        return _same_eval_set(self.baseline, self.candidate)

    @property
    def significance(self) -> pd.DataFrame:
        """Whether the pass rates and each metric's mean score changed beyond noise (``SIGNIFICANCE_COLUMNS``).

        A row for the cases passed by overall status (``metric`` is ``case_pass_rate``), one for the
        runs passed (``run_pass_rate``), then one per metric (the candidate's, then any only the
        baseline has); ``label`` says what each counts. Only cases with the same content in both
        reports are paired; the others are in :attr:`unpaired`. The intervals are at
        :attr:`confidence` and the resamples drawn from :attr:`seed`, so the table is reproducible.
        """
        with fewer_collections():  # the first import of pandas and scipy, next to two reports
            import pandas as pd

            return pd.DataFrame.from_records(
                _significance_rows(self, _pairing(self.baseline, self.candidate).paired),
                columns=list(SIGNIFICANCE_COLUMNS),
            )

    @property
    def unpaired(self) -> pd.DataFrame:
        """The cases left out of :attr:`significance`, and why (``UNPAIRED_COLUMNS``).

        Cases are paired by id when both reports have them and their content is the same: compared
        by case content hash when both reports hold their eval set, taken as the same when the
        reports' provenance records the same eval-set hash, and otherwise assumed (a report loaded
        without ``eval_set=``; ``summary["pairing"]`` says so).
        """
        with fewer_collections():
            import pandas as pd

        return pd.DataFrame.from_records(
            _pairing(self.baseline, self.candidate).unpaired, columns=list(UNPAIRED_COLUMNS)
        )

    @property
    def summary(self) -> dict[str, Any]:
        """The changes counted and averaged, and whether they are significant, in words.

        Keys: ``cases`` and ``metrics`` (how many cases and (case, metric) results were fixed,
        regressed, ...), ``mean_score_change`` per metric, ``same_eval_set``, ``confidence``,
        ``pairing`` (how the cases were paired, and how many were left out), ``significant`` (per
        row of :attr:`significance`: whether ``p < 1 - confidence``, ``None`` when untested) and
        ``significance`` (per row, a sentence such as ``cases passed (overall status): 50% → 80% (+30
        pts, 95% CI +10 to +50 pts) over 20 paired cases: significant at the 5% level (exact McNemar,
        p = 0.0312)``).
        """
        table, cases = self.table, self.cases
        per_metric = table.dropna(subset=["score_change"]).groupby("metric_name", sort=False)["score_change"].mean()
        pairing = _pairing(self.baseline, self.candidate)
        rows = _significance_rows(self, pairing.paired)
        alpha = _alpha(self.confidence)
        return {
            "cases": _tally(cases["change"]),
            "metrics": _tally(table["change"]),
            "mean_score_change": {name: float(value) for name, value in per_metric.items()},
            "same_eval_set": self.same_eval_set,
            "confidence": self.confidence,
            "pairing": pairing.describe(),
            "significant": {row["metric"]: _significant(row["p_value"], alpha) for row in rows},
            "significance": {row["metric"]: _in_words(row, self.confidence) for row in rows},
        }

    def _repr_html_(self) -> str:
        return presenter().comparison_html(self)

    def show_case(self, eval_id: str, run_id: int | None = None) -> HTMLView:
        """One case in both reports, turn by turn, against what was expected: what changed between versions.

        Each turn lines the expected tool calls up with the baseline's and the candidate's calls, as each
        report's tool-trajectory metric paired them (missing, substituted, out of order and extra calls
        marked, a wrong argument shown with its JSON path), next to both final replies and both
        reports' metric verdicts, each change from the baseline named.

        Args:
            eval_id: The case.
            run_id: The run to show in both reports; by default each report's first run in which the case
                failed (or its run 1).

        Returns:
            An HTML view that renders in Jupyter (and prints as text elsewhere).

        Raises:
            NotFoundError: Neither report has the case, or it has no run ``run_id``.
            ConfigError: ``run_id`` is not an int.
        """
        return presenter().comparison_case_view(self, eval_id, run_id)

    def plot_failures(self, by: Literal["metric", "category"] = "metric") -> Figure:
        """Both reports' failures counted side by side, on one scale (see :meth:`EvaluationReport.plot_failures`).

        Args:
            by: ``"metric"``: one bar per metric, stacked by failure category; ``"category"``: one bar per
                category, stacked by metric.
        """
        figure: Figure = presenter().plot_comparison_failures(self, by)
        return figure

    def to_html(self, path: str | os.PathLike[str]) -> Path:
        """Write one self-contained HTML file of the comparison that opens without a kernel.

        It is styled like :meth:`EvaluationReport.to_html`: both reports, the counts of fixed and
        regressed cases and (case, metric) results, a note when the eval sets differ, each metric's
        mean score change, whether the pass rates and each metric changed significantly (in words and
        as :attr:`significance`, with :attr:`unpaired`), the cases whose status changed (from
        :attr:`cases`), the metric regressions and fixes (:attr:`regressions`, :attr:`fixes`), and the
        full :attr:`table` and :attr:`cases` (folded).

        Args:
            path: Where to write; parent directories are created. The file is replaced atomically.

        Returns:
            The path written.

        Raises:
            StorageError: The file could not be written.
        """
        return presenter().export_comparison(self, Path(path))

    def __repr__(self) -> str:
        # Not from summary: a repr should not run the statistical tests.
        cases, metrics = (_tally(frame["change"]) for frame in (self.cases, self.table))
        return f"Comparison(cases: {_counted(cases)}; metrics: {_counted(metrics)})"


def _same_eval_set(baseline: EvaluationReport, candidate: EvaluationReport) -> bool | None:
    # The provenance as known without the records: the provenance field reads them all in a loaded report.
    provenances = [report._known_provenance() for report in (baseline, candidate)]
    hashes = [provenance.eval_set_hash if provenance else "" for provenance in provenances]
    return hashes[0] == hashes[1] if all(hashes) else None


def _tally(changes: pd.Series[str]) -> dict[str, int]:
    return {change: int((changes == change).sum()) for change in _CHANGES}


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


def compare(
    baseline: EvaluationReport, candidate: EvaluationReport, *, confidence: float = 0.95, seed: int = 0
) -> Comparison:
    """Line up two reports of the same eval set by case and metric, and test whether they differ.

    Example::

        diff = ae.compare(report_before, report_after)
        diff.regressions        # (case, metric) rows that passed before and fail now
        diff.table              # every (case, metric) with both scores and pass rates
        diff.significance       # pass rates (cases, runs) and mean scores: paired tests
        diff.summary["significance"]   # the same, in words

    Args:
        baseline: The report to compare against.
        candidate: The new report.
        confidence: The level of the intervals in :attr:`~Comparison.significance`; a change is
            significant when its p-value is below ``1 - confidence``.
        seed: Seeds the bootstrap and permutation resamples, so the results are reproducible.

    Returns:
        The comparison; its tables are computed when accessed.

    Two reports of different eval sets (other ids) are compared too, with an
    :class:`~agenteval.errors.EvalSetChangedWarning`: only cases with the same id and content pair.

    Raises:
        ConfigError: ``confidence`` is not strictly between 0 and 1, or ``seed`` is not a
            non-negative int.
    """
    if baseline.eval_set_id != candidate.eval_set_id:
        warn_user(
            f"comparing reports of different eval sets ({baseline.eval_set_id!r} and {candidate.eval_set_id!r}):"
            " only cases with the same id and content pair; compare two evaluations of one eval set",
            EvalSetChangedWarning,
        )
    return Comparison(baseline, candidate, confidence=confidence, seed=seed)


@dataclass(slots=True, frozen=True)
class _Pairing:
    """Which cases two reports share with the same content, which they do not, and how that was decided."""

    paired: list[str]
    unpaired: list[tuple[str, str]]
    how: str

    def describe(self) -> str:
        left_out = f"; {len(self.unpaired)} left out (see comparison.unpaired)" if self.unpaired else ""
        return f"{len(self.paired)} cases paired {self.how}{left_out}"


def _pairing(baseline: EvaluationReport, candidate: EvaluationReport) -> _Pairing:
    """The cases both reports have with the same content, in the candidate's order, and the others with why."""
    baseline_ids = [case.eval_id for case in case_views(baseline)]
    candidate_ids = [case.eval_id for case in case_views(candidate)]
    before, after = set(baseline_ids), set(candidate_ids)
    common = [eval_id for eval_id in candidate_ids if eval_id in before]
    edited: set[str] = set()
    # Whether each holds its eval set, known without reading it (in a loaded report, reading it reads every record).
    held = {role: report._has_eval_set() for role, report in (("baseline", baseline), ("candidate", candidate))}
    if _same_eval_set(baseline, candidate):
        how = "by id (both reports evaluated the same eval set content)"
    elif not all(held.values()):
        missing = [role for role, holds in held.items() if not holds]
        holds = "reports have" if len(missing) == 2 else "report has"
        differ = (
            "their eval sets differ (their content hashes do), so edited cases may be paired; "
            if _same_eval_set(baseline, candidate) is False
            else ""
        )
        how = (
            f"by id without comparing their content: {differ}the {' and '.join(missing)} {holds} no eval set"
            " (load with eval_set= to pair only unchanged cases)"
        )
    else:
        # Edited cases are told apart by content: the eval sets are read here (with them, a loaded report's records).
        old, new = _cases_by_id(baseline), _cases_by_id(candidate)
        edited = {
            eval_id
            for eval_id in common
            if eval_id in old and eval_id in new and case_hash(old[eval_id]) != case_hash(new[eval_id])
        }
        how = "by id and content"
    unpaired = [
        *((eval_id, "edited") for eval_id in candidate_ids if eval_id in edited),
        *((eval_id, "only in candidate") for eval_id in candidate_ids if eval_id not in before),
        *((eval_id, "only in baseline") for eval_id in baseline_ids if eval_id not in after),
    ]
    return _Pairing([eval_id for eval_id in common if eval_id not in edited], unpaired, how)


def _cases_by_id(report: EvaluationReport) -> dict[str, EvalCase]:
    eval_set = report.eval_set
    return eval_set.cases_by_id() if eval_set is not None else {}


def _decided(report: EvaluationReport) -> dict[str, bool]:
    """Whether each case passed, for the cases that passed or failed (not those not evaluated)."""
    return {
        summary.eval_id: summary.overall_status is EvalStatus.PASSED
        for summary in case_views(report)
        if summary.overall_status in (EvalStatus.PASSED, EvalStatus.FAILED)
    }


def _case_scores(report: EvaluationReport) -> dict[str, dict[str, float]]:
    """Each metric's finite score per case, averaged over the runs that evaluated it."""
    scores: dict[str, dict[str, float]] = {}
    for summary in case_views(report):
        for name, (score, _) in _averaged(summary).items():
            if math.isfinite(score):
                scores.setdefault(name, {})[summary.eval_id] = score
    return scores


def _run_pass_rates(report: EvaluationReport) -> dict[str, float]:
    """Each case's share of runs that passed, for the cases with a run that passed or failed."""
    return {case.eval_id: case.passed / case.runs for case in case_pass_nc(run_views(report)) if case.runs}


def _significance_rows(comparison: Comparison, paired: list[str]) -> list[dict[str, Any]]:
    """The rows of :attr:`Comparison.significance` for the ``paired`` cases."""
    from agenteval.analysis import statistics

    options: dict[str, Any] = {"confidence": comparison.confidence, "seed": comparison.seed}
    old, new = _decided(comparison.baseline), _decided(comparison.candidate)
    both = [eval_id for eval_id in paired if eval_id in old and eval_id in new]
    old_runs, new_runs = _run_pass_rates(comparison.baseline), _run_pass_rates(comparison.candidate)
    rated = [eval_id for eval_id in paired if eval_id in old_runs and eval_id in new_runs]
    rows = [
        _row(
            statistics.PASS_RATE_ROW,
            statistics.PASS_RATE_LABEL,
            statistics.paired_pass_rates([old[i] for i in both], [new[i] for i in both], **options),
        ),
        _row(
            statistics.RUN_PASS_RATE_ROW,
            statistics.RUN_PASS_RATE_LABEL,
            statistics.paired_scores([old_runs[i] for i in rated], [new_runs[i] for i in rated], **options)
            if rated
            else statistics.PairedDifference.untested("no paired cases"),
        ),
    ]
    before, after = _case_scores(comparison.baseline), _case_scores(comparison.candidate)
    old_names, new_names = comparison.baseline.metric_names, comparison.candidate.metric_names
    for name in [*new_names, *(name for name in old_names if name not in new_names)]:
        if name not in old_names or name not in new_names:
            side = "candidate" if name in new_names else "baseline"
            untested = statistics.PairedDifference.untested(f"only the {side} has this metric")
            rows.append(_row(name, statistics.SCORE_LABEL, untested))
            continue
        old_scores, new_scores = before.get(name, {}), after.get(name, {})
        scored = [eval_id for eval_id in paired if eval_id in old_scores and eval_id in new_scores]
        rows.append(
            _row(
                name,
                statistics.SCORE_LABEL,
                statistics.paired_scores([old_scores[i] for i in scored], [new_scores[i] for i in scored], **options),
            )
        )
    return rows


def _row(metric: str, label: str, difference: PairedDifference) -> dict[str, Any]:
    return {"metric": metric, "label": label, **{name: getattr(difference, name) for name in SIGNIFICANCE_COLUMNS[2:]}}


def _alpha(confidence: float) -> float:
    """``1 - confidence`` without float noise: 1 - 0.95 is 0.05000000000000004, which a p of 0.05 is below."""
    return round(1 - confidence, 12)


def _significant(p_value: float, alpha: float) -> bool | None:
    return None if math.isnan(p_value) else p_value < alpha


def _percent(level: float) -> str:
    """``0.95`` as ``95%``, ``0.001`` as ``0.1%``: no float noise, no rounding to nothing."""
    return f"{level * 100:.6g}%"


def _signed(value: float, digits: int) -> str:
    """``+0.25``, ``-3``; a value that rounds to zero without a sign."""
    text = f"{value:+.{digits}f}"
    return text[1:] if float(text) == 0 else text


def _in_words(row: dict[str, Any], confidence: float) -> str:
    """One row of :attr:`Comparison.significance` as a sentence that says whether the change is significant."""
    from agenteval.analysis.statistics import PASS_RATE_ROW, RUN_PASS_RATE_ROW

    rate = row["metric"] in (PASS_RATE_ROW, RUN_PASS_RATE_ROW)
    name = row["label"] if rate else row["metric"]
    if math.isnan(row["p_value"]):
        return f"{name}: not tested ({row['test'].removeprefix('none: ')})"
    if rate:
        scale, digits, unit = 100, 0, " pts"
        before, after = f"{row['baseline_mean']:.0%}", f"{row['candidate_mean']:.0%}"
    else:
        scale, digits, unit = 1, 2, ""
        before, after = f"mean {row['baseline_mean']:.2f}", f"{row['candidate_mean']:.2f}"
    change, low, high = (_signed(row[key] * scale, digits) for key in ("mean_diff", "ci_low", "ci_high"))
    moved = f"{before} → {after} ({change}{unit}, {_percent(confidence)} CI {low} to {high}{unit})"
    p_value = row["p_value"]
    alpha = _alpha(confidence)
    # Near the level, enough digits that the shown value and the verdict agree (0.04996, not 0.05).
    shown = "p < 0.001" if p_value < 0.001 else f"p = {p_value:.{4 if abs(p_value - alpha) < 0.005 else 3}g}"
    verdict = "significant" if p_value < alpha else "not significant"
    cases = "case" if row["n_pairs"] == 1 else "cases"
    return (
        f"{name}: {moved} over {row['n_pairs']} paired {cases}: {verdict} at the "
        f"{_percent(1 - confidence)} level ({row['test'].removeprefix('none: ')}, {shown})"
    )
