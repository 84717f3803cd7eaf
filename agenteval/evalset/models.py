"""Eval sets: cases of multi-turn conversations with what the agent is expected to do."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field, field_validator

from agenteval._json import CamelModel, EpochTime, GoFloat, GoInt
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
    "RubricContent",
    "ScenarioDriver",
    "SessionInput",
    "Tool",
    "ToolMock",
]


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

    def case(self, eval_id: str) -> EvalCase | None:
        """Return the first case with this id, or ``None``."""
        return next((c for c in self.eval_cases if c.eval_id == eval_id), None)

    def cases_by_id(self) -> dict[str, EvalCase]:
        """The cases by id (the first one for a repeated id, as :meth:`case` finds it), for many lookups."""
        found: dict[str, EvalCase] = {}
        for eval_case in self.eval_cases:
            found.setdefault(eval_case.eval_id, eval_case)
        return found
