"""Evaluate an OpenAI Agents SDK agent: :class:`OpenAIAgentsRunner` (``pip install 'agenteval[openai-agents]'``).

Each turn runs a copy of the agent whose function tools are intercepted, so that the eval set's
``toolMock`` rules apply and every call is recorded; the agent itself is never changed.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, cast

from pydantic_core import to_json

from agenteval.adapters._identity import framework_version, functions_in, json_schema, settings
from agenteval.adapters._turn import AdapterTurn, import_framework
from agenteval.errors import AgentEvalError, ConfigError, ToolMockError
from agenteval.evalset.message import Message, Role
from agenteval.runner.base import TurnRequest, TurnResult

import_framework("agents", feature="the OpenAI Agents runner", extra="openai-agents", package="openai-agents")

from agents import (  # noqa: E402 (only once the check above has explained a missing package)
    Agent,
    AgentsException,
    FunctionTool,
    ModelResponse,
    RunConfig,
    RunContextWrapper,
    RunHooks,
    Runner,
    SQLiteSession,
    Tool,
    TResponseInputItem,
    Usage,
)
from agents.agent_output import AgentOutputSchemaBase  # noqa: E402
from agents.handoffs import Handoff  # noqa: E402
from agents.models.default_models import get_default_model  # noqa: E402
from agents.run import DEFAULT_MAX_TURNS  # noqa: E402
from agents.run_config import CallModelData, ModelInputData  # noqa: E402
from agents.tool_context import ToolContext  # noqa: E402

__all__ = ["OpenAIAgentsRunner"]

ContextFactory = Callable[[TurnRequest], Any]
"""Builds a session's run context (the SDK's ``context=``) from the session's first turn."""


@dataclass(slots=True)
class _Session:
    history: SQLiteSession
    context: Any


class OpenAIAgentsRunner:
    """A :class:`~agenteval.runner.Runner` around an OpenAI Agents SDK ``Agent``.

    Every eval session gets its own in-memory ``SQLiteSession``, so a case's later turns see its
    earlier ones; :meth:`end_session` closes it. The case's context messages are put before the
    input of every model call (they are not stored in the session). Each turn records, in the
    order they start, the calls of the agent's tools (with the SDK's call id, the arguments the
    model sent and what the tool returned), the final output (a structured output as JSON), and
    the model name and token usage of each model response.

    The eval set's ``toolMock`` rules answer calls of the tools they name, and those tools are
    never called: each turn runs a copy of the agent (and of the agents it hands off to) whose
    ``FunctionTool`` invokers are wrapped. A mocked tool the runner cannot wrap (an MCP server's,
    or one of an agent reached through a ``Handoff`` object) fails the case before it runs; such
    tools are still recorded when not mocked. An agent used as a tool (``Agent.as_tool``) is one
    tool call, recorded and mocked as a whole: the tools it calls in its own run are not seen.
    Hosted tools (web search, file search, …) run at the model provider and are not recorded.

    Example::

        agent = Agent(name="weather", instructions="...", tools=[get_weather])
        report = ae.Evaluator("weather-app", OpenAIAgentsRunner(agent)).evaluate(eval_set, metrics=[...])

    Args:
        agent: The agent under test; it is not changed.
        run_config: The SDK's run configuration for every run (model provider, settings, …). By
            default tracing is off, so that an evaluation sends nothing anywhere; a ``run_config``
            you pass is used as it is.
        context_factory: Builds the run context of a session (passed to the SDK as ``context=``)
            from the session's first turn: its ``user_id``, ``state`` (the case's
            ``sessionInput``) and ``session_id``. Without it, runs have no context.
        max_turns: The most model calls the SDK makes in one user turn.

    Raises:
        ConfigError: ``agent`` is not an Agents SDK ``Agent``, or ``max_turns`` is not positive.
    """

    def __init__(
        self,
        agent: Agent[Any],
        *,
        run_config: RunConfig | None = None,
        context_factory: ContextFactory | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
    ) -> None:
        if not isinstance(agent, Agent):
            raise ConfigError(f"OpenAIAgentsRunner wraps an agents.Agent, got {type(agent).__name__}")
        if max_turns <= 0:
            raise ConfigError(f"max_turns must be greater than 0, got {max_turns}")
        self.agent = agent
        self.run_config = run_config if run_config is not None else RunConfig(tracing_disabled=True)
        self.context_factory = context_factory
        self.max_turns = max_turns
        self._sessions: dict[str, _Session] = {}

    async def run(self, request: TurnRequest) -> TurnResult:
        """Run the agent for one user turn in the request's session.

        Raises:
            ConfigError: A context message has a role the SDK cannot take as input (``tool``, or none).
            ToolMockError: A mocked tool was called with arguments no rule matches, or could not be intercepted.
            AgentsException: What the SDK raised (``MaxTurnsExceeded``, ``ModelBehaviorError``, …).
            AgentEvalError: The run stopped for a tool call to be approved.
        """
        context_items = _input_items(request.context_messages)
        session = self._session(request)
        turn = AdapterTurn(request, self.agent.name)
        try:
            result = await Runner.run(
                _intercepting(self.agent, turn, {}),
                request.message.content,
                context=session.context,
                max_turns=self.max_turns,
                hooks=_TurnHooks(turn, self.run_config),
                run_config=_with_context(self.run_config, context_items),
                session=session.history,
            )
        except AgentsException as error:
            mock_error = _tool_mock_error(error)
            if mock_error is not None:
                raise mock_error from error
            raise
        if result.interruptions:
            names = ", ".join(item.tool_name or "?" for item in result.interruptions)
            raise AgentEvalError(
                f"the agent stopped for approval of tool calls ({names}), which an evaluation cannot give: "
                "evaluate the agent with needs_approval off"
            )
        return turn.result(_reply(result.final_output))

    def end_session(self, session_id: str) -> None:
        """Close a finished session's history."""
        session = self._sessions.pop(session_id, None)
        if session is not None:
            session.history.close()

    def _session(self, request: TurnRequest) -> _Session:
        session = self._sessions.get(request.session_id)
        if session is None:
            context = self.context_factory(request) if self.context_factory is not None else None
            session = _Session(SQLiteSession(request.session_id), context)
            self._sessions[request.session_id] = session
        return session

    def cache_identity(self) -> object:
        """What decides the agent's answers, for the cache's keys: the agents' configuration, their tools' code.

        Every field of the agent and, recursively, of the agents it hands off to (instructions —
        text, or the code of the function that makes them —, model name and settings, output type
        and its schema, guardrails, hooks, tool use behaviour, ...); each function tool's name,
        description, parameters' schema and code; the run configuration (its model, settings,
        filters and guardrails), ``max_turns`` and the ``context_factory``'s code; and the SDK's
        version. An MCP server's tools are listed when the agent runs: it counts by its settings.
        """
        return {
            "openai-agents": framework_version("openai-agents"),
            "agent": _agent_identity(self.agent, frozenset()),
            "run config": settings(self.run_config),
            "context factory": self.context_factory,
            "max turns": self.max_turns,
        }

    def __repr__(self) -> str:
        return f"OpenAIAgentsRunner({self.agent.name!r})"


def _agent_identity(agent: Agent[Any], described: frozenset[int]) -> object:
    """An agent's fields as data and code; the agents it hands off to the same way, each once."""
    if id(agent) in described:
        return {"agent": agent.name}
    described |= {id(agent)}
    fields: dict[str, object] = {}
    for field in dataclasses.fields(agent):
        value = getattr(agent, field.name)
        if field.name == "tools":
            fields["tools"] = [_tool_identity(tool) for tool in value]
        elif field.name == "handoffs":
            fields["handoffs"] = [_handoff_identity(target, described) for target in value]
        elif field.name == "output_type":
            fields["output_type"] = _output_identity(value)
        elif isinstance(value, list):
            fields[field.name] = [settings(item) for item in value]
        else:
            fields[field.name] = settings(value)
    return {"class": type(agent), "fields": fields}


def _tool_identity(tool: Tool) -> object:
    if not isinstance(tool, FunctionTool):
        return settings(tool)  # a hosted tool: its settings are all there is
    return {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.params_json_schema,
        "strict": tool.strict_json_schema,
        "code": functions_in(tool.on_invoke_tool),
        "settings": settings(tool),
    }


def _handoff_identity(target: Agent[Any] | Handoff[Any, Any], described: frozenset[int]) -> object:
    if isinstance(target, Agent):
        return _agent_identity(target, described)
    reference = target._agent_ref
    agent = reference() if reference is not None else None
    return {
        "handoff": settings(target),
        "agent": _agent_identity(agent, described) if isinstance(agent, Agent) else target.agent_name,
    }


def _output_identity(output_type: object) -> object:
    if isinstance(output_type, AgentOutputSchemaBase):
        return {"schema": output_type.json_schema() if not output_type.is_plain_text() else None}
    return {"type": settings(output_type), "schema": json_schema(output_type)}


class _Intercepted:
    """A function tool's invoker that asks the turn to mock or run each call, and records it."""

    def __init__(self, invoke: Callable[[ToolContext[Any], str], Awaitable[Any]], turn: AdapterTurn) -> None:
        self._invoke = invoke
        self._turn = turn

    async def __call__(self, context: ToolContext[Any], arguments: str) -> Any:
        return await self._turn.call_tool(
            context.tool_name,
            _parsed(arguments),
            lambda: self._invoke(context, arguments),
            call_id=context.tool_call_id,
        )


def _intercepting(agent: Agent[Any], turn: AdapterTurn, copies: dict[int, Agent[Any]]) -> Agent[Any]:
    """A copy of ``agent`` and of the agents it hands off to, with their function tools intercepted."""
    existing = copies.get(id(agent))
    if existing is not None:
        return existing  # agents that hand off to each other
    clone = agent.clone(tools=[_intercepted(tool, turn) for tool in agent.tools])
    copies[id(agent)] = clone
    clone.handoffs = [
        _intercepting(target, turn, copies) if isinstance(target, Agent) else target for target in agent.handoffs
    ]
    return clone


def _intercepted(tool: Tool, turn: AdapterTurn) -> Tool:
    if not isinstance(tool, FunctionTool):
        return tool  # hosted tools run at the model provider: nothing to intercept
    clone = copy.copy(tool)
    clone.on_invoke_tool = _Intercepted(clone.on_invoke_tool, turn)
    return clone


class _TurnHooks(RunHooks[Any]):
    """Records model responses, and the calls of local tools the runner could not intercept."""

    def __init__(self, turn: AdapterTurn, run_config: RunConfig) -> None:
        self._turn = turn
        self._run_config = run_config
        self._observed: dict[str, Any] = {}

    async def on_llm_end(self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse) -> None:
        self._turn.record_model_call(_model_name(agent, self._run_config), _usage(response.usage))

    async def on_tool_start(self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool) -> None:
        if _is_intercepted(tool):
            return
        if self._turn.mocks(tool.name):
            raise ToolMockError(
                f'tool "{tool.name}" is mocked, but agent {agent.name!r} runs it where it cannot be intercepted '
                "(an MCP server's tool, or a tool of an agent reached through a Handoff object); it was not run"
            )
        if isinstance(context, ToolContext):
            call = self._turn.record_tool(tool.name, _parsed(context.tool_arguments), call_id=context.tool_call_id)
            self._observed[context.tool_call_id] = call
        else:
            self._turn.record_tool(tool.name)

    async def on_tool_end(self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: object) -> None:
        call = self._observed.pop(context.tool_call_id, None) if isinstance(context, ToolContext) else None
        if call is not None:
            self._turn.set_result(call, result)


def _is_intercepted(tool: Tool) -> bool:
    return isinstance(tool, FunctionTool) and isinstance(tool.on_invoke_tool, _Intercepted)


def _parsed(arguments: str) -> Any:
    """The model's JSON arguments as values (kept as text when they are not JSON)."""
    if not arguments:
        return {}
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def _model_name(agent: Agent[Any], run_config: RunConfig) -> str:
    """The model's name, resolved as the SDK resolves the model: the run config's, else the agent's."""
    model = run_config.model if run_config.model is not None else agent.model
    if model is None:
        return get_default_model()
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else type(model).__name__


def _usage(usage: Usage) -> dict[str, int] | None:
    if not (usage.requests or usage.input_tokens or usage.output_tokens or usage.total_tokens):
        return None  # the model reported none
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }


_INPUT_ROLES = {Role.SYSTEM: "system", Role.USER: "user", Role.ASSISTANT: "assistant"}


def _input_items(messages: list[Message]) -> list[TResponseInputItem]:
    """The context messages as SDK input items.

    Raises:
        ConfigError: A message's role has no input item without the call it answers.
    """
    items: list[TResponseInputItem] = []
    for index, message in enumerate(messages):
        role = _INPUT_ROLES.get(message.role)
        if role is None:
            raise ConfigError(
                f"context message {index} has role {message.role.value!r}; the OpenAI Agents runner takes "
                "system, user and assistant context messages"
            )
        items.append(cast(TResponseInputItem, {"role": role, "content": message.content}))
    return items


def _with_context(run_config: RunConfig, items: list[TResponseInputItem]) -> RunConfig:
    """``run_config`` putting ``items`` before the input of every model call (after them, its own filter runs)."""
    if not items:
        return run_config
    own_filter = run_config.call_model_input_filter

    def prepend(data: CallModelData[Any]) -> ModelInputData | Awaitable[ModelInputData]:
        model_data = ModelInputData(
            input=[copy.copy(item) for item in items] + data.model_data.input,
            instructions=data.model_data.instructions,
        )
        if own_filter is None:
            return model_data
        return own_filter(replace(data, model_data=model_data))

    return replace(run_config, call_model_input_filter=prepend)


def _tool_mock_error(error: BaseException) -> ToolMockError | None:
    """The :class:`ToolMockError` the SDK wrapped (as a ``UserError`` of the tool), if it did."""
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, ToolMockError):
            return cause
        cause = cause.__cause__
    return None


def _reply(output: Any) -> str | None:
    """The final output as text: a structured output (a pydantic model, a dataclass, …) as JSON."""
    if output is None or isinstance(output, str):
        return output
    return to_json(output).decode()
