"""``cache=``: an unchanged evaluation runs nothing again; a change runs exactly what it touches."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import agenteval as ae
from agenteval.evalset.models import RubricContent
from agenteval.llm.base import ChatRequest
from agenteval.metric.criterion import Criterion, LLMCriterion, Rubric
from agenteval.testing import FunctionChatModel

APP = "cache-app"
N = 4


class Calls:
    """Counts the agent's calls, per message."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def __len__(self) -> int:
        return len(self.messages)


AGENT_CALLS = Calls()


def agent(message: str) -> str:
    AGENT_CALLS.messages.append(message)
    if message == "fail":
        raise RuntimeError("model down")
    return message.upper()


JUDGED: list[str] = []


def judge_reply(request: ChatRequest) -> str:
    prompt = request.messages[-1].content
    rubric = "short" if "The reply is short." in prompt else "upper"
    JUDGED.append(rubric)
    return json.dumps({"rubricScores": [{"id": rubric, "score": 1, "reason": f"it is {rubric}"}]})


def eval_set(*, edited: str | None = None, failing: bool = False) -> ae.EvalSet:
    words = [f"word{index}" for index in range(N)]
    cases = [ae.EvalCase.of(f"c{index}", word, expect=word.upper()) for index, word in enumerate(words)]
    if edited is not None:
        cases[0] = ae.EvalCase.of("c0", edited, expect=edited.upper())
    if failing:
        cases.append(ae.EvalCase.of("broken", "fail", expect="FAIL"))
    return ae.EvalSet.of("words", cases)


def judged(name: str, rubric: str, text: str, threshold: float = 0.5) -> ae.EvalMetric:
    return ae.EvalMetric(
        metric_name=name,
        evaluator_name="llm_rubric_response",
        threshold=threshold,
        criterion=Criterion(llm_judge=LLMCriterion(rubrics=[Rubric(id=rubric, content=RubricContent(text=text))])),
    )


def metrics(*, threshold: float = 0.5, match: str = "exact", short: bool = False) -> list[ae.EvalMetric]:
    chosen = [ae.EvalMetric.final_response(match), judged("judged", "upper", "The reply is upper case.", threshold)]  # type: ignore[arg-type]
    if short:
        chosen.append(judged("judged_short", "short", "The reply is short."))
    return chosen


@pytest.fixture(autouse=True)
def fresh_counts() -> None:
    AGENT_CALLS.messages.clear()
    JUDGED.clear()


def evaluator(cache: Path, **options: object) -> ae.Evaluator:
    return ae.Evaluator(APP, agent, cache=cache, judge=FunctionChatModel(judge_reply), progress=False, **options)


def counted(ev: ae.Evaluator, eval_set: ae.EvalSet, **kwargs: object) -> tuple[ae.EvaluationReport, int, int]:
    """The report, and the agent and judge calls it took."""
    agent_before, judge_before = len(AGENT_CALLS), len(JUDGED)
    report = ev.evaluate(eval_set, **kwargs)  # type: ignore[arg-type]
    return report, len(AGENT_CALLS) - agent_before, len(JUDGED) - judge_before


def outcome(report: ae.EvaluationReport) -> pd.DataFrame:
    """What a re-run must reproduce: every (run, case, metric) status, score and reason, and the turns."""
    columns = ["run_id", "eval_id", "metric_name", "status", "score", "threshold", "reason"]
    return report.metrics[columns].merge(
        report.cases[["run_id", "eval_id", "status", "score"]], on=["run_id", "eval_id"]
    )


def test_an_unchanged_evaluation_calls_neither_the_agent_nor_the_judge_and_reports_the_same(tmp_path: Path) -> None:
    first, agent_calls, judge_calls = counted(evaluator(tmp_path), eval_set(), metrics=metrics())
    assert (agent_calls, judge_calls) == (N, N)
    assert not first.cases["cached_inference"].any()

    # A new Evaluator, as in a new kernel: the cache is on disk.
    second, agent_calls, judge_calls = counted(evaluator(tmp_path), eval_set(), metrics=metrics())

    assert (agent_calls, judge_calls) == (0, 0)
    pd.testing.assert_frame_equal(outcome(second), outcome(first))
    assert list(second.turns["actual_response"]) == list(first.turns["actual_response"])
    assert second.result.eval_set_result_id != first.result.eval_set_result_id
    assert second.cases["cached_inference"].all()
    assert list(second.cases["cached_scores"]) == [2] * N
    assert second.metrics["cached"].all()
    assert "4/4 inferences and 8/8 scores from the cache" in second.reuse_summary


def test_changing_one_metric_scores_that_metric_again_and_nothing_else(tmp_path: Path) -> None:
    counted(evaluator(tmp_path), eval_set(), metrics=metrics(short=True))
    assert sorted(set(JUDGED)) == ["short", "upper"]
    JUDGED.clear()

    _, agent_calls, judge_calls = counted(evaluator(tmp_path), eval_set(), metrics=metrics(threshold=0.9, short=True))
    assert (agent_calls, judge_calls) == (0, N)
    assert JUDGED == ["upper"] * N  # the other judge metric came from the cache

    report, agent_calls, judge_calls = counted(evaluator(tmp_path), eval_set(), metrics=metrics(match="contains"))
    assert (agent_calls, judge_calls) == (0, 0)
    cached = report.metrics.set_index("metric_name")["cached"]
    assert not cached["final_response_avg_score"].any()
    assert cached["judged"].all()


def test_editing_one_case_runs_only_that_case(tmp_path: Path) -> None:
    counted(evaluator(tmp_path), eval_set(), metrics=metrics())

    report, agent_calls, judge_calls = counted(evaluator(tmp_path), eval_set(edited="changed"), metrics=metrics())

    assert (agent_calls, judge_calls) == (1, 1)
    assert AGENT_CALLS.messages[-1] == "changed"
    assert list(report.cases["cached_inference"]) == [False, True, True, True]


def test_a_new_agent_version_or_more_runs_run_the_agent_again(tmp_path: Path) -> None:
    counted(evaluator(tmp_path), eval_set(), metrics=metrics())

    _, agent_calls, _ = counted(evaluator(tmp_path, agent_version="prompt v2"), eval_set(), metrics=metrics())
    assert agent_calls == N

    _, agent_calls, judge_calls = counted(evaluator(tmp_path), eval_set(), metrics=metrics(), num_runs=2)
    assert (agent_calls, judge_calls) == (N, N)  # run 1 is cached, run 2 is new


def test_failures_are_not_kept(tmp_path: Path) -> None:
    first, _, _ = counted(evaluator(tmp_path), eval_set(failing=True), metrics=metrics())
    assert first.cases.set_index("eval_id").loc["broken", "status"] == "failed"

    second, agent_calls, _ = counted(evaluator(tmp_path), eval_set(failing=True), metrics=metrics())

    assert agent_calls == 1
    assert AGENT_CALLS.messages[-1] == "fail"
    assert not second.cases.set_index("eval_id").loc["broken", "cached_inference"]


def test_without_the_option_nothing_is_cached_and_the_columns_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    ev = ae.Evaluator(APP, agent, judge=FunctionChatModel(judge_reply), progress=False)
    report = ev.evaluate(eval_set(), metrics=metrics())
    ev.evaluate(eval_set(), metrics=metrics())

    assert len(AGENT_CALLS) == 2 * N
    assert not (tmp_path / ".agenteval-cache").exists()
    assert not report.cases["cached_inference"].any()
    assert report.reuse_summary == ""


def test_cache_true_keeps_entries_in_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    ev = ae.Evaluator(APP, agent, cache=True, progress=False)
    ev.evaluate(eval_set(), metrics=[ae.EvalMetric.final_response()])

    stats = ae.Cache(tmp_path / ".agenteval-cache").stats()
    assert stats.entries == {"inference": N, "score": N}


@pytest.mark.parametrize("value", [3, "", ["dir"]])
def test_a_bad_cache_option_is_refused(value: object) -> None:
    with pytest.raises(ae.ConfigError, match="cache must be True, False, a directory or an ae.Cache"):
        ae.Evaluator(APP, agent, cache=value)


def test_the_summary_line_and_the_report_page_say_what_came_from_the_cache(tmp_path: Path) -> None:
    evaluator(tmp_path).evaluate(eval_set(), metrics=metrics())
    second = evaluator(tmp_path).evaluate(eval_set(), metrics=metrics())

    assert "4/4 inferences and 8/8 scores from the cache" in second._repr_html_()
    loaded = ae.EvaluationReport.from_result(second.result)
    assert loaded.reuse_summary == second.reuse_summary
    assert loaded.cases["cached_inference"].all()


def test_the_progress_line_at_the_end_says_what_came_from_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evaluator(tmp_path).evaluate(eval_set(), metrics=metrics())
    capsys.readouterr()

    evaluator(tmp_path).evaluate(eval_set(), metrics=metrics(), progress=True)

    captured = capsys.readouterr()
    assert "4/4 inferences and 8/8 scores from the cache" in captured.out + captured.err
