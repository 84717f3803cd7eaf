"""Template rendering and variable bindings, mirroring the reference's tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from agenteval.errors import AgentEvalError, ConfigError, TemplateRenderError
from agenteval.evalset.message import Message
from agenteval.evalset.models import Invocation, RubricContent
from agenteval.evaluators.llm.template_render import (
    build_template_messages,
    check_template,
    materialized_prompt,
    render_template,
    template_options,
)
from agenteval.metric.criterion import Criterion, JudgeTemplateOptions, LLMCriterion, Rubric
from agenteval.metric.models import EvalMetric
from tests.evaluators.llm_template import ANSWER, QUESTION, REFERENCE, binding, template_metric, traced, turn

VARS = {"name": "Ada", "a": "1", "b": "2", "a.b": "dotted", "城市": "Paris", "other": "{{name}}"}

RENDERED = [
    # (template, rendered)
    ("Hello {{name}}!", "Hello Ada!"),
    ("{{ name }}", "Ada"),
    ("{{\tname\n}}", "Ada"),
    ("{{name}}{{name}}", "AdaAda"),
    ("{{a}}{{b}}", "12"),
    ("{{missing?}}", ""),
    ("[{{ missing ? }}]", "[]"),
    ("{{name?}}", "Ada"),
    ("{name}", "{name}"),
    ("{ {name} }", "{ {name} }"),
    ("{{name}", "{{name}"),
    ("}}{{", "}}{{"),
    ("{{a b}}", "{{a b}}"),
    ("{{'name'}}", "{{'name'}}"),
    ('{{"name"}}', '{{"name"}}'),
    ("{{`name`}}", "{{`name`}}"),
    ("{{}}", "{{}}"),
    ("{{ }}", "{{ }}"),
    ("{{?}}", "{{?}}"),
    ("{{a?b}}", "{{a?b}}"),
    ("{{name??}}", "{{name??}}"),
    ("{{{name}}}", "{{{name}}}"),
    ("{{a.b}}", "dotted"),
    ("{{城市}}", "Paris"),
    ("{{other}}", "{{name}}"),
    ('JSON {"k": {{a}}}', 'JSON {"k": 1}'),
    ("literal \\n stays", "literal \\n stays"),
    ("", ""),
]


@pytest.mark.parametrize(("template", "rendered"), RENDERED)
def test_render_template(template: str, rendered: str) -> None:
    assert render_template(template, VARS) == rendered


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("Missing: {{missing}}", "prompt: unresolved placeholders: {{missing}}"),
        ("{{b}} {{a}} {{ a }} {{a}}", "prompt: unresolved placeholders: {{ a }}, {{a}}, {{b}}"),
        ("{{ok?}} {{no}}", "prompt: unresolved placeholders: {{no}}"),
    ],
)
def test_render_template_names_unbound_placeholders(template: str, message: str) -> None:
    with pytest.raises(TemplateRenderError) as caught:
        render_template(template, {})
    assert str(caught.value) == message


def render(metric: EvalMetric, actuals: Sequence[Invocation] = (), expecteds: Sequence[Invocation] = ()) -> str:
    messages = build_template_messages(list(actuals) or [turn()], list(expecteds) or [turn()], metric)
    assert len(messages) == 1
    assert messages[0].role == "user"
    return messages[0].content


def test_bound_variables_come_from_the_current_turn() -> None:
    actuals = [turn("first?", "one"), turn("second?", "two")]
    expecteds = [turn("first?", "uno"), turn("second?", "dos")]
    assert render(template_metric(), actuals, expecteds) == "Q: second?\nA: two\nR: dos"


def test_missing_actual_fields_render_empty() -> None:
    actual = Invocation()
    assert render(template_metric(), [actual], [turn()]) == "Q: \nA: \nR: Paris"


def test_expected_final_response_is_required() -> None:
    with pytest.raises(TemplateRenderError) as caught:
        render(template_metric(), [turn()], [turn(answer=None)])
    assert str(caught.value) == 'resolve template variable "reference": expected finalResponse is empty'


def test_an_empty_expected_final_response_is_allowed() -> None:
    assert render(template_metric("R: [{{reference}}]", "single_score", REFERENCE), [turn()], [turn(answer="")]) == (
        "R: []"
    )


def test_unknown_placeholder_fails() -> None:
    metric = template_metric("A: {{answer}}\nMissing: {{missing}}", "single_score", ANSWER)
    with pytest.raises(TemplateRenderError) as caught:
        render(metric)
    assert str(caught.value) == "render template prompt: prompt: unresolved placeholders: {{missing}}"


def test_a_binding_without_placeholder_is_ignored() -> None:
    assert render(template_metric("constant", "single_score", ANSWER, QUESTION)) == "constant"


def _with(**template: Any) -> EvalMetric:
    return EvalMetric(
        metric_name="m", criterion=Criterion(llm_judge=LLMCriterion(template=JudgeTemplateOptions(**template)))
    )


CONFIG_ERRORS = [
    # (metric, message fragment)
    (EvalMetric(metric_name="m"), "missing llm judge criterion"),
    (EvalMetric(metric_name="m", criterion=Criterion(llm_judge=LLMCriterion())), "template is nil"),
    (_with(prompt="", response_scorer_name="single_score"), "template prompt is empty"),
    (_with(prompt="{{answer}}", response_scorer_name=""), "template responseScorerName is empty"),
    (template_metric("{{x}}", "single_score", binding("", "actual", "finalResponse")), "templateVariable is empty"),
    (
        template_metric("{{answer}}", "single_score", ANSWER, binding("answer", "expected", "finalResponse")),
        'templateVariable "answer" is duplicated',
    ),
    (
        _with(prompt="{{x}}", response_scorer_name="single_score", variable_bindings=[{"templateVariable": "x"}]),
        'resolve template variable "x": source is missing',
    ),
    (
        template_metric("{{x}}", "single_score", binding("x", "expected", "userContent")),
        'resolve template variable "x": unsupported source expected.userContent',
    ),
    (
        template_metric("{{x}}", "single_score", binding("x", "expected", "traceStepInput", "n")),
        "unsupported source expected.traceStepInput",
    ),
    (
        template_metric("{{x}}", "single_score", binding("x", "metric", "finalResponse")),
        "unsupported source metric.finalResponse",
    ),
    (template_metric("{{x}}", "single_score", binding("x", "actual", "rubrics")), "unsupported source actual.rubrics"),
    (
        _with(
            prompt="{{x}}",
            response_scorer_name="single_score",
            variable_bindings=[{"templateVariable": "x", "source": {"field": "finalResponse"}}],
        ),
        "unsupported source .finalResponse",
    ),
    (template_metric("{{x}}", "single_score", binding("x", "metric", "rubrics")), "metric rubrics are empty"),
]


@pytest.mark.parametrize(("metric", "fragment"), CONFIG_ERRORS)
def test_invalid_configuration(metric: EvalMetric, fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        render(metric)
    assert fragment in str(caught.value)


# ----------------------------------------------------------------------------- trace steps

STEPS = [
    {"NodeID": "fetch", "Input": {"Text": "old query"}, "Output": {"Text": "stale data"}},
    {"NodeID": "other", "Output": {"Text": "ignore me"}},
    {"NodeID": "fetch", "Input": {"Text": "match query"}, "Output": {"Text": "fresh data"}},
]


@pytest.mark.parametrize(
    ("field_name", "rendered"), [("traceStepInput", "match query"), ("traceStepOutput", "fresh data")]
)
def test_trace_step_snapshots_use_the_last_matching_step(field_name: str, rendered: str) -> None:
    metric = template_metric("{{x}}", "single_score", binding("x", "actual", field_name, "fetch"))
    assert render(metric, [traced(*STEPS)]) == rendered


TOOLS_STEP = {
    "NodeID": "fetch",
    "Tools": [
        {"ID": "call-1", "Name": "lookup", "Arguments": {"city": "Paris"}, "Result": {"temperature": 18}},
        {"ID": "call-2", "Name": "unstable", "Arguments": {"attempt": 2}, "Error": "tool failed"},
        {"Name": "bare", "Arguments": {}, "Result": "x < y & z"},
    ],
    "Skills": [{"Name": "research"}, {"Name": "weather"}, {}],
}


def test_trace_step_tools_and_skills_render_as_json_arrays() -> None:
    metric = template_metric(
        "Tools: {{tools}}\nSkills: {{skills}}",
        "single_score",
        binding("tools", "actual", "traceStepTools", "fetch"),
        binding("skills", "actual", "traceStepSkills", "fetch"),
    )
    assert render(metric, [traced(TOOLS_STEP)]) == (
        'Tools: [{"id":"call-1","name":"lookup","arguments":{"city":"Paris"},"result":{"temperature":18}},'
        '{"id":"call-2","name":"unstable","arguments":{"attempt":2},"error":"tool failed"},'
        '{"name":"bare","arguments":{},"result":"x < y & z"}]\n'
        'Skills: [{"name":"research"},{"name":"weather"},{}]'
    )


@pytest.mark.parametrize(
    ("field_name", "path", "rendered"),
    [
        ("traceStepTools", "$[0].id", "call-1"),
        ("traceStepTools", "$[0].result.temperature", "18"),
        ("traceStepTools", "$[1].name", "unstable"),
        ("traceStepTools", "$[1].error", "tool failed"),
        ("traceStepTools", "$[0].arguments", '{"city":"Paris"}'),
        ("traceStepSkills", "$[1].name", "weather"),
    ],
)
def test_trace_step_tools_and_skills_with_a_path(field_name: str, path: str, rendered: str) -> None:
    metric = template_metric("{{x}}", "single_score", binding("x", "actual", field_name, "fetch", path))
    assert render(metric, [traced(TOOLS_STEP)]) == rendered


def test_a_step_without_tools_or_skills_renders_empty_arrays() -> None:
    metric = template_metric(
        "Tools: {{tools}}\nSkills: {{skills}}",
        "single_score",
        binding("tools", "actual", "traceStepTools", "fetch"),
        binding("skills", "actual", "traceStepSkills", "fetch"),
    )
    assert render(metric, [traced({"NodeID": "fetch"})]) == "Tools: []\nSkills: []"


TRACE_ERRORS = [
    # (actuals, field, node id, error class, message)
    ([turn()], "traceStepOutput", "fetch", TemplateRenderError,
     "executionTrace is empty for actual.traceStepOutput at invocation index 0"),
    ([traced(*STEPS), turn()], "traceStepInput", "fetch", TemplateRenderError,
     "executionTrace is empty for actual.traceStepInput at invocation index 1"),
    ([traced({"NodeID": "fetch"})], "traceStepOutput", None, ConfigError, "trace selector nodeID is required"),
    ([traced({"NodeID": "fetch"})], "traceStepTools", None, ConfigError, "trace selector nodeID is required"),
    ([traced({"NodeID": "fetch"})], "traceStepSkills", "", ConfigError, "trace selector nodeID is required"),
    ([traced({"NodeID": "fetch"})], "traceStepOutput", " ", TemplateRenderError,
     'trace step not found for actual.traceStepOutput nodeID " " at invocation index 0'),
    ([traced({"NodeID": "other"})], "traceStepTools", "fetch", TemplateRenderError,
     'trace step not found for actual.traceStepTools nodeID "fetch" at invocation index 0'),
    ([traced()], "traceStepOutput", "fetch", TemplateRenderError,
     'trace step not found for actual.traceStepOutput nodeID "fetch" at invocation index 0'),
    ([traced({"NodeID": "fetch"})], "traceStepOutput", "fetch", TemplateRenderError,
     'trace snapshot is empty for actual.traceStepOutput nodeID "fetch" at invocation index 0'),
    ([traced({"NodeID": "fetch", "Input": {"Text": ""}})], "traceStepInput", "fetch", TemplateRenderError,
     'trace snapshot is empty for actual.traceStepInput nodeID "fetch" at invocation index 0'),
]  # fmt: skip


@pytest.mark.parametrize(("actuals", "field_name", "node_id", "kind", "message"), TRACE_ERRORS)
def test_trace_step_errors(
    actuals: list[Invocation], field_name: str, node_id: str | None, kind: type[AgentEvalError], message: str
) -> None:
    metric = template_metric("{{x}}", "single_score", binding("x", "actual", field_name, node_id))
    with pytest.raises(kind) as caught:
        render(metric, actuals, [turn()] * len(actuals))
    assert str(caught.value) == f'resolve template variable "x": {message}'


# ----------------------------------------------------------------------------- metric rubrics and paths


def test_metric_rubrics_render_the_visible_rubrics_as_json() -> None:
    rubrics = [
        Rubric(id="r1", content=RubricContent(text="Must preserve x < y > z & value.")),
        Rubric(id="hidden"),
        Rubric(id="r2", content=RubricContent(text="Cite."), description="why", type="FINAL_RESPONSE_QUALITY"),
        Rubric(content=RubricContent()),
    ]
    metric = template_metric(
        "Rubrics: {{rubrics}}\nFirst: {{first}}",
        "rubric_scores",
        binding("rubrics", "metric", "rubrics"),
        binding("first", "metric", "rubrics", path="$[0].content.text"),
        rubrics=rubrics,
    )
    assert render(metric) == (
        'Rubrics: [{"id":"r1","content":{"text":"Must preserve x < y > z & value."}},'
        '{"id":"r2","content":{"text":"Cite."},"description":"why","type":"FINAL_RESPONSE_QUALITY"},'
        '{"content":{}}]\n'
        "First: Must preserve x < y > z & value."
    )


def test_paths_apply_to_any_source() -> None:
    output = '{"payload":{"answer":"Paris","evidence":{"city":"Paris","comparison":"x < y > z & a"}}}'
    metric = template_metric(
        "Answer: {{answer}}\nEvidence: {{evidence}}\nQuestion: {{question}}",
        "single_score",
        binding("answer", "actual", "traceStepOutput", "fetch", "$.payload.answer"),
        binding("evidence", "actual", "traceStepOutput", "fetch", "payload.evidence"),
        binding("question", "actual", "finalResponse", path="$.q"),
    )
    actual = traced({"NodeID": "fetch", "Output": {"Text": output}})
    actual.final_response = Message.assistant('{"q": "why?"}')
    assert render(metric, [actual]) == (
        'Answer: Paris\nEvidence: {"city":"Paris","comparison":"x < y > z & a"}\nQuestion: why?'
    )


@pytest.mark.parametrize(
    ("answer", "path", "message"),
    [
        ("not json", "$.a", 'resolve template variable "answer": parse source json for path "$.a"'),
        ('{"a": 1}', "$.b", 'resolve template variable "answer": json path "$.b" key "b" not found'),
        ('{"a": 1}', "$.*", 'resolve template variable "answer": json path "$.*" contains unsupported wildcard'),
    ],
)
def test_path_failures_name_the_binding(answer: str, path: str, message: str) -> None:
    metric = template_metric("{{answer}}", "single_score", binding("answer", "actual", "finalResponse", path=path))
    with pytest.raises(AgentEvalError) as caught:
        render(metric, [turn(answer=answer)])
    assert str(caught.value).startswith(message)


def test_materialized_prompt() -> None:
    assert materialized_prompt([Message.user("only")]) == "only"
    assert materialized_prompt([Message.system("rules"), Message.user("question")]) == (
        "[system]\nrules\n\n[user]\nquestion"
    )
    assert materialized_prompt([]) == ""


def test_unencodable_tool_arguments_fail() -> None:
    metric = template_metric("{{tools}}", "single_score", binding("tools", "actual", "traceStepTools", "fetch"))
    actual = traced({"NodeID": "fetch", "Tools": [{"Name": "bad", "Arguments": {1, 2}}]})
    with pytest.raises(TemplateRenderError) as caught:
        render(metric, [actual])
    assert (
        str(caught.value) == 'resolve template variable "tools": marshal trace step tools: json: unsupported type: set'
    )


CHECKED_TEMPLATES = [
    # (template metric, message; None when the template is fine whatever the turns)
    (template_metric(), None),
    (template_metric("{{answer}} {{later?}}", "single_score", ANSWER), None),
    (template_metric("{{rubrics}}", "single_score", binding("rubrics", "metric", "rubrics")), None),
    (
        template_metric("{{answer}} {{b}} {{ a }}", "single_score", ANSWER),
        "template prompt: placeholders {{ a }}, {{b}} have no variableBindings entry",
    ),
    (_with(prompt="", response_scorer_name="single_score"), "template prompt is empty"),
    (
        template_metric("{{answer}}", "single_score", ANSWER, binding("answer", "expected", "finalResponse")),
        'templateVariable "answer" is duplicated',
    ),
    (
        template_metric("{{x}}", "single_score", binding("x", "expected", "userContent")),
        'resolve template variable "x": unsupported source expected.userContent',
    ),
    (
        template_metric("{{x}}", "single_score", binding("x", "actual", "traceStepTools")),
        'resolve template variable "x": trace selector nodeID is required',
    ),
]


@pytest.mark.parametrize(("metric", "message"), CHECKED_TEMPLATES)
def test_check_template_rejects_what_no_turn_can_render(metric: EvalMetric, message: str | None) -> None:
    template = template_options(metric)
    if message is None:
        check_template(template)
        return
    with pytest.raises(ConfigError) as caught:
        check_template(template)
    assert str(caught.value).startswith(message)
