"""Bad input to the facade is a clear ConfigError before the agent runs; an interrupted evaluation keeps its work."""

from __future__ import annotations

import functools
import json
import traceback
from pathlib import Path
from typing import Any

import pytest

import agenteval as ae
from agenteval._util.sync_bridge import run_sync
from agenteval.evalresult.provenance import Provenance
from agenteval.examples.math import calculator_agent
from tests.test_evaluation import APP, SET, RecordingResultManager, echo, fill, final_response, make_case, turn


class CountingAgent:
    def __init__(self, interrupt_on_call: int = 0) -> None:
        self.calls = 0
        self.interrupt_on_call = interrupt_on_call

    def __call__(self, text: str) -> str:
        self.calls += 1
        if self.calls == self.interrupt_on_call:
            raise KeyboardInterrupt
        return echo(text)


def test_repeated_case_ids_are_refused_before_the_agent_runs() -> None:
    agent = CountingAgent()
    eval_set = ae.EvalSet(
        eval_set_id=SET,
        eval_cases=[make_case("a", turn("say x", "x")), make_case("a", turn("say y", "y")), make_case("b")],
    )

    with pytest.raises(ae.ConfigError, match=r"^eval set set has several cases with the evalId 'a': give each"):
        ae.Evaluator(APP, agent).evaluate(eval_set, metrics=[final_response()])
    assert agent.calls == 0


@pytest.mark.parametrize(
    ("metrics", "message"),
    [
        (final_response(), r"^metrics must be a list of ae.EvalMetric, got EvalMetric: wrap it, metrics=\[\.\.\.\]$"),
        ("final_response_avg_score", r"^metrics must be a list of ae.EvalMetric, got str"),
        (["final_response_avg_score"], r"^metrics\[0\] must be an ae.EvalMetric, got str 'final_response_avg_score'$"),
        ({"m": final_response()}, r"^metrics must be a list of ae.EvalMetric, got dict"),
    ],
)
def test_metrics_that_are_not_a_list_of_metrics_are_refused(metrics: Any, message: str) -> None:
    agent = CountingAgent()
    ev = ae.Evaluator(APP, agent, eval_set_manager=fill([make_case("a")]))

    with pytest.raises(ae.ConfigError, match=message):
        ev.evaluate(SET, metrics=metrics)
    report = ev.evaluate(SET, metrics=(final_response(),))
    with pytest.raises(ae.ConfigError, match=message):
        ev.rescore(report, metrics=metrics)
    assert agent.calls == 1


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("num_runs", 2.5, r"^num_runs must be a whole number, got float 2.5$"),
        ("num_runs", "3", r"^num_runs must be a whole number, got str '3'$"),
        ("num_runs", True, r"^num_runs must be a whole number, got bool True$"),
        ("parallelism", 2.5, r"^parallelism must be a whole number, got float 2.5$"),
        ("judge_num_samples", "2", r"^judge_num_samples must be a whole number, got str '2'$"),
        ("parallel_inference", "no", r"^parallel_inference must be True or False, got str 'no'$"),
        ("parallel_runs", 1, r"^parallel_runs must be True or False, got int 1$"),
        ("progress", "auto", r"^progress must be True or False, got str 'auto'$"),
        ("turn_timeout", "1", r"^turn_timeout must be a positive number of seconds or None, got str '1'$"),
        ("turn_timeout", float("inf"), r"^turn_timeout must be a positive number of seconds or None, got float inf$"),
        ("turn_timeout", 10**400, r"^turn_timeout must be a positive number of seconds or None, got int 1000"),
    ],
)
def test_options_of_the_wrong_type_are_config_errors(option: str, value: Any, message: str) -> None:
    with pytest.raises(ae.ConfigError, match=message):
        ae.Evaluator(APP, echo, **{option: value})
    ev = ae.Evaluator(APP, echo, eval_set_manager=fill([make_case("a")]))
    with pytest.raises(ae.ConfigError, match=message):
        ev.evaluate(SET, metrics=[final_response()], **{option: value})


def test_numpy_integers_are_whole_numbers() -> None:
    np = pytest.importorskip("numpy")

    report = ae.Evaluator(APP, echo, eval_set_manager=fill([make_case("a")]), num_runs=np.int64(2)).evaluate(
        SET, metrics=[final_response()], turn_timeout=np.float32(5)
    )

    assert report.num_runs == 2 and isinstance(report.num_runs, int)


def test_ctrl_c_during_a_serial_run_keeps_the_turns_already_done_so_they_can_be_scored() -> None:
    results = RecordingResultManager()
    agent = CountingAgent(interrupt_on_call=3)
    ev = ae.Evaluator(
        APP, agent, eval_set_manager=fill([make_case("a"), make_case("b"), make_case("c")]), result_manager=results
    )

    with pytest.raises(KeyboardInterrupt) as raised:
        ev.evaluate(SET, metrics=[final_response()])

    partial: ae.EvaluationReport = raised.value.report  # type: ignore[attr-defined]
    # Each case is scored as soon as its turns are done: a and b are kept scored, or not yet
    # evaluated when the interrupt came first.
    assert [case.eval_id for case in partial.result.eval_case_results] == ["a", "b"]
    statuses = {case.final_eval_status for case in partial.result.eval_case_results}
    assert statuses <= {ae.EvalStatus.NOT_EVALUATED, ae.EvalStatus.PASSED}
    turns = [inference.inferences[0].final_response for inference in partial.inference_results[0]]
    assert [message.content for message in turns if message is not None] == ["a", "b"]
    assert len(results.saved) == 1

    rescored = ev.rescore(partial)
    assert agent.calls == 3
    assert rescored.cases[["eval_id", "status"]].values.tolist() == [["a", "passed"], ["b", "passed"]]


def test_a_partial_result_summarises_only_the_runs_it_reached() -> None:
    agent = CountingAgent(interrupt_on_call=4)  # the first case of run 2
    ev = ae.Evaluator(APP, agent, eval_set_manager=fill([make_case("a"), make_case("b"), make_case("c")]))

    with pytest.raises(KeyboardInterrupt) as raised:
        ev.evaluate(SET, metrics=[final_response()], num_runs=3)

    partial: ae.EvaluationReport = raised.value.report  # type: ignore[attr-defined]
    assert partial.num_runs == 1
    assert partial.result.summary is not None and partial.result.summary.num_runs == 1
    assert partial.pass_at_k(1) == 1.0
    assert partial.overall_status == ae.EvalStatus.PASSED


def test_a_partial_report_keeps_eval_set_order_under_parallel_inference() -> None:
    import asyncio

    async def slow_first(text: str) -> str:
        await asyncio.sleep(0.02 if text.endswith("c0") else 0.0)
        return echo(text)

    def stop_after_inference(context: ae.EvalContext, args: object) -> None:
        raise RuntimeError("stop")

    ids = [f"c{index}" for index in range(6)]
    ev = ae.Evaluator(APP, slow_first, eval_set_manager=fill([make_case(eval_id) for eval_id in ids]))
    with pytest.raises(ae.AgentEvalError) as raised:
        ev.evaluate(
            SET,
            metrics=[final_response()],
            parallel_inference=True,
            callbacks=ae.Callbacks().register_after_inference_set("stop", stop_after_inference),
        )

    partial: ae.EvaluationReport = raised.value.report  # type: ignore[attr-defined]
    assert [inference.eval_case_id for inference in partial.inference_results[0]] == ids
    assert partial.cases["eval_id"].tolist() == ids
    assert ae.Evaluator(APP).rescore(partial).cases["eval_id"].tolist() == ids


def test_rescore_aggregates_as_the_report_did_unless_told_otherwise() -> None:
    def lenient(data: ae.AggregationInput) -> ae.AggregationResult:
        return ae.AggregationResult(score=1.0, status=ae.EvalStatus.PASSED)

    ev = ae.Evaluator(APP, echo, eval_set_manager=fill([make_case("a", turn("say a", "wrong"))]), aggregator=lenient)
    report = ev.evaluate(SET, metrics=[final_response()])
    assert report.overall_status == ae.EvalStatus.PASSED

    assert ae.Evaluator(APP).rescore(report).overall_status == ae.EvalStatus.PASSED
    strict = ae.Evaluator(APP).rescore(report, aggregator=ae.AllPassAggregator())
    assert strict.overall_status == ae.EvalStatus.FAILED


def test_cases_without_a_session_input_run_as_the_default_user() -> None:
    bare = ae.EvalCase(eval_id="bare", conversation=[turn("say bare", "bare")])
    eval_set = ae.EvalSet(eval_set_id=SET, eval_cases=[make_case("a"), bare])

    report = ae.Evaluator(APP, echo).evaluate(eval_set, metrics=[final_response()])

    assert report.cases["status"].tolist() == ["passed", "passed"]
    assert report.cases["user_id"].tolist() == ["user", "user"]
    assert bare.session_input is None, "the caller's case is not changed"
    assert report.provenance is not None
    assert report.provenance.eval_set_hash == Provenance.describe(eval_set, []).eval_set_hash


def test_an_evaluation_without_metrics_warns_that_nothing_will_be_scored() -> None:
    eval_set = ae.EvalSet(eval_set_id=SET, eval_cases=[make_case("a")])

    with pytest.warns(ae.NoMetricsWarning, match=r"^eval set set has no metrics .* every case will be not_evaluated"):
        report = ae.Evaluator(APP, echo).evaluate(eval_set)
    assert report.cases["status"].tolist() == ["not_evaluated"]


def test_cases_without_an_eval_id_are_refused_before_the_agent_runs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    agent = CountingAgent()
    eval_set = ae.EvalSet(eval_set_id=SET, eval_cases=[make_case(""), make_case("a"), make_case("")])
    (tmp_path / APP).mkdir()
    (tmp_path / APP / f"{SET}.evalset.json").write_text(eval_set.to_json())
    ev = ae.Evaluator(APP, agent, eval_set_manager=ae.LocalEvalSetManager(tmp_path))

    for target in (SET, eval_set):
        with pytest.raises(ae.ConfigError) as info:
            ev.evaluate(target, metrics=[final_response()])
        assert str(info.value) == (
            "eval set set has cases without an evalId at positions [0, 2]: give each case an evalId"
        )
    assert agent.calls == 0
    assert caplog.records == []  # no "could not keep the finished cases" warning


def test_an_eval_set_file_without_an_eval_set_id_is_evaluated_under_the_requested_id(tmp_path: Path) -> None:
    path = tmp_path / APP / "s.evalset.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"evalCases": [make_case("a").to_dict(), make_case("b").to_dict()]}))
    before = path.read_bytes()
    eval_sets = ae.LocalEvalSetManager(tmp_path)
    results = ae.LocalEvalResultManager(tmp_path)
    ev = ae.Evaluator(APP, CountingAgent(), eval_set_manager=eval_sets, result_manager=results, num_runs=2)

    report = ev.evaluate("s", metrics=[final_response()])

    assert report.eval_set_id == report.result.eval_set_id == "s"
    assert {case.eval_set_id for case in report.result.eval_case_results} == {"s"}
    assert report.cases["status"].tolist() == ["passed"] * 4
    assert report.provenance is not None and report.provenance.eval_set_id == "s"
    assert report.result.eval_set_result_id.startswith(f"{APP}_s_")
    loaded = ae.EvaluationReport.load(results, APP, report.result.eval_set_result_id)
    assert loaded.eval_set_id == "s"
    assert ev.rescore(report).cases["status"].tolist() == ["passed"] * 4
    # The store is left as it is.
    assert path.read_bytes() == before
    assert run_sync(eval_sets.get(APP, "s")).eval_set_id == ""


def test_rescoring_a_loaded_report_uses_the_evaluators_own_custom_aggregator(tmp_path: Path) -> None:
    def lenient(data: ae.AggregationInput) -> ae.AggregationResult:
        return ae.AggregationResult(score=1.0, status=ae.EvalStatus.PASSED)

    eval_set = ae.EvalSet(eval_set_id=SET, eval_cases=[make_case("a", turn("say a", "wrong"))])
    ev = ae.Evaluator(APP, echo, aggregator=lenient, result_manager=ae.LocalEvalResultManager(tmp_path))
    report = ev.evaluate(eval_set, metrics=[final_response()])
    loaded = ae.EvaluationReport.load(
        tmp_path / APP / f"{report.result.eval_set_result_id}.evalset_result.json", eval_set=eval_set
    )

    assert ev.rescore(loaded).overall_status == ae.EvalStatus.PASSED
    with pytest.raises(ae.ConfigError, match=r"rescore\(report, aggregator=\.\.\.\)"):
        ae.Evaluator(APP).rescore(loaded)


def make_agent() -> object:
    def weather_agent(text: str) -> str:
        return "sunny"

    return weather_agent


class WeatherRunner:
    def __init__(self, api_key: str) -> None:
        self.api_key = api_key

    async def run(self, request: ae.TurnRequest) -> ae.TurnResult:
        return ae.TurnResult(final_response=ae.Message.assistant("sunny"))


def test_provenance_names_the_agent_readably_and_never_records_its_state() -> None:
    eval_set = ae.EvalSet(eval_set_id=SET, eval_cases=[make_case("a")])

    def named(agent: object) -> str:
        report = ae.Evaluator(APP, agent).evaluate(eval_set, metrics=[final_response()])  # type: ignore[arg-type]
        assert report.provenance is not None
        return report.provenance.agent

    assert named(make_agent()) == f"{__name__}.weather_agent"  # in a notebook: weather_agent
    assert named(functools.partial(lambda text, api_key: text, api_key="sk-secret")) == f"{__name__}.<lambda>"
    assert named(WeatherRunner(api_key="sk-secret")) == f"{__name__}.WeatherRunner"
    assert named(calculator_agent) == "agenteval.examples.math.agent.calculator_agent"


def test_a_config_error_from_evaluate_shows_the_message_without_internal_frames_or_chained_causes() -> None:
    eval_set = ae.EvalSet(eval_set_id=SET, eval_cases=[make_case("a")])
    too_high = ae.EvalMetric(metric_name="final_response_avg_score", threshold=80)

    with pytest.raises(ae.ConfigError, match="threshold 80 is outside the score range") as caught:
        ae.Evaluator(APP, echo).evaluate(eval_set, metrics=[too_high])

    printed = "".join(traceback.format_exception(caught.value))
    assert "The above exception was the direct cause" not in printed
    assert "During handling" not in printed
    assert "asyncio" not in printed
    assert printed.count("threshold 80 is outside") == 1


def test_two_metrics_with_one_name_are_refused_before_the_agent_runs() -> None:
    eval_set = ae.EvalSet(eval_set_id=SET, eval_cases=[make_case("a")])
    metrics = [ae.EvalMetric.final_response(), ae.EvalMetric.final_response("contains")]

    with pytest.raises(ae.ConfigError, match=r"metrics at index 0 and 1 are both named 'final_response_avg_score'"):
        ae.Evaluator(APP, echo).evaluate(eval_set, metrics=metrics)


def test_warnings_point_at_the_users_line() -> None:
    eval_set = ae.EvalSet(eval_set_id=SET, eval_cases=[make_case("a")])
    unknown = ae.EvalMetric(metric_name="no_such_evaluator", threshold=0.5)

    with pytest.warns(ae.SkippedMetricWarning) as skipped:
        ae.Evaluator(APP, echo).evaluate(eval_set, metrics=[unknown])
    with pytest.warns(ae.NoMetricsWarning) as no_metrics:
        ae.Evaluator(APP, echo).evaluate(eval_set)

    assert [warning.filename for warning in [*skipped, *no_metrics]] == [__file__, __file__]


@pytest.mark.parametrize("wrong", [[make_case("a")], {"a": make_case("a")}, None])
def test_evaluate_refuses_what_is_neither_an_id_nor_an_eval_set(wrong: object) -> None:
    with pytest.raises(ae.ConfigError, match=r"^eval_set must be an eval-set id or an ae.EvalSet, got "):
        ae.Evaluator(APP, echo).evaluate(wrong, metrics=[final_response()])  # type: ignore[arg-type]


def test_every_option_is_declared_once_and_the_evaluator_points_to_them() -> None:
    from dataclasses import fields

    from agenteval.evaluation import EvaluationOptions
    from agenteval.service import ServiceOptions

    facade = {option.name for option in fields(EvaluationOptions)}
    assert {option.name for option in fields(ServiceOptions)} <= facade
    # Described once, by the fields' docstrings (tests/test_options_documented.py).
    assert ":class:`EvaluationOptions`" in (ae.Evaluator.__doc__ or "")
