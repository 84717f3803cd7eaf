"""Requests and results of the two service phases: inference and evaluate."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import Field

from agenteval._json import CamelModel
from agenteval.evalresult.models import EvalCaseResult
from agenteval.evalset.models import EvalMode, Invocation
from agenteval.evalset.trace import ExecutionTrace
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus

__all__ = ["EvalSetRunResult", "EvaluateConfig", "EvaluateRequest", "InferenceRequest", "InferenceResult"]


@dataclass(slots=True, kw_only=True)
class InferenceRequest:
    """Which cases of which eval set to run. ``before_inference_set`` callbacks may edit it."""

    app_name: str
    """The app."""
    eval_set_id: str
    """The eval set."""
    eval_case_ids: list[str] = field(default_factory=list)
    """Cases to run, in any order; empty means all. Unknown ids are ignored."""


class InferenceResult(CamelModel):
    """What the agent did for one case in one run."""

    app_name: str = ""
    eval_set_id: str = ""
    eval_case_id: str = ""
    eval_mode: EvalMode = EvalMode.DEFAULT
    inferences: list[Invocation] = Field(default_factory=list)
    """The actual turns; empty when the inference failed."""
    expected_inferences: list[Invocation] = Field(default_factory=list)
    """Expected turns produced by the expected runner, when enabled."""
    session_id: str = ""
    """The session the case ran in."""
    user_id: str = ""
    """The user the agent ran as."""
    status: EvalStatus | None = None
    """``passed`` when the inference succeeded, ``failed`` otherwise."""
    error_message: str = ""
    """Why the inference failed."""
    error_type: str = ""
    """What failed (an :class:`~agenteval.evalresult.models.ErrorType` value); empty when nothing did."""
    execution_traces: list[ExecutionTrace | None] = Field(default=[], exclude=True)
    """Execution trace per actual turn (``None`` where none was recorded); not serialised."""


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


@dataclass(slots=True, kw_only=True)
class EvalSetRunResult:
    """The case results of one evaluate call, in the order of its inference results."""

    app_name: str
    eval_set_id: str
    eval_case_results: list[EvalCaseResult] = field(default_factory=list)
