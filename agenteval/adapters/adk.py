"""Evaluate a Google ADK agent: :class:`ADKRunner` runs it once per user turn in its own ADK session.

Needs ``pip install 'agenteval[adk]'``. Example::

    import agenteval as ae
    from agenteval.adapters.adk import ADKRunner
    from google.adk.agents import LlmAgent

    agent = LlmAgent(name="weather", model="gemini-2.5-flash", tools=[get_weather])
    report = ae.Evaluator("weather-app", ADKRunner(agent)).evaluate(eval_set, metrics=metrics)
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from agenteval.adapters._identity import framework_version, is_users, json_schema, settings
from agenteval.adapters._turn import AdapterTurn
from agenteval.errors import AgentFrameworkError, ConfigError, MissingDependencyError
from agenteval.evalset.message import Message, Role
from agenteval.evalset.models import Tool
from agenteval.runner.base import TurnRequest, TurnResult
from agenteval.runner.toolmock import ToolMocks

try:
    from google.adk.agents import BaseAgent, LlmAgent
    from google.adk.agents.callback_context import CallbackContext
    from google.adk.events import Event
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.plugins import BasePlugin
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.adk.tools.agent_tool import AgentTool
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.base_toolset import BaseToolset
    from google.adk.tools.function_tool import FunctionTool
    from google.adk.tools.tool_context import ToolContext
    from google.genai import types
except ImportError:
    raise MissingDependencyError("the ADK runner", "adk", "google-adk") from None

__all__ = ["ADKRunner"]

_PLUGIN_NAME = "agenteval"

_RUNNING: contextvars.ContextVar[_TurnState | None] = contextvars.ContextVar("agenteval_adk_turn", default=None)
"""The turn this task runs: it reaches the agent tools' own runners, whose sessions are their own."""


@dataclass(slots=True)
class _Session:
    """The ADK session that stands for one eval session."""

    user_id: str
    session_id: str


@dataclass(slots=True)
class _TurnState:
    """One running turn, as the plugin sees it."""

    record: AdapterTurn
    context_messages: list[Message]
    tool_mocks: ToolMocks | None
    calls: dict[str, Tool] = field(default_factory=dict)
    """Recorded calls by ADK function call id, until their function response arrives."""
    failure: Exception | None = None
    """What failed in the plugin; ADK wraps plugin errors, so the turn raises this one instead."""


class _AgentEvalPlugin(BasePlugin):
    """Records the tool calls and model responses of the turns under way, mocks tools, injects context.

    It records what happens in the session of a turn under way. An agent tool runs its agent in a
    runner and session of its own: calls made there are not recorded, but the turn's tool mocks
    still answer them, so that a mocked tool never runs.
    """

    def __init__(self) -> None:
        super().__init__(name=_PLUGIN_NAME)
        self.turns: dict[str, _TurnState] = {}
        """Turns under way, by ADK session id."""

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        turn = self.turns.get(callback_context.session.id)
        if turn is not None:
            with _kept(turn):
                _inject_context(llm_request, turn.context_messages)
        return None

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> LlmResponse | None:
        turn = self.turns.get(callback_context.session.id)
        if turn is not None and not llm_response.partial:
            with _kept(turn):
                model = llm_response.model_version or _agent_model(callback_context)
                turn.record.record_model_call(model, _usage(llm_response.usage_metadata))
        return None

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        turn = self.turns.get(tool_context.session.id)
        if turn is None:
            return await _nested_mock(tool.name, tool_args)
        call_id = tool_context.function_call_id or ""
        with _kept(turn):
            if turn.record.mocks(tool.name):
                run = functools.partial(tool.run_async, args=tool_args, tool_context=tool_context)
                # call_tool records the call before it awaits anything: it is at this index even
                # when other calls start while the mock's result is being made.
                index = len(turn.record.tools)
                mocked = await turn.record.call_tool(tool.name, tool_args, run, call_id=call_id)
                turn.calls[call_id] = turn.record.tools[index]
                # Returning a result makes ADK skip the tool (and every later before-tool callback).
                return cast("dict[str, Any]", mocked)
            call = turn.calls[call_id] = turn.record.record_tool(tool.name, tool_args, call_id=call_id)
            replayed = turn.record.replayed(call)
        # A result makes ADK skip the tool; None lets it run.
        return cast("dict[str, Any] | None", replayed)


async def _nested_mock(name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The mocked result of a call made in an agent tool's own runner during a turn, else ``None``."""
    turn = _RUNNING.get()
    if turn is None or turn.tool_mocks is None or not turn.tool_mocks.mocks(name):
        return None
    with _kept(turn):
        return cast("dict[str, Any]", await turn.tool_mocks.result(name, arguments))


@contextlib.contextmanager
def _kept(turn: _TurnState) -> Iterator[None]:
    """Keep the first exception raised in the plugin's callbacks on the turn, and let it propagate."""
    try:
        yield
    except Exception as error:
        if turn.failure is None:
            turn.failure = error
        raise


class ADKRunner:
    """A :class:`~agenteval.Runner` around a Google ADK agent.

    Each eval session runs in an ADK session of its own, created on its first turn with the case's
    user id and ``sessionInput.state`` and deleted when the case ends, so a multi-turn case sees
    its history and parallel cases never share one. What a turn records:

    - every tool call of the agent's session, in the order the calls start, with ADK's call id,
      the arguments the model sent and the function response the model got back (a tool's dict as
      it is, any other value as ``{"result": value}``, as ADK sends it);
    - the final response: the text of the turn's last final-response event;
    - each model response's model name (``model_version``, else the agent's model) and token
      usage, as OpenAI-style ``prompt_tokens`` / ``completion_tokens`` / ``total_tokens``, in the
      turn's execution trace.

    The case's context messages reach every model call of the session: system messages are added
    to the system instruction, user and assistant messages come before the conversation. A tool
    that the turn's ``toolMock`` rules answer is never run: an ADK plugin (a tool callback placed
    before the runner's other plugins) answers the call with the mock's result.

    Args:
        agent: The agent (an ADK ``Runner`` with an in-memory session service is built for it), or
            an existing ADK ``Runner``, whose session service is then used and to which the
            plugin is added.
        app_name: The ADK app name of the runner built for an agent (an existing runner keeps its own).

    Raises:
        ConfigError: ``agent`` is neither an ADK agent nor an ADK ``Runner``, or the runner
            already has another plugin named ``agenteval``.
    """

    def __init__(self, agent: BaseAgent | Runner, *, app_name: str = "agenteval") -> None:
        if isinstance(agent, Runner):
            self.runner = agent
        elif isinstance(agent, BaseAgent):
            self.runner = Runner(agent=agent, app_name=app_name, session_service=InMemorySessionService())
        else:
            raise ConfigError(
                f"ADKRunner wraps an ADK agent (google.adk.agents.BaseAgent) or an ADK Runner, got {agent!r}"
            )
        self._plugin = _installed_plugin(self.runner)
        self._sessions: dict[str, _Session] = {}

    async def run(self, request: TurnRequest) -> TurnResult:
        """Run one user turn in the eval session's ADK session and report what the agent did.

        Raises:
            ToolMockError: A mocked tool was called with arguments no rule matches.
            AgentFrameworkError: ADK reported an error event (a blocked or failed model response) that no
                reply followed.
            Exception: Whatever ADK or the agent raised.
        """
        message = _user_content(request.message)
        session = await self._session(request)
        turn = _TurnState(AdapterTurn(request, self.runner.agent.name), request.context_messages, request.tool_mocks)
        self._plugin.turns[session.session_id] = turn
        running = _RUNNING.set(turn)
        try:
            reply, invocation_id = await self._run_turn(session, message, turn)
        except Exception:
            if turn.failure is None:
                raise
            raise turn.failure from None
        finally:
            _RUNNING.reset(running)
            del self._plugin.turns[session.session_id]
        if turn.failure is not None:
            raise turn.failure
        return turn.record.result(reply, invocation_id=invocation_id)

    async def _run_turn(self, session: _Session, message: types.Content, turn: _TurnState) -> tuple[str | None, str]:
        reply: str | None = None
        invocation_id = ""
        error: Event | None = None
        events = self.runner.run_async(user_id=session.user_id, session_id=session.session_id, new_message=message)
        # Read to the end: ADK re-raises an exception of the agent (reported first as an error
        # event) only once the events are drained, and a node it retries may still succeed.
        async with contextlib.aclosing(events):
            async for event in events:
                invocation_id = invocation_id or (event.invocation_id or "")
                if event.partial:
                    continue
                if event.error_code:
                    error = event
                    continue
                _record_results(event, turn)
                text = _text(event.content)
                if event.is_final_response() and text is not None:
                    reply, error = text, None
        if error is not None:
            detail = f": {error.error_message}" if error.error_message else ""
            raise AgentFrameworkError(f"ADK reported an error in {error.author}: {error.error_code}{detail}")
        return reply, invocation_id

    async def _session(self, request: TurnRequest) -> _Session:
        session = self._sessions.get(request.session_id)
        if session is None:
            created = await self.runner.session_service.create_session(
                app_name=self.runner.app_name, user_id=request.user_id, state=dict(request.state)
            )
            session = _Session(user_id=request.user_id, session_id=created.id)
            self._sessions[request.session_id] = session
        return session

    async def end_session(self, session_id: str) -> None:
        """Delete the eval session's ADK session."""
        session = self._sessions.pop(session_id, None)
        if session is not None:
            await self.runner.session_service.delete_session(
                app_name=self.runner.app_name, user_id=session.user_id, session_id=session.session_id
            )

    def cache_identity(self) -> object:
        """What decides the agent's answers, for the cache's keys: the agent's configuration, its tools' code.

        Every field of the agent and, recursively, of its sub-agents and of the agents its agent
        tools run (instruction and global instruction — text, or the code of the function that makes
        them —, model name and settings, generation config, input and output schemas, callbacks,
        planner, ...); each tool's name, description, declaration (its parameters' schema) and code;
        the runner's other plugins; and ADK's version. A toolset's tools (an MCP server's) are fetched
        when the agent runs: the toolset counts by its settings only.
        """
        plugins = [plugin for plugin in self.runner.plugin_manager.plugins if plugin is not self._plugin]
        agent = self.runner.agent
        return {
            "adk": framework_version("google-adk"),
            "agent": _agent_identity(agent, frozenset()) if isinstance(agent, BaseAgent) else settings(agent),
            "plugins": [settings(plugin) for plugin in plugins],
        }

    def __repr__(self) -> str:
        return f"ADKRunner({self.runner.agent.name!r}, app_name={self.runner.app_name!r})"


_NOT_CONFIGURATION = frozenset({"parent_agent"})
"""Agent fields that say where the agent is, not how it answers (its parent is described from the root)."""


def _agent_identity(agent: BaseAgent, described: frozenset[int]) -> object:
    """An agent's fields as data and code; sub-agents and agent tools' agents the same way, each once."""
    if id(agent) in described:
        return {"agent": agent.name}
    described |= {id(agent)}
    fields: dict[str, object] = {}
    for name in type(agent).model_fields:
        if name in _NOT_CONFIGURATION:
            continue
        value = getattr(agent, name)
        if name == "sub_agents":
            fields[name] = [_agent_identity(sub_agent, described) for sub_agent in value]
        elif name == "tools":
            fields[name] = [_tool_identity(tool, described) for tool in value]
        elif isinstance(value, type):
            fields[name] = {"type": value, "schema": json_schema(value)}
        else:
            fields[name] = [settings(item) for item in value] if isinstance(value, list) else settings(value)
    return {"class": type(agent), "fields": fields}


def _tool_identity(tool: object, described: frozenset[int]) -> object:
    """A tool's name, description, declaration and code (the agent of an agent tool, recursively)."""
    if isinstance(tool, BaseToolset):
        return {"toolset": settings(tool)}
    if not isinstance(tool, BaseTool):
        if not callable(tool):
            return settings(tool)
        tool = FunctionTool(tool)
    identity: dict[str, object] = {
        "class": type(tool),
        "name": tool.name,
        "description": tool.description,
        "declaration": _declaration(tool),
        "long running": tool.is_long_running,
    }
    if isinstance(tool, FunctionTool):
        identity["function"] = tool.func
    if isinstance(tool, AgentTool):
        identity["agent"] = _agent_identity(tool.agent, described)
        identity["skip summarization"] = tool.skip_summarization
    if is_users(tool):
        identity["object"] = tool
    return identity


def _declaration(tool: BaseTool) -> object:
    """The function declaration ADK sends the model for ``tool`` (its parameters' schema), as JSON data."""
    try:
        declaration = tool._get_declaration()
    except Exception:  # a tool that cannot declare itself outside a run: its name and code still count
        return None
    return declaration.model_dump(mode="json", exclude_none=True) if declaration is not None else None


def _installed_plugin(runner: Runner) -> _AgentEvalPlugin:
    """The runner's agenteval plugin, added first so that tool mocks answer before any other plugin."""
    plugins = runner.plugin_manager.plugins
    existing = next((plugin for plugin in plugins if plugin.name == _PLUGIN_NAME), None)
    if isinstance(existing, _AgentEvalPlugin):
        return existing
    if existing is not None:
        raise ConfigError(
            f"the ADK runner already has a plugin named {_PLUGIN_NAME!r} ({type(existing).__qualname__}); "
            "ADKRunner needs that name for its own plugin: rename the other one"
        )
    plugin = _AgentEvalPlugin()
    plugins.insert(0, plugin)
    return plugin


def _user_content(message: Message) -> types.Content:
    if message.content_parts:
        raise ConfigError(
            "the ADK runner sends the user's text only, and this message has content_parts; "
            "give the turn's user content as text"
        )
    return types.Content(role="user", parts=[types.Part(text=message.content)])


def _inject_context(llm_request: LlmRequest, messages: list[Message]) -> None:
    """Add the case's context messages to one model request (see :class:`ADKRunner`)."""
    instructions = [message.content for message in messages if message.role is Role.SYSTEM]
    if instructions:
        llm_request.append_instructions(instructions)
    prior = [_context_content(message) for message in messages if message.role is not Role.SYSTEM]
    llm_request.contents[:0] = prior


def _context_content(message: Message) -> types.Content:
    roles = {Role.USER: "user", Role.ASSISTANT: "model", Role.UNSET: "user"}
    role = roles.get(message.role)
    if role is None:
        raise ConfigError(
            f"the ADK runner injects system, user and assistant context messages; a {message.role.value} "
            "message cannot be injected: remove it from the case's contextMessages"
        )
    return types.Content(role=role, parts=[types.Part(text=message.content)])


def _record_results(event: Event, turn: _TurnState) -> None:
    """Set the results of the turn's calls this event answers: the function responses ADK sends the model."""
    for response in event.get_function_responses():
        call = turn.calls.pop(response.id or "", None)
        if call is not None:
            turn.record.set_result(call, response.response)


def _text(content: types.Content | None) -> str | None:
    """The text of a content, thoughts left out; ``None`` when it has none."""
    if content is None or not content.parts:
        return None
    texts = [part.text for part in content.parts if part.text is not None and not part.thought]
    return "".join(texts) if texts else None


def _agent_model(callback_context: CallbackContext) -> str:
    agent = callback_context.get_invocation_context().agent
    return agent.canonical_model.model if isinstance(agent, LlmAgent) else ""


def _usage(metadata: types.GenerateContentResponseUsageMetadata | None) -> dict[str, Any] | None:
    """ADK's token counts as OpenAI-style usage; thinking tokens count as completion tokens, as in OpenAI's."""
    if metadata is None:
        return None
    completion = None
    if metadata.candidates_token_count is not None or metadata.thoughts_token_count is not None:
        completion = (metadata.candidates_token_count or 0) + (metadata.thoughts_token_count or 0)
    counts = {
        "prompt_tokens": metadata.prompt_token_count,
        "completion_tokens": completion,
        "total_tokens": metadata.total_token_count,
    }
    usage = {key: value for key, value in counts.items() if value is not None}
    return usage or None
