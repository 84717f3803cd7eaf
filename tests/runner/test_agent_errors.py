"""What a user sees when their agent has a bug: where it raised, and a tool call it never awaited."""

from __future__ import annotations

import asyncio
import functools
import gc
import inspect
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import agenteval as ae
from agenteval.runner import Turn, TurnRequest, TurnResult

HERE = Path(__file__)
TOOL_ERROR = "the agent called the async tool check_stock but never awaited it"
PLAIN_AGENT_ADVICE = (
    ", which a plain (not async) agent cannot do: make the agent `async def` and write `await check_stock(...)`, "
    "or pass a sync tool"
)


def line_of(marker: str) -> int:
    """The line of this file that ends with ``# <marker>``."""
    lines = HERE.read_text().splitlines()
    return next(number for number, line in enumerate(lines, start=1) if line.endswith(f"# {marker}"))


def evaluate(agent: Any, *texts: str, **options: Any) -> list[ae.EvalCaseResult]:
    cases = [ae.EvalCase.of(f"case-{index}", text, expect=text.upper()) for index, text in enumerate(texts)]
    evaluator = ae.Evaluator("app", agent, progress=False, **options)
    report = evaluator.evaluate(ae.EvalSet.of("set", cases), metrics=[ae.EvalMetric.final_response()])
    return report.result.eval_case_results


def error_of(agent: Any, text: str = "apple", **options: Any) -> str:
    [result] = evaluate(agent, text, **options)
    assert result.final_eval_status == ae.EvalStatus.FAILED
    return result.error_message


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> str:
    """Run from the repository root; return this file's name as the error message shows it."""
    monkeypatch.chdir(HERE.parents[2])
    return "tests/runner/test_agent_errors.py"


# ---------------------------------------------------------------------------------------------- where it raised


def check_stock(item: str) -> int:
    stock: dict[str, dict[str, int]] = {"apple": {}}
    return stock[item]["available"]  # check_stock raises


async def async_check_stock(item: str) -> int:
    await asyncio.sleep(0)
    return check_stock(item)


def sync_agent(text: str) -> str:
    return str(check_stock(text))


async def async_agent(text: str) -> str:
    return str(await async_check_stock(text))


def agent_with_tool(text: str, turn: Turn) -> str:
    return str(turn.tool(check_stock)(text))


def agent_calling_a_tool_wrongly(text: str, turn: Turn) -> str:
    lookup: Any = turn.tool(check_stock)
    return str(lookup())  # wrong tool call


class ShopRunner:
    async def run(self, request: TurnRequest) -> TurnResult:
        raise RuntimeError(f"no shop for {request.message.content}")  # runner raises


@pytest.mark.parametrize(
    ("agent", "error", "where"),
    [
        (sync_agent, "KeyError: 'available'", "check_stock raises"),
        (async_agent, "KeyError: 'available'", "check_stock raises"),
        (agent_with_tool, "KeyError: 'available'", "check_stock raises"),
        (ShopRunner(), "RuntimeError: no shop for apple", "runner raises"),
        # agenteval raises this one, for the agent's call: the message shows the agent's line.
        (
            agent_calling_a_tool_wrongly,
            "TypeError: tool 'check_stock': missing a required argument: 'item'",
            "wrong tool call",
        ),
    ],
    ids=["sync-agent", "async-agent", "wrapped-tool", "runner", "wrong-tool-arguments"],
)
def test_the_error_message_ends_with_where_the_agent_raised(
    in_repo: str, caplog: pytest.LogCaptureFixture, agent: Any, error: str, where: str
) -> None:
    caplog.set_level(logging.DEBUG, logger="agenteval")
    function = {"runner raises": "run", "wrong tool call": "agent_calling_a_tool_wrongly"}.get(where, "check_stock")

    message = error_of(agent)

    assert message.startswith("inference eval case (evalCaseID=case-0, sessionID=")
    assert message.endswith(f"): runner run: {error} (raised at {in_repo}:{line_of(where)} in {function})")
    [record] = [record for record in caplog.records if record.name == "agenteval" and record.exc_info]
    assert record.levelno == logging.DEBUG
    assert record.getMessage().startswith("the agent raised in turn 1 of session ")
    assert "Traceback (most recent call last):" in caplog.text
    assert f'test_agent_errors.py", line {line_of(where)}, in {function}' in caplog.text


def test_a_file_outside_the_working_directory_is_shown_by_its_base_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)

    message = error_of(sync_agent)

    assert message.endswith(
        f"KeyError: 'available' (raised at test_agent_errors.py:{line_of('check_stock raises')} in check_stock)"
    )


def test_a_timeout_error_from_a_plain_agent_keeps_where_it_was_raised(in_repo: str) -> None:
    # asyncio copies a TimeoutError out of a worker thread without its traceback.
    def agent(text: str) -> str:
        raise TimeoutError("upstream API")  # plain agent times out

    message = error_of(agent, turn_timeout=10)

    assert message.endswith(
        f"runner run: TimeoutError: upstream API (raised at {in_repo}:{line_of('plain agent times out')} in agent)"
    )


def raises_config_error(text: str) -> str:
    raise ae.ConfigError("the shop needs an API key: set SHOP_KEY")


def forgets_to_return(text: str) -> None:
    text.upper()


async def slow(text: str) -> str:
    await asyncio.sleep(30)
    return text


@pytest.mark.parametrize(
    ("agent", "options", "ending"),
    [
        (raises_config_error, {}, "runner run: the shop needs an API key: set SHOP_KEY"),
        (forgets_to_return, {}, "(TurnResult(final_response=None) for a turn with no reply)"),
        (slow, {"turn_timeout": 0.05}, "runner run: turn 1 timed out after 0.05 s (turn_timeout)"),
    ],
    ids=["agenteval-error", "agenteval-type-error", "turn-timeout"],
)
def test_errors_that_say_what_to_fix_get_no_location(agent: Any, options: dict[str, Any], ending: str) -> None:
    assert error_of(agent, **options).endswith(ending)


# ---------------------------------------------------------------------------------------------- never awaited


def new_stock() -> tuple[list[str], Callable[[str], Awaitable[str]]]:
    """A fresh async tool and the list of items it was really called with."""
    ran: list[str] = []

    async def check_stock(item: str) -> str:
        """How many of ``item`` are in stock."""
        await asyncio.sleep(0)
        ran.append(item)
        return "3"

    return ran, check_stock


def fails_with(agent: Any) -> tuple[str, list[list[ae.Tool]]]:
    """The error message of a case run with ``agent``, and the tool calls each turn recorded."""
    turns: list[list[ae.Tool]] = []

    def keeping_the_turn(text: str, turn: Turn) -> Any:
        turns.append(turn.tools)
        return agent(text, turn)

    keeping: Any = keeping_the_turn
    if inspect.iscoroutinefunction(agent):

        async def keeping_the_async_turn(text: str, turn: Turn) -> Any:
            turns.append(turn.tools)
            return await agent(text, turn)

        keeping = keeping_the_async_turn
    message = error_of(keeping)
    gc.collect()  # a coroutine left unclosed would warn now, failing the test
    return message, turns


def test_an_async_agent_that_forgets_await_fails_the_turn_and_records_nothing() -> None:
    ran, check_stock = new_stock()

    async def agent(text: str, turn: Turn) -> str:
        lookup = turn.tool(check_stock)
        stock = lookup(text)  # the bug: no await
        return f"{stock} left"

    message, turns = fails_with(agent)

    assert message.endswith(f"runner run: TypeError: {TOOL_ERROR}: write `await check_stock(...)`")
    assert turns == [[]]
    assert ran == []


def test_a_plain_agent_calling_an_async_tool_is_told_to_become_async() -> None:
    ran, check_stock = new_stock()

    def agent(text: str, turn: Turn) -> str:
        return f"{turn.tool(check_stock)(text)} left"

    message, turns = fails_with(agent)

    assert message.endswith(f"runner run: TypeError: {TOOL_ERROR}{PLAIN_AGENT_ADVICE}")
    assert turns == [[]]
    assert ran == []


def test_an_error_from_using_the_coroutine_as_the_result_is_quoted() -> None:
    _, check_stock = new_stock()

    async def agent(text: str, turn: Turn) -> str:
        stock: Any = turn.tool(check_stock)(text)
        return str(stock + "1")

    message, _ = fails_with(agent)

    assert message.endswith(
        f"{TOOL_ERROR}: write `await check_stock(...)`; the agent then raised TypeError: "
        "unsupported operand type(s) for +: 'coroutine' and 'str'"
    )


def test_an_unawaited_call_in_a_timed_out_turn_does_not_warn() -> None:
    _, check_stock = new_stock()

    async def agent(text: str, turn: Turn) -> str:
        turn.tool(check_stock)(text)
        await asyncio.sleep(30)
        return text

    message = error_of(agent, turn_timeout=0.05)
    gc.collect()

    assert message.endswith("runner run: turn 1 timed out after 0.05 s (turn_timeout)")


def test_awaited_calls_are_recorded_also_when_a_plain_agent_returns_the_call() -> None:
    ran, check_stock = new_stock()

    async def awaits(text: str, turn: Turn) -> str:
        return await turn.tool(check_stock)(text)

    async def gathers(text: str, turn: Turn) -> str:
        lookup = turn.tool(check_stock)
        counts = await asyncio.gather(lookup(text), lookup(text.upper()))
        return "+".join(counts)

    def returns_the_call(text: str, turn: Turn) -> Any:
        # A plain function returning an awaitable is awaited by the runner: nothing is left unawaited.
        return turn.tool(check_stock)(text)

    for agent in (awaits, gathers, returns_the_call):
        [result] = evaluate(agent, "x")
        assert not result.error_message, agent
    gc.collect()

    assert ran == ["x", "x", "X", "x"]


def test_an_async_agent_returning_a_coroutine_is_asked_whether_it_forgot_await() -> None:
    async def answer(text: str) -> str:
        return text.upper()

    async def agent(text: str) -> Any:
        return answer(text)

    message = error_of(agent)
    gc.collect()

    assert message.endswith(
        "runner run: TypeError: the agent function agent returned a coroutine in turn 1 — did it forget `await`? "
        "Return a str, a Message or a TurnResult"
    )


def test_a_wrapped_async_tool_still_looks_like_the_async_function() -> None:
    turn = Turn(TurnRequest(message=ae.Message.user("hi"), session_id="s"), [])
    _, check_stock = new_stock()

    class Inventory:
        async def __call__(self, item: str, warehouse: str = "main") -> int:
            return 1

    tools: list[Callable[..., Awaitable[Any]]] = [check_stock, functools.partial(check_stock), Inventory()]
    for tool in tools:
        wrapped = turn.tool(tool)
        # Frameworks that take the wrapped tool decide from these whether to await it and what to pass.
        assert inspect.iscoroutinefunction(wrapped), tool
        assert inspect.signature(wrapped) == inspect.signature(tool), tool
    named = turn.tool(check_stock, name="stock")
    assert (named.__name__, named.__doc__) == ("check_stock", "How many of ``item`` are in stock.")
