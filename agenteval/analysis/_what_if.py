"""What if: a finished report's case statuses and pass rates under other thresholds and another case rule.

Everything is recomputed from the scores the report stores, as arrays over (run, case, metric): neither
the agent nor the evaluators run, and one change of the settings takes milliseconds for thousands of
cases. The outcome is the one :meth:`~agenteval.EvaluationReport.with_thresholds` gives with the
equivalent case aggregator (:meth:`WhatIf.python_code` writes that call): a metric passes a run when
its score reaches the threshold; each run of a case is decided by the rule from its metric results;
with several runs each case is decided once more, from each metric's score averaged over the runs that
scored it. A run that failed before scoring (its agent, a metric, a timeout) keeps its status and score
whatever the settings, and is left out of the averages.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from agenteval._util.callable_names import qualified_name
from agenteval._util.files import dump_models
from agenteval.aggregation import AllPassAggregator, finite_score
from agenteval.analysis.report import case_views, run_views
from agenteval.errors import ConfigError
from agenteval.evalresult.models import ErrorType
from agenteval.evaluators.registry import default_registry
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    import pandas as pd

    from agenteval.analysis._frames import RunView
    from agenteval.analysis.report import EvaluationReport

__all__ = [
    "CASE_TABLE_COLUMNS",
    "AllMetricsPass",
    "AtLeastKMetricsPass",
    "CaseRule",
    "ScoredReport",
    "WeightedScoreAtLeast",
    "WhatIf",
    "WhatIfOutcome",
    "WhatIfSettings",
]

CASE_TABLE_COLUMNS = ("eval_id", "status", "score", "before", "runs_passed", "pass_rate")
"""The fixed columns of :attr:`WhatIfOutcome.case_table`; a score column per metric follows."""

_ABSENT, _PASSED, _FAILED, _NOT_EVALUATED = 0, 1, 2, 3
_LABELS = np.array(["", EvalStatus.PASSED.value, EvalStatus.FAILED.value, EvalStatus.NOT_EVALUATED.value], dtype=object)


@dataclass(frozen=True, slots=True)
class AllMetricsPass:
    """A case passes when no metric fails and at least one passes (score 1, else 0): the default aggregator."""


@dataclass(frozen=True, slots=True)
class AtLeastKMetricsPass:
    """A case passes when at least ``k`` of its scored metrics pass; its score is the share that pass.

    A case with no scored metric is not evaluated.
    """

    k: int


@dataclass(frozen=True, slots=True)
class WeightedScoreAtLeast:
    """A case passes when the weighted mean of its scored metrics' scores is at least ``minimum``.

    The weighted mean is the case's score; a metric without a weight weighs 0. A case whose scored
    metrics weigh 0 in all is not evaluated. Thresholds then decide only each metric's own status.
    """

    minimum: float
    weights: Mapping[str, float] = field(default_factory=dict)


CaseRule = AllMetricsPass | AtLeastKMetricsPass | WeightedScoreAtLeast
"""How a case's metric results decide its status."""


@dataclass(frozen=True, slots=True)
class WhatIfSettings:
    """New thresholds and a case rule to try on a report."""

    thresholds: Mapping[str, float] = field(default_factory=dict)
    """New threshold per metric name; the other metrics keep the thresholds their results hold."""
    rule: CaseRule = field(default_factory=AllMetricsPass)
    """The case rule."""


ScoredReport: TypeAlias = "EvaluationReport"
"""What a what-if reads: an :class:`~agenteval.EvaluationReport`, through the rows of its case results (its
records stay unread)."""


@dataclass(frozen=True, slots=True)
class WhatIfOutcome:
    """A report's cases decided under :attr:`settings`, beside the report's own statuses (``before``)."""

    settings: WhatIfSettings
    cases: pd.DataFrame
    """One row per (run, case), in run then eval-set order: ``run_id``, ``eval_id``, ``status``, ``score`` and
    ``before`` (the report's status)."""
    case_table: pd.DataFrame
    """One row per case in eval-set order: ``eval_id``, ``status``, ``score``, ``before``, ``runs_passed``,
    ``pass_rate`` (of the runs that passed or failed), then each metric's score averaged over the runs."""
    runs: pd.DataFrame
    """One row per run: ``run_id``, ``passed``, ``failed``, ``not_evaluated``, ``pass_rate``, ``pass_rate_before``."""
    metric_table: pd.DataFrame
    """One row per metric: ``metric_name``, ``threshold``, ``threshold_before``, ``mean_score``, ``scored``
    (results of runs that did not fail before scoring), ``passed``, ``pass_rate``, ``pass_rate_before``."""
    flips: pd.DataFrame
    """The rows of :attr:`case_table` whose status changed, those that passed before first."""
    passed: int
    """Cases that pass."""
    failed: int
    """Cases that fail."""
    passed_before: int
    """Cases that passed in the report."""
    failed_before: int
    """Cases that failed in the report."""

    @property
    def pass_rate(self) -> float:
        """The share of the cases that passed or failed which passed (NaN when none did)."""
        return _rate(self.passed, self.passed + self.failed)

    @property
    def pass_rate_before(self) -> float:
        """:attr:`pass_rate` in the report."""
        return _rate(self.passed_before, self.passed_before + self.failed_before)


class WhatIf:
    """A report's stored scores as arrays, ready to be decided again under other settings.

    Args:
        report: The report (it is read once, here, and not changed).
    """

    def __init__(self, report: ScoredReport) -> None:
        self.eval_set_id = report.eval_set_id
        """The eval set of the report."""
        self.metric_names: tuple[str, ...] = tuple(report.metric_names)
        """The metrics, in configuration order, then any other the results hold."""
        # Rows, not records: the scores and outcomes are all a what-if reads, and a large report
        # that has not read its records reads none here.
        summaries = case_views(report)
        self.eval_ids: tuple[str, ...] = tuple(case.eval_id for case in summaries)
        """The cases, in eval-set order."""
        self.num_runs = report.num_runs
        """The configured number of runs (with more than one, cases are decided across runs)."""
        self._eval_metrics = list(report.eval_metrics)
        # Built-in metrics' score ranges, which bound their thresholds (as with_thresholds checks them).
        self._registry = default_registry()
        self.aggregator_name, self.decided_by_all_pass = _report_aggregator(report)
        """The name of the case aggregator that decided the report (``""`` when it records none), and
        whether that is the all-pass one."""
        cases = run_views(report)
        runs = max(report.num_runs, max((case.run_id or 1 for case in cases), default=1))
        shape = (runs, len(self.eval_ids))
        self._present = np.zeros(shape, dtype=bool)
        self._errored = np.zeros(shape, dtype=bool)
        self._run_before = np.zeros(shape, dtype=np.int8)
        self._score_before = np.zeros(shape)
        self._statuses = np.zeros((*shape, len(self.metric_names)), dtype=np.int8)
        self._scores = np.zeros(self._statuses.shape)
        self._thresholds = np.zeros(self._statuses.shape)
        self._fill(cases)
        self._scored = (self._statuses == _PASSED) | (self._statuses == _FAILED)
        # Runs that failed before scoring count in no average (as in the multi-run summary).
        self._counted = self._scored & ~self._errored[..., np.newaxis]
        self._case_before = np.array([_code(case.overall_status) for case in summaries], dtype=np.int8)
        own = {metric.metric_name: metric.threshold for metric in self._eval_metrics}
        for case in cases:
            for result in case.overall_eval_metric_results:
                own.setdefault(result.metric_name, result.threshold)
        self.thresholds: dict[str, float] = {name: own[name] for name in self.metric_names}
        """The report's own threshold per metric."""

    def _fill(self, cases: Sequence[RunView]) -> None:
        case_index = {eval_id: index for index, eval_id in enumerate(self.eval_ids)}
        metric_index = {name: index for index, name in enumerate(self.metric_names)}
        for case in cases:
            run, index = (case.run_id or 1) - 1, case_index[case.eval_id]
            self._present[run, index] = True
            self._run_before[run, index] = _code(case.final_eval_status)
            self._score_before[run, index] = case.score
            self._errored[run, index] = bool(case.error_message) and case.error_type != ErrorType.AGGREGATOR
            for result in case.overall_eval_metric_results:
                metric = metric_index[result.metric_name]
                self._statuses[run, index, metric] = _code(result.eval_status)
                self._scores[run, index, metric] = result.score
                self._thresholds[run, index, metric] = result.threshold

    @property
    def errored_runs(self) -> int:
        """How many (run, case) pairs failed before scoring: they stay failed whatever the settings."""
        return int(self._errored.sum())

    @property
    def errored_cases(self) -> int:
        """How many cases have a run that failed before scoring."""
        return int(self._errored.any(axis=0).sum())

    def score_range(self, metric_name: str) -> tuple[float, float]:
        """The scores ``metric_name`` can have (the range of its slider).

        Its evaluator's declared ``score_range``, else 0 to 1 widened to hold every stored score and the threshold.
        """
        metric = next((metric for metric in self._eval_metrics if metric.metric_name == metric_name), None)
        if metric is not None and metric.evaluator in self._registry:
            declared = getattr(self._registry.get(metric.evaluator), "score_range", None)
            if declared is not None:
                return float(declared[0]), float(declared[1])
        column = self.metric_names.index(metric_name)
        scores = self._scores[..., column][self._scored[..., column]]
        threshold = self.thresholds[metric_name]
        low = min(0.0, threshold, float(scores.min()) if scores.size else 0.0)
        high = max(1.0, threshold, float(scores.max()) if scores.size else 1.0)
        return low, high

    def outcome(self, settings: WhatIfSettings) -> WhatIfOutcome:
        """The report's cases decided under ``settings``.

        Raises:
            ConfigError: A threshold names no metric of the report, is not a finite number or lies
                outside a built-in metric's score range; the rule's ``k`` is not from 1 to the number of
                metrics; a weight names no metric or is not a finite number of at least 0; the minimum
                is not a finite number.
        """
        overrides = self._checked_thresholds(settings.thresholds)
        weights = self._checked_rule(settings.rule)
        changed = np.array([name in overrides for name in self.metric_names], dtype=bool)
        new = np.array([overrides.get(name, 0.0) for name in self.metric_names], dtype=float)
        thresholds = np.where(changed, new, self._thresholds)
        statuses = np.where(
            changed & self._scored, np.where(self._scores >= thresholds, _PASSED, _FAILED), self._statuses
        ).astype(np.int8)
        run_status, run_score = _decide(settings.rule, weights, statuses, self._scores)
        run_status = np.where(self._present, np.where(self._errored, self._run_before, run_status), _ABSENT)
        run_score = np.where(self._errored, self._score_before, run_score)
        averages, case_status, case_score = self._across_runs(settings.rule, weights, thresholds, run_status, run_score)
        return self._outcome(
            overrides, settings, statuses, run_status.astype(np.int8), run_score, averages, case_status, case_score
        )

    def _across_runs(
        self, rule: CaseRule, weights: np.ndarray, thresholds: np.ndarray, run_status: np.ndarray, run_score: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each metric's score averaged over the runs, and each case's status and score across runs."""
        counted = self._counted
        total = np.zeros(counted.shape[1:])
        count = np.zeros(counted.shape[1:], dtype=np.int64)
        # Run by run, in run order: the very sums the multi-run summary makes, so that scores on a
        # threshold fall on the same side of it.
        for run in range(counted.shape[0]):
            total = total + np.where(counted[run], self._scores[run], 0.0)
            count += counted[run]
        averages = np.divide(total, count, out=np.full(total.shape, math.nan), where=count > 0)
        if self.num_runs <= 1:
            case_status = _fold(run_status, axis=0)
            last = run_status.shape[0] - 1 - np.argmax(self._present[::-1], axis=0)
            case_score = np.take_along_axis(run_score, last[np.newaxis], axis=0)[0]
        else:
            # The threshold of the first run that scored the metric, as the summary takes it.
            first = np.argmax(counted, axis=0)
            threshold = np.take_along_axis(thresholds, first[np.newaxis], axis=0)[0]
            averaged = np.where(count > 0, np.where(averages >= threshold, _PASSED, _FAILED), _ABSENT)
            case_status, case_score = _decide(rule, weights, averaged, np.nan_to_num(averages))
        errored = self._errored.any(axis=0)
        case_status = np.where((case_status == _NOT_EVALUATED) & errored, _FAILED, case_status)
        return averages, case_status.astype(np.int8), case_score

    def _outcome(
        self,
        overrides: Mapping[str, float],
        settings: WhatIfSettings,
        statuses: np.ndarray,
        run_status: np.ndarray,
        run_score: np.ndarray,
        averages: np.ndarray,
        case_status: np.ndarray,
        case_score: np.ndarray,
    ) -> WhatIfOutcome:
        import pandas as pd

        runs, cases = run_status.shape
        present = self._present.ravel()
        eval_ids = np.array(self.eval_ids, dtype=object)
        per_run = pd.DataFrame(
            {
                "run_id": np.repeat(np.arange(1, runs + 1), cases)[present],
                "eval_id": np.tile(eval_ids, runs)[present],
                "status": _LABELS[run_status.ravel()[present]],
                "score": run_score.ravel()[present],
                "before": _LABELS[self._run_before.ravel()[present]],
            }
        )
        runs_passed = (run_status == _PASSED).sum(axis=0)
        runs_decided = runs_passed + (run_status == _FAILED).sum(axis=0)
        case_table = pd.DataFrame(
            {
                "eval_id": eval_ids,
                "status": _LABELS[case_status],
                "score": case_score.astype(float),
                "before": _LABELS[self._case_before],
                "runs_passed": runs_passed,
                "pass_rate": np.divide(runs_passed, runs_decided, out=np.full(cases, math.nan), where=runs_decided > 0),
                **{name: averages[:, index] for index, name in enumerate(self.metric_names)},
            }
        )
        changed = case_status != self._case_before
        order = np.argsort(self._case_before[changed] != _PASSED, kind="stable")
        flips = case_table[changed].iloc[order].reset_index(drop=True)
        return WhatIfOutcome(
            settings=settings,
            cases=per_run,
            case_table=case_table,
            runs=self._runs_table(run_status),
            metric_table=self._metric_table(overrides, statuses),
            flips=flips,
            passed=int((case_status == _PASSED).sum()),
            failed=int((case_status == _FAILED).sum()),
            passed_before=int((self._case_before == _PASSED).sum()),
            failed_before=int((self._case_before == _FAILED).sum()),
        )

    def _runs_table(self, run_status: np.ndarray) -> pd.DataFrame:
        import pandas as pd

        passed = (run_status == _PASSED).sum(axis=1)
        failed = (run_status == _FAILED).sum(axis=1)
        passed_before = (self._present & (self._run_before == _PASSED)).sum(axis=1)
        decided_before = passed_before + (self._present & (self._run_before == _FAILED)).sum(axis=1)
        return pd.DataFrame(
            {
                "run_id": np.arange(1, run_status.shape[0] + 1),
                "passed": passed,
                "failed": failed,
                "not_evaluated": (run_status == _NOT_EVALUATED).sum(axis=1),
                "pass_rate": [_rate(int(p), int(p + f)) for p, f in zip(passed, failed, strict=True)],
                "pass_rate_before": [_rate(int(p), int(d)) for p, d in zip(passed_before, decided_before, strict=True)],
            }
        )

    def _metric_table(self, overrides: Mapping[str, float], statuses: np.ndarray) -> pd.DataFrame:
        import pandas as pd

        counted = self._counted
        scored = counted.sum(axis=(0, 1))
        passed = (counted & (statuses == _PASSED)).sum(axis=(0, 1))
        passed_before = (counted & (self._statuses == _PASSED)).sum(axis=(0, 1))
        score_sums = np.where(counted, self._scores, 0.0).sum(axis=(0, 1))
        return pd.DataFrame(
            {
                "metric_name": list(self.metric_names),
                "threshold": [overrides.get(name, self.thresholds[name]) for name in self.metric_names],
                "threshold_before": [self.thresholds[name] for name in self.metric_names],
                "mean_score": np.divide(
                    score_sums, scored, out=np.full(len(self.metric_names), math.nan), where=scored > 0
                ),
                "scored": scored,
                "passed": passed,
                "pass_rate": [_rate(int(p), int(s)) for p, s in zip(passed, scored, strict=True)],
                "pass_rate_before": [_rate(int(p), int(s)) for p, s in zip(passed_before, scored, strict=True)],
            },
            columns=[
                "metric_name",
                "threshold",
                "threshold_before",
                "mean_score",
                "scored",
                "passed",
                "pass_rate",
                "pass_rate_before",
            ],
        )

    def metrics_json(self, settings: WhatIfSettings) -> str:
        """The report's metrics with the new thresholds, as a metrics file holds them (a JSON array).

        Raises:
            ConfigError: As :meth:`outcome`.
        """
        overrides = self._checked_thresholds(settings.thresholds)
        return dump_models(
            [
                metric.model_copy(update={"threshold": overrides[metric.metric_name]})
                if metric.metric_name in overrides
                else metric
                for metric in self._eval_metrics
            ]
        )

    def python_code(self, settings: WhatIfSettings) -> str:
        """Python that makes, from ``report``, the report these settings give (``new_report = ...``).

        ``report.with_thresholds({...})`` for the new thresholds, with the case aggregator the rule
        needs: a function written out in full for the k-of-n and weighted rules.

        Raises:
            ConfigError: As :meth:`outcome`.
        """
        overrides = self._checked_thresholds(settings.thresholds)
        self._checked_rule(settings.rule)
        rule = settings.rule
        imports, definition, aggregator = "", "", ""
        if isinstance(rule, AtLeastKMetricsPass):
            imports = "from agenteval import AggregationInput, AggregationResult, EvalStatus"
            definition, aggregator = _K_OF_N.format(k=rule.k), "at_least_k_metrics_pass"
        elif isinstance(rule, WeightedScoreAtLeast):
            imports = "from agenteval import AggregationInput, AggregationResult, EvalStatus"
            weights = {name: float(rule.weights.get(name, 0.0)) for name in self.metric_names}
            definition = _WEIGHTED.format(weights=_dict_literal(weights), minimum=repr(float(rule.minimum)))
            aggregator = "weighted_score_at_least"
        elif not self.decided_by_all_pass:
            imports, aggregator = "from agenteval import AllPassAggregator", "AllPassAggregator()"
        if overrides or not aggregator:
            keyword = f", aggregator={aggregator}" if aggregator else ""
            call = f"new_report = report.with_thresholds({_dict_literal(overrides)}{keyword})"
        else:
            call = f"new_report = report.reaggregate({aggregator})"
        parts = [part for part in (imports, definition) if part]
        return "\n\n\n".join([*parts, call]) + "\n" if parts else call + "\n"

    def _checked_thresholds(self, thresholds: Mapping[str, float]) -> dict[str, float]:
        unknown = sorted(set(thresholds) - set(self.metric_names))
        if unknown:
            raise ConfigError(f"no metric named {unknown} in this report; its metrics are {list(self.metric_names)}")
        checked: dict[str, float] = {}
        metrics = {metric.metric_name: metric for metric in self._eval_metrics}
        for name, value in thresholds.items():
            number = finite_score(value)
            if number is None:
                raise ConfigError(f"the threshold of {name} must be a finite number, got {value!r}")
            if name in metrics:
                try:
                    self._registry.check_threshold(metrics[name].model_copy(update={"threshold": number}))
                except ConfigError as exc:
                    raise ConfigError(f"the threshold of {name}: {exc}") from None
            checked[name] = number
        return checked

    def _checked_rule(self, rule: CaseRule) -> np.ndarray:
        """The rule's weight per metric (zeros for the rules without weights).

        Raises:
            ConfigError: See :meth:`outcome`.
        """
        weights = np.zeros(len(self.metric_names))
        if isinstance(rule, AtLeastKMetricsPass):
            count = len(self.metric_names)
            if isinstance(rule.k, bool) or not isinstance(rule.k, int) or not 1 <= rule.k <= count:
                raise ConfigError(
                    f"at least k of the metrics pass: k must be a whole number from 1 to {count} (the report's"
                    f" metrics), got {rule.k!r}"
                )
        elif isinstance(rule, WeightedScoreAtLeast):
            if finite_score(rule.minimum) is None:
                raise ConfigError(f"weighted score at least x: x must be a finite number, got {rule.minimum!r}")
            unknown = sorted(set(rule.weights) - set(self.metric_names))
            if unknown:
                raise ConfigError(
                    f"weighted score: no metric named {unknown} in this report; its metrics are"
                    f" {list(self.metric_names)}"
                )
            for index, name in enumerate(self.metric_names):
                weight = finite_score(rule.weights.get(name, 0.0))
                if weight is None or weight < 0:
                    raise ConfigError(
                        f"weighted score: the weight of {name} must be a finite number of at least 0,"
                        f" got {rule.weights[name]!r}"
                    )
                weights[index] = weight
        return weights


def _decide(
    rule: CaseRule, weights: np.ndarray, statuses: np.ndarray, scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each case's status and score from its metric statuses and scores (the last axis is the metric)."""
    passed = (statuses == _PASSED).sum(axis=-1)
    decided = passed + (statuses == _FAILED).sum(axis=-1)
    if isinstance(rule, AtLeastKMetricsPass):
        status = np.where(decided == 0, _NOT_EVALUATED, np.where(passed >= rule.k, _PASSED, _FAILED))
        return status, np.divide(passed, decided, out=np.zeros(passed.shape), where=decided > 0)
    if isinstance(rule, WeightedScoreAtLeast):
        scored = (statuses == _PASSED) | (statuses == _FAILED)
        total = np.zeros(statuses.shape[:-1])
        weighted = np.zeros(statuses.shape[:-1])
        # Metric by metric, in order: the sums the written-out aggregator makes.
        for metric, weight in enumerate(weights):
            total = total + np.where(scored[..., metric], weight, 0.0)
            weighted = weighted + np.where(scored[..., metric], weight * scores[..., metric], 0.0)
        score = np.divide(weighted, total, out=np.zeros(total.shape), where=total > 0)
        status = np.where(total > 0, np.where(score >= rule.minimum, _PASSED, _FAILED), _NOT_EVALUATED)
        return status, score
    status = _fold(statuses, axis=-1)
    return status, (status == _PASSED).astype(float)


def _fold(statuses: np.ndarray, axis: int) -> np.ndarray:
    """Any failed wins, else any passed, else not evaluated (:func:`agenteval.status.summarize`)."""
    failed = (statuses == _FAILED).any(axis=axis)
    passed = (statuses == _PASSED).any(axis=axis)
    return np.where(failed, _FAILED, np.where(passed, _PASSED, _NOT_EVALUATED))


def _code(status: EvalStatus | str | None) -> int:
    if status == EvalStatus.PASSED:
        return _PASSED
    if status == EvalStatus.FAILED:
        return _FAILED
    return _NOT_EVALUATED


def _rate(part: int, whole: int) -> float:
    return part / whole if whole else math.nan


def _report_aggregator(report: ScoredReport) -> tuple[str, bool]:
    """The name of the aggregator that decided ``report``, and whether it is the all-pass one."""
    if report.aggregator is not None:
        return qualified_name(report.aggregator), type(report.aggregator) is AllPassAggregator
    provenance = report._known_provenance()  # the provenance field would read every record of a loaded report
    recorded = provenance.aggregator if provenance is not None else ""
    # Results written before names were recorded hold the aggregator's repr.
    return recorded, recorded in (qualified_name(AllPassAggregator()), repr(AllPassAggregator()))


def _dict_literal(values: Mapping[str, float]) -> str:
    return "{" + ", ".join(f"{name!r}: {float(value)!r}" for name, value in values.items()) + "}"


_K_OF_N = '''def at_least_k_metrics_pass(data: AggregationInput) -> AggregationResult:
    """A case passes when at least {k} of its scored metrics pass; its score is the share that pass."""
    decided = [
        result.eval_status
        for result in data.metric_results
        if result.eval_status in (EvalStatus.PASSED, EvalStatus.FAILED)
    ]
    if not decided:
        return AggregationResult(score=0.0, status=EvalStatus.NOT_EVALUATED)
    passed = decided.count(EvalStatus.PASSED)
    status = EvalStatus.PASSED if passed >= {k} else EvalStatus.FAILED
    return AggregationResult(score=passed / len(decided), status=status)'''

_WEIGHTED = '''WEIGHTS = {weights}


def weighted_score_at_least(data: AggregationInput) -> AggregationResult:
    """A case passes when the weighted mean of its scored metrics' scores is at least {minimum}."""
    total = weighted = 0.0
    for result in data.metric_results:
        if result.eval_status in (EvalStatus.PASSED, EvalStatus.FAILED):
            weight = WEIGHTS.get(result.metric_name, 0.0)
            total += weight
            weighted += weight * result.score
    if total <= 0:
        return AggregationResult(score=0.0, status=EvalStatus.NOT_EVALUATED)
    score = weighted / total
    status = EvalStatus.PASSED if score >= {minimum} else EvalStatus.FAILED
    return AggregationResult(score=score, status=status)'''
