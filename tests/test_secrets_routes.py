"""A secret planted in anything a user plugs in never reaches a saved result or its HTML report.

Every route is planted with the same key, under names that do not look like secrets (only recording
names instead of object states keeps those out) and under names that do (the judge options).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import agenteval as ae
from agenteval.evalresult.provenance import Provenance
from agenteval.evalset.models import ConversationScenario, LLMGenerator, MockTool, ToolMock
from agenteval.llm import ChatRequest, ChatResponse
from agenteval.notebook.html_export import report_page
from agenteval.runner.simulation import SimulationStart
from agenteval.testing import ScriptedConversation, ScriptedUserSimulator
from tests.llm._chat_server import ChatServer, Reply

KEY = "planted7f3a9c1e5b2d4086"
"""Shaped like no known token: only recording names (not states) keeps it out."""

SHAPED = "sk-proj-PLANTEDabcdef0123456789"
"""Shaped like an OpenAI key: what redaction recognises in text that was recorded before."""

pytestmark = pytest.mark.filterwarnings("ignore::agenteval.errors.UnknownFieldWarning")

VERDICT = "reasoning: fine\nis_the_agent_response_valid: valid"


def weather(city: str) -> dict[str, str]:
    raise AssertionError("the mocked tool must not run")


def agent(message: str, turn: ae.Turn, *, setting: str) -> str:
    if "weather" in message:
        return f"It is {turn.tool(weather)(city='Paris')['sky']}."
    return "Sunny"


@dataclass
class KeyedRunner:
    setting: str

    async def run(self, request: ae.TurnRequest) -> ae.TurnResult:
        return ae.TurnResult(final_response=ae.Message.assistant("Sunny"))


@dataclass
class KeyedAgentFunction:
    setting: str

    def __call__(self, message: str) -> str:
        return "Sunny"


@dataclass
class KeyedChatModel:
    setting: str
    replies: list[str] = field(default_factory=lambda: [VERDICT])

    async def generate(self, request: ChatRequest) -> ChatResponse:
        return ChatResponse(content=self.replies[0])


@dataclass
class KeyedAggregator:
    setting: str

    def aggregate(self, data: ae.AggregationInput) -> ae.AggregationResult:
        failed = any(result.eval_status is ae.EvalStatus.FAILED for result in data.metric_results)
        return ae.AggregationResult(
            score=0.0 if failed else 1.0, status=ae.EvalStatus.FAILED if failed else ae.EvalStatus.PASSED
        )


@dataclass
class KeyedSimulator:
    setting: str

    async def start(self, request: SimulationStart) -> ScriptedConversation:
        return await ScriptedUserSimulator(["Hello", None]).start(request)


def session_id(context: Any, *, setting: str) -> str:
    return "session-1"


def callback(context: Any, args: Any, *, setting: str) -> None:
    return None


def aggregate_all_pass(data: ae.AggregationInput, *, setting: str) -> ae.AggregationResult:
    return ae.AggregationResult(score=1.0, status=ae.EvalStatus.PASSED)


def _judge_model() -> dict[str, Any]:
    return {
        "providerName": "openai",
        "modelName": "judge",
        "baseURL": f"https://judge-user:{KEY}@judge.example/v1",
        "apiKey": KEY,
        "token": KEY,
        "api_token": KEY,
        "secretKey": KEY,
        "headers": {"Authorization": f"Bearer {KEY}", "X-Trace": "kept"},
        "extraFields": {"api_key": KEY, "options": {"password": KEY}, "temperature_hint": "kept"},
    }


def _eval_set() -> ae.EvalSet:
    mock = ToolMock(actual=[MockTool(name="weather", llm_generator=LLMGenerator(prompt="Invent the weather."))])
    return ae.EvalSet.of(
        "set",
        [
            ae.EvalCase.of("plain", "Hi", expect="Sunny"),
            ae.EvalCase(
                eval_id="mocked",
                conversation=[ae.Invocation(user_content=ae.Message.user("weather in Paris?"), tool_mock=mock)],
            ),
            ae.EvalCase(
                eval_id="expected",
                expected_runner_enabled=True,
                conversation=[ae.Invocation(user_content=ae.Message.user("Hi"))],
            ),
            ae.EvalCase(
                eval_id="simulated",
                conversation_scenario=ConversationScenario(stop_signal="bye", max_allowed_invocations=2),
            ),
        ],
    )


def _metrics() -> list[ae.EvalMetric]:
    judged = ae.EvalMetric.model_validate(
        {
            "metricName": "judged",
            "evaluatorName": "llm_final_response",
            "threshold": 0.5,
            "criterion": {"llmJudge": {"judgeModel": _judge_model()}},
        }
    )
    return [judged, ae.EvalMetric.final_response("contains")]


def _written(report: ae.EvaluationReport, saved: Path) -> list[tuple[str, str]]:
    """Everything a user shares: each saved file, the report's JSON and its HTML export."""
    texts = [(str(path), path.read_text(encoding="utf-8")) for path in sorted(saved.rglob("*.json"))]
    return [*texts, ("report.result", report.result.to_json()), ("HTML", report_page(report))]


def _assert_no_key(texts: list[tuple[str, str]], key: str = KEY) -> None:
    leaks = [where for where, text in texts if key in text]
    assert not leaks, f"{key} leaked into {leaks}"


@pytest.fixture
def evaluator(tmp_path: Path) -> ae.Evaluator:
    callbacks = ae.Callbacks()
    for point in ("before_inference_case", "after_inference_case", "before_evaluate_case", "after_evaluate_case"):
        getattr(callbacks, f"register_{point}")("keyed", functools.partial(callback, setting=KEY))
    return ae.Evaluator(
        "app",
        functools.partial(agent, setting=KEY),
        result_manager=ae.LocalEvalResultManager(tmp_path / "results"),
        aggregator=KeyedAggregator(KEY),
        judge=KeyedChatModel(KEY),
        session_id_supplier=functools.partial(session_id, setting=KEY),
        callbacks=callbacks,
        user_simulator=KeyedSimulator(KEY),
        expected_runner=KeyedRunner(KEY),
        tool_mock_model=KeyedChatModel(KEY, replies=['{"sky": "fog"}']),
        progress=False,
    )


def test_a_key_planted_in_every_plugged_in_object_reaches_no_file_and_no_report(
    evaluator: ae.Evaluator, tmp_path: Path
) -> None:
    report = evaluator.evaluate(_eval_set(), metrics=_metrics())

    assert {case.eval_id: case.error_message for case in report.result.eval_case_results if case.error_message} == {}
    _assert_no_key(_written(report, tmp_path / "results"))
    provenance = report.provenance
    assert provenance is not None
    assert (provenance.agent, provenance.aggregator, provenance.judge) == (
        "tests.test_secrets_routes.agent",
        "tests.test_secrets_routes.KeyedAggregator",
        "tests.test_secrets_routes.KeyedChatModel",
    )


def test_what_is_not_a_secret_in_the_judge_options_is_kept(evaluator: ae.Evaluator) -> None:
    report = evaluator.evaluate(_eval_set(), metrics=_metrics())

    assert report.provenance is not None
    judge_model = report.provenance.metrics[0].to_dict()["criterion"]["llmJudge"]["judgeModel"]
    assert judge_model == {
        "providerName": "openai",
        "modelName": "judge",
        "baseURL": "https://judge.example/v1",
        "extraFields": {"options": {}, "temperature_hint": "kept"},
        "headers": {"X-Trace": "kept"},
    }


def test_derived_reports_record_the_aggregators_name_not_its_state(evaluator: ae.Evaluator, tmp_path: Path) -> None:
    report = evaluator.evaluate(_eval_set(), metrics=_metrics())
    keyed_function = functools.partial(aggregate_all_pass, setting=KEY)

    derived = {
        "reaggregate": report.reaggregate(keyed_function),
        "with_thresholds": report.with_thresholds({"judged": 0.1}, aggregator=KeyedAggregator(KEY)),
        "rescore": evaluator.rescore(report, aggregator=keyed_function),
    }

    for how, again in derived.items():
        _assert_no_key([(how, again.result.to_json()), (f"{how} HTML", report_page(again))])
    assert derived["reaggregate"].provenance is not None
    assert derived["reaggregate"].provenance.aggregator == "tests.test_secrets_routes.aggregate_all_pass"


@pytest.mark.parametrize(
    "keyed_agent",
    [KeyedRunner(KEY), KeyedAgentFunction(KEY), functools.partial(agent, setting=KEY)],
    ids=["runner", "callable object", "partial"],
)
def test_an_agent_holding_a_key_is_recorded_by_name(keyed_agent: Any, tmp_path: Path) -> None:
    ev = ae.Evaluator("app", keyed_agent, result_manager=ae.LocalEvalResultManager(tmp_path), progress=False)
    report = ev.evaluate(
        ae.EvalSet.of("set", [ae.EvalCase.of("c", "Hi", expect="Sunny")]), metrics=[ae.EvalMetric.final_response()]
    )

    _assert_no_key(_written(report, tmp_path))


def test_a_result_recorded_with_a_secret_in_its_provenance_is_redacted_when_loaded(tmp_path: Path) -> None:
    # Results written before names were recorded hold the aggregator's repr.
    recorded = Provenance(app_name="app", eval_set_id="set", agent="agent")
    result = ae.EvalSetResult.from_json(
        json.dumps(
            {
                "evalSetResultId": "r1",
                "evalSetId": "set",
                "summary": {
                    "numRuns": 1,
                    "provenance": {
                        **json.loads(recorded.to_json()),
                        "aggregator": f"Weighted(api_key='{SHAPED}', weights={{}})",
                        "judge": f"Judge(Authorization: Bearer {SHAPED})",
                        "derivedFrom": f"rescore of https://user:{SHAPED}@store.example/r0",
                    },
                },
            }
        )
    )
    path = tmp_path / "app" / "r1.evalset_result.json"
    path.parent.mkdir()
    path.write_text(result.to_json(), encoding="utf-8")

    loaded = ae.EvaluationReport.load(path)

    _assert_no_key([("result", loaded.result.to_json()), ("HTML", report_page(loaded))], SHAPED)
    assert loaded.provenance is not None
    assert loaded.provenance.aggregator == "Weighted(api_key='[redacted]', weights={})"
    assert loaded.provenance.derived_from == "rescore of https://store.example/r0"


@pytest.mark.parametrize("recorded", ["agenteval.aggregation.AllPassAggregator", "AllPassAggregator()"])
def test_a_loaded_report_of_the_default_aggregator_is_recognised_by_its_name_or_its_old_repr(
    recorded: str, tmp_path: Path
) -> None:
    ev = ae.Evaluator("app", functools.partial(agent, setting=KEY), progress=False)
    report = ev.evaluate(
        ae.EvalSet.of("set", [ae.EvalCase.of("c", "Hi", expect="Sunny")]), metrics=[ae.EvalMetric.final_response()]
    )
    assert report.provenance is not None and report.provenance.aggregator == "agenteval.aggregation.AllPassAggregator"
    path = tmp_path / "app" / "r.evalset_result.json"
    path.parent.mkdir()
    data = json.loads(report.result.to_json())
    data["summary"]["provenance"]["aggregator"] = recorded
    path.write_text(json.dumps(data), encoding="utf-8")

    stricter = ae.EvaluationReport.load(path).with_thresholds({"final_response_avg_score": 1.0})

    assert stricter.overall_status is ae.EvalStatus.PASSED


def test_a_judge_endpoint_echoing_the_key_leaves_it_out_of_the_error_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROUTES_JUDGE_KEY", KEY)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ChatServer(default=Reply(status=401, echo_header="authorization")) as server:
        metric = ae.EvalMetric.model_validate(
            {
                "metricName": "judged",
                "evaluatorName": "llm_final_response",
                "threshold": 0.5,
                "criterion": {
                    "llmJudge": {
                        "judgeModel": {
                            "providerName": "openai",
                            "modelName": "judge",
                            "baseURL": server.url,
                            "apiKey": "${ROUTES_JUDGE_KEY}",
                        }
                    }
                },
            }
        )
        ev = ae.Evaluator(
            "app", lambda message: "Sunny", result_manager=ae.LocalEvalResultManager(tmp_path), progress=False
        )
        report = ev.evaluate(ae.EvalSet.of("set", [ae.EvalCase.of("c", "Hi", expect="Sunny")]), metrics=[metric])

    assert server.received[0].headers["authorization"] == f"Bearer {KEY}"
    (case,) = report.result.eval_case_results
    assert case.error_message.endswith("HTTP 401: Error code: 401 - rejected authorization: Bearer [redacted]")
    _assert_no_key(_written(report, tmp_path))


def test_an_agent_error_quoting_credentials_is_written_without_them(tmp_path: Path) -> None:
    def agent(message: str) -> str:
        raise RuntimeError(
            "POST https://bob:hunter2pw@api.example.com/v1 failed; Authorization: Bearer tok-AGENT-1234;"
            " api_key=sk-AGENT-5678abcdefghijklmnop"
        )

    report = ae.Evaluator("app", agent, result_manager=ae.LocalEvalResultManager(tmp_path), progress=False).evaluate(
        ae.EvalSet.of("s", [ae.EvalCase.of("c", ae.Invocation.of("hi", "x"))]),
        metrics=[ae.EvalMetric.final_response()],
    )

    [message] = report.cases["error_message"]
    assert "RuntimeError: POST https://api.example.com/v1 failed" in message
    saved = next(tmp_path.rglob("*.json")).read_text(encoding="utf-8")
    for secret in ("hunter2pw", "tok-AGENT-1234", "sk-AGENT-5678"):
        assert secret not in message and secret not in saved
