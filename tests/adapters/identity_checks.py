"""Shared by the framework runners' identity tests: tools defined from source, cached evaluations counted."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import agenteval as ae
from agenteval.cache import describe_agent


def define_function(source: str, name: str) -> Any:
    """The function ``name`` defined by ``source`` (as a notebook cell defines it: edited, it is new code)."""
    namespace: dict[str, Any] = {"__name__": "user_tools"}
    exec(compile(textwrap.dedent(source), "<user tools>", "exec"), namespace)
    return namespace[name]


def identity(runner: object) -> str:
    """The runner's identity as the cache keys inferences by it; nothing about it is unseen."""
    described = describe_agent(runner)
    assert described.unseen == (), described.unseen
    return described.digest


def cached_inferences(cache: Path, runner: Any, eval_set: ae.EvalSet) -> list[bool]:
    """Evaluate with ``cache=``; whether each case-run's inference came from the cache."""
    report = ae.Evaluator("identity-app", runner, cache=cache, progress=False).evaluate(
        eval_set, metrics=[ae.EvalMetric.final_response(threshold=0.0)]
    )
    assert report.cases["status"].isin(["passed", "failed"]).all()
    assert report.cases["error_message"].fillna("").eq("").all(), list(report.cases["error_message"])
    return [bool(cached) for cached in report.cases["cached_inference"]]
