"""What every framework adapter records in one turn: tool calls (mocked or run), model usage, the reply.

An adapter intercepts its framework's tool execution and asks :meth:`AdapterTurn.call_tool` to run
or mock each call, so the eval set's ``toolMock`` rules (and then a replay of recorded tool results)
apply the same way in every framework and a mocked or replayed tool is never called. Calls are
recorded as JSON copies, in the order they start.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any

from agenteval.errors import MissingDependencyError
from agenteval.evalset.message import Message
from agenteval.evalset.models import Tool
from agenteval.evalset.trace import ExecutionTrace, TraceStep
from agenteval.runner.base import TurnRequest, TurnResult
from agenteval.runner.function import Turn

__all__ = ["AdapterTurn", "import_framework"]


def import_framework(module: str, *, feature: str, extra: str, package: str) -> ModuleType:
    """Import a framework module, or explain which extra installs it.

    Args:
        module: The module to import (``google.adk.runners``).
        feature: What needs it, for the message (``the ADK runner``).
        extra: The agenteval extra that installs it (``adk``).
        package: The distribution that provides it (``google-adk``).

    Raises:
        MissingDependencyError: The module cannot be imported; the message gives the ``pip install`` line.
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(feature, extra, package) from None


class AdapterTurn:
    """The record of one turn of a framework agent.

    Args:
        request: The turn being run (its tool mocks apply to :meth:`call_tool`).
        agent_name: The agent's name, for the execution trace.
    """

    def __init__(self, request: TurnRequest, agent_name: str) -> None:
        self._turn = Turn(request, history=[])
        self._scratch = Turn(request, history=[])
        """Converts results set after a call was recorded (the call keeps its place in :attr:`tools`)."""
        self._agent_name = agent_name
        self._session_id = request.session_id
        self._model_steps: list[TraceStep] = []

    @property
    def tools(self) -> list[Tool]:
        """The tool calls recorded so far, in the order they started."""
        return self._turn.tools

    def mocks(self, name: str) -> bool:
        """Whether the turn's ``toolMock`` rules answer calls of tool ``name``."""
        mocks = self._turn.tool_mocks
        return mocks is not None and mocks.mocks(name)

    async def call_tool(
        self, name: str, arguments: Any, run: Callable[[], Awaitable[Any]], *, call_id: str = ""
    ) -> Any:
        """Record one tool call and return its result: the mock's when a rule answers it, else a replayed one.

        A call no mock answers gets the recorded result of the turn's replay when one answers it
        (marked replayed), else ``await run()``.

        Args:
            name: The tool's name, as the model called it.
            arguments: The call's arguments (a JSON value; usually the dict the model sent).
            run: Runs the real tool; never called when the tool is mocked or the call replayed.
            call_id: The framework's id of the call.

        Raises:
            ToolMockError: The tool is mocked but no rule matches these arguments (the turn fails).
            Exception: Whatever the real tool raised (the call stays recorded, without a result).
        """
        call = self._turn.record_tool(name, arguments, id=call_id)
        mocks, replay = self._turn.tool_mocks, self._turn.tool_replay
        if mocks is not None and mocks.mocks(name):
            result = await mocks.result(name, call.arguments)
        elif replay is not None and (replayed := replay.answer(call)) is not None:
            result = replayed
        else:
            result = await run()
        self.set_result(call, result)
        return result

    def replayed(self, call: Tool) -> Any:
        """The result the turn's replay recorded for a call recorded with :meth:`record_tool`, else ``None``.

        For frameworks that decide before a tool runs whether to skip it: a result here (set on the
        call, which is marked replayed) replaces running the tool; ``None`` means run it.
        """
        replay = self._turn.tool_replay
        result = replay.answer(call) if replay is not None else None
        if result is not None:
            self.set_result(call, result)
        return result

    def record_tool(self, name: str, arguments: Any = None, result: Any = None, *, call_id: str = "") -> Tool:
        """Record a call the framework ran itself (see :meth:`agenteval.runner.Turn.record_tool`)."""
        return self._turn.record_tool(name, arguments, result, id=call_id)

    def set_result(self, call: Tool, result: Any) -> None:
        """Set a recorded call's result, as a JSON copy with the checks of :meth:`record_tool`."""
        converted = self._scratch.record_tool(call.name, None, result)
        self._scratch.tools.clear()
        call.result = converted.result

    def record_model_call(self, model: str, usage: dict[str, Any] | None = None) -> None:
        """Record one model response: its model name and token usage, as the framework reports them.

        Args:
            model: The model's name (``""`` when the framework does not say).
            usage: OpenAI-style counts (``prompt_tokens``, ``completion_tokens``, ``total_tokens``);
                ``None`` when the framework reports none.
        """
        self._model_steps.append(
            TraceStep(
                step_id=f"model-{len(self._model_steps) + 1}",
                agent_name=self._agent_name,
                node_id=model,
                node_type="llm",
                usage=usage,
            )
        )

    def result(self, reply: str | None, *, invocation_id: str = "") -> TurnResult:
        """The turn's result: the final reply, the tool calls and, when models were recorded, a trace.

        The trace's ``Usage`` sums the recorded usages key by key (numbers only); each model response
        is a step of type ``llm`` whose ``NodeID`` is the model's name.
        """
        return TurnResult(
            final_response=Message.assistant(reply) if reply is not None else None,
            tools=list(self._turn.tools),
            invocation_id=invocation_id,
            execution_trace=self._trace(),
        )

    def _trace(self) -> ExecutionTrace | None:
        if not self._model_steps:
            return None
        usages = [step.usage for step in self._model_steps if step.usage]
        return ExecutionTrace(
            root_agent_name=self._agent_name,
            session_id=self._session_id,
            status="completed",
            usage=_summed(usages) if usages else None,
            steps=list(self._model_steps),
        )


def _summed(usages: list[dict[str, Any]]) -> dict[str, Any]:
    total: dict[str, Any] = {}
    for usage in usages:
        for key, value in usage.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
    return total
