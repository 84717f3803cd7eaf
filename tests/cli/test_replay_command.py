"""``agenteval replay BUNDLE``: a bundle made with ``agenteval run --cassette --bundle`` replays offline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agenteval.evalset.models import EvalCase
from agenteval.metric.models import EvalMetric
from tests.cli._invoke import run_cli, write_app
from tests.llm._chat_server import ChatServer, Reply

SERVED_AGENT = """\
import os

import openai


async def agent(message):
    async with openai.AsyncOpenAI(base_url=os.environ["REPLAY_MODEL_URL"], max_retries=0) as client:
        reply = await client.chat.completions.create(
            model="agent-model", messages=[{"role": "user", "content": message}]
        )
    return reply.choices[0].message.content or ""
"""

CASES = [("hello", "hi"), ("again", "yo")]

OTHER_AGENT = "def agent(message):\n    return 'something else'\n"


@pytest.fixture
def bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """A bundle of an agent served by a model server, with its cassettes; the server is gone afterwards."""
    app = write_app(
        tmp_path / "apps",
        "served",
        {
            "greetings": [
                EvalCase.of("hello", "hi", expect="hello there"),
                EvalCase.of("again", "yo", expect="hello there"),
            ]
        },
        [EvalMetric.final_response()],
    )
    (tmp_path / "served_agent.py").write_text(SERVED_AGENT)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-recording-0123456789abcdef")
    with ChatServer(default=Reply("hello there")) as server:
        monkeypatch.setenv("REPLAY_MODEL_URL", server.url)
        ran = run_cli(
            ["run", str(app), "--agent", "served_agent:agent", "--cassette", "cassettes", "--bundle", "b.zip"], capsys
        )
    assert ran.status == 0, ran.err
    monkeypatch.delenv("OPENAI_API_KEY")
    return tmp_path / "b.zip"


def test_a_bundle_replays_offline_and_every_case_run_matches(bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ran = run_cli(["replay", str(bundle)], capsys)

    assert ran.status == 0, ran.err
    assert ran.err == (
        "agenteval: OPENAI_API_KEY is not set; a placeholder is used for this replay (the cassettes answer every"
        " request, so no key is checked)\n"
    )
    lines = ran.out.splitlines()
    assert lines[0].startswith(f"replayed {bundle} (eval set greetings, result served_greetings_")
    assert lines[0].endswith(") offline from its cassettes")
    assert [line.split() for line in lines[3:5]] == [["1", "hello", "matches"], ["1", "again", "matches"]]
    assert lines[-1] == "all 2 case runs match the bundle"
    assert "OPENAI_API_KEY" not in os.environ


def test_a_replay_that_differs_exits_1_saying_how(
    tmp_path: Path, bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "other_agent.py").write_text(OTHER_AGENT)

    ran = run_cli(["replay", str(bundle), "--agent", "other_agent:agent"], capsys)

    assert ran.status == 1, ran.err
    lines = ran.out.splitlines()
    assert lines[3].split(maxsplit=3) == [
        "1",
        "hello",
        "differs:",
        "status: passed → failed; turn 1 reply: 'hello there' → 'something else'; final_response_avg_score: 1.00"
        " passed → 0.00 failed",
    ]
    assert "the agent's code is not the code the bundle recorded (its code hash differs)" in lines
    assert lines[-1] == "2 of 2 case runs differ from the bundle"


def test_a_bundle_without_cassettes_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_cli(["demo", "--bundle", "plain.zip", "--output", "out"], capsys)

    ran = run_cli(["replay", "plain.zip"], capsys)

    assert ran.status == 2
    assert "holds no cassettes" in ran.err
    assert ran.out == ""
