"""The whole product at once: simulated users, LLM judges, named compares and saving elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agenteval as ae
from agenteval.evalset.models import ConversationScenario, RubricContent
from agenteval.metric.criterion import (
    Criterion,
    FinalResponseCriterion,
    LLMCriterion,
    Rubric,
    TextCriterion,
)
from agenteval.metric.registry import MetricRegistry
from agenteval.runner.llm_simulator import LLMUserSimulator
from agenteval.testing import ScriptedChatModel

APP = "travel-app"


def _scenario_set() -> ae.EvalSet:
    return ae.EvalSet(
        eval_set_id="trip",
        eval_cases=[
            ae.EvalCase(
                eval_id="plan_trip",
                conversation_scenario=ConversationScenario(
                    starting_prompt="Plan my trip to Beijing.",
                    conversation_plan="Ask for a plan, give the dates when asked, then stop.",
                    stop_signal="</finished>",
                    max_allowed_invocations=4,
                ),
                session_input=ae.SessionInput(user_id="traveler"),
            )
        ],
    )


def _travel_agent(message: str, turn: ae.Turn) -> str:
    if not turn.history:
        return "Sure. Which dates?"
    return f"Booked: {message}."


def _rubric_metric() -> ae.EvalMetric:
    return ae.EvalMetric(
        metric_name="helpful",
        evaluator_name="llm_rubric_response",
        threshold=0.5,
        criterion=Criterion(
            llm_judge=LLMCriterion(
                rubrics=[
                    Rubric(id="asks_dates", content=RubricContent(text="The agent asks for missing details.")),
                    Rubric(id="books", content=RubricContent(text="The agent confirms a booking.")),
                ]
            )
        ),
    )


def _judge_reply(first: float, second: float) -> str:
    return json.dumps(
        {
            "rubricScores": [
                {"id": "asks_dates", "score": first, "reason": "asked for the dates"},
                {"id": "books", "score": second, "reason": "booking confirmed" if second else "no booking yet"},
            ]
        }
    )


def test_simulated_user_and_scripted_judge_give_per_rubric_scores() -> None:
    user = ScriptedChatModel(["Next Tuesday to Thursday.", "</finished>"])
    judge = ScriptedChatModel([_judge_reply(1, 0), _judge_reply(1, 1)])
    ev = ae.Evaluator(APP, _travel_agent, user_simulator=LLMUserSimulator(user), judge=judge)

    report = ev.evaluate(_scenario_set(), metrics=[_rubric_metric()])

    assert report.overall_status is ae.EvalStatus.PASSED
    turns = report.invocations
    assert list(turns["user_content"]) == ["Plan my trip to Beijing.", "Next Tuesday to Thursday."]
    assert list(turns["actual_response"]) == ["Sure. Which dates?", "Booked: Next Tuesday to Thursday.."]
    assert list(turns["score"]) == [0.5, 1.0]
    rubrics = report.rubric_scores
    assert list(rubrics[["turn", "rubric_id", "score"]].itertuples(index=False, name=None)) == [
        (1, "asks_dates", 1.0),
        (1, "books", 0.0),
        (2, "asks_dates", 1.0),
        (2, "books", 1.0),
    ]
    assert list(rubrics["reason"])[1] == "no booking yet"
    assert report.metrics.loc[0, "score"] == 0.75
    # The judge saw the rubrics; the simulated user saw the agent's replies.
    assert "asks_dates" in judge.requests[0].messages[-1].content
    assert user.requests[0].messages[-1].content == "Sure. Which dates?"


def test_a_malformed_judge_reply_fails_the_case_and_names_the_metric() -> None:
    ev = ae.Evaluator(APP, _travel_agent, judge=ScriptedChatModel(["not json at all"]))
    case_set = ae.EvalSet(
        eval_set_id="one",
        eval_cases=[
            ae.EvalCase(
                eval_id="c1",
                conversation=[ae.Invocation(user_content=ae.Message.user("hi"))],
                session_input=ae.SessionInput(user_id="u"),
            )
        ],
    )

    report = ev.evaluate(case_set, metrics=[_rubric_metric()])

    assert report.overall_status is ae.EvalStatus.FAILED
    message = str(report.cases.loc[0, "error_message"])
    assert "run evaluation for metric helpful" in message
    assert "JSON" in message


def _exact_case() -> ae.EvalSet:
    return ae.EvalSet(
        eval_set_id="greet",
        eval_cases=[
            ae.EvalCase(
                eval_id="hello",
                conversation=[
                    ae.Invocation(
                        user_content=ae.Message.user("say hello"),
                        final_response=ae.Message.assistant("HELLO"),
                    )
                ],
                session_input=ae.SessionInput(user_id="u"),
            )
        ],
    )


def _named_compare_metric() -> ae.EvalMetric:
    return ae.EvalMetric(
        metric_name="loose_text",
        evaluator_name="final_response_avg_score",
        threshold=1,
        criterion=Criterion(final_response=FinalResponseCriterion(text=TextCriterion(compare_name="casefold"))),
    )


def test_named_compares_come_from_the_evaluators_metric_registry() -> None:
    registry = MetricRegistry()
    registry.register_text_compare("casefold", lambda actual, expected: actual.casefold() == expected.casefold())
    ev = ae.Evaluator(APP, lambda message: "hello", metric_registry=registry)

    report = ev.evaluate(_exact_case(), metrics=[_named_compare_metric()])

    assert report.overall_status is ae.EvalStatus.PASSED


def test_an_unknown_compare_name_fails_before_the_agent_runs() -> None:
    calls: list[str] = []

    def agent(message: str) -> str:
        calls.append(message)
        return "hello"

    ev = ae.Evaluator(APP, agent, metric_registry=MetricRegistry())
    with pytest.raises(ae.ConfigError, match='compareName "casefold" is not registered'):
        ev.evaluate(_exact_case(), metrics=[_named_compare_metric()])
    assert calls == []


@pytest.mark.asyncio
async def test_a_report_saves_to_local_files_with_the_same_id(tmp_path: Path) -> None:
    ev = ae.Evaluator(APP, lambda message: "HELLO")
    exact = ae.EvalMetric(
        metric_name="final_response_avg_score",
        threshold=1,
        criterion=Criterion(final_response=FinalResponseCriterion(text=TextCriterion())),
    )
    report = await ev.aevaluate(_exact_case(), metrics=[exact])
    assert report.overall_status is ae.EvalStatus.PASSED
    store = ae.LocalEvalResultManager(tmp_path)

    saved_id = await report.asave(store)

    assert saved_id == report.result.eval_set_result_id
    loaded = await store.get(APP, saved_id)
    assert loaded.eval_case_results == report.result.eval_case_results
    assert (tmp_path / APP / f"{saved_id}.evalset_result.json").is_file()
