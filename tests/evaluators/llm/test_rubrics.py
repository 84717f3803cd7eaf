"""Rubric helpers, the ``rubric_scores`` scorer, judge JSON decoding and grounding-context rendering."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agenteval.errors import AgentEvalError, ConfigError, JudgeOutputError
from agenteval.evalresult.models import RubricScore, ScoreKind
from agenteval.evalset.message import Message, Role
from agenteval.evalset.models import Invocation, Tool
from agenteval.evaluators.llm.context_text import (
    NO_VALIDATION_CONTEXT,
    grounding_context,
    knowledge_search_results,
    validation_context,
)
from agenteval.evaluators.llm.judge_json import decode_judge_json, json_field, strip_code_fence
from agenteval.evaluators.llm.rubrics import (
    expected_rubric_ids,
    render_rubrics,
    rubric_scores_schema,
    score_rubric_response,
    validate_rubric_ids,
    visible_rubrics,
)
from agenteval.llm.base import ChatResponse
from agenteval.metric.criterion import Rubric
from agenteval.metric.models import EvalMetric
from tests.evaluators.llm._judges import metric, rubric, rubric_reply, turn


def score(content: str, expected: list[str] | None = None) -> Any:
    return score_rubric_response(ChatResponse(content=content), expected)


def scores_error(content: str, expected: list[str] | None = None) -> str:
    with pytest.raises(JudgeOutputError) as info:
        score(content, expected)
    return str(info.value)


# ----------------------------------------------------------------------------- visibility and validation


def test_visible_rubrics_skip_rubrics_without_content() -> None:
    m = metric("m", rubrics=[rubric("a"), Rubric(id="hidden"), rubric("b")])
    assert [r.id for r in visible_rubrics(m)] == ["a", "b"]
    assert visible_rubrics(EvalMetric(metric_name="m")) == []
    assert validate_rubric_ids(m) == ["a", "b"]


def test_validate_rubric_ids_trims_ids() -> None:
    assert validate_rubric_ids(metric("m", rubrics=[rubric(" a "), rubric("b")])) == ["a", "b"]


@pytest.mark.parametrize(
    ("eval_metric", "message"),
    [
        (EvalMetric(metric_name="m"), "llm judge criterion is required"),
        (metric("m"), "llm judge rubrics are required"),
        (metric("m", rubrics=[Rubric(id="x")]), "llm judge rubrics are required"),
        (metric("m", rubrics=[rubric("a"), rubric("  ")]), "llm judge rubric id is required for structured output"),
        (metric("m", rubrics=[rubric("a"), rubric(" a")]), 'duplicate llm judge rubric id "a"'),
    ],
)
def test_validate_rubric_ids_errors(eval_metric: EvalMetric, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        validate_rubric_ids(eval_metric)


def test_expected_rubric_ids() -> None:
    assert expected_rubric_ids(metric("m")) is None
    assert expected_rubric_ids(metric("m", rubrics=[rubric("1"), rubric("2")])) == ["1", "2"]
    with pytest.raises(ConfigError, match="duplicate"):
        expected_rubric_ids(metric("m", rubrics=[rubric("1"), rubric("1")]))


def test_render_rubrics_writes_one_line_per_visible_rubric() -> None:
    rubrics = [rubric("1", "Mentions Paris."), Rubric(id="2"), rubric(" 3 ", "Is polite.")]
    assert render_rubrics(rubrics) == "1: Mentions Paris.\n3: Is polite.\n"
    assert render_rubrics([]) == ""


# ----------------------------------------------------------------------------- schema


def test_rubric_scores_schema_with_ids_matches_the_reference_shape() -> None:
    output = rubric_scores_schema("rubric_response_scores", ["a", "b"])
    assert output.name == "rubric_response_scores"
    assert output.strict is True
    assert output.schema == {
        "type": "object",
        "properties": {
            "rubricScores": {
                "type": "array",
                "minItems": 2,
                "maxItems": 2,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "enum": ["a", "b"]},
                        "score": {"type": "number", "enum": [0, 1]},
                        "reason": {"type": "string"},
                    },
                    "required": ["id", "score", "reason"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["rubricScores"],
        "additionalProperties": False,
    }


def test_rubric_scores_schema_without_ids_is_generic() -> None:
    output = rubric_scores_schema("rubric_scores_result", None)
    scores = output.schema["properties"]["rubricScores"]
    assert "minItems" not in scores and "maxItems" not in scores
    assert scores["items"]["properties"]["id"] == {"type": "string"}
    assert scores["items"]["properties"]["score"] == {"type": "number", "minimum": 0, "maximum": 1}
    assert output.strict is True


# ----------------------------------------------------------------------------- the rubric_scores scorer


def test_score_is_the_mean_with_reasons_joined() -> None:
    result = score(rubric_reply(("1", 1, "Correct."), ("2", 0, "Missing evidence.")), ["1", "2"])
    assert result.score == 0.5
    assert result.reason == "Correct.\nMissing evidence."
    assert result.value is not None and result.value.kind == ScoreKind.NUMERIC and result.value.numeric == 0.5
    assert result.rubric_scores == [
        RubricScore(id="1", score=1.0, reason="Correct."),
        RubricScore(id="2", score=0.0, reason="Missing evidence."),
    ]


def test_without_expected_ids_any_ids_and_fractional_scores_are_accepted() -> None:
    result = score(rubric_reply(("x", 0.25, "a"), ("y", 0.75, "b")))
    assert result.score == 0.5
    assert [s.id for s in result.rubric_scores] == ["x", "y"]


@pytest.mark.parametrize("fence", ["```json\n{}\n```", "```JSON\n{}\n```", "```\n{}\n```", "  ```json{}```  "])
def test_code_fenced_json_is_accepted(fence: str) -> None:
    body = rubric_reply(("1", 1, "ok"))
    result = score(fence.replace("{}", body), ["1"])
    assert result.score == 1.0


def test_ids_are_trimmed_and_keys_match_case_insensitively() -> None:
    content = json.dumps({"RubricScores": [{"ID": " 1 ", "Score": 1, "REASON": "ok"}]})
    result = score(content, ["1"])
    assert result.rubric_scores == [RubricScore(id="1", score=1.0, reason="ok")]


@pytest.mark.parametrize(
    ("content", "expected", "message"),
    [
        ("not json", None, "not valid JSON"),
        ("   ", None, "empty answer"),
        ('{"rubricScores": [{"id": "1", "score": NaN, "reason": "x"}]}', None, "not valid JSON"),
        ('{"rubricScores": []} trailing', None, "not valid JSON"),
        ("[1, 2]", None, "must be a JSON object"),
        ("{}", None, "rubricScores is missing or empty"),
        ("null", None, "rubricScores is missing or empty"),
        ('{"rubricScores": []}', None, "rubricScores is missing or empty"),
        ('{"rubricScores": {"id": "1"}}', None, "rubricScores must be a list, got an object"),
        ('{"rubricScores": ["1"]}', None, "item 1 must be an object"),
        ('{"rubricScores": [{"score": 1, "reason": "x"}]}', None, "item 1 has no id"),
        ('{"rubricScores": [{"id": "  ", "score": 1, "reason": "x"}]}', None, "item 1 has no id"),
        ('{"rubricScores": [{"id": 1, "score": 1, "reason": "x"}]}', None, "id must be a string"),
        ('{"rubricScores": [{"id": "1", "reason": "x"}]}', None, 'no score for rubric "1"'),
        ('{"rubricScores": [{"id": "1", "score": "1", "reason": "x"}]}', None, "must be a number, got a string"),
        ('{"rubricScores": [{"id": "1", "score": true, "reason": "x"}]}', None, "must be a number, got a boolean"),
        ('{"rubricScores": [{"id": "1", "score": 1}]}', None, 'no reason for rubric "1"'),
        ('{"rubricScores": [{"id": "1", "score": 1, "reason": 3}]}', None, "reason of rubric"),
        (rubric_reply(("1", 2, "x")), None, 'score of rubric "1" is 2; it must be between 0 and 1'),
        (rubric_reply(("1", -0.5, "x")), None, "must be between 0 and 1"),
        (rubric_reply(("1", 1, "x"), ("1", 0, "y")), ["1", "2"], 'scored rubric "1" more than once'),
        (rubric_reply(("1", 1, "x"), ("3", 0, "y")), ["1", "2"], 'scored rubric "3", which is not a configured'),
        (rubric_reply(("1", 1, "x")), ["1", "2", "3"], 'did not score rubric "2", "3"'),
    ],
)
def test_malformed_answers_are_explained(content: str, expected: list[str] | None, message: str) -> None:
    assert message in scores_error(content, expected)


@pytest.mark.parametrize(
    ("number", "shown"),
    [
        ("1" + "0" * 400, "100000000000… (a 401-digit number)"),
        ("-" + "9" * 400, "-999999999999… (a 400-digit number)"),
    ],
    ids=["positive", "negative"],
)
def test_a_score_too_large_for_a_float_names_the_rubric_and_a_shortened_value(number: str, shown: str) -> None:
    content = '{"rubricScores": [{"id": "a", "score": ' + number + ', "reason": "x"}]}'
    assert scores_error(content) == f'the score of rubric "a" is {shown}; it must be between 0 and 1'


def test_strip_code_fence_only_touches_fenced_text() -> None:
    assert strip_code_fence('{"a": 1}') == '{"a": 1}'
    assert strip_code_fence('```json\n{"a": 1}\n```') == '{"a": 1}'
    assert decode_judge_json(ChatResponse(content=" ```\n[1]\n``` ")) == [1]


def test_json_field_last_case_insensitive_match_wins() -> None:
    assert json_field({"score": 1, "SCORE": 0}, "score") == 0
    assert json_field({"other": 1}, "score") is None


# ----------------------------------------------------------------------------- grounding context


def test_grounding_context_sections_and_json_layout() -> None:
    actual = turn(
        "What is the weather in Paris?",
        "Cloudy.",
        context=[Message.system("Cite tool outputs only."), Message(role=Role.USER, content="  ")],
        intermediate=[Message.assistant("Let me check the live feed.")],
        tools=[
            Tool(id="tool-1", name="weather", arguments={"z": 1, "a": [1.0, 2.5]}, result={"t": 18.0}),
            Tool(name="noargs"),
        ],
    )
    text = grounding_context(actual)
    assert text == (
        "User prompt:\nWhat is the weather in Paris?\n\n"
        "Context messages:\n- [system] Cite tool outputs only.\n\n"
        "tool_calls:\n"
        '[\n  {\n    "id": "tool-1",\n    "name": "weather",\n    "args": {\n      "a": [\n        1,\n        2.5\n'
        '      ],\n      "z": 1\n    }\n  },\n  {\n    "name": "noargs"\n  }\n]\n\n'
        "tool_outputs:\n"
        '[\n  {\n    "id": "tool-1",\n    "name": "weather",\n    "output": {\n      "t": 18\n    }\n  },\n'
        '  {\n    "name": "noargs"\n  }\n]'
    )
    assert "live feed" not in text


def test_grounding_context_default_and_accumulation() -> None:
    empty = Invocation()
    assert grounding_context(empty) == NO_VALIDATION_CONTEXT
    assert validation_context([empty, empty]) == NO_VALIDATION_CONTEXT
    text = validation_context([turn("first", "a"), empty, turn("second", "b")])
    assert text == "User prompt:\nfirst\n\nUser prompt:\nsecond"


def test_grounding_context_rejects_values_json_cannot_hold() -> None:
    with pytest.raises(AgentEvalError, match="actual 0: format tool calls and outputs: tool bad"):
        validation_context([turn("p", "a", tools=[Tool(name="bad", result={1, 2})])])


# ----------------------------------------------------------------------------- knowledge search results


def test_knowledge_results_are_reencoded_one_json_line_each() -> None:
    tools = [
        Tool(name="other", result={"documents": [{"text": "ignored"}]}),
        Tool(
            id="1",
            name="knowledge_search",
            result={"documents": [{"text": "golang doc", "metadata": {"z": 1, "a": "kb"}, "score": 0.9, "x": 1}]},
        ),
        Tool(name="knowledge_search_with_agentic_filter", result={"documents": [], "message": "none", "extra": 1}),
        Tool(name="knowledge_search", result=None),
        Tool(name="knowledge_search", result='{"documents": [{"text": "t", "metadata": {}}]}'),
    ]
    assert knowledge_search_results(tools) == (
        '{"documents":[{"text":"golang doc","metadata":{"a":"kb","z":1},"score":0.9}]}\n'
        '{"documents":[],"message":"none"}\n'
        '{"documents":null}\n'
        '{"documents":[{"text":"t","score":0}]}\n'
    )
    assert knowledge_search_results([]) == ""


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ({"documents": "invalid"}, "documents must be an array"),
        ({"documents": [{"text": 3}]}, r"documents\[0\].text must be a string"),
        ({"documents": [{"score": "high"}]}, r"documents\[0\].score must be a number"),
        ([1], "the result must be an object"),
        ("plain text", "not a JSON object"),
    ],
)
def test_knowledge_results_with_a_bad_shape_fail(result: Any, message: str) -> None:
    with pytest.raises(AgentEvalError, match="parse tool knowledge_search response: .*" + message):
        knowledge_search_results([Tool(name="knowledge_search", result=result)])
