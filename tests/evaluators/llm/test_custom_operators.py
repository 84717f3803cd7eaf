"""The fixed LLM judges take custom sample and turn aggregators, and registering one replaces the built-in."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

import agenteval as ae
from agenteval.evaluators.base import EvaluateResult, PerInvocationResult, status_for
from agenteval.evaluators.llm.final_response_judge import FinalResponseJudgeEvaluator
from agenteval.evaluators.llm.rubric_evaluators import RubricResponseEvaluator
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus
from agenteval.testing import ScriptedChatModel
from tests.evaluators.llm._judges import metric, rubric, rubric_reply, run, turn, verdict_reply


def any_sample_passes(samples: Sequence[PerInvocationResult], eval_metric: EvalMetric) -> PerInvocationResult:
    return max(samples, key=lambda sample: sample.score)


def worst_turn(results: Sequence[PerInvocationResult], eval_metric: EvalMetric) -> EvaluateResult:
    worst = min(result.score for result in results)
    return EvaluateResult(
        overall_score=worst,
        overall_status=status_for(worst, eval_metric.threshold),
        per_invocation_results=list(results),
    )


@pytest.mark.asyncio
async def test_a_custom_samples_aggregator_replaces_the_majority_vote() -> None:
    replies = [verdict_reply("invalid"), verdict_reply("invalid"), verdict_reply("valid")]
    name = "llm_final_response"

    default = await run(
        FinalResponseJudgeEvaluator(), ScriptedChatModel(replies), [turn("q", "a")], None, metric(name), samples=3
    )
    custom = await run(
        FinalResponseJudgeEvaluator(samples_aggregator=any_sample_passes),
        ScriptedChatModel(replies),
        [turn("q", "a")],
        None,
        metric(name),
        samples=3,
    )

    assert (default.overall_score, default.overall_status) == (0.0, EvalStatus.FAILED)
    assert (custom.overall_score, custom.overall_status) == (1.0, EvalStatus.PASSED)


@pytest.mark.asyncio
async def test_a_custom_invocations_aggregator_replaces_the_average() -> None:
    name = "llm_rubric_response"
    replies = [rubric_reply(("1", 1.0, "ok")), rubric_reply(("1", 0.0, "no"))]
    turns = [turn("q1", "a1"), turn("q2", "a2")]
    eval_metric = metric(name, rubrics=[rubric("1")])

    default = await run(RubricResponseEvaluator(), ScriptedChatModel(replies), turns, None, eval_metric)
    custom = await run(
        RubricResponseEvaluator(invocations_aggregator=worst_turn), ScriptedChatModel(replies), turns, None, eval_metric
    )

    assert (default.overall_score, default.overall_status) == (0.5, EvalStatus.PASSED)
    assert (custom.overall_score, custom.overall_status) == (0.0, EvalStatus.FAILED)
    assert [result.score for result in custom.per_invocation_results] == [1.0, 0.0]


def test_registering_a_configured_judge_under_the_built_in_name_uses_it() -> None:
    registry = ae.default_registry()
    registry.register("llm_final_response", FinalResponseJudgeEvaluator(samples_aggregator=any_sample_passes))
    other = ae.default_registry()

    judge = registry.get("llm_final_response")
    assert isinstance(judge, FinalResponseJudgeEvaluator)
    assert judge is not other.get("llm_final_response")
