"""Callbacks in the cache's keys: what one puts in the context or changes in a result is never served stale.

Those that run before the agent (``before_inference_*``) count in the inference's key; those that can change
what is scored (``after_inference_case``, ``before_evaluate_*``) in the scores' keys; callbacks that only
watch (a counter, a log, agenteval's progress display) keep every entry.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import agenteval as ae
from agenteval.context import EvalContext
from agenteval.evalset.message import Message
from agenteval.evalset.models import Invocation
from agenteval.evaluators.base import EvaluateResult, PerInvocationResult
from agenteval.notebook import TextProgress
from agenteval.service.callbacks import AfterInferenceCaseArgs, Callback

APP = "callback-identity-app"
N = 3
CASES = [ae.EvalCase.of(f"c{index}", f"word{index}", expect=f"WORD{index}") for index in range(N)]
WORDS = ae.EvalSet.of("words", CASES)
FINAL = [ae.EvalMetric.final_response()]


class Agent:
    """Answers in upper case, after the context's ``prefix``; counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, message: str) -> str:
        self.calls += 1
        prefix: str = ae.current_context().get("prefix", "")
        return prefix + message.upper()


def evaluate(
    cache: Path, agent: Agent, callbacks: ae.Callbacks, metrics: Sequence[ae.EvalMetric] = FINAL, **options: Any
) -> ae.EvaluationReport:
    ev = ae.Evaluator(APP, agent, cache=cache, callbacks=callbacks, progress=False, **options)
    return ev.evaluate(WORDS, metrics=list(metrics))


def answers(report: ae.EvaluationReport) -> list[str]:
    return list(report.turns["actual_response"])


def cached_scores(report: ae.EvaluationReport) -> list[bool]:
    return list(report.metrics["cached"])


def prefixing(prefix: str) -> Callable[[EvalContext, object], EvalContext]:
    def add_prefix(context: EvalContext, args: object) -> EvalContext:
        return context.with_values(prefix=prefix)

    return add_prefix


@pytest.mark.parametrize("point", ["before_inference_set", "before_inference_case"])
def test_a_value_a_callback_puts_in_the_context_for_the_agent_runs_the_agent_again_when_it_changes(
    tmp_path: Path, point: str
) -> None:
    agent = Agent()
    for prefix in ("v1:", "v1:", "v2:"):
        report = evaluate(tmp_path, agent, ae.Callbacks().register("prefix", Callback(**{point: prefixing(prefix)})))

    assert answers(report) == [f"v2:WORD{index}" for index in range(N)]
    assert agent.calls == 2 * N


COUNTS = {"cases": 0}
SEEN: list[str] = []


def count_cases(context: EvalContext, args: Any) -> None:
    COUNTS["cases"] += 1
    SEEN.append(args.eval_case_id)


class Log:
    """A logging callback object: it keeps what it saw and how often it was called."""

    def __init__(self) -> None:
        self.calls = 0
        self.lines: list[str] = []

    def __call__(self, context: EvalContext, args: Any) -> None:
        self.calls += 1
        self.lines.append(f"{type(args).__name__} {args.run_id}")


def watching(log: Log) -> ae.Callbacks:
    every_point = {point: log for point in Callback.__dataclass_fields__}
    return (
        ae.Callbacks()
        .register("count", Callback(before_inference_case=count_cases))
        .register("log", Callback(**every_point))
    )


def test_callbacks_that_only_count_and_log_keep_every_entry(tmp_path: Path) -> None:
    agent, log = Agent(), Log()
    evaluate(tmp_path, agent, watching(log))

    report = evaluate(tmp_path, agent, watching(log))

    assert agent.calls == N
    assert all(cached_scores(report))
    assert log.calls > 0 and COUNTS["cases"] == 2 * N


def test_agentevals_progress_display_given_as_callbacks_keeps_every_entry(tmp_path: Path) -> None:
    agent = Agent()
    for _ in range(2):
        bar = TextProgress(io.StringIO(), min_interval=0, refresh=None)
        bar.start(title="words", num_runs=1, cases_per_run=N, metric_names=["final_response_avg_score"])
        report = evaluate(tmp_path, agent, bar.callbacks())

    assert agent.calls == N
    assert all(cached_scores(report))


def scored_from_context(
    actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: ae.EvalMetric
) -> EvaluateResult:
    value: float = ae.current_context()["score"]
    status = ae.EvalStatus.PASSED if value >= metric.threshold else ae.EvalStatus.FAILED
    return EvaluateResult(
        overall_score=value,
        overall_status=status,
        per_invocation_results=[PerInvocationResult(score=value, status=status) for _ in actuals],
    )


def scoring_with(score: float, point: str) -> ae.Callbacks:
    def set_score(context: EvalContext, args: object) -> EvalContext:
        return context.with_values(score=score)

    return ae.Callbacks().register("score", Callback(**{point: set_score}))


@pytest.mark.parametrize("point", ["before_evaluate_set", "before_evaluate_case"])
def test_a_value_a_callback_puts_in_the_context_for_a_metric_scores_again_when_it_changes(
    tmp_path: Path, point: str
) -> None:
    agent = Agent()
    registry = ae.default_registry()
    registry.register("from_context", scored_from_context)
    metric = [ae.EvalMetric(metric_name="from_context", threshold=0.5)]
    for score in (1.0, 1.0, 0.0):
        report = evaluate(tmp_path, agent, scoring_with(score, point), metric, registry=registry)

    assert list(report.metrics["score"]) == [0.0] * N
    assert agent.calls == N


def shouting(suffix: str) -> ae.Callbacks:
    def add_suffix(context: EvalContext, args: AfterInferenceCaseArgs) -> None:
        for turn in args.result.inferences:
            assert turn.final_response is not None
            turn.final_response = Message(role="assistant", content=turn.final_response.content + suffix)

    return ae.Callbacks().register_after_inference_case("shout", add_suffix)


def test_a_callback_that_changes_the_agents_answer_after_it_ran_scores_again_without_running_it(
    tmp_path: Path,
) -> None:
    agent = Agent()
    for suffix in ("", "", "!"):
        report = evaluate(tmp_path, agent, shouting(suffix))

    assert answers(report) == [f"WORD{index}!" for index in range(N)]
    assert list(report.metrics["status"]) == ["failed"] * N
    assert agent.calls == N


def test_a_callback_after_scoring_scores_nothing_again_when_it_changes(tmp_path: Path) -> None:
    agent = Agent()
    for tag in ("v1", "v2"):
        callbacks = ae.Callbacks().register_after_evaluate_case("tag", prefixing(tag))
        report = evaluate(tmp_path, agent, callbacks)

    assert agent.calls == N
    assert all(cached_scores(report))
