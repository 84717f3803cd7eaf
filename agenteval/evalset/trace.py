"""Execution traces recorded by an agent run (the reference's PascalCase JSON)."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_pascal

from agenteval._util.trpc_json import WireModel

__all__ = ["ExecutionTrace", "TraceSkill", "TraceSnapshot", "TraceStep", "TraceTool"]


class _PascalModel(WireModel):
    model_config = ConfigDict(alias_generator=to_pascal)


class TraceSnapshot(_PascalModel):
    """A text snapshot of a step's or run's input or output."""

    text: str = ""
    """The snapshot text (often JSON)."""


class TraceTool(_PascalModel):
    """One tool execution inside a trace step."""

    id: str = Field("", alias="ID")
    """Tool call id assigned by the model."""
    name: str = ""
    """Tool name."""
    arguments: Any = None
    """Arguments the tool ran with."""
    result: Any = None
    """What the tool returned."""
    error: str = ""
    """The tool's error, if it failed."""


class TraceSkill(_PascalModel):
    """A skill loaded inside a trace step."""

    name: str = ""
    """Skill name."""


class TraceStep(_PascalModel):
    """One executed node of an agent graph."""

    step_id: str = Field("", alias="StepID")
    """Step id, unique in the trace."""
    invocation_id: str = Field("", alias="InvocationID")
    """Invocation that ran the step."""
    parent_invocation_id: str = Field("", alias="ParentInvocationID")
    """Parent invocation, for nested agents."""
    agent_name: str = ""
    """Agent that ran the step."""
    branch: str = ""
    """Agent branch path."""
    node_id: str = Field("", alias="NodeID")
    """Graph node id; template judges select steps by it."""
    node_type: str = ""
    """``function``, ``llm``, ``tool`` or ``agent``."""
    started_at: str = ""
    """Start time, RFC 3339 with nanoseconds."""
    ended_at: str = ""
    """End time, RFC 3339 with nanoseconds."""
    predecessor_step_ids: list[str] | None = Field(None, alias="PredecessorStepIDs")
    """Steps that ran before this one."""
    applied_surface_ids: list[str] | None = Field(None, alias="AppliedSurfaceIDs")
    """Surfaces applied to the step."""
    input: TraceSnapshot | None = None
    """Step input."""
    output: TraceSnapshot | None = None
    """Step output."""
    usage: dict[str, Any] | None = None
    """Token usage."""
    tools: list[TraceTool] | None = None
    """Tool executions, in call order."""
    skills: list[TraceSkill] | None = None
    """Skills loaded, in load order."""
    error: str = ""
    """The step's error, if it failed."""


class ExecutionTrace(_PascalModel):
    """The execution trace of one agent run (one turn)."""

    root_agent_name: str = ""
    """Name of the root agent."""
    root_invocation_id: str = Field("", alias="RootInvocationID")
    """Invocation id of the run."""
    session_id: str = Field("", alias="SessionID")
    """Session the run belonged to."""
    started_at: str = ""
    """Start time, RFC 3339 with nanoseconds."""
    ended_at: str = ""
    """End time, RFC 3339 with nanoseconds."""
    status: str = ""
    """``completed``, ``incomplete`` or ``failed``."""
    input: TraceSnapshot | None = None
    """Run input."""
    output: TraceSnapshot | None = None
    """Run output."""
    usage: dict[str, Any] | None = None
    """Token usage."""
    steps: list[TraceStep] | None = None
    """Executed steps."""
