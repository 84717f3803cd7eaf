"""Evaluators by name."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Mapping, Sequence

from agenteval.errors import ConfigError, NotFoundError
from agenteval.evalset.models import Invocation
from agenteval.evaluators.base import EvaluateResult, EvaluatorFunction, MetricChecker, MetricEvaluator, check_threshold
from agenteval.metric.models import EvalMetric

__all__ = ["EvaluatorRegistry", "default_registry"]


class _FunctionEvaluator:
    """Adapts a plain function to :class:`MetricEvaluator`."""

    def __init__(self, function: EvaluatorFunction) -> None:
        self.function = function

    def evaluate(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> EvaluateResult | Awaitable[EvaluateResult]:
        return self.function(actuals, expecteds, metric)

    def cache_identity(self) -> object:
        """What decides the scores, for the cache's keys: the function (by its code)."""
        return {"function": self.function}

    def __repr__(self) -> str:
        return f"FunctionEvaluator({getattr(self.function, '__qualname__', self.function)!r})"


class EvaluatorRegistry:
    """Maps evaluator names to evaluators.

    A metric runs the evaluator named by its ``evaluatorName``, or by its ``metricName`` when that is
    empty. A metric whose evaluator is not registered is skipped (no result), as in the reference.

    Args:
        evaluators: Initial entries, name to evaluator object or plain function.
    """

    def __init__(self, evaluators: Mapping[str, MetricEvaluator | EvaluatorFunction] | None = None) -> None:
        self._lock = threading.Lock()
        self._evaluators: dict[str, MetricEvaluator] = {}
        for name, evaluator in (evaluators or {}).items():
            self.register(name, evaluator)

    def register(self, name: str, evaluator: MetricEvaluator | EvaluatorFunction) -> None:
        """Register (or replace) an evaluator under ``name``.

        Args:
            name: Evaluator name used by metrics.
            evaluator: An object with an ``evaluate(actuals, expecteds, metric)`` method, or a plain
                function with that signature; either may be ``async``.

        Raises:
            ConfigError: The name is empty or the evaluator is neither kind.
        """
        if not name:
            raise ConfigError("evaluator name is empty")
        if isinstance(evaluator, MetricEvaluator):
            adapted: MetricEvaluator = evaluator
        elif callable(evaluator):
            adapted = _FunctionEvaluator(evaluator)
        else:
            raise ConfigError(f"evaluator {name!r} must have an evaluate() method or be callable, got {evaluator!r}")
        with self._lock:
            self._evaluators[name] = adapted

    def get(self, name: str) -> MetricEvaluator:
        """Return the evaluator registered under ``name``.

        Raises:
            NotFoundError: Nothing is registered under that name.
        """
        with self._lock:
            evaluator = self._evaluators.get(name)
        if evaluator is None:
            raise NotFoundError(f"get evaluator {name}: not registered")
        return evaluator

    def check_metric(self, metric: EvalMetric) -> None:
        """Let the evaluator ``metric`` runs reject it before any case runs.

        When the evaluator declares a ``score_range`` (every built-in one does), the metric's
        threshold must lie in it (:func:`~agenteval.evaluators.base.check_threshold`); then the
        evaluator's ``check_metric`` runs (see :class:`~agenteval.evaluators.base.MetricChecker`).
        Nothing happens for an evaluator with neither, or when none is registered for the metric
        (it is skipped).

        Raises:
            ConfigError: The threshold is outside the evaluator's ``score_range``.
            Exception: Whatever the evaluator's check raised.
        """
        self.check_threshold(metric)
        with self._lock:
            evaluator = self._evaluators.get(metric.evaluator)
        if isinstance(evaluator, MetricChecker):
            evaluator.check_metric(metric)

    def check_threshold(self, metric: EvalMetric) -> None:
        """Refuse ``metric``'s threshold when it lies outside its evaluator's declared ``score_range``.

        Raises:
            ConfigError: It does (see :func:`~agenteval.evaluators.base.check_threshold`).
        """
        with self._lock:
            evaluator = self._evaluators.get(metric.evaluator)
        score_range = getattr(evaluator, "score_range", None)
        if score_range is not None:
            check_threshold(metric, score_range)

    def names(self) -> list[str]:
        """Return the registered names, sorted."""
        with self._lock:
            return sorted(self._evaluators)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._evaluators

    def __repr__(self) -> str:
        return f"EvaluatorRegistry({self.names()!r})"


def default_registry() -> EvaluatorRegistry:
    """Return a new registry holding a new instance of every built-in evaluator.

    Registries share no evaluator, so changing one (e.g. registering an operator on its
    ``llm_judge_template``) leaves every other registry as it was.
    """
    from agenteval.evaluators.builtin import builtin_evaluators

    return EvaluatorRegistry(builtin_evaluators())
