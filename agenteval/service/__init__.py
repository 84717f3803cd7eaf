"""The evaluation service: inference, evaluate, case aggregation, callbacks and multi-run summaries."""

from agenteval.service.aggregation import (
    AggregationInput,
    AggregationResult,
    AggregatorFunction,
    AllPassAggregator,
    EvalCaseResultAggregator,
)
from agenteval.service.callbacks import (
    AfterEvaluateCaseArgs,
    AfterEvaluateSetArgs,
    AfterInferenceCaseArgs,
    AfterInferenceSetArgs,
    BeforeEvaluateCaseArgs,
    BeforeEvaluateSetArgs,
    BeforeInferenceCaseArgs,
    BeforeInferenceSetArgs,
    Callback,
    CallbackResult,
    Callbacks,
)
from agenteval.service.local import LocalService
from agenteval.service.multirun import CaseOutcome, average_metric_results, decide_case, summarize_multi_run
from agenteval.service.options import ServiceOptions, SessionIdSupplier
from agenteval.service.types import (
    EvalSetRunResult,
    EvaluateConfig,
    EvaluateRequest,
    InferenceRequest,
    InferenceResult,
)

__all__ = [
    "AfterEvaluateCaseArgs",
    "AfterEvaluateSetArgs",
    "AfterInferenceCaseArgs",
    "AfterInferenceSetArgs",
    "AggregationInput",
    "AggregationResult",
    "AggregatorFunction",
    "AllPassAggregator",
    "BeforeEvaluateCaseArgs",
    "BeforeEvaluateSetArgs",
    "BeforeInferenceCaseArgs",
    "BeforeInferenceSetArgs",
    "Callback",
    "CallbackResult",
    "Callbacks",
    "CaseOutcome",
    "EvalCaseResultAggregator",
    "EvalSetRunResult",
    "EvaluateConfig",
    "EvaluateRequest",
    "InferenceRequest",
    "InferenceResult",
    "LocalService",
    "ServiceOptions",
    "SessionIdSupplier",
    "average_metric_results",
    "decide_case",
    "summarize_multi_run",
]
