"""In a real Jupyter kernel, messages name the user's code by its cell (``In[4], line 2``), as IPython does."""

from __future__ import annotations

from typing import Any

from tests.notebook._kernel import cell_messages

SETUP = """
import time
import agenteval as ae
from agenteval._util import loop_watchdog as _loop_watchdog

_loop_watchdog.STALL_WARNING_AFTER = 0.5
eval_set = ae.EvalSet.of("s", [ae.EvalCase.of("slow", "hello", expect="hello")])
metrics = [ae.EvalMetric.final_response()]
"""

BLOCKING_AGENT = """async def agent(message):
    time.sleep(1.5)  # blocks the kernel's event loop
    return message
"""


def _run(client: Any, code: str) -> tuple[int, str]:
    """Execute ``code`` as a cell: its execution count and what it wrote to stdout and stderr."""
    sent = cell_messages(client, code)
    count = next(content["execution_count"] for kind, content in sent if kind == "execute_input")
    return count, "".join(content["text"] for kind, content in sent if kind == "stream")


def test_the_watchdog_names_the_cell_of_an_async_agent_blocking_the_loop(kernel: Any) -> None:
    _run(kernel, SETUP)
    cell, _ = _run(kernel, BLOCKING_AGENT)

    _, output = _run(kernel, "report = ae.Evaluator('app', agent, progress=False).evaluate(eval_set, metrics=metrics)")

    warning = next(line for line in output.splitlines() if "blocking it" in line)
    assert f", at In[{cell}], line 2 in agent. " in warning
    assert "ipykernel" not in warning and ".py:" not in warning


def test_an_agent_error_names_the_cell_that_raised_it(kernel: Any) -> None:
    _run(kernel, SETUP)
    cell, _ = _run(kernel, 'def failing_agent(message):\n    raise ValueError("no model")')

    _, output = _run(
        kernel,
        "report = ae.Evaluator('app', failing_agent, progress=False).evaluate(eval_set, metrics=metrics)\n"
        "print(report.result.eval_case_results[0].error_message)",
    )

    assert f"ValueError: no model (raised at In[{cell}], line 2 in failing_agent)" in output


def test_an_agent_whose_signature_cannot_take_a_turn_is_named_by_its_cell(kernel: Any) -> None:
    _run(kernel, SETUP)
    cell, _ = _run(kernel, "def three(a, b, c):\n    return a")

    _, output = _run(kernel, "try:\n    ae.Evaluator('app', three)\nexcept ae.ConfigError as exc:\n    print(exc)")

    assert output.startswith(f"the agent function three (In[{cell}], line 1) has the signature (a, b, c), ")
