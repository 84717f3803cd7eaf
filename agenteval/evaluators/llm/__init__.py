"""The LLM-judge evaluators: a judge model scores each turn (the built-in metrics named ``llm_*``).

:class:`LLMJudgeEvaluator` is the pipeline they share (messages, judge calls, scoring, aggregation), with its named,
swappable pieces in :mod:`~agenteval.evaluators.llm.operators`. The built-in judges, by metric name:

- ``llm_final_response``: :class:`FinalResponseJudgeEvaluator`
- ``llm_rubric_response``, ``llm_rubric_critic``, ``llm_rubric_reference_critic``, ``llm_rubric_knowledge_recall``:
  :class:`RubricResponseEvaluator`, :class:`RubricCriticEvaluator`, :class:`RubricReferenceCriticEvaluator`,
  :class:`RubricKnowledgeRecallEvaluator` (each a :class:`RubricJudgeEvaluator`)
- ``llm_hallucinations``: :class:`HallucinationEvaluator`
- ``llm_judge_template``: :class:`TemplateJudgeEvaluator`
- ``llm_verifier_pairwise``: :class:`VerifierPairwiseEvaluator`
"""

from agenteval.evaluators.llm.base import LLMJudgeEvaluator
from agenteval.evaluators.llm.final_response_judge import FinalResponseJudgeEvaluator
from agenteval.evaluators.llm.hallucination import HallucinationEvaluator
from agenteval.evaluators.llm.rubric_evaluators import (
    RubricCriticEvaluator,
    RubricJudgeEvaluator,
    RubricKnowledgeRecallEvaluator,
    RubricReferenceCriticEvaluator,
    RubricResponseEvaluator,
)
from agenteval.evaluators.llm.template import TemplateJudgeEvaluator
from agenteval.evaluators.llm.verifier import VerifierPairwiseEvaluator

__all__ = [
    "FinalResponseJudgeEvaluator",
    "HallucinationEvaluator",
    "LLMJudgeEvaluator",
    "RubricCriticEvaluator",
    "RubricJudgeEvaluator",
    "RubricKnowledgeRecallEvaluator",
    "RubricReferenceCriticEvaluator",
    "RubricResponseEvaluator",
    "TemplateJudgeEvaluator",
    "VerifierPairwiseEvaluator",
]
