"""Cassettes: each case-run's HTTP traffic recorded with vcrpy and replayed without the network.

Everything runs against fake servers on 127.0.0.1; a replay runs after its server was stopped, so a
request that reached the network would fail.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
import requests
from openai import AsyncOpenAI

from agenteval.cache.cassettes import Cassettes
from agenteval.errors import CassetteMissError, ConfigError, MissingDependencyError, StorageError
from tests.cassettes._servers import LocalServer
from tests.llm._chat_server import ChatServer, Reply

KEY = "sk-test-cassette-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {KEY}"}

Client = Callable[[str, str], Awaitable[str]]
"""Sends one chat request asking ``question`` to a base URL; returns the reply's text."""


def _content(reply: dict[str, Any]) -> str:
    return str(reply["choices"][0]["message"]["content"])


def _body(question: str) -> dict[str, Any]:
    return {"model": "fake-model", "messages": [{"role": "user", "content": question}]}


async def via_httpx(url: str, question: str) -> str:
    with httpx.Client() as client:
        return _content(client.post(f"{url}/chat/completions", json=_body(question), headers=AUTH).json())


async def via_async_httpx(url: str, question: str) -> str:
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{url}/chat/completions", json=_body(question), headers=AUTH)
    return _content(response.json())


async def via_requests(url: str, question: str) -> str:
    with requests.Session() as session:
        return _content(session.post(f"{url}/chat/completions", json=_body(question), headers=AUTH).json())


async def via_aiohttp(url: str, question: str) -> str:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/chat/completions", json=_body(question), headers=AUTH) as response,
    ):
        return _content(await response.json())


async def via_openai(url: str, question: str) -> str:
    client = AsyncOpenAI(base_url=url, api_key=KEY, max_retries=0)
    try:
        completion = await client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": question}]
        )
    finally:
        await client.close()
    return completion.choices[0].message.content or ""


CLIENTS = [via_httpx, via_async_httpx, via_requests, via_aiohttp, via_openai]


def ask(url: str, question: str) -> str:
    """A sync agent's model call."""
    return _content(requests.post(f"{url}/chat/completions", json=_body(question), headers=AUTH).json())


def questions_in(file: Path) -> list[str]:
    """The questions of the requests a cassette file holds, in order, as vcrpy reads them."""
    from vcr.persisters.filesystem import FilesystemPersister
    from vcr.serializers import yamlserializer

    recorded, _ = FilesystemPersister.load_cassette(file, yamlserializer)
    return [_question(request.body) for request in recorded]


def _question(body: Any) -> str:
    parsed = body if isinstance(body, dict) else json.loads(body)  # aiohttp's json= is recorded as given
    return str(parsed["messages"][0]["content"])


@pytest.mark.asyncio
@pytest.mark.parametrize("client", CLIENTS, ids=lambda client: client.__name__)
async def test_a_recorded_case_run_replays_its_responses_without_the_network(tmp_path: Path, client: Client) -> None:
    with ChatServer([Reply("first"), Reply("second")]) as server:
        cassettes = Cassettes(tmp_path, "record")
        with cassettes.active(), cassettes.case("set", "case", 1):
            recorded = [await client(server.url, "a"), await client(server.url, "b")]
    received = len(server.received)

    cassettes = Cassettes(tmp_path, "replay")
    with cassettes.active(), cassettes.case("set", "case", 1):
        replayed = [await client(server.url, "a"), await client(server.url, "b")]

    assert recorded == replayed == ["first", "second"]
    assert received == len(server.received) == 2
    assert questions_in(tmp_path / "set" / "case" / "run-1.yaml") == ["a", "b"]


@pytest.mark.asyncio
async def test_concurrent_case_runs_each_record_and_replay_only_their_own_traffic(tmp_path: Path) -> None:
    async def case_run(cassettes: Cassettes, client: httpx.AsyncClient, url: str, name: str) -> list[str]:
        replies = []
        with cassettes.case("set", name, 1):
            for turn in range(3):
                response = await client.post(f"{url}/chat/completions", json=_body(f"{name}{turn}"))
                replies.append(_content(response.json()))
                await barrier.wait()  # the other case-run's request comes in between
        return replies

    with ChatServer([Reply(f"reply{index}") for index in range(6)]) as server:
        cassettes = Cassettes(tmp_path, "record")
        barrier = asyncio.Barrier(2)
        async with httpx.AsyncClient() as client:
            with cassettes.active():
                recorded = await asyncio.gather(*(case_run(cassettes, client, server.url, name) for name in "AB"))

    cassettes = Cassettes(tmp_path, "replay")
    barrier = asyncio.Barrier(2)
    async with httpx.AsyncClient() as client:
        with cassettes.active():
            replayed = await asyncio.gather(*(case_run(cassettes, client, server.url, name) for name in "AB"))

    assert replayed == recorded
    assert sorted(recorded[0] + recorded[1]) == [f"reply{index}" for index in range(6)]
    rounds = [sorted(_question(body) for body in server.bodies[turn : turn + 2]) for turn in (0, 2, 4)]
    assert rounds == [["A0", "B0"], ["A1", "B1"], ["A2", "B2"]]  # interleaved
    assert questions_in(tmp_path / "set" / "A" / "run-1.yaml") == ["A0", "A1", "A2"]
    assert questions_in(tmp_path / "set" / "B" / "run-1.yaml") == ["B0", "B1", "B2"]


@pytest.mark.asyncio
async def test_sync_clients_in_threads_are_routed_to_the_case_run_that_started_them(tmp_path: Path) -> None:
    async def in_a_thread(url: str) -> None:
        with cassettes.case("set", "thread", 1):
            thread = threading.Thread(target=contextvars.copy_context().run, args=(ask, url, "from thread"))
            thread.start()
            while thread.is_alive():
                await asyncio.sleep(0.005)

    async def to_thread(url: str) -> None:
        with cassettes.case("set", "to_thread", 1):
            await asyncio.to_thread(ask, url, "from to_thread")

    with ChatServer() as server:
        cassettes = Cassettes(tmp_path, "record")
        with cassettes.active():
            await asyncio.gather(in_a_thread(server.url), to_thread(server.url))

    assert questions_in(tmp_path / "set" / "thread" / "run-1.yaml") == ["from thread"]
    assert questions_in(tmp_path / "set" / "to_thread" / "run-1.yaml") == ["from to_thread"]


def test_threads_replaying_at_once_never_reach_the_network(tmp_path: Path) -> None:
    # vcrpy's stubs put the real connection classes back, process-wide, while they open a connection:
    # another thread's request at that moment would bypass its cassette.
    names = [f"case{index}" for index in range(6)]

    def case_run(cassettes: Cassettes, url: str, name: str, failures: list[BaseException]) -> None:
        start.wait()
        try:
            with cassettes.case("set", name, 1):
                for turn in range(5):
                    ask(url, f"{name}-{turn}")
        except BaseException as error:
            failures.append(error)

    def run_all(cassettes: Cassettes, url: str) -> list[BaseException]:
        failures: list[BaseException] = []
        threads = [threading.Thread(target=case_run, args=(cassettes, url, name, failures)) for name in names]
        with cassettes.active():
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        return failures

    with ChatServer() as server:
        start = threading.Barrier(len(names))
        assert run_all(Cassettes(tmp_path, "record"), server.url) == []
    start = threading.Barrier(len(names))

    assert run_all(Cassettes(tmp_path, "replay"), server.url) == []
    assert len(server.received) == 30
    assert questions_in(tmp_path / "set" / "case3" / "run-1.yaml") == [f"case3-{turn}" for turn in range(5)]


@pytest.mark.asyncio
async def test_a_repeated_request_replays_each_recorded_response_once_in_order(tmp_path: Path) -> None:
    with ChatServer([Reply("sample1"), Reply("sample2"), Reply("sample3")]) as server:
        cassettes = Cassettes(tmp_path, "record")
        with cassettes.active(), cassettes.case("set", "case", 1):
            recorded = [await via_async_httpx(server.url, "same") for _ in range(3)]

    cassettes = Cassettes(tmp_path, "replay")
    with cassettes.active(), cassettes.case("set", "case", 1):
        replayed = [await via_async_httpx(server.url, "same") for _ in range(3)]
        with pytest.raises(CassetteMissError, match="holds 3 response\\(s\\) for this request, all used already"):
            await via_async_httpx(server.url, "same")

    assert recorded == replayed == ["sample1", "sample2", "sample3"]


@pytest.mark.asyncio
async def test_entries_of_one_case_run_share_its_cassette(tmp_path: Path) -> None:
    with ChatServer([Reply("inference"), Reply("judge")]) as server:
        cassettes = Cassettes(tmp_path, "record")
        with cassettes.active():
            with cassettes.case("set", "case", 1):
                await via_async_httpx(server.url, "q")
            with cassettes.case("set", "case", 1):
                await via_async_httpx(server.url, "q")

    cassettes = Cassettes(tmp_path, "replay")
    with cassettes.active():
        with cassettes.case("set", "case", 1):
            first = await via_async_httpx(server.url, "q")
        with cassettes.case("set", "case", 1):
            second = await via_async_httpx(server.url, "q")

    assert [first, second] == ["inference", "judge"]


@pytest.mark.asyncio
async def test_a_replay_miss_names_the_case_run_the_request_the_file_and_the_fix(tmp_path: Path) -> None:
    with ChatServer() as server:
        cassettes = Cassettes(tmp_path, "record")
        with cassettes.active(), cassettes.case("set", "case", 2):
            await via_async_httpx(server.url, "recorded question")
        url = server.url
    file = tmp_path / "set" / "case" / "run-2.yaml"

    cassettes = Cassettes(tmp_path, "replay")
    with cassettes.active(), cassettes.case("set", "case", 2), pytest.raises(CassetteMissError) as changed:
        async with httpx.AsyncClient() as client:
            await client.post(f"{url}/chat/completions?page=2&key={KEY}", json=_body("another question"))
    with cassettes.active(), cassettes.case("set", "case", 3), pytest.raises(CassetteMissError) as missing:
        await via_requests(url, "recorded question")

    message = str(changed.value)
    assert f"POST {url}/chat/completions?page=2 in eval case 'case' run 2 of eval set 'set'" in message
    assert f"the cassette file {file} has no such request" in message
    assert "differs in query, body" in message
    assert 'record it with cassette mode "auto"' in message
    assert '"record"' in message
    assert KEY not in message
    assert f"the cassette file {tmp_path / 'set' / 'case' / 'run-3.yaml'} does not exist" in str(missing.value)


@pytest.mark.asyncio
async def test_auto_mode_replays_what_is_recorded_and_records_the_rest(tmp_path: Path) -> None:
    with ChatServer([Reply("old"), Reply("new"), Reply("unused")]) as server:
        cassettes = Cassettes(tmp_path, "auto")
        with cassettes.active(), cassettes.case("set", "case", 1):
            first = await via_openai(server.url, "old question")
        with cassettes.active(), cassettes.case("set", "case", 1):
            second = [await via_openai(server.url, "old question"), await via_openai(server.url, "new question")]

    assert [first, *second] == ["old", "old", "new"]
    assert [_question(body) for body in server.bodies] == ["old question", "new question"]
    assert questions_in(tmp_path / "set" / "case" / "run-1.yaml") == ["old question", "new question"]


@pytest.mark.asyncio
async def test_auto_mode_sends_each_new_repeat_of_a_request_to_the_network(tmp_path: Path) -> None:
    with ChatServer([Reply("sample1"), Reply("sample2"), Reply("sample3")]) as server:
        cassettes = Cassettes(tmp_path, "auto")
        with cassettes.active(), cassettes.case("set", "case", 1):
            await via_httpx(server.url, "same")
        with cassettes.active(), cassettes.case("set", "case", 1):
            samples = [await via_httpx(server.url, "same") for _ in range(3)]

    assert samples == ["sample1", "sample2", "sample3"]
    assert len(server.received) == 3


@pytest.mark.asyncio
async def test_record_mode_rewrites_the_cassette_from_scratch(tmp_path: Path) -> None:
    with ChatServer([Reply("first"), Reply("second")]) as server:
        cassettes = Cassettes(tmp_path, "record")
        with cassettes.active(), cassettes.case("set", "case", 1):
            await via_aiohttp(server.url, "q")
        with cassettes.active(), cassettes.case("set", "case", 1):
            await via_aiohttp(server.url, "q")

    cassettes = Cassettes(tmp_path, "replay")
    with cassettes.active(), cassettes.case("set", "case", 1):
        assert await via_aiohttp(server.url, "q") == "second"
    assert len(server.received) == 2
    assert questions_in(tmp_path / "set" / "case" / "run-1.yaml") == ["q"]


class PlainServer(LocalServer):
    """Answers every request with 200, a cookie and a body that echoes nothing; counts the requests."""

    def __init__(self) -> None:
        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                outer.requests += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Set-Cookie", f"session={KEY}-cookie")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        super().__init__(Handler)


def test_credentials_never_enter_a_cassette_and_a_replay_needs_none(tmp_path: Path) -> None:
    with PlainServer() as server:
        base = f"http://127.0.0.1:{server.port}"
        cassettes = Cassettes(tmp_path, "record")
        with cassettes.active(), cassettes.case("set", "case", 1):
            requests.post(f"{base}/v1/chat?key={KEY}-query&model=m", json={}, headers={"api-key": f"{KEY}-header"})
            requests.post(f"{base}/v1/search", json={"query": "q", "api_key": f"{KEY}-body"})
            with httpx.Client() as client:
                client.post(f"http://user:{KEY}-password@127.0.0.1:{server.port}/v1/chat", json={}, headers=AUTH)
                client.post(f"{base}/v1/chat", json={}, headers={"Cookie": f"c={KEY}", "X-Goog-Api-Key": KEY})

    text = (tmp_path / "set" / "case" / "run-1.yaml").read_text(encoding="utf-8")
    assert KEY not in text
    assert "?model=m" in text
    assert "set-cookie" not in text.lower()

    cassettes = Cassettes(tmp_path, "replay")
    with cassettes.active(), cassettes.case("set", "case", 1):
        assert requests.post(f"{base}/v1/chat?model=m", json={}).status_code == 200
        assert requests.post(f"{base}/v1/search", json={"query": "q", "api_key": "another"}).status_code == 200
        with httpx.Client() as client:
            assert client.post(f"{base}/v1/chat", json={}).status_code == 200
            assert client.post(f"{base}/v1/chat", json={}).status_code == 200
    assert server.requests == 4


@pytest.mark.asyncio
async def test_requests_outside_a_case_run_go_to_the_network_unrecorded(tmp_path: Path) -> None:
    with ChatServer([Reply("live1"), Reply("live2")]) as server:
        cassettes = Cassettes(tmp_path / "cassettes", "replay")
        with cassettes.active():
            replies = [await via_async_httpx(server.url, "q"), await via_requests(server.url, "q")]

    assert replies == ["live1", "live2"]
    assert len(server.received) == 2
    assert not (tmp_path / "cassettes").exists()


@pytest.mark.asyncio
async def test_the_libraries_are_patched_only_while_some_span_is_active(tmp_path: Path) -> None:
    original = httpx.AsyncHTTPTransport.handle_async_request
    first, second = Cassettes(tmp_path, "record"), Cassettes(tmp_path, "replay")
    with ChatServer() as server:
        outer = first.active()
        outer.__enter__()
        inner = second.active()
        inner.__enter__()
        outer.__exit__(None, None, None)  # spans of two evaluations may end in any order
        assert httpx.AsyncHTTPTransport.handle_async_request is not original
        with second.case("set", "case", 1), pytest.raises(CassetteMissError):
            await via_async_httpx(server.url, "q")
        inner.__exit__(None, None, None)

        with pytest.raises(ConfigError, match=r"outside Cassettes.active\(\)"), second.case("set", "case", 1):
            pass
    assert httpx.AsyncHTTPTransport.handle_async_request is original


@pytest.mark.asyncio
async def test_a_failed_write_keeps_the_previous_cassette_and_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ChatServer([Reply("kept"), Reply("lost")]) as server:
        cassettes = Cassettes(tmp_path, "record")
        with cassettes.active(), cassettes.case("set", "case", 1):
            await via_async_httpx(server.url, "q")
        file = tmp_path / "set" / "case" / "run-1.yaml"
        before = file.read_text(encoding="utf-8")

        def fail(*args: Any) -> None:
            raise OSError("disk full")

        monkeypatch.setattr(os, "replace", fail)
        with pytest.raises(StorageError, match="disk full"), cassettes.active(), cassettes.case("set", "case", 1):
            await via_async_httpx(server.url, "q")

    assert file.read_text(encoding="utf-8") == before
    assert sorted(path.name for path in file.parent.iterdir()) == ["run-1.yaml"]


def test_a_cassette_file_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    file = tmp_path / "set" / "case" / "run-1.yaml"
    file.parent.mkdir(parents=True)
    file.write_text("interactions: [", encoding="utf-8")
    cassettes = Cassettes(tmp_path, "replay")

    with (
        pytest.raises(ConfigError, match=f"cassette file {file} is damaged: it is not valid YAML.*record"),
        cassettes.active(),
        cassettes.case("set", "case", 1),
    ):
        pass


def test_cassette_files_are_laid_out_per_eval_set_case_and_run(tmp_path: Path) -> None:
    cassettes = Cassettes(tmp_path, "replay")

    assert cassettes.path == tmp_path
    assert cassettes.mode == "replay"
    assert cassettes.file_for("set 1", "café", 3) == tmp_path / "set 1" / "café" / "run-3.yaml"
    with pytest.raises(ConfigError, match="eval case id 'a/b' is not allowed in a file name"):
        cassettes.file_for("set", "a/b", 1)
    with pytest.raises(ConfigError, match="eval set id '..' is not allowed in a file name"):
        cassettes.file_for("..", "case", 1)


def test_a_bad_mode_is_named_with_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cassette mode 'replay-only' is not one of 'record', 'replay', 'auto'"):
        Cassettes(tmp_path, "replay-only")  # type: ignore[arg-type]


def test_a_file_as_the_cassette_path_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("", encoding="utf-8")

    with pytest.raises(ConfigError, match="is a file; give a directory"):
        Cassettes(tmp_path / "file")


def test_without_vcrpy_the_error_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vcr", None)

    with pytest.raises(MissingDependencyError, match=r"pip install 'agenteval\[cassette\]'"):
        Cassettes(tmp_path)


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    yield
