"""What the agent did for one case in one run: the inference phase's result."""

from __future__ import annotations

from pydantic import Field

from agenteval._util.trpc_json import CamelModel, GoInt
from agenteval.evalset.models import EvalMode, Invocation
from agenteval.evalset.trace import ExecutionTrace
from agenteval.status import EvalStatus

__all__ = ["InferenceResult"]


class InferenceResult(CamelModel):
    """What the agent did for one case in one run."""

    app_name: str = ""
    eval_set_id: str = ""
    eval_case_id: str = ""
    run_id: GoInt = 0
    """The run (1-based) the case ran in."""
    eval_mode: EvalMode = EvalMode.DEFAULT
    inferences: list[Invocation] = Field(default_factory=list)
    """The actual turns; empty when the inference failed."""
    expected_inferences: list[Invocation] = Field(default_factory=list)
    """Expected turns produced by the expected runner, when enabled."""
    session_id: str = ""
    """The session the case ran in."""
    user_id: str = ""
    """The user the agent ran as."""
    status: EvalStatus | None = None
    """``passed`` when the inference succeeded, ``failed`` otherwise."""
    error_message: str = ""
    """Why the inference failed."""
    error_type: str = ""
    """What failed (an :class:`~agenteval.evalresult.models.ErrorType` value); empty when nothing did."""
    execution_traces: list[ExecutionTrace | None] = Field(default=[], exclude=True)
    """Execution trace per actual turn (``None`` where none was recorded); not serialised."""
