"""Evaluators: from a case's actual and expected turns to scores, and the registry that names them.

Write your own as a function ``fn(actuals, expecteds, metric) -> EvaluateResult`` (or an object with
``evaluate``) and register it: ``registry = ae.default_registry(); registry.register("my_metric", fn)``.
"""

import sys as _sys

from agenteval._util.moved_modules import moved_attribute as _moved_attribute
from agenteval.evaluators.base import EvaluateResult, MetricEvaluator, PerInvocationResult
from agenteval.evaluators.registry import EvaluatorRegistry, default_registry

__all__ = ["EvaluateResult", "EvaluatorRegistry", "MetricEvaluator", "PerInvocationResult", "default_registry"]


def __getattr__(name: str) -> object:
    # ``agenteval.evaluators.criteria`` (now ``matching``) still resolves, with a warning naming its new home.
    return _moved_attribute(_sys.modules[__name__], name)
