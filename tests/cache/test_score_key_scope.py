"""A setting scores again only the metrics it can change: a judge, a ROUGE tokenizer, a named compare.

``judge=`` and the judge samples count only for the metrics judged by an LLM; a named compare or tokenizer only
for the metrics whose criterion names it. So changing a matcher never calls the paid judge again, and changing the
judge never scores the deterministic metrics again, with the cache and with ``resume=`` alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import agenteval as ae
from agenteval.evaluation._reuse import metric_definitions
from agenteval.evaluators.final_response_evaluator import FinalResponseEvaluator
from agenteval.metric.criterion import Criterion, FinalResponseCriterion
from agenteval.metric.registry import MetricRegistry
from agenteval.service.options import ServiceOptions
from agenteval.testing import ScriptedChatModel
from tests.cache._metrics import judged, scripted_judge

APP = "score-key-scope-app"
CASES = ae.EvalSet.of(
    "words", [ae.EvalCase.of(f"c{index}", f"The cat{index}", expect=f"the cat{index}") for index in range(2)]
)


class Words:
    """A ROUGE tokenizer: splits on spaces, lower-cased when ``lower``."""

    def __init__(self, lower: bool) -> None:
        self.lower = lower

    def tokenize(self, text: str) -> list[str]:
        return (text.lower() if self.lower else text).split()


class Loose:
    """A final-response compare: equal texts, ignoring case when ``ignore_case``."""

    def __init__(self, ignore_case: bool) -> None:
        self.ignore_case = ignore_case

    def __call__(self, actual: ae.Invocation, expected: ae.Invocation) -> bool:
        def text(turn: ae.Invocation) -> str:
            content = turn.final_response.content if turn.final_response is not None else ""
            return content.lower() if self.ignore_case else content

        return text(actual) == text(expected)


def compared() -> ae.EvalMetric:
    return ae.EvalMetric(
        metric_name="compared",
        evaluator_name="final_response_avg_score",
        threshold=1.0,
        criterion=Criterion(final_response=FinalResponseCriterion(compare_name="loose")),
    )


METRICS = [
    judged("the answer is about a cat"),
    ae.EvalMetric.rouge("rouge1", f1=0.9, tokenizer_name="words", name="rouge"),
    compared(),
]


def registry(*, lower: bool = True, ignore_case: bool = True) -> MetricRegistry:
    made = MetricRegistry()
    made.register_rouge_tokenizer("words", Words(lower))
    made.register_final_response_compare("loose", Loose(ignore_case))
    return made


def evaluate(cache: Path, scripted: ScriptedChatModel, **settings: Any) -> ae.EvaluationReport:
    evaluator = ae.Evaluator(
        APP, lambda message: message, cache=cache, progress=False, judge=scripted, metric_registry=registry(**settings)
    )
    return evaluator.evaluate(CASES, metrics=METRICS)


def scored_again(report: ae.EvaluationReport) -> set[str]:
    """The metrics of some case whose score did not come from the cache."""
    rows = report.metrics
    return set(rows.loc[~rows["cached"].astype(bool), "metric_name"])


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    first = evaluate(tmp_path, scripted_judge())
    assert sorted(first.metrics["metric_name"]) == sorted(2 * ["judged", "rouge", "compared"])
    assert set(first.metrics["status"]) == {ae.EvalStatus.PASSED}
    return tmp_path


def test_nothing_changed_scores_nothing_again(cache: Path) -> None:
    scripted = scripted_judge()

    assert scored_again(evaluate(cache, scripted)) == set()
    assert scripted.requests == []


def test_another_tokenizer_setting_scores_only_the_rouge_metric_again(cache: Path) -> None:
    scripted = scripted_judge()

    assert scored_again(evaluate(cache, scripted, lower=False)) == {"rouge"}
    assert scripted.requests == []


def test_another_named_compare_setting_scores_only_the_metric_that_names_it_again(cache: Path) -> None:
    scripted = scripted_judge()

    assert scored_again(evaluate(cache, scripted, ignore_case=False)) == {"compared"}
    assert scripted.requests == []


def test_another_judge_scores_only_the_judged_metric_again(cache: Path) -> None:
    scripted = scripted_judge(reason="another script")

    assert scored_again(evaluate(cache, scripted)) == {"judged"}
    assert len(scripted.requests) == len(CASES.eval_cases)


def test_another_judge_sample_count_scores_only_the_judged_metric_again(cache: Path) -> None:
    evaluator = ae.Evaluator(
        APP,
        lambda message: message,
        cache=cache,
        progress=False,
        judge=scripted_judge(),
        judge_num_samples=3,
        metric_registry=registry(),
    )

    assert scored_again(evaluator.evaluate(CASES, metrics=METRICS)) == {"judged"}


def test_a_registry_entry_no_metric_names_scores_nothing_again(cache: Path) -> None:
    extended = registry()
    extended.register_text_compare("unused", lambda actual, expected: actual == expected)
    evaluator = ae.Evaluator(
        APP, lambda message: message, cache=cache, progress=False, judge=scripted_judge(), metric_registry=extended
    )

    assert scored_again(evaluator.evaluate(CASES, metrics=METRICS)) == set()


class Subclassed(FinalResponseEvaluator):
    """A user's subclass of a built-in matcher: its code may do anything."""


@pytest.mark.parametrize(
    "user_evaluator", [lambda actuals, expecteds, metric: None, Subclassed()], ids=["function", "subclass"]
)
def test_an_evaluator_of_the_users_counts_every_setting(user_evaluator: Any) -> None:
    """Its code may look up any named compare or call the judge: whatever it reads is counted, never stale."""
    evaluators = ae.default_registry()
    evaluators.register("mine", user_evaluator)
    mine = ae.EvalMetric(metric_name="mine", evaluator_name="mine", threshold=0.5, criterion=compared().criterion)

    def definition(**options: Any) -> str:
        settings = ServiceOptions(registry=evaluators, **options)
        return metric_definitions(settings, [mine])["mine"]

    assert definition(judge=scripted_judge()) != definition(judge=scripted_judge(reason="another script"))
    assert definition(metric_registry=registry()) != definition(metric_registry=registry(lower=False))


# --- resume= ---------------------------------------------------------------------------------------------


def definitions(**options: Any) -> dict[str, str]:
    """The metrics' definition hashes a report's provenance records for ``resume=``."""
    settings = ServiceOptions(metric_registry=registry(**options.pop("settings", {})), **options)
    return metric_definitions(settings, METRICS)


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {name for name in before if before[name] != after[name]}


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, set()),
        ({"settings": {"lower": False}}, {"rouge"}),
        ({"settings": {"ignore_case": False}}, {"compared"}),
        ({"judge": scripted_judge(reason="another script")}, {"judged"}),
    ],
    ids=["unchanged", "tokenizer", "named compare", "judge"],
)
def test_resume_compares_the_same_per_metric_definitions(options: dict[str, Any], expected: set[str]) -> None:
    before = definitions(judge=scripted_judge())

    assert changed(before, definitions(**{"judge": scripted_judge(), **options})) == expected


def test_resume_takes_the_scores_a_changed_tokenizer_does_not_touch(tmp_path: Path) -> None:
    results = ae.InMemoryEvalResultManager()

    def evaluator(scripted: ScriptedChatModel, **settings: Any) -> ae.Evaluator:
        return ae.Evaluator(
            APP,
            lambda message: message,
            result_manager=results,
            progress=False,
            judge=scripted,
            metric_registry=registry(**settings),
        )

    first = evaluator(scripted_judge()).evaluate(CASES, metrics=METRICS)
    scripted = scripted_judge()

    resumed = evaluator(scripted, lower=False).evaluate(CASES, metrics=METRICS, resume=first)

    assert scored_again(resumed) == {"rouge"}
    assert scripted.requests == []
