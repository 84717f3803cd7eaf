"""Ready aggregators that decide a case across its runs from the runs' own outcomes (like Inspect's epoch reducers)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import pytest

import agenteval as ae
from agenteval._util.callable_names import qualified_name
from agenteval._util.sync_bridge import run_sync
from agenteval.aggregation import (
    AggregationInput,
    AggregationResult,
    EvalCaseResultAggregator,
    at_least_k,
    max_of_runs,
    mean_of_runs,
    run_aggregator,
)
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalCaseResult
from tests.test_aggregation_across_runs import evaluate

PASSED = ae.EvalStatus.PASSED
FAILED = ae.EvalStatus.FAILED
NOT_EVALUATED = ae.EvalStatus.NOT_EVALUATED


def runs(*outcomes: tuple[ae.EvalStatus, float]) -> list[EvalCaseResult]:
    return [
        EvalCaseResult(eval_id="c", run_id=number, final_eval_status=status, score=score)
        for number, (status, score) in enumerate(outcomes, start=1)
    ]


def decide(aggregator: EvalCaseResultAggregator, *outcomes: tuple[ae.EvalStatus, float]) -> AggregationResult:
    data = AggregationInput(
        app_name="app",
        eval_set_id="set",
        eval_case=ae.EvalCase(eval_id="c"),
        inference_result=InferenceResult(eval_case_id="c"),
        eval_metrics=[],
        metric_results=[],
        runs=runs(*outcomes),
    )
    return run_sync(run_aggregator(aggregator, data))


PASS, FAIL, SKIPPED = (PASSED, 1.0), (FAILED, 0.0), (NOT_EVALUATED, 0.0)


@pytest.mark.parametrize(
    ("aggregator", "outcomes", "expected"),
    [
        (at_least_k(2), [PASS, FAIL, PASS], (1.0, PASSED)),
        (at_least_k(2), [PASS, FAIL, FAIL], (0.0, FAILED)),
        (at_least_k(1), [FAIL, FAIL, PASS], (1.0, PASSED)),
        (at_least_k(1), [SKIPPED, SKIPPED], (0.0, NOT_EVALUATED)),
        (mean_of_runs(0.5), [PASS, FAIL, PASS], (2 / 3, PASSED)),
        (mean_of_runs(0.5), [PASS, FAIL, FAIL], (1 / 3, FAILED)),
        (mean_of_runs(1.0), [PASS, PASS, SKIPPED], (1.0, PASSED)),  # a run not evaluated is left out
        (mean_of_runs(0.5), [(PASSED, 0.8), (FAILED, 0.4)], (0.6, PASSED)),
        (mean_of_runs(0.5), [SKIPPED], (0.0, NOT_EVALUATED)),
        (max_of_runs(), [FAIL, PASS, FAIL], (1.0, PASSED)),
        (max_of_runs(), [FAIL, FAIL], (0.0, FAILED)),
        (max_of_runs(), [(FAILED, 0.9), (PASSED, 0.6), (PASSED, 0.7)], (0.7, PASSED)),  # a pass beats a higher fail
        (max_of_runs(), [SKIPPED, FAIL], (0.0, FAILED)),
        (max_of_runs(), [SKIPPED], (0.0, NOT_EVALUATED)),
    ],
)
def test_a_reducer_decides_a_case_from_its_runs(
    aggregator: EvalCaseResultAggregator,
    outcomes: list[tuple[ae.EvalStatus, float]],
    expected: tuple[float, ae.EvalStatus],
) -> None:
    decided = decide(aggregator, *outcomes)

    assert decided.score == pytest.approx(expected[0])
    assert decided.status == expected[1]


@pytest.mark.parametrize("aggregator", [at_least_k(2), mean_of_runs(0.5), max_of_runs()], ids=qualified_name)
def test_each_run_is_decided_as_the_all_pass_aggregator_decides_it(aggregator: EvalCaseResultAggregator) -> None:
    replies = itertools.cycle(["hello", "wrong", "wrong"])

    def agent(text: str) -> str:
        return next(replies) if text == "hi" else text.removeprefix("say ")

    report = evaluate(agent, aggregator=aggregator)
    default = report.reaggregate(ae.AllPassAggregator())

    assert report.cases[["run_id", "eval_id", "status", "score"]].equals(
        default.cases[["run_id", "eval_id", "status", "score"]]
    )
    assert list(report.cases["status"]) == ["passed", "passed", "failed", "passed", "failed", "passed"]


def test_the_reducers_decide_a_flaky_case_across_runs() -> None:
    replies = itertools.cycle(["hello", "wrong", "wrong"])
    report = evaluate(lambda text: next(replies) if text == "hi" else text.removeprefix("say "))
    # Case a passed run 1 of 3, case b every run; the default aggregator fails a (its averaged metric is 1/3).
    assert list(report.case_table["status"]) == ["failed", "passed"]

    def verdicts(aggregator: EvalCaseResultAggregator) -> list[tuple[str, float]]:
        table = report.reaggregate(aggregator).case_table
        return list(zip(table["status"], table["score"].round(3), strict=True))

    assert verdicts(at_least_k(1)) == [("passed", 1.0), ("passed", 1.0)]
    assert verdicts(at_least_k(2)) == [("failed", 0.0), ("passed", 1.0)]
    assert verdicts(mean_of_runs(0.3)) == [("passed", 0.333), ("passed", 1.0)]
    assert verdicts(mean_of_runs(0.5)) == [("failed", 0.333), ("passed", 1.0)]
    assert verdicts(max_of_runs()) == [("passed", 1.0), ("passed", 1.0)]
    decided = report.reaggregate(at_least_k(1))
    assert decided.provenance is not None and decided.provenance.aggregator == "agenteval.aggregation.at_least_k(1)"


def test_the_reducers_are_on_a_zero_to_one_scale_and_named_as_written() -> None:
    for aggregator, name in [(at_least_k(2), "at_least_k(2)"), (mean_of_runs(0.75), "mean_of_runs(0.75)")]:
        assert aggregator.score_range == (0.0, 1.0)
        assert qualified_name(aggregator) == f"agenteval.aggregation.{name}"
        assert repr(aggregator) == name
    assert repr(max_of_runs()) == "max_of_runs()"


BAD_K = "at_least_k(k): k must be a whole number of runs of at least 1, got "
BAD_THRESHOLD = "mean_of_runs(threshold): the threshold must be a number from 0 to 1, got "


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: at_least_k(0), BAD_K + "0"),
        (lambda: at_least_k(1.5), BAD_K + "1.5"),  # type: ignore[arg-type]
        (lambda: at_least_k(True), BAD_K + "True"),
        (lambda: mean_of_runs(math.nan), BAD_THRESHOLD + "nan"),
        (lambda: mean_of_runs(1.5), BAD_THRESHOLD + "1.5"),
    ],
    ids=["k=0", "k=1.5", "k=True", "nan", "above 1"],
)
def test_bad_reducer_settings_are_config_errors(make: Callable[[], object], message: str) -> None:
    with pytest.raises(ae.ConfigError) as caught:
        make()
    assert str(caught.value) == message


def test_a_reducer_with_one_run_decides_that_run() -> None:
    report = evaluate(lambda text: "wrong", num_runs=1, aggregator=at_least_k(2))

    assert list(report.case_table["status"]) == ["failed", "failed"]
    assert report.case_table["final_response_avg_score"].tolist() == [0.0, 0.0]


def test_at_least_k_beyond_the_runs_of_a_case_is_an_aggregator_error_saying_so() -> None:
    report = ae.Evaluator("app", lambda message: message, num_runs=3, progress=False).evaluate(
        ae.EvalSet.of("s", [ae.EvalCase.of("c", "hi", expect="hi")]), metrics=[ae.EvalMetric.final_response()]
    )

    strict = report.reaggregate(ae.aggregation.at_least_k(4))

    row = strict.case_table.iloc[0]
    assert (row["status"], row["error_type"]) == ("failed", "aggregator")
    assert (
        "at_least_k(4) needs at least 4 runs of a case, and this case has 3: evaluate with num_runs=4"
        in (row["error_message"])
    )


@pytest.mark.parametrize("k", [2.5, True, "2"])
def test_pass_at_k_takes_a_whole_number_of_runs(k: object) -> None:
    report = ae.Evaluator("app", lambda message: message, num_runs=3, progress=False).evaluate(
        ae.EvalSet.of("s", [ae.EvalCase.of("c", "hi", expect="hi")]), metrics=[ae.EvalMetric.final_response()]
    )
    for estimate in (report.pass_at_k, report.pass_hat_k):
        with pytest.raises(ae.ConfigError, match="k must be a whole number of runs of at least 1"):
            estimate(k)  # type: ignore[arg-type]
