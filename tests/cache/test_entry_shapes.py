"""A cache entry of the wrong shape (another kind's, a damaged one) is a miss: the work runs again and replaces it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import agenteval as ae
from agenteval.cache.store import DATABASE_FILE

APP = "shapes-app"
N = 4
CASES = [ae.EvalCase.of(f"c{index}", f"word{index}", expect=f"WORD{index}") for index in range(N)]
WORDS = ae.EvalSet.of("words", CASES)
METRICS = [ae.EvalMetric.final_response()]


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, message: str) -> str:
        self.calls += 1
        return message.upper()


def evaluate(cache: Path, agent: Counting) -> ae.EvaluationReport:
    return ae.Evaluator(APP, agent, cache=cache, progress=False).evaluate(WORDS, metrics=METRICS)


def entries(cache: Path, kind: str) -> dict[str, str]:
    with sqlite3.connect(cache / DATABASE_FILE) as db:
        return dict(db.execute("SELECT key, value FROM entry_values WHERE kind = ?", (kind,)).fetchall())


def passed(report: ae.EvaluationReport) -> int:
    return int((report.cases["status"] == "passed").sum())


def test_a_score_entry_under_an_inference_key_runs_the_agent_again_and_is_replaced(tmp_path: Path) -> None:
    agent = Counting()
    evaluate(tmp_path, agent)
    inference_keys = list(entries(tmp_path, "inference"))
    score = next(iter(entries(tmp_path, "score").values()))
    with ae.Cache(tmp_path) as cache:
        for key in inference_keys:
            cache.put("inference", key, score)

    report = evaluate(tmp_path, agent)

    assert agent.calls == 2 * N
    assert passed(report) == N
    assert all(value != score for value in entries(tmp_path, "inference").values())
    evaluate(tmp_path, agent)
    assert agent.calls == 2 * N


def test_an_inference_entry_under_a_score_key_scores_again(tmp_path: Path) -> None:
    agent = Counting()
    evaluate(tmp_path, agent)
    inference = next(iter(entries(tmp_path, "inference").values()))
    with ae.Cache(tmp_path) as cache:
        for key in entries(tmp_path, "score"):
            cache.put("score", key, inference)

    report = evaluate(tmp_path, agent)

    assert agent.calls == N
    assert passed(report) == N
    assert report.provenance is not None and report.provenance.reused is not None
    assert report.provenance.reused.scores == []


@pytest.mark.parametrize(
    "value",
    [
        '{"sessionId": "s", "userId": "u", "inferences": [], "expectedInferences": [], "executionTraces": [], "x": 1}',
        '{"sessionId": "s"}',
        "[]",
        "not json",
    ],
    ids=["unknown-field", "missing-fields", "not-an-object", "not-json"],
)
def test_an_inference_entry_of_another_shape_is_a_miss(tmp_path: Path, value: str) -> None:
    agent = Counting()
    evaluate(tmp_path, agent)
    with ae.Cache(tmp_path) as cache:
        for key in entries(tmp_path, "inference"):
            cache.put("inference", key, value)

    report = evaluate(tmp_path, agent)

    assert agent.calls == 2 * N
    assert passed(report) == N
