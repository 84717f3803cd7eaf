"""Run any Python function as the agent under test."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import inspect
import math
import threading
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from types import CodeType
from typing import Any, ParamSpec, TypeVar, cast, overload

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_jsonable_python

from agenteval._util.callable_names import short_name
from agenteval._util.code_location import code_location
from agenteval._util.threads import DaemonThreadPool
from agenteval._util.trpc_json import MAX_DEPTH, json_depth
from agenteval.context import EvalContext
from agenteval.errors import ConfigError, ToolMockError, describe_exception
from agenteval.evalset.message import Message
from agenteval.evalset.models import Tool
from agenteval.evalset.trace import ExecutionTrace
from agenteval.runner.base import Runner, TurnRequest, TurnResult
from agenteval.runner.tool_replay import TurnReplay
from agenteval.runner.toolmock import ToolMocks, static_result

__all__ = ["MAX_THREADS", "AgentFunction", "FunctionRunner", "Turn", "as_runner", "plain_agent"]

MAX_THREADS = 128
"""Most turns of a plain (blocking) agent function that run at once; async agents have no such cap."""

P = ParamSpec("P")
R = TypeVar("R")

AgentFunction = Callable[..., Any]
"""``fn(message)`` or ``fn(message, turn)``, plain or ``async``, returning the reply (see :class:`FunctionRunner`)."""

_REPLY_TYPES = "a str, a Message or a TurnResult"


class Turn:
    """One user turn, handed to an agent function: the input, the session, and a tool recorder.

    Attributes:
        message: The user's message.
        session_id: The session (shared by every turn of a case).
        user_id: The user the agent runs as.
        history: Earlier messages of this session (user and assistant, oldest first).
        context_messages: Context the case injects into every model call.
        state: Runtime state from the case's ``sessionInput.state``.
        context: Values set by callbacks.
        tools: Tool calls recorded so far in this turn.
        invocation_id: Set it to report the agent's own id for the turn.
        execution_trace: Set it to report an execution trace for the turn.
        tool_mocks: The turn's tool mocks (applied by :meth:`tool`), or ``None``.
        tool_replay: The recorded tool results that answer the turn's calls (applied by :meth:`tool`
            after the mocks), or ``None``.
    """

    def __init__(
        self, request: TurnRequest, history: list[Message], loop: asyncio.AbstractEventLoop | None = None
    ) -> None:
        self.message: Message = request.message
        self.session_id: str = request.session_id
        self.user_id: str = request.user_id
        self.history: list[Message] = history
        self.context_messages: list[Message] = request.context_messages
        self.state: dict[str, Any] = request.state
        self.context: EvalContext = request.context
        self.tools: list[Tool] = []
        self.invocation_id: str = ""
        self.execution_trace: ExecutionTrace | None = None
        self.tool_mocks: ToolMocks | None = request.tool_mocks
        self.tool_replay: TurnReplay | None = request.tool_replay
        self._loop = loop
        self._async_calls: list[tuple[str, Coroutine[Any, Any, Any]]] = []
        """The coroutines of the turn's async tool calls, so that the turn can tell one never awaited."""

    @property
    def text(self) -> str:
        """The user's message text."""
        return self.message.content

    def record_tool(self, name: str, arguments: Any = None, result: Any = None, *, id: str = "") -> Tool:
        """Record a tool call the agent made in this turn.

        The call is recorded as JSON values, copied, so that later changes to the agent's objects do
        not change the record: numpy numbers and arrays become Python numbers and lists, tuples
        become lists and mappings with ``str`` keys become dicts. Anything else JSON cannot hold (an
        arbitrary object, a set, bytes, NaN or an infinity) is an error naming the tool, the path of
        the value (``result.items[0]``) and its type. A ``result`` set on the returned call
        afterwards is converted when the turn ends.

        Args:
            name: Tool name.
            arguments: Call arguments (usually a dict).
            result: What the tool returned.
            id: Tool call id, if the agent has one.

        Returns:
            The recorded call; its ``result`` may still be set afterwards.

        Raises:
            TypeError: ``arguments`` or ``result`` holds a value that cannot be recorded as JSON. The
                turn fails when it ends even if the agent catches this.
        """
        tool = Tool(id=id, name=name, arguments=arguments, result=result)
        self.tools.append(tool)
        _record_as_json(tool)
        return tool

    @overload
    def tool(self, function: Callable[P, R], /, *, name: str | None = None) -> Callable[P, R]: ...

    @overload
    def tool(
        self, function: None = None, /, *, name: str | None = None
    ) -> Callable[[Callable[P, R]], Callable[P, R]]: ...

    def tool(
        self, function: Callable[P, R] | None = None, /, *, name: str | None = None
    ) -> Callable[P, R] | Callable[[Callable[P, R]], Callable[P, R]]:
        """Wrap a tool so that every call is recorded with its arguments and result.

        Use it as ``turn.tool(fn)``, ``turn.tool(fn, name="search")``, or as a decorator
        (``@turn.tool``, ``@turn.tool(name="search")``). The tool may be a plain or ``async``
        function, a method, a :func:`functools.partial` or an object with a (plain or ``async``)
        ``__call__``.

        An async tool is recorded when the agent awaits the call; a call the agent never awaits
        (a forgotten ``await``, or a plain agent calling an async tool) fails the turn.

        A call is recorded with the arguments it passes, bound to parameter names: positional
        arguments get their names, the arguments a :func:`functools.partial` supplies are included,
        ``**kwargs`` are merged into the other arguments and ``*args`` is a list under its name.
        Defaults the caller leaves out are not recorded, as an LLM's tool call leaves them out, so
        an expected call lists only what the agent passes. Without an inspectable signature (some
        builtins), the call is recorded as ``{"args": [...], **kwargs}``. Arguments that do not fit
        the tool's signature raise :class:`TypeError` naming the tool; nothing is recorded and the
        tool is not called. A call that raises is recorded without a result. The agent gets what the
        tool returned; the record holds a JSON copy of the arguments and the result (see
        :meth:`record_tool`), and a value that cannot be recorded raises :class:`TypeError`.

        When the turn mocks the tool (the eval set's ``toolMock``, looked up by the recorded name
        and arguments), the mocked result is returned and recorded and the tool is not called.
        Otherwise, when the evaluation replays an earlier report's tool results (``tool_replay``)
        and one answers the call, that recorded JSON value is returned (a dict where the tool
        returned a model) and recorded, marked replayed, and the tool is not called.

        Example::

            def agent(message: str, turn: Turn) -> str:
                @turn.tool(name="search")
                def web_search(query: str, limit: int = 5) -> list[str]: ...

                hits = web_search("weather")  # recorded: search {"query": "weather"}
                return hits[0]

        Args:
            function: The tool; omit it to get a decorator.
            name: The tool name to record; by default the function's ``__name__`` (for a partial,
                its function's; for a callable object, its class name).

        Returns:
            A function with the same signature that records each call (or, without ``function``,
            a decorator that makes one).

        Raises:
            ConfigError: ``function`` is not callable, ``name`` is empty, or no name can be derived
                (a lambda): pass ``name=``.
        """
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise ConfigError(f"the tool name must be a non-empty string, got {name!r}")
        if function is None:

            def decorate(function: Callable[P, R]) -> Callable[P, R]:
                return self.tool(function, name=name)

            return decorate
        if not callable(function):
            raise ConfigError(f"turn.tool() wraps a callable tool, got {function!r}")
        tool_name = name or _tool_name(function)
        if tool_name is None:
            raise ConfigError(
                f'cannot name the tool {function!r}: pass its name, e.g. turn.tool(fn, name="search") '
                'or @turn.tool(name="search")'
            )
        arguments_of = _call_recorder(function, tool_name)

        if _is_async(function):

            @functools.wraps(function)
            async def record_async(*args: Any, **kwargs: Any) -> Any:
                call = self.record_tool(tool_name, arguments_of(args, kwargs))
                if self.tool_mocks is not None and self.tool_mocks.mocks(tool_name):
                    result = await self.tool_mocks.result(tool_name, call.arguments)
                elif self.tool_replay is not None and (replayed := self.tool_replay.answer(call)) is not None:
                    result = replayed
                else:
                    result = await cast(Awaitable[Any], function(*args, **kwargs))
                call.result = result
                _record_as_json(call)
                return result

            return cast(Callable[P, R], _AsyncTool(record_async, tool_name, self._async_calls))

        @functools.wraps(function)
        def record(*args: Any, **kwargs: Any) -> Any:
            call = self.record_tool(tool_name, arguments_of(args, kwargs))
            if self.tool_mocks is not None and self.tool_mocks.mocks(tool_name):
                result = self._mocked_result(self.tool_mocks, tool_name, call.arguments)
            elif self.tool_replay is not None and (replayed := self.tool_replay.answer(call)) is not None:
                result = replayed
            else:
                result = function(*args, **kwargs)
            call.result = result
            _record_as_json(call)
            return result

        return cast(Callable[P, R], record)

    def _close_unawaited_calls(self) -> str | None:
        """Close the async tool calls the agent never awaited; return the first one's tool name, if any.

        Closed, they record nothing and Python does not warn that they were never awaited.
        """
        unawaited = [
            (name, call) for name, call in self._async_calls if inspect.getcoroutinestate(call) == inspect.CORO_CREATED
        ]
        self._async_calls.clear()
        for _, call in unawaited:
            call.close()
        return unawaited[0][0] if unawaited else None

    def _mocked_result(self, mocks: ToolMocks, name: str, arguments: Any) -> Any:
        rule = mocks.rule_for(name, arguments)
        if rule.llm_generator is None:
            return static_result(rule)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            # A plain agent function runs in a worker thread: ask the event loop to generate.
            if self._loop is not None:
                return asyncio.run_coroutine_threadsafe(mocks.generate(rule, name, arguments), self._loop).result()
        raise ToolMockError(
            f'tool "{name}": an LLM-generated mock result needs an async tool (or a plain agent function) '
            "so that the model can be awaited"
        )


class _AsyncTool:
    """An async tool wrapped by :meth:`Turn.tool`: it keeps each call's coroutine for the turn.

    An ``async def`` wrapper runs nothing until awaited, so it could not see a call the agent never
    awaits. This object passes for a coroutine function with :func:`inspect.iscoroutinefunction`
    (it has one's attributes, as a compiled function would; ``inspect.markcoroutinefunction`` is
    Python 3.12+), so frameworks that check it still await the tool.
    """

    def __init__(
        self,
        record: Callable[..., Coroutine[Any, Any, Any]],
        name: str,
        calls: list[tuple[str, Coroutine[Any, Any, Any]]],
    ) -> None:
        functools.update_wrapper(self, record)  # name, doc and __wrapped__, so the tool's signature shows
        self.__code__: CodeType = record.__code__
        self.__defaults__: tuple[Any, ...] | None = None
        self.__kwdefaults__: dict[str, Any] | None = None
        self._record = record
        self._name = name
        self._calls = calls

    def __call__(self, *args: Any, **kwargs: Any) -> Coroutine[Any, Any, Any]:
        call = self._record(*args, **kwargs)
        self._calls.append((self._name, call))
        return call


_JSON_VALUES = "return JSON values (dict, list, str, number, bool, None), pydantic models or dataclasses"


class _NotJson(Exception):
    """Part of a value cannot be recorded as JSON; ``steps`` lead to it from the value, innermost first."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.steps: list[str] = []


def _json_value(value: Any, path: str) -> Any:
    """A JSON copy of ``value``, for the record of a tool call (see :meth:`Turn.record_tool`).

    Args:
        value: What to copy.
        path: What ``value`` is, for error messages (``tool 'lookup' result``).

    Raises:
        TypeError: Part of ``value`` cannot be recorded as JSON; the message names its path
            (``tool 'lookup' result.items[0]``) and type.
    """
    try:
        return _json_copy(value, set())
    except _NotJson as exc:
        steps = exc.steps[::-1]
        if len(steps) > 10:  # a value nested too deeply
            steps = [*steps[:8], "…", *steps[-2:]]
        raise TypeError(f"{path}{''.join(steps)}: {exc.problem}") from None


def _json_copy(value: Any, containers: set[int]) -> Any:
    """:func:`_json_value`'s work; ``containers`` holds the ids of the mappings and lists around ``value``.

    The path to a bad part is only worked out when there is one: most tool calls record fine.
    """
    if value is None or isinstance(value, bool):
        return value
    # Subclasses (a numpy float64 or str_, an IntEnum) become the plain type JSON writes.
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotJson(f"cannot record the float {value} as JSON, which has no NaN or infinity")
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)
    if not isinstance(value, Mapping | list | tuple):
        return _json_copy(_plain_json(value), containers)
    if id(value) in containers:
        raise _NotJson("cannot record a value that contains itself as JSON")
    if len(containers) == MAX_DEPTH:
        depth = len(containers) + json_depth(value)
        raise _NotJson(
            f"nested {depth} levels deep, over the limit of {MAX_DEPTH} levels; JSON nested this deeply cannot be"
            " stored and read back: flatten the value, or record it as a JSON string"
        )
    containers.add(id(value))
    try:
        if isinstance(value, Mapping):
            copied: dict[str, Any] = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise _NotJson(
                        f"cannot record a mapping key of type {type(key).__name__} ({key!r}) as JSON; use str keys"
                    )
                try:
                    copied[str.__str__(key)] = _json_copy(item, containers)
                except _NotJson as exc:
                    exc.steps.append(f".{key}" if key.isidentifier() else f"[{key!r}]")
                    raise
            return copied
        copies = []
        for index, item in enumerate(value):
            try:
                copies.append(_json_copy(item, containers))
            except _NotJson as exc:
                exc.steps.append(f"[{index}]")
                raise
        return copies
    finally:
        containers.discard(id(value))


def _plain_json(value: Any) -> Any:
    """``value`` (not a JSON scalar, mapping or list) as the plain values its JSON form holds.

    Raises:
        _NotJson: ``value`` has no JSON form, or only a guessed one (bytes, sets).
    """
    # Checked by module name so that numpy is never imported here: tolist() turns its scalars
    # into Python ones and its arrays into (nested) lists.
    if type(value).__module__ == "numpy" and callable(getattr(value, "tolist", None)):
        return value.tolist()
    # Tools often return pydantic models or dataclasses: record them as the JSON they stand for.
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    # Dates, decimals, UUIDs and enums become the JSON pydantic writes for them (as inside a model);
    # bytes and sets are refused: their JSON form (text, an unordered list) would be a guess.
    if not isinstance(value, bytes | bytearray | set | frozenset):
        with contextlib.suppress(PydanticSerializationError, ValueError):
            return to_jsonable_python(value)
    raise _NotJson(f"cannot record a value of type {type(value).__name__} as JSON; {_JSON_VALUES}")


def _record_as_json(call: Tool) -> None:
    """Replace a recorded call's arguments and result by JSON copies.

    Raises:
        TypeError: A value cannot be recorded. It stays in the call as it was, so that converting
            the turn's calls when it ends fails the turn even if the agent caught this error.
    """
    call.arguments = _json_value(call.arguments, f"tool {call.name!r} arguments")
    call.result = _json_value(call.result, f"tool {call.name!r} result")


def _unpartial(function: Callable[..., Any]) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    """The function a (possibly nested) partial calls, with the arguments the partial supplies."""
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = {}
    while isinstance(function, functools.partial):
        args = (*function.args, *args)
        kwargs = {**function.keywords, **kwargs}
        function = function.func
    return function, args, kwargs


def _is_async(function: Callable[..., Any]) -> bool:
    # Python 3.11 does not see through partials, nor into an object's async __call__.
    target = _unpartial(function)[0]
    return inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(type(target).__call__)


def _tool_name(function: Callable[..., Any]) -> str | None:
    target = _unpartial(function)[0]
    name = getattr(target, "__name__", type(target).__name__)
    return name if isinstance(name, str) and name.isidentifier() else None


def _call_recorder(
    function: Callable[..., Any], tool_name: str
) -> Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any]]:
    """How calls of ``function`` are recorded: a function from ``(args, kwargs)`` to the recorded arguments."""
    target, preset_args, preset_kwargs = _unpartial(function)
    try:
        signature: inspect.Signature | None = inspect.signature(target)
    except (TypeError, ValueError):
        signature = None

    def arguments_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        received_args = (*preset_args, *args)
        received_kwargs = {**preset_kwargs, **kwargs}
        if signature is None:
            return {"args": list(received_args), **received_kwargs}
        try:
            bound = signature.bind(*received_args, **received_kwargs)
        except TypeError as error:
            raise TypeError(f"tool {tool_name!r}: {error}") from None
        arguments: dict[str, Any] = {}
        for parameter, value in bound.arguments.items():
            kind = signature.parameters[parameter].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                arguments[parameter] = list(value)
            elif kind is inspect.Parameter.VAR_KEYWORD and arguments.keys().isdisjoint(value):
                arguments.update(value)
            else:
                # A **kwargs key that repeats a positional-only parameter's name stays nested.
                arguments[parameter] = value
        return arguments

    return arguments_of


def _wants_turn(function: AgentFunction) -> bool:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in parameters)


def _check_signature(function: AgentFunction, pass_turn: bool) -> None:
    """Refuse an agent that cannot be called as it will be, ``fn(message)`` or ``fn(message, turn)``.

    A callable whose signature cannot be read (some builtins and C extensions) is let through.

    Raises:
        ConfigError: The call would fail, naming the function, where it is defined and its signature.
    """
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*(("message", "turn") if pass_turn else ("message",)))
    except TypeError as error:
        bare = signature.replace(
            parameters=[parameter.replace(annotation=parameter.empty) for parameter in signature.parameters.values()],
            return_annotation=signature.empty,
        )
        where = _defined_at(function)
        raise ConfigError(
            f"the agent function {short_name(function)}{f' ({where})' if where else ''} has the signature {bare},"
            f" so it cannot be called with a turn ({error}): an agent is fn(message) or fn(message, turn), plain or"
            " async, or an object with `async def run(self, request: TurnRequest) -> TurnResult`"
        ) from None


def _defined_at(function: AgentFunction) -> str:
    """Where ``function`` (or the function a partial or a callable object calls) is defined: ``agents.py:12``."""
    target = inspect.unwrap(_unpartial(function)[0])
    code = getattr(target, "__code__", None)
    if code is None and callable(target):
        code = getattr(type(target).__call__, "__code__", None)
    return code_location(code.co_filename, code.co_firstlineno) if isinstance(code, CodeType) else ""


def _to_result(reply: Any, turn: Turn, agent: str, turn_number: int) -> TurnResult:
    if reply is None:
        # Forgetting `return` is the most common bug in a hand-written agent: say so, not just "wrong reply".
        raise TypeError(
            f"the agent function {agent} returned None in turn {turn_number} — did it forget to return the reply? "
            f"Return {_REPLY_TYPES} (TurnResult(final_response=None) for a turn with no reply)"
        )
    if inspect.iscoroutine(reply):
        reply.close()  # so that Python does not also warn that it was never awaited
        raise TypeError(
            f"the agent function {agent} returned a coroutine in turn {turn_number} — did it forget `await`? "
            f"Return {_REPLY_TYPES}"
        )
    result = _as_turn_result(reply, turn)
    # Again at the end of the turn: a result may have been set on a recorded call afterwards, a
    # returned TurnResult brings its own calls, and the agent may have caught a recording error.
    for call in result.tools:
        _record_as_json(call)
    return result


def _as_turn_result(reply: Any, turn: Turn) -> TurnResult:
    if isinstance(reply, TurnResult):
        if not reply.tools:
            reply.tools = turn.tools
        return reply
    if isinstance(reply, Message):
        final = reply
    elif isinstance(reply, str):
        final = Message.assistant(reply)
    else:
        raise TypeError(f"the agent returned {type(reply).__name__}; return the reply as {_REPLY_TYPES}")
    return TurnResult(
        final_response=final,
        tools=turn.tools,
        invocation_id=turn.invocation_id,
        execution_trace=turn.execution_trace,
    )


def _outcome(call: Callable[[], Any]) -> tuple[Any, Exception | None]:
    """What ``call`` returned, or what it raised.

    Passed back as a value because asyncio replaces a ``TimeoutError`` from a worker thread by a
    copy without its traceback, which is where the agent failed.
    """
    try:
        return call(), None
    except Exception as error:
        return None, error


class FunctionRunner:
    """A :class:`Runner` around a plain or ``async`` Python function.

    The function is called once per user turn as ``fn(text)`` or, if it takes two positional
    parameters, ``fn(text, turn)`` with a :class:`Turn` that gives the session, the history of earlier
    turns, context messages and state, and records tool calls. It returns the final reply as a
    ``str``, a :class:`~agenteval.Message` or a :class:`TurnResult`; a turn with no reply returns
    ``TurnResult(final_response=None)``. Returning ``None`` (a forgotten ``return``) fails the case.
    Plain functions run in worker threads, so a blocking agent does not stall the event loop and
    cases can run in parallel. The threads are daemon threads: a call that never returns (a turn
    given up by ``turn_timeout`` or Ctrl-C) keeps its thread but never keeps the process alive.

    Args:
        function: The agent.
        max_threads: Most concurrent calls of a plain function.
    """

    def __init__(self, function: AgentFunction, *, max_threads: int = MAX_THREADS) -> None:
        if not callable(function):
            raise ConfigError(f"the agent must be callable, got {function!r}")
        if max_threads <= 0:
            raise ConfigError(f"max_threads must be greater than 0, got {max_threads}")
        self.function = function
        self._pass_turn = _wants_turn(function)
        _check_signature(function, self._pass_turn)
        self._name = short_name(function)
        self._history: dict[str, list[Message]] = {}
        self._turns_done: dict[str, int] = {}
        self._lock = threading.Lock()
        self._max_threads = max_threads
        self._executor: DaemonThreadPool | None = None

    async def run(self, request: TurnRequest) -> TurnResult:
        """Call the function for one turn and collect what it did.

        Raises:
            TypeError: The function returned ``None`` or something that is not a reply, or it
                called an async tool (see :meth:`Turn.tool`) without awaiting the call.
        """
        with self._lock:
            history = list(self._history.get(request.session_id, ()))
            turn_number = self._turns_done.get(request.session_id, 0) + 1
        turn = Turn(request, history, asyncio.get_running_loop())
        try:
            reply = await self._call(turn)
        except BaseException as error:
            self._check_tool_calls_awaited(turn, error)
            raise
        self._check_tool_calls_awaited(turn)
        result = _to_result(reply, turn, self._name, turn_number)
        with self._lock:
            self._turns_done[request.session_id] = turn_number
            session = self._history.setdefault(request.session_id, [])
            session.append(request.message)
            if result.final_response is not None:
                session.append(result.final_response)
        return result

    async def _call(self, turn: Turn) -> Any:
        args: tuple[Any, ...] = (turn.text, turn) if self._pass_turn else (turn.text,)
        if inspect.iscoroutinefunction(self.function):
            return await self.function(*args)
        call = functools.partial(contextvars.copy_context().run, self.function, *args)
        reply, error = await asyncio.get_running_loop().run_in_executor(self._threads(), _outcome, call)
        if error is not None:
            raise error
        # A plain function may hand back the work as an awaitable (an async tool's call included).
        return await reply if inspect.isawaitable(reply) else reply

    def _check_tool_calls_awaited(self, turn: Turn, error: BaseException | None = None) -> None:
        """Fail the turn if the agent called an async tool without awaiting the call.

        Such a call did nothing, so it is the likelier cause of an ``error`` the agent raised (using
        the coroutine as the tool's result), which the message still quotes. A cancelled turn (a
        ``turn_timeout``) stays cancelled.
        """
        name = turn._close_unawaited_calls()
        if name is None or (error is not None and not isinstance(error, Exception)):
            return
        message = f"the agent called the async tool {name} but never awaited it"
        if _is_async(self.function):
            message += f": write `await {name}(...)`"
        else:
            message += (
                f", which a plain (not async) agent cannot do: make the agent `async def` and write "
                f"`await {name}(...)`, or pass a sync tool"
            )
        if error is not None:
            message += f"; the agent then raised {describe_exception(error)}"
        raise TypeError(message) from error

    def end_session(self, session_id: str) -> None:
        """Forget a finished session's history."""
        with self._lock:
            self._history.pop(session_id, None)
            self._turns_done.pop(session_id, None)

    def _threads(self) -> DaemonThreadPool:
        # Threads start on demand, so a generous cap costs nothing until cases run in parallel;
        # asyncio's default executor would cap a blocking agent at a handful of concurrent cases, and
        # its threads, joined at exit, would keep the process alive behind a turn that never returns.
        with self._lock:
            if self._executor is None:
                self._executor = DaemonThreadPool(self._max_threads, name="agenteval-agent")
            return self._executor

    def cache_identity(self) -> object:
        """What decides the answers, for the cache's keys: the function (by its code)."""
        return {"function": self.function}

    def __repr__(self) -> str:
        return f"FunctionRunner({getattr(self.function, '__qualname__', self.function)!r})"


def as_runner(agent: Runner | AgentFunction) -> Runner:
    """Return ``agent`` if it is a :class:`Runner`, else wrap the callable in a :class:`FunctionRunner`.

    An object is a runner when its ``run`` is ``async`` (a coroutine function), even if it is also
    callable; any other callable is an agent function.

    Raises:
        ConfigError: ``agent`` is neither, it has a ``run`` that is not ``async``, or it is a runner
            class rather than an instance.
    """
    adapter = _framework_adapter(agent)
    if adapter is not None:
        module, runner = adapter
        raise ConfigError(
            f"the agent ({type(agent).__module__}.{type(agent).__qualname__}) was built with an agent framework:"
            f" wrap it in its runner (`from {module} import {runner}`) and pass {runner}(agent)"
        )
    if isinstance(agent, type) and inspect.iscoroutinefunction(getattr(agent, "run", None)):
        raise ConfigError(f"the agent is the class {agent.__qualname__}; pass an instance, e.g. {agent.__qualname__}()")
    if isinstance(agent, Runner) and inspect.iscoroutinefunction(agent.run):
        return agent
    if callable(agent):
        return FunctionRunner(agent)
    if hasattr(agent, "run"):
        raise ConfigError(
            f"the agent {agent!r} has a run method that is not async: define `async def run(self, request: "
            "TurnRequest) -> TurnResult`, or pass a function fn(message) / fn(message, turn)"
        )
    raise ConfigError(
        f"the agent must be a Runner or a callable, got {agent!r}: a Runner defines "
        "`async def run(self, request: TurnRequest) -> TurnResult`; a callable is fn(message) or fn(message, turn)"
    )


_FRAMEWORK_CLASSES = {
    ("pydantic_ai", "AbstractAgent"): ("agenteval.adapters.pydantic_ai", "PydanticAIRunner"),
    ("google.adk", "BaseAgent"): ("agenteval.adapters.adk", "ADKRunner"),
    ("google.adk", "Runner"): ("agenteval.adapters.adk", "ADKRunner"),
    ("langgraph", "Pregel"): ("agenteval.adapters.langgraph", "LangGraphRunner"),
    ("langgraph", "StateGraph"): ("agenteval.adapters.langgraph", "LangGraphRunner"),
    ("agents", "Agent"): ("agenteval.adapters.openai_agents", "OpenAIAgentsRunner"),
}
"""(top package, class name) of framework agents and the adapter that runs each (matched along the MRO)."""


def _framework_adapter(agent: object) -> tuple[str, str] | None:
    """The adapter module and runner for an agent of a framework agenteval has an adapter for, else ``None``."""
    for cls in type(agent).__mro__:
        module = cls.__module__
        for (package, name), adapter in _FRAMEWORK_CLASSES.items():
            if cls.__name__ == name and (module == package or module.startswith(package + ".")):
                return adapter
    return None


def plain_agent(agent: object) -> object:
    """The agent itself: an agent function rather than the :class:`FunctionRunner` around it, else ``agent``.

    What is named, hashed and sent to other processes (a runner's lock cannot be pickled).
    """
    return agent.function if isinstance(agent, FunctionRunner) else agent
