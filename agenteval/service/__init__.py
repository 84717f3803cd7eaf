"""The evaluation service: inference (run the agent on each case) and evaluate (score each case), with callbacks."""

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
from agenteval.service.local import CaseLimits, LocalService, ServiceRuntime
from agenteval.service.options import ServiceOptions, SessionIdSupplier
from agenteval.service.types import EvalSetRunResult, EvaluateConfig, EvaluateRequest, InferenceRequest

__all__ = [
    "AfterEvaluateCaseArgs",
    "AfterEvaluateSetArgs",
    "AfterInferenceCaseArgs",
    "AfterInferenceSetArgs",
    "BeforeEvaluateCaseArgs",
    "BeforeEvaluateSetArgs",
    "BeforeInferenceCaseArgs",
    "BeforeInferenceSetArgs",
    "Callback",
    "CallbackResult",
    "Callbacks",
    "CaseLimits",
    "EvalSetRunResult",
    "EvaluateConfig",
    "EvaluateRequest",
    "InferenceRequest",
    "LocalService",
    "ServiceOptions",
    "ServiceRuntime",
    "SessionIdSupplier",
]
