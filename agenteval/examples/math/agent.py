"""A small deterministic "agent" that answers arithmetic requests with a calculator tool.

It understands ``calc <operation> <a> <b>`` (add, subtract, multiply, divide) and follow-ups such
as ``now multiply it by 3`` that reuse the previous answer from the session history. It has no
``power`` operation, so the eval set's ``calc_power`` case fails, as a real agent's might.
"""

from __future__ import annotations

import re

from agenteval.runner.function import Turn

__all__ = ["calculator", "calculator_agent"]

_OPERATIONS = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b,
}
_REQUEST = re.compile(r"calc\s+(\w+)\s+(-?\d+(?:\.\d+)?)\s+(-?\d+(?:\.\d+)?)", re.IGNORECASE)
_FOLLOW_UP = re.compile(r"(\w+)\s+it\s+by\s+(-?\d+(?:\.\d+)?)", re.IGNORECASE)
_PREVIOUS = re.compile(r"calc result: (-?\d+(?:\.\d+)?)")


def _number(text: str) -> int | float:
    value = float(text)
    return int(value) if value.is_integer() else value


def calculator(operation: str, a: int | float, b: int | float) -> dict[str, object]:
    """The calculator tool: apply ``operation`` to ``a`` and ``b``."""
    if operation == "divide" and b == 0:
        return {"operation": operation, "a": a, "b": b, "error": "division by zero"}
    value = _OPERATIONS[operation](a, b)
    result = int(value) if isinstance(value, float) and value.is_integer() else value
    return {"operation": operation, "a": a, "b": b, "result": result}


def _previous_answer(turn: Turn) -> int | float | None:
    for message in reversed(turn.history):
        found = _PREVIOUS.search(message.content)
        if message.role == "assistant" and found:
            return _number(found.group(1))
    return None


def calculator_agent(message: str, turn: Turn) -> str:
    """Answer one user turn, calling the calculator tool through ``turn`` so the call is recorded."""
    tool = turn.tool(calculator)
    if request := _REQUEST.search(message):
        operation, a, b = request.group(1).lower(), _number(request.group(2)), _number(request.group(3))
    elif (follow_up := _FOLLOW_UP.search(message)) and (previous := _previous_answer(turn)) is not None:
        operation, a, b = follow_up.group(1).lower(), previous, _number(follow_up.group(2))
    else:
        return "Sorry, I can only do arithmetic: try 'calc add 2 3'."
    if operation not in _OPERATIONS:
        return f"Sorry, I cannot {operation}; I can add, subtract, multiply and divide."
    outcome = tool(operation=operation, a=a, b=b)
    if "error" in outcome:
        return f"calc error: {outcome['error']}"
    return f"calc result: {outcome['result']}"
