"""A report the size users hit: 20 cases × 3 metrics × 3 runs, with long replies, long tool arguments and errors.

The agent is deterministic (it depends on the message only), so every run gives the same results.
"""

from __future__ import annotations

from agenteval import (
    EvalCase,
    EvalMetric,
    EvalSet,
    EvaluationReport,
    Evaluator,
    Invocation,
    Message,
    SessionInput,
    Tool,
    Turn,
)
from agenteval.metric.criterion import (
    Criterion,
    FinalResponseCriterion,
    TextCriterion,
    TextMatchStrategy,
    ToolTrajectoryCriterion,
)

NUM_CASES = 20
NUM_RUNS = 3
LONG_NOTE = 'Please double-check the operands & keep "exact" integers <no rounding>. ' * 12
"""A free-text tool argument of about 900 characters (with markup-like characters)."""


def _case(number: int) -> EvalCase:
    a, b = number, number + 1
    arguments = {"operation": "add", "a": a, "b": b, "note": LONG_NOTE}
    return EvalCase(
        eval_id=f"case_{number:02d}",
        conversation=[
            Invocation(
                user_content=Message.user(f"calc add {a} {b}"),
                final_response=Message.assistant(f"calc result: {a + b}"),
                tools=[Tool(name="calculator", arguments=arguments, result={"result": a + b})],
            )
        ],
        session_input=SessionInput(user_id="user"),
    )


def _agent(message: str, turn: Turn) -> str:
    """Right for most cases; raises on every 7th, skips the tool on the 11th, errs on the 5th, rambles on the 3rd."""
    _, _, a_text, b_text = message.split()
    a, b = int(a_text), int(b_text)
    if a % 7 == 0:
        raise RuntimeError(f"the calculator service is down <{a}> & 'retries' exhausted: " + "timeout; " * 40)
    if a % 11 == 0:
        return f"calc result: {a + b}"
    note = LONG_NOTE if a % 3 else LONG_NOTE.upper()
    turn.record_tool("calculator", {"operation": "add", "a": a, "b": b, "note": note}, {"result": a + b})
    if a % 5 == 0:
        return f"calc result: {a + b + 1}"
    if a % 3 == 0:
        return f"calc result: {a + b}. " + "Here is a long explanation of how I added the numbers. " * 30
    return f"calc result: {a + b}"


def _metrics() -> list[EvalMetric]:
    def response(strategy: TextMatchStrategy) -> Criterion:
        return Criterion(final_response=FinalResponseCriterion(text=TextCriterion(match_strategy=strategy)))

    return [
        EvalMetric(
            metric_name="tool_trajectory_avg_score",
            threshold=1.0,
            criterion=Criterion(tool_trajectory=ToolTrajectoryCriterion()),
        ),
        EvalMetric(metric_name="final_response_avg_score", threshold=1.0, criterion=response(TextMatchStrategy.EXACT)),
        EvalMetric(
            metric_name="response_contains",
            evaluator_name="final_response_avg_score",
            threshold=1.0,
            criterion=response(TextMatchStrategy.CONTAINS),
        ),
    ]


def big_report() -> EvaluationReport:
    """20 cases × 3 metrics × 3 runs: some cases pass, some ramble, some raise, some skip the tool."""
    eval_set = EvalSet(eval_set_id="big", eval_cases=[_case(number) for number in range(1, NUM_CASES + 1)])
    return Evaluator("big-app", _agent, num_runs=NUM_RUNS).evaluate(eval_set, metrics=_metrics())
