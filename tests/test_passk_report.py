"""A report's pass@k and pass^k: per case by default, per eval set under explicit names."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

import pytest

import agenteval as ae
from agenteval.analysis._headline import pass_k_estimates, pass_k_text
from agenteval.errors import ConfigError


def cases() -> ae.EvalSet:
    return ae.EvalSet.of("set", [ae.EvalCase.of(name, f"echo {name}", expect=name) for name in "abcd"])


def wrong_once_each() -> Callable[[str], str]:
    """Case a answers wrong on its first call, b on its second, c on its third; d is always right.

    The runs are serial, so run 1 fails a, run 2 fails b and run 3 fails c: every run has a failed case.
    """
    calls: dict[str, int] = {}
    lock = threading.Lock()

    def answer(message: str) -> str:
        name = message.split()[1]
        with lock:
            calls[name] = calls.get(name, 0) + 1
            call = calls[name]
        return "wrong" if call == "abc".find(name) + 1 else name

    return answer


@pytest.fixture(scope="module")
def flaky() -> ae.EvaluationReport:
    evaluator = ae.Evaluator("app", wrong_once_each(), num_runs=3, progress=False)
    return evaluator.evaluate(cases(), metrics=[ae.EvalMetric.final_response()])


def test_the_headline_counts_cases_not_whole_runs(flaky: ae.EvaluationReport) -> None:
    # Every run has one failed case: as whole sets no run passed, yet each case passed most runs.
    assert (flaky.set_pass_at_k(1), flaky.set_pass_hat_k(3)) == (0.0, 0.0)
    # a, b, c passed 2 runs of 3, d all 3.
    assert flaky.pass_at_k(1) == pytest.approx((3 * 2 / 3 + 1) / 4)
    assert flaky.pass_at_k(2) == pytest.approx(1.0)
    # tau-bench's C(c, k) / C(n, k): two runs of a, b or c drawn both passed in 1 of 3 ways.
    assert flaky.pass_hat_k(2) == pytest.approx((3 * 1 / 3 + 1) / 4)
    assert flaky.pass_hat_k(3) == pytest.approx(1 / 4)


def test_k_beyond_the_runs_is_a_clear_error(flaky: ae.EvaluationReport) -> None:
    with pytest.raises(ConfigError, match=re.escape("k=4 exceeds the 3 runs that case 'a' passed or failed")):
        flaky.pass_at_k(4)
    with pytest.raises(ConfigError, match="k must be a whole number of runs of at least 1, got 0"):
        flaky.pass_hat_k(0)


def test_a_case_with_fewer_runs_bounds_k_and_names_itself() -> None:
    evaluator = ae.Evaluator("app", wrong_once_each(), num_runs=3, progress=False)
    report = evaluator.evaluate(cases(), metrics=[ae.EvalMetric.final_response()])
    result = report.result.model_copy(deep=True)
    result.eval_case_results = [
        case for case in result.eval_case_results if not (case.eval_id == "d" and case.run_id == 3)
    ]
    partial = ae.EvaluationReport.from_result(result)

    assert partial.pass_at_k(2) == pytest.approx(1.0)
    with pytest.raises(ConfigError, match=re.escape("k=3 exceeds the 2 runs that case 'd' passed or failed")):
        partial.pass_hat_k(3)
    assert pass_k_text(partial) == "pass@1 (per case) 0.75, pass^2 (per case) 0.50"


def test_a_result_without_summary_has_per_case_estimates_only(flaky: ae.EvaluationReport) -> None:
    bare = ae.EvaluationReport.from_result(flaky.result.model_copy(update={"summary": None}))

    assert bare.pass_at_k(1) == flaky.pass_at_k(1)
    with pytest.raises(ConfigError, match="summary is missing"):
        bare.set_pass_at_k(1)


def test_the_headline_says_what_it_counts(flaky: ae.EvaluationReport) -> None:
    estimates = pass_k_estimates(flaky)

    assert [(estimate.label, round(estimate.value, 4)) for estimate in estimates] == [
        ("pass@1 (per case)", 0.75),
        ("pass^3 (per case)", 0.25),
    ]
    assert "at least one" not in estimates[1].description and "every one of 3 runs" in estimates[1].description
    assert pass_k_text(flaky) == "pass@1 (per case) 0.75, pass^3 (per case) 0.25"


def test_one_run_has_no_headline() -> None:
    report = ae.Evaluator("app", lambda text: text.split()[1], progress=False).evaluate(
        cases(), metrics=[ae.EvalMetric.final_response()]
    )

    assert pass_k_estimates(report) == [] and pass_k_text(report) == ""
