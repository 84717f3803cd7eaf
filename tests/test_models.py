"""The persisted data model: JSON key spelling, typed scores, judge-model options, enum validation."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from agenteval._util.files import dump_models, parse_json
from agenteval._util.trpc_json import WireModel
from agenteval.errors import ConfigError, UnknownFieldWarning
from agenteval.evalresult.models import (
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultDetails,
    EvalMetricResultPerInvocation,
    EvalSetResult,
    RubricScore,
    ScoreKind,
    ScoreValue,
)
from agenteval.evalresult.summary import (
    EvalCaseResultSummary,
    EvalCaseRunSummary,
    EvalMetricRunSummary,
    EvalMetricSummary,
    EvalSetResultSummary,
    EvalSetRunSummary,
    EvalStatusCounts,
)
from agenteval.evalset.message import Message, Role
from agenteval.evalset.models import (
    ArgumentsMatch,
    ConversationScenario,
    EvalCase,
    EvalCaseRubric,
    EvalMode,
    EvalSet,
    Invocation,
    LLMGenerator,
    MockTool,
    RubricContent,
    ScenarioDriver,
    SessionInput,
    Tool,
    ToolMock,
)
from agenteval.evalset.trace import ExecutionTrace, TraceSkill, TraceSnapshot, TraceStep, TraceTool
from agenteval.metric.criterion import (
    CategoryScore,
    Criterion,
    FinalResponseCriterion,
    GenerationConfig,
    JSONCriterion,
    JSONMatchStrategy,
    JudgeModelOptions,
    JudgeTemplateOptions,
    LengthCriterion,
    LLMCriterion,
    ResponseScorerOptions,
    RougeCriterion,
    RougeMeasure,
    RougeThreshold,
    Rubric,
    TemplateVariableBinding,
    TemplateVariableField,
    TemplateVariableScope,
    TemplateVariableSelector,
    TemplateVariableSource,
    TextCriterion,
    TextMatchStrategy,
    ToolTrajectoryCriterion,
    ToolTrajectoryStrategy,
    XMLCriterion,
    XMLMatchStrategy,
    expand_env,
)
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus

SECRET = "sk-test-never-written-4f2a"


def _canonical(value: Any) -> str:
    """Type-strict, order-insensitive JSON text: ``1`` differs from ``1.0`` and ``0`` from ``false``."""
    return json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False)


# --- Key spelling: each model built from Python attribute names against the JSON written by hand. ---

MESSAGE_JSON: dict[str, Any] = {
    "role": "assistant",
    "content": "calling",
    "content_parts": [{"type": "text", "text": "calling"}],
    "tool_id": "call_0",
    "tool_name": "lookup",
    "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": "{}"}, "id": "call_1"}],
    "reasoning_content": "think",
    "reasoning_signature": "sig",
}


def _message() -> Message:
    return Message(
        role=Role.ASSISTANT,
        content="calling",
        content_parts=[{"type": "text", "text": "calling"}],
        tool_id="call_0",
        tool_name="lookup",
        tool_calls=[{"type": "function", "function": {"name": "get_weather", "arguments": "{}"}, "id": "call_1"}],
        reasoning_content="think",
        reasoning_signature="sig",
    )


TRACE_JSON: dict[str, Any] = {
    "RootAgentName": "root",
    "RootInvocationID": "inv-1",
    "SessionID": "sess-1",
    "StartedAt": "2026-08-17T16:22:11.382277423+08:00",
    "EndedAt": "2026-08-17T16:22:16.213014184+08:00",
    "Status": "completed",
    "Input": {"Text": "in"},
    "Output": {"Text": "out"},
    "Usage": {"total_tokens": 3},
    "Steps": [
        {
            "StepID": "s1",
            "InvocationID": "inv-1",
            "ParentInvocationID": "inv-0",
            "AgentName": "root",
            "Branch": "root/sub",
            "NodeID": "plan",
            "NodeType": "llm",
            "StartedAt": "2026-08-17T16:22:11.4+08:00",
            "EndedAt": "2026-08-17T16:22:12+08:00",
            "PredecessorStepIDs": [],
            "AppliedSurfaceIDs": ["root#model"],
            "Input": {"Text": "step in"},
            "Output": {"Text": "step out"},
            "Usage": {},
            "Tools": [
                {"ID": "call_1", "Name": "get_weather", "Arguments": {"city": "Paris"}, "Result": 21, "Error": "x"}
            ],
            "Skills": [{"Name": "pdf"}],
            "Error": "failed",
        }
    ],
}


def _trace() -> ExecutionTrace:
    return ExecutionTrace(
        root_agent_name="root",
        root_invocation_id="inv-1",
        session_id="sess-1",
        started_at="2026-08-17T16:22:11.382277423+08:00",
        ended_at="2026-08-17T16:22:16.213014184+08:00",
        status="completed",
        input=TraceSnapshot(text="in"),
        output=TraceSnapshot(text="out"),
        usage={"total_tokens": 3},
        steps=[
            TraceStep(
                step_id="s1",
                invocation_id="inv-1",
                parent_invocation_id="inv-0",
                agent_name="root",
                branch="root/sub",
                node_id="plan",
                node_type="llm",
                started_at="2026-08-17T16:22:11.4+08:00",
                ended_at="2026-08-17T16:22:12+08:00",
                predecessor_step_ids=[],
                applied_surface_ids=["root#model"],
                input=TraceSnapshot(text="step in"),
                output=TraceSnapshot(text="step out"),
                usage={},
                tools=[TraceTool(id="call_1", name="get_weather", arguments={"city": "Paris"}, result=21, error="x")],
                skills=[TraceSkill(name="pdf")],
                error="failed",
            )
        ],
    )


EVAL_SET_JSON: dict[str, Any] = {
    "evalSetId": "weather",
    "name": "Weather",
    "description": "weather questions",
    "evalCases": [
        {
            "evalId": "paris",
            "evalMode": "trace",
            "expectedRunnerEnabled": True,
            "contextMessages": [{"role": "system", "content": "be brief"}],
            "conversation": [
                {
                    "invocationId": "paris-1",
                    "contextMessages": [{"role": "user", "content": "earlier"}],
                    "userContent": {"role": "user", "content": "Weather in Paris?"},
                    "finalResponse": {"role": "assistant", "content": "Sunny, 21C."},
                    "tools": [
                        {"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}, "result": {"tempC": 21}}
                    ],
                    "toolMock": {
                        "actual": [
                            {
                                "name": "get_weather",
                                "arguments": {
                                    "expected": {"city": "Paris"},
                                    "onlyTree": {"city": True},
                                    "numberTolerance": 0,
                                },
                                "result": {"tempC": 20},
                            },
                            {"name": "get_time", "arguments": {"ignore": True}, "result": "noon"},
                        ],
                        "expected": [
                            {
                                "name": "get_news",
                                "arguments": {"expected": {}, "ignoreTree": {"ts": True}},
                                "llmGenerator": {"prompt": "invent news"},
                            }
                        ],
                    },
                    "intermediateResponses": [{"role": "assistant", "content": "checking"}],
                    "creationTimestamp": 1700000000.5,
                }
            ],
            "conversationScenario": {
                "driver": "expected",
                "startingPrompt": "hi",
                "conversationPlan": "ask about Paris",
                "stopSignal": "</done>",
                "maxAllowedInvocations": 0,
            },
            "actualConversation": [
                {
                    "invocationId": "run-1",
                    "userContent": {"role": "user", "content": "Weather in Paris?"},
                    "executionTrace": {"RootAgentName": "root"},
                }
            ],
            "sessionInput": {"appName": "app", "userId": "u1", "state": {"tier": "gold"}},
            "rubrics": [
                {
                    "metricName": "quality",
                    "id": "r1",
                    "content": {"text": "is polite"},
                    "description": "tone",
                    "type": "TONE",
                }
            ],
            "creationTimestamp": 1700000000,
        }
    ],
    "creationTimestamp": 1761134484.9804401,
}


def _eval_set() -> EvalSet:
    question = Message.user("Weather in Paris?")
    return EvalSet(
        eval_set_id="weather",
        name="Weather",
        description="weather questions",
        eval_cases=[
            EvalCase(
                eval_id="paris",
                eval_mode=EvalMode.TRACE,
                expected_runner_enabled=True,
                context_messages=[Message.system("be brief")],
                conversation=[
                    Invocation(
                        invocation_id="paris-1",
                        context_messages=[Message.user("earlier")],
                        user_content=question,
                        final_response=Message.assistant("Sunny, 21C."),
                        tools=[
                            Tool(id="call_1", name="get_weather", arguments={"city": "Paris"}, result={"tempC": 21})
                        ],
                        tool_mock=ToolMock(
                            actual=[
                                MockTool(
                                    name="get_weather",
                                    arguments=ArgumentsMatch(
                                        expected={"city": "Paris"}, only_tree={"city": True}, number_tolerance=0.0
                                    ),
                                    result={"tempC": 20},
                                ),
                                MockTool(name="get_time", arguments=ArgumentsMatch(ignore=True), result="noon"),
                            ],
                            expected=[
                                MockTool(
                                    name="get_news",
                                    arguments=ArgumentsMatch(expected={}, ignore_tree={"ts": True}),
                                    llm_generator=LLMGenerator(prompt="invent news"),
                                )
                            ],
                        ),
                        intermediate_responses=[Message.assistant("checking")],
                        creation_timestamp=1700000000.5,
                    )
                ],
                conversation_scenario=ConversationScenario(
                    driver=ScenarioDriver.EXPECTED,
                    starting_prompt="hi",
                    conversation_plan="ask about Paris",
                    stop_signal="</done>",
                    max_allowed_invocations=0,
                ),
                actual_conversation=[
                    Invocation(
                        invocation_id="run-1",
                        user_content=question,
                        execution_trace=ExecutionTrace(root_agent_name="root"),
                    )
                ],
                session_input=SessionInput(app_name="app", user_id="u1", state={"tier": "gold"}),
                rubrics=[
                    EvalCaseRubric(
                        metric_name="quality",
                        id="r1",
                        content=RubricContent(text="is polite"),
                        description="tone",
                        type="TONE",
                    )
                ],
                creation_timestamp=1700000000.0,
            )
        ],
        creation_timestamp=1761134484.9804401,
    )


EVAL_METRIC_JSON: dict[str, Any] = {
    "metricName": "quality",
    "evaluatorName": "llm_judge_template",
    "threshold": 0.75,
    "criterion": {
        "toolTrajectory": {
            "defaultStrategy": {
                "name": {
                    "ignore": True,
                    "caseInsensitive": True,
                    "matchStrategy": "regex",
                    "length": {"ignore": True, "min": 0, "max": 10},
                    "compareName": "my_text",
                },
                "arguments": {
                    "ignore": True,
                    "ignoreTree": {"ts": True},
                    "onlyTree": {"city": True},
                    "matchStrategy": "exact",
                    "numberTolerance": 0.01,
                    "valid": True,
                    "schema": {"type": "object", "required": ["city"]},
                    "compareName": "my_json",
                },
                "result": {"matchStrategy": "skip"},
            },
            "toolStrategy": {"get_weather": {"name": {"matchStrategy": "contains"}}},
            "orderSensitive": True,
            "subsetMatching": True,
            "compareName": "my_trajectory",
        },
        "finalResponse": {
            "text": {"matchStrategy": "exact"},
            "json": {"valid": True},
            "rouge": {
                "ignore": True,
                "rougeType": "rougeLsum",
                "measure": "recall",
                "threshold": {"precision": 0.5, "recall": 0.25, "f1": 1},
                "useStemmer": True,
                "splitSummaries": True,
                "tokenizerName": "zh",
            },
            "xml": {"ignore": True, "valid": True, "matchStrategy": "skip"},
            "compareName": "my_final",
        },
        "llmJudge": {
            "rubrics": [
                {"id": "r1", "content": {"text": "mentions the weather"}, "description": "d", "type": "QUALITY"}
            ],
            "judgeModel": {
                "providerName": "openai",
                "modelName": "gpt-4o",
                "variant": "deepseek",
                "baseURL": "https://judge.invalid/v1",
                "extraFields": {"seed": 1},
                "numSamples": 3,
                "generationConfig": {
                    "max_tokens": 100,
                    "temperature": 0.5,
                    "top_p": 0.9,
                    "stream": False,
                    "stop": ["END"],
                    "presence_penalty": 0.1,
                    "frequency_penalty": 0.2,
                    "logprobs": False,
                    "top_logprobs": 0,
                    "reasoning_effort": "low",
                    "thinking_enabled": False,
                    "thinking_tokens": 0,
                    "thinking_level": "low",
                },
            },
            "sampleParallelismEnabled": True,
            "sampleParallelism": 4,
            "template": {
                "prompt": "Judge {{answer}}",
                "responseScorerName": "categorical",
                "structuredOutputName": "verdict",
                "responseScorerOptions": {"categories": [{"label": "good", "score": 1}, {"label": "bad", "score": 0}]},
                "variableBindings": [
                    {
                        "templateVariable": "answer",
                        "source": {
                            "scope": "actual",
                            "field": "traceStepOutput",
                            "selector": {"nodeID": "plan"},
                            "path": "$.answer",
                        },
                    }
                ],
                "sampleAggregatorName": "majority_vote",
                "invocationAggregatorName": "average",
            },
        },
    },
    "extension": {"weight": 2, "group": "core"},
}


def _eval_metric() -> EvalMetric:
    return EvalMetric(
        metric_name="quality",
        evaluator_name="llm_judge_template",
        threshold=0.75,
        criterion=Criterion(
            tool_trajectory=ToolTrajectoryCriterion(
                default_strategy=ToolTrajectoryStrategy(
                    name=TextCriterion(
                        ignore=True,
                        case_insensitive=True,
                        match_strategy=TextMatchStrategy.REGEX,
                        length=LengthCriterion(ignore=True, min=0, max=10),
                        compare_name="my_text",
                    ),
                    arguments=JSONCriterion(
                        ignore=True,
                        ignore_tree={"ts": True},
                        only_tree={"city": True},
                        match_strategy=JSONMatchStrategy.EXACT,
                        number_tolerance=0.01,
                        valid=True,
                        json_schema={"type": "object", "required": ["city"]},
                        compare_name="my_json",
                    ),
                    result=JSONCriterion(match_strategy=JSONMatchStrategy.SKIP),
                ),
                tool_strategy={
                    "get_weather": ToolTrajectoryStrategy(name=TextCriterion(match_strategy=TextMatchStrategy.CONTAINS))
                },
                order_sensitive=True,
                subset_matching=True,
                compare_name="my_trajectory",
            ),
            final_response=FinalResponseCriterion(
                text=TextCriterion(match_strategy=TextMatchStrategy.EXACT),
                json_=JSONCriterion(valid=True),
                rouge=RougeCriterion(
                    ignore=True,
                    rouge_type="rougeLsum",
                    measure=RougeMeasure.RECALL,
                    threshold=RougeThreshold(precision=0.5, recall=0.25, f1=1.0),
                    use_stemmer=True,
                    split_summaries=True,
                    tokenizer_name="zh",
                ),
                xml=XMLCriterion(ignore=True, valid=True, match_strategy=XMLMatchStrategy.SKIP),
                compare_name="my_final",
            ),
            llm_judge=LLMCriterion(
                rubrics=[
                    Rubric(id="r1", content=RubricContent(text="mentions the weather"), description="d", type="QUALITY")
                ],
                judge_model=JudgeModelOptions(
                    provider_name="openai",
                    model_name="gpt-4o",
                    variant="deepseek",
                    base_url="https://judge.invalid/v1",
                    extra_fields={"seed": 1},
                    num_samples=3,
                    generation_config=GenerationConfig(
                        max_tokens=100,
                        temperature=0.5,
                        top_p=0.9,
                        stream=False,
                        stop=["END"],
                        presence_penalty=0.1,
                        frequency_penalty=0.2,
                        logprobs=False,
                        top_logprobs=0,
                        reasoning_effort="low",
                        thinking_enabled=False,
                        thinking_tokens=0,
                        thinking_level="low",
                    ),
                ),
                sample_parallelism_enabled=True,
                sample_parallelism=4,
                template=JudgeTemplateOptions(
                    prompt="Judge {{answer}}",
                    response_scorer_name="categorical",
                    structured_output_name="verdict",
                    response_scorer_options=ResponseScorerOptions(
                        categories=[CategoryScore(label="good", score=1.0), CategoryScore(label="bad", score=0.0)]
                    ),
                    variable_bindings=[
                        TemplateVariableBinding(
                            template_variable="answer",
                            source=TemplateVariableSource(
                                scope=TemplateVariableScope.ACTUAL,
                                field=TemplateVariableField.TRACE_STEP_OUTPUT,
                                selector=TemplateVariableSelector(node_id="plan"),
                                path="$.answer",
                            ),
                        )
                    ],
                    sample_aggregator_name="majority_vote",
                    invocation_aggregator_name="average",
                ),
            ),
        ),
        extension={"weight": 2, "group": "core"},
    )


_COUNTS_JSON: dict[str, Any] = {"passed": 1, "failed": 2, "notEvaluated": 3}
_METRIC_SUMMARY_JSON: dict[str, Any] = {
    "metricName": "exact",
    "averageScore": 0.5,
    "evalStatus": "failed",
    "threshold": 1,
    "statusCounts": {"passed": 1, "failed": 1},
}

EVAL_SET_RESULT_JSON: dict[str, Any] = {
    "evalSetResultId": "app_weather_8d3c",
    "evalSetResultName": "nightly",
    "evalSetId": "weather",
    "evalCaseResults": [
        {
            "evalSetId": "weather",
            "evalId": "paris",
            "runId": 2,
            "score": 0.5,
            "finalEvalStatus": "failed",
            "errorMessage": "judge timed out",
            "overallEvalMetricResults": [
                {
                    "metricName": "exact",
                    "score": 0.5,
                    "evalStatus": "failed",
                    "threshold": 1,
                    "criterion": {"finalResponse": {"text": {"matchStrategy": "contains"}}},
                    "details": {
                        "reason": "a;b",
                        "score": 0.5,
                        "rubricScores": [{"id": "r1", "reason": "fine", "score": 1}],
                    },
                }
            ],
            "evalMetricResultPerInvocation": [
                {
                    "actualInvocation": {
                        "invocationId": "run-1",
                        "finalResponse": {"role": "assistant", "content": "x"},
                    },
                    "expectedInvocation": {"invocationId": "paris-1"},
                    "evalMetricResults": [
                        {
                            "metricName": "exact",
                            "evalStatus": "not_evaluated",
                            "details": {"value": {"kind": "numeric", "numeric": 0}},
                        }
                    ],
                }
            ],
            "sessionId": "sess-1",
            "userId": "u1",
        }
    ],
    "summary": {
        "overallStatus": "failed",
        "numRuns": 2,
        "runStatusCounts": _COUNTS_JSON,
        "runSummaries": [
            {
                "runId": 1,
                "overallStatus": "passed",
                "caseStatusCounts": {"passed": 1},
                "metricSummaries": [_METRIC_SUMMARY_JSON],
            }
        ],
        "evalCaseSummaries": [
            {
                "evalId": "paris",
                "overallStatus": "failed",
                "runStatusCounts": {"failed": 2},
                "metricSummaries": [_METRIC_SUMMARY_JSON],
                "runSummaries": [
                    {
                        "runId": 2,
                        "finalEvalStatus": "failed",
                        "errorMessage": "judge timed out",
                        "metricResults": [
                            {"metricName": "exact", "score": 0.25, "evalStatus": "failed", "threshold": 0.5}
                        ],
                    }
                ],
            }
        ],
    },
    "creationTimestamp": 1700000000,
}


def _eval_set_result() -> EvalSetResult:
    metric_summary = EvalMetricSummary(
        metric_name="exact",
        average_score=0.5,
        eval_status=EvalStatus.FAILED,
        threshold=1.0,
        status_counts=EvalStatusCounts(passed=1, failed=1),
    )
    return EvalSetResult(
        eval_set_result_id="app_weather_8d3c",
        eval_set_result_name="nightly",
        eval_set_id="weather",
        eval_case_results=[
            EvalCaseResult(
                eval_set_id="weather",
                eval_id="paris",
                run_id=2,
                score=0.5,
                final_eval_status=EvalStatus.FAILED,
                error_message="judge timed out",
                overall_eval_metric_results=[
                    EvalMetricResult(
                        metric_name="exact",
                        score=0.5,
                        eval_status=EvalStatus.FAILED,
                        threshold=1.0,
                        criterion=Criterion(
                            final_response=FinalResponseCriterion(
                                text=TextCriterion(match_strategy=TextMatchStrategy.CONTAINS)
                            )
                        ),
                        details=EvalMetricResultDetails(
                            reason="a;b", score=0.5, rubric_scores=[RubricScore(id="r1", reason="fine", score=1.0)]
                        ),
                    )
                ],
                eval_metric_result_per_invocation=[
                    EvalMetricResultPerInvocation(
                        actual_invocation=Invocation(invocation_id="run-1", final_response=Message.assistant("x")),
                        expected_invocation=Invocation(invocation_id="paris-1"),
                        eval_metric_results=[
                            EvalMetricResult(
                                metric_name="exact",
                                eval_status=EvalStatus.NOT_EVALUATED,
                                details=EvalMetricResultDetails(value=ScoreValue(kind=ScoreKind.NUMERIC, numeric=0.0)),
                            )
                        ],
                    )
                ],
                session_id="sess-1",
                user_id="u1",
            )
        ],
        summary=EvalSetResultSummary(
            overall_status=EvalStatus.FAILED,
            num_runs=2,
            run_status_counts=EvalStatusCounts(passed=1, failed=2, not_evaluated=3),
            run_summaries=[
                EvalSetRunSummary(
                    run_id=1,
                    overall_status=EvalStatus.PASSED,
                    case_status_counts=EvalStatusCounts(passed=1),
                    metric_summaries=[metric_summary],
                )
            ],
            eval_case_summaries=[
                EvalCaseResultSummary(
                    eval_id="paris",
                    overall_status=EvalStatus.FAILED,
                    run_status_counts=EvalStatusCounts(failed=2),
                    metric_summaries=[metric_summary],
                    run_summaries=[
                        EvalCaseRunSummary(
                            run_id=2,
                            final_eval_status=EvalStatus.FAILED,
                            error_message="judge timed out",
                            metric_results=[
                                EvalMetricRunSummary(
                                    metric_name="exact", score=0.25, eval_status=EvalStatus.FAILED, threshold=0.5
                                )
                            ],
                        )
                    ],
                )
            ],
        ),
        creation_timestamp=1700000000.0,
    )


KEY_SPELLING_CASES: list[tuple[Callable[[], WireModel], dict[str, Any]]] = [
    (_message, MESSAGE_JSON),
    (_trace, TRACE_JSON),
    (_eval_set, EVAL_SET_JSON),
    (_eval_metric, EVAL_METRIC_JSON),
    (_eval_set_result, EVAL_SET_RESULT_JSON),
]


@pytest.mark.parametrize(
    ("build", "document"), KEY_SPELLING_CASES, ids=["message", "trace", "evalset", "metric", "evalset_result"]
)
def test_models_write_the_reference_keys(build: Callable[[], WireModel], document: dict[str, Any]) -> None:
    assert _canonical(build().to_dict()) == _canonical(document)
    assert _canonical(json.loads(build().to_json())) == _canonical(document)


@pytest.mark.parametrize(
    ("build", "document"), KEY_SPELLING_CASES, ids=["message", "trace", "evalset", "metric", "evalset_result"]
)
def test_models_read_the_reference_keys(build: Callable[[], WireModel], document: dict[str, Any]) -> None:
    expected = build()
    loaded = type(expected).from_json(json.dumps(document))
    assert loaded == expected
    assert loaded.model_extra == {}


# --- ScoreValue: pointer fields. ---


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (ScoreValue(), {}),
        (ScoreValue(kind=ScoreKind.NUMERIC, numeric=0.0), {"kind": "numeric", "numeric": 0}),
        (ScoreValue(kind=ScoreKind.NUMERIC, numeric=0.5), {"kind": "numeric", "numeric": 0.5}),
        (ScoreValue(kind=ScoreKind.BOOLEAN, boolean=False), {"kind": "boolean", "boolean": False}),
        (ScoreValue(kind=ScoreKind.CATEGORICAL, categorical=""), {"kind": "categorical"}),
        (ScoreValue(kind=ScoreKind.CATEGORICAL, categorical="good"), {"kind": "categorical", "categorical": "good"}),
    ],
    ids=["unset", "numeric-zero", "numeric", "boolean-false", "categorical-empty", "categorical"],
)
def test_score_value_writes_numeric_zero_and_boolean_false_when_set(
    value: ScoreValue, expected: dict[str, Any]
) -> None:
    assert _canonical(value.to_dict()) == _canonical(expected)
    reloaded = ScoreValue.from_json(value.to_json())
    assert (reloaded.numeric, reloaded.boolean) == (value.numeric, value.boolean)


def test_score_value_loaded_from_reference_json_keeps_zero_and_false() -> None:
    value = ScoreValue.from_json('{"kind": "boolean", "numeric": 0, "boolean": false}')
    assert value.numeric == 0.0
    assert value.boolean is False


# --- EvalSet details. ---


def test_null_eval_cases_are_skipped() -> None:
    loaded = EvalSet.from_json('{"evalSetId": "s", "evalCases": [null, {"evalId": "a"}, null, {"evalId": "b"}]}')
    assert [case.eval_id for case in loaded.eval_cases] == ["a", "b"]
    assert loaded.to_dict() == {"evalSetId": "s", "evalCases": [{"evalId": "a"}, {"evalId": "b"}]}


def test_eval_set_case_lookup() -> None:
    loaded = EvalSet.from_json('{"evalCases": [{"evalId": "a", "evalMode": "trace"}, {"evalId": "a"}]}')
    first = loaded.case("a")
    assert first is not None and first.eval_mode is EvalMode.TRACE
    assert loaded.case("missing") is None


@pytest.mark.parametrize(
    ("metric", "evaluator"),
    [
        (EvalMetric(metric_name="tool_trajectory_avg_score"), "tool_trajectory_avg_score"),
        (
            EvalMetric(metric_name="strict_tools", evaluator_name="tool_trajectory_avg_score"),
            "tool_trajectory_avg_score",
        ),
        (EvalMetric(), ""),
    ],
)
def test_eval_metric_evaluator_falls_back_to_metric_name(metric: EvalMetric, evaluator: str) -> None:
    assert metric.evaluator == evaluator


# --- Judge model options: environment expansion. ---

_EXPANDED_FIELDS = [
    ("providerName", "provider_name"),
    ("modelName", "model_name"),
    ("variant", "variant"),
    ("baseURL", "base_url"),
    ("apiKey", "api_key"),
]


@pytest.fixture
def judge_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTEVAL_TEST_JUDGE", "value")
    monkeypatch.delenv("AGENTEVAL_TEST_UNSET", raising=False)


@pytest.mark.usefixtures("judge_env")
@pytest.mark.parametrize(("key", "attribute"), _EXPANDED_FIELDS)
def test_judge_model_options_expand_environment_references(key: str, attribute: str) -> None:
    raw = "${AGENTEVAL_TEST_JUDGE}|$AGENTEVAL_TEST_JUDGE|${AGENTEVAL_TEST_UNSET}|$AGENTEVAL_TEST_UNSET|$"
    options = JudgeModelOptions.from_json(json.dumps({key: raw}))
    assert getattr(options, attribute) == "value|value|||$"


@pytest.mark.usefixtures("judge_env")
def test_judge_model_expansion_applies_inside_metrics_and_results() -> None:
    judge = {"llmJudge": {"judgeModel": {"modelName": "$AGENTEVAL_TEST_JUDGE", "baseURL": "${AGENTEVAL_TEST_UNSET}"}}}
    metrics = TypeAdapter(list[EvalMetric]).validate_json(json.dumps([{"criterion": judge}]), strict=True)
    result = EvalSetResult.from_json(
        json.dumps({"evalCaseResults": [{"overallEvalMetricResults": [{"criterion": judge}]}]})
    )
    result_criterion = result.eval_case_results[0].overall_eval_metric_results[0].criterion
    for criterion in (metrics[0].criterion, result_criterion):
        assert criterion is not None and criterion.llm_judge is not None
        assert criterion.llm_judge.judge_model == JudgeModelOptions(model_name="value")


@pytest.mark.usefixtures("judge_env")
def test_only_the_judge_model_connection_fields_are_expanded() -> None:
    text = "$AGENTEVAL_TEST_JUDGE ${AGENTEVAL_TEST_JUDGE}"
    options = JudgeModelOptions.from_json(
        json.dumps({"extraFields": {"header": text}, "generationConfig": {"reasoning_effort": text}})
    )
    assert options.extra_fields == {"header": text}
    assert options.generation_config is not None and options.generation_config.reasoning_effort == text
    rubric = Rubric.from_json(json.dumps({"content": {"text": text}}))
    assert rubric.content is not None and rubric.content.text == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${A}", "a"),
        ("$A", "a"),
        ("pre-${A}-post", "pre-a-post"),
        ("$A-b", "a-b"),
        ("$A_B", ""),
        ("${A}${A}", "aa"),
        ("${UNSET_VAR}", ""),
        ("$UNSET_VAR", ""),
        ("no reference", "no reference"),
        ("trailing $", "trailing $"),
        ("a $ b", "a $ b"),
        ("100$%", "100$%"),
        ("${}", ""),
        ("x${A", "xA"),
        ("$1x", "x"),
        ("$$", ""),
        ("${A B}", ""),
    ],
)
def test_expand_env_follows_go_os_expand_env(monkeypatch: pytest.MonkeyPatch, text: str, expected: str) -> None:
    monkeypatch.setenv("A", "a")
    for name in ("A_B", "UNSET_VAR", "1", "$", "A B"):
        monkeypatch.delenv(name, raising=False)
    assert expand_env(text) == expected


# --- Judge model options: the api key is never written. ---


def _judge_metric(api_key_json: str = '"apiKey": "' + SECRET + '"') -> str:
    return (
        '{"metricName": "judge", "criterion": {"llmJudge": {"judgeModel": '
        '{"providerName": "openai", "modelName": "gpt", ' + api_key_json + "}}}}"
    )


def _secret_holders() -> dict[str, WireModel]:
    options = JudgeModelOptions(provider_name="openai", api_key=SECRET)
    metric = EvalMetric.from_json(_judge_metric())
    criterion = metric.criterion
    result = EvalSetResult(
        eval_case_results=[
            EvalCaseResult(
                overall_eval_metric_results=[EvalMetricResult(metric_name="judge", criterion=criterion)],
                eval_metric_result_per_invocation=[
                    EvalMetricResultPerInvocation(
                        eval_metric_results=[EvalMetricResult(metric_name="judge", criterion=criterion)]
                    )
                ],
            )
        ]
    )
    return {"options": options, "metric": metric, "result": result}


_SERIALIZERS: dict[str, Callable[[WireModel], str]] = {
    "to_json": lambda model: model.to_json(),
    "to_json-compact": lambda model: model.to_json(indent=None),
    "to_dict": lambda model: repr(model.to_dict()),
    "model_dump_json": lambda model: model.model_dump_json(),
    "model_dump": lambda model: repr(model.model_dump()),
    "model_dump-by-name": lambda model: repr(model.model_dump(by_alias=False)),
    "dump_models": lambda model: dump_models([model]),
    "repr": repr,
    "str": str,
}


@pytest.mark.parametrize("holder", ["options", "metric", "result"])
@pytest.mark.parametrize("serializer", list(_SERIALIZERS))
def test_api_key_is_never_serialized_or_shown(holder: str, serializer: str) -> None:
    text = _SERIALIZERS[serializer](_secret_holders()[holder])
    assert SECRET not in text
    assert "apiKey" not in text and "api_key" not in text


def test_api_key_stays_available_in_memory_but_is_lost_on_reload() -> None:
    metric = EvalMetric.from_json(_judge_metric())
    assert metric.criterion is not None and metric.criterion.llm_judge is not None
    judge = metric.criterion.llm_judge.judge_model
    assert judge is not None and judge.api_key == SECRET
    assert json.loads(metric.to_json())["criterion"]["llmJudge"]["judgeModel"] == {
        "providerName": "openai",
        "modelName": "gpt",
    }


@pytest.mark.parametrize("key", ["APIKey", "apikey"])
def test_api_key_spelled_in_another_case_is_never_written(key: str) -> None:
    # Go's encoding/json matches object keys case-insensitively, so the reference reads any of these
    # spellings as the judge's api key, and never writes it back out.
    metric = EvalMetric.from_json(_judge_metric(f'"{key}": "{SECRET}"'))
    for text in (metric.to_json(), dump_models([metric]), repr(metric)):
        assert SECRET not in text


@pytest.mark.parametrize(
    "key", ["API-KEY", "api_key_", "API_KEY", "Api-Key", "apikey_", "api key", "apiKye", "apiKeys", "apKey", "myApiKey"]
)
def test_a_key_that_looks_like_a_misspelt_api_key_is_dropped_with_a_warning(key: str) -> None:
    # Unknown keys are kept and written back, which for a misspelt apiKey would write the secret out.
    with pytest.warns(UnknownFieldWarning) as warned:
        metric = EvalMetric.from_json(_judge_metric(f'"{key}": "{SECRET}"'))
    assert [str(w.message) for w in warned] == [
        f"judgeModel key {key!r} was dropped because it looks like a secret (a misspelt apiKey): unknown keys "
        'are written back to files, so it is neither used nor kept; spell it "apiKey", which is never written '
        '(better, "apiKey": "${YOUR_API_KEY_VARIABLE}")'
    ]
    for text in (metric.to_json(), dump_models([metric]), repr(metric), repr(metric.model_dump())):
        assert SECRET not in text
    assert metric.criterion is not None and metric.criterion.llm_judge is not None
    assert metric.criterion.llm_judge.judge_model is not None
    assert metric.criterion.llm_judge.judge_model.api_key == ""


@pytest.mark.parametrize("key", ["apiVersion", "keyPrefix", "maxTokens", "api", "futureOption"])
def test_other_unknown_judge_model_keys_are_kept(key: str) -> None:
    metric = EvalMetric.from_json(_judge_metric(f'"{key}": "v"'))
    assert json.loads(metric.to_json())["criterion"]["llmJudge"]["judgeModel"][key] == "v"


# --- Enums: unknown values are rejected. ---


def _case_id(value: object) -> str:
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, dict):
        return json.dumps(value)[:60]
    return "at-" + ".".join(map(str, value)) if isinstance(value, tuple) else str(value)


@pytest.mark.parametrize(
    ("model", "document", "loc"),
    [
        (EvalCase, {"evalMode": "replay"}, ("evalMode",)),
        (ConversationScenario, {"driver": "both"}, ("driver",)),
        (Message, {"role": "robot"}, ("role",)),
        (TextCriterion, {"matchStrategy": "fuzzy"}, ("matchStrategy",)),
        (TextCriterion, {"matchStrategy": "EXACT"}, ("matchStrategy",)),
        (JSONCriterion, {"matchStrategy": "contains"}, ("matchStrategy",)),
        (XMLCriterion, {"matchStrategy": "exact"}, ("matchStrategy",)),
        (RougeCriterion, {"measure": "f2"}, ("measure",)),
        (RougeCriterion, {"rougeType": "rouge0"}, ("rougeType",)),
        (TemplateVariableSource, {"scope": "global"}, ("scope",)),
        (TemplateVariableSource, {"field": "toolCalls"}, ("field",)),
        (ScoreValue, {"kind": "ordinal"}, ("kind",)),
        (EvalMetricResult, {"evalStatus": "great"}, ("evalStatus",)),
        (EvalCaseResult, {"finalEvalStatus": "PASSED"}, ("finalEvalStatus",)),
        (EvalSetResultSummary, {"overallStatus": "ok"}, ("overallStatus",)),
        (
            EvalSetResult,
            {
                "evalCaseResults": [
                    {"evalMetricResultPerInvocation": [{"evalMetricResults": [{"evalStatus": "great"}]}]}
                ]
            },
            ("evalCaseResults", 0, "evalMetricResultPerInvocation", 0, "evalMetricResults", 0, "evalStatus"),
        ),
        (
            EvalMetric,
            {"criterion": {"toolTrajectory": {"toolStrategy": {"calc": {"name": {"matchStrategy": "fuzzy"}}}}}},
            ("criterion", "toolTrajectory", "toolStrategy", "calc", "name", "matchStrategy"),
        ),
    ],
    ids=_case_id,
)
def test_unknown_enum_values_are_rejected(
    model: type[WireModel], document: dict[str, Any], loc: tuple[str | int, ...]
) -> None:
    with pytest.raises(ValidationError) as info:
        model.from_json(json.dumps(document))
    assert [error["loc"] for error in info.value.errors()] == [loc]


@pytest.mark.parametrize("rouge_type", ["", "rouge1", "rouge2", "rouge10", "rougeL", "rougeLsum"])
def test_known_rouge_types_are_accepted(rouge_type: str) -> None:
    assert RougeCriterion.from_json(json.dumps({"rougeType": rouge_type})).rouge_type == rouge_type


@pytest.mark.parametrize("rouge_type", ["rouge0", "rougeN", "rougel", "rougeLSum", "ROUGE1", "rouge-1", " rouge1"])
def test_unknown_rouge_types_are_rejected(rouge_type: str) -> None:
    with pytest.raises(ValidationError, match="rougeType"):
        RougeCriterion.from_json(json.dumps({"rougeType": rouge_type}))


@pytest.mark.parametrize("status", list(EvalStatus))
def test_every_status_value_loads(status: EvalStatus) -> None:
    loaded = EvalMetricResult.from_json(json.dumps({"evalStatus": status.value}))
    assert loaded.eval_status is status
    assert loaded.to_dict() == {"evalStatus": status.value}


# Every integer of a result, as a JSON path and a document holding 2**63 - 1 there.
_INT_FIELDS: dict[str, dict[str, Any]] = {
    "evalCaseResults[0].runId": {"evalCaseResults": [{"runId": None}]},
    "summary.numRuns": {"summary": {"numRuns": None}},
    "summary.runStatusCounts.passed": {"summary": {"runStatusCounts": {"passed": None}}},
    "summary.runSummaries[0].runId": {"summary": {"runSummaries": [{"runId": None}]}},
    "summary.runSummaries[0].caseStatusCounts.failed": {
        "summary": {"runSummaries": [{"caseStatusCounts": {"failed": None}}]}
    },
    "summary.evalCaseSummaries[0].runStatusCounts.notEvaluated": {
        "summary": {"evalCaseSummaries": [{"runStatusCounts": {"notEvaluated": None}}]}
    },
    "summary.evalCaseSummaries[0].runSummaries[0].runId": {
        "summary": {"evalCaseSummaries": [{"runSummaries": [{"runId": None}]}]}
    },
    "summary.evalCaseSummaries[0].metricSummaries[0].statusCounts.passed": {
        "summary": {"evalCaseSummaries": [{"metricSummaries": [{"statusCounts": {"passed": None}}]}]}
    },
}


def test_every_result_integer_is_a_go_int() -> None:
    # A new int field must be bounded too: the reference reads it into Go's int64.
    models: list[type[WireModel]] = [
        EvalCaseResult,
        EvalMetricResult,
        EvalMetricResultDetails,
        EvalMetricResultPerInvocation,
        EvalSetResult,
        EvalCaseResultSummary,
        EvalCaseRunSummary,
        EvalMetricRunSummary,
        EvalMetricSummary,
        EvalSetResultSummary,
        EvalSetRunSummary,
        EvalStatusCounts,
        RubricScore,
        ScoreValue,
    ]
    integers = {
        f"{model.__name__}.{name}": {
            bound: getattr(item, bound) for item in info.metadata for bound in ("ge", "le") if hasattr(item, bound)
        }
        for model in models
        for name, info in model.model_fields.items()
        if info.annotation in (int, int | None)
    }
    assert len(integers) == 7
    assert {name: bounds for name, bounds in integers.items() if bounds != {"ge": -(2**63), "le": 2**63 - 1}} == {}


def _with_int(document: dict[str, Any], value: int) -> str:
    return json.dumps(document).replace("null", str(value))


@pytest.mark.parametrize("field", list(_INT_FIELDS))
@pytest.mark.parametrize("value", [2**63 - 1, -(2**63)])
def test_result_integers_take_all_of_go_int64(field: str, value: int) -> None:
    text = _with_int(_INT_FIELDS[field], value)
    loaded = parse_json(text, EvalSetResult, "result file r.json")
    assert json.loads(loaded.to_json()) == json.loads(text)


@pytest.mark.parametrize("field", list(_INT_FIELDS))
@pytest.mark.parametrize(
    ("value", "bound"),
    [
        (2**63, "less than or equal to 9223372036854775807"),
        (2**64, "less than or equal to 9223372036854775807"),
        (10**310, "less than or equal to 9223372036854775807"),
        (-(2**63) - 1, "greater than or equal to -9223372036854775808"),
    ],
)
def test_result_integers_beyond_go_int64_are_refused_naming_the_field(field: str, value: int, bound: str) -> None:
    # They used to load, then wrap around in the report's int64 columns or overflow in pass@k.
    with pytest.raises(ConfigError) as info:
        parse_json(_with_int(_INT_FIELDS[field], value), EvalSetResult, "result file r.json")
    assert str(info.value).startswith(f"result file r.json is malformed: field {field}: Input should be {bound} (got ")
