"""``llm_final_response``: prompt, verdict parsing, samples, turns and the judge plumbing."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from agenteval.errors import AgentEvalError, ConfigError, JudgeOutputError
from agenteval.evalresult.models import ScoreKind
from agenteval.evalset.message import Message, Role
from agenteval.evalset.models import Invocation
from agenteval.evaluators.base import PerInvocationResult
from agenteval.evaluators.llm.final_response_judge import FinalResponseJudgeEvaluator, parse_final_response_verdict
from agenteval.evaluators.llm.operators import average_invocations, majority_vote
from agenteval.llm import judge as judge_module
from agenteval.llm.judge import active_judge, register_provider
from agenteval.metric.criterion import GenerationConfig, JudgeModelOptions
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus
from agenteval.testing import ScriptedChatModel
from tests.evaluators.llm._judges import (
    DEFAULT_GENERATION,
    GateJudge,
    metric,
    prompts,
    run,
    run_service,
    turn,
    verdict_reply,
)

NAME = "llm_final_response"


def evaluator() -> FinalResponseJudgeEvaluator:
    return FinalResponseJudgeEvaluator()


def test_name_and_description() -> None:
    assert FinalResponseJudgeEvaluator.name == NAME
    assert FinalResponseJudgeEvaluator.description


# ----------------------------------------------------------------------------- verdict parsing


@pytest.mark.parametrize(
    ("content", "reasoning", "label"),
    [
        ("reasoning: ok\nis_the_agent_response_valid: VALID", "ok", "valid"),
        ("\nreasoning:   spans\ntwo lines  \nis_the_agent_response_valid:  invalid \n", "spans\ntwo lines", "invalid"),
        ("reasoning: first\nis_the_agent_response_valid: valid\nreasoning: second\nis_the_agent_response_valid: "
         "invalid", "first", "valid"),
        ("Sure!\nreasoning: r\nis_the_agent_response_valid: partially\nthanks", "r", "partially"),
    ],
)  # fmt: skip
def test_parse_verdict(content: str, reasoning: str, label: str) -> None:
    assert parse_final_response_verdict(content) == (reasoning, label)


@pytest.mark.parametrize("content", ["", "valid", "Reasoning: x\nIs_the_agent_response_valid: valid"])
def test_parse_verdict_without_block_fails(content: str) -> None:
    with pytest.raises(JudgeOutputError):
        parse_final_response_verdict(content)


@pytest.mark.asyncio
@pytest.mark.parametrize(("label", "expected"), [("valid", 1.0), ("Valid", 1.0), ("invalid", 0.0), ("maybe", 0.0)])
async def test_label_scores(label: str, expected: float) -> None:
    result = await run(
        evaluator(), ScriptedChatModel([verdict_reply(label, "why")]), [turn("q", "a")], eval_metric=metric(NAME)
    )
    (only,) = result.per_invocation_results
    assert only.score == expected
    assert only.status == (EvalStatus.PASSED if expected else EvalStatus.FAILED)
    assert only.details is not None
    assert only.details.reason == "why"
    assert only.details.value is not None
    assert only.details.value.kind == ScoreKind.NUMERIC and only.details.value.numeric == expected
    assert only.details.rubric_scores == []
    assert result.overall_score == expected


@pytest.mark.asyncio
async def test_missing_block_fails_with_the_expected_lines_named() -> None:
    with pytest.raises(AgentEvalError) as info:
        await run(
            evaluator(), ScriptedChatModel(["The answer looks right."]), [turn("q", "a")], eval_metric=metric(NAME)
        )
    message = str(info.value)
    assert message.startswith("score based on response: ")
    assert "reasoning: <text>" in message and "is_the_agent_response_valid: valid|invalid" in message


# ----------------------------------------------------------------------------- what the judge is sent


@pytest.mark.asyncio
async def test_prompt_holds_the_current_turn_only() -> None:
    judge = ScriptedChatModel([verdict_reply("valid"), verdict_reply("valid")])
    actuals = [turn("first question", "first answer"), turn("second question", "second answer")]
    expecteds = [turn("first question", "first reference"), turn("second question", "second reference")]
    await run(evaluator(), judge, actuals, expecteds, metric(NAME))

    assert len(judge.requests) == 2
    second = judge.requests[1]
    assert len(second.messages) == 1 and second.messages[0].role == Role.USER
    assert second.structured_output is None
    text = second.messages[0].content
    assert "User prompt: second question\n" in text
    assert "Agent response: second answer\n" in text
    assert "Reference response: second reference\n" in text
    assert "first" not in text
    assert "reasoning:" in text and "is_the_agent_response_valid: <valid or invalid>" in text


@pytest.mark.asyncio
async def test_missing_expected_final_response_is_judged_against_empty_text() -> None:
    judge = ScriptedChatModel([verdict_reply("invalid")])
    await run(evaluator(), judge, [turn("q", "a")], [turn("q", None)], metric(NAME))
    assert "Reference response: \n" in prompts(judge)[0]


@pytest.mark.asyncio
async def test_requests_carry_the_default_generation_config() -> None:
    judge = ScriptedChatModel([verdict_reply("valid")])
    await run(evaluator(), judge, [turn("q", "a")], eval_metric=metric(NAME))
    assert judge.requests[0].generation == DEFAULT_GENERATION


@pytest.mark.asyncio
async def test_requests_carry_the_metrics_generation_config_with_streaming_off() -> None:
    judge = ScriptedChatModel([verdict_reply("valid")])
    options = JudgeModelOptions(
        provider_name="openai",
        model_name="judge",
        generation_config=GenerationConfig(max_tokens=64, temperature=0.0, stream=True),
    )
    await run(evaluator(), judge, [turn("q", "a")], eval_metric=metric(NAME, judge_model=options))
    assert judge.requests[0].generation == GenerationConfig(max_tokens=64, temperature=0.0, stream=False)


@pytest.mark.asyncio
async def test_judge_model_num_samples_sets_the_samples_per_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(judge_module, "_providers", {})
    monkeypatch.setattr(judge_module, "_models", {})
    judge = ScriptedChatModel(
        [verdict_reply("invalid", "r0"), verdict_reply("valid", "r1"), verdict_reply("valid", "r2")]
    )
    register_provider("scripted", lambda options: judge)
    options = JudgeModelOptions(provider_name="scripted", model_name="judge", num_samples=3)

    assert active_judge() is None
    result = await evaluator().evaluate([turn("q", "a")], [turn("q", "e")], metric(NAME, judge_model=options))

    assert len(judge.requests) == 3
    (only,) = result.per_invocation_results
    assert (only.score, only.status) == (1.0, EvalStatus.PASSED)
    assert only.details is not None and only.details.reason == "r1"


@pytest.mark.asyncio
async def test_metric_without_judge_model_or_override_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="judgeModel"):
        await evaluator().evaluate([turn("q", "a")], [turn("q", "a")], metric(NAME))


@pytest.mark.asyncio
async def test_a_failing_judge_call_is_reported() -> None:
    with pytest.raises(AgentEvalError, match="judge response: RuntimeError: boom"):
        await run(evaluator(), ScriptedChatModel([RuntimeError("boom")]), [turn("q", "a")], eval_metric=metric(NAME))


@pytest.mark.asyncio
async def test_a_failing_judge_call_names_the_turn_in_a_multi_turn_case() -> None:
    judge = ScriptedChatModel([verdict_reply("valid"), RuntimeError("boom")])
    with pytest.raises(AgentEvalError, match="^turn 2: judge response: RuntimeError: boom$"):
        await run(evaluator(), judge, [turn("q1", "a1"), turn("q2", "a2")], eval_metric=metric(NAME))


@pytest.mark.asyncio
async def test_an_unscorable_judge_answer_names_the_turn_in_a_multi_turn_case() -> None:
    judge = ScriptedChatModel(["no verdict", verdict_reply("valid")])
    with pytest.raises(AgentEvalError, match="^turn 1: score based on response: ") as info:
        await run(evaluator(), judge, [turn("q1", "a1"), turn("q2", "a2")], eval_metric=metric(NAME))
    assert isinstance(info.value.__cause__, AgentEvalError)


@pytest.mark.asyncio
async def test_a_config_error_in_a_later_turn_keeps_its_type() -> None:
    class Failing(FinalResponseJudgeEvaluator):
        async def construct_messages(
            self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
        ) -> list[Message]:
            if len(actuals) == 2:
                raise ConfigError("bad template")
            return await super().construct_messages(actuals, expecteds, metric)

    judge = ScriptedChatModel([verdict_reply("valid")])
    with pytest.raises(ConfigError, match="^turn 2: construct messages: bad template$"):
        await run(Failing(), judge, [turn("q1", "a1"), turn("q2", "a2")], eval_metric=metric(NAME))


@pytest.mark.asyncio
async def test_a_failing_sample_under_sample_parallelism_is_reported_as_without_it() -> None:
    judge = ScriptedChatModel(
        [RuntimeError("HTTP 429 Too Many Requests"), verdict_reply("valid"), verdict_reply("valid")]
    )
    with pytest.raises(AgentEvalError, match="^judge response: RuntimeError: HTTP 429 Too Many Requests$") as info:
        await run(
            evaluator(), judge, [turn("q", "a")], eval_metric=metric(NAME, parallel=True, parallelism=3), samples=3
        )
    assert isinstance(info.value.__cause__, RuntimeError)


# ----------------------------------------------------------------------------- samples and turns


@pytest.mark.asyncio
async def test_majority_of_three_samples_passes_with_the_first_passing_reason() -> None:
    judge = ScriptedChatModel(
        [verdict_reply("invalid", "r0"), verdict_reply("valid", "r1"), verdict_reply("valid", "r2")]
    )
    result = await run(evaluator(), judge, [turn("q", "a")], eval_metric=metric(NAME), samples=3)
    (only,) = result.per_invocation_results
    assert (only.score, only.status) == (1.0, EvalStatus.PASSED)
    assert only.details is not None and only.details.reason == "r1"
    assert len(judge.requests) == 3
    assert prompts(judge)[0] == prompts(judge)[2]


@pytest.mark.asyncio
async def test_a_tie_between_two_samples_fails() -> None:
    judge = ScriptedChatModel([verdict_reply("valid", "yes"), verdict_reply("invalid", "no")])
    result = await run(evaluator(), judge, [turn("q", "a")], eval_metric=metric(NAME), samples=2)
    (only,) = result.per_invocation_results
    assert (only.score, only.status) == (0.0, EvalStatus.FAILED)
    assert only.details is not None and only.details.reason == "no"
    assert result.overall_status == EvalStatus.FAILED


def test_not_evaluated_samples_are_ignored_by_the_vote() -> None:
    skipped = PerInvocationResult(score=0.0, status=EvalStatus.NOT_EVALUATED)
    passed = PerInvocationResult(score=1.0, status=EvalStatus.PASSED)
    failed = PerInvocationResult(score=0.0, status=EvalStatus.FAILED)
    assert majority_vote([skipped, skipped, passed], metric(NAME)) is passed
    assert majority_vote([skipped, failed, passed, passed], metric(NAME)) is passed


@pytest.mark.asyncio
async def test_turn_scores_are_averaged() -> None:
    judge = ScriptedChatModel([verdict_reply("valid", "good"), verdict_reply("invalid", "bad")])
    actuals = [turn("q1", "a1"), turn("q2", "a2")]
    expecteds = [turn("q1", "e1"), turn("q2", "e2")]
    result = await run(evaluator(), judge, actuals, expecteds, metric(NAME, threshold=0.5))
    assert [r.score for r in result.per_invocation_results] == [1.0, 0.0]
    assert [r.actual_invocation for r in result.per_invocation_results] == actuals
    assert [r.expected_invocation for r in result.per_invocation_results] == expecteds
    assert result.overall_score == 0.5
    assert result.overall_status == EvalStatus.PASSED


def test_turns_that_were_not_evaluated_are_left_out_of_the_average() -> None:
    skipped = PerInvocationResult(score=0.0, status=EvalStatus.NOT_EVALUATED)
    passed = PerInvocationResult(score=1.0, status=EvalStatus.PASSED)
    weak = PerInvocationResult(score=0.5, status=EvalStatus.PASSED)

    result = average_invocations([skipped, passed, skipped, weak], metric(NAME, threshold=0.7))

    assert (result.overall_score, result.overall_status) == (0.75, EvalStatus.PASSED)
    assert result.per_invocation_results == [skipped, passed, skipped, weak]

    nothing = average_invocations([skipped, skipped], metric(NAME))
    assert (nothing.overall_score, nothing.overall_status) == (0.0, EvalStatus.NOT_EVALUATED)
    assert nothing.per_invocation_results == [skipped, skipped]


@pytest.mark.asyncio
async def test_samples_run_concurrently_when_sample_parallelism_is_enabled() -> None:
    judge = GateJudge(3, ScriptedChatModel([verdict_reply("valid")] * 3))
    result = await run(
        evaluator(), judge, [turn("q", "a")], eval_metric=metric(NAME, parallel=True, parallelism=3), samples=3
    )
    assert judge.max_in_flight == 3
    assert result.overall_status == EvalStatus.PASSED


@pytest.mark.asyncio
async def test_sample_parallelism_caps_the_samples_in_flight() -> None:
    judge = GateJudge(2, ScriptedChatModel([verdict_reply("valid")] * 4))
    await run(evaluator(), judge, [turn("q", "a")], eval_metric=metric(NAME, parallel=True, parallelism=2), samples=4)
    assert judge.max_in_flight == 2


@pytest.mark.asyncio
async def test_samples_run_one_at_a_time_by_default() -> None:
    judge = GateJudge(1, ScriptedChatModel([verdict_reply("valid")] * 3))
    await run(evaluator(), judge, [turn("q", "a")], eval_metric=metric(NAME), samples=3)
    assert judge.max_in_flight == 1


# ----------------------------------------------------------------------------- through the service


@pytest.mark.asyncio
async def test_local_service_records_per_turn_results() -> None:
    case = await run_service(
        evaluator(), ScriptedChatModel([verdict_reply("valid", "matches")]), metric(NAME), [turn("prompt", "answer")]
    )
    assert case.final_eval_status == EvalStatus.PASSED
    (per_turn,) = case.eval_metric_result_per_invocation
    (result,) = per_turn.eval_metric_results
    assert result.metric_name == NAME and result.score == 1.0
    assert result.details is not None and result.details.reason == "matches"


@pytest.mark.asyncio
async def test_local_service_fails_the_case_on_a_malformed_judge_answer() -> None:
    case = await run_service(evaluator(), ScriptedChatModel(["no verdict"]), metric(NAME), [turn("prompt", "answer")])
    assert case.final_eval_status == EvalStatus.FAILED
    assert f"metric {NAME}" in case.error_message
    assert "is_the_agent_response_valid" in case.error_message
    assert case.overall_eval_metric_results == []


@pytest.mark.parametrize(
    ("judge_metric", "message"),
    [
        (metric(NAME), "needs criterion.llmJudge.judgeModel, or pass judge=<ChatModel>"),
        (metric(NAME, judge_model=JudgeModelOptions(provider_name="nope", model_name="m")), "'nope' is not supported"),
        (metric(NAME, judge_model=JudgeModelOptions(provider_name="openai")), "judgeModel.modelName is empty"),
        (metric(NAME, judge_model=JudgeModelOptions(num_samples=0)), "num samples must be greater than 0, got 0"),
        (EvalMetric(metric_name=NAME), "has no criterion.llmJudge"),
    ],
)
def test_check_metric_rejects_judge_settings_that_fail_every_case(judge_metric: EvalMetric, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        evaluator().check_metric(judge_metric)


def test_check_metric_with_a_judge_override_needs_no_judge_model() -> None:
    judge_metric = metric(NAME, parallel=True, parallelism=-1)
    with judge_module.use_judge(judge_module.JudgeOverride(ScriptedChatModel([]))):
        with pytest.raises(ConfigError, match="^sample parallelism must be non-negative$"):
            evaluator().check_metric(judge_metric)
        evaluator().check_metric(metric(NAME))
