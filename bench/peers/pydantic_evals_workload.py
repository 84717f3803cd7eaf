# mypy: allow-subclassing-any
"""The peer workload in pydantic-evals: cases, task and evaluators (the twin of ``agenteval_workload.py``).

N cases: input ``add i i``. The task is a plain async function (no model) that sleeps a fixed
latency and returns the reply and the tool call it made. Two checks: the built-in
``EqualsExpected`` (the whole output: exact reply text and tool call) and ``ToolCallMatches``
(the tool call's name and arguments against the case metadata), the counterparts of agenteval's
final-response and tool-trajectory metrics.

pydantic-evals is installed only in the benchmark's own virtualenv (``run.sh`` makes it), so the
project's mypy, which runs without it, takes its names as ``Any``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

# No telemetry export: only the no-op ``logfire-api`` shim is installed and no OpenTelemetry
# provider is configured; these make sure nothing would be exported even if one were picked up.
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("LOGFIRE_SEND_TO_LOGFIRE", "false")

from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import (
    EqualsExpected,
    Evaluator,
    EvaluatorContext,
)

Output = dict[str, Any]
Metadata = dict[str, Any]


@dataclass
class ToolCallMatches(Evaluator[str, Output, Metadata]):
    """The tool call recorded in the task's output has the expected name and arguments."""

    def evaluate(self, ctx: EvaluatorContext[str, Output, Metadata]) -> bool:
        call = ctx.output.get("tool_call") if isinstance(ctx.output, dict) else None
        expected = ctx.metadata or {}
        return (
            call is not None
            and call.get("name") == expected.get("expected_tool")
            and call.get("args") == expected.get("expected_args")
        )


def make_dataset(n: int) -> Dataset[str, Output, Metadata]:
    """The ``n`` cases, ``case-0`` … ``case-{n-1}``, with both evaluators."""
    cases = [
        Case(
            name=f"case-{i}",
            inputs=f"add {i} {i}",
            # EqualsExpected compares the whole output, so the expected output has its shape.
            expected_output={"reply": f"result {2 * i}", "tool_call": {"name": "calculator", "args": {"a": i, "b": i}}},
            metadata={"expected_tool": "calculator", "expected_args": {"a": i, "b": i}},
        )
        for i in range(n)
    ]
    return Dataset(name="add-bench", cases=cases, evaluators=[EqualsExpected(), ToolCallMatches()])


def make_task(latency: float) -> Callable[[str], Awaitable[Output]]:
    """The calculator task, answering after ``latency`` seconds (0: at once)."""

    async def calculator_task(inputs: str) -> Output:
        _, a, b = inputs.split()
        x, y = int(a), int(b)
        if latency > 0:
            await asyncio.sleep(latency)
        return {"reply": f"result {x + y}", "tool_call": {"name": "calculator", "args": {"a": x, "b": y}}}

    return calculator_task


async def warm_up() -> None:
    """Evaluate one case, untimed, so that lazy imports and first calls are not measured."""
    await make_dataset(1).evaluate(make_task(0.0), max_concurrency=1, progress=False)


def case_passed(case: Any) -> bool:
    """Whether both checks of a ``ReportCase`` passed."""
    return len(case.assertions) == 2 and all(result.value is True for result in case.assertions.values())
