"""The evaluators every registry starts with, by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from agenteval.evaluators.base import MetricEvaluator
from agenteval.evaluators.final_response_evaluator import FinalResponseEvaluator
from agenteval.evaluators.llm.final_response_judge import FinalResponseJudgeEvaluator
from agenteval.evaluators.llm.hallucination import HallucinationEvaluator
from agenteval.evaluators.llm.rubric_evaluators import (
    RubricCriticEvaluator,
    RubricKnowledgeRecallEvaluator,
    RubricReferenceCriticEvaluator,
    RubricResponseEvaluator,
)
from agenteval.evaluators.llm.template import TemplateJudgeEvaluator
from agenteval.evaluators.llm.verifier import VerifierPairwiseEvaluator
from agenteval.evaluators.tool_trajectory_evaluator import ToolTrajectoryEvaluator

__all__ = ["builtin_evaluators"]

_FACTORIES: Mapping[str, Callable[[], MetricEvaluator]] = MappingProxyType(
    {
        "tool_trajectory_avg_score": ToolTrajectoryEvaluator,
        "final_response_avg_score": FinalResponseEvaluator,
        "llm_final_response": FinalResponseJudgeEvaluator,
        "llm_rubric_response": RubricResponseEvaluator,
        "llm_rubric_critic": RubricCriticEvaluator,
        "llm_rubric_reference_critic": RubricReferenceCriticEvaluator,
        "llm_rubric_knowledge_recall": RubricKnowledgeRecallEvaluator,
        "llm_hallucinations": HallucinationEvaluator,
        "llm_judge_template": TemplateJudgeEvaluator,
        "llm_verifier_pairwise": VerifierPairwiseEvaluator,
    }
)
"""How to build each built-in evaluator, by name (read-only)."""


def builtin_evaluators() -> dict[str, MetricEvaluator]:
    """Build a new instance of every built-in evaluator.

    Evaluators may hold mutable state (the template judge's operator registry), so each
    :func:`~agenteval.evaluators.registry.default_registry` gets its own instances from here.

    Returns:
        Evaluator name to a fresh evaluator.
    """
    return {name: factory() for name, factory in _FACTORIES.items()}
