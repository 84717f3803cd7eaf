"""Tests of the ``llm_judge_template`` evaluator; shared builders live here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agenteval.evalset.message import Message
from agenteval.evalset.models import Invocation
from agenteval.evalset.trace import ExecutionTrace, TraceStep
from agenteval.metric.criterion import (
    Criterion,
    JudgeTemplateOptions,
    LLMCriterion,
    Rubric,
    TemplateVariableBinding,
)
from agenteval.metric.models import EvalMetric


def binding(
    name: str, scope: str, field_name: str, node_id: str | None = None, path: str = ""
) -> TemplateVariableBinding:
    """A variable binding, written as in a metrics file."""
    source: dict[str, Any] = {"scope": scope, "field": field_name}
    if node_id is not None:
        source["selector"] = {"nodeID": node_id}
    if path:
        source["path"] = path
    return TemplateVariableBinding.model_validate({"templateVariable": name, "source": source})


QUESTION = binding("question", "actual", "userContent")
ANSWER = binding("answer", "actual", "finalResponse")
REFERENCE = binding("reference", "expected", "finalResponse")


def template_metric(
    prompt: str = "Q: {{question}}\nA: {{answer}}\nR: {{reference}}",
    scorer: str = "single_score",
    *bindings: TemplateVariableBinding,
    threshold: float = 0.5,
    rubrics: Sequence[Rubric] = (),
    **template_fields: Any,
) -> EvalMetric:
    """A template metric (default bindings: question, answer, reference)."""
    template = JudgeTemplateOptions(
        prompt=prompt,
        response_scorer_name=scorer,
        variable_bindings=list(bindings) if bindings else [QUESTION, ANSWER, REFERENCE],
        **template_fields,
    )
    return EvalMetric(
        metric_name="template_metric",
        evaluator_name="llm_judge_template",
        threshold=threshold,
        criterion=Criterion(llm_judge=LLMCriterion(rubrics=list(rubrics), template=template)),
    )


def turn(question: str = "What is the capital of France?", answer: str | None = "Paris", **fields: Any) -> Invocation:
    """An actual (or expected) turn."""
    return Invocation(
        user_content=Message.user(question),
        final_response=Message.assistant(answer) if answer is not None else None,
        **fields,
    )


def traced(*steps: dict[str, Any]) -> Invocation:
    """An actual turn whose execution trace has ``steps`` (written with the reference's PascalCase keys)."""
    trace = ExecutionTrace(steps=[TraceStep.model_validate(step) for step in steps])
    return turn(execution_trace=trace)
