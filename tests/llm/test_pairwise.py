"""pairwise(): a verifier judges two reports case by case; best_of_n(): a tournament over a report's runs."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable

import pytest

import agenteval as ae
from agenteval.analysis._best_of_n import BEST_OF_N_COLUMNS
from agenteval.analysis.pairwise import PAIRWISE_COLUMNS, PairwiseComparison, pairwise
from agenteval.errors import ConfigError
from agenteval.llm.base import ChatRequest, ChatResponse
from agenteval.testing import FunctionChatModel, verifier_reply

METRICS = [ae.EvalMetric.final_response()]


def agent(wrong: Iterable[int]) -> Callable[[str], str]:
    bad = set(wrong)

    def answer(message: str) -> str:
        number = int(message.split()[1])
        return "no idea" if number in bad else str(number + 1)

    return answer


def evaluate(wrong: Iterable[int], cases: int = 6) -> ae.EvaluationReport:
    eval_set = ae.EvalSet.of(
        "set", [ae.EvalCase.of(f"case_{i}", f"add {i} 1", expect=str(i + 1)) for i in range(cases)]
    )
    return ae.Evaluator("app", agent(wrong), progress=False).evaluate(eval_set, metrics=METRICS)


def grade(request: str, answer: str) -> str:
    number = int(request.split()[1])
    return "A" if answer == str(number + 1) else "T"


def verifier(request: ChatRequest) -> ChatResponse:
    """Grades a right sum A and anything else T, reading the request and both candidates from the prompt."""
    prompt = request.messages[-1].content
    found = re.search(r"## User request\n\n(.*)\n\n## Candidate A\n\n(.*)\n\n## Candidate B\n\n(.*)\n", prompt)
    assert found is not None
    question, a, b = found.groups()
    return verifier_reply(grade(question, a), grade(question, b))


@pytest.fixture(scope="module")
def ab() -> PairwiseComparison:
    # Baseline fails cases 0-3, candidate fails 3 and 5: the candidate wins 0-2, loses 5, ties 3 and 4.
    return pairwise(evaluate({0, 1, 2, 3}), evaluate({3, 5}), judge=FunctionChatModel(verifier))


def test_each_paired_case_gets_the_verifiers_preference_for_the_candidate(ab: PairwiseComparison) -> None:
    table = ab.table

    assert list(table.columns) == list(PAIRWISE_COLUMNS)
    assert list(table["eval_id"]) == [f"case_{i}" for i in range(6)]
    assert list(table["winner"]) == ["candidate"] * 3 + ["tie", "tie", "baseline"]
    assert list(table["preference"]) == [1.0, 1.0, 1.0, 0.5, 0.5, 0.0]
    assert all("score_A" in reason for reason in table["reason"])


def test_the_win_rate_counts_ties_as_half_and_has_an_interval(ab: PairwiseComparison) -> None:
    summary = ab.summary

    assert (summary["wins"], summary["losses"], summary["ties"], summary["not_judged"]) == (3, 1, 2, 0)
    assert summary["win_rate"] == pytest.approx(4 / 6)
    assert 0 <= summary["ci_low"] <= 4 / 6 <= summary["ci_high"] <= 1
    assert summary["mean_preference"] == pytest.approx(4 / 6)


def test_the_html_holds_the_comparison_and_the_judges_section(ab: PairwiseComparison) -> None:
    page = ab._repr_html_()

    assert page.startswith(ab.comparison._repr_html_())
    assert "Judge A/B (llm_verifier_pairwise)" in page
    assert "3 won, 1 lost, 2 tied, 0 not judged" in page


def test_a_judge_failure_leaves_the_case_not_judged_with_why() -> None:
    def no_logprobs(request: ChatRequest) -> str:
        return "<score_A>A</score_A><score_B>T</score_B>"

    result = pairwise(evaluate(set(), cases=2), evaluate(set(), cases=2), judge=FunctionChatModel(no_logprobs))

    assert list(result.table["winner"]) == ["not judged", "not judged"]
    assert all("logprobs are missing" in reason for reason in result.table["reason"])
    assert math.isnan(result.win_rate)


def test_a_case_the_agent_failed_is_not_judged() -> None:
    def crashes_on_one(message: str) -> str:
        if message.startswith("add 1 "):
            raise RuntimeError("boom")
        return str(int(message.split()[1]) + 1)

    eval_set = ae.EvalSet.of("set", [ae.EvalCase.of(f"case_{i}", f"add {i} 1", expect=str(i + 1)) for i in range(2)])
    broken = ae.Evaluator("app", crashes_on_one, progress=False).evaluate(eval_set, metrics=METRICS)

    result = pairwise(evaluate(set(), cases=2), broken, judge=FunctionChatModel(verifier))

    assert list(result.table["winner"]) == ["tie", "not judged"]
    assert "the agent failed in the candidate" in result.table["reason"][1]


def test_empty_rubrics_are_refused() -> None:
    report = evaluate(set(), cases=1)

    with pytest.raises(ConfigError, match="rubric"):
        pairwise(report, report, judge=FunctionChatModel(verifier), rubrics={})


SCHEDULES = {0: "RWW", 1: "WRW", 2: "WWW", 3: "WRR"}
"""Per case, whether the agent answers right (R) or wrong (W) in runs 1, 2 and 3."""


@pytest.fixture(scope="module")
def three_runs() -> ae.EvaluationReport:
    calls: dict[str, int] = {}

    def flaky(message: str) -> str:
        run = calls.get(message, 0)
        calls[message] = run + 1
        number = int(message.split()[1])
        return str(number + 1) if SCHEDULES[number][run] == "R" else "no idea"

    eval_set = ae.EvalSet.of("set", [ae.EvalCase.of(f"case_{i}", f"add {i} 1", expect=str(i + 1)) for i in SCHEDULES])
    # One case at a time, so that each run of a case gets the answer its schedule gives that run.
    evaluator = ae.Evaluator("app", flaky, progress=False, num_runs=3, parallelism=1)
    return evaluator.evaluate(eval_set, metrics=METRICS)


def test_best_of_n_picks_the_run_the_verifier_prefers_in_a_round_robin(three_runs: ae.EvaluationReport) -> None:
    judge = FunctionChatModel(verifier)

    pick = three_runs.best_of_n(judge=judge)

    assert list(pick.table.columns) == list(BEST_OF_N_COLUMNS)
    assert list(pick.table["best_run"]) == [1, 2, 1, 2]
    assert list(pick.table["wins"]) == [2.0, 2.0, 1.0, 1.5]
    assert list(pick.table["best_passes"]) == [True, True, False, True]
    assert list(pick.table["run1_passes"]) == [True, False, False, False]
    assert pick.summary["best_pass_rate"] == 0.75
    assert pick.summary["run1_pass_rate"] == 0.25
    assert pick.summary["decided_by"] == "deterministic metrics ['final_response_avg_score']"
    assert len(judge.requests) == 4 * 3 * 2  # 3 pairs of runs per case, each judged in both orders


def test_best_of_n_needs_several_runs() -> None:
    with pytest.raises(ConfigError, match="num_runs"):
        evaluate(set(), cases=1).best_of_n(judge=FunctionChatModel(verifier))


def test_judge_failures_are_named_in_the_reason(three_runs: ae.EvaluationReport) -> None:
    pick = three_runs.best_of_n(judge=FunctionChatModel(lambda request: "no tags"))

    assert list(pick.table["best_run"]) == [1, 1, 1, 1]
    assert all("3 of 3 pairs not judged (not judged: " in reason for reason in pick.table["reason"])


def test_a_judge_that_favours_the_answer_shown_first_gives_ties_not_wins() -> None:
    report = evaluate(wrong=[1, 2])
    partial_to_a = FunctionChatModel(lambda request: verifier_reply("B", "C"))

    ab = pairwise(report, report, judge=partial_to_a)

    assert ab.summary["ties"] == ab.summary["wins"] + ab.summary["losses"] + ab.summary["ties"]
    assert ab.win_rate == 0.5
