"""The built-in template response scorers and their structured-output schemas."""

from __future__ import annotations

from typing import Any

import pytest

from agenteval.errors import ConfigError, JudgeOutputError
from agenteval.evalresult.models import RubricScore, ScoreKind, ScoreValue
from agenteval.evalset.models import RubricContent
from agenteval.evaluators.llm.operators import ScoreResult
from agenteval.evaluators.llm.scorers import (
    BUILTIN_SCORERS,
    BUILTIN_STRUCTURED_OUTPUTS,
    category_scores,
    default_operators,
    score_boolean,
    score_categorical,
    score_rubric_scores,
    score_single_score,
)
from agenteval.llm.base import ChatResponse
from agenteval.metric.criterion import CategoryScore, ResponseScorerOptions, Rubric
from agenteval.metric.models import EvalMetric
from tests.evaluators.llm_template import template_metric

METRIC = template_metric()


def reply(content: str) -> ChatResponse:
    return ChatResponse(content=content)


def numeric(score: float, reason: str) -> ScoreResult:
    return ScoreResult(score=score, reason=reason, value=ScoreValue(kind=ScoreKind.NUMERIC, numeric=score))


SINGLE_VALID = [
    ('{"score": 0.75, "reason": "Looks good."}', numeric(0.75, "Looks good.")),
    ('{"score": 1, "reason": ""}', numeric(1.0, "")),
    ('{"score": 0, "reason": "no"}', numeric(0.0, "no")),
    ('```json\n{"score": 0.5, "reason": "fenced"}\n```', numeric(0.5, "fenced")),
    ('```JSON\n{"score": 0.5, "reason": "fenced"}\n```', numeric(0.5, "fenced")),
    ('  ```\n{"score": 0.5, "reason": "fenced"}\n```  ', numeric(0.5, "fenced")),
    ('{"Score": 0.25, "REASON": "any case", "extra": true}', numeric(0.25, "any case")),
]  # fmt: skip


@pytest.mark.parametrize(("content", "expected"), SINGLE_VALID)
def test_single_score(content: str, expected: ScoreResult) -> None:
    assert score_single_score(reply(content), METRIC) == expected


SINGLE_INVALID = [
    ('{"score": 1.5, "reason": "too high"}', "score must be between 0 and 1"),
    ('{"score": -0.1, "reason": "too low"}', "score must be between 0 and 1"),
    ('{"score": 1e400, "reason": "inf"}', "score must be between 0 and 1"),
    ('{"score": 1' + "0" * 400 + ', "reason": "huge"}', "score must be between 0 and 1"),
    ('{"reason": "no score"}', "score is required"),
    ('{"score": null, "reason": "null score"}', "score is required"),
    ('{"score": 1}', "reason is required"),
    ('{"score": "1", "reason": "text"}', '"score" must be a number, got a string'),
    ('{"score": true, "reason": "bool"}', '"score" must be a number, got a boolean'),
    ('{"score": 1, "reason": 5}', '"reason" must be a string, got a number'),
    ("null", "score is required"),
    ("[1]", "must be a JSON object"),
    ("definitely not json", "not valid JSON"),
    ('{"score": NaN, "reason": "x"}', "not valid JSON"),
    ("", "empty answer"),
    ("```json\n```", "not valid JSON"),
]


@pytest.mark.parametrize(("content", "fragment"), SINGLE_INVALID)
def test_single_score_rejects(content: str, fragment: str) -> None:
    with pytest.raises(JudgeOutputError) as caught:
        score_single_score(reply(content), METRIC)
    assert fragment in str(caught.value)


def test_boolean() -> None:
    passed = score_boolean(reply('{"passed": true, "reason": "ok"}'), METRIC)
    assert passed == ScoreResult(score=1.0, reason="ok", value=ScoreValue(kind=ScoreKind.BOOLEAN, boolean=True))
    failed = score_boolean(reply('```json\n{"passed": false, "reason": "no"}\n```'), METRIC)
    assert failed == ScoreResult(score=0.0, reason="no", value=ScoreValue(kind=ScoreKind.BOOLEAN, boolean=False))


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{"reason": "x"}', "passed is required"),
        ('{"passed": true}', "reason is required"),
        ('{"passed": "true", "reason": "x"}', '"passed" must be a boolean, got a string'),
        ('{"passed": 1, "reason": "x"}', '"passed" must be a boolean, got a number'),
        ("yes", "not valid JSON"),
    ],
)
def test_boolean_rejects(content: str, fragment: str) -> None:
    with pytest.raises(JudgeOutputError) as caught:
        score_boolean(reply(content), METRIC)
    assert fragment in str(caught.value)


def categorical_metric(*categories: tuple[str, float] | CategoryScore) -> EvalMetric:
    options = ResponseScorerOptions(
        categories=[c if isinstance(c, CategoryScore) else CategoryScore(label=c[0], score=c[1]) for c in categories]
    )
    return template_metric(scorer="categorical", response_scorer_options=options)


CATEGORIES = categorical_metric(("correct", 1), ("partially_correct", 0.5), ("incorrect", 0))


def categorical(score: float, reason: str, label: str) -> ScoreResult:
    return ScoreResult(score=score, reason=reason, value=ScoreValue(kind=ScoreKind.CATEGORICAL, categorical=label))


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"category": "partially_correct", "reason": "close"}', categorical(0.5, "close", "partially_correct")),
        ('{"category": "correct", "reason": "yes"}', categorical(1.0, "yes", "correct")),
        ('{"category": "incorrect", "reason": "no"}', categorical(0.0, "no", "incorrect")),
        # An unknown label is not an error: it scores 0 and the reason says why.
        ('{"category": "unknown", "reason": "hmm"}',
         categorical(0.0, 'unknown categorical label "unknown": hmm', "unknown")),
        ('{"category": "Correct", "reason": "case"}',
         categorical(0.0, 'unknown categorical label "Correct": case', "Correct")),
    ],
)  # fmt: skip
def test_categorical(content: str, expected: ScoreResult) -> None:
    assert score_categorical(reply(content), CATEGORIES) == expected


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{"reason": "x"}', "category is required"),
        ('{"category": "correct"}', "reason is required"),
        ('{"category": 1, "reason": "x"}', '"category" must be a string, got a number'),
    ],
)
def test_categorical_rejects_answers(content: str, fragment: str) -> None:
    with pytest.raises(JudgeOutputError) as caught:
        score_categorical(reply(content), CATEGORIES)
    assert fragment in str(caught.value)


CATEGORY_CONFIG_ERRORS = [
    (template_metric(scorer="categorical"), "responseScorerOptions is required"),
    (categorical_metric(), "categories are required"),
    (categorical_metric(("", 1)), "label is empty"),
    (categorical_metric(("bad", 1.5)), 'category "bad" score must be between 0 and 1'),
    (categorical_metric(("bad", -0.5)), 'category "bad" score must be between 0 and 1'),
    (categorical_metric(("same", 1), ("same", 0)), 'duplicate categorical category label "same"'),
]


@pytest.mark.parametrize(("metric", "fragment"), CATEGORY_CONFIG_ERRORS)
def test_categorical_options_are_validated_before_the_answer(metric: EvalMetric, fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        score_categorical(reply("not even json"), metric)
    assert fragment in str(caught.value)
    with pytest.raises(ConfigError):
        BUILTIN_STRUCTURED_OUTPUTS["categorical"](metric)


def test_category_scores_keep_configuration_order() -> None:
    assert category_scores(CATEGORIES) == {"correct": 1.0, "partially_correct": 0.5, "incorrect": 0.0}


def test_rubric_scores_accept_any_ids_without_metric_rubrics() -> None:
    answer = '{"rubricScores":[{"id":"1","score":1,"reason":"ok"},{"id":"2","score":0,"reason":"missing"}]}'
    result = score_rubric_scores(reply(answer), template_metric(scorer="rubric_scores"))
    assert result == ScoreResult(
        score=0.5,
        reason="ok\nmissing",
        value=ScoreValue(kind=ScoreKind.NUMERIC, numeric=0.5),
        rubric_scores=[RubricScore(id="1", score=1, reason="ok"), RubricScore(id="2", score=0, reason="missing")],
    )


def test_rubric_scores_are_checked_against_the_metric_rubrics() -> None:
    rubrics = [Rubric(id=i, content=RubricContent(text=f"rubric {i}")) for i in ("1", "2")]
    metric = template_metric(scorer="rubric_scores", rubrics=rubrics)
    ok = '{"rubricScores":[{"id":"2","score":0.5,"reason":"b"},{"id":"1","score":1,"reason":"a"}]}'
    assert score_rubric_scores(reply(ok), metric).score == 0.75
    with pytest.raises(JudgeOutputError, match="unexpected rubric score id"):
        score_rubric_scores(reply('{"rubricScores":[{"id":"3","score":1,"reason":"c"}]}'), metric)
    with pytest.raises(JudgeOutputError, match="missing rubric score id"):
        score_rubric_scores(reply('{"rubricScores":[{"id":"1","score":1,"reason":"a"}]}'), metric)


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{"rubricScores":[]}', "rubricScores is missing or empty"),
        ('{"rubricScores":[{"id":"1","score":2,"reason":"x"}]}', "must be between 0 and 1"),
        ('{"rubricScores":[{"id":"1","score":1,"reason":"x"},{"id":"1","score":1,"reason":"y"}]}', "duplicate"),
        ("rubrics: all good", "not valid JSON"),
    ],
)
def test_rubric_scores_reject(content: str, fragment: str) -> None:
    with pytest.raises(JudgeOutputError) as caught:
        score_rubric_scores(reply(content), template_metric(scorer="rubric_scores"))
    assert fragment in str(caught.value)


# ----------------------------------------------------------------------------- schemas


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


SCHEMAS = [
    ("single_score", "single_score_result", _object({"score": {"type": "number", "minimum": 0, "maximum": 1},
                                                     "reason": {"type": "string"}})),
    ("boolean", "boolean_result", _object({"passed": {"type": "boolean"}, "reason": {"type": "string"}})),
    ("categorical", "categorical_result", _object({
        "category": {"type": "string", "enum": ["correct", "partially_correct", "incorrect"]},
        "reason": {"type": "string"},
    })),
    ("rubric_scores", "rubric_scores_result", _object({"rubricScores": {"type": "array", "items": _object({
        "id": {"type": "string"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "reason": {"type": "string"},
    })}})),
]  # fmt: skip


@pytest.mark.parametrize(("scorer", "schema_name", "schema"), SCHEMAS)
def test_builtin_schemas(scorer: str, schema_name: str, schema: dict[str, Any]) -> None:
    for key in (scorer, schema_name):
        output = BUILTIN_STRUCTURED_OUTPUTS[key](CATEGORIES)
        assert output is not None
        assert output.name == schema_name
        assert output.strict
        assert output.description
        assert output.schema == schema


def test_builtin_registries() -> None:
    assert set(BUILTIN_SCORERS) == {"single_score", "rubric_scores", "boolean", "categorical"}
    assert set(BUILTIN_STRUCTURED_OUTPUTS) == {
        *BUILTIN_SCORERS,
        "single_score_result",
        "rubric_scores_result",
        "boolean_result",
        "categorical_result",
    }
    operators = default_operators()
    for name, scorer in BUILTIN_SCORERS.items():
        assert operators.response_scorer(name) is scorer
        assert operators.has_structured_output(name)
