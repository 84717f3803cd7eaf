"""A case's own rubrics merged into the metrics it is scored with.

A case may add rubrics to an LLM-judge metric (``EvalCase.rubrics``); the metric it is scored with
is then a copy holding both the metric's and the case's rubrics.
"""

from __future__ import annotations

from collections.abc import Sequence

from agenteval.errors import ConfigError
from agenteval.evalset.models import EvalCase, EvalCaseRubric, RubricContent
from agenteval.metric.criterion import Rubric
from agenteval.metric.models import EvalMetric

__all__ = ["case_rubrics", "effective_metric", "effective_metrics"]


def case_rubrics(case: EvalCase, metrics: Sequence[EvalMetric]) -> dict[str, list[Rubric]]:
    """The case's rubrics by the name of the metric they extend.

    Raises:
        ConfigError: A rubric without a metric name or text, or naming a metric not in ``metrics``.
    """
    names = {m.metric_name for m in metrics if m.metric_name.strip()}
    by_metric: dict[str, list[Rubric]] = {}
    for index, rubric in enumerate(case.rubrics):
        where = f"case rubric {case.eval_id}[{index}]"
        if not rubric.metric_name.strip():
            raise ConfigError(f"{where}: metricName is empty")
        if rubric.content is None:
            raise ConfigError(f"{where}: content is nil")
        text = rubric.content.text.strip()
        if not text:
            raise ConfigError(f"{where}: content.text is empty")
        if rubric.metric_name not in names:
            raise ConfigError(f"{where}: metric {rubric.metric_name} not found")
        by_metric.setdefault(rubric.metric_name, []).append(_as_metric_rubric(rubric, index, text))
    return by_metric


def _as_metric_rubric(rubric: EvalCaseRubric, index: int, text: str) -> Rubric:
    return Rubric(
        id=rubric.id.strip() or f"case_rubric_{index + 1}",
        content=RubricContent(text=text),
        description=rubric.description,
        type=rubric.type.strip(),
    )


def effective_metric(case_id: str, metric: EvalMetric, case_rubrics: list[Rubric]) -> EvalMetric:
    """The metric with this case's rubrics appended (a copy); the metric itself when there are none.

    Raises:
        ConfigError: The metric has no LLM-judge criterion to hold them, or a rubric id repeats.
    """
    if not case_rubrics:
        return metric
    if metric.criterion is None or metric.criterion.llm_judge is None:
        raise ConfigError(
            f"case rubric {case_id}: metric {metric.metric_name} llmJudge criterion is required as rubric container"
        )
    effective = metric.model_copy(deep=True)
    judge = effective.criterion.llm_judge  # type: ignore[union-attr]
    assert judge is not None
    seen: set[str] = set()
    for rubric in judge.rubrics:
        rubric_id = rubric.id.strip()
        if rubric_id and rubric_id in seen:
            raise ConfigError(f"case rubric {case_id}: duplicate rubric id {rubric_id}")
        seen.add(rubric_id)
    for rubric in case_rubrics:
        if rubric.id in seen:
            raise ConfigError(f"case rubric {case_id}: duplicate rubric id {rubric.id}")
        seen.add(rubric.id)
        judge.rubrics.append(rubric)
    return effective


def effective_metrics(case: EvalCase, metrics: Sequence[EvalMetric], names: Sequence[str]) -> list[EvalMetric]:
    """The named metrics as a case is scored with them (its case-level rubrics merged), in ``names`` order.

    Names without a configured metric, or a case whose rubrics no longer fit the metrics, give
    the configured metrics as they are.
    """
    configured = {metric.metric_name: metric for metric in metrics}
    try:
        rubrics = case_rubrics(case, metrics)
        return [
            effective_metric(case.eval_id, configured[name], rubrics.get(name, []))
            for name in names
            if name in configured
        ]
    except ConfigError:
        return [configured[name] for name in names if name in configured]
