"""The evaluators every registry starts with, by name."""

from __future__ import annotations

from agenteval.evaluators.base import MetricEvaluator
from agenteval.evaluators.final_response import FinalResponseEvaluator
from agenteval.evaluators.llm.final_response import FinalResponseJudgeEvaluator
from agenteval.evaluators.llm.hallucination import HallucinationEvaluator
from agenteval.evaluators.llm.rubric_evaluators import (
    RubricCriticEvaluator,
    RubricKnowledgeRecallEvaluator,
    RubricReferenceCriticEvaluator,
    RubricResponseEvaluator,
)
from agenteval.evaluators.llm.template import TemplateJudgeEvaluator
from agenteval.evaluators.tool_trajectory import ToolTrajectoryEvaluator

__all__ = ["BUILTIN_EVALUATORS"]

BUILTIN_EVALUATORS: dict[str, MetricEvaluator] = {
    "tool_trajectory_avg_score": ToolTrajectoryEvaluator(),
    "final_response_avg_score": FinalResponseEvaluator(),
    "llm_final_response": FinalResponseJudgeEvaluator(),
    "llm_rubric_response": RubricResponseEvaluator(),
    "llm_rubric_critic": RubricCriticEvaluator(),
    "llm_rubric_reference_critic": RubricReferenceCriticEvaluator(),
    "llm_rubric_knowledge_recall": RubricKnowledgeRecallEvaluator(),
    "llm_hallucinations": HallucinationEvaluator(),
    "llm_judge_template": TemplateJudgeEvaluator(),
}
"""Built-in evaluators by name; :func:`agenteval.evaluators.registry.default_registry` copies them."""
