"""Eval sets: cases of multi-turn conversations with what the agent is expected to do."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from enum import StrEnum
from typing import Any

from pydantic import Field, field_validator

from agenteval._util.trpc_json import CamelModel, EpochTime, GoFloat, GoInt, check_arguments
from agenteval.errors import ConfigError
from agenteval.evalset.message import Message
from agenteval.evalset.trace import ExecutionTrace

__all__ = [
    "ArgumentsMatch",
    "ConversationScenario",
    "EvalCase",
    "EvalCaseRubric",
    "EvalMode",
    "EvalSet",
    "Invocation",
    "LLMGenerator",
    "MockTool",
    "REPLAYED_KEY",
    "RubricContent",
    "ScenarioDriver",
    "SessionInput",
    "Tool",
    "ToolMock",
]


REPLAYED_KEY = "replayed"
"""The JSON key, ``true``, that marks a recorded tool call answered from a replayed recording."""


class Tool(CamelModel):
    """One tool call: what was called, with which arguments, and what it returned."""

    id: str = ""
    """Tool call id; never compared by evaluators."""
    name: str = ""
    """Tool name."""
    arguments: Any = None
    """Call arguments (any JSON value, usually an object)."""
    result: Any = None
    """What the tool returned (any JSON value)."""

    @property
    def was_replayed(self) -> bool:
        """Whether this recorded call was answered from a replayed recording instead of running the tool.

        Such a call carries one more JSON key, ``"replayed": true`` (:data:`REPLAYED_KEY`), written by
        :class:`agenteval.runner.tool_replay.ToolReplay`.

        Example:
            >>> Tool.model_validate({"name": "weather", "replayed": True}).was_replayed
            True
            >>> Tool(name="weather").was_replayed
            False
        """
        return (self.model_extra or {}).get(REPLAYED_KEY) is True


class ArgumentsMatch(CamelModel):
    """How a tool mock rule matches a call's arguments."""

    ignore: bool = False
    """Match on the tool name alone."""
    expected: Any = None
    """The arguments to match."""
    only_tree: dict[str, Any] = Field(default_factory=dict)
    """Compare only these keys."""
    ignore_tree: dict[str, Any] = Field(default_factory=dict)
    """Ignore these keys."""
    number_tolerance: GoFloat | None = None
    """Absolute tolerance for numbers; exact when unset."""


class LLMGenerator(CamelModel):
    """Generate a mocked tool result with an LLM."""

    prompt: str = ""
    """Instruction for the tool-mock model."""


class MockTool(CamelModel):
    """A mock rule for one tool name."""

    name: str = ""
    """Tool name to mock."""
    arguments: ArgumentsMatch | None = None
    """Argument matching; when unset the name alone matches."""
    result: Any = None
    """Static result returned when the rule matches."""
    llm_generator: LLMGenerator | None = None
    """Generate the result with an LLM instead."""


class ToolMock(CamelModel):
    """Per-turn tool mocks for the agent under test and for the expected runner."""

    actual: list[MockTool] = Field(default_factory=list)
    """Rules applied to the agent under test."""
    expected: list[MockTool] = Field(default_factory=list)
    """Rules applied to the expected runner."""


class Invocation(CamelModel):
    """One turn: the user's message and what the agent said and did in reply."""

    invocation_id: str = ""
    """Turn id: the eval set's on the expected side, the runner's on the actual side."""
    context_messages: list[Message] = Field(default_factory=list)
    """Context messages of this turn (case-level ones are copied here during evaluation)."""
    user_content: Message | None = None
    """The user's message; required for every turn that is run."""
    final_response: Message | None = None
    """The agent's final reply (expected or captured)."""
    tools: list[Tool] = Field(default_factory=list)
    """Tool calls, in call order (expected or captured)."""
    tool_mock: ToolMock | None = None
    """Tool mocks for this turn."""
    intermediate_responses: list[Message] = Field(default_factory=list)
    """Non-final assistant messages, when recorded."""
    creation_timestamp: EpochTime | None = None
    """When the turn was created."""
    execution_trace: ExecutionTrace | None = None
    """Execution trace of the turn, when captured."""

    @classmethod
    def of(cls, user: str, expect: str | None = None, *, tools: Sequence[Tool] = ()) -> Invocation:
        """Write one expected turn: the user's message, the expected reply and tool calls.

        Args:
            user: What the user says.
            expect: The expected final response. ``None`` leaves it unstated, for turns that only
                tool calls are checked on (a final-response metric compares the reply with ``""``).
            tools: The tool calls the agent is expected to make, in call order.

        Returns:
            The turn, for :meth:`EvalCase.of`.

        Raises:
            ConfigError: An argument of the wrong type (e.g. one :class:`Tool` rather than a list).

        Example:
            >>> turn = Invocation.of("2 + 3?", "5", tools=[Tool(name="add", arguments={"a": 2, "b": 3})])
            >>> turn.user_content.content, turn.final_response.content, turn.tools[0].name
            ('2 + 3?', '5', 'add')
        """
        check_arguments("Invocation.of", user=(user, str), expect=(expect, str | None), tools=(tools, list[Tool]))
        return cls(
            user_content=Message.user(user),
            final_response=None if expect is None else Message.assistant(expect),
            tools=list(tools),
        )


class SessionInput(CamelModel):
    """The session a case runs in."""

    app_name: str = ""
    """App name (informational)."""
    user_id: str = ""
    """User id the agent runs as; copied into results."""
    state: dict[str, Any] = Field(default_factory=dict)
    """Runtime state passed to the agent on every turn."""


class ScenarioDriver(StrEnum):
    """Which runner's replies drive a simulated user."""

    DEFAULT = ""
    ACTUAL = "actual"
    EXPECTED = "expected"


class ConversationScenario(CamelModel):
    """A simulated multi-turn conversation: a plan a simulated user follows."""

    driver: ScenarioDriver = ScenarioDriver.DEFAULT
    """``actual`` (default) or ``expected``."""
    starting_prompt: str = ""
    """Fixed first user message."""
    conversation_plan: str = ""
    """The simulated user's goal, constraints and stopping condition."""
    stop_signal: str = ""
    """A simulator message equal to this (trimmed, case-insensitive) ends the conversation."""
    max_allowed_invocations: GoInt | None = None
    """Most user turns to generate; ``0`` or unset means unlimited."""


class RubricContent(CamelModel):
    """The text a judge reads for a rubric."""

    text: str = ""
    """Rubric instruction."""


class EvalCaseRubric(CamelModel):
    """A rubric that one case adds to a named LLM-judge metric."""

    metric_name: str = ""
    """The metric this rubric augments."""
    id: str = ""
    """Rubric id; ``case_rubric_<n>`` when blank."""
    content: RubricContent | None = None
    """What the judge checks."""
    description: str = ""
    """Human-facing note, not judged."""
    type: str = ""
    """Free-form classification."""


class EvalMode(StrEnum):
    """How a case's conversation is read."""

    DEFAULT = ""
    """Run the agent on the conversation's user turns."""
    TRACE = "trace"
    """Evaluate a recorded trace; the agent is not run."""


class EvalCase(CamelModel):
    """One evaluation case: a conversation (or a scenario) and its session."""

    eval_id: str = ""
    """Case id, unique within the set."""
    eval_mode: EvalMode = EvalMode.DEFAULT
    """``""`` (run the agent) or ``"trace"`` (score a recorded trace)."""
    expected_runner_enabled: bool = False
    """Generate expected turns with the expected runner."""
    context_messages: list[Message] = Field(default_factory=list)
    """Context injected into every agent call of the case."""
    conversation: list[Invocation] = Field(default_factory=list)
    """Turns: user input plus expected output (in trace mode, optionally the expected side)."""
    conversation_scenario: ConversationScenario | None = None
    """Simulated-user plan, instead of a fixed conversation."""
    actual_conversation: list[Invocation] = Field(default_factory=list)
    """Trace mode only: the recorded actual turns."""
    session_input: SessionInput | None = None
    """The session to run in; required."""
    rubrics: list[EvalCaseRubric] = Field(default_factory=list)
    """Case-level rubrics added to named LLM-judge metrics."""
    creation_timestamp: EpochTime | None = None
    """When the case was created."""

    @classmethod
    def of(
        cls,
        eval_id: str,
        *turns: str | Invocation,
        expect: str | None = None,
        tools: Sequence[Tool] = (),
        user_id: str = "user",
        state: Mapping[str, Any] | None = None,
        context: Sequence[Message] = (),
    ) -> EvalCase:
        """Write a case: one turn inline, or several :meth:`Invocation.of` turns.

        Args:
            eval_id: Case id, unique within the set.
            *turns: Either a single user message (with ``expect`` and ``tools`` for that turn), or
                one or more :meth:`Invocation.of` turns.
            expect: For a single inline turn: the expected final response (``None``: unstated, as
                in :meth:`Invocation.of`).
            tools: For a single inline turn: the expected tool calls, in call order.
            user_id: The user the agent runs as.
            state: Session state passed to the agent on every turn.
            context: Messages given to the agent before every turn (e.g. a system prompt).

        Returns:
            The case, with its :class:`SessionInput`.

        Raises:
            ConfigError: An argument of the wrong type; an empty ``eval_id``; no turns; several user
                messages, or messages mixed with :meth:`Invocation.of` turns (ambiguous: is a second
                text a reply or a turn?); ``expect`` or ``tools`` given with :meth:`Invocation.of` turns.

        Example:
            >>> case = EvalCase.of("sf", "Weather in SF?", expect="Sunny", tools=[Tool(name="weather")])
            >>> [turn.user_content.content for turn in case.conversation], case.session_input.user_id
            (['Weather in SF?'], 'user')
            >>> chat = EvalCase.of("chat", Invocation.of("Hi", "Hello!"), Invocation.of("Bye", "Goodbye!"))
            >>> len(chat.conversation)
            2
        """
        where = f"EvalCase.of({eval_id!r})"
        check_arguments(
            where,
            eval_id=(eval_id, str),
            expect=(expect, str | None),
            tools=(tools, list[Tool]),
            user_id=(user_id, str),
            state=(state, Mapping | None),
            context=(context, list[Message]),
        )
        if not eval_id:
            raise ConfigError("EvalCase.of: eval_id is empty; give the case an id, unique within its eval set")
        return cls(
            eval_id=eval_id,
            conversation=_conversation(where, turns, expect, tools),
            context_messages=list(context),
            session_input=SessionInput(user_id=user_id, state=dict(state or {})),
        )


class EvalSet(CamelModel):
    """A named collection of eval cases."""

    eval_set_id: str = ""
    """Eval set id."""
    name: str = ""
    """Display name."""
    description: str = ""
    """Free-form description."""
    eval_cases: list[EvalCase] = Field(default_factory=list)
    """The cases, in order. ``null`` entries in a file are skipped, as the reference does."""
    creation_timestamp: EpochTime | None = None
    """When the set was created."""

    @field_validator("eval_cases", mode="before")
    @classmethod
    def _skip_null_cases(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [case for case in value if case is not None]
        return value

    @classmethod
    def of(cls, eval_set_id: str, cases: Iterable[EvalCase], *, name: str = "", description: str = "") -> EvalSet:
        """Collect cases into an eval set, refusing what would make cases impossible to tell apart.

        Args:
            eval_set_id: Eval set id (the file name in a local store).
            cases: The cases, in order (e.g. built with :meth:`EvalCase.of`).
            name: Display name.
            description: Free-form description.

        Returns:
            The eval set, ready for ``Evaluator.evaluate(eval_set, metrics=[...])``.

        Raises:
            ConfigError: An argument of the wrong type (e.g. a case that is not an :class:`EvalCase`), an
                empty ``eval_set_id``, a case without an id, or case ids used more than once.

        Example:
            >>> es = EvalSet.of("weather", [EvalCase.of("sf", "Weather in SF?", expect="Sunny")])
            >>> es.eval_set_id, [case.eval_id for case in es.eval_cases]
            ('weather', ['sf'])
        """
        where = f"EvalSet.of({eval_set_id!r})"
        listed = list(cases) if isinstance(cases, Iterator) else cases
        check_arguments(
            where,
            eval_set_id=(eval_set_id, str),
            cases=(listed, list[EvalCase]),
            name=(name, str),
            description=(description, str),
        )
        if not eval_set_id:
            raise ConfigError("EvalSet.of: eval_set_id is empty; give the eval set an id")
        cases = list(listed)
        unnamed = [str(index) for index, case in enumerate(cases) if not case.eval_id]
        if unnamed:
            raise ConfigError(
                f"{where}: no eval_id on the case(s) at index {', '.join(unnamed)}; give every case an id"
            )
        repeated = [eval_id for eval_id, count in Counter(case.eval_id for case in cases).items() if count > 1]
        if repeated:
            raise ConfigError(
                f"{where}: more than one case has the id {' or '.join(map(repr, repeated))}; make case ids unique"
            )
        return cls(eval_set_id=eval_set_id, name=name, description=description, eval_cases=cases)

    def case(self, eval_id: str) -> EvalCase | None:
        """Return the first case with this id, or ``None``."""
        return next((c for c in self.eval_cases if c.eval_id == eval_id), None)

    def cases_by_id(self) -> dict[str, EvalCase]:
        """The cases by id (the first one for a repeated id, as :meth:`case` finds it), for many lookups."""
        found: dict[str, EvalCase] = {}
        for eval_case in self.eval_cases:
            found.setdefault(eval_case.eval_id, eval_case)
        return found


def _conversation(
    where: str, turns: Sequence[str | Invocation], expect: str | None, tools: Sequence[Tool]
) -> list[Invocation]:
    """The turns :meth:`EvalCase.of` was given, as invocations (see there for the rules)."""
    if not turns:
        raise ConfigError(f"{where}: no turns; give a user message, or one or more Invocation.of(...) turns")
    for index, turn in enumerate(turns):
        if not isinstance(turn, str | Invocation):
            raise ConfigError(
                f"{where}: turn {index} is a {type(turn).__name__}; give a user message (str) or Invocation.of(...)"
            )
    if len(turns) == 1 and isinstance(turns[0], str):
        return [Invocation.of(turns[0], expect, tools=tools)]
    if all(isinstance(turn, str) for turn in turns):
        raise ConfigError(
            f"{where}: {len(turns)} plain messages are ambiguous (is the second a reply, or another turn?); "
            "give one message with expect=..., or write each turn as Invocation.of(user, expect)"
        )
    if any(isinstance(turn, str) for turn in turns):
        raise ConfigError(
            f"{where}: a plain message among Invocation.of(...) turns is ambiguous; "
            "write every turn as Invocation.of(user, expect)"
        )
    if expect is not None or tools:
        raise ConfigError(
            f"{where}: expect= and tools= describe a single inline turn; with Invocation.of(...) turns, "
            "give each turn its own: Invocation.of(user, expect, tools=[...])"
        )
    return [turn for turn in turns if isinstance(turn, Invocation)]
