"""``cassette=`` on the Evaluator: record an evaluation's model traffic, then replay it with the servers gone."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest

import agenteval as ae
from agenteval.evalset.models import ConversationScenario, RubricContent
from agenteval.llm.openai import OpenAIChatModel
from agenteval.metric.criterion import Criterion, JudgeModelOptions, LLMCriterion, Rubric
from agenteval.runner.llm_simulator import LLMUserSimulator
from tests.llm._chat_server import ChatServer, Reply

APP = "cassette-app"
AGENT_KEY = "sk-agent-secret-0123456789"
JUDGE_KEY = "sk-judge-secret-0123456789"


def judge_reply() -> Reply:
    return Reply(json.dumps({"rubricScores": [{"id": "polite", "score": 1, "reason": "it greets"}]}))


def make_agent(url: str) -> object:
    async def agent(message: str) -> str:
        # A client per call: each evaluate() runs on a loop of its own.
        async with openai.AsyncOpenAI(base_url=url, api_key=AGENT_KEY, max_retries=0) as client:
            reply = await client.chat.completions.create(
                model="agent-model", messages=[{"role": "user", "content": message}]
            )
        return reply.choices[0].message.content or ""

    return agent


def metrics(judge_url: str) -> list[ae.EvalMetric]:
    judge = JudgeModelOptions(provider_name="openai", model_name="judge-model", base_url=judge_url, api_key=JUDGE_KEY)
    return [
        ae.EvalMetric(
            metric_name="polite",
            evaluator_name="llm_rubric_response",
            threshold=0.5,
            criterion=Criterion(
                llm_judge=LLMCriterion(
                    judge_model=judge,
                    rubrics=[Rubric(id="polite", content=RubricContent(text="The reply greets the user."))],
                )
            ),
        )
    ]


def eval_set() -> ae.EvalSet:
    scenario = ae.EvalCase(
        eval_id="chat",
        conversation_scenario=ConversationScenario(
            starting_prompt="hi there", conversation_plan="Say hello twice.", max_allowed_invocations=2
        ),
        session_input=ae.SessionInput(user_id="u"),
    )
    return ae.EvalSet.of(
        "greetings", [*(ae.EvalCase.of(f"c{index}", f"hello {index}") for index in range(3)), scenario]
    )


def evaluate(agent_url: str, judge_url: str, user_url: str, cassettes: Path, mode: str) -> ae.EvaluationReport:
    simulator = LLMUserSimulator(OpenAIChatModel("user-model", base_url=user_url, api_key="sk-user-secret-0123456789"))
    ev = ae.Evaluator(
        APP,
        make_agent(agent_url),  # type: ignore[arg-type]
        user_simulator=simulator,
        cassette=cassettes,
        cassette_mode=mode,
        progress=False,
    )
    return ev.evaluate(eval_set(), metrics=metrics(judge_url))


def outcome(report: ae.EvaluationReport) -> list[tuple[object, ...]]:
    turns = report.turns[["eval_id", "turn", "user_content", "actual_response"]]
    scores = report.metrics[["eval_id", "status", "score", "reason"]]
    return [*turns.itertuples(index=False, name=None), *scores.itertuples(index=False, name=None)]


def test_an_evaluation_recorded_with_the_servers_up_replays_identically_with_them_gone(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    with (
        ChatServer(default=Reply("Hello! How can I help?")) as agent_server,
        ChatServer(default=judge_reply()) as judge_server,
        ChatServer(default=Reply("thanks, bye")) as user_server,
    ):
        urls = (agent_server.url, judge_server.url, user_server.url)
        recorded = evaluate(*urls, cassettes, "record")
        sent = [len(server.received) for server in (agent_server, judge_server, user_server)]
    assert recorded.passed, recorded.cases.to_dict("records")
    assert all(sent)

    replayed = evaluate(*urls, cassettes, "replay")

    assert outcome(replayed) == outcome(recorded)
    assert [len(server.received) for server in (agent_server, judge_server, user_server)] == sent
    files = sorted(path.relative_to(cassettes).as_posix() for path in cassettes.rglob("*.yaml"))
    assert files == [f"greetings/{case}/run-1.yaml" for case in ("c0", "c1", "c2", "chat")]
    written = "".join(path.read_text() for path in cassettes.rglob("*.yaml"))
    assert "secret-0123456789" not in written
    assert "judge-model" in written and "agent-model" in written and "user-model" in written


def test_a_request_that_was_not_recorded_fails_its_case_in_replay_mode(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    with ChatServer(default=Reply("Hello!")) as agent_server, ChatServer(default=judge_reply()) as judge_server:
        evaluate(agent_server.url, judge_server.url, agent_server.url, cassettes, "record")
        (cassettes / "greetings" / "c1" / "run-1.yaml").unlink()

        report = evaluate(agent_server.url, judge_server.url, agent_server.url, cassettes, "replay")

    cases = report.cases.set_index("eval_id")
    assert cases.loc["c0", "status"] == "passed"
    assert cases.loc["c1", "status"] == "failed"
    message = str(cases.loc["c1", "error_message"])
    assert "c1" in message and "record" in message


@pytest.mark.parametrize(
    ("options", "message"),
    [({"cassette": 3}, "cassette must be a directory"), ({"cassette_mode": "play"}, "cassette_mode must be one of")],
)
def test_bad_cassette_options_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(ae.ConfigError, match=message):
        ae.Evaluator(APP, str.upper, **options)
