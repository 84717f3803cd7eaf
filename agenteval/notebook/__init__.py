"""Jupyter helpers. The only package that imports ipywidgets or IPython.

Those imports happen inside functions, so importing this package never loads them.
"""

from __future__ import annotations

from agenteval.notebook._env import running_in_notebook
from agenteval.notebook.progress import (
    EvaluationProgress,
    RunRow,
    RunState,
    TextProgress,
    WidgetProgress,
    create_progress,
    former_name,
)

__all__ = [
    "EvaluationProgress",
    "RunRow",
    "RunState",
    "TextProgress",
    "WidgetProgress",
    "create_progress",
    "running_in_notebook",
]


def __getattr__(name: str) -> object:
    return former_name(__name__, name)
