"""The default user simulator: a chat model plays the user of a ``conversationScenario`` case.

It behaves like the reference's default simulator (``usersimulation.New``): the scenario's fixed
starting prompt opens the conversation without a model call; then, each turn, the model sees the
agent's latest reply and writes the next user message; a reply that *is* the stop signal (trimmed,
case-insensitive) ends the conversation, and so does reaching ``maxAllowedInvocations``.

Message layout. The reference keeps the simulated user's history in a session of its own runner and
sends only the agent's latest reply. This simulator is stateless towards the model instead, and
sends the whole exchange every turn, from the simulated user's point of view:

- one ``system`` message: the system prompt, plus the case's session ``state`` as JSON when it is not
  empty (the reference hands the state to its runner; it is rendered when the conversation starts);
- then, per earlier model turn, ``user`` = the agent's reply it answered, ``assistant`` = what the
  simulator said;
- last, ``user`` = the agent's latest reply (empty at the start of a conversation without a starting
  prompt).

The starting prompt is not in that history (the model did not write it): the system prompt quotes
it, as in the reference.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agenteval.errors import AgentEvalError, ConfigError, rewrap
from agenteval.evalset.message import Message
from agenteval.evalset.models import ConversationScenario, ScenarioDriver
from agenteval.llm.base import ChatModel, ChatRequest
from agenteval.metric.criterion import GenerationConfig
from agenteval.runner.simulation import SimulationStart, SimulatorDecision

__all__ = ["LLMSimulatedConversation", "LLMUserSimulator", "SystemPromptBuilder", "default_system_prompt"]

SystemPromptBuilder = Callable[[ConversationScenario], str]
"""Builds the simulator's system prompt from the effective scenario (see :class:`LLMUserSimulator`)."""

_MAX_NEGATIVE = "max allowed invocations must be greater than or equal to 0"


def default_system_prompt(scenario: ConversationScenario) -> str:
    """The default system prompt of :class:`LLMUserSimulator` for an effective scenario.

    Args:
        scenario: The scenario, with its stop signal already trimmed.

    Returns:
        Instructions to play the user, the stop signal (if set), the starting prompt (if set) and the plan.
    """
    lines = [
        "You are playing the user in a conversation with an AI agent that is being evaluated.",
        "Your task is to write the one next user message that best moves the conversation toward the user's goal.",
        "",
        "What you receive each turn:",
        "- The agent's latest reply (your own earlier messages are the user's side of the conversation).",
        "- An empty reply means the conversation is just starting.",
        "",
        "How to respond:",
        "- Write exactly one user message.",
        "- Word it the way this user would naturally talk.",
        "- The conversation plan below is your main instruction for how the user behaves.",
        "- Follow the conversation plan closely when choosing what to say next.",
        "- Stay consistent with the user's goal, constraints and earlier direction.",
        "- Take the most useful next step: answer the agent's question, give missing details, ask for the next "
        "action, or correct the agent when it gets something wrong.",
        "- Keep it short, but include enough for the agent to make progress.",
        "- Do not explain your reasoning.",
        "- Do not reveal or describe the conversation plan.",
        "- Do not write more than one turn.",
    ]
    if scenario.stop_signal:
        lines.append(
            "- Once the user's goal has been achieved, reply with only this stop signal and nothing else: "
            f"{scenario.stop_signal}"
        )
    if scenario.starting_prompt:
        lines += [
            "",
            "The conversation has already started with this fixed first user message:",
            scenario.starting_prompt,
        ]
    lines += ["", "Conversation plan:", scenario.conversation_plan]
    return "\n".join(lines)


def _render_state(state: dict[str, Any]) -> str:
    return json.dumps(state, ensure_ascii=False, sort_keys=True, indent=2, default=str)


def _is_stop(content: str, stop_signal: str) -> bool:
    return bool(stop_signal) and content.strip().casefold() == stop_signal.strip().casefold()


class LLMSimulatedConversation:
    """One simulated conversation of :class:`LLMUserSimulator` (one per case).

    Attributes:
        scenario: The effective scenario (stop signal trimmed, limits resolved).
        system_prompt: The system prompt the model gets (without the session state).
        history: The exchange so far from the simulated user's side (agent replies as ``user``
            messages, the simulator's messages as ``assistant`` messages); the starting prompt is not in it.
        generated: User messages produced so far, the starting prompt included.
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        scenario: ConversationScenario,
        system_prompt: str,
        state: dict[str, Any],
        generation: GenerationConfig | None,
    ) -> None:
        self.scenario = scenario
        self.system_prompt = system_prompt
        self.history: list[Message] = []
        self.generated = 0
        self._model = model
        self._system_message = system_prompt
        if state:
            self._system_message += f"\n\nSession state (JSON):\n{_render_state(state)}"
        self._generation = generation
        self._started = False
        self._closed = False

    @property
    def max_allowed_invocations(self) -> int:
        """The user-turn limit; ``0`` means none."""
        return self.scenario.max_allowed_invocations or 0

    async def next(self, last_target_response: Message | None) -> SimulatorDecision:
        """Return the next user message, or stop.

        Raises:
            AgentEvalError: The conversation is closed, the model failed, or it answered nothing.
        """
        if self._closed:
            raise AgentEvalError("conversation is closed")
        limit = self.max_allowed_invocations
        if limit > 0 and self.generated >= limit:
            return SimulatorDecision(stop=True)
        if not self._started:
            self._started = True
            if self.scenario.starting_prompt:
                self.generated += 1
                return SimulatorDecision(message=Message.user(self.scenario.starting_prompt))
        reply = Message.user(last_target_response.content if last_target_response is not None else "")
        content = await self._generate(reply)
        if _is_stop(content, self.scenario.stop_signal):
            return SimulatorDecision(stop=True)
        self.history += [reply, Message.assistant(content)]
        self.generated += 1
        return SimulatorDecision(message=Message.user(content))

    async def _generate(self, reply: Message) -> str:
        request = ChatRequest(
            messages=[Message.system(self._system_message), *self.history, reply],
            generation=self._generation,
        )
        try:
            response = await self._model.generate(request)
        except Exception as exc:
            raise rewrap("simulator model", exc) from exc
        content = response.content.strip()
        if not content:
            # The reference's wording, in parentheses, reads as if the agent's reply were empty.
            raise AgentEvalError("the simulator model returned an empty message (final response content is empty)")
        return content

    async def close(self) -> None:
        """End the conversation; :meth:`next` raises afterwards."""
        self._closed = True


class LLMUserSimulator:
    """The default user simulator: a chat model plays the user of ``conversationScenario`` cases.

    Each case gets a fresh :class:`LLMSimulatedConversation` (see the module docstring for what the
    model is sent). Options override the scenario's own settings for every case.

    Args:
        model: The chat model that plays the user.
        stop_signal: Replaces the scenario's ``stopSignal`` (trimmed; ``""`` disables it).
        max_allowed_invocations: Replaces the scenario's ``maxAllowedInvocations`` (``0`` means no limit).
        system_prompt_builder: Builds the system prompt from the effective scenario
            (default :func:`default_system_prompt`).
        generation: Sampling options for the model.

    Raises:
        ConfigError: ``model`` is ``None`` or ``max_allowed_invocations`` is negative.
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        stop_signal: str | None = None,
        max_allowed_invocations: int | None = None,
        system_prompt_builder: SystemPromptBuilder | None = None,
        generation: GenerationConfig | None = None,
    ) -> None:
        if model is None:
            raise ConfigError("user simulator model is nil")
        if max_allowed_invocations is not None and max_allowed_invocations < 0:
            raise ConfigError(_MAX_NEGATIVE)
        self.model = model
        self.stop_signal = stop_signal
        self.max_allowed_invocations = max_allowed_invocations
        self.system_prompt_builder: SystemPromptBuilder = system_prompt_builder or default_system_prompt
        self.generation = generation

    def effective_scenario(self, scenario: ConversationScenario) -> ConversationScenario:
        """The scenario a conversation follows: options applied, stop signal trimmed, driver defaulted.

        Raises:
            ConfigError: The plan is blank, the limit is negative, or neither a stop signal nor a limit is set.
        """
        if not scenario.conversation_plan.strip():
            raise ConfigError("conversation plan is empty")
        stop_signal = (self.stop_signal if self.stop_signal is not None else scenario.stop_signal).strip()
        limit = self.max_allowed_invocations
        if limit is None:
            limit = scenario.max_allowed_invocations or 0
        if limit < 0:
            raise ConfigError(_MAX_NEGATIVE)
        if not stop_signal and limit == 0:
            raise ConfigError("stop signal and max allowed invocations cannot both be disabled")
        return ConversationScenario(
            driver=scenario.driver or ScenarioDriver.ACTUAL,
            starting_prompt=scenario.starting_prompt,
            conversation_plan=scenario.conversation_plan,
            stop_signal=stop_signal,
            max_allowed_invocations=limit,
        )

    async def start(self, request: SimulationStart) -> LLMSimulatedConversation:
        """Start a conversation for one case.

        Raises:
            ConfigError: The request is incomplete, the scenario is invalid (see :meth:`effective_scenario`),
                or the system prompt is blank.
        """
        if request is None:
            raise ConfigError("start request is nil")
        if request.scenario is None:
            raise ConfigError("scenario is nil")
        if request.session_input is None:
            raise ConfigError("initial session is nil")
        scenario = self.effective_scenario(request.scenario)
        system_prompt = self.system_prompt_builder(scenario)
        if not system_prompt.strip():
            raise ConfigError("system prompt is empty")
        return LLMSimulatedConversation(
            self.model,
            scenario=scenario,
            system_prompt=system_prompt,
            state=request.session_input.state,
            generation=self.generation,
        )

    def cache_identity(self) -> object:
        """What decides the conversation, for the cache's keys: the model and the settings."""
        return {
            "model": self.model,
            "stop_signal": self.stop_signal,
            "max_allowed_invocations": self.max_allowed_invocations,
            "system_prompt_builder": self.system_prompt_builder,
            "generation": self.generation,
        }

    def __repr__(self) -> str:
        return f"LLMUserSimulator(model={self.model!r})"
