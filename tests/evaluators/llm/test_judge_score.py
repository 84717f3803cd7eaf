"""Every LLM judge records each turn's score, before the threshold, as the measure ``judge_score``."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from agenteval.evalresult.models import EvalMetricResultDetails
from agenteval.evaluators.base import PerInvocationResult, status_for
from agenteval.evaluators.llm.base import JUDGE_SCORE, LLMJudgeEvaluator
from agenteval.evaluators.llm.final_response_judge import FinalResponseJudgeEvaluator
from agenteval.evaluators.llm.hallucination import HallucinationEvaluator
from agenteval.evaluators.llm.rubric_evaluators import (
    RubricCriticEvaluator,
    RubricKnowledgeRecallEvaluator,
    RubricReferenceCriticEvaluator,
    RubricResponseEvaluator,
)
from agenteval.evaluators.llm.template import TemplateJudgeEvaluator
from agenteval.metric.models import EvalMetric
from agenteval.testing import ScriptedChatModel
from tests.evaluators.llm._judges import metric, rubric, rubric_reply, run, run_service, turn, verdict_reply

RUBRICS = [rubric("1"), rubric("2")]
HALF = rubric_reply(("1", 1.0, "ok"), ("2", 0.0, "no"))
SEGMENTED = "<sentence>Paris is cloudy.</sentence>\n<sentence>It is 18C.</sentence>"
ONE_OF_TWO_SUPPORTED = (
    "ID: 1\nReason: said\nLabel: supported\nVerdict: yes\n\nID: 2\nReason: made up\nLabel: unsupported\nVerdict: no\n"
)


def _template_metric() -> EvalMetric:
    return EvalMetric.model_validate(
        {
            "metricName": "quality",
            "evaluatorName": "llm_judge_template",
            "threshold": 0.9,
            "criterion": {
                "llmJudge": {
                    "template": {
                        "prompt": "Rate {{answer}}",
                        "responseScorerName": "single_score",
                        "variableBindings": [
                            {"templateVariable": "answer", "source": {"scope": "actual", "field": "finalResponse"}}
                        ],
                    }
                }
            },
        }
    )


# (evaluator, metric, the judge's replies for one turn, the turn's score)
JUDGES: list[tuple[LLMJudgeEvaluator, EvalMetric, list[str], float]] = [
    (FinalResponseJudgeEvaluator(), metric("llm_final_response"), [verdict_reply("invalid")], 0.0),
    (RubricResponseEvaluator(), metric("llm_rubric_response", rubrics=RUBRICS), [HALF], 0.5),
    (RubricCriticEvaluator(), metric("llm_rubric_critic", rubrics=RUBRICS), [HALF], 0.5),
    (RubricReferenceCriticEvaluator(), metric("llm_rubric_reference_critic", rubrics=RUBRICS), [HALF], 0.5),
    (RubricKnowledgeRecallEvaluator(), metric("llm_rubric_knowledge_recall", rubrics=RUBRICS), [HALF], 0.5),
    (HallucinationEvaluator(), metric("llm_hallucinations"), [SEGMENTED, ONE_OF_TWO_SUPPORTED], 0.5),
    (TemplateJudgeEvaluator(), _template_metric(), ['{"score": 0.7, "reason": "fair"}'], 0.7),
]


@pytest.mark.parametrize(
    ("evaluator", "eval_metric", "replies", "score"), JUDGES, ids=[judge[1].metric_name for judge in JUDGES]
)
@pytest.mark.asyncio
async def test_each_judge_records_its_score_as_the_judge_score(
    evaluator: LLMJudgeEvaluator, eval_metric: EvalMetric, replies: list[str], score: float
) -> None:
    result = await run(
        evaluator, ScriptedChatModel(replies), [turn("q", "Paris is cloudy. It is 18C.")], None, eval_metric
    )

    (only,) = result.per_invocation_results
    assert only.score == score
    assert only.status == status_for(score, eval_metric.threshold)
    assert only.details is not None
    assert only.details.measures == {JUDGE_SCORE: score}


def _mean_of_samples(samples: Sequence[PerInvocationResult], eval_metric: EvalMetric) -> PerInvocationResult:
    mean = sum(sample.score for sample in samples) / len(samples)
    return PerInvocationResult(
        score=mean, status=status_for(mean, eval_metric.threshold), details=EvalMetricResultDetails(score=mean)
    )


@pytest.mark.asyncio
async def test_the_judge_score_is_the_turn_score_a_custom_samples_aggregator_chose() -> None:
    judge = ScriptedChatModel(
        [verdict_reply("valid"), verdict_reply("invalid"), verdict_reply("valid"), verdict_reply("valid")]
    )

    result = await run(
        FinalResponseJudgeEvaluator(samples_aggregator=_mean_of_samples),
        judge,
        [turn("q1", "a1"), turn("q2", "a2")],
        None,
        metric("llm_final_response"),
        samples=2,
    )

    assert [t.details.measures if t.details else None for t in result.per_invocation_results] == [
        {JUDGE_SCORE: 0.5},
        {JUDGE_SCORE: 1.0},
    ]


@pytest.mark.asyncio
async def test_the_judge_score_is_written_in_the_turns_result_details() -> None:
    case = await run_service(
        RubricResponseEvaluator(),
        ScriptedChatModel([HALF]),
        metric("llm_rubric_response", rubrics=RUBRICS),
        [turn("prompt", "answer")],
    )

    (per_turn,) = case.eval_metric_result_per_invocation
    (result,) = per_turn.eval_metric_results
    assert json.loads(result.to_json())["details"]["measures"] == {"judge_score": 0.5}
