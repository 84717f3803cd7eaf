"""The multi-run summary stored with every eval-set result."""

from __future__ import annotations

from pydantic import Field

from agenteval._util.trpc_json import CamelModel, GoFloat, GoInt
from agenteval.evalresult.provenance import Provenance
from agenteval.status import EvalStatus

__all__ = [
    "EvalCaseResultSummary",
    "EvalCaseRunSummary",
    "EvalMetricRunSummary",
    "EvalMetricSummary",
    "EvalSetResultSummary",
    "EvalSetRunSummary",
    "EvalStatusCounts",
]


class EvalStatusCounts(CamelModel):
    """How many of something passed, failed or were not evaluated."""

    passed: GoInt = 0
    failed: GoInt = 0
    not_evaluated: GoInt = 0


class EvalMetricSummary(CamelModel):
    """One metric aggregated over cases or runs."""

    metric_name: str = ""
    average_score: GoFloat = 0.0
    """Mean over evaluated results (``not_evaluated`` ones are left out)."""
    eval_status: EvalStatus | None = None
    """Passed when the average reaches the threshold; not evaluated when nothing was."""
    threshold: GoFloat = 0.0
    status_counts: EvalStatusCounts | None = None


class EvalMetricRunSummary(CamelModel):
    """One metric of one case in one run."""

    metric_name: str = ""
    score: GoFloat = 0.0
    eval_status: EvalStatus | None = None
    threshold: GoFloat = 0.0


class EvalCaseRunSummary(CamelModel):
    """One case in one run."""

    run_id: GoInt = 0
    final_eval_status: EvalStatus | None = None
    error_message: str = ""
    metric_results: list[EvalMetricRunSummary] = Field(default_factory=list)
    """Sorted by metric name."""


class EvalCaseResultSummary(CamelModel):
    """One case across runs."""

    eval_id: str = ""
    overall_status: EvalStatus | None = None
    """What the case aggregator decided from the metric scores averaged over the runs (with one run: the
    run's status); for the default aggregator, whether every averaged metric reaches its threshold."""
    overall_score: GoFloat | None = None
    """The score the case aggregator gave the case across runs: an agenteval extension, written only for a
    custom aggregator (the default's score follows from the status: 1 when passed, else 0)."""
    error_message: str = ""
    """Why deciding the case across runs failed (the aggregator raised): an agenteval extension."""
    run_status_counts: EvalStatusCounts | None = None
    metric_summaries: list[EvalMetricSummary] = Field(default_factory=list)
    """Sorted by metric name."""
    run_summaries: list[EvalCaseRunSummary] = Field(default_factory=list)


class EvalSetRunSummary(CamelModel):
    """One run across cases."""

    run_id: GoInt = 0
    overall_status: EvalStatus | None = None
    case_status_counts: EvalStatusCounts | None = None
    metric_summaries: list[EvalMetricSummary] = Field(default_factory=list)
    """Sorted by metric name."""


class EvalSetResultSummary(CamelModel):
    """The whole evaluation across runs."""

    overall_status: EvalStatus | None = None
    num_runs: GoInt = 0
    run_status_counts: EvalStatusCounts | None = None
    """How many runs passed, failed or were not evaluated (as whole sets)."""
    run_summaries: list[EvalSetRunSummary] = Field(default_factory=list)
    eval_case_summaries: list[EvalCaseResultSummary] = Field(default_factory=list)
    """Sorted by case id."""
    provenance: Provenance | None = None
    """What produced the result (versions, content hashes, settings, times): an agenteval extension,
    left out when unknown (results written by other tools)."""
