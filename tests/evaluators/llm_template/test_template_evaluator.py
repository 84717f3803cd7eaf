"""``TemplateJudgeEvaluator``: operators by name, the judge pipeline and criterion materialisation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from agenteval.errors import AgentEvalError, ConfigError, NotFoundError
from agenteval.evalresult.models import ScoreKind
from agenteval.evalset.message import Message
from agenteval.evalset.models import Invocation, RubricContent
from agenteval.evaluators.base import EvaluateResult, PerInvocationResult, status_for
from agenteval.evaluators.llm.operators import OperatorRegistry, ScoreResult
from agenteval.evaluators.llm.scorers import default_operators
from agenteval.evaluators.llm.template import TemplateJudgeEvaluator
from agenteval.evaluators.registry import default_registry
from agenteval.llm.base import ChatResponse, StructuredOutput
from agenteval.llm.judge import JudgeOverride, use_judge
from agenteval.metric.criterion import CategoryScore, Criterion, LLMCriterion, ResponseScorerOptions, Rubric
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus
from agenteval.testing import ScriptedChatModel
from tests.evaluators.llm_template import ANSWER, template_metric, turn

PASSED, FAILED = EvalStatus.PASSED, EvalStatus.FAILED


async def run(
    metric: EvalMetric,
    judge: ScriptedChatModel,
    actuals: Sequence[Invocation] = (),
    expecteds: Sequence[Invocation] = (),
    *,
    samples: int = 1,
    evaluator: TemplateJudgeEvaluator | None = None,
) -> EvaluateResult:
    actuals = list(actuals) or [turn()]
    expecteds = list(expecteds) or [turn() for _ in actuals]
    with use_judge(JudgeOverride(judge, num_samples=samples)):
        return await (evaluator or TemplateJudgeEvaluator()).evaluate(actuals, expecteds, metric)


def score(value: float, reason: str = "r") -> str:
    return f'{{"score": {value}, "reason": "{reason}"}}'


def test_metadata() -> None:
    assert TemplateJudgeEvaluator.name == "llm_judge_template"
    assert TemplateJudgeEvaluator.description == "LLM template judge evaluator"


@pytest.mark.asyncio
async def test_each_turn_is_judged_with_its_rendered_prompt_and_the_scorer_schema() -> None:
    judge = ScriptedChatModel([score(1, "right"), score(0.25, "weak")])
    actuals = [turn("q1", "a1"), turn("q2", "a2")]
    expecteds = [turn("q1", "r1"), turn("q2", "r2")]
    result = await run(template_metric(), judge, actuals, expecteds)

    assert [request.messages for request in judge.requests] == [
        [Message.user("Q: q1\nA: a1\nR: r1")],
        [Message.user("Q: q2\nA: a2\nR: r2")],
    ]
    schemas = [request.structured_output for request in judge.requests]
    assert [s.name if s else None for s in schemas] == ["single_score_result", "single_score_result"]
    assert all(request.generation is not None and not request.generation.stream for request in judge.requests)

    assert result.overall_score == pytest.approx(0.625)
    assert result.overall_status == PASSED
    turns = result.per_invocation_results
    assert [(t.score, t.status) for t in turns] == [(1.0, PASSED), (0.25, FAILED)]
    assert [t.details.reason for t in turns if t.details] == ["right", "weak"]
    assert [t.actual_invocation for t in turns] == actuals
    assert [t.expected_invocation for t in turns] == expecteds


CATEGORIES = ResponseScorerOptions(categories=[CategoryScore(label="good", score=1), CategoryScore(label="bad")])

VALUE_KINDS = [
    # (scorer, template fields, judge answer, score, kind, typed value)
    ("single_score", {}, score(0.5), 0.5, ScoreKind.NUMERIC, 0.5),
    ("boolean", {}, '{"passed": true, "reason": "ok"}', 1.0, ScoreKind.BOOLEAN, True),
    ("boolean", {}, '{"passed": false, "reason": "no"}', 0.0, ScoreKind.BOOLEAN, False),
    ("categorical", {"response_scorer_options": CATEGORIES}, '{"category": "good", "reason": "ok"}', 1.0,
     ScoreKind.CATEGORICAL, "good"),
    ("categorical", {"response_scorer_options": CATEGORIES}, '{"category": "meh", "reason": "?"}', 0.0,
     ScoreKind.CATEGORICAL, "meh"),
    ("rubric_scores", {}, '{"rubricScores": [{"id": "a", "score": 1, "reason": "x"}, {"id": "b", "score": 0, '
     '"reason": "y"}]}', 0.5, ScoreKind.NUMERIC, 0.5),
]  # fmt: skip


@pytest.mark.parametrize(("scorer", "fields", "answer", "expected", "kind", "typed"), VALUE_KINDS)
@pytest.mark.asyncio
async def test_score_value_kind_per_turn(
    scorer: str, fields: dict[str, Any], answer: str, expected: float, kind: ScoreKind, typed: object
) -> None:
    judge = ScriptedChatModel([answer])
    result = await run(template_metric("{{answer}}", scorer, ANSWER, **fields), judge)
    details = result.per_invocation_results[0].details
    assert details is not None and details.value is not None
    assert details.value.kind == kind
    assert {ScoreKind.NUMERIC: details.value.numeric, ScoreKind.BOOLEAN: details.value.boolean}.get(
        kind, details.value.categorical
    ) == typed
    assert result.overall_score == expected
    assert judge.requests[0].structured_output is not None
    assert judge.requests[0].structured_output.name == f"{scorer}_result"


@pytest.mark.asyncio
async def test_rubric_scores_follow_the_metric_rubrics() -> None:
    rubrics = [Rubric(id="r1", content=RubricContent(text="correct"))]
    metric = template_metric("{{answer}}", "rubric_scores", ANSWER, rubrics=rubrics)
    result = await run(metric, ScriptedChatModel(['{"rubricScores": [{"id": "r1", "score": 1, "reason": "ok"}]}']))
    details = result.per_invocation_results[0].details
    assert details is not None and [r.id for r in details.rubric_scores] == ["r1"]
    with pytest.raises(AgentEvalError, match='score based on response: .*"zz"'):
        await run(metric, ScriptedChatModel(['{"rubricScores": [{"id": "zz", "score": 1, "reason": "ok"}]}']))


MAJORITY = [
    # (sampleAggregatorName, answers, chosen score, chosen reason)
    ("", [score(1, "a"), score(0, "b"), score(0.9, "c")], 1.0, "a"),
    ("majority_vote", [score(0, "a"), score(0.8, "b"), score(0.2, "c")], 0.0, "a"),
    ("majority_vote", [score(0.2, "a"), score(0.7, "b"), score(0.9, "c")], 0.7, "b"),
    # A tie fails: the first failing sample is kept.
    ("", [score(1, "a"), score(0, "b")], 0.0, "b"),
    ("majority_vote", [score(0.4, "a"), score(0.6, "b"), score(0.9, "c"), score(0.1, "d")], 0.4, "a"),
]


@pytest.mark.parametrize(("aggregator", "answers", "chosen", "reason"), MAJORITY)
@pytest.mark.asyncio
async def test_majority_vote_by_name(aggregator: str, answers: list[str], chosen: float, reason: str) -> None:
    metric = template_metric("{{answer}}", "single_score", ANSWER, sample_aggregator_name=aggregator)
    judge = ScriptedChatModel(answers)
    result = await run(metric, judge, samples=len(answers))
    assert len(judge.requests) == len(answers)
    only = result.per_invocation_results[0]
    assert only.score == chosen
    assert only.details is not None and only.details.reason == reason


@pytest.mark.asyncio
async def test_multi_turn_results_are_averaged() -> None:
    judge = ScriptedChatModel([score(1), score(0), score(0.5)])
    result = await run(template_metric(threshold=0.6), judge, [turn("q1"), turn("q2"), turn("q3")])
    assert [t.score for t in result.per_invocation_results] == [1.0, 0.0, 0.5]
    assert result.overall_score == pytest.approx(0.5)
    assert result.overall_status == FAILED


def _length_scorer(response: ChatResponse, metric: EvalMetric) -> ScoreResult:
    return ScoreResult(score=min(len(response.content) / 10, 1.0), reason=f"length {len(response.content)}")


def _highest(samples: Sequence[PerInvocationResult], metric: EvalMetric) -> PerInvocationResult:
    return max(samples, key=lambda sample: sample.score)


def _lowest_turn(results: Sequence[PerInvocationResult], metric: EvalMetric) -> EvaluateResult:
    low = min(result.score for result in results)
    return EvaluateResult(
        overall_score=low, overall_status=status_for(low, metric.threshold), per_invocation_results=list(results)
    )


def _custom_operators() -> OperatorRegistry:
    operators = default_operators()
    operators.register_response_scorer("length", _length_scorer)
    operators.register_samples_aggregator("highest", _highest)
    operators.register_invocations_aggregator("lowest", _lowest_turn)
    operators.register_structured_output(
        "free_text", lambda metric: StructuredOutput(name="free_text_result", schema={"type": "string"})
    )
    return operators


@pytest.mark.asyncio
async def test_custom_operators_are_used_by_name() -> None:
    evaluator = TemplateJudgeEvaluator(operators=_custom_operators())
    metric = template_metric(
        "{{answer}}",
        "length",
        ANSWER,
        sample_aggregator_name="highest",
        invocation_aggregator_name="lowest",
    )
    judge = ScriptedChatModel(["abc", "abcdefgh", "a", "abcdef"])
    result = await run(metric, judge, [turn("q1"), turn("q2")], samples=2, evaluator=evaluator)

    # A custom scorer has no default schema.
    assert [request.structured_output for request in judge.requests] == [None] * 4
    assert [t.score for t in result.per_invocation_results] == [pytest.approx(0.8), pytest.approx(0.6)]
    assert result.overall_score == pytest.approx(0.6)
    assert result.overall_status == PASSED

    named = template_metric("{{answer}}", "length", ANSWER, structured_output_name="free_text")
    judge = ScriptedChatModel(["abcdefghij"])
    result = await run(named, judge, evaluator=evaluator)
    assert judge.requests[0].structured_output is not None
    assert judge.requests[0].structured_output.name == "free_text_result"
    assert result.overall_score == 1.0


def test_default_registries_do_not_share_operators() -> None:
    first, second = default_registry(), default_registry()
    template = first.get("llm_judge_template")
    assert isinstance(template, TemplateJudgeEvaluator)

    template.operators.register_response_scorer("mine", _length_scorer)

    other = second.get("llm_judge_template")
    assert isinstance(other, TemplateJudgeEvaluator)
    assert other.operators is not template.operators
    with pytest.raises(NotFoundError, match="response scorer 'mine' is not registered"):
        other.operators.response_scorer("mine")
    assert all(first.get(name) is not second.get(name) for name in first.names())


@pytest.mark.asyncio
async def test_structured_output_name_overrides_the_scorer_default() -> None:
    metric = template_metric("{{answer}}", "single_score", ANSWER, structured_output_name="boolean")
    judge = ScriptedChatModel([score(1)])
    await run(metric, judge)
    assert judge.requests[0].structured_output is not None
    assert judge.requests[0].structured_output.name == "boolean_result"


def test_structured_output_resolution() -> None:
    evaluator = TemplateJudgeEvaluator(operators=_custom_operators())
    cases = [
        (template_metric(scorer="single_score"), "single_score_result"),
        (template_metric(scorer="boolean"), "boolean_result"),
        (template_metric(scorer="rubric_scores"), "rubric_scores_result"),
        (template_metric(scorer="categorical", response_scorer_options=CATEGORIES), "categorical_result"),
        (template_metric(scorer="single_score", structured_output_name="rubric_scores"), "rubric_scores_result"),
        (template_metric(scorer="single_score", structured_output_name="categorical_result",
                         response_scorer_options=CATEGORIES), "categorical_result"),
        (template_metric(scorer="length", structured_output_name="free_text"), "free_text_result"),
        (template_metric(scorer="length"), None),
    ]  # fmt: skip
    for metric, name in cases:
        output = evaluator.structured_output([], [], metric)
        assert (output.name if output else None) == name


UNKNOWN_NAMES = [
    ({"response_scorer_name": "missing"}, "response scorer 'missing' is not registered"),
    ({"sample_aggregator_name": "missing"}, "samples aggregator 'missing' is not registered"),
    ({"invocation_aggregator_name": "missing"}, "invocations aggregator 'missing' is not registered"),
    ({"structured_output_name": "missing"}, "structured output 'missing' is not registered"),
]


@pytest.mark.parametrize(("fields", "message"), UNKNOWN_NAMES)
@pytest.mark.asyncio
async def test_unknown_operator_names_fail_before_any_judge_call(fields: dict[str, Any], message: str) -> None:
    metric = template_metric()
    assert metric.criterion and metric.criterion.llm_judge and metric.criterion.llm_judge.template
    template = metric.criterion.llm_judge.template
    metric.criterion.llm_judge.template = template.model_copy(update=fields)
    judge = ScriptedChatModel([score(1)])
    with pytest.raises(ConfigError) as caught:
        await run(metric, judge)
    assert message in str(caught.value)
    assert "registered: [" in str(caught.value)
    assert judge.requests == []


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        (EvalMetric(metric_name="m", criterion=Criterion(llm_judge=LLMCriterion())), "template is nil"),
        (template_metric(scorer=""), "template responseScorerName is empty"),
        (template_metric(""), "template prompt is empty"),
    ],
)
@pytest.mark.asyncio
async def test_invalid_templates_fail_before_any_judge_call(metric: EvalMetric, message: str) -> None:
    judge = ScriptedChatModel([score(1)])
    with pytest.raises(ConfigError, match=message):
        await run(metric, judge)
    assert judge.requests == []


@pytest.mark.asyncio
async def test_render_and_judge_errors_fail_the_evaluation() -> None:
    with pytest.raises(AgentEvalError) as caught:
        await run(template_metric(), ScriptedChatModel([score(1)]), [turn()], [turn(answer=None)])
    assert str(caught.value) == (
        'construct messages: resolve template variable "reference": expected finalResponse is empty'
    )
    with pytest.raises(AgentEvalError, match="score based on response: score must be between 0 and 1"):
        await run(template_metric(), ScriptedChatModel([score(2)]))
    with pytest.raises(AgentEvalError, match="score based on response: .*not valid JSON"):
        await run(template_metric(), ScriptedChatModel(["I think it is fine."]))


def test_materialize_criterion_renders_the_last_turn() -> None:
    metric = template_metric()
    evaluator = TemplateJudgeEvaluator()
    actuals = [turn("q1", "a1"), turn("q2", "a2")]
    expecteds = [turn("q1", "r1"), turn("q2", "r2")]
    first = evaluator.materialize_criterion(metric, actuals[:1], expecteds[:1])
    second = evaluator.materialize_criterion(metric, actuals, expecteds)
    prompts = [c.llm_judge.template.prompt for c in (first, second) if c and c.llm_judge and c.llm_judge.template]
    assert prompts == ["Q: q1\nA: a1\nR: r1", "Q: q2\nA: a2\nR: r2"]
    assert metric == template_metric()  # the metric itself is untouched
    assert second is not None and metric.criterion is not None
    # Only the prompt differs from the configured criterion.
    configured = metric.criterion.model_copy(deep=True)
    assert configured.llm_judge is not None and configured.llm_judge.template is not None
    configured.llm_judge.template.prompt = "Q: q2\nA: a2\nR: r2"
    assert second == configured


def test_materialize_criterion_without_template_is_a_copy() -> None:
    evaluator = TemplateJudgeEvaluator()
    plain = EvalMetric(metric_name="m", criterion=Criterion(llm_judge=LLMCriterion(rubrics=[Rubric(id="a")])))
    copied = evaluator.materialize_criterion(plain, [turn()], [turn()])
    assert copied == plain.criterion and copied is not plain.criterion
    assert evaluator.materialize_criterion(EvalMetric(metric_name="m"), [turn()], [turn()]) is None


class SystemPromptEvaluator(TemplateJudgeEvaluator):
    """Adds a system message, to show how several judge messages are stored."""

    def render_messages(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> list[Message]:
        return [Message.system("Be strict."), *super().render_messages(actuals, expecteds, metric)]


@pytest.mark.asyncio
async def test_several_messages_are_materialized_as_role_blocks() -> None:
    evaluator = SystemPromptEvaluator()
    metric = template_metric("A: {{answer}}", "single_score", ANSWER)
    criterion = evaluator.materialize_criterion(metric, [turn()], [turn()])
    assert criterion and criterion.llm_judge and criterion.llm_judge.template
    assert criterion.llm_judge.template.prompt == "[system]\nBe strict.\n\n[user]\nA: Paris"
    judge = ScriptedChatModel([score(1)])
    await run(metric, judge, evaluator=evaluator)
    assert judge.requests[0].messages == [Message.system("Be strict."), Message.user("A: Paris")]


def test_check_metric_leaves_user_schemas_to_the_cases() -> None:
    # A user schema may need rubrics that only the cases add, so it is not built ahead.
    def needs_rubrics(metric: EvalMetric) -> StructuredOutput:
        raise ConfigError("no rubrics yet")

    operators = default_operators()
    operators.register_structured_output("by_rubric", needs_rubrics)
    evaluator = TemplateJudgeEvaluator(operators)
    metric = template_metric("{{answer}}", "rubric_scores", ANSWER, structured_output_name="by_rubric")

    with use_judge(JudgeOverride(ScriptedChatModel([]))):
        evaluator.check_metric(metric)


@pytest.mark.parametrize("scorer", ["categorical", "my_categorical"])
def test_check_metric_checks_the_categories_of_the_builtin_categorical_scorer(scorer: str) -> None:
    operators = default_operators()
    operators.register_response_scorer("my_categorical", operators.response_scorer("categorical"))
    evaluator = TemplateJudgeEvaluator(operators)
    empty = template_metric(
        "{{answer}}", scorer, ANSWER, structured_output_name="single_score", response_scorer_options={"categories": []}
    )

    with use_judge(JudgeOverride(ScriptedChatModel([]))), pytest.raises(ConfigError, match="categories are required"):
        evaluator.check_metric(empty)
