"""A judge built from a metrics file gets a total timeout per request and a retry budget.

Set in the file (``judgeModel.timeoutSeconds``, ``judgeModel.maxRetries``) or on the facade
(``judge_timeout``, ``judge_max_retries``, which win); by default 120 s and 2 retries.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agenteval as ae
from agenteval.llm import OpenAIChatModel, chat_model_for
from agenteval.llm import judge as judge_module
from agenteval.metric.criterion import JudgeModelOptions
from tests.llm._chat_server import ChatServer, Reply

APP, SET = "app", "set"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    from openai import _base_client

    # Only the budgets under test may make a test wait, not the client's exponential backoff.
    monkeypatch.setattr(_base_client, "INITIAL_RETRY_DELAY", 0.001)
    monkeypatch.setattr(judge_module, "_models", {})
    monkeypatch.setenv("JUDGE_TEST_KEY", "sk-judge-limits-test")
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


def judge_model(server: ChatServer, **limits: Any) -> dict[str, Any]:
    return {
        "providerName": "openai",
        "modelName": "judge",
        "baseURL": server.url,
        "apiKey": "${JUDGE_TEST_KEY}",
        **limits,
    }


def write_app(tmp_path: Path, judge: dict[str, Any]) -> Path:
    app = tmp_path / APP
    app.mkdir()
    (app / f"{SET}.evalset.json").write_text(
        ae.EvalSet.of(SET, [ae.EvalCase.of("c", "Weather?", expect="Sunny")]).to_json(), encoding="utf-8"
    )
    metric = {
        "metricName": "judged",
        "evaluatorName": "llm_final_response",
        "threshold": 0.5,
        "criterion": {"llmJudge": {"judgeModel": judge}},
    }
    (app / f"{SET}.metrics.json").write_text(json.dumps([metric]), encoding="utf-8")
    return tmp_path


def evaluate(data: Path, **options: Any) -> ae.EvaluationReport:
    ev = ae.Evaluator(
        APP,
        lambda message: "Sunny",
        eval_set_manager=ae.LocalEvalSetManager(data),
        metric_manager=ae.LocalMetricManager(data),
        progress=False,
        **options,
    )
    return ev.evaluate(SET)


def case_error(report: ae.EvaluationReport) -> str:
    (case,) = report.result.eval_case_results
    assert case.final_eval_status is ae.EvalStatus.FAILED
    return case.error_message


def test_a_hanging_judge_fails_its_case_once_the_files_timeout_is_spent(server: ChatServer, tmp_path: Path) -> None:
    server.script(*[Reply(delay=30)] * 4)
    data = write_app(tmp_path, judge_model(server, timeoutSeconds=0.5, maxRetries=3))

    error = case_error(evaluate(data))

    assert "no answer within 0.5s (the timeout of a whole request, retries included)" in error
    assert len(server.received) == 1


@pytest.mark.parametrize("budget", [0, 1, 3])
def test_a_failing_judge_is_tried_as_often_as_the_files_budget_allows(
    server: ChatServer, tmp_path: Path, budget: int
) -> None:
    server.script(*[Reply(status=503)] * 5)
    data = write_app(tmp_path, judge_model(server, maxRetries=budget))

    error = case_error(evaluate(data))

    assert "HTTP 503" in error
    assert len(server.received) == budget + 1


def test_the_facades_judge_timeout_and_retries_win_over_the_files(server: ChatServer, tmp_path: Path) -> None:
    server.script(Reply(status=503), Reply(status=503))
    data = write_app(tmp_path, judge_model(server, timeoutSeconds=60, maxRetries=5))

    error = case_error(evaluate(data, judge_max_retries=1))

    assert "HTTP 503 after 1 retry" in error
    assert len(server.received) == 2
    server.script(Reply(delay=30))
    assert "no answer within 0.5s" in case_error(evaluate(data, judge_timeout=0.5, judge_max_retries=0))


def test_the_defaults_are_two_minutes_and_two_retries() -> None:
    options = JudgeModelOptions(provider_name="openai", model_name="judge", api_key="sk-x")

    model = chat_model_for(options)

    assert isinstance(model, OpenAIChatModel)
    assert (model.timeout, model.max_retries) == (120.0, 2)


def test_the_limits_are_written_back_and_blocks_with_other_limits_get_their_own_model() -> None:
    options = JudgeModelOptions.model_validate(
        {"providerName": "openai", "modelName": "judge", "apiKey": "sk-x", "timeoutSeconds": 30, "maxRetries": 0}
    )

    assert json.loads(options.to_json()) == {
        "providerName": "openai",
        "modelName": "judge",
        "timeoutSeconds": 30,
        "maxRetries": 0,
    }
    model = chat_model_for(options)
    assert isinstance(model, OpenAIChatModel) and (model.timeout, model.max_retries) == (30.0, 0)
    assert chat_model_for(options.model_copy(update={"max_retries": 1})) is not model


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ({"timeoutSeconds": 0}, "timeoutSeconds must be a positive number of seconds, got 0"),
        ({"timeoutSeconds": -1.5}, "timeoutSeconds must be a positive number of seconds"),
        ({"maxRetries": -1}, "maxRetries must be 0 or more, got -1"),
        ({"timeoutSeconds": "30"}, "timeoutSeconds"),
    ],
)
def test_invalid_limits_in_a_metrics_file_are_config_errors_naming_the_field(
    server: ChatServer, tmp_path: Path, limits: dict[str, Any], message: str
) -> None:
    data = write_app(tmp_path, judge_model(server, **limits))

    with pytest.raises(ae.ConfigError, match=message):
        evaluate(data)
    assert server.received == []


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"judge_timeout": 0}, "judge_timeout must be a positive number of seconds or None, got int 0"),
        ({"judge_timeout": float("inf")}, "judge_timeout must be a positive number"),
        ({"judge_timeout": "30"}, "judge_timeout must be a positive number of seconds or None, got str '30'"),
        ({"judge_max_retries": -1}, "judge_max_retries must be a whole number, 0 or more, or None, got int -1"),
        ({"judge_max_retries": 1.5}, "judge_max_retries must be a whole number"),
        ({"judge_max_retries": True}, "judge_max_retries must be a whole number"),
    ],
)
def test_invalid_facade_limits_are_config_errors(option: dict[str, Any], message: str) -> None:
    with pytest.raises(ae.ConfigError, match=message):
        ae.Evaluator(APP, **option)
