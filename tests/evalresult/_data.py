"""Sample results shared by the eval-result store tests."""

from __future__ import annotations

from pathlib import Path

from agenteval.evalresult.models import (
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultDetails,
    EvalMetricResultPerInvocation,
    EvalSetResult,
)
from agenteval.evalresult.summary import EvalSetResultSummary
from agenteval.evalset.message import Message
from agenteval.evalset.models import Invocation, Tool
from agenteval.evalset.trace import ExecutionTrace, TraceStep, TraceTool
from agenteval.status import EvalStatus

__all__ = ["INTEROP_RESULTS", "UUID4", "make_result"]

UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"

INTEROP_RESULTS = sorted(
    (Path(__file__).resolve().parents[1] / "interop" / "trpc-examples").glob("*/output/*/*.evalset_result.json")
)


def make_result(eval_set_id: str = "set", **fields: object) -> EvalSetResult:
    """Return a result with one case, one turn with a tool call and a trace, and a summary."""
    actual = Invocation(
        invocation_id="inv-1",
        user_content=Message.user("1 + 2?"),
        final_response=Message.assistant("3"),
        tools=[Tool(id="call-1", name="add", arguments={"a": 1, "b": [2, {"c": None}]}, result={"sum": 3})],
        execution_trace=ExecutionTrace(
            root_agent_name="math",
            status="completed",
            steps=[TraceStep(step_id="s1", node_id="tools", tools=[TraceTool(name="add", arguments={"a": 1})])],
        ),
    )
    metric = EvalMetricResult(
        metric_name="tool_trajectory_avg_score",
        score=1.0,
        eval_status=EvalStatus.PASSED,
        threshold=0.5,
        details=EvalMetricResultDetails(reason="match", score=1.0),
    )
    case = EvalCaseResult(
        eval_set_id=eval_set_id,
        eval_id="case-1",
        run_id=1,
        score=1.0,
        final_eval_status=EvalStatus.PASSED,
        overall_eval_metric_results=[metric],
        eval_metric_result_per_invocation=[
            EvalMetricResultPerInvocation(actual_invocation=actual, eval_metric_results=[metric])
        ],
        session_id="session-1",
        user_id="user",
    )
    result = EvalSetResult(
        eval_set_id=eval_set_id,
        eval_case_results=[case],
        summary=EvalSetResultSummary(overall_status=EvalStatus.PASSED, num_runs=1),
    )
    for name, value in fields.items():
        setattr(result, name, value)
    return result
