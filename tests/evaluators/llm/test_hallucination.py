"""``llm_hallucinations``: segmentation, grounding context across turns, claim labels and scoring."""

from __future__ import annotations

import pytest

from agenteval.errors import AgentEvalError, JudgeOutputError
from agenteval.evalresult.models import RubricScore, ScoreKind
from agenteval.evalset.message import Message, Role
from agenteval.evalset.models import Invocation, Tool
from agenteval.evaluators.llm.hallucination import (
    HallucinationEvaluator,
    parse_segmented_sentences,
    score_sentence_blocks,
)
from agenteval.status import EvalStatus
from agenteval.testing import ScriptedChatModel
from tests.evaluators.llm._judges import DEFAULT_GENERATION, GateJudge, metric, prompts, run, run_service, turn

NAME = "llm_hallucinations"


def block(sentence_id: str, label: str, verdict: str, reason: str = "because") -> str:
    return f"ID: {sentence_id}\nReason: {reason}\nLabel: {label}\nVerdict: {verdict}"


def blocks(*items: str) -> str:
    return "\n\n".join(items) + "\n"


SEGMENTED = "<sentence>Paris is cloudy.</sentence>\n<sentence>It is 18C.</sentence>"
ALL_SUPPORTED = blocks(block("1", "supported", "yes", "r1"), block("2", "supported", "yes", "r2"))


def test_name_and_description() -> None:
    assert HallucinationEvaluator.name == NAME
    assert HallucinationEvaluator.description


# ----------------------------------------------------------------------------- parsing


def test_segmented_sentences_are_numbered_by_position() -> None:
    content = "<sentence> A. </sentence>\n<sentence>  </sentence><sentence>B\nC.</sentence> trailing"
    assert (
        parse_segmented_sentences(content)
        == '<sentence id="1">\nA.\n</sentence>\n<sentence id="3">\nB\nC.\n</sentence>'
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [("Paris is cloudy.", "no segmented sentences found"), ("<sentence> </sentence>", "no non-empty segmented")],
)
def test_segmentation_without_sentences_fails(content: str, message: str) -> None:
    with pytest.raises(JudgeOutputError, match=message):
        parse_segmented_sentences(content)


def test_sentence_blocks_are_scored_per_label() -> None:
    content = "\n" + blocks(
        block("1", "supported", "yes", "The tool says Cloudy."),
        block("2", "contradictory", "no", "The tool says 18C."),
        block("3", "Not Applicable", "yes", "A greeting."),
        block("4", "unsupported", "yes"),
        block("5", "disputed", "no"),
    )
    result = score_sentence_blocks(content)
    assert [s.score for s in result.rubric_scores] == [1.0, 0.0, 1.0, 0.0, 0.0]
    assert result.score == pytest.approx(2 / 5)
    assert result.value is not None and result.value.kind == ScoreKind.NUMERIC
    assert result.value.numeric == pytest.approx(2 / 5)
    assert result.rubric_scores[0] == RubricScore(id="1", reason="[supported] The tool says Cloudy.", score=1.0)
    assert result.rubric_scores[2].reason == "[not_applicable] A greeting."
    assert result.reason.split("\n")[:2] == ["[supported] The tool says Cloudy.", "[contradictory] The tool says 18C."]


def test_blocks_without_blank_lines_between_them_are_separate_claims() -> None:
    content = "ID: 1\nReason: a\nLabel: supported\nVerdict: yes\nID: 2\nReason: b\nLabel: unsupported\nVerdict: no"
    result = score_sentence_blocks(content)
    assert result.rubric_scores == [
        RubricScore(id="1", reason="[supported] a", score=1.0),
        RubricScore(id="2", reason="[unsupported] b", score=0.0),
    ]
    assert result.score == 0.5


def test_blank_lines_and_new_id_lines_both_separate_blocks() -> None:
    content = (
        blocks(block("1", "supported", "yes"), block("2", "", ""))
        + "  "
        + block("3", "contradictory", "no")
        + "\n"
        + block("4", "supported", "yes", "multi\n\nline")
    )
    result = score_sentence_blocks(content)
    assert [(s.id, s.score) for s in result.rubric_scores] == [("1", 1.0), ("2", 0.0), ("3", 0.0), ("4", 1.0)]
    assert result.rubric_scores[3].reason == "[supported] multi\n\nline"


def test_an_incomplete_block_fails_instead_of_being_merged_or_dropped() -> None:
    content = block("1", "supported", "yes") + "\nID: 2\nReason: cut off"
    with pytest.raises(JudgeOutputError) as caught:
        score_sentence_blocks(content)
    message = str(caught.value)
    assert message.startswith("incomplete sentence block in the judge's answer: 'ID: 2\\nReason: cut off';")
    assert "judgeModel.generationConfig.max_tokens" in message


@pytest.mark.parametrize(("verdict", "expected"), [("yes", 1.0), ("YES", 1.0), ("no", 0.0), ("", 0.0)])
def test_an_empty_label_falls_back_to_the_verdict(verdict: str, expected: float) -> None:
    result = score_sentence_blocks(f"ID:\nReason: Some reason.\nLabel:\nVerdict: {verdict}\n")
    assert result.rubric_scores == [RubricScore(id="1", reason="Some reason.", score=expected)]


def test_unknown_label_and_missing_blocks_fail() -> None:
    with pytest.raises(JudgeOutputError, match="score sentence 7: unexpected label 'maybe'"):
        score_sentence_blocks(block("7", "maybe", "yes"))
    with pytest.raises(JudgeOutputError, match="no sentence blocks found"):
        score_sentence_blocks("Everything is supported.")


# ----------------------------------------------------------------------------- the two judge phases


@pytest.mark.asyncio
async def test_segmentation_then_validation() -> None:
    judge = ScriptedChatModel([SEGMENTED, ALL_SUPPORTED])
    actual = turn(
        "What is the weather in Paris?",
        "Paris is cloudy and 18C.",
        context=[Message.system("Cite tool outputs only.")],
        intermediate=[Message.assistant("Let me check the live weather feed.")],
        tools=[
            Tool(
                id="tool-1",
                name="weather_lookup",
                arguments={"location": "Paris"},
                result={"temperatureC": 18, "condition": "Cloudy"},
            )
        ],
    )
    result = await run(HallucinationEvaluator(), judge, [actual], [Invocation()], metric(NAME))

    segmentation, validation = judge.requests
    assert segmentation.structured_output is None and validation.structured_output is None
    assert segmentation.generation == DEFAULT_GENERATION == validation.generation
    assert [m.role for m in segmentation.messages] == [Role.USER]
    assert "<final_answer>\nParis is cloudy and 18C.\n</final_answer>" in segmentation.messages[0].content
    assert "<sentence>[EMPTY_RESPONSE]</sentence>" in segmentation.messages[0].content

    prompt = validation.messages[0].content
    assert "<context>\nUser prompt:\nWhat is the weather in Paris?\n\nContext messages:\n- [system] Cite" in prompt
    assert '"id": "tool-1"' in prompt and '"temperatureC": 18' in prompt
    assert "tool_calls:\n" in prompt and "tool_outputs:\n" in prompt
    assert "live weather feed" not in prompt
    assert '<sentence id="1">\nParis is cloudy.\n</sentence>\n<sentence id="2">\nIt is 18C.\n</sentence>' in prompt
    assert "supported|unsupported|contradictory|disputed|not_applicable" in prompt
    assert "Verdict: <yes|no>" in prompt

    (only,) = result.per_invocation_results
    assert only.score == 1.0
    assert only.details is not None and only.details.reason == "[supported] r1\n[supported] r2"
    assert [s.id for s in only.details.rubric_scores] == ["1", "2"]


@pytest.mark.asyncio
async def test_grounding_context_accumulates_over_turns() -> None:
    judge = ScriptedChatModel([SEGMENTED, ALL_SUPPORTED, SEGMENTED, ALL_SUPPORTED])
    first = turn(
        "Look up AuroraPad X2.",
        "Found it.",
        tools=[Tool(name="catalog", arguments={"product": "AuroraPad X2"}, result={"releaseYear": 2024})],
        intermediate=[Message.assistant("I found the release year.")],
    )
    second = turn("Summarize the result.", "AuroraPad X2 was released in 2024.")
    await run(HallucinationEvaluator(), judge, [first, second], eval_metric=metric(NAME))

    first_validation, second_validation = prompts(judge)[1], prompts(judge)[3]
    assert "Summarize the result." not in first_validation
    assert "Look up AuroraPad X2." in second_validation and '"releaseYear": 2024' in second_validation
    assert second_validation.index("Look up AuroraPad X2.") < second_validation.index("Summarize the result.")
    assert "I found the release year." not in second_validation
    # The segmenter only sees the current final answer.
    assert "Found it." not in prompts(judge)[2] and "released in 2024." in prompts(judge)[2]


@pytest.mark.asyncio
async def test_nothing_captured_uses_the_default_context() -> None:
    judge = ScriptedChatModel(["<sentence>Hi.</sentence>", blocks(block("1", "not_applicable", "yes"))])
    await run(
        HallucinationEvaluator(), judge, [Invocation(final_response=Message.assistant("Hi."))], eval_metric=metric(NAME)
    )
    assert "<context>\nNo validation context was captured.\n</context>" in prompts(judge)[1]


@pytest.mark.asyncio
async def test_an_empty_final_answer_is_segmented_as_the_empty_marker() -> None:
    judge = ScriptedChatModel(
        [
            "<sentence>[EMPTY_RESPONSE]</sentence>",
            blocks(block("1", "unsupported", "no", "No final answer was produced.")),
        ]
    )
    result = await run(HallucinationEvaluator(), judge, [turn("q", None)], eval_metric=metric(NAME, threshold=1.0))
    assert "<final_answer>\n\n</final_answer>" in prompts(judge)[0]
    assert '<sentence id="1">\n[EMPTY_RESPONSE]\n</sentence>' in prompts(judge)[1]
    assert (result.overall_score, result.overall_status) == (0.0, EvalStatus.FAILED)


@pytest.mark.asyncio
async def test_segmentation_without_sentences_fails_before_validation() -> None:
    judge = ScriptedChatModel(["Paris is cloudy."])
    with pytest.raises(AgentEvalError, match="construct messages: build segmented sentences: no segmented sentences"):
        await run(HallucinationEvaluator(), judge, [turn("q", "a")], eval_metric=metric(NAME))
    assert len(judge.requests) == 1


@pytest.mark.asyncio
async def test_a_failing_segmentation_call_is_reported() -> None:
    with pytest.raises(AgentEvalError, match="build segmented sentences: judge response: RuntimeError: down"):
        await run(
            HallucinationEvaluator(),
            ScriptedChatModel([RuntimeError("down")]),
            [turn("q", "a")],
            eval_metric=metric(NAME),
        )


@pytest.mark.asyncio
async def test_malformed_validation_answer_fails() -> None:
    judge = ScriptedChatModel([SEGMENTED, blocks(block("1", "probably", "yes"))])
    with pytest.raises(AgentEvalError, match="score based on response: score sentence 1: unexpected label"):
        await run(HallucinationEvaluator(), judge, [turn("q", "a")], eval_metric=metric(NAME))


# ----------------------------------------------------------------------------- samples and turns


@pytest.mark.asyncio
async def test_segmentation_runs_once_per_turn_and_samples_are_voted() -> None:
    judge = ScriptedChatModel(
        [
            SEGMENTED,
            blocks(block("1", "unsupported", "no", "f1"), block("2", "supported", "yes", "f2")),
            blocks(block("1", "supported", "yes", "p1"), block("2", "supported", "yes", "p2")),
            blocks(block("1", "supported", "yes", "q1"), block("2", "supported", "yes", "q2")),
        ]
    )
    result = await run(
        HallucinationEvaluator(), judge, [turn("q", "a")], eval_metric=metric(NAME, threshold=0.8), samples=3
    )
    sent = prompts(judge)
    assert len(sent) == 4
    assert "Split the final answer" in sent[0]
    assert sent[1] == sent[2] == sent[3]
    (only,) = result.per_invocation_results
    assert only.score == 1.0
    assert only.details is not None and only.details.reason == "[supported] p1\n[supported] p2"


@pytest.mark.asyncio
async def test_a_tie_between_samples_fails() -> None:
    judge = ScriptedChatModel(
        [SEGMENTED, ALL_SUPPORTED, blocks(block("1", "unsupported", "no", "x"), block("2", "disputed", "no", "y"))]
    )
    result = await run(
        HallucinationEvaluator(), judge, [turn("q", "a")], eval_metric=metric(NAME, threshold=0.5), samples=2
    )
    (only,) = result.per_invocation_results
    assert (only.score, only.status) == (0.0, EvalStatus.FAILED)


@pytest.mark.asyncio
async def test_turns_are_averaged() -> None:
    judge = ScriptedChatModel(
        [
            SEGMENTED,
            ALL_SUPPORTED,
            SEGMENTED,
            blocks(block("1", "contradictory", "no"), block("2", "unsupported", "no")),
        ]
    )
    result = await run(HallucinationEvaluator(), judge, [turn("q1", "a1"), turn("q2", "a2")], eval_metric=metric(NAME))
    assert [r.score for r in result.per_invocation_results] == [1.0, 0.0]
    assert (result.overall_score, result.overall_status) == (0.5, EvalStatus.PASSED)


@pytest.mark.asyncio
async def test_validation_samples_run_concurrently_when_enabled() -> None:
    judge = GateJudge(3, ScriptedChatModel([SEGMENTED, *[ALL_SUPPORTED] * 3]), skip=1)
    eval_metric = metric(NAME, parallel=True, parallelism=3)
    result = await run(HallucinationEvaluator(), judge, [turn("q", "a")], eval_metric=eval_metric, samples=3)
    assert judge.max_in_flight == 3
    assert result.overall_score == 1.0


# ----------------------------------------------------------------------------- through the service


@pytest.mark.asyncio
async def test_local_service_records_one_rubric_score_per_sentence() -> None:
    judge = ScriptedChatModel(
        [SEGMENTED, blocks(block("1", "supported", "yes", "ok"), block("2", "unsupported", "no", "no"))]
    )
    case = await run_service(HallucinationEvaluator(), judge, metric(NAME, threshold=0.5), [turn("prompt", "answer")])
    assert case.error_message == ""
    (per_turn,) = case.eval_metric_result_per_invocation
    (result,) = per_turn.eval_metric_results
    assert result.score == 0.5 and result.eval_status == EvalStatus.PASSED
    assert result.details is not None
    assert result.details.rubric_scores == [
        RubricScore(id="1", reason="[supported] ok", score=1.0),
        RubricScore(id="2", reason="[unsupported] no", score=0.0),
    ]


@pytest.mark.asyncio
async def test_local_service_fails_the_case_on_a_malformed_answer() -> None:
    case = await run_service(
        HallucinationEvaluator(), ScriptedChatModel([SEGMENTED, "All good."]), metric(NAME), [turn("prompt", "answer")]
    )
    assert case.final_eval_status == EvalStatus.FAILED
    assert f"metric {NAME}" in case.error_message
    assert "no sentence blocks found" in case.error_message
