"""The report's tables say what happened (tool arguments, turns, measures, error types); concurrent defaults."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

import agenteval as ae
from agenteval.aggregation import AggregationInput, AggregationResult
from agenteval.analysis.report import TOOL_CALL_COLUMNS, TURN_COLUMNS
from agenteval.evalset.trace import ExecutionTrace, TraceStep
from agenteval.evaluation import DEFAULT_PARALLELISM

WEATHER = ae.Tool(name="get_weather", arguments={"city": "Paris"})


def weather_agent(message: str, turn: ae.Turn) -> str:
    turn.record_tool("get_weather", {"city": "Paris" if "Paris" in message else "Rome"})
    return "Sunny and warm in Paris" if "Paris" in message else "Rain in Rome, 12 degrees and windy"


def two_turns() -> ae.EvalSet:
    return ae.EvalSet.of(
        "weather",
        [
            ae.EvalCase.of(
                "trip",
                ae.Invocation.of("Weather in Paris?", "Sunny and warm in Paris", tools=[WEATHER]),
                ae.Invocation.of("And in Rome?", "Sunny in Rome", tools=[WEATHER]),
            )
        ],
    )


METRICS = [ae.EvalMetric.tool_trajectory(), ae.EvalMetric.rouge(f1=0.5)]


@pytest.fixture(scope="module")
def report() -> ae.EvaluationReport:
    return ae.Evaluator("app", weather_agent, progress=False).evaluate(two_turns(), metrics=METRICS)


def test_turns_has_one_row_per_turn_with_a_score_column_per_metric(report: ae.EvaluationReport) -> None:
    turns = report.turns

    assert list(turns.columns) == [*TURN_COLUMNS, "tool_trajectory_avg_score", "final_response_rouge"]
    assert list(turns["turn"]) == [1, 2]
    assert list(turns["tool_trajectory_avg_score"]) == [1.0, 0.0]
    assert list(turns["final_response_rouge"]) == [1.0, 0.0]
    assert turns["actual_tools"][1] == [{"name": "get_weather", "arguments": {"city": "Rome"}}]
    assert turns["expected_tools"][1] == [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    assert len(report.invocations) == 2 * len(METRICS)


def test_the_underlying_measure_is_a_column_per_turn_and_per_case(report: ae.EvaluationReport) -> None:
    rouge = report.invocations[report.invocations["metric_name"] == "final_response_rouge"]
    assert list(rouge["measure_name"]) == ["rougeL_f1", "rougeL_f1"]
    assert rouge["measure"].iloc[0] == 1.0
    second = rouge["measure"].iloc[1]
    assert second == pytest.approx(0.4)  # "in Rome": precision 2/7, recall 2/3

    metrics = report.metrics.set_index("metric_name")
    assert metrics.loc["final_response_rouge", "measure"] == pytest.approx((1.0 + second) / 2)
    assert metrics.loc["tool_trajectory_avg_score", "measure_name"] == ""
    assert metrics["measure"].isna().to_dict() == {"tool_trajectory_avg_score": True, "final_response_rouge": False}
    written = json.loads(report.result.to_json())
    overall = written["evalCaseResults"][0]["overallEvalMetricResults"][1]["details"]
    assert set(overall["measures"]) == {"rougeL_f1", "rougeL_precision", "rougeL_recall"}


def test_cases_say_what_kind_of_failure_each_error_is() -> None:
    def agent(message: str) -> str:
        if message == "crash":
            raise RuntimeError("boom")
        if message == "slow":
            time.sleep(0.5)
        return message

    def fussy(data: AggregationInput) -> AggregationResult:
        if data.eval_case.eval_id == "fussy":
            raise ValueError("cannot decide")
        return ae.AllPassAggregator().aggregate(data)

    def broken_metric(actuals: object, expecteds: object, metric: ae.EvalMetric) -> ae.EvaluateResult:
        raise RuntimeError("the metric broke")

    registry = ae.default_registry()
    registry.register("broken", broken_metric)
    eval_set = ae.EvalSet.of(
        "errors",
        [
            ae.EvalCase.of("ok", "ok", expect="ok"),
            ae.EvalCase.of("crash", "crash", expect="crash"),
            ae.EvalCase.of("slow", "slow", expect="slow"),
            ae.EvalCase.of("fussy", "fussy", expect="fussy"),
            ae.EvalCase(eval_id="empty"),
        ],
    )
    ev = ae.Evaluator("app", agent, progress=False, turn_timeout=0.2, aggregator=fussy, registry=registry)

    cases = ev.evaluate(eval_set, metrics=[ae.EvalMetric.final_response()]).cases.set_index("eval_id")
    assert cases["error_type"].to_dict() == {
        "ok": "",
        "crash": "agent",
        "slow": "timeout",
        "fussy": "aggregator",
        "empty": "case",
    }
    broken = ae.EvalMetric(metric_name="broken", threshold=0.5)
    scored = ev.evaluate(eval_set, metrics=[broken], eval_case_ids=["ok"]).cases
    assert scored["error_type"].tolist() == ["metric"]


def test_a_result_written_by_the_reference_names_no_error_type_but_other() -> None:
    result = ae.EvalSetResult(
        eval_set_id="s",
        eval_case_results=[
            ae.EvalCaseResult(eval_id="a", run_id=1, final_eval_status=ae.EvalStatus.FAILED, error_message="x"),
            ae.EvalCaseResult(eval_id="b", run_id=1, final_eval_status=ae.EvalStatus.PASSED),
        ],
    )
    assert ae.EvaluationReport.from_result(result).cases["error_type"].tolist() == ["other", ""]


def test_cases_run_concurrently_by_default_within_a_cap() -> None:
    in_flight = peak = 0

    async def slow_agent(message: str) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        return message

    eval_set = ae.EvalSet.of("many", [ae.EvalCase.of(f"c{i}", f"m{i}", expect=f"m{i}") for i in range(40)])
    ev = ae.Evaluator("app", slow_agent, progress=False)

    assert ev.evaluate(eval_set, metrics=[ae.EvalMetric.final_response()]).overall_status is ae.EvalStatus.PASSED
    assert peak == DEFAULT_PARALLELISM == 16
    peak = 0
    ev.evaluate(eval_set, metrics=[ae.EvalMetric.final_response()], parallel_inference=False)
    assert peak == 1


def test_reaggregating_records_the_error_type_as_text(report: ae.EvaluationReport) -> None:
    def broken(data: AggregationInput) -> AggregationResult:
        raise RuntimeError("no verdict")

    errors = report.reaggregate(broken).cases["error_type"].tolist()

    assert errors == ["aggregator"] and type(errors[0]) is str


def traced_agent(message: str, turn: ae.Turn) -> str:
    turn.record_tool("get_weather", {"city": "Paris"}, {"sky": "sunny"}, id="call-1")
    turn.record_tool("get_time", {"zone": "CET"}, "09:00", id="call-2")
    usage = {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35}
    steps = [
        TraceStep(step_id="m1", node_type="llm", node_id="gpt-test"),
        TraceStep(step_id="m2", node_type="llm", node_id="gpt-test"),
        TraceStep(step_id="m3", node_type="llm", node_id="gpt-mini"),
    ]
    turn.execution_trace = ExecutionTrace(usage=usage, steps=steps)
    return "Sunny in Paris"


def test_tool_calls_lists_each_call_with_its_id_arguments_and_result() -> None:
    report = ae.Evaluator("app", traced_agent, progress=False).evaluate(
        two_turns(), metrics=[ae.EvalMetric.tool_trajectory()]
    )

    calls = report.tool_calls
    assert list(calls.columns) == list(TOOL_CALL_COLUMNS)
    assert calls[["turn", "call", "id", "name"]].values.tolist() == [
        [1, 1, "call-1", "get_weather"],
        [1, 2, "call-2", "get_time"],
        [2, 1, "call-1", "get_weather"],
        [2, 2, "call-2", "get_time"],
    ]
    assert calls["arguments"][0] == {"city": "Paris"}
    assert calls["result"][0] == {"sky": "sunny"}
    assert calls["result"][1] == "09:00"
    calls["result"][0]["sky"] = "edited"  # a copy: the report keeps what was recorded
    assert report.tool_calls["result"][0] == {"sky": "sunny"}


def test_turns_show_the_models_and_token_usage_the_trace_reports(report: ae.EvaluationReport) -> None:
    traced = ae.Evaluator("app", traced_agent, progress=False).evaluate(
        two_turns(), metrics=[ae.EvalMetric.tool_trajectory()]
    )

    turns = traced.turns
    assert list(turns["models"]) == ["gpt-test, gpt-mini", "gpt-test, gpt-mini"]
    assert list(turns["prompt_tokens"]) == [30, 30]
    assert list(turns["total_tokens"]) == [35, 35]
    untraced = report.turns  # an agent that reports no trace: nothing, not zero
    assert list(untraced["models"]) == ["", ""]
    assert untraced["prompt_tokens"].isna().all()
    assert str(untraced["prompt_tokens"].dtype) == "Int64"


def never_decides(data: AggregationInput) -> AggregationResult:
    raise ValueError("no verdict")


@pytest.mark.parametrize("num_runs", [1, 2])
def test_the_case_table_keeps_the_scores_of_a_case_whose_aggregator_raised(num_runs: int) -> None:
    ev = ae.Evaluator("app", weather_agent, progress=False, num_runs=num_runs)
    report = ev.evaluate(two_turns(), metrics=METRICS)

    broken = report.reaggregate(never_decides)

    row = broken.case_table.set_index("eval_id").loc["trip"]
    scored = report.case_table.set_index("eval_id").loc["trip"]
    assert (row["status"], row["score"]) == ("failed", 0.0)
    metrics = ["tool_trajectory_avg_score", "final_response_rouge"]
    assert [row[name] for name in metrics] == pytest.approx([scored[name] for name in metrics])
    assert row["error_type"] == "aggregator"
    message = str(row["error_message"])
    # With several runs, every run failed on the aggregator, so the case failed without asking it again.
    where = "run 1: " if num_runs > 1 else ""
    assert message.startswith(f"{where}aggregate eval case result: ValueError: no verdict (raised at ")
    assert message.endswith(" in never_decides)")
    assert (scored["error_type"], scored["error_message"]) == ("", "")


def test_the_case_table_names_the_run_whose_error_failed_the_case() -> None:
    trip_runs = 0

    def fails_run_2(data: AggregationInput) -> AggregationResult:
        nonlocal trip_runs
        if data.eval_case.eval_id == "trip" and not data.runs:
            trip_runs += 1
            if trip_runs == 2:
                raise RuntimeError("second run")
        return ae.AllPassAggregator().aggregate(data)

    ev = ae.Evaluator("app", weather_agent, progress=False, num_runs=2, parallel_runs=False, aggregator=fails_run_2)

    row = ev.evaluate(two_turns(), metrics=METRICS).case_table.set_index("eval_id").loc["trip"]

    assert row["error_type"] == "aggregator"
    assert str(row["error_message"]).startswith(
        "run 2: aggregate eval case result: RuntimeError: second run (raised at "
    )
