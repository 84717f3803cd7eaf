"""Evaluate a compiled LangGraph graph: one checkpointer thread per eval session, tools mocked in its ToolNodes.

Example::

    import agenteval as ae
    from agenteval.adapters.langgraph import LangGraphRunner

    graph = builder.compile()          # a StateGraph(MessagesState) with a ToolNode, or create_react_agent(...)
    report = ae.Evaluator("app", LangGraphRunner(graph)).evaluate(eval_set, metrics=metrics)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import types
import uuid
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, cast

from agenteval.adapters._identity import framework_version, is_library_module, is_users, settings, type_identity
from agenteval.adapters._turn import AdapterTurn
from agenteval.errors import ConfigError, MissingDependencyError, ToolMockError
from agenteval.evalset.message import Message, Role
from agenteval.runner.base import TurnRequest, TurnResult

try:
    from langchain_core.language_models import BaseLanguageModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
    from langchain_core.runnables import (
        Runnable,
        RunnableBinding,
        RunnableConfig,
        RunnableParallel,
        RunnableSequence,
    )
    from langchain_core.tools import BaseTool
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph.state import CompiledStateGraph, StateGraph
    from langgraph.prebuilt.tool_node import (
        AsyncToolCallWrapper,
        ToolCallRequest,
        ToolCallWrapper,
        ToolNode,
        msg_content_output,
    )
    from langgraph.pregel import Pregel
    from langgraph.types import Command
except ImportError:
    raise MissingDependencyError("the LangGraph runner", "langgraph", "langgraph") from None

__all__ = ["LangGraphRunner"]

ToolResponse = ToolMessage | Command[Any]
Execute = Callable[[ToolCallRequest], Awaitable[ToolResponse]]


@dataclass(slots=True)
class _RunningTurn:
    """The turn a runner is running the graph for, as the ToolNode hook sees it."""

    turn: AdapterTurn
    mock_error: ToolMockError | None = None
    """A call no ``toolMock`` rule matched: it fails the turn even if the ToolNode tells the model instead."""

    async def run_tool(self, request: ToolCallRequest, execute: Execute, proceed: AsyncToolCallWrapper) -> ToolResponse:
        """Record one call of the ToolNode and answer it: from the turn's mock, else as the ToolNode would."""
        call = request.tool_call
        call_id = call["id"] or ""
        responses: list[ToolResponse] = []

        async def run() -> Any:
            response = await proceed(request, execute)
            responses.append(response)
            return _tool_result(response, call_id)

        try:
            result = await self.turn.call_tool(call["name"], call["args"], run, call_id=call_id)
        except ToolMockError as error:
            self.mock_error = error
            raise
        if responses:
            return responses[0]
        # msg_content_output gives a list of content blocks, which ToolMessage takes, as list[dict].
        content = cast("str | list[str | dict[Any, Any]]", msg_content_output(result))
        return ToolMessage(content=content, name=call["name"], tool_call_id=call_id)


_running: ContextVar[_RunningTurn | None] = ContextVar("agenteval_langgraph_turn", default=None)
"""Set while a :class:`LangGraphRunner` runs the graph for a turn (each turn runs in its own task)."""


class _ToolHook:
    """The ``awrap_tool_call`` the runner gives a ToolNode, around the wrappers it already had.

    While a runner runs the graph it records each call and answers mocked ones without running the
    tool; at any other time it passes every call on unchanged.
    """

    def __init__(self, wrap: ToolCallWrapper | None, awrap: AsyncToolCallWrapper | None) -> None:
        self._wrap = wrap
        self._awrap = awrap

    async def __call__(self, request: ToolCallRequest, execute: Execute) -> ToolResponse:
        running = _running.get()
        if running is None:
            return await self.proceed(request, execute)
        return await running.run_tool(request, execute, self.proceed)

    async def proceed(self, request: ToolCallRequest, execute: Execute) -> ToolResponse:
        """Run the call as the ToolNode would without this hook."""
        if self._awrap is not None:
            return await self._awrap(request, execute)
        if self._wrap is not None:
            return await _run_sync_wrapper(self._wrap, request, execute)
        return await execute(request)


async def _run_sync_wrapper(wrap: ToolCallWrapper, request: ToolCallRequest, execute: Execute) -> ToolResponse:
    """Run a ToolNode's sync ``wrap_tool_call`` from the async hook: in a thread, executing on the event loop."""
    loop = asyncio.get_running_loop()

    async def run(request: ToolCallRequest) -> ToolResponse:
        return await execute(request)

    def execute_blocking(request: ToolCallRequest) -> ToolResponse:
        return asyncio.run_coroutine_threadsafe(run(request), loop).result()

    return await asyncio.to_thread(wrap, request, execute_blocking)


def _hook_tool_nodes(graph: Pregel[Any, Any, Any, Any]) -> None:
    """Give every ToolNode of ``graph`` and of its subgraphs the runner's hook (once)."""
    graphs = [graph, *(sub for _, sub in graph.get_subgraphs(recurse=True) if isinstance(sub, Pregel))]
    runnables = [node.bound for each in graphs for node in each.nodes.values()]
    for tool_node in (runnable for runnable in runnables if isinstance(runnable, ToolNode)):
        # A ToolNode takes its wrappers when it is built; the graph holds it already built.
        if not isinstance(tool_node._awrap_tool_call, _ToolHook):
            tool_node._awrap_tool_call = _ToolHook(tool_node._wrap_tool_call, tool_node._awrap_tool_call)


def _tool_result(response: ToolResponse, call_id: str) -> Any:
    """What a call returned, from the ToolNode's answer: the content of its ToolMessage for the call."""
    if isinstance(response, ToolMessage):
        return _recorded_content(response.content)
    update = response.update
    messages = update.get("messages", []) if isinstance(update, dict) else []
    for message in messages if isinstance(messages, list) else [messages]:
        if isinstance(message, ToolMessage) and message.tool_call_id == call_id:
            return _recorded_content(message.content)
    return None


def _recorded_content(content: str | list[str | dict[str, Any]]) -> Any:
    """A ToolMessage's content as recorded: JSON objects and arrays parsed (ToolNode writes a dict or list as JSON)."""
    if isinstance(content, str) and content.lstrip().startswith(("{", "[")):
        with contextlib.suppress(json.JSONDecodeError):
            return json.loads(content)
    return content


@dataclass(slots=True)
class _Thread:
    """The graph thread of one eval session."""

    config: RunnableConfig
    messages: list[BaseMessage] = field(default_factory=list)
    """The thread's messages after the last turn."""


class LangGraphRunner:
    """A :class:`~agenteval.Runner` for a compiled LangGraph graph whose state holds chat messages.

    Each eval session runs in its own thread of the graph's checkpointer (a graph compiled without
    one gets an ``InMemorySaver`` in the runner's copy of it), so the turns of a case see their
    history; :meth:`end_session` deletes the thread. The first turn starts the thread with the case's
    context messages before the user's message and ``sessionInput.state`` as graph input; the user
    id is ``config["configurable"]["user_id"]``.

    A turn records each tool call the graph's ToolNodes run (call id, name, arguments, and the
    content of the ToolMessage, parsed when it is a JSON object or array), in the order they start,
    then calls answered by a ToolMessage that ran elsewhere; the reply is the last AIMessage's text,
    and every AIMessage's ``usage_metadata`` and ``response_metadata["model_name"]`` are recorded.

    The case's ``toolMock`` rules answer calls in the ToolNodes: the runner adds a hook to every
    ToolNode of the graph and its subgraphs (an ``awrap_tool_call`` around the wrappers the node
    has; a sync ``wrap_tool_call`` then runs in a worker thread), and a mocked tool is never called.
    Outside the runner's turns the hook passes every call on unchanged.

    Args:
        graph: The compiled graph (``builder.compile()``, ``create_react_agent(...)``); its input
            has a ``messages`` key.

    Raises:
        ConfigError: ``graph`` is not a compiled graph, or its input has no ``messages`` key.
    """

    def __init__(self, graph: CompiledStateGraph[Any, Any, Any, Any]) -> None:
        if not isinstance(graph, CompiledStateGraph):
            hint = ": call its .compile()" if isinstance(graph, StateGraph) else ""
            raise ConfigError(f"LangGraphRunner wraps a compiled LangGraph graph, got {type(graph).__name__}{hint}")
        self._input_keys = _input_keys(graph)
        if "messages" not in self._input_keys:
            raise ConfigError(
                f"LangGraphRunner runs graphs whose state holds chat messages under 'messages'; the input of "
                f"graph {graph.name!r} has {sorted(self._input_keys)}"
            )
        _hook_tool_nodes(graph)
        checkpointer = graph.checkpointer
        if not isinstance(checkpointer, BaseCheckpointSaver):
            checkpointer = InMemorySaver()
            graph = graph.copy({"checkpointer": checkpointer})
        self._graph = graph
        self._checkpointer: BaseCheckpointSaver[Any] = checkpointer
        self._threads: dict[str, _Thread] = {}

    async def run(self, request: TurnRequest) -> TurnResult:
        """Run the graph for one user turn in the session's thread and report what it did.

        Raises:
            ConfigError: The turn's messages or state cannot be given to the graph.
            ToolMockError: A mocked tool was called with arguments no rule matches, or ran outside a ToolNode.
            Exception: What the graph raised.
        """
        thread = self._threads.get(request.session_id)
        sent = self._input_messages(request, first=thread is None)
        graph_input: dict[str, Any] = {"messages": sent}
        if thread is None:
            graph_input.update(self._initial_state(request.state))
            thread = _Thread(
                config={"configurable": {"thread_id": f"agenteval-{uuid.uuid4()}", "user_id": request.user_id}}
            )
            self._threads[request.session_id] = thread
        running = _RunningTurn(AdapterTurn(request, self._graph.name))
        token = _running.set(running)
        try:
            await self._graph.ainvoke(graph_input, thread.config)
        finally:
            _running.reset(token)
        if running.mock_error is not None:
            raise running.mock_error
        messages = list((await self._graph.aget_state(thread.config)).values.get("messages", []))
        new = _new_messages([*thread.messages, *sent], messages)
        thread.messages = messages
        return _turn_result(running.turn, new)

    async def end_session(self, session_id: str) -> None:
        """Delete the session's thread from the checkpointer."""
        thread = self._threads.pop(session_id, None)
        if thread is None:
            return
        # A checkpointer that cannot delete threads keeps this one; it is never used again.
        with contextlib.suppress(NotImplementedError):
            await self._checkpointer.adelete_thread(thread.config["configurable"]["thread_id"])

    def _input_messages(self, request: TurnRequest, *, first: bool) -> list[BaseMessage]:
        context = request.context_messages if first else []
        messages = [_langchain_message(message, f"context message {n}") for n, message in enumerate(context, 1)]
        messages.append(_langchain_message(request.message, "the user's message"))
        return messages

    def _initial_state(self, state: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(state) - (self._input_keys - {"messages"}))
        if unknown:
            raise ConfigError(
                f"sessionInput.state has {unknown}, which the graph's input does not take (it takes "
                f"{sorted(self._input_keys - {'messages'})}); the LangGraph runner passes the state as the "
                "thread's initial graph state (give earlier messages as contextMessages)"
            )
        return dict(state)

    def cache_identity(self) -> object:
        """What decides the graph's answers, for the cache's keys: its nodes, edges and state, their code and models.

        The graph's name, state schemas (their fields' types and reducers), nodes and edges,
        conditional edges (their path functions' code), interrupts, and for each node what it runs:
        a function's code, a ToolNode's tools (name, description, arguments' schema, code) and tool
        wrappers, a chat model's settings (a model of the user's class by its code and state), a
        bound model's bound arguments (the tools it was given), a sequence's steps, a subgraph,
        recursively; what a framework's function closes over (``create_react_agent``'s prompt and
        model); and LangGraph's and LangChain's versions.
        """
        return {
            "langgraph": framework_version("langgraph"),
            "langchain-core": framework_version("langchain-core"),
            "graph": _part(self._graph, frozenset()),
        }

    def __repr__(self) -> str:
        return f"LangGraphRunner({self._graph.name!r})"


def _part(value: object, described: frozenset[int]) -> object:
    """A part of a graph as data and code: a graph, node, tool, runnable, model, or a framework function's closure."""
    if id(value) in described:
        return {"described above": type(value).__qualname__}
    described |= {id(value)}
    if isinstance(value, Pregel):
        return _graph_identity(value, described)
    if isinstance(value, ToolNode):
        return _tool_node_identity(value, described)
    if isinstance(value, BaseTool):
        return _tool_identity(value)
    if isinstance(value, BaseLanguageModel) and not is_users(value):
        # LangChain's own identity of a model (what its cache keys by): its type and parameters.
        kind = f"{type(value).__module__}.{type(value).__qualname__}"
        return {"model": kind, "type": getattr(value, "_llm_type", ""), "params": value._identifying_params}
    if isinstance(value, RunnableSequence):
        return {"sequence": [_part(step, described) for step in value.steps]}
    if isinstance(value, RunnableParallel):
        return {"parallel": {name: _part(step, described) for name, step in sorted(value.steps__.items())}}
    if isinstance(value, RunnableBinding):
        return {"bound": _part(value.bound, described), "kwargs": _part(value.kwargs, described)}
    if isinstance(value, Runnable) and (hasattr(value, "func") or hasattr(value, "afunc")):
        functions = [getattr(value, "func", None), getattr(value, "afunc", None)]
        return {"calls": [_part(function, described) for function in functions if function is not None]}
    if isinstance(value, types.FunctionType) and is_library_module(value.__module__):
        cells = zip(value.__code__.co_freevars, value.__closure__ or (), strict=True)
        return {"library": value, "closure": {name: _part(_cell(cell), described) for name, cell in cells}}
    if isinstance(value, list | tuple):
        return [_part(item, described) for item in value]
    if isinstance(value, dict):
        return {str(key): _part(item, described) for key, item in value.items()}
    return settings(value)


def _graph_identity(graph: Pregel[Any, Any, Any, Any], described: frozenset[int]) -> object:
    builder = getattr(graph, "builder", None)
    if not isinstance(builder, StateGraph):
        return {"name": graph.name, "nodes": {name: _part(node.bound, described) for name, node in graph.nodes.items()}}
    return {
        "name": graph.name,
        "schemas": [
            type_identity(schema) for schema in (builder.state_schema, builder.input_schema, builder.output_schema)
        ],
        "nodes": {
            name: {"runs": _part(spec.runnable, described), "settings": settings(spec)}
            for name, spec in sorted(builder.nodes.items())
        },
        "edges": sorted(builder.edges),
        "waiting edges": sorted([sorted(starts), end] for starts, end in builder.waiting_edges),
        "branches": {
            source: {
                name: {"path": _part(branch.path, described), "ends": branch.ends} for name, branch in branches.items()
            }
            for source, branches in sorted(builder.branches.items())
        },
        "interrupts": [graph.interrupt_before_nodes, graph.interrupt_after_nodes],
    }


def _tool_node_identity(node: ToolNode, described: frozenset[int]) -> object:
    wrappers = [getattr(node, "_wrap_tool_call", None), getattr(node, "_awrap_tool_call", None)]
    # The runner's own hook stands in front of the node's wrappers: they are what count.
    hook = wrappers[1]
    if isinstance(hook, _ToolHook):
        wrappers[1:] = [hook._awrap]
        wrappers[0] = hook._wrap
    return {
        "tools": [_tool_identity(tool) for _, tool in sorted(node.tools_by_name.items())],
        "errors": _part(getattr(node, "_handle_tool_errors", None), described),
        "wrappers": wrappers,
    }


def _tool_identity(tool: BaseTool) -> object:
    try:
        schema = tool.tool_call_schema
        describe = getattr(schema, "model_json_schema", None)
        arguments = describe() if callable(describe) else schema
    except Exception:  # a tool whose arguments have no schema: its code and description still count
        arguments = None
    return {
        "name": tool.name,
        "description": tool.description,
        "arguments": arguments,
        "function": getattr(tool, "func", None),
        "coroutine": getattr(tool, "coroutine", None),
        "settings": settings(tool),
    }


def _cell(cell: types.CellType) -> object:
    try:
        return cell.cell_contents
    except ValueError:
        return None  # a cell its function has not filled


def _input_keys(graph: CompiledStateGraph[Any, Any, Any, Any]) -> set[str]:
    """The keys of the graph's input, read from its builder (a JSON schema of it cannot be made of every state type)."""
    builder = graph.builder
    return set(builder.schemas[builder.input_schema]) - set(builder.managed)


def _langchain_message(message: Message, what: str) -> BaseMessage:
    """``message`` as the LangChain message the graph takes, with an id so that the turn knows it sent it."""
    if message.content_parts or message.tool_calls:
        raise ConfigError(f"{what} has content parts or tool calls; the LangGraph runner passes messages as text")
    kinds: dict[Role, type[BaseMessage]] = {
        Role.SYSTEM: SystemMessage,
        Role.USER: HumanMessage,
        Role.ASSISTANT: AIMessage,
    }
    kind = kinds.get(message.role)
    if kind is None:
        raise ConfigError(
            f"{what} has the role {message.role.value!r}; the LangGraph runner passes system, user and "
            "assistant messages"
        )
    return kind(content=message.content, id=str(uuid.uuid4()))


def _new_messages(known: Sequence[BaseMessage], messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages of ``messages`` that are not in ``known``: by id, or by position for a message without one."""
    ids = {message.id for message in known if message.id}
    return [
        message
        for index, message in enumerate(messages)
        if (message.id not in ids if message.id else index >= len(known))
    ]


def _turn_result(turn: AdapterTurn, new: Sequence[BaseMessage]) -> TurnResult:
    """The turn's result from the messages the graph added: model calls, calls run outside a ToolNode, the reply."""
    _record_calls_outside_tool_nodes(turn, new)
    reply: str | None = None
    for message in new:
        if isinstance(message, AIMessage):
            turn.record_model_call(str(message.response_metadata.get("model_name", "")), _usage(message))
            reply = str(message.text)
    return turn.result(reply)


def _record_calls_outside_tool_nodes(turn: AdapterTurn, new: Sequence[BaseMessage]) -> None:
    """Record the calls answered by a ToolMessage that no ToolNode hook saw (a hand-written tool node ran them).

    Raises:
        ToolMockError: Such a call is of a mocked tool: the runner could not answer it, so the tool ran.
    """
    seen = {tool.id for tool in turn.tools}
    answers = {message.tool_call_id: message for message in new if isinstance(message, ToolMessage)}
    for message in new:
        calls = message.tool_calls if isinstance(message, AIMessage) else []
        for call in calls:
            call_id = call["id"] or ""
            answer = answers.get(call_id)
            if answer is None or call_id in seen:
                continue
            if turn.mocks(call["name"]):
                raise ToolMockError(
                    f'tool "{call["name"]}" is mocked, but the graph ran it outside a ToolNode, where the '
                    "LangGraph runner cannot answer it: run the tool in a langgraph.prebuilt.ToolNode"
                )
            turn.record_tool(call["name"], call["args"], _recorded_content(answer.content), call_id=call_id)


def _usage(message: AIMessage) -> dict[str, Any] | None:
    """The message's token usage with OpenAI's names."""
    usage = message.usage_metadata
    if usage is None:
        return None
    return {
        "prompt_tokens": usage["input_tokens"],
        "completion_tokens": usage["output_tokens"],
        "total_tokens": usage["total_tokens"],
    }
