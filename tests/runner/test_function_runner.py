"""Tests for :class:`FunctionRunner`, :class:`Turn` and :func:`as_runner`."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import json
import math
import re
import subprocess
import sys
import threading
import types
from collections.abc import Awaitable, Sequence
from typing import Any

import numpy as np
import pytest

from agenteval import (
    Callbacks,
    ConfigError,
    EvalCase,
    EvalContext,
    EvalMetric,
    EvalStatus,
    EvaluationReport,
    Evaluator,
    InMemoryEvalSetManager,
    Invocation,
    Message,
    SessionInput,
    Tool,
)
from agenteval._util.sync_bridge import run_sync
from agenteval.errors import ToolMockError
from agenteval.evalset import ExecutionTrace
from agenteval.evalset.message import Role
from agenteval.evalset.models import ArgumentsMatch, MockTool
from agenteval.metric.criterion import Criterion, FinalResponseCriterion, TextCriterion, TextMatchStrategy
from agenteval.runner import FunctionRunner, Runner, Turn, TurnRequest, TurnResult, as_runner
from agenteval.runner.toolmock import ToolMocks
from agenteval.service.callbacks import BeforeInferenceCaseArgs

APP = "app"
SET = "set"
JSON_VALUES = "return JSON values (dict, list, str, number, bool, None), pydantic models or dataclasses"
FINAL_RESPONSE = EvalMetric(
    metric_name="final_response_avg_score",
    threshold=1.0,
    criterion=Criterion(
        final_response=FinalResponseCriterion(text=TextCriterion(match_strategy=TextMatchStrategy.EXACT))
    ),
)


def request(text: str = "hi", session_id: str = "s1", **fields: Any) -> TurnRequest:
    return TurnRequest(message=Message.user(text), session_id=session_id, **fields)


def make_case(eval_id: str, *users: str, **fields: Any) -> EvalCase:
    fields.setdefault("session_input", SessionInput(user_id="ann"))
    return EvalCase(
        eval_id=eval_id,
        conversation=[
            Invocation(user_content=Message.user(text), final_response=Message.assistant(text.upper()))
            for text in users
        ],
        **fields,
    )


async def evaluate(agent: Any, cases: Sequence[EvalCase], **options: Any) -> EvaluationReport:
    manager = InMemoryEvalSetManager()
    await manager.create(APP, SET)
    for case in cases:
        await manager.add_case(APP, SET, case)
    return await Evaluator(APP, agent, eval_set_manager=manager, **options).aevaluate(SET, metrics=[FINAL_RESPONSE])


def statuses(report: EvaluationReport) -> dict[str, EvalStatus | None]:
    return {case.eval_id: case.final_eval_status for case in report.result.eval_case_results}


def errors(report: EvaluationReport) -> dict[str, str]:
    return {case.eval_id: case.error_message for case in report.result.eval_case_results}


# ---------------------------------------------------------------------------------------------- signatures


def upper(text: str) -> str:
    return text.upper()


async def async_upper(text: str) -> str:
    await asyncio.sleep(0)
    return text.upper()


def upper_with_turn(text: str, turn: Turn) -> str:
    assert isinstance(turn, Turn)
    return f"{text.upper()}@{turn.session_id}"


async def async_upper_with_turn(text: str, turn: Turn) -> str:
    await asyncio.sleep(0)
    return f"{text.upper()}@{turn.session_id}"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("function", "expected"),
    [(upper, "HI"), (async_upper, "HI"), (upper_with_turn, "HI@s1"), (async_upper_with_turn, "HI@s1")],
)
async def test_plain_and_async_functions_with_and_without_turn(function: Any, expected: str) -> None:
    result = await FunctionRunner(function).run(request())

    assert isinstance(result, TurnResult)
    assert result.final_response == Message(role=Role.ASSISTANT, content=expected)
    assert result.tools == []
    assert result.invocation_id == ""
    assert result.execution_trace is None


@pytest.mark.asyncio
async def test_var_positional_callable_and_callable_object_get_the_turn() -> None:
    def star(*args: Any) -> str:
        return f"{len(args)} args"

    class Agent:
        def __call__(self, text: str, turn: Turn) -> str:
            return f"{text}/{turn.user_id}"

    class AsyncAgent:
        async def __call__(self, text: str) -> str:
            return text[::-1]

    assert (await FunctionRunner(star).run(request())).final_response == Message.assistant("2 args")
    assert (await FunctionRunner(Agent()).run(request(user_id="ann"))).final_response == Message.assistant("hi/ann")
    assert (await FunctionRunner(AsyncAgent()).run(request("abc"))).final_response == Message.assistant("cba")


@pytest.mark.asyncio
async def test_sync_functions_run_in_a_worker_thread_and_async_ones_on_the_loop() -> None:
    loop_thread = threading.get_ident()
    seen: dict[str, int] = {}

    def blocking(text: str) -> str:
        seen["sync"] = threading.get_ident()
        return text

    async def cooperative(text: str) -> str:
        seen["async"] = threading.get_ident()
        return text

    await FunctionRunner(blocking).run(request())
    await FunctionRunner(cooperative).run(request())

    assert seen["sync"] != loop_thread
    assert seen["async"] == loop_thread


@pytest.mark.asyncio
async def test_a_sync_function_returning_an_awaitable_is_awaited() -> None:
    def returns_coroutine(text: str) -> Awaitable[str]:
        return async_upper(text)

    result = await FunctionRunner(returns_coroutine).run(request())

    assert result.final_response == Message.assistant("HI")


# ---------------------------------------------------------------------------------------------- return values


@pytest.mark.asyncio
async def test_returning_a_message_keeps_it() -> None:
    reply = Message(role=Role.ASSISTANT, content="hello", reasoning_content="because")

    result = await FunctionRunner(lambda text: reply).run(request())

    assert result.final_response == reply


@pytest.mark.asyncio
async def test_a_turn_result_without_a_final_response_gives_no_reply() -> None:
    def silent(text: str, turn: Turn) -> TurnResult:
        turn.record_tool("noop")
        return TurnResult(final_response=None)

    result = await FunctionRunner(silent).run(request())

    assert result.final_response is None
    assert [tool.name for tool in result.tools] == ["noop"]


def forgets_to_return(text: str) -> None:
    text.upper()


async def async_forgets_to_return(text: str) -> None:
    await asyncio.sleep(0)


NONE_ADVICE = (
    "did it forget to return the reply? Return a str, a Message or a TurnResult "
    "(TurnResult(final_response=None) for a turn with no reply)"
)


class ForgetfulAgent:
    def __call__(self, text: str) -> None:
        text.upper()

    async def reply(self, text: str) -> None:
        await asyncio.sleep(0)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("agent", "name"),
    [
        (forgets_to_return, "forgets_to_return"),
        (async_forgets_to_return, "async_forgets_to_return"),
        (functools.partial(forgets_to_return), "forgets_to_return"),
        (ForgetfulAgent(), "ForgetfulAgent"),
        (ForgetfulAgent().reply, "ForgetfulAgent.reply"),
    ],
    ids=["plain", "async", "partial", "callable-object", "method"],
)
async def test_returning_none_raises_naming_the_function_and_the_turn(agent: Any, name: str) -> None:
    with pytest.raises(TypeError) as caught:
        await FunctionRunner(agent).run(request())
    assert str(caught.value) == f"the agent function {name} returned None in turn 1 — {NONE_ADVICE}"


def test_an_agent_returning_none_fails_the_case_with_a_message_saying_so() -> None:
    def my_agent(text: str) -> str | None:
        if text != "second":
            return text.upper()
        return None  # the bug: a branch that forgot to return the reply

    manager = InMemoryEvalSetManager()
    run_sync(manager.create(APP, SET))
    run_sync(manager.add_case(APP, SET, make_case("two-turns", "first", "second")))

    report = Evaluator(APP, my_agent, eval_set_manager=manager).evaluate(SET, metrics=[FINAL_RESPONSE])

    assert statuses(report) == {"two-turns": EvalStatus.FAILED}
    assert errors(report)["two-turns"].endswith(
        f"runner run: TypeError: the agent function my_agent returned None in turn 2 — {NONE_ADVICE}"
    )


@pytest.mark.asyncio
async def test_returning_a_turn_result_keeps_it_and_adds_recorded_tools_when_it_has_none() -> None:
    trace = ExecutionTrace(root_agent_name="root")

    def without_tools(text: str, turn: Turn) -> TurnResult:
        turn.record_tool("search", {"q": text})
        return TurnResult(final_response=Message.assistant("done"), invocation_id="inv-1", execution_trace=trace)

    def with_tools(text: str, turn: Turn) -> TurnResult:
        turn.record_tool("ignored")
        return TurnResult(final_response=Message.assistant("done"), tools=[Tool(name="own")])

    first = await FunctionRunner(without_tools).run(request())
    second = await FunctionRunner(with_tools).run(request())

    assert first.final_response == Message.assistant("done")
    assert [tool.name for tool in first.tools] == ["search"]
    assert first.invocation_id == "inv-1"
    assert first.execution_trace == trace
    assert [tool.name for tool in second.tools] == ["own"]


@pytest.mark.asyncio
async def test_a_wrong_return_type_raises_a_clear_type_error() -> None:
    with pytest.raises(TypeError, match=r"^the agent returned int; return the reply as a str, a Message"):
        await FunctionRunner(lambda text: 42).run(request())


@pytest.mark.asyncio
async def test_a_wrong_return_type_fails_only_that_case() -> None:
    def agent(text: str) -> object:
        return {"reply": text} if text == "bad" else text.upper()

    report = await evaluate(agent, [make_case("good", "ok"), make_case("bad", "bad")])

    assert statuses(report) == {"good": EvalStatus.PASSED, "bad": EvalStatus.FAILED}
    assert "runner run: TypeError: the agent returned dict; return the reply as a str" in errors(report)["bad"]


# ---------------------------------------------------------------------------------------------- tools


@pytest.mark.asyncio
async def test_record_tool_records_name_arguments_result_and_id() -> None:
    def agent(text: str, turn: Turn) -> str:
        turn.record_tool("add", {"a": 1, "b": 2}, 3, id="call-1")
        pending = turn.record_tool("fetch", {"url": "x"})
        pending.result = {"status": 200}
        assert len(turn.tools) == 2
        return "ok"

    result = await FunctionRunner(agent).run(request())

    assert result.tools == [
        Tool(id="call-1", name="add", arguments={"a": 1, "b": 2}, result=3),
        Tool(name="fetch", arguments={"url": "x"}, result={"status": 200}),
    ]


def add(a: int, b: int = 10) -> int:
    """Add two numbers."""
    return a + b


async def async_multiply(a: int, b: int) -> int:
    await asyncio.sleep(0)
    return a * b


@pytest.mark.asyncio
async def test_wrapped_tools_record_bound_arguments_and_results() -> None:
    def agent(text: str, turn: Turn) -> str:
        tool = turn.tool(add)
        assert tool.__name__ == "add"
        assert tool.__doc__ == "Add two numbers."
        return str(tool(1, b=2) + tool(5))

    async def async_agent(text: str, turn: Turn) -> str:
        multiply = turn.tool(async_multiply)
        total = await multiply(3, b=4)
        return str(total + turn.tool(add)(a=1, b=1))

    sync_result = await FunctionRunner(agent).run(request())
    async_result = await FunctionRunner(async_agent).run(request())

    assert sync_result.final_response == Message.assistant("18")
    assert sync_result.tools == [
        Tool(name="add", arguments={"a": 1, "b": 2}, result=3),
        Tool(name="add", arguments={"a": 5}, result=15),
    ]
    assert async_result.final_response == Message.assistant("14")
    assert async_result.tools == [
        Tool(name="async_multiply", arguments={"a": 3, "b": 4}, result=12),
        Tool(name="add", arguments={"a": 1, "b": 1}, result=2),
    ]


@pytest.mark.asyncio
async def test_a_failing_wrapped_tool_is_recorded_without_result_and_raises() -> None:
    def broken(query: str) -> str:
        raise LookupError(query)

    def agent(text: str, turn: Turn) -> str:
        try:
            turn.tool(broken)("nothing")
        except LookupError:
            return "recovered"
        return "unreachable"

    result = await FunctionRunner(agent).run(request())

    assert result.final_response == Message.assistant("recovered")
    assert result.tools == [Tool(name="broken", arguments={"query": "nothing"})]


def make_turn(**fields: Any) -> Turn:
    return Turn(request(**fields), [])


def search(query: str, limit: int = 5) -> list[str]:
    return [f"{query}-{index}" for index in range(limit)]


def test_tool_works_as_a_decorator_with_or_without_a_name() -> None:
    turn = make_turn()

    @turn.tool
    def lookup(key: str) -> str:
        return key.upper()

    @turn.tool(name="web_search")
    def find(query: str) -> str:
        return query[::-1]

    renamed = turn.tool(search, name="search_v2")

    assert (lookup("a"), find("abc"), renamed("x", 1)) == ("A", "cba", ["x-0"])
    assert lookup.__name__ == "lookup"
    assert turn.tools == [
        Tool(name="lookup", arguments={"key": "a"}, result="A"),
        Tool(name="web_search", arguments={"query": "abc"}, result="cba"),
        Tool(name="search_v2", arguments={"query": "x", "limit": 1}, result=["x-0"]),
    ]


def test_tool_records_passed_arguments_only_flattens_kwargs_and_keeps_var_positional_as_a_list() -> None:
    def configure(name: str, *values: int, strict: bool = False, **options: Any) -> str:
        return name

    turn = make_turn()
    turn.tool(search)(query="x")
    turn.tool(configure)("cfg", 1, 2, mode="fast", retries=3)
    turn.tool(configure)("bare")

    # Defaults left out, as in an LLM's tool call: an expected call lists what the agent passes.
    assert [tool.arguments for tool in turn.tools] == [
        {"query": "x"},
        {"name": "cfg", "values": [1, 2], "mode": "fast", "retries": 3},
        {"name": "bare"},
    ]


def test_tool_keeps_a_kwargs_key_that_repeats_a_positional_only_name_nested() -> None:
    def clash(a: int, /, **extra: Any) -> int:
        return a

    turn = make_turn()
    turn.tool(clash)(1, a=2)

    assert turn.tools == [Tool(name="clash", arguments={"a": 1, "extra": {"a": 2}}, result=1)]


def test_a_partial_tool_records_the_arguments_it_receives_under_its_functions_name() -> None:
    turn = make_turn()
    tool = turn.tool(functools.partial(search, "weather", limit=2))

    assert tool() == ["weather-0", "weather-1"]
    assert tool(limit=1) == ["weather-0"]
    assert turn.tools == [
        Tool(name="search", arguments={"query": "weather", "limit": 2}, result=["weather-0", "weather-1"]),
        Tool(name="search", arguments={"query": "weather", "limit": 1}, result=["weather-0"]),
    ]


@pytest.mark.asyncio
async def test_async_tools_callable_objects_and_async_partials_are_recorded() -> None:
    class Translate:
        def __call__(self, text: str, target: str = "fr") -> str:
            return f"{text}:{target}"

    class Summarize:
        async def __call__(self, text: str) -> str:
            await asyncio.sleep(0)
            return text[:2]

    turn = make_turn()
    translate = turn.tool(Translate())
    summarize = turn.tool(Summarize())
    multiply_by_3 = turn.tool(functools.partial(async_multiply, 3))

    assert translate("hi") == "hi:fr"
    assert await summarize("hello") == "he"
    assert await multiply_by_3(b=4) == 12
    assert turn.tools == [
        Tool(name="Translate", arguments={"text": "hi"}, result="hi:fr"),
        Tool(name="Summarize", arguments={"text": "hello"}, result="he"),
        Tool(name="async_multiply", arguments={"a": 3, "b": 4}, result=12),
    ]


def test_a_tool_without_a_signature_records_its_positional_arguments_as_a_list() -> None:
    turn = make_turn()
    maximum: Any = turn.tool(max)

    assert maximum(3, 7) == 7
    assert maximum([], default=0) == 0
    assert turn.tools == [
        Tool(name="max", arguments={"args": [3, 7]}, result=7),
        Tool(name="max", arguments={"args": [[]], "default": 0}, result=0),
    ]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        (lambda query: query, {"query": "x"}),
        (functools.partial(lambda query, limit: query, limit=1), {"query": "x", "limit": 1}),
    ],
)
def test_a_tool_without_a_usable_name_needs_one(tool: Any, arguments: dict[str, Any]) -> None:
    turn = make_turn()
    with pytest.raises(ConfigError, match=r"^cannot name the tool .*: pass its name, e\.g\. turn\.tool\(fn, name="):
        turn.tool(tool)

    echo: Any = turn.tool(tool, name="echo")
    assert echo("x") == "x"
    assert turn.tools == [Tool(name="echo", arguments=arguments, result="x")]


@pytest.mark.parametrize(
    ("function", "name", "message"),
    [
        (search, "", "the tool name must be a non-empty string, got ''"),
        (search, "  ", "the tool name must be a non-empty string, got '  '"),
        ("search", None, r"turn\.tool\(\) wraps a callable tool, got 'search'"),
    ],
)
def test_bad_tool_arguments_are_config_errors(function: Any, name: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_turn().tool(function, name=name)


@pytest.mark.asyncio
async def test_arguments_that_do_not_fit_raise_a_type_error_naming_the_tool_and_record_nothing() -> None:
    ran: list[str] = []

    def guarded(a: int) -> int:
        ran.append("guarded")
        return a

    class Counter:
        async def __call__(self, step: int) -> int:
            ran.append("counter")
            return step

    turn = make_turn()
    with pytest.raises(TypeError, match=r"^tool 'add': too many positional arguments$"):
        turn.tool(add)(1, 2, 3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^tool 'guarded': got an unexpected keyword argument 'b'$"):
        turn.tool(guarded)(1, b=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^tool 'async_multiply': missing a required argument: 'b'$"):
        await turn.tool(async_multiply)(1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^tool 'Counter': missing a required argument: 'step'$"):
        await turn.tool(Counter())()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^tool 'search': multiple values for argument 'query'$"):
        turn.tool(functools.partial(search, query="x"))("y")

    assert turn.tools == []
    assert ran == []


def test_a_tool_whose_signature_misdescribes_it_raises_the_binding_error() -> None:
    def real(*args: Any) -> int:
        return len(args)

    @functools.wraps(search)
    def wrapper(*args: Any) -> int:
        return real(*args)

    turn = make_turn()
    with pytest.raises(TypeError, match=r"^tool 'search': too many positional arguments$"):
        turn.tool(wrapper)(1, 2, 3)
    assert turn.tools == []


@pytest.mark.asyncio
async def test_tool_mocks_apply_under_the_recorded_name_and_arguments() -> None:
    def web_search(query: str, limit: int = 5) -> list[str]:
        raise AssertionError("a mocked tool must not run")

    async def async_web_search(query: str, limit: int = 5) -> list[str]:
        raise AssertionError("a mocked tool must not run")

    mocks = ToolMocks([MockTool(name="search", arguments=ArgumentsMatch(expected={"query": "x"}), result=["mocked"])])
    turn = make_turn(tool_mocks=mocks)

    assert turn.tool(web_search, name="search")("x") == ["mocked"]
    assert await turn.tool(async_web_search, name="search")(query="x") == ["mocked"]
    with pytest.raises(ToolMockError, match='tool "search" configured for mock but no rule matched'):
        turn.tool(web_search, name="search")("x", limit=1)
    assert turn.tool(add)(1) == 11
    assert turn.tools == [
        Tool(name="search", arguments={"query": "x"}, result=["mocked"]),
        Tool(name="search", arguments={"query": "x"}, result=["mocked"]),
        Tool(name="search", arguments={"query": "x", "limit": 1}),
        Tool(name="add", arguments={"a": 1}, result=11),
    ]


# ---------------------------------------------------------------------------------------------- tool values as JSON


class Level(enum.IntEnum):
    HIGH = 2


class Key(str):
    def __str__(self) -> str:
        return "not the key"


def test_tool_values_are_recorded_as_json_copies() -> None:
    def lookup(x: Any, **options: Any) -> dict[str, Any]:
        return {"v": np.int64(x), "grid": np.arange(4).reshape(2, 2), "pair": (np.float32(0.5), np.bool_(True))}

    turn = make_turn()
    returned = turn.tool(lookup)(np.int64(7), labels=(np.str_("a"), "b"), level=Level.HIGH)
    turn.record_tool(
        "ranked",
        types.MappingProxyType({Key("k"): [np.float64(0.25), np.uint8(3)]}),
        np.array([[1.5], [2.5]]),
    )

    assert turn.tools == [
        Tool(
            name="lookup",
            arguments={"x": 7, "labels": ["a", "b"], "level": 2},
            result={"v": 7, "grid": [[0, 1], [2, 3]], "pair": [0.5, True]},
        ),
        Tool(name="ranked", arguments={"k": [0.25, 3]}, result=[[1.5], [2.5]]),
    ]
    recorded = [tool.model_dump(mode="python") for tool in turn.tools]
    assert json.loads(json.dumps(recorded)) == recorded
    assert [type(value) for value in turn.tools[0].arguments.values()] == [int, list, int]
    assert list(turn.tools[1].arguments) == ["k"] and type(next(iter(turn.tools[1].arguments))) is str
    # The agent gets what the tool returned, untouched.
    assert type(returned["v"]) is np.int64
    assert isinstance(returned["grid"], np.ndarray)


def test_the_record_is_a_copy_that_later_changes_by_the_agent_do_not_reach() -> None:
    hits = ["a", "b"]
    query = {"terms": ["x"]}

    def search_all(query: dict[str, Any]) -> list[str]:
        return hits

    turn = make_turn()
    assert turn.tool(search_all)(query) is hits
    pending = turn.record_tool("note", query, hits)
    hits.append("c")
    query["terms"].append("y")

    assert turn.tools == [
        Tool(name="search_all", arguments={"query": {"terms": ["x"]}}, result=["a", "b"]),
        Tool(name="note", arguments={"terms": ["x"]}, result=["a", "b"]),
    ]
    assert pending is turn.tools[1]


def contains_itself() -> list[Any]:
    values: list[Any] = [1]
    values.append(values)
    return values


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ({"v": {1, 2}}, "tool 'lookup' result.v: cannot record a value of type set as JSON; " + JSON_VALUES),
        ([b"raw"], "tool 'lookup' result[0]: cannot record a value of type bytes as JSON; " + JSON_VALUES),
        (
            {"a b": [object()]},
            "tool 'lookup' result['a b'][0]: cannot record a value of type object as JSON; " + JSON_VALUES,
        ),
        ({"v": math.nan}, "tool 'lookup' result.v: cannot record the float nan as JSON, which has no NaN or infinity"),
        (
            np.array([1.0, np.inf]),
            "tool 'lookup' result[1]: cannot record the float inf as JSON, which has no NaN or infinity",
        ),
        ({1: "one"}, "tool 'lookup' result: cannot record a mapping key of type int (1) as JSON; use str keys"),
        (contains_itself(), "tool 'lookup' result[1]: cannot record a value that contains itself as JSON"),
        (
            np.array([{1, 2}], dtype=object),
            "tool 'lookup' result[0]: cannot record a value of type set as JSON; " + JSON_VALUES,
        ),
    ],
    ids=["set", "bytes", "object", "nan", "numpy-inf", "int-key", "cycle", "numpy-object-array"],
)
def test_a_value_json_cannot_hold_raises_naming_the_tool_path_and_type(result: Any, message: str) -> None:
    def lookup() -> Any:
        return result

    turn = make_turn()
    with pytest.raises(TypeError) as raised:
        turn.tool(lookup)()
    assert str(raised.value) == message
    with pytest.raises(TypeError) as raised:
        turn.record_tool("lookup", {"q": 1}, result)
    assert str(raised.value) == message


def test_arguments_json_cannot_hold_raise_before_the_tool_runs() -> None:
    ran: list[Any] = []

    def lookup(keys: Any) -> int:
        ran.append(keys)
        return 1

    turn = make_turn()
    with pytest.raises(TypeError) as raised:
        turn.tool(lookup)({"a", "b"})
    assert (
        str(raised.value) == f"tool 'lookup' arguments.keys: cannot record a value of type set as JSON; {JSON_VALUES}"
    )
    assert ran == []


def test_mocks_match_the_recorded_json_arguments() -> None:
    def lookup(x: int) -> str:
        raise AssertionError("a mocked tool must not run")

    mocks = ToolMocks([MockTool(name="lookup", arguments=ArgumentsMatch(expected={"x": [1, 2]}), result="mocked")])
    turn = make_turn(tool_mocks=mocks)

    assert turn.tool(lookup)(np.array([1, 2])) == "mocked"  # type: ignore[arg-type]
    assert turn.tools == [Tool(name="lookup", arguments={"x": [1, 2]}, result="mocked")]


@pytest.mark.asyncio
async def test_numpy_tool_values_are_saved_with_the_evaluation() -> None:
    def agent(text: str, turn: Turn) -> str:
        def lookup(x: int) -> dict[str, Any]:
            return {"v": np.int64(x)}

        turn.tool(lookup)(np.int64(3))  # type: ignore[arg-type]
        pending = turn.record_tool("score")
        pending.result = np.float32(0.5)
        return text.upper()

    report = await evaluate(agent, [make_case("a", "ok")])

    assert statuses(report) == {"a": EvalStatus.PASSED}
    assert report.inference_results[0][0].inferences[0].tools == [
        Tool(name="lookup", arguments={"x": 3}, result={"v": 3}),
        Tool(name="score", result=0.5),
    ]


@pytest.mark.asyncio
@pytest.mark.parametrize("where", ["tool", "caught", "set-later", "turn-result"])
async def test_a_tool_value_json_cannot_hold_fails_only_that_case(where: str) -> None:
    def agent(text: str, turn: Turn) -> object:
        if text != "bad":
            return text.upper()

        def lookup(x: int) -> dict[str, Any]:
            return {"v": {x}}

        if where == "tool":
            turn.tool(lookup)(1)
        elif where == "caught":
            # Agents often turn a tool's exception into a message to the model; the case fails anyway.
            with contextlib.suppress(Exception):
                turn.tool(lookup)(1)
        elif where == "set-later":
            turn.record_tool("lookup", {"x": 1}).result = {"v": {1}}
        else:
            return TurnResult(
                final_response=Message.assistant("BAD"),
                tools=[Tool(name="lookup", arguments={"x": 1}, result={"v": {1}})],
            )
        return "BAD"

    report = await evaluate(agent, [make_case("good", "ok"), make_case("bad", "bad")])

    assert statuses(report) == {"good": EvalStatus.PASSED, "bad": EvalStatus.FAILED}
    error = f"runner run: TypeError: tool 'lookup' result.v: cannot record a value of type set as JSON; {JSON_VALUES}"
    # Raised while the agent calls the tool, the error also says where it made the call.
    call_site = r" \(raised at \S*test_function_runner\.py:\d+ in agent\)" if where == "tool" else ""
    assert re.search(f"{re.escape(error)}{call_site}$", errors(report)["bad"])


def test_the_runner_does_not_import_numpy() -> None:
    code = "import sys, agenteval.runner.function; sys.exit('numpy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest.mark.asyncio
async def test_a_numpy_str_reply_is_a_str_and_a_numpy_number_reply_fails_the_case() -> None:
    def agent(text: str) -> object:
        return np.str_(text.upper()) if text == "ok" else np.float64(1.0)

    report = await evaluate(agent, [make_case("str", "ok"), make_case("number", "one")])

    assert statuses(report) == {"str": EvalStatus.PASSED, "number": EvalStatus.FAILED}
    reply = report.inference_results[0][0].inferences[0].final_response
    assert reply is not None and type(reply.content) is str
    assert errors(report)["number"].endswith(
        "runner run: TypeError: the agent returned float64; return the reply as a str, a Message or a TurnResult"
    )


# ---------------------------------------------------------------------------------------------- the turn


@pytest.mark.asyncio
async def test_history_holds_earlier_turns_of_the_same_session_only() -> None:
    histories: list[tuple[str, list[tuple[str, str]]]] = []

    def agent(text: str, turn: Turn) -> str:
        histories.append((turn.session_id, [(message.role.value, message.content) for message in turn.history]))
        turn.history.append(Message.user("tampering has no effect"))
        return text.upper()

    runner = FunctionRunner(agent)
    await runner.run(request("one", "s1"))
    await runner.run(request("other", "s2"))
    await runner.run(request("two", "s1"))
    await runner.run(request("three", "s1"))

    assert histories == [
        ("s1", []),
        ("s2", []),
        ("s1", [("user", "one"), ("assistant", "ONE")]),
        ("s1", [("user", "one"), ("assistant", "ONE"), ("user", "two"), ("assistant", "TWO")]),
    ]


@pytest.mark.asyncio
async def test_history_skips_missing_replies() -> None:
    seen: list[list[str]] = []

    def agent(text: str, turn: Turn) -> str | TurnResult:
        seen.append([message.content for message in turn.history])
        return TurnResult(final_response=None) if text == "quiet" else "loud"

    runner = FunctionRunner(agent)
    for text in ("quiet", "speak", "again"):
        await runner.run(request(text))

    assert seen == [[], ["quiet"], ["quiet", "speak", "loud"]]


@pytest.mark.asyncio
async def test_history_per_case_in_parallel_inference() -> None:
    def agent(text: str, turn: Turn) -> str:
        return "|".join([*(message.content for message in turn.history), text])

    cases = [
        EvalCase(
            eval_id=f"case-{index}",
            conversation=[
                Invocation(user_content=Message.user(f"a{index}"), final_response=Message.assistant(f"a{index}")),
                Invocation(
                    user_content=Message.user(f"b{index}"),
                    final_response=Message.assistant(f"a{index}|a{index}|b{index}"),
                ),
            ],
            session_input=SessionInput(user_id="ann"),
        )
        for index in range(8)
    ]

    report = await evaluate(agent, cases, parallel_inference=True, parallelism=8)

    assert set(statuses(report).values()) == {EvalStatus.PASSED}


@pytest.mark.asyncio
async def test_the_turn_carries_case_inputs_and_callback_context() -> None:
    seen: list[dict[str, Any]] = []

    def agent(text: str, turn: Turn) -> str:
        seen.append(
            {
                "text": turn.text,
                "message": turn.message,
                "user_id": turn.user_id,
                "state": turn.state,
                "context_messages": [message.content for message in turn.context_messages],
                "context": dict(turn.context),
            }
        )
        return text.upper()

    def tag(context: EvalContext, args: BeforeInferenceCaseArgs) -> EvalContext:
        return context.with_values(case=args.eval_case_id)

    case = make_case(
        "with-inputs",
        "hi",
        session_input=SessionInput(user_id="bob", state={"plan": "pro"}),
        context_messages=[Message.system("be brief")],
    )

    report = await evaluate(agent, [case], callbacks=Callbacks().register_before_inference_case("tag", tag))

    assert statuses(report) == {"with-inputs": EvalStatus.PASSED}
    assert seen == [
        {
            "text": "hi",
            "message": Message.user("hi"),
            "user_id": "bob",
            "state": {"plan": "pro"},
            "context_messages": ["be brief"],
            "context": {"case": "with-inputs"},
        }
    ]


@pytest.mark.asyncio
async def test_invocation_id_and_execution_trace_propagate_to_the_results() -> None:
    def agent(text: str, turn: Turn) -> str:
        turn.invocation_id = f"inv-{text}"
        if text == "traced":
            turn.execution_trace = ExecutionTrace(root_agent_name="root", status="ok")
        return text.upper()

    report = await evaluate(agent, [make_case("c", "plain", "traced")])

    inference = report.inference_results[0][0]
    assert [turn.invocation_id for turn in inference.inferences] == ["inv-plain", "inv-traced"]
    assert inference.execution_traces == [None, ExecutionTrace(root_agent_name="root", status="ok")]
    per_turn = report.result.eval_case_results[0].eval_metric_result_per_invocation
    assert [turn.actual_invocation.invocation_id for turn in per_turn if turn.actual_invocation] == [
        "inv-plain",
        "inv-traced",
    ]
    assert list(report.invocations["invocation_id"]) == ["inv-plain", "inv-traced"]


@pytest.mark.asyncio
async def test_without_an_invocation_id_each_turn_gets_a_fresh_one() -> None:
    report = await evaluate(upper, [make_case("c", "one", "two")])

    ids = [turn.invocation_id for turn in report.inference_results[0][0].inferences]
    assert all(ids)
    assert len(set(ids)) == 2


@pytest.mark.asyncio
async def test_an_exception_fails_only_that_case() -> None:
    async def agent(text: str) -> str:
        if text == "explode":
            raise ValueError("kaboom")
        return text.upper()

    report = await evaluate(
        agent,
        [make_case("before", "ok"), make_case("boom", "fine", "explode"), make_case("after", "yes")],
        parallel_inference=True,
    )

    assert statuses(report) == {"before": EvalStatus.PASSED, "boom": EvalStatus.FAILED, "after": EvalStatus.PASSED}
    message = errors(report)["boom"]
    assert message.startswith("inference eval case (evalCaseID=boom, sessionID=")
    assert re.search(r"runner run: ValueError: kaboom \(raised at \S*test_function_runner\.py:\d+ in agent\)$", message)


# ---------------------------------------------------------------------------------------------- as_runner


class EchoRunner:
    async def run(self, request: TurnRequest) -> TurnResult:
        return TurnResult(final_response=Message.assistant(request.message.content))


def test_as_runner_keeps_runners_and_wraps_callables() -> None:
    runner = EchoRunner()
    assert isinstance(runner, Runner)
    assert as_runner(runner) is runner
    wrapped = as_runner(upper)
    assert isinstance(wrapped, FunctionRunner)
    assert wrapped.function is upper
    assert repr(wrapped) == "FunctionRunner('upper')"


class CallableRunner(EchoRunner):
    def __call__(self, text: str) -> str:
        return "called"


class SyncRun:
    def run(self, request: TurnRequest) -> TurnResult:
        return TurnResult()


class CallableWithSyncRun(SyncRun):
    def __call__(self, text: str) -> str:
        return text


class Echo:
    def __call__(self, text: str) -> str:
        return text


@pytest.mark.asyncio
async def test_an_object_with_an_async_run_is_a_runner_even_if_it_is_callable() -> None:
    runner = CallableRunner()

    assert as_runner(runner) is runner
    assert (await as_runner(runner).run(request("ping"))).final_response == Message.assistant("ping")


@pytest.mark.parametrize(
    "agent", [Echo(), CallableWithSyncRun(), functools.partial(upper_with_turn), lambda text: text]
)
def test_as_runner_wraps_callables_without_an_async_run(agent: Any) -> None:
    wrapped = as_runner(agent)

    assert isinstance(wrapped, FunctionRunner)
    assert wrapped.function is agent


def test_as_runner_rejects_a_run_that_is_not_async() -> None:
    message = (
        r"^the agent <.*SyncRun object at .*> has a run method that is not async: define "
        r"`async def run\(self, request: TurnRequest\) -> TurnResult`, or pass a function fn\(message\) / "
        r"fn\(message, turn\)$"
    )
    with pytest.raises(ConfigError, match=message):
        as_runner(SyncRun())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="has a run method that is not async"):
        Evaluator(APP, SyncRun())  # type: ignore[arg-type]


def test_as_runner_rejects_a_runner_class() -> None:
    with pytest.raises(
        ConfigError, match=r"^the agent is the class EchoRunner; pass an instance, e\.g\. EchoRunner\(\)$"
    ):
        as_runner(EchoRunner)


@pytest.mark.parametrize("agent", [42, "agent", None])
def test_as_runner_rejects_non_callables(agent: Any) -> None:
    message = (
        rf"^the agent must be a Runner or a callable, got {re.escape(repr(agent))}: a Runner defines "
        r"`async def run\(self, request: TurnRequest\) -> TurnResult`; a callable is fn\(message\) or "
        r"fn\(message, turn\)$"
    )
    with pytest.raises(ConfigError, match=message):
        as_runner(agent)
    with pytest.raises(ConfigError, match="the agent must be callable"):
        FunctionRunner(agent)


def test_pydantic_models_and_dataclasses_are_recorded_as_their_json() -> None:
    import dataclasses

    import pydantic

    class Weather(pydantic.BaseModel):
        city: str
        degrees: float

    @dataclasses.dataclass
    class Query:
        city: str
        days: tuple[int, ...]

    def forecast(query: Query) -> Weather:
        return Weather(city=query.city, degrees=21.5)

    turn = make_turn()
    result = turn.tool(forecast)(Query("Oslo", (1, 2)))

    assert isinstance(result, Weather)
    assert turn.tools == [
        Tool(
            name="forecast",
            arguments={"query": {"city": "Oslo", "days": [1, 2]}},
            result={"city": "Oslo", "degrees": 21.5},
        )
    ]


def test_dates_decimals_uuids_and_enums_are_recorded_as_pydantic_writes_them() -> None:
    import datetime
    import decimal
    import enum
    import uuid

    class Color(enum.Enum):
        RED = "red"

    def when(at: datetime.date, amount: decimal.Decimal, key: uuid.UUID, color: Color) -> datetime.datetime:
        return datetime.datetime(2024, 1, 2, 3, 4, 5)

    turn = make_turn()
    turn.tool(when)(datetime.date(2024, 1, 1), decimal.Decimal("1.50"), uuid.UUID(int=1), Color.RED)

    assert turn.tools == [
        Tool(
            name="when",
            arguments={
                "at": "2024-01-01",
                "amount": "1.50",
                "key": "00000000-0000-0000-0000-000000000001",
                "color": "red",
            },
            result="2024-01-02T03:04:05",
        )
    ]


def three_arguments(a: str, b: str, c: str) -> str:
    return a


def no_arguments() -> str:
    return "hi"


async def async_no_arguments() -> str:
    return "hi"


def keyword_only(text: str, *, model: str) -> str:
    return text


class NoArgumentCall:
    def __call__(self) -> str:
        return "hi"


@pytest.mark.parametrize(
    ("agent", "name", "signature", "why"),
    [
        (three_arguments, "three_arguments", "(a, b, c)", "missing a required argument: 'c'"),
        (no_arguments, "no_arguments", "()", "too many positional arguments"),
        (async_no_arguments, "async_no_arguments", "()", "too many positional arguments"),
        (keyword_only, "keyword_only", "(text, *, model)", "missing a required argument: 'model'"),
        (NoArgumentCall(), "NoArgumentCall", "()", "too many positional arguments"),
    ],
)
def test_an_agent_whose_signature_cannot_take_a_turn_is_refused_before_it_runs(
    agent: Any, name: str, signature: str, why: str
) -> None:
    code = agent.__code__ if hasattr(agent, "__code__") else type(agent).__call__.__code__
    message = (
        rf"^the agent function {name} \(test_function_runner\.py:{code.co_firstlineno}\) has the signature "
        rf"{re.escape(signature)}, so it cannot be called with a turn \({re.escape(why)}\): an agent is "
        r"fn\(message\) or fn\(message, turn\), plain or async, or an object with "
        r"`async def run\(self, request: TurnRequest\) -> TurnResult`$"
    )

    with pytest.raises(ConfigError, match=message):
        FunctionRunner(agent)
    with pytest.raises(ConfigError, match=message):
        Evaluator(APP, agent)


@pytest.mark.parametrize(
    "agent",
    [
        max,  # a builtin whose signature cannot be read
        functools.partial(three_arguments, "a"),
        lambda text, turn=None, *rest, **options: text,
        lambda *args: args[0],
    ],
)
def test_agents_that_can_take_a_turn_or_cannot_be_inspected_are_accepted(agent: Any) -> None:
    assert FunctionRunner(agent).function is agent
