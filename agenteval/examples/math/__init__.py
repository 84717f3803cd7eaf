"""The math example: a deterministic calculator agent and its eval set."""

from pathlib import Path

from agenteval.examples.math.agent import calculator_agent

__all__ = ["APP_NAME", "DATA_DIR", "EVAL_SET_ID", "calculator_agent"]

DATA_DIR = Path(__file__).resolve().parent / "data"
"""Base directory of the example's eval sets and metrics (``<DATA_DIR>/<app>/<set>.evalset.json``)."""
APP_NAME = "math-eval-app"
EVAL_SET_ID = "math-basic"
