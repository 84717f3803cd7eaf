"""``llm_verifier_pairwise``: label parsing, the reference's test vectors, prompt, samples and turns."""

from __future__ import annotations

import math

import pytest

from agenteval.errors import AgentEvalError, ConfigError, JudgeOutputError
from agenteval.evalresult.models import ScoreKind
from agenteval.evaluators.llm.verifier import TOP_LOGPROBS, VerifierPairwiseEvaluator
from agenteval.evaluators.llm.verifier_scoring import (
    SCORE_A_TAG,
    expected_label_score,
    label_value,
    pairwise_preference,
    score_verifier_response,
)
from agenteval.evaluators.registry import default_registry
from agenteval.llm.base import ChatResponse, TokenLogprob, TopLogprob
from agenteval.llm.judge import JudgeOverride, use_judge
from agenteval.metric.criterion import GenerationConfig, JudgeModelOptions
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus
from agenteval.testing import ScriptedChatModel, verifier_reply
from tests.evaluators.llm._judges import metric, prompts, rubric, run, turn

NAME = "llm_verifier_pairwise"


def tok(token: str, logprob: float = 0.0, *top: tuple[str, float]) -> TokenLogprob:
    return TokenLogprob(
        token=token, logprob=logprob, top_logprobs=tuple(TopLogprob(token=t, logprob=p) for t, p in top)
    )


def verifier_metric(judge_model: JudgeModelOptions | None = None) -> EvalMetric:
    return metric(NAME, rubrics=[rubric("accuracy", "Prefer the more accurate answer.")], judge_model=judge_model)


# The reference's vector: A is "A" with 0.7 and "T" with 0.3; B is "T" with 0.8 and "A" with 0.2.
REFERENCE_TOKENS = [
    tok("analysis\n<score_A>"),
    tok("A", math.log(0.7), ("A", math.log(0.7)), ("T", math.log(0.3))),
    tok("</score_A>\n<score_B>"),
    tok("T", math.log(0.8), ("T", math.log(0.8)), ("A", math.log(0.2))),
]


def test_the_reference_vector_scores_three_quarters_as_a_numeric_value() -> None:
    result = score_verifier_response(
        ChatResponse(content="<score_A>A</score_A>\n<score_B>T</score_B>", logprobs=REFERENCE_TOKENS)
    )

    assert result.score == pytest.approx(0.75, abs=1e-9)
    assert result.value is not None
    assert result.value.kind == ScoreKind.NUMERIC
    assert result.value.numeric == pytest.approx(result.score, abs=1e-9)
    assert "score_A 0.7000" in result.reason and "score_B 0.2000" in result.reason


def test_the_label_is_read_from_the_token_after_the_tag_not_from_earlier_tokens() -> None:
    tokens = [
        tok("not-score", 0.0, ("A", 0.0)),
        tok(" <score_A>"),
        tok(" K ", math.log(0.6), ("J", math.log(0.4)), ("K", math.log(0.6))),
    ]

    # J is 1 - 9/19, K is 1 - 10/19: (0.4 * 10 + 0.6 * 9) / 19.
    assert expected_label_score(tokens, SCORE_A_TAG) == pytest.approx(9.4 / 19, abs=1e-9)


def test_a_label_glued_to_the_end_of_a_split_tag_is_read() -> None:
    tokens = [
        tok("analysis\n<score_A"),
        tok(">K", math.log(0.6), (">J", math.log(0.4)), (">K", math.log(0.6))),
    ]

    assert expected_label_score(tokens, SCORE_A_TAG) == pytest.approx(9.4 / 19, abs=1e-9)


def test_a_tag_split_over_several_tokens_is_found() -> None:
    tokens = [tok("ok <sco"), tok("re_"), tok("A>"), tok("B", 0.0)]

    assert expected_label_score(tokens, SCORE_A_TAG) == pytest.approx(1 - 1 / 19, abs=1e-9)


def test_the_best_logprob_of_a_label_counts_once() -> None:
    tokens = [
        tok("<score_A>"),
        tok("A", math.log(0.5), ("a", math.log(0.5)), ("A", math.log(0.1)), ("T", math.log(0.5))),
    ]

    assert expected_label_score(tokens, SCORE_A_TAG) == pytest.approx(0.5, abs=1e-9)


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        ([], "empty"),
        ([tok("analysis")], "score tag <score_A> is missing"),
        ([tok("<score_A>")], "score token is missing"),
        ([tok("<score_A>"), tok("not-score")], "score token logprobs"),
        ([tok("analysis\n<score_A"), tok(">not-score", 0.0, (">also-not-score", 0.0))], "score token logprobs"),
        ([tok("<score_A>"), tok("A", -math.inf, ("A", -math.inf))], "negative infinity"),
        ([tok("<score_A>"), tok("A", math.nan)], "NaN"),
    ],
)
def test_unreadable_labels_are_judge_output_errors(tokens: list[TokenLogprob], message: str) -> None:
    with pytest.raises(JudgeOutputError, match=message):
        expected_label_score(tokens, SCORE_A_TAG)


def test_errors_name_the_tag_they_concern() -> None:
    with pytest.raises(JudgeOutputError, match="score_A"):
        score_verifier_response(ChatResponse(content="", logprobs=[tok("<score_B>"), tok("A")]))
    with pytest.raises(JudgeOutputError, match="score_B"):
        score_verifier_response(ChatResponse(content="", logprobs=[tok("<score_A>"), tok("A")]))


def test_an_answer_without_logprobs_is_refused() -> None:
    with pytest.raises(JudgeOutputError, match="logprobs are missing"):
        score_verifier_response(ChatResponse(content="Analysis.\n<score_A>A</score_A>\n<score_B>T</score_B>"))


@pytest.mark.parametrize("token", ['"A"', "A,", "U", "AB", ""])
def test_wrapped_or_unknown_tokens_are_not_labels(token: str) -> None:
    assert label_value(token) is None


def test_label_values_run_from_one_to_zero() -> None:
    assert (label_value(" a "), label_value("T"), label_value("A", granularity=1)) == (1.0, 0.0, None)


def test_an_alternative_label_counts_when_the_sampled_token_is_not_one() -> None:
    tokens = [tok("<score_A>"), tok("not-score", 0.0, ("also-not-score", 0.0), ("T", 0.0))]

    assert expected_label_score(tokens, SCORE_A_TAG) == 0.0


def test_the_preference_is_clamped_and_a_tie_is_one_half() -> None:
    assert (pairwise_preference(0, 2), pairwise_preference(2, 0), pairwise_preference(0.3, 0.3)) == (0.0, 1.0, 0.5)


def test_it_is_registered_by_default() -> None:
    assert isinstance(default_registry().get(NAME), VerifierPairwiseEvaluator)


@pytest.mark.asyncio
async def test_the_prompt_shows_both_answers_and_the_rubrics_and_asks_for_logprobs() -> None:
    judge = ScriptedChatModel([verifier_reply("B", "D")])

    result = await run(
        VerifierPairwiseEvaluator(),
        judge,
        [turn("question", "candidate A")],
        [turn("question", "candidate B")],
        verifier_metric(),
    )

    [prompt] = prompts(judge)
    for text in ("question", "candidate A", "candidate B", "accuracy: Prefer the more accurate answer.", "<score_A>"):
        assert text in prompt
    generation = judge.requests[0].generation
    assert generation is not None and (generation.logprobs, generation.top_logprobs) == (True, TOP_LOGPROBS)
    assert result.overall_score == pytest.approx(0.5 + 1 / 19, abs=1e-9)
    assert result.overall_status == EvalStatus.PASSED


@pytest.mark.asyncio
async def test_the_metrics_own_logprob_settings_are_kept() -> None:
    judge = ScriptedChatModel([verifier_reply("A", "A")])
    options = JudgeModelOptions(
        model_name="m", generation_config=GenerationConfig(logprobs=False, top_logprobs=5, max_tokens=10)
    )
    eval_metric = verifier_metric(judge_model=options)

    await run(VerifierPairwiseEvaluator(), judge, [turn("q", "a")], [turn("q", "b")], eval_metric)

    generation = judge.requests[0].generation
    assert generation is not None and (generation.logprobs, generation.top_logprobs) == (False, 5)


@pytest.mark.asyncio
async def test_samples_are_reduced_by_majority_vote_and_turns_averaged() -> None:
    judge = ScriptedChatModel(
        [
            verifier_reply("T", "A"),  # turn 1: B much better (0.0)
            verifier_reply("A", "B"),  # turn 1: A better
            verifier_reply("A", "C"),  # turn 1: A better: the majority passes, its first sample is kept
            verifier_reply("A", "T"),  # turn 2
            verifier_reply("A", "T"),
            verifier_reply("A", "T"),
        ]
    )

    result = await run(
        VerifierPairwiseEvaluator(),
        judge,
        [turn("q1", "a1"), turn("q2", "a2")],
        [turn("q1", "b1"), turn("q2", "b2")],
        verifier_metric(),
        samples=3,
    )

    first, second = (r.score for r in result.per_invocation_results)
    assert first == pytest.approx(0.5 + (1 / 19) / 2, abs=1e-9)
    assert second == 1.0
    assert result.overall_score == pytest.approx((first + second) / 2, abs=1e-9)


@pytest.mark.asyncio
async def test_a_missing_expected_answer_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="expected final response is required"):
        await run(
            VerifierPairwiseEvaluator(),
            ScriptedChatModel([]),
            [turn("q", "a")],
            [turn("q", None)],
            verifier_metric(),
        )


@pytest.mark.asyncio
async def test_a_judge_without_logprobs_fails_the_turn_naming_it() -> None:
    judge = ScriptedChatModel([verifier_reply("A", "A"), "<score_A>A</score_A><score_B>A</score_B>"])

    with pytest.raises(AgentEvalError, match="turn 2: .*logprobs are missing"):
        await run(
            VerifierPairwiseEvaluator(),
            judge,
            [turn("q1", "a1"), turn("q2", "a2")],
            [turn("q1", "b1"), turn("q2", "b2")],
            verifier_metric(),
        )


def test_a_metric_without_rubrics_is_refused_before_any_case_runs() -> None:
    with use_judge(JudgeOverride(ScriptedChatModel([]))), pytest.raises(ConfigError, match="rubrics are required"):
        VerifierPairwiseEvaluator().check_metric(metric(NAME))


def test_verifier_reply_rejects_a_probability_outside_the_unit_interval() -> None:
    with pytest.raises(ConfigError, match="probabilities"):
        verifier_reply({"A": 1.5}, "A")
