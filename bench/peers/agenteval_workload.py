"""The peer workload in agenteval: cases, agent, metrics and stores.

N one-turn cases: the user says ``add i i``, the expected reply is ``result 2i`` and the expected
tool call ``calculator(a=i, b=i)``. The agent is a plain async function (no model): it sleeps a
fixed latency, records one tool call and replies. Two metrics, both with threshold 1:
``tool_trajectory_avg_score`` (name and arguments compared exactly, the tool result not compared)
and ``final_response_avg_score`` (exact text). ``pydantic_evals_workload.py`` is the same in
pydantic-evals.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Iterator

import agenteval as ae
from agenteval.evalset import EvalSetManager
from agenteval.runner.function import AgentFunction

APP_NAME = "calc_app"
EVAL_SET_ID = "add_bench"
USER_ID = "bench_user"


def metrics() -> list[ae.EvalMetric]:
    """The two metrics; ``tool_trajectory`` compares names and arguments exactly and ignores results by default."""
    return [ae.EvalMetric.tool_trajectory(), ae.EvalMetric.final_response("exact")]


def make_cases(n: int) -> Iterator[ae.EvalCase]:
    """The ``n`` cases, ``case-0`` … ``case-{n-1}``, made one at a time (a store then holds the only copies)."""
    return (
        ae.EvalCase(
            eval_id=f"case-{i}",
            conversation=[
                ae.Invocation(
                    invocation_id=f"expected-{i}",
                    user_content=ae.Message.user(f"add {i} {i}"),
                    final_response=ae.Message.assistant(f"result {2 * i}"),
                    tools=[ae.Tool(name="calculator", arguments={"a": i, "b": i}, result=2 * i)],
                )
            ],
            session_input=ae.SessionInput(app_name=APP_NAME, user_id=USER_ID),
        )
        for i in range(n)
    )


async def add_cases(store: EvalSetManager, cases: Iterable[ae.EvalCase]) -> float:
    """Create the benchmark's eval set in ``store`` and add ``cases`` one ``add_case`` call at a time.

    Returns:
        The seconds spent in the ``add_case`` calls (making the cases not counted).
    """
    await store.create(APP_NAME, EVAL_SET_ID)
    spent = 0.0
    for case in cases:
        started = time.perf_counter()
        await store.add_case(APP_NAME, EVAL_SET_ID, case)
        spent += time.perf_counter() - started
    return spent


async def metric_store() -> ae.InMemoryMetricManager:
    """An in-memory metric store holding :func:`metrics` for the benchmark's eval set."""
    store = ae.InMemoryMetricManager()
    for metric in metrics():
        await store.add(APP_NAME, EVAL_SET_ID, metric)
    return store


def make_agent(latency: float) -> AgentFunction:
    """The calculator agent, answering after ``latency`` seconds (0: at once)."""

    async def calculator_agent(message: str, turn: ae.Turn) -> str:
        _, a, b = message.split()
        x, y = int(a), int(b)
        if latency > 0:
            await asyncio.sleep(latency)
        turn.record_tool("calculator", {"a": x, "b": y}, x + y)
        return f"result {x + y}"

    return calculator_agent


async def warm_up() -> None:
    """Evaluate one case, untimed, so that lazy imports and first calls are not measured."""
    sets = ae.InMemoryEvalSetManager()
    await add_cases(sets, make_cases(1))
    evaluator = ae.Evaluator(
        APP_NAME, make_agent(0.0), eval_set_manager=sets, metric_manager=await metric_store(), progress=False
    )
    await evaluator.aevaluate(EVAL_SET_ID)


def case_passed(case: ae.EvalCaseResult) -> bool:
    """Whether the case passed with both metrics present and passed."""
    statuses = [metric.eval_status for metric in case.overall_eval_metric_results]
    return (
        case.final_eval_status is ae.EvalStatus.PASSED
        and len(statuses) == 2
        and all(status is ae.EvalStatus.PASSED for status in statuses)
    )
