"""A gated judge and builders for the LLM-judge evaluator tests (scripted judges: ``agenteval.testing``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

from agenteval.evalresult.models import EvalCaseResult
from agenteval.evalset.message import Message
from agenteval.evalset.models import Invocation, RubricContent, Tool
from agenteval.evaluators.base import EvaluateResult
from agenteval.evaluators.llm.base import LLMJudgeEvaluator
from agenteval.llm.base import ChatModel, ChatRequest, ChatResponse
from agenteval.llm.judge import JudgeOverride, use_judge
from agenteval.metric.criterion import Criterion, GenerationConfig, JudgeModelOptions, LLMCriterion, Rubric
from agenteval.metric.models import EvalMetric
from agenteval.testing import ScriptedChatModel
from tests.service._fakes import (
    evaluate_request,
    make_case,
    make_manager,
    make_service,
    passed_inference,
)


def prompts(judge: ScriptedChatModel) -> list[str]:
    """The text of the last message of every request ``judge`` received, in call order."""
    return [request.messages[-1].content for request in judge.requests]


class GateJudge:
    """Wraps a chat model so that its calls wait until ``gate`` of them are in flight at once.

    The wrapped calls only finish when they overlap. The first ``skip`` calls are not gated (e.g.
    hallucination's segmentation call).
    """

    def __init__(self, gate: int, model: ChatModel, *, skip: int = 0) -> None:
        self.gate = gate
        self.model = model
        self.skip = skip
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.released = asyncio.Event()

    async def generate(self, request: ChatRequest) -> ChatResponse:
        self.calls += 1
        gated = self.calls > self.skip
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if gated:
                if self.in_flight >= self.gate:
                    self.released.set()
                await asyncio.wait_for(self.released.wait(), timeout=2)
            await asyncio.sleep(0)
            return await self.model.generate(request)
        finally:
            self.in_flight -= 1


def rubric_reply(*items: tuple[str, float, str], fenced: bool = False) -> str:
    """A ``{"rubricScores": [...]}`` judge answer from ``(id, score, reason)`` triples."""
    text = json.dumps({"rubricScores": [{"id": i, "score": s, "reason": r} for i, s, r in items]})
    return f"```json\n{text}\n```" if fenced else text


def verdict_reply(label: str, reasoning: str = "because") -> str:
    """An ``llm_final_response`` judge answer."""
    return f"reasoning: {reasoning}\nis_the_agent_response_valid: {label}"


def rubric(rubric_id: str, text: str | None = None) -> Rubric:
    """A rubric with content (``text=None`` gives ``<id> text``)."""
    return Rubric(id=rubric_id, content=RubricContent(text=text if text is not None else f"{rubric_id} text"))


def metric(
    name: str,
    *,
    rubrics: Sequence[Rubric] = (),
    threshold: float = 0.5,
    judge_model: JudgeModelOptions | None = None,
    parallel: bool = False,
    parallelism: int = 0,
) -> EvalMetric:
    """An LLM-judge metric named after its evaluator."""
    return EvalMetric(
        metric_name=name,
        threshold=threshold,
        criterion=Criterion(
            llm_judge=LLMCriterion(
                rubrics=list(rubrics),
                judge_model=judge_model,
                sample_parallelism_enabled=parallel,
                sample_parallelism=parallelism,
            )
        ),
    )


def turn(
    prompt: str,
    answer: str | None,
    *,
    tools: Sequence[Tool] = (),
    context: Sequence[Message] = (),
    intermediate: Sequence[Message] = (),
) -> Invocation:
    """One turn (``answer=None`` leaves the final response unset)."""
    return Invocation(
        user_content=Message.user(prompt),
        final_response=Message.assistant(answer) if answer is not None else None,
        tools=list(tools),
        context_messages=list(context),
        intermediate_responses=list(intermediate),
    )


async def run(
    evaluator: LLMJudgeEvaluator,
    judge: ChatModel,
    actuals: Sequence[Invocation],
    expecteds: Sequence[Invocation] | None = None,
    eval_metric: EvalMetric | None = None,
    *,
    samples: int = 1,
) -> EvaluateResult:
    """Evaluate with ``judge`` as the judge override."""
    assert eval_metric is not None
    with use_judge(JudgeOverride(judge, num_samples=samples)):
        return await evaluator.evaluate(actuals, expecteds if expecteds is not None else actuals, eval_metric)


DEFAULT_GENERATION = GenerationConfig(max_tokens=2000, temperature=0.8, stream=False)


async def run_service(
    evaluator: LLMJudgeEvaluator,
    judge: ChatModel,
    eval_metric: EvalMetric,
    actuals: Sequence[Invocation],
    *,
    prompts: Sequence[str] = ("prompt",),
) -> EvalCaseResult:
    """Score one case through ``LocalService`` with only ``evaluator`` registered (under its name)."""
    manager = await make_manager(make_case("case", *prompts))
    service = make_service(manager, {evaluator.name: evaluator})
    with use_judge(JudgeOverride(judge)):
        result = await service.evaluate(evaluate_request(passed_inference("case", *actuals), metrics=[eval_metric]))
    assert len(result.eval_case_results) == 1
    return result.eval_case_results[0]
