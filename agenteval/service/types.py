"""Requests and results of the two service phases: inference and evaluate."""

from __future__ import annotations

from dataclasses import dataclass, field

from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalCaseResult
from agenteval.evalset.models import EvalCase, EvalSet
from agenteval.metric.models import EvalMetric

__all__ = ["EvalSetRunResult", "EvaluateConfig", "EvaluateRequest", "InferenceRequest"]


@dataclass(slots=True, kw_only=True)
class InferenceRequest:
    """Which cases of which eval set to run. ``before_inference_set`` callbacks may edit it."""

    app_name: str
    """The app."""
    eval_set_id: str
    """The eval set."""
    eval_case_ids: list[str] = field(default_factory=list)
    """Cases to run, in any order; empty means all. Unknown ids are ignored."""
    run_id: int = 0
    """Which run of an evaluation this is (1-based; ``0``, as in the reference's service, outside a
    multi-run evaluation); carried to every inference result and callback."""
    eval_set: EvalSet | None = None
    """The eval set itself, when the caller holds it; ``None`` reads it once from the eval-set manager."""
    eval_cases: list[EvalCase] | None = None
    """The cases to run, already chosen from ``eval_set`` by the caller (an evaluation chooses them once for all
    its runs); ``eval_case_ids``, when given, still narrows them. A ``before_inference_set`` callback that puts
    another eval set in the request has the cases chosen from that one."""


@dataclass(slots=True, kw_only=True)
class EvaluateConfig:
    """The metrics to score with, in order."""

    eval_metrics: list[EvalMetric] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class EvaluateRequest:
    """Which inference results to score, with which metrics. ``before_evaluate_set`` callbacks may edit it."""

    app_name: str
    eval_set_id: str
    inference_results: list[InferenceResult] = field(default_factory=list)
    evaluate_config: EvaluateConfig = field(default_factory=EvaluateConfig)
    run_id: int = 0
    """Which run of an evaluation this is (1-based; ``0`` outside a multi-run evaluation); stamped on
    every case result and carried to every callback."""
    eval_set: EvalSet | None = None
    """The eval set the results are of, when the caller holds it; ``None`` reads it once from the
    eval-set manager."""


@dataclass(slots=True, kw_only=True)
class EvalSetRunResult:
    """The case results of one evaluate call, in the order of its inference results."""

    app_name: str
    eval_set_id: str
    eval_case_results: list[EvalCaseResult] = field(default_factory=list)
    """In order. An evaluation's ``after_evaluate_set`` callbacks may change the list: what they leave is saved."""
