"""The rubric judges: response, critic, reference critic and knowledge recall."""

from __future__ import annotations

import re

import pytest

from agenteval.errors import AgentEvalError, ConfigError
from agenteval.evalresult.models import RubricScore, ScoreKind
from agenteval.evalset.message import Role
from agenteval.evalset.models import Tool
from agenteval.evaluators.llm.rubric_evaluators import (
    RubricCriticEvaluator,
    RubricJudgeEvaluator,
    RubricKnowledgeRecallEvaluator,
    RubricReferenceCriticEvaluator,
    RubricResponseEvaluator,
)
from agenteval.evaluators.llm.rubrics import rubric_scores_schema
from agenteval.metric.criterion import Rubric
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus
from agenteval.testing import ScriptedChatModel
from tests.evaluators.llm._judges import (
    DEFAULT_GENERATION,
    GateJudge,
    metric,
    prompts,
    rubric,
    rubric_reply,
    run,
    run_service,
    turn,
)

EVALUATORS: list[tuple[type[RubricJudgeEvaluator], str]] = [
    (RubricResponseEvaluator, "rubric_response_scores"),
    (RubricCriticEvaluator, "rubric_critic_scores"),
    (RubricReferenceCriticEvaluator, "rubric_reference_critic_scores"),
    (RubricKnowledgeRecallEvaluator, "rubric_knowledge_recall_scores"),
]
CLASSES = [cls for cls, _ in EVALUATORS]
IDS = [cls.name for cls in CLASSES]
TWO = [rubric("1", "States the capital."), rubric("2", "Gives the population.")]


def two_rubrics(cls: type[RubricJudgeEvaluator], **kwargs: object) -> EvalMetric:
    return metric(cls.name, rubrics=TWO, **kwargs)  # type: ignore[arg-type]


def test_registry_names_and_descriptions() -> None:
    assert IDS == [
        "llm_rubric_response",
        "llm_rubric_critic",
        "llm_rubric_reference_critic",
        "llm_rubric_knowledge_recall",
    ]
    assert all(cls.description for cls in CLASSES)


# ----------------------------------------------------------------------------- scoring


@pytest.mark.asyncio
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
async def test_turn_score_is_the_mean_of_rubric_scores(cls: type[RubricJudgeEvaluator]) -> None:
    judge = ScriptedChatModel([rubric_reply(("1", 1, "Paris is named."), ("2", 0, "No population."))])
    result = await run(cls(), judge, [turn("q", "a")], eval_metric=two_rubrics(cls, threshold=0.5))
    (only,) = result.per_invocation_results
    assert (only.score, only.status) == (0.5, EvalStatus.PASSED)
    assert only.details is not None
    assert only.details.reason == "Paris is named.\nNo population."
    assert only.details.value is not None and only.details.value.kind == ScoreKind.NUMERIC
    assert only.details.value.numeric == 0.5
    assert only.details.rubric_scores == [
        RubricScore(id="1", score=1.0, reason="Paris is named."),
        RubricScore(id="2", score=0.0, reason="No population."),
    ]


@pytest.mark.asyncio
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
async def test_failing_rubrics_fail_the_turn(cls: type[RubricJudgeEvaluator]) -> None:
    judge = ScriptedChatModel([rubric_reply(("1", 0, "x"), ("2", 0, "y"))])
    result = await run(cls(), judge, [turn("q", "a")], eval_metric=two_rubrics(cls, threshold=0.5))
    assert (result.overall_score, result.overall_status) == (0.0, EvalStatus.FAILED)


@pytest.mark.asyncio
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
async def test_code_fenced_answers_are_accepted(cls: type[RubricJudgeEvaluator]) -> None:
    judge = ScriptedChatModel([rubric_reply(("1", 1, "x"), ("2", 1, "y"), fenced=True)])
    result = await run(cls(), judge, [turn("q", "a")], eval_metric=two_rubrics(cls))
    assert result.overall_score == 1.0


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (rubric_reply(("1", 1, "x")), 'did not score rubric "2"'),
        (rubric_reply(("1", 1, "x"), ("2", 1, "y"), ("3", 1, "z")), 'scored rubric "3", which is not a configured'),
        (rubric_reply(("1", 1, "x"), ("1", 1, "y")), 'scored rubric "1" more than once'),
        (rubric_reply(("1", 1.5, "x"), ("2", 1, "y")), "must be between 0 and 1"),
        (rubric_reply(("1", 10**400, "x"), ("2", 1, "y")), re.escape('rubric "1" is 100000000000… (a 401-digit')),
        ("I think both rubrics pass.", "not valid JSON"),
    ],
    ids=["missing-id", "extra-id", "duplicate-id", "score-out-of-range", "score-too-large", "not-json"],
)
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
async def test_malformed_answers_fail(cls: type[RubricJudgeEvaluator], reply: str, message: str) -> None:
    with pytest.raises(AgentEvalError, match="score based on response: .*" + message):
        await run(cls(), ScriptedChatModel([reply]), [turn("q", "a")], eval_metric=two_rubrics(cls))


# ----------------------------------------------------------------------------- rubric configuration


@pytest.mark.asyncio
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
@pytest.mark.parametrize(
    ("rubrics", "error", "message"),
    [
        ([], ConfigError, "llm judge rubrics are required"),
        ([Rubric(id="1")], ConfigError, "llm judge rubrics are required"),
        ([rubric("1"), rubric(" ")], ConfigError, "llm judge rubric id is required for structured output"),
        ([rubric("1"), rubric("1 ")], ConfigError, 'duplicate llm judge rubric id "1"'),
    ],
)
async def test_rubric_configuration_errors(
    cls: type[RubricJudgeEvaluator], rubrics: list[Rubric], error: type[Exception], message: str
) -> None:
    judge = ScriptedChatModel([])
    with pytest.raises(error, match=message):
        await run(cls(), judge, [turn("q", "a")], eval_metric=metric(cls.name, rubrics=rubrics))
    assert judge.requests == []


@pytest.mark.asyncio
@pytest.mark.parametrize(("cls", "schema_name"), EVALUATORS, ids=IDS)
async def test_structured_output_schema(cls: type[RubricJudgeEvaluator], schema_name: str) -> None:
    judge = ScriptedChatModel([rubric_reply(("a", 1, "x"), ("b", 1, "y"))])
    rubrics = [rubric("a"), Rubric(id="NO-CONTENT"), rubric(" b ", "b text")]
    await run(cls(), judge, [turn("q", "a")], eval_metric=metric(cls.name, rubrics=rubrics))
    (request,) = judge.requests
    output = request.structured_output
    assert output is not None
    assert output.name == schema_name
    assert output.strict is True
    assert output.description.startswith("Per-rubric binary scores and reasons for ")
    assert output.schema == rubric_scores_schema(schema_name, ["a", "b"]).schema
    items = output.schema["properties"]["rubricScores"]
    assert (items["minItems"], items["maxItems"]) == (2, 2)
    assert request.generation == DEFAULT_GENERATION
    assert len(request.messages) == 1 and request.messages[0].role == Role.USER
    prompt = request.messages[0].content
    assert "<rubric>\na: a text\nb: b text\n</rubric>" in prompt
    assert "NO-CONTENT" not in prompt
    assert '"rubricScores"' in prompt


# ----------------------------------------------------------------------------- prompts


@pytest.mark.asyncio
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
async def test_prompt_holds_the_current_turn_only(cls: type[RubricJudgeEvaluator]) -> None:
    judge = ScriptedChatModel([rubric_reply(("1", 1, "x"), ("2", 1, "y"))] * 2)
    search = {"documents": [{"id": "doc-7", "text": "Paris has 2.1 million people.", "score": 0.8}]}
    actuals = [
        turn("EARLIER question", "EARLIER answer", tools=[Tool(name="knowledge_search", result={"documents": []})]),
        turn("new question", "new answer", tools=[Tool(name="knowledge_search", result=search)]),
    ]
    expecteds = [turn("EARLIER question", "EARLIER reference"), turn("new question", "new reference")]
    await run(cls(), judge, actuals, expecteds, two_rubrics(cls))
    prompt = prompts(judge)[1]
    assert "<main_prompt>\nnew question\n</main_prompt>" in prompt
    assert "EARLIER" not in prompt
    if cls is RubricKnowledgeRecallEvaluator:
        assert "new answer" not in prompt and "new reference" not in prompt
        expected_line = '{"documents":[{"id":"doc-7","text":"Paris has 2.1 million people.","score":0.8}]}'
        assert f"<retrieved_knowledge>\n{expected_line}\n\n</retrieved_knowledge>" in prompt
    else:
        assert "new answer" in prompt
        assert ("new reference" in prompt) == (cls is not RubricResponseEvaluator)


@pytest.mark.asyncio
async def test_knowledge_recall_without_search_results_says_so() -> None:
    judge = ScriptedChatModel([rubric_reply(("1", 0, "x"), ("2", 0, "y"))])
    tools = [Tool(name="web_search", result={"documents": [{"text": "not knowledge"}]})]
    await run(
        RubricKnowledgeRecallEvaluator(),
        judge,
        [turn("q", "a", tools=tools)],
        eval_metric=two_rubrics(RubricKnowledgeRecallEvaluator),
    )
    prompt = prompts(judge)[0]
    assert "<retrieved_knowledge>\nNo knowledge search results were found.\n</retrieved_knowledge>" in prompt
    assert "not knowledge" not in prompt


@pytest.mark.asyncio
async def test_knowledge_recall_with_a_malformed_search_result_fails() -> None:
    tools = [Tool(name="knowledge_search", result={"documents": "oops"})]
    with pytest.raises(
        AgentEvalError, match="construct messages: extract knowledge recall: parse tool knowledge_search"
    ):
        await run(
            RubricKnowledgeRecallEvaluator(),
            ScriptedChatModel([]),
            [turn("q", "a", tools=tools)],
            eval_metric=two_rubrics(RubricKnowledgeRecallEvaluator),
        )


@pytest.mark.asyncio
@pytest.mark.parametrize("cls", [RubricCriticEvaluator, RubricReferenceCriticEvaluator], ids=IDS[1:3])
async def test_critics_need_an_expected_final_response(cls: type[RubricJudgeEvaluator]) -> None:
    with pytest.raises(ConfigError, match=f"expected final response is required for {cls.name}"):
        await run(cls(), ScriptedChatModel([]), [turn("q", "a")], [turn("q", None)], two_rubrics(cls))


@pytest.mark.asyncio
@pytest.mark.parametrize("cls", [RubricResponseEvaluator, RubricKnowledgeRecallEvaluator], ids=[IDS[0], IDS[3]])
async def test_other_rubric_judges_need_no_expected_output(cls: type[RubricJudgeEvaluator]) -> None:
    judge = ScriptedChatModel([rubric_reply(("1", 1, "x"), ("2", 1, "y"))])
    result = await run(cls(), judge, [turn("q", "a")], [turn("q", None)], two_rubrics(cls))
    assert result.overall_score == 1.0


# ----------------------------------------------------------------------------- samples and turns


@pytest.mark.asyncio
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
async def test_majority_vote_over_samples(cls: type[RubricJudgeEvaluator]) -> None:
    judge = ScriptedChatModel(
        [
            rubric_reply(("1", 0, "f1"), ("2", 0, "f2")),
            rubric_reply(("1", 1, "p1"), ("2", 1, "p2")),
            rubric_reply(("1", 1, "q1"), ("2", 0, "q2")),
        ]
    )
    result = await run(cls(), judge, [turn("q", "a")], eval_metric=two_rubrics(cls, threshold=0.5), samples=3)
    (only,) = result.per_invocation_results
    assert only.score == 1.0
    assert only.details is not None and only.details.reason == "p1\np2"


@pytest.mark.asyncio
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
async def test_a_tie_between_samples_fails(cls: type[RubricJudgeEvaluator]) -> None:
    judge = ScriptedChatModel(
        [rubric_reply(("1", 1, "p1"), ("2", 1, "p2")), rubric_reply(("1", 0, "f1"), ("2", 0, "f2"))]
    )
    result = await run(cls(), judge, [turn("q", "a")], eval_metric=two_rubrics(cls), samples=2)
    (only,) = result.per_invocation_results
    assert (only.score, only.status) == (0.0, EvalStatus.FAILED)
    assert only.details is not None and only.details.reason == "f1\nf2"


@pytest.mark.asyncio
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
async def test_turns_are_averaged(cls: type[RubricJudgeEvaluator]) -> None:
    judge = ScriptedChatModel([rubric_reply(("1", 1, "x"), ("2", 1, "y")), rubric_reply(("1", 0, "x"), ("2", 0, "y"))])
    actuals = [turn("q1", "a1"), turn("q2", "a2")]
    result = await run(cls(), judge, actuals, eval_metric=two_rubrics(cls, threshold=0.6))
    assert [r.score for r in result.per_invocation_results] == [1.0, 0.0]
    assert (result.overall_score, result.overall_status) == (0.5, EvalStatus.FAILED)


@pytest.mark.asyncio
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
async def test_samples_run_concurrently_when_enabled(cls: type[RubricJudgeEvaluator]) -> None:
    judge = GateJudge(3, ScriptedChatModel([rubric_reply(("1", 1, "x"), ("2", 1, "y"))] * 3))
    eval_metric = two_rubrics(cls, parallel=True, parallelism=3)
    result = await run(cls(), judge, [turn("q", "a")], eval_metric=eval_metric, samples=3)
    assert judge.max_in_flight == 3
    assert result.overall_score == 1.0


# ----------------------------------------------------------------------------- through the service


@pytest.mark.asyncio
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
async def test_local_service_records_rubric_scores_per_turn(cls: type[RubricJudgeEvaluator]) -> None:
    judge = ScriptedChatModel([rubric_reply(("1", 1, "x"), ("2", 0, "y"))])
    case = await run_service(cls(), judge, two_rubrics(cls, threshold=0.5), [turn("prompt", "answer")])
    assert case.error_message == ""
    (per_turn,) = case.eval_metric_result_per_invocation
    (result,) = per_turn.eval_metric_results
    assert result.details is not None
    assert [s.id for s in result.details.rubric_scores] == ["1", "2"]
    assert result.score == 0.5
    dumped = case.model_dump(mode="json", by_alias=True)
    turn_details = dumped["evalMetricResultPerInvocation"][0]["evalMetricResults"][0]["details"]
    rubric_scores = [(s["id"], s["reason"], s.get("score", 0)) for s in turn_details["rubricScores"]]
    assert rubric_scores == [("1", "x", 1), ("2", "y", 0)]


@pytest.mark.asyncio
@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
async def test_local_service_fails_the_case_on_a_malformed_answer(cls: type[RubricJudgeEvaluator]) -> None:
    case = await run_service(cls(), ScriptedChatModel(["not json"]), two_rubrics(cls), [turn("prompt", "answer")])
    assert case.final_eval_status == EvalStatus.FAILED
    assert f"metric {cls.name}" in case.error_message
    assert "not valid JSON" in case.error_message
