"""Cassette files: a large one is read and written without stalling the event loop, a damaged one is named.

Everything runs against fake servers on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

import agenteval as ae
from agenteval.cache.cassettes import Cassettes
from agenteval.errors import ConfigError
from tests.llm._chat_server import ChatServer, Reply
from tests.test_evaluation import final_response


def big_cassette(file: Path, url: str, interactions: int, body_size: int) -> None:
    """A cassette of ``interactions`` chat requests with bodies of ``body_size`` characters each."""
    from vcr.serializers import yamlserializer

    filler = "lorem ipsum dolor sit amet " * (body_size // 27)
    recorded = [
        {
            "request": {
                "method": "POST",
                "uri": f"{url}/chat/completions",
                "body": f'{{"model": "m", "messages": [{{"role": "user", "content": "{index} {filler}"}}]}}',
                "headers": {"content-type": ["application/json"]},
            },
            "response": {
                "status": {"code": 200, "message": "OK"},
                "headers": {"content-type": ["application/json"]},
                "body": {"string": f'{{"choices": [{{"message": {{"content": "{index} {filler}"}}}}]}}'},
            },
        }
        for index in range(interactions)
    ]
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(yamlserializer.serialize({"version": 1, "interactions": recorded}), encoding="utf-8")


async def longest_stall(work: Callable[[], object]) -> tuple[float, float]:
    """How long ``work`` (a coroutine function) took, and the longest the loop went without running a ticker."""
    stop = asyncio.Event()
    gaps: list[float] = []

    async def tick() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.002)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.01)
    started = time.perf_counter()
    try:
        await work()  # type: ignore[misc]
    finally:
        took = time.perf_counter() - started
        stop.set()
        await ticker
    return took, max(gaps)


@pytest.mark.asyncio
async def test_a_large_cassette_is_read_and_written_without_stalling_the_event_loop(tmp_path: Path) -> None:
    with ChatServer([Reply("new")]) as server:
        file = tmp_path / "set" / "case" / "run-1.yaml"
        big_cassette(file, server.url, interactions=100, body_size=100_000)
        assert file.stat().st_size > 20_000_000
        cassettes = Cassettes(tmp_path, "auto")

        async def case_run() -> None:
            # Reads the file, and writes it with one new interaction.
            async with cassettes.case("set", "case", 1), httpx.AsyncClient() as client:
                await client.post(f"{server.url}/chat/completions", json={"model": "m", "messages": []})

        with cassettes.active():
            took, stall = await longest_stall(case_run)

    assert len(server.received) == 1
    assert file.read_text(encoding="utf-8").count("- request:") == 101
    # Reading and writing 20 MB takes about half a second, which stalled the loop as long; it must
    # keep running meanwhile, but for the moments the worker thread holds the GIL.
    assert took > 0.15, f"the cassette was read and written in {took:.2f} s: too little to tell"
    assert stall < took / 3, f"the event loop stalled {stall:.2f} s of the case-run's {took:.2f} s"


def damage_cases() -> dict[str, Callable[[str], str]]:
    """Ways a cassette file is damaged, from its good text."""

    def cut_between_interactions(text: str) -> str:
        return text[: text.index("- request:", text.index("- request:") + 1)]

    return {
        "empty": lambda text: "",
        "cut between interactions": cut_between_interactions,
        "cut inside a string": lambda text: text[: text.index("fake-model") + 4],
        "not yaml": lambda text: "interactions: [\n",
        "not a cassette": lambda text: "- just\n- a list\n",
        "an interaction without a response": lambda text: text.replace("  response:", "  answer:", 1),
        "not utf-8": lambda text: "\udcff".join([text[:20], text[20:]]),
    }


DAMAGE = damage_cases()

WHAT = {
    "empty": "it is empty",
    "cut between interactions": "it ends without its closing 'version: 1' line: it was cut short",
    "cut inside a string": "it is not valid YAML",
    "not yaml": "it is not valid YAML (did not find expected node content at line 2, column 1)",
    "not a cassette": "it is not a cassette: it has no list of interactions",
    "an interaction without a response": "its interaction 1 lacks its request or its response",
    "not utf-8": "it is not UTF-8 text (byte 20 cannot be decoded)",
}


def recorded_cassette(tmp_path: Path, url: str) -> Path:
    cassettes = Cassettes(tmp_path, "record")
    with cassettes.active(), cassettes.case("set", "case", 1):
        for question in ("first", "second"):
            httpx.post(f"{url}/chat/completions", json={"model": "m", "messages": [{"content": question}]})
    return tmp_path / "set" / "case" / "run-1.yaml"


def damage(file: Path, how: str) -> bytes:
    text = file.read_text(encoding="utf-8")
    damaged = DAMAGE[how](text).encode("utf-8", "surrogateescape")
    file.write_bytes(damaged)
    return damaged


@pytest.mark.parametrize("mode", ["replay", "auto"])
@pytest.mark.parametrize("how", list(DAMAGE))
def test_a_damaged_cassette_is_named_with_what_is_wrong_and_never_recorded_over(
    tmp_path: Path, how: str, mode: str
) -> None:
    with ChatServer(default=Reply("live")) as server:
        file = recorded_cassette(tmp_path, server.url)
        damaged = damage(file, how)
        sent = len(server.received)
        cassettes = Cassettes(tmp_path, mode)  # type: ignore[arg-type]

        with pytest.raises(ConfigError) as raised, cassettes.active(), cassettes.case("set", "case", 1):
            httpx.post(f"{server.url}/chat/completions", json={"model": "m", "messages": [{"content": "first"}]})

    message = str(raised.value)
    assert message.startswith(f"cassette file {file} is damaged: {WHAT[how]}")
    assert 'delete it, or record it anew with cassette mode "record"' in message
    assert len(server.received) == sent
    assert file.read_bytes() == damaged


def test_record_mode_records_a_damaged_cassette_anew(tmp_path: Path) -> None:
    with ChatServer(default=Reply("live")) as server:
        file = recorded_cassette(tmp_path, server.url)
        damage(file, "cut between interactions")
        cassettes = Cassettes(tmp_path, "record")
        with cassettes.active(), cassettes.case("set", "case", 1):
            httpx.post(f"{server.url}/chat/completions", json={"model": "m", "messages": [{"content": "again"}]})

    cassettes = Cassettes(tmp_path, "replay")
    with cassettes.active(), cassettes.case("set", "case", 1):
        response = httpx.post(f"{server.url}/chat/completions", json={"model": "m", "messages": [{"content": "again"}]})
    assert response.json()["choices"][0]["message"]["content"] == "live"


@pytest.mark.parametrize("mode", ["replay", "auto"])
def test_an_evaluation_fails_the_case_of_a_damaged_cassette_and_says_why(tmp_path: Path, mode: str) -> None:
    def evaluate(url: str, cassette_mode: str) -> ae.EvaluationReport:
        async def agent(message: str) -> str:
            async with httpx.AsyncClient() as client:
                response = await client.post(f"{url}/chat/completions", json={"model": "m", "messages": [message]})
            return str(response.json()["choices"][0]["message"]["content"])

        ev = ae.Evaluator("app", agent, cassette=tmp_path, cassette_mode=cassette_mode, progress=False)
        cases = [ae.EvalCase.of(name, name, expect="hello") for name in ("kept", "damaged")]
        return ev.evaluate(ae.EvalSet.of("set", cases), metrics=[final_response()])

    with ChatServer(default=Reply("hello")) as server:
        evaluate(server.url, "record")
        file = tmp_path / "set" / "damaged" / "run-1.yaml"
        file.write_bytes(file.read_bytes()[:-12])
        damaged = file.read_bytes()
        sent = len(server.received)

        report = evaluate(server.url, mode)

    cases = report.cases.set_index("eval_id")
    assert cases.loc["kept", "status"] == "passed"
    assert cases.loc["damaged", "status"] == "failed"
    assert f"cassette file {file} is damaged" in str(cases.loc["damaged", "error_message"])
    assert len(server.received) == sent
    assert file.read_bytes() == damaged


def test_an_evaluation_reads_a_large_cassette_without_stalling_its_other_cases(tmp_path: Path) -> None:
    worst: list[float] = []

    with ChatServer(default=Reply("ok")) as server:

        async def agent(message: str) -> str:
            if message == "ticker":
                longest, last = 0.0, time.perf_counter()
                for _ in range(300):
                    await asyncio.sleep(0.002)
                    now = time.perf_counter()
                    longest, last = max(longest, now - last), now
                worst.append(longest)
                return "ok"
            async with httpx.AsyncClient() as client:
                response = await client.post(f"{server.url}/chat/completions", json={"model": "m", "messages": []})
            return str(response.json()["choices"][0]["message"]["content"])

        big_cassette(tmp_path / "set" / "big" / "run-1.yaml", server.url, interactions=200, body_size=100_000)
        ev = ae.Evaluator("app", agent, cassette=tmp_path, cassette_mode="auto", progress=False)
        cases = [ae.EvalCase.of("big", "big", expect="ok"), ae.EvalCase.of("ticker", "ticker", expect="ok")]
        report = ev.evaluate(ae.EvalSet.of("set", cases), metrics=[final_response()])

    assert report.passed, report.cases.to_dict("records")
    assert (tmp_path / "set" / "big" / "run-1.yaml").read_text(encoding="utf-8").count("- request:") == 201
    # Reading and writing the 44 MB cassette takes about a second: on the loop, it stalled the ticker as long.
    assert worst[0] < 0.2, f"the other case's loop stalled {worst[0]:.2f} s"
