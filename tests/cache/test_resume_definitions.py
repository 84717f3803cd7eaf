"""``resume=`` takes a finished score only when the metric is defined as it was: judge and evaluator code included."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

import agenteval as ae
from agenteval.evaluators.registry import EvaluatorRegistry
from tests.cache._metrics import judged, scoring, scripted_judge

APP = "resume-definitions-app"
N = 4
STOP_AT = 3
FINISHED = STOP_AT - 1
CASES = [ae.EvalCase.of(f"c{index}", f"word{index}", expect=f"WORD{index}") for index in range(N)]
WORDS = ae.EvalSet.of("words", CASES)


class Interrupting:
    """Answers in upper case and, once, is interrupted (Ctrl-C) at its ``STOP_AT``-th call."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, message: str) -> str:
        self.calls += 1
        if self.calls == STOP_AT:
            raise KeyboardInterrupt
        return message.upper()


def registered(value: float) -> EvaluatorRegistry:
    registry = ae.default_registry()
    registry.register("mine", scoring(value))
    return registry


def evaluator(agent: Callable[[str], str], results: ae.InMemoryEvalResultManager, **options: Any) -> ae.Evaluator:
    # One case at a time, each scored before the next: the interruption falls after exactly FINISHED cases.
    return ae.Evaluator(
        APP,
        agent,
        result_manager=results,
        parallel_inference=False,
        parallel_evaluation=False,
        progress=False,
        **options,
    )


def interrupted(metric: ae.EvalMetric, results: ae.InMemoryEvalResultManager, **options: Any) -> ae.EvaluationReport:
    with pytest.raises(KeyboardInterrupt) as raised:
        evaluator(Interrupting(), results, **options).evaluate(WORDS, metrics=[metric])
    partial: ae.EvaluationReport = raised.value.report  # type: ignore[attr-defined]
    assert len(partial.result.eval_case_results) == FINISHED
    return partial


def scores(report: ae.EvaluationReport) -> dict[str, float]:
    return dict(zip(report.metrics["eval_id"], report.metrics["score"], strict=True))


def reused_scores(report: ae.EvaluationReport) -> list[str]:
    reused = report.provenance.reused if report.provenance is not None else None
    return [case for _, case, _ in reused.scores] if reused is not None else []


def test_resuming_with_another_judge_scores_every_case_with_the_new_one() -> None:
    results = ae.InMemoryEvalResultManager()
    partial = interrupted(judged(), results, judge=scripted_judge(1))
    assert set(scores(partial).values()) == {1.0}
    new_judge = scripted_judge(0)

    report = evaluator(str.upper, results, judge=new_judge).evaluate(WORDS, metrics=[judged()], resume=partial)

    assert scores(report) == {f"c{index}": 0.0 for index in range(N)}
    assert len(new_judge.requests) == N
    assert reused_scores(report) == []


def test_resuming_with_a_re_registered_metric_function_scores_every_case_with_the_new_one() -> None:
    results = ae.InMemoryEvalResultManager()
    metric = ae.EvalMetric(metric_name="mine", threshold=0.5)
    partial = interrupted(metric, results, registry=registered(1.0))

    report = evaluator(str.upper, results, registry=registered(0.0)).evaluate(WORDS, metrics=[metric], resume=partial)

    assert scores(report) == {f"c{index}": 0.0 for index in range(N)}


def test_resuming_with_the_same_judge_takes_the_finished_scores() -> None:
    results = ae.InMemoryEvalResultManager()
    partial = interrupted(judged(), results, judge=scripted_judge(1))
    same_judge = scripted_judge(1)

    report = evaluator(str.upper, results, judge=same_judge).evaluate(WORDS, metrics=[judged()], resume=partial)

    assert scores(report) == {f"c{index}": 1.0 for index in range(N)}
    assert reused_scores(report) == [f"c{index}" for index in range(FINISHED)]
    assert len(same_judge.requests) == N - FINISHED


def test_a_report_that_records_no_definitions_resumes_on_the_metrics_configuration_and_says_so() -> None:
    results = ae.InMemoryEvalResultManager()
    partial = interrupted(judged(), results, judge=scripted_judge(1))
    assert partial.provenance is not None
    older = dataclasses.replace(partial, provenance=partial.provenance.model_copy(update={"metric_definitions": {}}))

    with pytest.warns(ae.errors.ResumeWarning, match="judge= and the evaluators' code are not compared"):
        report = evaluator(str.upper, results, judge=scripted_judge(1)).evaluate(
            WORDS, metrics=[judged()], resume=older
        )

    assert reused_scores(report) == [f"c{index}" for index in range(FINISHED)]
