"""The template judge's built-in response scorers and their structured-output schemas.

Scorers (registered by name in :func:`default_operators`):

- ``single_score``: ``{"score": 0..1, "reason": "..."}``; numeric value.
- ``rubric_scores``: ``{"rubricScores": [{"id", "score", "reason"}]}``; the mean score. The ids are
  checked against the metric's rubrics only when it has some.
- ``boolean``: ``{"passed": true|false, "reason": "..."}``; 1 or 0, boolean value.
- ``categorical``: ``{"category": "<label>", "reason": "..."}``; the label's score from
  ``template.responseScorerOptions.categories`` (an unknown label scores 0), categorical value.

Each schema is registered under its scorer's name, which is how a template without a
``structuredOutputName`` gets its scorer's schema, and under the schema's own name
(``single_score_result``, ``rubric_scores_result``, ``boolean_result``, ``categorical_result``).
"""

from __future__ import annotations

import math
from typing import Any

from agenteval.errors import ConfigError, JudgeOutputError
from agenteval.evalresult.models import ScoreKind, ScoreValue
from agenteval.evaluators.llm.judge_json import decode_judge_json, json_field, json_type_name
from agenteval.evaluators.llm.operators import (
    OperatorRegistry,
    ResponseScorer,
    ScoreResult,
    StructuredOutputProvider,
    average_invocations,
    majority_vote,
)
from agenteval.evaluators.llm.rubrics import expected_rubric_ids, rubric_scores_schema, score_rubric_response
from agenteval.llm.base import ChatResponse, StructuredOutput
from agenteval.metric.criterion import ResponseScorerOptions
from agenteval.metric.models import EvalMetric

__all__ = [
    "BUILTIN_SCORERS",
    "BUILTIN_STRUCTURED_OUTPUTS",
    "boolean_schema",
    "categorical_schema",
    "category_scores",
    "default_operators",
    "rubric_scores_result_schema",
    "score_boolean",
    "score_categorical",
    "score_rubric_scores",
    "score_single_score",
    "single_score_schema",
]


def _payload(response: ChatResponse, shape: str) -> dict[str, Any]:
    payload = decode_judge_json(response)
    if payload is None:  # Go decodes "null" into an empty struct
        return {}
    if not isinstance(payload, dict):
        raise JudgeOutputError(f"the judge's answer must be a JSON object {shape}, got {json_type_name(payload)}")
    return payload


def _field(payload: dict[str, Any], name: str, kind: str) -> Any:
    value = json_field(payload, name)
    if value is None:
        raise JudgeOutputError(f'the judge\'s answer has no "{name}" ({name} is required)')
    if json_type_name(value) != kind:
        raise JudgeOutputError(f'"{name}" must be {kind}, got {json_type_name(value)}')
    return value


def _score(payload: dict[str, Any]) -> float:
    value = _field(payload, "score", "a number")
    try:
        score = float(value)
    except OverflowError:
        score = math.inf
    if not math.isfinite(score) or not 0.0 <= score <= 1.0:
        raise JudgeOutputError(f"score must be between 0 and 1, got {score:g}")
    return score


def score_single_score(response: ChatResponse, metric: EvalMetric) -> ScoreResult:
    """The ``single_score`` scorer: ``{"score": 0..1, "reason": "..."}``.

    Raises:
        JudgeOutputError: Not JSON, a missing field, a wrong type, or a score outside ``[0, 1]``.
    """
    payload = _payload(response, '{"score", "reason"}')
    score = _score(payload)
    reason: str = _field(payload, "reason", "a string")
    return ScoreResult(score=score, reason=reason, value=ScoreValue(kind=ScoreKind.NUMERIC, numeric=score))


def score_boolean(response: ChatResponse, metric: EvalMetric) -> ScoreResult:
    """The ``boolean`` scorer: ``{"passed": bool, "reason": "..."}`` scores 1 or 0.

    Raises:
        JudgeOutputError: Not JSON, a missing field or a wrong type.
    """
    payload = _payload(response, '{"passed", "reason"}')
    passed: bool = _field(payload, "passed", "a boolean")
    reason: str = _field(payload, "reason", "a string")
    return ScoreResult(
        score=1.0 if passed else 0.0, reason=reason, value=ScoreValue(kind=ScoreKind.BOOLEAN, boolean=passed)
    )


def _scorer_options(metric: EvalMetric) -> ResponseScorerOptions:
    if metric.criterion is None or metric.criterion.llm_judge is None:
        raise ConfigError("llm judge criterion is required")
    template = metric.criterion.llm_judge.template
    if template is None:
        raise ConfigError("template is nil (criterion.llmJudge.template is required)")
    if template.response_scorer_options is None:
        raise ConfigError("template.responseScorerOptions is required for the categorical scorer")
    return template.response_scorer_options


def category_scores(metric: EvalMetric) -> dict[str, float]:
    """The configured categorical labels and their scores, in configuration order.

    Raises:
        ConfigError: No ``responseScorerOptions.categories``, a blank or duplicated label, or a score
            outside ``[0, 1]``.
    """
    categories = _scorer_options(metric).categories
    if not categories:
        raise ConfigError("categorical response scorer categories are required (responseScorerOptions.categories)")
    scores: dict[str, float] = {}
    for category in categories:
        if not category.label:
            raise ConfigError("categorical category label is empty")
        if not 0.0 <= category.score <= 1.0:
            raise ConfigError(f'categorical category "{category.label}" score must be between 0 and 1')
        if category.label in scores:
            raise ConfigError(f'duplicate categorical category label "{category.label}"')
        scores[category.label] = category.score
    return scores


def score_categorical(response: ChatResponse, metric: EvalMetric) -> ScoreResult:
    """The ``categorical`` scorer: ``{"category": "<label>", "reason": "..."}``.

    The score is the label's configured score; a label that is not configured scores 0 (it is not
    an error) and the reason says so.

    Raises:
        ConfigError: Invalid ``responseScorerOptions.categories``.
        JudgeOutputError: Not JSON, a missing field or a wrong type.
    """
    scores = category_scores(metric)
    payload = _payload(response, '{"category", "reason"}')
    label: str = _field(payload, "category", "a string")
    reason: str = _field(payload, "reason", "a string")
    value = ScoreValue(kind=ScoreKind.CATEGORICAL, categorical=label)
    if label not in scores:
        return ScoreResult(score=0.0, reason=f'unknown categorical label "{label}": {reason}', value=value)
    return ScoreResult(score=scores[label], reason=reason, value=value)


def score_rubric_scores(response: ChatResponse, metric: EvalMetric) -> ScoreResult:
    """The ``rubric_scores`` scorer: the mean of ``{"rubricScores": [{"id", "score", "reason"}]}``.

    The ids must match the metric's visible rubrics when it has some; otherwise any unique ids are
    accepted.

    Raises:
        ConfigError: The metric's rubrics have blank or duplicated ids.
        JudgeOutputError: The answer breaks a rule of
            :func:`~agenteval.evaluators.llm.rubrics.score_rubric_response`.
    """
    return score_rubric_response(response, expected_rubric_ids(metric))


def _object_schema(name: str, description: str, properties: dict[str, Any]) -> StructuredOutput:
    schema = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    return StructuredOutput(name=name, schema=schema, strict=True, description=description)


def single_score_schema(metric: EvalMetric) -> StructuredOutput:
    """The ``single_score_result`` schema: ``{"score": 0..1, "reason": string}``."""
    return _object_schema(
        "single_score_result",
        "A score and a concise reason for the evaluation result.",
        {"score": {"type": "number", "minimum": 0, "maximum": 1}, "reason": {"type": "string"}},
    )


def rubric_scores_result_schema(metric: EvalMetric) -> StructuredOutput:
    """The ``rubric_scores_result`` schema: any rubric ids, any count, scores in ``[0, 1]``."""
    return rubric_scores_schema("rubric_scores_result", None)


def boolean_schema(metric: EvalMetric) -> StructuredOutput:
    """The ``boolean_result`` schema: ``{"passed": boolean, "reason": string}``."""
    return _object_schema(
        "boolean_result",
        "A pass/fail result and a concise reason for the evaluation result.",
        {"passed": {"type": "boolean"}, "reason": {"type": "string"}},
    )


def categorical_schema(metric: EvalMetric) -> StructuredOutput:
    """The ``categorical_result`` schema: the category is one of the configured labels.

    Raises:
        ConfigError: Invalid ``responseScorerOptions.categories``.
    """
    labels = list(category_scores(metric))
    return _object_schema(
        "categorical_result",
        "A categorical label and a concise reason for the evaluation result.",
        {"category": {"type": "string", "enum": labels}, "reason": {"type": "string"}},
    )


BUILTIN_SCORERS: dict[str, ResponseScorer] = {
    "single_score": score_single_score,
    "rubric_scores": score_rubric_scores,
    "boolean": score_boolean,
    "categorical": score_categorical,
}
"""The built-in template response scorers by name."""

_SCHEMAS: dict[str, StructuredOutputProvider] = {
    "single_score": single_score_schema,
    "rubric_scores": rubric_scores_result_schema,
    "boolean": boolean_schema,
    "categorical": categorical_schema,
}

BUILTIN_STRUCTURED_OUTPUTS: dict[str, StructuredOutputProvider] = {
    **_SCHEMAS,
    **{f"{name}_result": provider for name, provider in _SCHEMAS.items()},
}
"""The built-in schemas, under their scorer's name (the default for that scorer) and their own name."""


def default_operators() -> OperatorRegistry:
    """A new registry holding the built-in operators."""
    registry = OperatorRegistry()
    registry.register_samples_aggregator("majority_vote", majority_vote)
    registry.register_invocations_aggregator("average", average_invocations)
    for name, scorer in BUILTIN_SCORERS.items():
        registry.register_response_scorer(name, scorer)
    for name, provider in BUILTIN_STRUCTURED_OUTPUTS.items():
        registry.register_structured_output(name, provider)
    return registry
