"""OpenAIChatModel against a fake chat-completions server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

import agenteval.llm
from agenteval._util.sync_bridge import run_sync
from agenteval.errors import ChatModelError, ConfigError, MissingDependencyError
from agenteval.evalset.message import Message, Role
from agenteval.llm import ChatRequest, StructuredOutput
from agenteval.llm.openai import OpenAIChatModel
from agenteval.metric.criterion import GenerationConfig, JudgeModelOptions
from tests.llm._chat_server import ChatServer, Reply, completion

KEY = "sk-test-secret-123"


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_ADMIN_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shrink the client's exponential backoff so that only a Retry-After header can make a test wait."""
    from openai import _base_client

    monkeypatch.setattr(_base_client, "INITIAL_RETRY_DELAY", 0.001)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


def make_model(server: ChatServer, **options: Any) -> OpenAIChatModel:
    return OpenAIChatModel("fake-model", base_url=server.url, api_key=KEY, **options)


def ask(text: str = "hi", **fields: Any) -> ChatRequest:
    return ChatRequest(messages=[Message.user(text)], **fields)


@pytest.mark.asyncio
async def test_a_reply_is_returned_with_its_usage(server: ChatServer) -> None:
    server.script(
        Reply(body=completion("hello there", usage={"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}))
    )
    model = make_model(server)

    response = await model.generate(
        ChatRequest(
            messages=[
                Message.system("be brief"),
                Message(role=Role.UNSET, content="q"),
                Message.assistant("a"),
                Message.user("q2"),
            ]
        )
    )

    assert response.content == "hello there"
    assert response.usage == {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    [received] = server.received
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == f"Bearer {KEY}"
    assert received.body == {
        "model": "fake-model",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "a"},
            {"role": "user", "content": "q2"},
        ],
        "stream": False,
    }


@pytest.mark.asyncio
async def test_structured_output_sends_a_json_schema_response_format(server: ChatServer) -> None:
    schema = {"type": "object", "properties": {"score": {"type": "number"}}, "required": ["score"]}
    server.script(Reply(content='{"score": 0.5}'))
    model = make_model(server)

    response = await model.generate(
        ask(structured_output=StructuredOutput(name="scores", schema=schema, description="the verdict"))
    )

    assert json.loads(response.content) == {"score": 0.5}
    assert server.bodies[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "scores", "schema": schema, "strict": True, "description": "the verdict"},
    }


@pytest.mark.asyncio
async def test_generation_config_and_extra_fields_go_into_the_body(server: ChatServer) -> None:
    model = make_model(server, extra_fields={"seed": 7, "thinking_tokens": 99})
    generation = GenerationConfig(
        max_tokens=100,
        temperature=0.2,
        top_p=0.9,
        stream=True,
        stop=["END"],
        presence_penalty=0.1,
        frequency_penalty=0.3,
        logprobs=True,
        top_logprobs=2,
        reasoning_effort="low",
        thinking_enabled=True,
        thinking_tokens=64,
    )

    await model.generate(ask(generation=generation))
    await model.generate(ask(generation=GenerationConfig(temperature=1.0)))

    first, second = server.bodies
    assert {key: value for key, value in first.items() if key != "messages"} == {
        "model": "fake-model",
        "stream": False,
        "max_tokens": 100,
        "temperature": 0.2,
        "top_p": 0.9,
        "stop": ["END"],
        "presence_penalty": 0.1,
        "frequency_penalty": 0.3,
        "logprobs": True,
        "top_logprobs": 2,
        "reasoning_effort": "low",
        "thinking_enabled": True,
        "thinking_tokens": 99,
        "seed": 7,
    }
    assert {key: value for key, value in second.items() if key != "messages"} == {
        "model": "fake-model",
        "stream": False,
        "temperature": 1.0,
        "seed": 7,
        "thinking_tokens": 99,
    }


@pytest.mark.asyncio
async def test_a_response_carries_content_usage_and_logprobs(server: ChatServer) -> None:
    tokens = [{"token": "yes", "logprob": -0.1, "top_logprobs": []}]
    server.script(Reply(body=completion("yes", logprobs=tokens)))
    model = make_model(server)

    response = await model.generate(ask(generation=GenerationConfig(logprobs=True, top_logprobs=2)))

    assert dataclasses.asdict(response) == {
        "content": "yes",
        "usage": {},
        "logprobs": [{"token": "yes", "logprob": -0.1, "top_logprobs": ()}],
    }
    assert server.bodies[0]["logprobs"] is True and server.bodies[0]["top_logprobs"] == 2


def test_token_logprobs_are_part_of_the_api() -> None:
    assert {"TokenLogprob", "TopLogprob"} <= set(agenteval.llm.__all__)


@pytest.mark.asyncio
async def test_the_base_url_fallback_is_read_when_the_model_is_built(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    model = OpenAIChatModel("fake-model", api_key=KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")

    response = await model.generate(ask())

    assert model.base_url == server.url
    assert response.content == "ok"
    assert len(server.received) == 1


@pytest.mark.asyncio
async def test_a_429_is_retried_after_the_retry_after_delay(server: ChatServer) -> None:
    server.script(Reply(status=429, headers={"Retry-After": "0.2"}), Reply(content="finally"))
    model = make_model(server)

    started = time.monotonic()
    response = await model.generate(ask())
    elapsed = time.monotonic() - started

    assert response.content == "finally"
    assert len(server.received) == 2
    assert server.received[1].headers["x-stainless-retry-count"] == "1"
    assert 0.2 <= elapsed < 2


@pytest.mark.asyncio
async def test_a_500_is_retried(server: ChatServer) -> None:
    server.script(Reply(status=500), Reply(status=503), Reply(content="recovered"))
    model = make_model(server, max_retries=2)

    assert (await model.generate(ask())).content == "recovered"
    assert len(server.received) == 3


@pytest.mark.asyncio
async def test_the_final_failure_names_the_model_the_endpoint_and_the_status(server: ChatServer) -> None:
    server.script(*[Reply(status=500)] * 3)
    model = make_model(server, max_retries=2)

    with pytest.raises(ChatModelError) as caught:
        await model.generate(ask())

    message = str(caught.value)
    assert "'fake-model'" in message
    assert server.url in message
    assert "HTTP 500 after 2 retries" in message
    assert "scripted 500" in message
    assert KEY not in message
    assert (caught.value.model, caught.value.status_code) == ("fake-model", 500)
    assert len(server.received) == 3


@pytest.mark.asyncio
async def test_a_client_error_is_not_retried(server: ChatServer) -> None:
    server.script(Reply(status=400))
    model = make_model(server)

    with pytest.raises(ChatModelError, match=r"HTTP 400: "):
        await model.generate(ask())
    assert len(server.received) == 1


@pytest.mark.asyncio
async def test_a_hanging_server_fails_once_the_total_timeout_is_spent(server: ChatServer) -> None:
    server.script(Reply(delay=30), Reply(delay=30), Reply(delay=30), Reply(delay=30))
    model = make_model(server, timeout=0.5, max_retries=3)

    started = time.monotonic()
    with pytest.raises(ChatModelError) as caught:
        await model.generate(ask())

    assert time.monotonic() - started >= 0.5
    assert str(caught.value) == (
        f"OpenAI-compatible model 'fake-model' at {server.url}/: no answer within 0.5s (the timeout of a whole "
        "request, retries included); raise it (judgeModel.timeoutSeconds, or judge_timeout=) for a slow endpoint"
    )
    assert caught.value.status_code is None
    # The first attempt had the whole budget: a per-attempt timeout would have made four.
    assert len(server.received) == 1


@pytest.mark.asyncio
async def test_retries_stop_when_the_total_timeout_is_spent(server: ChatServer) -> None:
    server.script(*[Reply(status=500, delay=0.5)] * 10)
    model = make_model(server, timeout=2.0, max_retries=9)

    with pytest.raises(ChatModelError, match=r"no answer within 2s"):
        await model.generate(ask())

    assert 2 <= len(server.received) < 10


@pytest.mark.asyncio
async def test_by_default_a_request_is_retried_twice(server: ChatServer) -> None:
    server.script(*[Reply(status=500)] * 5)
    model = make_model(server)

    with pytest.raises(ChatModelError, match=r"HTTP 500 after 2 retries"):
        await model.generate(ask())

    assert (model.timeout, model.max_retries) == (120.0, 2)
    assert len(server.received) == 3


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "reply",
    [
        Reply(status=401, echo_header="authorization"),
        Reply(status=500, echo_header="authorization"),
        Reply(raw=f"<html>denied: Authorization: Bearer {KEY}</html>".encode()),
        Reply(status=400, body={"error": {"message": f"bad request signed with {KEY}"}}),
    ],
    ids=["401 echoing the header", "500 echoing the header", "a page quoting it", "a message quoting it"],
)
async def test_the_key_is_redacted_from_every_error_message(server: ChatServer, reply: Reply) -> None:
    server.script(reply, reply, reply)
    model = make_model(server, max_retries=2)

    with pytest.raises(ChatModelError) as caught:
        await model.generate(ask())

    assert KEY not in str(caught.value)
    assert "[redacted]" in str(caught.value)


@pytest.mark.asyncio
async def test_secrets_of_the_extra_fields_are_redacted_from_error_messages(server: ChatServer) -> None:
    secret = "extra-field-secret-4711"
    server.script(Reply(status=400, body={"error": {"message": f"unknown account for {secret}"}}))
    model = make_model(server, extra_fields={"tenant": {"access_token": secret}})

    with pytest.raises(ChatModelError) as caught:
        await model.generate(ask())

    assert secret not in str(caught.value)
    assert server.bodies[0]["tenant"] == {"access_token": secret}


@pytest.mark.asyncio
async def test_the_credentials_of_a_base_url_are_never_shown() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAIChatModel(
        "m", base_url=f"http://judge:pw-4711-secret@127.0.0.1:{port}/v1", api_key=KEY, max_retries=0
    )

    with pytest.raises(ChatModelError) as caught:
        await model.generate(ask())

    assert model.base_url == f"http://127.0.0.1:{port}/v1"
    assert caught.value.base_url == f"http://127.0.0.1:{port}/v1/"
    for shown in (str(caught.value), caught.value.base_url, repr(model), repr(vars(model))):
        assert "pw-4711-secret" not in shown
        assert KEY not in shown


@pytest.mark.asyncio
async def test_an_unreachable_endpoint_is_a_connection_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAIChatModel("m", base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, max_retries=1)

    with pytest.raises(ChatModelError, match=rf"'m' at http://127.0.0.1:{port}/v1/: connection failed after 1 retry"):
        await model.generate(ask())


@pytest.mark.asyncio
async def test_a_refusal_is_an_error_quoting_it(server: ChatServer) -> None:
    body = completion()
    body["choices"][0]["message"] = {"role": "assistant", "content": None, "refusal": "I can't grade this answer."}
    server.script(Reply(body=body))
    model = make_model(server)

    with pytest.raises(ChatModelError) as caught:
        await model.generate(ask())

    assert str(caught.value) == (
        f"OpenAI-compatible model 'fake-model' at {server.url}/: the model refused to answer: "
        '"I can\'t grade this answer."; rephrase the prompt (or the judge template) or use another model'
    )
    assert caught.value.status_code is None


@pytest.mark.asyncio
async def test_content_wins_over_a_refusal(server: ChatServer) -> None:
    body = completion("yes")
    body["choices"][0]["message"]["refusal"] = "partly refused"
    server.script(Reply(body=body))

    response = await make_model(server).generate(ask())

    assert response.content == "yes"


@pytest.mark.asyncio
async def test_a_response_without_choices_is_an_error(server: ChatServer) -> None:
    server.script(Reply(body={**completion(), "choices": []}))
    model = make_model(server)

    with pytest.raises(ChatModelError, match="no choices"):
        await model.generate(ask())


@pytest.mark.asyncio
@pytest.mark.parametrize(("limit", "expected"), [(2, range(2, 3)), (8, range(3, 7))])
async def test_at_most_max_concurrency_requests_are_in_flight(server: ChatServer, limit: int, expected: range) -> None:
    server.script(*[Reply(delay=0.1)] * 6)
    model = make_model(server, max_concurrency=limit)

    replies = await asyncio.gather(*(model.generate(ask(str(n))) for n in range(6)))

    assert len(replies) == 6
    assert server.max_in_flight in expected


def test_one_model_works_across_consecutive_event_loops(server: ChatServer) -> None:
    """Each sync evaluate() may run on a new loop; a client bound to the previous one must not be reused."""
    model = make_model(server)

    first = run_sync(model.generate(ask("one")))
    second = run_sync(model.generate(ask("two")))

    assert (first.content, second.content) == ("ok", "ok")
    assert len(server.received) == 2
    # Each loop's shutdown closed its client: nothing is left to leak an unclosed transport.
    assert len(model._states) == 0
    gc.collect()


@pytest.mark.asyncio
async def test_aclose_closes_the_client_and_a_later_call_opens_a_new_one(server: ChatServer) -> None:
    model = make_model(server)
    await model.generate(ask())

    await model.aclose()
    await model.aclose()

    assert (await model.generate(ask())).content == "ok"


@pytest.mark.asyncio
async def test_from_judge_model_expands_environment_references(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_MODEL", "judge-v1")
    monkeypatch.setenv("JUDGE_URL", server.url)
    monkeypatch.setenv("JUDGE_KEY", KEY)
    options = JudgeModelOptions.model_validate(
        {
            "providerName": "openai",
            "modelName": "${JUDGE_MODEL}",
            "baseURL": "${JUDGE_URL}",
            "apiKey": "${JUDGE_KEY}",
            "extraFields": {"user": "eval"},
        }
    )

    model = OpenAIChatModel.from_judge_model(options)
    await model.generate(ask())

    assert (model.model, model.base_url) == ("judge-v1", server.url)
    [received] = server.received
    assert received.headers["authorization"] == f"Bearer {KEY}"
    assert (received.body["model"], received.body["user"]) == ("judge-v1", "eval")


@pytest.mark.asyncio
async def test_a_missing_api_key_falls_back_to_openai_api_key(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    model = OpenAIChatModel.from_judge_model(JudgeModelOptions(model_name="m", base_url=server.url))

    await model.generate(ask())

    assert server.received[0].headers["authorization"] == "Bearer sk-from-env"


def test_no_api_key_at_all_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="no API key"):
        OpenAIChatModel.from_judge_model(JudgeModelOptions(model_name="m", base_url="http://127.0.0.1:9/v1"))


def test_a_missing_model_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"judgeModel\.modelName"):
        OpenAIChatModel.from_judge_model(JudgeModelOptions(api_key=KEY))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"timeout": 0}, "timeout"),
        ({"timeout": float("nan")}, "timeout"),
        ({"max_retries": -1}, "max retries"),
        ({"max_concurrency": 0}, "max concurrency"),
    ],
)
def test_invalid_options_are_config_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        OpenAIChatModel("m", api_key=KEY, **options)


def test_the_api_key_is_never_shown() -> None:
    model = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", api_key=KEY)

    assert repr(model) == "OpenAIChatModel(model='m', base_url='http://127.0.0.1:9/v1')"
    assert KEY not in str(model)
    assert KEY not in repr(vars(model))


def test_a_missing_openai_package_is_a_missing_dependency(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)

    with pytest.raises(MissingDependencyError, match=r"pip install 'agenteval\[openai\]'"):
        OpenAIChatModel("m", api_key=KEY)


def test_importing_agenteval_llm_does_not_import_openai() -> None:
    code = "import sys, agenteval.llm as llm; assert 'openai' not in sys.modules; llm.OpenAIChatModel; print('ok')"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "ok\n"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("raw", "content_type", "message"),
    [
        (b"{not json", "application/json", "returned a body that is not JSON: Expecting property name"),
        (b"<html>sign in</html>", "application/json", "returned a body that is not JSON: Expecting value"),
        (b"<html>sign in</html>", "text/html", "the response is not a chat completion"),
        (b"[1, 2]", "application/json", "the response is not a chat completion"),
        (b"null", "application/json", "the response is not a chat completion"),
    ],
)
async def test_a_success_whose_body_is_not_a_completion_is_an_error(
    server: ChatServer, raw: bytes, content_type: str, message: str
) -> None:
    server.script(Reply(raw=raw, content_type=content_type))
    model = make_model(server)

    with pytest.raises(ChatModelError) as caught:
        await model.generate(ask())

    assert str(caught.value).startswith(f"OpenAI-compatible model 'fake-model' at {server.url}/")
    assert message in str(caught.value)
    assert (caught.value.model, caught.value.base_url) == ("fake-model", f"{server.url}/")
    assert len(server.received) == 1


@pytest.mark.asyncio
async def test_a_body_that_is_not_json_is_quoted(server: ChatServer) -> None:
    server.script(Reply(raw=b"<html>" + b"x" * 300))

    with pytest.raises(ChatModelError) as caught:
        await make_model(server).generate(ask())

    assert str(caught.value) == (
        f"OpenAI-compatible model 'fake-model' at {server.url}/ returned a body that is not JSON: "
        f"Expecting value: line 1 column 1 (char 0); the body starts with '<html>{'x' * 194}…'"
    )


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "choice", [{"index": 0, "finish_reason": "stop"}, {"index": 0, "message": None}, {"message": "hi"}, 5]
)
async def test_a_choice_without_a_message_is_an_error(server: ChatServer, choice: Any) -> None:
    server.script(Reply(body={**completion(), "choices": [choice]}))

    with pytest.raises(ChatModelError) as caught:
        await make_model(server).generate(ask())

    assert (
        str(caught.value) == f"OpenAI-compatible model 'fake-model' at {server.url}/: the first choice has no message"
    )
