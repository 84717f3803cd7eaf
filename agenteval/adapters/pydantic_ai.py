"""Run a pydantic-ai ``Agent`` as the agent under test (``pip install 'agenteval[pydantic-ai]'``).

Example::

    from agenteval.adapters.pydantic_ai import PydanticAIRunner

    runner = PydanticAIRunner(agent, deps=lambda request: MyDeps(user=request.user_id, state=request.state))
    report = ae.Evaluator("my-app", runner).evaluate(eval_set, metrics=metrics)

The runner adds one capability to each run, through pydantic-ai's own extension points: a wrapper
around the run's toolset (``get_wrapper_toolset``), which records every function-tool call and
answers the case's ``toolMock`` rules without calling the tool, and a ``before_model_request`` hook,
which shows the case's context messages to the model without storing them in the history.
"""

# ruff: noqa: E402  (the framework is imported after the check that explains how to install it)

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar, cast

from pydantic_core import to_json

from agenteval._util.threads import DaemonThreadPool
from agenteval.adapters._identity import framework_version, json_schema, settings
from agenteval.adapters._turn import AdapterTurn, import_framework
from agenteval.errors import ConfigError
from agenteval.evalset.message import Message, Role
from agenteval.evalset.models import Tool
from agenteval.runner.base import TurnRequest, TurnResult
from agenteval.runner.function import MAX_THREADS

import_framework("pydantic_ai", feature="the pydantic-ai runner", extra="pydantic-ai", package="pydantic-ai-slim")

from pydantic_ai import Agent, RunContext
from pydantic_ai.agent import AbstractAgent, WrapperAgent
from pydantic_ai.capabilities import AbstractCapability, CapabilityOrdering
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolReturn,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestContext
from pydantic_ai.tools import Tool as FunctionTool
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset, ToolsetTool, WrapperToolset
from pydantic_ai.usage import RequestUsage

__all__ = ["PydanticAIRunner"]

DepsT = TypeVar("DepsT")


@dataclasses.dataclass(slots=True)
class _Session(Generic[DepsT]):
    """What one eval session keeps between its turns."""

    deps: DepsT
    history: list[ModelMessage] = dataclasses.field(default_factory=list)


class PydanticAIRunner(Generic[DepsT]):
    """A :class:`~agenteval.runner.Runner` around a pydantic-ai agent.

    Each eval session is one conversation: every turn runs the agent with the session's message
    history so far (``message_history``), and :meth:`end_session` forgets it. What a turn records:

    - every function-tool call, with pydantic-ai's call id, the tool's name, its arguments as the
      model sent them and its result (a ``ToolReturn``'s ``return_value``), in the order the model asked
      for them; a tool the case's ``toolMock`` rules mock is answered from them and never called;
    - the agent's output as the final response (text as it is, anything else as JSON);
    - each model response's model name and token usage, in the turn's execution trace;
    - the run id as the invocation id.

    The case's context messages (system, user or assistant) are shown to the model in every request
    of the case, after the system prompt, and are not kept in the history. A framework error fails
    the case with the exception's type and message.

    Args:
        agent: The agent (any pydantic-ai ``AbstractAgent``).
        deps: Builds the agent's dependencies for a session, from the session's first
            :class:`~agenteval.TurnRequest` (its ``user_id``, ``state`` and ``session_id``); the
            same object is passed to every turn of the session. Without it the agent runs with
            ``deps=None``.
    """

    def __init__(self, agent: AbstractAgent[DepsT, Any], *, deps: Callable[[TurnRequest], DepsT] | None = None) -> None:
        if not isinstance(agent, AbstractAgent):
            raise ConfigError(f"PydanticAIRunner needs a pydantic-ai Agent, got {type(agent).__name__}")
        if deps is not None and not callable(deps):
            raise ConfigError(f"deps must be a function of the TurnRequest, got {deps!r}")
        self.agent = agent
        self._deps = deps
        self._sessions: dict[str, _Session[DepsT]] = {}
        # Sync tools run on daemon threads: one stuck past turn_timeout or Ctrl-C cannot keep the process alive.
        self._threads = DaemonThreadPool(MAX_THREADS, "agenteval-pydantic-ai")

    @property
    def _agent_name(self) -> str:
        return self.agent.name or type(self.agent).__name__

    async def run(self, request: TurnRequest) -> TurnResult:
        """Run the agent for one user turn of a session and report what it did."""
        session = self._sessions.get(request.session_id)
        if session is None:
            # Without a factory the agent gets pydantic-ai's own default, None.
            deps = self._deps(request) if self._deps is not None else cast(DepsT, None)
            session = self._sessions[request.session_id] = _Session(deps)
        turn = AdapterTurn(request, self._agent_name)
        with AbstractAgent.using_thread_executor(self._threads):
            result = await self.agent.run(
                request.message.content,
                message_history=session.history,
                deps=session.deps,
                capabilities=[_EvalCapability(turn, _as_model_messages(request.context_messages))],
                infer_name=False,
            )
        session.history = result.all_messages()
        new_messages = result.new_messages()
        for response in _responses(new_messages):
            turn.record_model_call(response.model_name or "", _usage(response.usage))
        outcome = turn.result(_reply(result.output), invocation_id=result.run_id)
        _sort_by_call_order(outcome.tools, new_messages)
        return outcome

    def end_session(self, session_id: str) -> None:
        """Forget a finished session's history and dependencies."""
        self._sessions.pop(session_id, None)

    def cache_identity(self) -> object:
        """What decides the agent's answers, for the cache's keys: the agent's configuration, its tools' code.

        The agent's name, model (its name, system, settings and the fields its constructor takes —
        for a function model, its function —, not what it records as it runs, such as
        ``TestModel.last_model_request_parameters``), model settings, instructions and system
        prompts (text, or the code of the functions that make them), output type and its JSON
        schema, output validators, capabilities, retries and end strategy; each function tool's
        definition (name, description, parameters' schema) and code; the ``deps`` factory's code;
        and pydantic-ai's version. The tools of another toolset (an MCP server's) are listed when the
        agent runs: it counts by its settings.
        """
        return {
            "pydantic-ai": framework_version("pydantic-ai-slim"),
            "agent": _agent_identity(self.agent),
            "deps": self._deps,
        }

    def __repr__(self) -> str:
        return f"PydanticAIRunner({self._agent_name!r})"


def _agent_identity(agent: AbstractAgent[Any, Any]) -> object:
    """An agent's configuration as data and code (pydantic-ai keeps its prompts in the agent's private fields)."""
    if isinstance(agent, WrapperAgent):
        return {"wrapper": type(agent), "wrapped": _agent_identity(agent.wrapped)}
    if not isinstance(agent, Agent):
        return settings(agent)
    return {
        "name": agent.name,
        "description": agent.description,
        "model": _model_identity(agent.model),
        "model settings": agent.model_settings,
        "instructions": [getattr(part, "instruction", part) for part in getattr(agent, "_instructions", [])],
        "system prompts": list(getattr(agent, "_system_prompts", ())),
        "system prompt functions": [
            getattr(runner, "function", runner) for runner in getattr(agent, "_system_prompt_functions", [])
        ],
        "output type": settings(agent.output_type),
        "output schema": json_schema(agent.output_type),
        "output validators": [
            getattr(validator, "function", validator) for validator in getattr(agent, "_output_validators", [])
        ],
        "tools": [_toolset_identity(toolset) for toolset in agent.toolsets],
        "capabilities": [settings(capability) for capability in agent.root_capability.capabilities],
        "deps type": settings(agent.deps_type),
        "end strategy": agent.end_strategy,
        "retries": [getattr(agent, "_max_tool_retries", None), getattr(agent, "_max_output_retries", None)],
    }


def _model_identity(model: Model | str | None) -> object:
    if not isinstance(model, Model):
        return model
    return {
        "name": model.model_name,
        "system": model.system,
        "base url": model.base_url,
        "settings": model.settings,
        "model": settings(model),
    }


def _toolset_identity(toolset: AbstractToolset[Any]) -> object:
    if isinstance(toolset, FunctionToolset):
        tools: dict[str, FunctionTool[Any]] = toolset.tools
        return {"class": type(toolset), "tools": [_tool_identity(tool) for _, tool in sorted(tools.items())]}
    if isinstance(toolset, WrapperToolset):
        return {"class": type(toolset), "settings": settings(toolset), "wrapped": _toolset_identity(toolset.wrapped)}
    return settings(toolset)


def _tool_identity(tool: FunctionTool[Any]) -> object:
    return {
        "definition": settings(tool.tool_def),
        "function": tool.function,
        "takes context": tool.takes_ctx,
        "prepare": tool.prepare,
        "max retries": tool.max_retries,
        "timeout": tool.timeout,
    }


@dataclasses.dataclass
class _EvalCapability(AbstractCapability[Any]):
    """The per-run hooks: tool calls recorded (or mocked), context messages shown to the model."""

    turn: AdapterTurn
    context: list[ModelMessage]

    def get_ordering(self) -> CapabilityOrdering:
        # Outermost, so the toolset wrapper sees the tool names the model called (another
        # capability may rename or prefix tools inside it).
        return CapabilityOrdering(position="outermost")

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any]:
        return _RecordingToolset(toolset, self.turn)

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        if not self.context:
            return request_context
        # A new list changes only this request, not the run's history.
        return dataclasses.replace(request_context, messages=_with_context(request_context.messages, self.context))


@dataclasses.dataclass
class _RecordingToolset(WrapperToolset[Any]):
    """Records each tool call, and answers it from the case's tool mocks instead of the tool when they mock it."""

    turn: AdapterTurn

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        returned: list[Any] = []

        async def run() -> Any:
            result = await self.wrapped.call_tool(name, tool_args, ctx, tool)
            returned.append(result)
            return result.return_value if isinstance(result, ToolReturn) else result

        arguments = _sent_arguments(ctx, tool_args)
        recorded = await self.turn.call_tool(name, arguments, run, call_id=ctx.tool_call_id or "")
        # The framework gets what the tool returned (a ToolReturn whole), or the mock's result.
        return returned[0] if returned else recorded


def _sent_arguments(ctx: RunContext[Any], validated: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments as the model sent them (validation may add defaults and convert values).

    The validated ones stand in for a call the model did not send (one a capability made up).
    """
    for message in reversed(ctx.messages):
        if isinstance(message, ModelResponse):
            for call in message.tool_calls:
                if call.tool_call_id == ctx.tool_call_id:
                    return call.args_as_dict()
    return validated


def _as_model_messages(messages: Sequence[Message]) -> list[ModelMessage]:
    """The case's context messages as pydantic-ai messages.

    Raises:
        ConfigError: A message whose role is not system, user or assistant.
    """
    converted: list[ModelMessage] = []
    for index, message in enumerate(messages):
        if message.role is Role.SYSTEM:
            converted.append(ModelRequest(parts=[SystemPromptPart(message.content)]))
        elif message.role is Role.USER:
            converted.append(ModelRequest(parts=[UserPromptPart(message.content)]))
        elif message.role is Role.ASSISTANT:
            converted.append(ModelResponse(parts=[TextPart(message.content)]))
        else:
            raise ConfigError(
                f"context message {index} has role {message.role.value!r}; the pydantic-ai runner can show the "
                "model only system, user and assistant context messages"
            )
    return converted


def _with_context(messages: list[ModelMessage], context: list[ModelMessage]) -> list[ModelMessage]:
    """``messages`` with ``context`` inserted after the system prompt parts that open the conversation."""
    first = messages[0] if messages else None
    if not isinstance(first, ModelRequest):
        return [*context, *messages]
    opening = 0
    while opening < len(first.parts) and isinstance(first.parts[opening], SystemPromptPart):
        opening += 1
    if opening == 0:
        return [*context, *messages]
    system = dataclasses.replace(first, parts=first.parts[:opening])
    rest = [dataclasses.replace(first, parts=first.parts[opening:])] if opening < len(first.parts) else []
    return [system, *context, *rest, *messages[1:]]


def _responses(messages: Sequence[ModelMessage]) -> list[ModelResponse]:
    return [message for message in messages if isinstance(message, ModelResponse)]


def _usage(usage: RequestUsage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }


def _reply(output: Any) -> str | None:
    if output is None or isinstance(output, str):
        return output
    return to_json(output).decode()


def _sort_by_call_order(tools: list[Tool], messages: Sequence[ModelMessage]) -> None:
    """Put recorded calls in the order the model asked for them (calls run concurrently may start out of order)."""
    calls = [call.tool_call_id for response in _responses(messages) for call in response.tool_calls]
    position = {call_id: index for index, call_id in enumerate(calls)}
    tools.sort(key=lambda tool: position.get(tool.id, len(position)))
