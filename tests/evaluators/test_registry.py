"""The evaluator registry."""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import pytest

from agenteval.errors import ConfigError, NotFoundError
from agenteval.evalset.models import Invocation
from agenteval.evaluators.base import EvaluateResult, MetricEvaluator, PerInvocationResult, average_of_turns
from agenteval.evaluators.builtin import builtin_evaluators
from agenteval.evaluators.final_response_evaluator import FinalResponseEvaluator
from agenteval.evaluators.registry import EvaluatorRegistry, default_registry
from agenteval.evaluators.tool_trajectory_evaluator import ToolTrajectoryEvaluator
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus

METRIC = EvalMetric(metric_name="custom", threshold=0.5)
TURNS = [Invocation(invocation_id="t1"), Invocation(invocation_id="t2")]


def _result(score: float) -> EvaluateResult:
    turns = [PerInvocationResult(score=score, status=EvalStatus.PASSED) for _ in TURNS]
    return average_of_turns(turns, METRIC.threshold)


class ConstantEvaluator:
    """Scores every turn the same."""

    def __init__(self, score: float) -> None:
        self.score = score

    def evaluate(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> EvaluateResult:
        return _result(self.score)


def plain_function(
    actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
) -> EvaluateResult:
    return _result(0.25)


async def async_function(
    actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
) -> EvaluateResult:
    return _result(0.75)


def test_register_object_is_used_as_is() -> None:
    evaluator = ConstantEvaluator(1.0)
    registry = EvaluatorRegistry()
    registry.register("const", evaluator)
    assert registry.get("const") is evaluator
    result = registry.get("const").evaluate(TURNS, TURNS, METRIC)
    assert isinstance(result, EvaluateResult)
    assert result.overall_score == 1.0


def test_register_plain_function() -> None:
    registry = EvaluatorRegistry({"plain": plain_function})
    evaluator = registry.get("plain")
    assert isinstance(evaluator, MetricEvaluator)
    result = evaluator.evaluate(TURNS, TURNS, METRIC)
    assert isinstance(result, EvaluateResult)
    assert result.overall_score == 0.25
    assert result.overall_status == EvalStatus.FAILED
    assert "plain_function" in repr(evaluator)


@pytest.mark.asyncio
async def test_register_async_function() -> None:
    registry = EvaluatorRegistry()
    registry.register("async", async_function)
    pending = registry.get("async").evaluate(TURNS, TURNS, METRIC)
    assert inspect.isawaitable(pending)
    result = await pending
    assert result.overall_score == 0.75
    assert result.overall_status == EvalStatus.PASSED


def test_register_replaces() -> None:
    registry = EvaluatorRegistry({"x": ConstantEvaluator(0.0)})
    replacement = ConstantEvaluator(1.0)
    registry.register("x", replacement)
    assert registry.get("x") is replacement
    assert registry.names() == ["x"]


def test_unknown_name() -> None:
    registry = EvaluatorRegistry()
    with pytest.raises(NotFoundError, match="get evaluator missing: not registered"):
        registry.get("missing")
    assert "missing" not in registry


@pytest.mark.parametrize(("name", "evaluator"), [("", plain_function), ("bad", 42)])
def test_register_rejects(name: str, evaluator: object) -> None:
    with pytest.raises(ConfigError):
        EvaluatorRegistry().register(name, evaluator)  # type: ignore[arg-type]


def test_default_registry() -> None:
    registry = default_registry()
    assert registry.names() == sorted(builtin_evaluators())
    assert len(registry.names()) == 10
    assert "tool_trajectory_avg_score" in registry
    assert isinstance(registry.get("tool_trajectory_avg_score"), ToolTrajectoryEvaluator)
    assert isinstance(registry.get("final_response_avg_score"), FinalResponseEvaluator)
    assert "final_response_avg_score" in repr(registry)


def test_default_registries_are_independent() -> None:
    first, second = default_registry(), default_registry()
    first.register("extra", plain_function)
    assert "extra" not in second


class CheckedEvaluator(ConstantEvaluator):
    """Rejects metrics whose threshold is above 1."""

    def __init__(self) -> None:
        super().__init__(1.0)
        self.checked: list[str] = []

    def check_metric(self, metric: EvalMetric) -> None:
        self.checked.append(metric.metric_name)
        if metric.threshold > 1:
            raise ConfigError(f"threshold {metric.threshold} can never be reached")


def test_check_metric_runs_the_hook_of_the_metrics_evaluator() -> None:
    checked = CheckedEvaluator()
    registry = EvaluatorRegistry({"checked": checked, "plain": ConstantEvaluator(1.0)})

    registry.check_metric(EvalMetric(metric_name="ok", evaluator_name="checked", threshold=1.0))
    with pytest.raises(ConfigError, match="threshold 2.0 can never be reached"):
        registry.check_metric(EvalMetric(metric_name="too_high", evaluator_name="checked", threshold=2.0))
    # No hook, no evaluator: nothing to check.
    registry.check_metric(EvalMetric(metric_name="plain", threshold=2.0))
    registry.check_metric(EvalMetric(metric_name="nobody", threshold=2.0))

    assert checked.checked == ["ok", "too_high"]


def test_every_builtin_evaluator_can_check_a_metric() -> None:
    assert all(callable(getattr(evaluator, "check_metric", None)) for evaluator in builtin_evaluators().values())
