"""A ``${VAR}`` reference is not a secret: every store and every result keeps it; a literal key never is written.

The MySQL store's twin of these tests is tests/mysql/test_secret_references.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agenteval as ae
from agenteval.metric.criterion import JudgeModelOptions
from agenteval.metric.memory import InMemoryMetricManager
from agenteval.testing import ScriptedChatModel

pytestmark = pytest.mark.filterwarnings(
    r"ignore:.*judgeModel\.token have no effect:agenteval.errors.UnknownFieldWarning"
)

KEY = "sk-literal-judge-key-0123456789"
REFERENCED = "sk-from-the-environment-0123456789"

JUDGE = {
    "providerName": "openai",
    "modelName": "gpt-judge",
    "baseURL": "${JUDGE_MODEL_BASE_URL}",
    "apiKey": "${JUDGE_MODEL_API_KEY}",
    "extraFields": {"api_key": "${EXTRA_API_KEY}", "headers": {"Authorization": "Bearer ${JUDGE_TOKEN}"}},
    "token": "$JUDGE_TOKEN",
}
"""A judgeModel whose every secret is a reference: each must be written back exactly so."""


def set_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give every variable :data:`JUDGE` references a value."""
    monkeypatch.setenv("JUDGE_MODEL_API_KEY", REFERENCED)
    monkeypatch.setenv("JUDGE_MODEL_BASE_URL", "https://judge.internal.example/v1")
    monkeypatch.setenv("EXTRA_API_KEY", "sk-extra-from-the-environment")
    monkeypatch.setenv("JUDGE_TOKEN", "token-from-the-environment")


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch) -> None:
    set_environment(monkeypatch)


def judged(**judge: Any) -> dict[str, Any]:
    return {
        "metricName": "judged",
        "evaluatorName": "llm_final_response",
        "threshold": 0.5,
        "criterion": {"llmJudge": {"judgeModel": {**JUDGE, **judge}}},
    }


def judge_options(metric: ae.EvalMetric) -> JudgeModelOptions:
    assert metric.criterion is not None and metric.criterion.llm_judge is not None
    options = metric.criterion.llm_judge.judge_model
    assert options is not None
    return options


def written_judge(data: Any) -> Any:
    return data["criterion"]["llmJudge"]["judgeModel"]


def assert_no_expanded_value(text: str) -> None:
    for value in (REFERENCED, "judge.internal.example", "sk-extra-from-the-environment", "token-from-the-environment"):
        assert value not in text


@pytest.mark.asyncio
@pytest.mark.parametrize("edit", ["add", "update", "delete"])
async def test_editing_a_metrics_file_keeps_its_api_key_reference(tmp_path: Path, edit: str) -> None:
    path = tmp_path / "app" / "set.metrics.json"
    path.parent.mkdir()
    other = ae.EvalMetric.final_response("contains")
    path.write_text(json.dumps([judged(), other.to_dict()]), encoding="utf-8")
    manager = ae.LocalMetricManager(tmp_path)

    if edit == "add":
        await manager.add("app", "set", ae.EvalMetric.final_response("exact", name="exact"))
    elif edit == "update":
        await manager.update("app", "set", await manager.get("app", "set", "judged"))
    else:
        await manager.delete("app", "set", other.metric_name)

    text = path.read_text(encoding="utf-8")
    assert written_judge(json.loads(text)[0]) == JUDGE
    assert_no_expanded_value(text)
    loaded = judge_options(await manager.get("app", "set", "judged"))
    assert (loaded.api_key, loaded.base_url) == (REFERENCED, "https://judge.internal.example/v1")


@pytest.mark.asyncio
async def test_the_in_memory_store_keeps_references_and_the_keys_they_expand_to() -> None:
    manager = InMemoryMetricManager()
    await manager.add("app", "set", ae.EvalMetric.model_validate(judged()))

    stored = await manager.get("app", "set", "judged")

    assert written_judge(stored.to_dict()) == JUDGE
    assert judge_options(stored).api_key == REFERENCED
    assert judge_options(stored).request_extra_fields() == {
        "api_key": "sk-extra-from-the-environment",
        "headers": {"Authorization": "Bearer token-from-the-environment"},
    }


@pytest.mark.asyncio
async def test_a_literal_api_key_is_never_written_by_a_store(tmp_path: Path) -> None:
    manager = ae.LocalMetricManager(tmp_path)
    metric = ae.EvalMetric.model_validate(judged(apiKey=KEY))
    assert judge_options(metric).api_key == KEY

    await manager.add("app", "set", metric)

    text = (tmp_path / "app" / "set.metrics.json").read_text(encoding="utf-8")
    assert KEY not in text
    assert "apiKey" not in text
    assert judge_options(metric).api_key == KEY  # still there to be used


@pytest.mark.asyncio
async def test_a_changed_api_key_is_not_written_as_the_reference_it_no_longer_holds() -> None:
    metric = ae.EvalMetric.model_validate(judged())
    judge_options(metric).api_key = KEY

    written = written_judge(metric.to_dict())

    assert "apiKey" not in written
    assert KEY not in json.dumps(written)


def test_a_partly_literal_api_key_is_never_written() -> None:
    metric = ae.EvalMetric.model_validate(judged(apiKey="sk-abc${JUDGE_MODEL_API_KEY}"))

    assert "apiKey" not in written_judge(metric.to_dict())


def test_a_results_provenance_and_criteria_keep_the_references_not_the_keys(tmp_path: Path) -> None:
    ev = ae.Evaluator(
        "app",
        lambda message: "Sunny",
        judge=ScriptedChatModel(["reasoning: ok\nis_the_agent_response_valid: valid"], cycle=True),
        result_manager=ae.LocalEvalResultManager(tmp_path),
        progress=False,
    )
    eval_set = ae.EvalSet.of("set", [ae.EvalCase.of("c", "Weather?", expect="Sunny")])

    report = ev.evaluate(eval_set, metrics=[ae.EvalMetric.model_validate(judged())])

    (path,) = tmp_path.rglob("*.evalset_result.json")
    text = path.read_text(encoding="utf-8")
    assert_no_expanded_value(text)
    data = json.loads(text)
    assert written_judge(data["summary"]["provenance"]["metrics"][0]) == JUDGE
    assert written_judge(data["evalCaseResults"][0]["overallEvalMetricResults"][0]) == JUDGE
    assert report.provenance is not None and report.provenance.metrics_hash.startswith("sha256:")
