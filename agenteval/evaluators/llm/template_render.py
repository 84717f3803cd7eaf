"""Rendering of template judge prompts: ``{{placeholder}}`` substitution and variable bindings.

Only double-brace placeholders are recognised; single braces are literal text. Every placeholder
must be bound by ``variableBindings`` (there are no implicit variables), except optional ones
(``{{name?}}``), which render as ``""`` when unbound. Values come from the current turn: the
last of the actual and expected turns given.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agenteval.errors import AgentEvalError, ConfigError, TemplateRenderError, describe_exception
from agenteval.evalset.message import Message, Role
from agenteval.evalset.models import Invocation
from agenteval.evalset.trace import TraceStep
from agenteval.evaluators.llm.jsonpath import encode_compact, extract
from agenteval.evaluators.llm.rubrics import visible_rubrics
from agenteval.metric.criterion import (
    JudgeTemplateOptions,
    Rubric,
    TemplateVariableBinding,
    TemplateVariableField,
    TemplateVariableScope,
    TemplateVariableSource,
)
from agenteval.metric.models import EvalMetric

__all__ = [
    "build_template_messages",
    "check_template",
    "materialized_prompt",
    "render_template",
    "resolve_variables",
    "template_options",
]


# Go's unicode.IsSpace set (str.isspace() also accepts \x1c-\x1f, which Go does not).
_SPACES = (
    "\t\n\v\f\r \x85\xa0\u1680" + "".join(chr(c) for c in range(0x2000, 0x200B)) + "\u2028\u2029\u202f\u205f\u3000"
)
_NAME_FORBIDDEN = frozenset(_SPACES + "{}'\"`")

_Scope = TemplateVariableScope
_Field = TemplateVariableField


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class _Placeholder:
    raw: str
    name: str
    optional: bool


def _parse_name(inner: str) -> tuple[str, bool] | None:
    name = inner.strip(_SPACES)
    optional = name.endswith("?")
    if optional:
        name = name[:-1].strip(_SPACES)
    if not name or "?" in name or any(char in _NAME_FORBIDDEN for char in name):
        return None
    return name, optional


def _tokens(template: str) -> list[str | _Placeholder]:
    parts: list[str | _Placeholder] = []
    last = position = 0
    while position < len(template):
        if not template.startswith("{{", position):
            position += 1
            continue
        close = template.find("}}", position + 2)
        if close < 0:
            position += 1
            continue
        end = close + 2
        if position > last:
            parts.append(template[last:position])
        raw = template[position:end]
        parsed = _parse_name(template[position + 2 : close])
        # An invalid name leaves the whole "{{...}}" span as literal text.
        parts.append(_Placeholder(raw, *parsed) if parsed else raw)
        position = last = end
    if last < len(template):
        parts.append(template[last:])
    return parts


def _unbound(parts: Sequence[str | _Placeholder], names: Collection[str]) -> list[str]:
    """The non-optional placeholders of ``parts`` not in ``names``, as written, sorted."""
    return sorted(
        {part.raw for part in parts if isinstance(part, _Placeholder) and not part.optional and part.name not in names}
    )


def render_template(template: str, variables: Mapping[str, str]) -> str:
    """Replace ``{{name}}`` placeholders with their values.

    A placeholder name has no whitespace, braces, quotes, backquotes or ``?``; whitespace around it
    is allowed (``{{ name }}``) and a trailing ``?`` makes it optional. Anything else between double
    braces, and every single brace, is kept as written.

    Args:
        template: The prompt template.
        variables: Placeholder values by name.

    Returns:
        The rendered text.

    Raises:
        TemplateRenderError: A non-optional placeholder has no value (all of them are named).
    """
    parts = _tokens(template)
    unresolved = _unbound(parts, variables)
    if unresolved:
        raise TemplateRenderError(f"prompt: unresolved placeholders: {', '.join(unresolved)}")
    return "".join(part if isinstance(part, str) else variables.get(part.name, "") for part in parts)


def template_options(metric: EvalMetric) -> JudgeTemplateOptions:
    """The metric's ``criterion.llmJudge.template``.

    Raises:
        ConfigError: The metric has no LLM judge criterion or no template.
    """
    if metric.criterion is None or metric.criterion.llm_judge is None:
        raise ConfigError(f"metric {metric.metric_name}: missing llm judge criterion (criterion.llmJudge)")
    template = metric.criterion.llm_judge.template
    if template is None:
        raise ConfigError(f"metric {metric.metric_name}: template is nil (criterion.llmJudge.template is required)")
    return template


def _source_name(source: TemplateVariableSource) -> str:
    scope = source.scope.value if source.scope is not None else ""
    field = source.field.value if source.field is not None else ""
    return f"{scope}.{field}"


def _current(turns: Sequence[Invocation], side: str) -> Invocation:
    if not turns:
        raise TemplateRenderError(f"{side} is empty")
    return turns[-1]


def _trace_step(actuals: Sequence[Invocation], source: TemplateVariableSource) -> TraceStep:
    # The selector's nodeID was checked with the source (_value_of).
    node_id = source.selector.node_id if source.selector is not None else ""
    trace = _current(actuals, "actuals").execution_trace
    index = len(actuals) - 1
    where = _source_name(source)
    if trace is None:
        raise TemplateRenderError(f"executionTrace is empty for {where} at invocation index {index}")
    matches = [step for step in trace.steps or [] if step.node_id == node_id]
    if not matches:
        raise TemplateRenderError(
            f"trace step not found for {where} nodeID {_quote(node_id)} at invocation index {index}"
        )
    return matches[-1]


def _trace_snapshot(actuals: Sequence[Invocation], source: TemplateVariableSource, *, input_side: bool) -> str:
    step = _trace_step(actuals, source)
    snapshot = step.input if input_side else step.output
    if snapshot is None or not snapshot.text:
        index = len(actuals) - 1
        raise TemplateRenderError(
            f"trace snapshot is empty for {_source_name(source)} nodeID {_quote(step.node_id)} "
            f"at invocation index {index}"
        )
    return snapshot.text


def _encode(value: Any, what: str) -> str:
    try:
        return encode_compact(value)
    except AgentEvalError as exc:
        raise TemplateRenderError(f"marshal {what}: {exc}") from exc


def _trace_tools(actuals: Sequence[Invocation], source: TemplateVariableSource) -> str:
    tools: list[dict[str, Any]] = []
    for tool in _trace_step(actuals, source).tools or []:
        # Go's omitempty: empty strings and absent (nil) values are left out.
        item: dict[str, Any] = {}
        if tool.id:
            item["id"] = tool.id
        if tool.name:
            item["name"] = tool.name
        if tool.arguments is not None:
            item["arguments"] = tool.arguments
        if tool.result is not None:
            item["result"] = tool.result
        if tool.error:
            item["error"] = tool.error
        tools.append(item)
    return "[" + ",".join(_encode_ordered(item, "trace step tools") for item in tools) + "]"


def _encode_ordered(item: Mapping[str, Any], what: str) -> str:
    # Go encodes struct fields in declaration order, unlike map keys (sorted).
    return "{" + ",".join(f"{_encode(key, what)}:{_encode(value, what)}" for key, value in item.items()) + "}"


def _trace_skills(actuals: Sequence[Invocation], source: TemplateVariableSource) -> str:
    skills = _trace_step(actuals, source).skills or []
    return (
        "[" + ",".join(_encode_ordered({"name": s.name} if s.name else {}, "trace step skills") for s in skills) + "]"
    )


def _rubric_json(rubric: Rubric) -> str:
    item: dict[str, Any] = {}
    if rubric.id:
        item["id"] = rubric.id
    if rubric.content is not None:
        item["content"] = {"text": rubric.content.text} if rubric.content.text else {}
    if rubric.description:
        item["description"] = rubric.description
    if rubric.type:
        item["type"] = rubric.type
    return _encode_ordered(item, "metric rubrics")


def _metric_rubrics(metric: EvalMetric) -> str:
    if metric.criterion is None or metric.criterion.llm_judge is None:
        raise ConfigError("llm judge criterion is required")
    rubrics = visible_rubrics(metric)
    if not rubrics:
        raise ConfigError("metric rubrics are empty")
    return "[" + ",".join(_rubric_json(rubric) for rubric in rubrics) + "]"


def _expected_final_response(expecteds: Sequence[Invocation]) -> str:
    expected = _current(expecteds, "expecteds")
    if expected.final_response is None:
        raise TemplateRenderError("expected finalResponse is empty")
    return expected.final_response.content


def _message_content(message: Message | None) -> str:
    return message.content if message is not None else ""


_Getter = Callable[[Sequence[Invocation], Sequence[Invocation], EvalMetric, TemplateVariableSource], str]
"""Reads a source's raw value: ``(actuals, expecteds, metric, source) -> text``."""

_GETTERS: dict[tuple[_Scope | None, _Field | None], _Getter] = {
    (_Scope.ACTUAL, _Field.USER_CONTENT): lambda a, e, m, s: _message_content(_current(a, "actuals").user_content),
    (_Scope.ACTUAL, _Field.FINAL_RESPONSE): lambda a, e, m, s: _message_content(_current(a, "actuals").final_response),
    (_Scope.ACTUAL, _Field.TRACE_STEP_INPUT): lambda a, e, m, s: _trace_snapshot(a, s, input_side=True),
    (_Scope.ACTUAL, _Field.TRACE_STEP_OUTPUT): lambda a, e, m, s: _trace_snapshot(a, s, input_side=False),
    (_Scope.ACTUAL, _Field.TRACE_STEP_TOOLS): lambda a, e, m, s: _trace_tools(a, s),
    (_Scope.ACTUAL, _Field.TRACE_STEP_SKILLS): lambda a, e, m, s: _trace_skills(a, s),
    (_Scope.EXPECTED, _Field.FINAL_RESPONSE): lambda a, e, m, s: _expected_final_response(e),
    (_Scope.METRIC, _Field.RUBRICS): lambda a, e, m, s: _metric_rubrics(m),
}
"""Every supported source, by scope and field."""

_TRACE_FIELDS = frozenset(
    {_Field.TRACE_STEP_INPUT, _Field.TRACE_STEP_OUTPUT, _Field.TRACE_STEP_TOOLS, _Field.TRACE_STEP_SKILLS}
)

_Value = Callable[[Sequence[Invocation], Sequence[Invocation], EvalMetric], str]
"""A bound variable's value for the current turn: ``(actuals, expecteds, metric) -> text``."""


def _value_of(source: TemplateVariableSource | None) -> _Value:
    """How to read ``source`` for a turn, once it is known to be a supported source.

    Raises:
        ConfigError: No source, an unsupported scope and field, or a trace field without ``nodeID``.
    """
    if source is None:
        raise ConfigError("source is missing")
    getter = _GETTERS.get((source.scope, source.field))
    if getter is None:
        raise ConfigError(f"unsupported source {_source_name(source)}")
    if source.field in _TRACE_FIELDS and (source.selector is None or not source.selector.node_id):
        raise ConfigError("trace selector nodeID is required")

    def value(actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric) -> str:
        raw = getter(actuals, expecteds, metric, source)
        return extract(raw, source.path) if source.path else raw

    return value


def _bound_values(bindings: Sequence[TemplateVariableBinding]) -> dict[str, _Value]:
    """Each bound variable's value reader, by name, in binding order.

    Raises:
        ConfigError: A blank or duplicated variable name, or an invalid source.
    """
    values: dict[str, _Value] = {}
    for binding in bindings:
        name = binding.template_variable
        if not name:
            raise ConfigError("templateVariable is empty")
        if name in values:
            raise ConfigError(f"templateVariable {_quote(name)} is duplicated")
        try:
            values[name] = _value_of(binding.source)
        except ConfigError as exc:
            raise ConfigError(f"resolve template variable {_quote(name)}: {exc}") from exc
    return values


def check_template(template: JudgeTemplateOptions) -> None:
    """Reject a template that no turn can render, before any turn is judged.

    Checks what does not depend on the turns: the prompt is not empty, every binding names a
    variable once and a supported source, and every non-optional placeholder is bound. Missing values
    (a turn without an expected answer, a metric without rubrics) are only found when rendering.

    Args:
        template: A metric's ``criterion.llmJudge.template``.

    Raises:
        ConfigError: An empty prompt, a bad binding, or an unbound placeholder.
    """
    if not template.prompt:
        raise ConfigError("template prompt is empty")
    unbound = _unbound(_tokens(template.prompt), _bound_values(template.variable_bindings))
    if unbound:
        raise ConfigError(
            f"template prompt: placeholders {', '.join(unbound)} have no variableBindings entry: bind each one, "
            "or write it as {{name?}} to render nothing when unbound"
        )


def resolve_variables(
    actuals: Sequence[Invocation],
    expecteds: Sequence[Invocation],
    metric: EvalMetric,
    bindings: Sequence[TemplateVariableBinding],
) -> dict[str, str]:
    """Compute the value of every bound template variable for the current (last) turn.

    Args:
        actuals: Actual turns so far; the last one is judged.
        expecteds: Expected turns so far, aligned with ``actuals``.
        metric: The metric (for ``metric.rubrics``).
        bindings: The template's ``variableBindings``.

    Returns:
        Values by variable name.

    Raises:
        ConfigError: A blank or duplicated variable name, or an invalid source.
        TemplateRenderError: A value is missing for this turn (the message names the variable).
    """
    values: dict[str, str] = {}
    for name, value in _bound_values(bindings).items():
        try:
            values[name] = value(actuals, expecteds, metric)
        except AgentEvalError as exc:
            kind = ConfigError if isinstance(exc, ConfigError) else TemplateRenderError
            raise kind(f"resolve template variable {_quote(name)}: {exc}") from exc
        except Exception as exc:
            raise TemplateRenderError(f"resolve template variable {_quote(name)}: {describe_exception(exc)}") from exc
    return values


def build_template_messages(
    actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
) -> list[Message]:
    """Render the metric's template prompt for the last turn into the judge's (single, user) message.

    Raises:
        ConfigError: No template, an empty ``prompt`` or ``responseScorerName``, or a bad binding.
        TemplateRenderError: A value is missing for this turn, or a placeholder is unbound.
    """
    options = template_options(metric)
    if not options.prompt:
        raise ConfigError("template prompt is empty")
    if not options.response_scorer_name:
        raise ConfigError("template responseScorerName is empty")
    values = resolve_variables(actuals, expecteds, metric, options.variable_bindings)
    try:
        rendered = render_template(options.prompt, values)
    except TemplateRenderError as exc:
        raise TemplateRenderError(f"render template prompt: {exc}") from exc
    return [Message(role=Role.USER, content=rendered)]


def materialized_prompt(messages: Sequence[Message]) -> str:
    """The prompt text stored in a per-turn result: a single message's content, else ``[role]`` blocks.

    Several messages become ``[role]``, newline, content blocks, joined by a blank line.
    """
    if len(messages) == 1:
        return messages[0].content
    return "\n\n".join(f"[{message.role.value}]\n{message.content}" for message in messages)
