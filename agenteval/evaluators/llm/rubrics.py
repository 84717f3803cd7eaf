"""Rubrics shared by the rubric judges and the template judge.

Which rubrics the judge sees, checks that their ids can drive a structured answer, how they are
written into a prompt, the JSON schema of a ``{"rubricScores": [...]}`` answer, and its scorer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from agenteval.errors import ConfigError, JudgeOutputError
from agenteval.evalresult.models import RubricScore, ScoreKind, ScoreValue
from agenteval.evaluators.llm.judge_json import decode_judge_json, json_field, json_type_name
from agenteval.evaluators.llm.operators import ScoreResult
from agenteval.llm.base import ChatResponse, StructuredOutput
from agenteval.metric.criterion import Rubric
from agenteval.metric.models import EvalMetric

__all__ = [
    "expected_rubric_ids",
    "mean_of_rubric_scores",
    "render_rubrics",
    "rubric_scores_schema",
    "score_rubric_response",
    "validate_rubric_ids",
    "visible_rubrics",
]


def mean_of_rubric_scores(scores: list[RubricScore]) -> ScoreResult:
    """Combine per-item scores into a turn's score.

    Args:
        scores: The items, at least one.

    Returns:
        Score = mean of the item scores, reason = the item reasons joined by newlines,
        ``rubric_scores`` = the items, ``value`` numeric.
    """
    mean = sum(s.score for s in scores) / len(scores)
    return ScoreResult(
        score=mean,
        reason="\n".join(s.reason for s in scores),
        value=ScoreValue(kind=ScoreKind.NUMERIC, numeric=mean),
        rubric_scores=scores,
    )


def visible_rubrics(metric: EvalMetric) -> list[Rubric]:
    """The metric's rubrics that a judge prompt shows: those with a ``content``.

    Args:
        metric: The metric (after case-level rubrics were merged in).

    Returns:
        The visible rubrics, in order; ``[]`` when the metric has no ``llmJudge``.
    """
    if metric.criterion is None or metric.criterion.llm_judge is None:
        return []
    return [rubric for rubric in metric.criterion.llm_judge.rubrics if rubric.content is not None]


def validate_rubric_ids(metric: EvalMetric) -> list[str]:
    """Check that the visible rubrics can drive a structured answer, and return their ids.

    Args:
        metric: The metric.

    Returns:
        The trimmed ids of the visible rubrics, in order.

    Raises:
        ConfigError: No ``llmJudge``, no visible rubric, a blank id or a duplicate id.
    """
    if metric.criterion is None or metric.criterion.llm_judge is None:
        raise ConfigError("llm judge criterion is required")
    rubrics = visible_rubrics(metric)
    if not rubrics:
        raise ConfigError("llm judge rubrics are required")
    ids: list[str] = []
    for rubric in rubrics:
        rubric_id = rubric.id.strip()
        if not rubric_id:
            raise ConfigError("llm judge rubric id is required for structured output")
        if rubric_id in ids:
            raise ConfigError(f'duplicate llm judge rubric id "{rubric_id}"')
        ids.append(rubric_id)
    return ids


def expected_rubric_ids(metric: EvalMetric) -> list[str] | None:
    """The ids a rubric-scores answer must cover, or ``None`` when the metric has no visible rubric.

    Raises:
        ConfigError: The visible rubrics have a blank or duplicate id.
    """
    if not visible_rubrics(metric):
        return None
    return validate_rubric_ids(metric)


def render_rubrics(rubrics: Sequence[Rubric]) -> str:
    """Write the visible rubrics into a prompt, one ``<id>: <text>`` line each.

    Args:
        rubrics: Rubrics; those without content are skipped.

    Returns:
        The lines, each ending with a newline.
    """
    return "".join(f"{rubric.id.strip()}: {rubric.content.text}\n" for rubric in rubrics if rubric.content is not None)


def rubric_scores_schema(name: str, rubric_ids: list[str] | None) -> StructuredOutput:
    """The strict JSON schema of a ``{"rubricScores": [{id, score, reason}]}`` answer.

    Args:
        name: Schema name (e.g. ``rubric_response_scores``).
        rubric_ids: The rubric ids: the answer then has exactly one item per id, each id taken
            from this list and each score ``0`` or ``1``. ``None`` for a generic schema (any id,
            any count, a score between 0 and 1).

    Returns:
        The structured-output request.
    """
    item_id: dict[str, Any] = {"type": "string"}
    score: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": 1}
    scores: dict[str, Any] = {"type": "array"}
    description = "Per-rubric scores and concise reasons for the evaluation result."
    if rubric_ids is not None:
        item_id["enum"] = list(rubric_ids)
        score = {"type": "number", "enum": [0, 1]}
        scores.update(minItems=len(rubric_ids), maxItems=len(rubric_ids))
        description = "Per-rubric binary scores and reasons."
    scores["items"] = {
        "type": "object",
        "properties": {"id": item_id, "score": score, "reason": {"type": "string"}},
        "required": ["id", "score", "reason"],
        "additionalProperties": False,
    }
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"rubricScores": scores},
        "required": ["rubricScores"],
        "additionalProperties": False,
    }
    return StructuredOutput(name=name, schema=schema, strict=True, description=description)


def _item_id(item: dict[str, Any], position: int) -> str:
    value = json_field(item, "id")
    if value is not None and not isinstance(value, str):
        raise JudgeOutputError(f"rubricScores item {position}: id must be a string, got {json_type_name(value)}")
    rubric_id = (value or "").strip()
    if not rubric_id:
        raise JudgeOutputError(f"rubricScores item {position} has no id (rubric score id is empty)")
    return rubric_id


def _item_score(item: dict[str, Any], rubric_id: str) -> float:
    value = json_field(item, "score")
    if value is None:
        raise JudgeOutputError(f'the judge gave no score for rubric "{rubric_id}" (rubric score is required)')
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise JudgeOutputError(f'the score of rubric "{rubric_id}" must be a number, got {json_type_name(value)}')
    try:
        return float(value)
    except OverflowError as exc:  # only an int can be too large for a float
        raise JudgeOutputError(
            f'the score of rubric "{rubric_id}" is {_shorten_int(int(value))}; it must be between 0 and 1'
        ) from exc


def _shorten_int(value: int, keep: int = 12) -> str:
    """``value``, or its first digits and its length when it is longer than ``keep`` digits."""
    digits = str(abs(value))
    if len(digits) <= keep:
        return str(value)
    sign = "-" if value < 0 else ""
    return f"{sign}{digits[:keep]}… (a {len(digits)}-digit number)"


def _item_reason(item: dict[str, Any], rubric_id: str) -> str:
    value = json_field(item, "reason")
    if value is None:
        raise JudgeOutputError(f'the judge gave no reason for rubric "{rubric_id}" (rubric score reason is required)')
    if not isinstance(value, str):
        raise JudgeOutputError(f'the reason of rubric "{rubric_id}" must be a string, got {json_type_name(value)}')
    return value


def score_rubric_response(response: ChatResponse, expected_ids: list[str] | None) -> ScoreResult:
    """Score a ``{"rubricScores": [{id, score, reason}]}`` judge answer (the ``rubric_scores`` scorer).

    Every item needs a non-blank id, a score between 0 and 1 and a reason; ids must be unique.
    With ``expected_ids``, every id must be one of them and every one of them must be scored.

    Args:
        response: The judge's reply (may be wrapped in a code fence).
        expected_ids: The configured rubric ids, or ``None`` to accept any ids.

    Returns:
        Score = mean of the item scores, reason = the item reasons joined by newlines,
        ``rubric_scores`` = the items, ``value`` numeric.

    Raises:
        JudgeOutputError: The answer is not JSON of that shape, or breaks one of the rules above.
    """
    payload = decode_judge_json(response)
    if payload is None:  # Go decodes "null" into an empty struct
        payload = {}
    if not isinstance(payload, dict):
        raise JudgeOutputError(
            f"the judge's answer must be a JSON object with a rubricScores list, got {json_type_name(payload)}"
        )
    items = json_field(payload, "rubricScores")
    if items is not None and not isinstance(items, list):
        raise JudgeOutputError(f"rubricScores must be a list, got {json_type_name(items)}")
    if not items:
        raise JudgeOutputError("the judge's answer has no rubric scores (rubricScores is missing or empty)")
    expected = set(expected_ids) if expected_ids is not None else None
    scores: list[RubricScore] = []
    seen: set[str] = set()
    for position, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise JudgeOutputError(f"rubricScores item {position} must be an object, got {json_type_name(item)}")
        rubric_id = _item_id(item, position)
        if rubric_id in seen:
            raise JudgeOutputError(f'the judge scored rubric "{rubric_id}" more than once (duplicate rubric score id)')
        if expected is not None and rubric_id not in expected:
            raise JudgeOutputError(
                f'the judge scored rubric "{rubric_id}", which is not a configured rubric '
                f"(unexpected rubric score id; configured: {', '.join(expected_ids or [])})"
            )
        seen.add(rubric_id)
        score = _item_score(item, rubric_id)
        reason = _item_reason(item, rubric_id)
        if not (0.0 <= score <= 1.0) or not math.isfinite(score):
            raise JudgeOutputError(f'the score of rubric "{rubric_id}" is {score:g}; it must be between 0 and 1')
        scores.append(RubricScore(id=rubric_id, score=score, reason=reason))
    if expected_ids is not None:
        missing = [rubric_id for rubric_id in expected_ids if rubric_id not in seen]
        if missing:
            listed = ", ".join(f'"{rubric_id}"' for rubric_id in missing)
            raise JudgeOutputError(f"the judge did not score rubric {listed} (missing rubric score id)")
    return mean_of_rubric_scores(scores)
