"""The checks a metric gets before any case is scored: one loop, used by the service and the facade."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from agenteval._util.callable_names import did_you_mean
from agenteval.errors import AgentEvalError, ConfigError, SkippedMetricWarning, describe_exception, rewrap, warn_user
from agenteval.evaluators.registry import EvaluatorRegistry
from agenteval.llm.judge import use_judge
from agenteval.metric.models import EvalMetric
from agenteval.metric.registry import active_metric_registry, use_metric_registry
from agenteval.service.options import ServiceOptions

__all__ = ["check_metrics", "check_registered"]


def check_metrics(metrics: Sequence[EvalMetric | None], options: ServiceOptions, *, where: str = "") -> None:
    """Refuse a metric that cannot be scored, before any case is.

    The service checks what the reference does (``where`` names the request): no missing metric, and
    every ``compareName`` and ``tokenizerName`` registered. Without ``where`` (the
    :class:`~agenteval.Evaluator`, before the agent runs) a metric must also not share its name with
    another, and the metric's evaluator may reject it through its optional ``check_metric`` hook
    (:meth:`~agenteval.evaluators.registry.EvaluatorRegistry.check_metric`), run as scoring runs it:
    with the options' metric registry and judge override active. In the service, what a hook would
    reject fails the cases instead, as in the reference.

    Raises:
        ConfigError: ``resolve metric at index N (name): <what to fix>`` (the service's:
            ``resolve metric extensions (<where>): resolve metric at index N: ...``).
    """
    registry = options.metric_registry or active_metric_registry()
    judge = use_judge(options.judge_override) if options.judge_override is not None else contextlib.nullcontext()
    before_any_case = not where
    prefix = "" if before_any_case else f"resolve metric extensions ({where}): "
    first_of: dict[str, int] = {}
    with use_metric_registry(registry), judge:
        for index, metric in enumerate(metrics):
            at = f"{prefix}resolve metric at index {index}"
            if metric is None:
                raise ConfigError(f"{at}: eval metric is nil")
            if before_any_case:
                at = f"{at} ({metric.metric_name})"
                earlier = first_of.setdefault(metric.metric_name, index)
                if earlier != index:
                    # Results, tables and thresholds are keyed by metric name: the two would be mixed up.
                    raise ConfigError(
                        f"metrics at index {earlier} and {index} are both named {metric.metric_name!r}: give each"
                        " metric its own name (the constructors take name=, e.g."
                        " ae.EvalMetric.final_response('contains', name='reply_contains'))"
                    )
            try:
                registry.check(metric)
            except AgentEvalError as exc:
                raise rewrap(at, exc) from exc
            if before_any_case:
                try:
                    options.registry.check_metric(metric)
                except Exception as exc:
                    # Whatever a hook raises, the metric is what has to change.
                    raise ConfigError(f"{at}: {describe_exception(exc)}") from exc


def check_registered(metrics: Sequence[EvalMetric | None], registry: EvaluatorRegistry, *, strict: bool) -> None:
    """Say which metrics name an evaluator that is not registered: the reference skips them silently.

    Without ``strict`` each is skipped with a :class:`~agenteval.errors.SkippedMetricWarning`; with it
    (for CI, where a misspelt evaluator name would pass unnoticed) the first is an error.

    Raises:
        ConfigError: ``strict`` is set and a metric's evaluator is not registered (the message names the
            metric, the evaluator, the closest registered name and the fix).
    """
    registered = registry.names()
    for metric in metrics:
        if metric is None or metric.evaluator in registry:
            continue
        unknown = f"metric {metric.metric_name!r} names evaluator {metric.evaluator!r}, which is not registered"
        closest = did_you_mean(metric.evaluator, registered)
        fix = f"register one with registry.register({metric.evaluator!r}, ...) (registered: {', '.join(registered)})"
        if strict:
            raise ConfigError(f"{unknown}{closest}: strict=True refuses to skip it; correct its evaluatorName or {fix}")
        warn_user(f"{unknown}{closest}, so it is skipped; {fix}", SkippedMetricWarning)
