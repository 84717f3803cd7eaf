"""Run a bundled report again, offline, from its cassettes, and say case by case whether it comes out the same.

A bundle (:meth:`agenteval.EvaluationReport.bundle`) of an evaluation that recorded cassettes holds
every HTTP exchange of the agent, the judges and the simulated user. :func:`replay_bundle` evaluates
the bundled eval set again with the same metrics, runs and settings, answering every request from
those cassettes (``cassette_mode="replay"``: nothing reaches the network; a request that was not
recorded fails its case), and lines the new results up with the bundled ones.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from agenteval._util.sync_bridge import run_sync
from agenteval.analysis.bundle import extract_cassettes
from agenteval.analysis.report import EvaluationReport
from agenteval.cache.keys import code_hash
from agenteval.errors import ConfigError
from agenteval.evalresult.models import EvalCaseResult, EvalMetricResult
from agenteval.evaluation.evaluator import Evaluator
from agenteval.metric.criterion import JudgeModelOptions
from agenteval.metric.models import EvalMetric
from agenteval.runner.function import plain_agent

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CaseReplay", "ReplayOutcome", "areplay_bundle", "replay_bundle"]

_PLACEHOLDER_KEY = "replayed-offline"
"""The api key a judge gets when the bundle's metrics name none: cassettes answer, so no key is checked."""


@dataclass(frozen=True, slots=True)
class CaseReplay:
    """One case-run replayed: whether it matches the bundled result, and if not, how it differs."""

    run_id: int
    eval_id: str
    matches: bool
    differences: list[str] = field(default_factory=list)
    """What differs, in words (``final_response_avg_score: 1.00 → 0.00``, ``status: passed → failed``)."""


@dataclass(frozen=True, slots=True)
class ReplayOutcome:
    """What :func:`replay_bundle` found."""

    original: EvaluationReport
    """The bundled report."""
    replayed: EvaluationReport
    """The report of the replay."""
    cases: list[CaseReplay]
    """One entry per (run, case) of the bundled report, in its order."""
    same_agent_code: bool | None
    """Whether the agent's code hash equals the bundled one (``None``: the bundle records none)."""

    @property
    def matches(self) -> bool:
        """Whether every case-run came out as bundled."""
        return all(case.matches for case in self.cases)

    @property
    def table(self) -> pd.DataFrame:
        """One row per (run, case): ``run_id``, ``eval_id``, ``matches``, ``differences`` (joined by ``; ``)."""
        import pandas as pd

        return pd.DataFrame(
            [[case.run_id, case.eval_id, case.matches, "; ".join(case.differences)] for case in self.cases],
            columns=["run_id", "eval_id", "matches", "differences"],
        )


def replay_bundle(path: str | os.PathLike[str], agent: object | None = None, **options: Any) -> ReplayOutcome:
    """Evaluate a bundle's eval set again from its cassettes and compare with the bundled result.

    Args:
        path: The bundle.
        agent: The agent to run. Default: the one the bundle names, imported by its qualified name,
            when that works and its code hash is the recorded one (an agent defined in a notebook
            cannot be imported: pass it).
        **options: Other ``Evaluator`` options (``user_simulator=`` for scenario cases, ``judge=``,
            ``aggregator=`` for a report a custom aggregator decided, ``parallelism=`` …).

    Returns:
        The outcome; ``outcome.matches`` says whether everything came out the same.

    Raises:
        ConfigError: The bundle holds no cassettes or no eval set, or no agent was given and the
            bundled one cannot be imported.
    """
    return run_sync(areplay_bundle(path, agent, **options))


async def areplay_bundle(path: str | os.PathLike[str], agent: object | None = None, **options: Any) -> ReplayOutcome:
    """The async twin of :func:`replay_bundle`."""
    original = EvaluationReport.load(path)
    if original.eval_set is None:
        raise ConfigError(f"bundle {path} holds no eval set, so it cannot be replayed")
    provenance = original.provenance
    recorded_hash = provenance.agent_code_hash if provenance is not None else ""
    if agent is None:
        agent = _bundled_agent(provenance.agent if provenance is not None else "", recorded_hash, path)
    if not callable(agent) and not hasattr(agent, "run"):
        raise ConfigError(f"the agent to replay {path} with is a {type(agent).__name__}: give a function or a runner")
    settings: dict[str, Any] = {"num_runs": original.num_runs, "progress": False}
    if provenance is not None:
        settings.update(
            agent_version=provenance.agent_version,
            turn_timeout=provenance.turn_timeout,
            eval_case_ids=provenance.eval_case_ids,
        )
    settings.update(options)
    evaluated = {summary.eval_id for summary in original.case_summaries}
    eval_set = original.eval_set.model_copy(
        update={"eval_cases": [case for case in original.eval_set.eval_cases if case.eval_id in evaluated]}
    )
    with tempfile.TemporaryDirectory(prefix="agenteval-replay-") as folder:
        cassettes = extract_cassettes(path, Path(folder) / "cassettes")
        evaluator = Evaluator(
            original.app_name or "replay", agent, cassette=cassettes, cassette_mode="replay", **settings
        )
        replayed = await evaluator.aevaluate(eval_set, metrics=_keyed(original.eval_metrics))
    same_code = None if not recorded_hash else code_hash(plain_agent(agent)) == recorded_hash
    return ReplayOutcome(original, replayed, _lined_up(original, replayed), same_code)


def _bundled_agent(name: str, recorded_hash: str, path: object) -> object:
    """The agent a bundle names, imported (``module.function``), if its code is the recorded code."""
    advice = "pass the agent (agenteval replay BUNDLE --agent module:function)"
    if not name:
        raise ConfigError(f"bundle {path} records no agent; {advice}")
    found = _imported(name)
    if found is None:
        raise ConfigError(
            f"bundle {path} was made with agent {name!r}, which cannot be imported here (an agent defined in a"
            f" notebook cannot); {advice}"
        )
    if recorded_hash and code_hash(plain_agent(found)) != recorded_hash:
        raise ConfigError(
            f"the importable {name!r} is not the code bundle {path} was made with (its code hash differs); {advice}"
            " to replay with it anyway"
        )
    return found


def _imported(name: str) -> object | None:
    parts = name.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            found = getattr(found, attribute, None)
            if found is None:
                return None
        return found
    return None


def _keyed(metrics: Sequence[EvalMetric]) -> list[EvalMetric]:
    """The metrics with a placeholder key for each judge model that names none and finds none in the environment.

    A bundle's metrics hold no key (none is ever written); the cassettes answer the judges' requests,
    so any key does, but the judge's client needs one.
    """
    if os.environ.get("OPENAI_API_KEY"):
        return list(metrics)
    return [_with_placeholder_keys(metric) for metric in metrics]


def _with_placeholder_keys(model: Any) -> Any:
    if isinstance(model, JudgeModelOptions):
        return model if model.api_key else model.model_copy(update={"api_key": _PLACEHOLDER_KEY})
    if isinstance(model, BaseModel):
        changes = {
            name: replaced
            for name in type(model).model_fields
            if (replaced := _with_placeholder_keys(value := getattr(model, name))) is not value
        }
        return model.model_copy(update=changes) if changes else model
    if isinstance(model, list):
        items = [_with_placeholder_keys(item) for item in model]
        return items if any(new is not old for new, old in zip(items, model, strict=True)) else model
    return model


def _lined_up(original: EvaluationReport, replayed: EvaluationReport) -> list[CaseReplay]:
    again = {(case.run_id or 1, case.eval_id): case for case in replayed.result.eval_case_results}
    lined_up = []
    for case in original.result.eval_case_results:
        key = (case.run_id or 1, case.eval_id)
        differences = _differences(case, again.get(key))
        lined_up.append(CaseReplay(key[0], case.eval_id, not differences, differences))
    return lined_up


def _differences(before: EvalCaseResult, after: EvalCaseResult | None) -> list[str]:
    """What differs between a case-run and its replay: status, error, what the agent said and did, scores.

    Errors compare without the session id (each run has a new one); turns compare by reply text and
    tool calls (name, arguments and result).
    """
    if after is None:
        return ["not replayed"]
    found = []
    if after.final_eval_status != before.final_eval_status:
        found.append(f"status: {before.final_eval_status} → {after.final_eval_status}")
    old_error, new_error = _error(before), _error(after)
    if new_error != old_error:
        found.append(f"error: {new_error.splitlines()[0] if new_error else 'none (it had one)'}")
    found.extend(_turn_differences(before, after))
    old = {result.metric_name: result for result in before.overall_eval_metric_results}
    new = {result.metric_name: result for result in after.overall_eval_metric_results}
    for name in [*old, *(name for name in new if name not in old)]:
        found.extend(_metric_difference(name, old.get(name), new.get(name)))
    return found


def _error(case: EvalCaseResult) -> str:
    return case.short_error.replace(case.session_id, "<session>") if case.session_id else case.short_error


def _turn_differences(before: EvalCaseResult, after: EvalCaseResult) -> list[str]:
    old, new = _turns(before), _turns(after)
    if len(old) != len(new):
        return [f"turns: {len(old)} → {len(new)}"]
    found = []
    for number, (was, now) in enumerate(zip(old, new, strict=True), start=1):
        if was[0] != now[0]:
            found.append(f"turn {number} reply: {_clipped(was[0])!r} → {_clipped(now[0])!r}")
        if was[1] != now[1]:
            found.append(f"turn {number} tool calls differ: {_calls(was[1])} → {_calls(now[1])}")
    return found


def _turns(case: EvalCaseResult) -> list[tuple[str, list[tuple[str, Any, Any]]]]:
    """Each recorded turn's reply text and tool calls (name, arguments, result)."""
    turns = []
    for turn in case.eval_metric_result_per_invocation:
        actual = turn.actual_invocation
        if actual is None:
            continue
        reply = actual.final_response.content if actual.final_response is not None else ""
        turns.append((reply or "", [(tool.name, tool.arguments, tool.result) for tool in actual.tools]))
    return turns


def _calls(calls: list[tuple[str, Any, Any]]) -> str:
    return (
        ", ".join(_clipped(f"{name}({json.dumps(arguments, sort_keys=True)})") for name, arguments, _ in calls)
        or "none"
    )


def _clipped(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _metric_difference(name: str, before: EvalMetricResult | None, after: EvalMetricResult | None) -> list[str]:
    if before is None or after is None:
        return [f"{name}: {'only in the replay' if before is None else 'not scored in the replay'}"]
    if not _same(before.score, after.score) or before.eval_status != after.eval_status:
        return [f"{name}: {_score_text(before)} → {_score_text(after)}"]
    return []


def _score_text(result: EvalMetricResult) -> str:
    score = "-" if result.score is None else f"{result.score:.2f}"
    return f"{score} {result.eval_status}"


def _same(left: float | None, right: float | None) -> bool:
    if left is None or right is None:
        return left is right
    return math.isclose(left, right, rel_tol=1e-9, abs_tol=1e-12)
