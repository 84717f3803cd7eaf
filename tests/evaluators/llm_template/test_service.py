"""The template judge through ``LocalService``: stored results, and the reference examples reproduced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalCaseResult, EvalSetResult, ScoreKind
from agenteval.evalset.memory import InMemoryEvalSetManager
from agenteval.evalset.models import EvalSet
from agenteval.evaluators.llm.template import TemplateJudgeEvaluator
from agenteval.evaluators.registry import EvaluatorRegistry
from agenteval.llm.base import ChatRequest, ChatResponse
from agenteval.llm.judge import JudgeOverride, use_judge
from agenteval.metric.criterion import Criterion
from agenteval.metric.models import EvalMetric
from agenteval.service.local import LocalService
from agenteval.service.types import EvaluateConfig, EvaluateRequest
from agenteval.status import EvalStatus
from agenteval.testing import ScriptedChatModel
from tests.evaluators.llm_template import template_metric
from tests.service._fakes import (
    evaluate_request,
    make_case,
    make_manager,
    make_service,
    passed_inference,
    turn,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "interop" / "trpc-examples" / "llm"
METRICS = TypeAdapter(list[EvalMetric])


def template_prompt(criterion: Criterion | None) -> str:
    assert criterion is not None and criterion.llm_judge is not None and criterion.llm_judge.template is not None
    return criterion.llm_judge.template.prompt


def only_case(results: list[EvalCaseResult]) -> EvalCaseResult:
    assert len(results) == 1
    return results[0]


@pytest.mark.asyncio
async def test_per_turn_results_store_the_rendered_prompt_and_overall_the_template() -> None:
    metric = template_metric(threshold=0.5).model_copy(update={"metric_name": "capital_match"})
    case = make_case("c", "p1", "p2")
    inference = passed_inference("c", turn("p1", "a1", final="one"), turn("p2", "a2", final="two"))
    service = make_service(await make_manager(case), {"llm_judge_template": TemplateJudgeEvaluator()})
    judge = ScriptedChatModel(['{"score": 1, "reason": "good"}', '{"score": 0, "reason": "bad"}'])
    with use_judge(JudgeOverride(judge)):
        result = await service.evaluate(evaluate_request(inference, metrics=[metric]))

    case_result = only_case(result.eval_case_results)
    assert case_result.error_message == ""
    turns = [per_turn.eval_metric_results[0] for per_turn in case_result.eval_metric_result_per_invocation]
    assert [template_prompt(t.criterion) for t in turns] == [
        "Q: p1\nA: one\nR: expected p1",
        "Q: p2\nA: two\nR: expected p2",
    ]
    assert [(t.metric_name, t.score, t.eval_status) for t in turns] == [
        ("capital_match", 1.0, EvalStatus.PASSED),
        ("capital_match", 0.0, EvalStatus.FAILED),
    ]
    assert all(t.details and t.details.value and t.details.value.kind == ScoreKind.NUMERIC for t in turns)

    overall = case_result.overall_eval_metric_results[0]
    assert template_prompt(overall.criterion) == "Q: {{question}}\nA: {{answer}}\nR: {{reference}}"
    assert overall.criterion == metric.criterion
    assert overall.score == 0.5
    assert overall.eval_status == EvalStatus.PASSED
    assert overall.details is not None and overall.details.reason == "good;bad"
    assert case_result.final_eval_status == EvalStatus.PASSED


@pytest.mark.asyncio
async def test_a_rendering_error_fails_the_case() -> None:
    metric = template_metric("{{answer}} {{nope}}", "single_score")
    service = make_service(
        await make_manager(make_case("c", "prompt")), {"llm_judge_template": TemplateJudgeEvaluator()}
    )
    with use_judge(JudgeOverride(ScriptedChatModel(['{"score": 1, "reason": "x"}']))):
        result = await service.evaluate(evaluate_request(passed_inference("c"), metrics=[metric]))
    case_result = only_case(result.eval_case_results)
    assert case_result.final_eval_status == EvalStatus.FAILED
    assert case_result.error_message == (
        "run evaluation for metric template_metric: construct messages: render template prompt: "
        "prompt: unresolved placeholders: {{nope}}"
    )


async def _load_example(folder: str) -> tuple[InMemoryEvalSetManager, list[EvalMetric], EvalSet]:
    data = next((EXAMPLES / folder / "data").iterdir())
    eval_set = EvalSet.model_validate_json(next(data.glob("*.evalset.json")).read_text(encoding="utf-8"))
    metrics = METRICS.validate_json(next(data.glob("*.metrics.json")).read_text(encoding="utf-8"))
    manager = InMemoryEvalSetManager()
    await manager.create(data.name, eval_set.eval_set_id)
    for case in eval_set.eval_cases:
        await manager.add_case(data.name, eval_set.eval_set_id, case)
    return manager, metrics, eval_set


def _by_schema(request: ChatRequest) -> ChatResponse:
    name = request.structured_output.name if request.structured_output else ""
    if name == "rubric_scores_result":
        items = [{"id": "1", "score": 1, "reason": "correct"}, {"id": "2", "score": 1, "reason": "one word"}]
        return ChatResponse(content=json.dumps({"rubricScores": items}))
    return ChatResponse(content='```json\n{"score": 1, "reason": "The candidate matches the reference."}\n```')


class SchemaJudge:
    """Answers in the shape the request's schema asks for."""

    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []

    async def generate(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        return _by_schema(request)


@pytest.mark.asyncio
async def test_templatetrace_reference_prompt_is_reproduced_from_the_recorded_trace() -> None:
    manager, metrics, eval_set = await _load_example("templatetrace")
    recorded = EvalSetResult.model_validate_json(
        next((EXAMPLES / "templatetrace" / "output").rglob("*.evalset_result.json")).read_text(encoding="utf-8")
    )
    recorded_case = recorded.eval_case_results[0]
    recorded_turn = recorded_case.eval_metric_result_per_invocation[0]
    assert recorded_turn.actual_invocation is not None
    trace = recorded_turn.actual_invocation.execution_trace
    inference = InferenceResult(
        app_name="template-trace-eval-app",
        eval_set_id=eval_set.eval_set_id,
        eval_case_id=recorded_case.eval_id,
        inferences=[recorded_turn.actual_invocation.model_copy(update={"execution_trace": None})],
        execution_traces=[trace],
        session_id=recorded_case.session_id,
        status=EvalStatus.PASSED,
    )
    service = LocalService(
        lambda message: "unused",
        eval_set_manager=manager,
        registry=EvaluatorRegistry({"llm_judge_template": TemplateJudgeEvaluator()}),
    )
    judge = SchemaJudge()
    with use_judge(JudgeOverride(judge)):
        result = await service.evaluate(
            EvaluateRequest(
                app_name="template-trace-eval-app",
                eval_set_id=eval_set.eval_set_id,
                inference_results=[inference],
                evaluate_config=EvaluateConfig(eval_metrics=metrics),
            )
        )

    case_result = only_case(result.eval_case_results)
    assert case_result.error_message == ""
    per_turn = case_result.eval_metric_result_per_invocation[0].eval_metric_results[0]
    want = template_prompt(recorded_turn.eval_metric_results[0].criterion)
    assert template_prompt(per_turn.criterion) == want
    assert [m.content for m in judge.requests[0].messages] == [want]
    assert "Seattle is sunny and 72°F." in want and "{{" not in want
    overall = case_result.overall_eval_metric_results[0]
    assert template_prompt(overall.criterion) == template_prompt(recorded_case.overall_eval_metric_results[0].criterion)
    assert template_prompt(overall.criterion) == template_prompt(metrics[0].criterion)
    assert (per_turn.score, per_turn.eval_status) == (1.0, EvalStatus.PASSED)
    assert case_result.final_eval_status == recorded_case.final_eval_status


@pytest.mark.asyncio
async def test_template_reference_example_runs_both_scorers() -> None:
    manager, metrics, eval_set = await _load_example("template")
    case = eval_set.eval_cases[0]
    assert case.conversation[0].user_content is not None
    inference = InferenceResult(
        app_name="template-eval-app",
        eval_set_id=eval_set.eval_set_id,
        eval_case_id=case.eval_id,
        inferences=[turn(case.conversation[0].user_content.content, "run-1", final="Paris.")],
        status=EvalStatus.PASSED,
    )
    service = LocalService(
        lambda message: "unused",
        eval_set_manager=manager,
        registry=EvaluatorRegistry({"llm_judge_template": TemplateJudgeEvaluator()}),
    )
    judge = SchemaJudge()
    with use_judge(JudgeOverride(judge)):
        result = await service.evaluate(
            EvaluateRequest(
                app_name="template-eval-app",
                eval_set_id=eval_set.eval_set_id,
                inference_results=[inference],
                evaluate_config=EvaluateConfig(eval_metrics=metrics),
            )
        )
    case_result = only_case(result.eval_case_results)
    assert case_result.error_message == ""
    assert [r.structured_output.name for r in judge.requests if r.structured_output] == [
        "single_score_result",
        "rubric_scores_result",
    ]
    rendered = [m.content for r in judge.requests for m in r.messages]
    assert all("Candidate answer:\\nParis." in prompt and "Reference answer:\\nParis" in prompt for prompt in rendered)
    overall = case_result.overall_eval_metric_results
    assert [(m.metric_name, m.score, m.eval_status) for m in overall] == [
        ("capital_reference_match_single_template", 1.0, EvalStatus.PASSED),
        ("capital_reference_match_rubric_template", 1.0, EvalStatus.PASSED),
    ]
    assert overall[1].details is not None and [r.id for r in overall[1].details.rubric_scores] == ["1", "2"]
    assert case_result.final_eval_status == EvalStatus.PASSED
