"""What a cached inference or score depends on beyond the agent and the metric: nothing stale is ever served."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import agenteval as ae
from agenteval.evalset.models import ConversationScenario, EvalMode, Invocation
from agenteval.llm.openai import OpenAIChatModel
from agenteval.runner.llm_simulator import LLMUserSimulator
from agenteval.testing import FunctionChatModel, ScriptedChatModel
from tests.cache._metrics import judged, scoring, verdict

APP = "invalidation-app"
ONE = ae.EvalSet.of("one", [ae.EvalCase.of("c", "question", expect="QUESTION")])
FINAL = [ae.EvalMetric.final_response()]


def agent(message: str) -> str:
    return message.upper()


def evaluate(
    cache: Path, eval_set: ae.EvalSet = ONE, metrics: Sequence[ae.EvalMetric] = FINAL, **options: Any
) -> ae.EvaluationReport:
    return ae.Evaluator(APP, options.pop("agent", agent), cache=cache, progress=False, **options).evaluate(
        eval_set, metrics=list(metrics)
    )


def test_editing_a_registered_metric_function_scores_again(tmp_path: Path) -> None:
    scores = []
    for value in (1.0, 0.0):
        registry = ae.default_registry()
        registry.register("mine", scoring(value))
        report = evaluate(tmp_path, metrics=[ae.EvalMetric(metric_name="mine", threshold=0.5)], registry=registry)
        scores.append(report.metrics.loc[0, "score"])

    assert scores == [1.0, 0.0]


def test_another_expected_runner_runs_the_case_again(tmp_path: Path) -> None:
    case = ae.EvalCase.of("e", "hi").model_copy(update={"expected_runner_enabled": True})
    eval_set = ae.EvalSet.of("expected", [case])
    expected = []
    for runner in (str.upper, str.lower):
        report = evaluate(tmp_path, eval_set, expected_runner=runner)
        expected.append(report.turns.loc[0, "expected_response"])

    assert expected == ["HI", "hi"]


def test_other_user_simulator_settings_run_the_conversation_again(tmp_path: Path) -> None:
    case = ae.EvalCase(
        eval_id="talk", conversation_scenario=ConversationScenario(conversation_plan="chat", stop_signal="BYE")
    )
    eval_set = ae.EvalSet.of("talks", [case])
    turns = []
    for limit in (1, 3):
        simulator = LLMUserSimulator(FunctionChatModel(lambda request: "hello"), max_allowed_invocations=limit)
        report = evaluate(tmp_path, eval_set, [ae.EvalMetric.final_response(threshold=0.0)], user_simulator=simulator)
        turns.append(len(report.turns))

    assert turns == [1, 3]


@pytest.mark.parametrize(
    "judges",
    [
        (FunctionChatModel(lambda request: verdict(1)), FunctionChatModel(lambda request: verdict(0))),
        (ScriptedChatModel([verdict(1)]), ScriptedChatModel([verdict(0)])),
    ],
    ids=["function", "script"],
)
def test_another_judge_scores_again(tmp_path: Path, judges: tuple[Any, Any]) -> None:
    scores = [evaluate(tmp_path, metrics=[judged()], judge=judge).metrics.loc[0, "score"] for judge in judges]

    assert scores == [1.0, 0.0]


def test_the_same_scripted_judge_after_answering_still_hits(tmp_path: Path) -> None:
    judge = FunctionChatModel(lambda request: verdict(1))
    evaluate(tmp_path, metrics=[judged()], judge=judge)
    calls = len(judge.requests)

    report = evaluate(tmp_path, metrics=[judged()], judge=judge)

    assert len(judge.requests) == calls
    assert report.metrics["cached"].all()


def test_openai_judge_settings_count_and_its_key_does_not() -> None:
    from agenteval.cache.keys import settings_hash

    base = settings_hash(OpenAIChatModel("gpt-x", base_url="http://judge/v1", api_key="sk-one"))
    assert settings_hash(OpenAIChatModel("gpt-x", base_url="http://judge/v1", api_key="sk-two")) == base
    assert settings_hash(OpenAIChatModel("gpt-y", base_url="http://judge/v1", api_key="sk-one")) != base
    warmer = OpenAIChatModel("gpt-x", base_url="http://judge/v1", api_key="sk-one", extra_fields={"temperature": 1})
    assert settings_hash(warmer) != base


def test_an_unchanged_trace_mode_case_is_scored_from_the_cache(tmp_path: Path) -> None:
    case = ae.EvalCase.of("t", "hi", expect="HI").model_copy(
        update={"eval_mode": EvalMode.TRACE, "actual_conversation": [Invocation.of("hi", "HI")]}
    )
    judge = FunctionChatModel(lambda request: verdict(1))
    for _ in range(2):
        report = ae.Evaluator(APP, cache=tmp_path, judge=judge, progress=False).evaluate(
            ae.EvalSet.of("traces", [case]), metrics=[judged()]
        )

    assert len(judge.requests) == 1
    assert report.metrics["cached"].all()


def test_resume_scores_a_metric_changed_since_the_interruption_again() -> None:
    calls = {"n": 0}

    def interrupted_once(message: str) -> str:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return message.upper() + " etc"

    eval_set = ae.EvalSet.of("r", [ae.EvalCase.of(f"c{index}", f"q{index}", expect=f"Q{index}") for index in range(3)])
    ev = ae.Evaluator(APP, interrupted_once, parallel_inference=False, progress=False)
    with pytest.raises(KeyboardInterrupt) as raised:
        ev.evaluate(eval_set, metrics=[ae.EvalMetric.final_response("contains")])

    report = ev.evaluate(eval_set, metrics=[ae.EvalMetric.final_response("exact")], resume=raised.value.report)  # type: ignore[attr-defined]

    assert list(report.cases["status"]) == ["failed", "failed", "failed"]
    assert list(report.cases["cached_inference"]) == [True, False, False]
    assert list(report.cases["cached_scores"]) == [0, 0, 0]
    assert report.reuse_summary.endswith(f"from resume of {raised.value.report.result.eval_set_result_id}")  # type: ignore[attr-defined]


def test_cache_and_cassette_paths_expand_the_home_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)

    evaluate(Path("~/evals-cache"))

    assert (tmp_path / "evals-cache" / "cache.sqlite3").exists()
    assert not (tmp_path / "~").exists()


def test_a_cassette_mode_without_a_cassette_is_refused() -> None:
    with pytest.raises(ae.ConfigError, match="cassette_mode='replay' needs cassette="):
        ae.Evaluator(APP, agent, cassette_mode="replay")
