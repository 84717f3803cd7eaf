"""Token logprobs over the OpenAI wire format, and ``llm_verifier_pairwise`` against a local server."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from agenteval.errors import AgentEvalError, ChatModelError
from agenteval.evalset.message import Message
from agenteval.evaluators.llm.verifier import VerifierPairwiseEvaluator
from agenteval.llm import ChatRequest
from agenteval.llm.base import TokenLogprob, TopLogprob
from agenteval.llm.judge import JudgeOverride, use_judge
from agenteval.llm.openai import OpenAIChatModel
from agenteval.metric.criterion import GenerationConfig
from tests.evaluators.llm._judges import metric, rubric, turn
from tests.llm._chat_server import ChatServer, Reply, completion


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


def model(server: ChatServer) -> OpenAIChatModel:
    return OpenAIChatModel("fake-model", base_url=server.url, api_key="EMPTY", max_retries=0)


def wire(token: str, logprob: float, *top: tuple[str, float]) -> dict[str, Any]:
    return {
        "token": token,
        "logprob": logprob,
        "bytes": list(token.encode()),
        "top_logprobs": [{"token": t, "logprob": p, "bytes": None} for t, p in top],
    }


@pytest.mark.asyncio
async def test_logprobs_are_asked_for_and_returned_with_their_alternatives(server: ChatServer) -> None:
    server.script(Reply(body=completion("Hi", logprobs=[wire("Hi", -0.1, ("Hi", -0.1), ("Hey", -2.5))])))

    response = await model(server).generate(
        ChatRequest(messages=[Message.user("hi")], generation=GenerationConfig(logprobs=True, top_logprobs=2))
    )

    assert response.logprobs == [
        TokenLogprob(
            token="Hi",
            logprob=-0.1,
            top_logprobs=(TopLogprob(token="Hi", logprob=-0.1), TopLogprob(token="Hey", logprob=-2.5)),
        )
    ]
    assert (server.bodies[0]["logprobs"], server.bodies[0]["top_logprobs"]) == (True, 2)


@pytest.mark.asyncio
async def test_an_answer_without_logprobs_has_none(server: ChatServer) -> None:
    server.script(Reply(content="plain"))

    response = await model(server).generate(ChatRequest(messages=[Message.user("hi")]))

    assert response.logprobs is None


@pytest.mark.asyncio
async def test_a_malformed_logprob_entry_names_its_position(server: ChatServer) -> None:
    server.script(Reply(body=completion("x", logprobs=[wire("x", 0.0), {"token": "y", "logprob": "high"}])))

    with pytest.raises(ChatModelError, match=r"logprobs.content\[1\] has no numeric logprob"):
        await model(server).generate(ChatRequest(messages=[Message.user("hi")]))


def verifier_completion(a: dict[str, float], b: dict[str, float], *, split_tag: bool = False) -> dict[str, Any]:
    def label(probabilities: dict[str, float], prefix: str = "") -> dict[str, Any]:
        ranked = sorted(probabilities.items(), key=lambda item: -item[1])
        top = [(prefix + t, math.log(p)) for t, p in ranked]
        return wire(top[0][0], top[0][1], *top)

    opening = (
        [wire("Both fine.\n<score_A", 0.0), label(a, ">")]
        if split_tag
        else [wire("Both fine.\n<score_A>", 0.0), label(a)]
    )
    tokens = [*opening, wire("</score_A>\n<score_B>", 0.0), label(b), wire("</score_B>", 0.0)]
    return completion("".join(token["token"] for token in tokens), logprobs=tokens)


@pytest.mark.asyncio
async def test_the_verifier_scores_a_real_wire_answer_including_a_label_glued_to_the_tag(server: ChatServer) -> None:
    server.script(
        Reply(body=verifier_completion({"A": 0.7, "T": 0.3}, {"T": 0.8, "A": 0.2})),
        Reply(body=verifier_completion({"J": 0.4, "K": 0.6}, {"K": 1.0}, split_tag=True)),
    )
    eval_metric = metric("llm_verifier_pairwise", rubrics=[rubric("accuracy")])

    with use_judge(JudgeOverride(model(server))):
        result = await VerifierPairwiseEvaluator().evaluate(
            [turn("q1", "a1"), turn("q2", "a2")], [turn("q1", "b1"), turn("q2", "b2")], eval_metric
        )

    first, second = (r.score for r in result.per_invocation_results)
    assert first == pytest.approx(0.75, abs=1e-9)
    assert second == pytest.approx(0.5 + (9.4 / 19 - 9 / 19) / 2, abs=1e-9)
    assert all(body["logprobs"] is True and body["top_logprobs"] == 20 for body in server.bodies)


@pytest.mark.asyncio
async def test_a_server_that_ignores_logprobs_fails_the_case_with_a_clear_error(server: ChatServer) -> None:
    server.script(Reply(content="Fine.\n<score_A>A</score_A>\n<score_B>B</score_B>"))
    eval_metric = metric("llm_verifier_pairwise", rubrics=[rubric("accuracy")])

    with use_judge(JudgeOverride(model(server))), pytest.raises(AgentEvalError, match="logprobs are missing"):
        await VerifierPairwiseEvaluator().evaluate([turn("q", "a")], [turn("q", "b")], eval_metric)
