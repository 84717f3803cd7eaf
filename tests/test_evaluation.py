"""Tests for the :class:`agenteval.Evaluator` facade (spec §2.6, test idea 80)."""

from __future__ import annotations

import asyncio
import builtins
import json
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from agenteval import (
    AgentEvalError,
    AggregationInput,
    AggregationResult,
    Callbacks,
    ConfigError,
    EvalCase,
    EvalContext,
    EvalMetric,
    EvalSet,
    EvalSetResult,
    EvalStatus,
    EvaluateResult,
    EvaluationReport,
    Evaluator,
    InMemoryEvalResultManager,
    InMemoryEvalSetManager,
    InMemoryMetricManager,
    Invocation,
    LocalEvalResultManager,
    LocalEvalSetManager,
    LocalMetricManager,
    Message,
    NotFoundError,
    PerInvocationResult,
    SaveError,
    SessionInput,
    default_registry,
)
from agenteval._util.sync_bridge import run_sync
from agenteval.errors import CallbackError, StorageError
from agenteval.evalresult.manager import EvalResultManager
from agenteval.evalresult.models import EvalCaseResult
from agenteval.evalset.models import EvalMode, Tool
from agenteval.evaluators.base import EvaluatorFunction
from agenteval.examples.math import APP_NAME, DATA_DIR, EVAL_SET_ID, calculator_agent
from agenteval.metric.criterion import Criterion, FinalResponseCriterion, TextCriterion, TextMatchStrategy
from agenteval.service.callbacks import AfterEvaluateCaseArgs, BeforeInferenceSetArgs

# Many tests here run cases without metrics on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::agenteval.errors.NoMetricsWarning")

ROOT = Path(__file__).resolve().parents[1]
APP = "app"
SET = "set"
PASSED = EvalStatus.PASSED
FAILED = EvalStatus.FAILED
NOT_EVALUATED = EvalStatus.NOT_EVALUATED


# ---------------------------------------------------------------------------------------------- helpers


def turn(user: str, reply: str, *tools: Tool) -> Invocation:
    return Invocation(user_content=Message.user(user), final_response=Message.assistant(reply), tools=list(tools))


def make_case(eval_id: str, *turns: Invocation) -> EvalCase:
    return EvalCase(
        eval_id=eval_id,
        conversation=list(turns) or [turn(f"say {eval_id}", eval_id)],
        session_input=SessionInput(app_name=APP, user_id="user"),
    )


def echo(text: str) -> str:
    """The agent most tests use: ``say X`` -> ``X``."""
    return text.removeprefix("say ")


def final_response(threshold: float = 1.0) -> EvalMetric:
    return EvalMetric(
        metric_name="final_response_avg_score",
        threshold=threshold,
        criterion=Criterion(
            final_response=FinalResponseCriterion(text=TextCriterion(match_strategy=TextMatchStrategy.EXACT))
        ),
    )


async def afill(cases: Sequence[EvalCase], set_id: str = SET) -> InMemoryEvalSetManager:
    manager = InMemoryEvalSetManager()
    await manager.create(APP, set_id)
    for case in cases:
        await manager.add_case(APP, set_id, case)
    return manager


def fill(cases: Sequence[EvalCase], set_id: str = SET) -> InMemoryEvalSetManager:
    return run_sync(afill(cases, set_id))


def metric_store(metrics: Sequence[EvalMetric], set_id: str = SET) -> InMemoryMetricManager:
    manager = InMemoryMetricManager()

    async def add() -> None:
        for metric in metrics:
            await manager.add(APP, set_id, metric)

    run_sync(add())
    return manager


class RecordingResultManager:
    """A result manager that counts saves (keeping a copy of each) and can be told to fail."""

    def __init__(self, *, fail: Exception | None = None) -> None:
        self.inner = InMemoryEvalResultManager()
        self.saved: builtins.list[EvalSetResult] = []
        self.fail = fail

    async def save(self, app_name: str, result: EvalSetResult) -> str:
        self.saved.append(result.model_copy(deep=True))
        if self.fail is not None:
            raise self.fail
        return await self.inner.save(app_name, result)

    async def get(self, app_name: str, eval_set_result_id: str) -> EvalSetResult:
        return await self.inner.get(app_name, eval_set_result_id)

    async def list(self, app_name: str) -> builtins.list[str]:
        return await self.inner.list(app_name)

    async def close(self) -> None:
        await self.inner.close()


def case_ids(report: EvaluationReport) -> list[str]:
    return [summary.eval_id for summary in report.case_summaries]


def result_ids(report: EvaluationReport) -> list[tuple[int, str]]:
    return [(case.run_id, case.eval_id) for case in report.result.eval_case_results]


def test_recording_manager_is_a_result_manager() -> None:
    assert isinstance(RecordingResultManager(), EvalResultManager)


# ---------------------------------------------------------------------------------------------- run ids and saving


@pytest.mark.parametrize("parallel_runs", [False, True])
def test_run_ids_are_one_to_n_and_evaluate_saves_exactly_once(parallel_runs: bool) -> None:
    results = RecordingResultManager()
    ev = Evaluator(
        APP,
        echo,
        eval_set_manager=fill([make_case("a"), make_case("b")]),
        metric_manager=metric_store([final_response()]),
        result_manager=results,
        num_runs=3,
        parallel_runs=parallel_runs,
    )

    report = ev.evaluate(SET)

    assert result_ids(report) == [(1, "a"), (1, "b"), (2, "a"), (2, "b"), (3, "a"), (3, "b")]
    assert [[run.run_id for run in summary.runs] for summary in report.case_summaries] == [[1, 2, 3], [1, 2, 3]]
    assert len(results.saved) == 1
    saved = results.saved[0]
    assert saved.summary is not None
    assert saved.summary.num_runs == 3
    assert [run.run_id for run in saved.summary.run_summaries] == [1, 2, 3]
    assert [case.run_id for case in saved.eval_case_results] == [1, 1, 2, 2, 3, 3]
    assert report.num_runs == 3
    result_id = report.result.eval_set_result_id
    assert result_id
    assert report.result.eval_set_result_name == result_id
    assert run_sync(results.list(APP)) == [result_id]
    stored = run_sync(results.get(APP, result_id))
    assert stored.eval_case_results == report.result.eval_case_results
    assert stored.summary == report.result.summary
    assert report.execution_time > 0


def test_every_case_of_every_run_has_its_own_session() -> None:
    ev = Evaluator(APP, echo, eval_set_manager=fill([make_case("a"), make_case("b")]), num_runs=2)

    report = ev.evaluate(SET)

    sessions = [case.session_id for case in report.result.eval_case_results]
    assert all(sessions)
    assert len(set(sessions)) == 4
    assert [case.user_id for case in report.result.eval_case_results] == ["user"] * 4


def test_failing_save_raises_save_error_holding_the_complete_report() -> None:
    results = RecordingResultManager(fail=StorageError("disk full"))
    ev = Evaluator(
        APP,
        echo,
        eval_set_manager=fill([make_case("a"), make_case("b")]),
        metric_manager=metric_store([final_response()]),
        result_manager=results,
        num_runs=2,
    )

    with pytest.raises(SaveError, match=r"^save eval set result: disk full$") as caught:
        ev.evaluate(SET)

    assert isinstance(caught.value, StorageError)
    assert isinstance(caught.value.__cause__, StorageError)
    report = caught.value.report
    assert len(results.saved) == 1
    # The id it was to be saved under: saving the report elsewhere keeps it.
    assert report.result.eval_set_result_id.startswith(f"{APP}_{SET}_")
    elsewhere = InMemoryEvalResultManager()
    assert report.save(elsewhere) == report.result.eval_set_result_id
    assert result_ids(report) == [(1, "a"), (1, "b"), (2, "a"), (2, "b")]
    assert case_ids(report) == ["a", "b"]
    assert report.result.summary is not None
    assert report.result.summary.num_runs == 2
    assert report.overall_status == PASSED
    assert [metric.metric_name for metric in report.eval_metrics] == ["final_response_avg_score"]
    assert len(report.inference_results) == 2
    assert report.execution_time > 0
    assert len(report.cases) == 4


def test_any_exception_from_save_becomes_save_error() -> None:
    results = RecordingResultManager(fail=OSError("read-only file system"))
    ev = Evaluator(APP, echo, eval_set_manager=fill([make_case("a")]), result_manager=results)

    with pytest.raises(SaveError, match=r"^save eval set result: read-only file system$") as caught:
        ev.evaluate(SET)

    assert isinstance(caught.value.__cause__, OSError)
    assert case_ids(caught.value.report) == ["a"]


def test_a_summarize_error_means_no_save() -> None:
    def corrupt(context: EvalContext, args: AfterEvaluateCaseArgs) -> None:
        assert args.result is not None
        args.result.final_eval_status = EvalStatus.UNKNOWN

    results = RecordingResultManager()
    ev = Evaluator(
        APP,
        echo,
        eval_set_manager=fill([make_case("a")]),
        result_manager=results,
        callbacks=Callbacks().register_after_evaluate_case("corrupt", corrupt),
    )

    with pytest.raises(AgentEvalError, match=r"^summarize eval set result: unexpected eval status unknown$"):
        ev.evaluate(SET)

    assert results.saved == []


# ---------------------------------------------------------------------------------------------- runs: serial / parallel


def test_runs_are_serial_by_default() -> None:
    log: list[str] = []

    async def agent(text: str) -> str:
        log.append("start")
        await asyncio.sleep(0.01)
        log.append("end")
        return echo(text)

    calls: list[int] = []
    callbacks = Callbacks().register_before_inference_set("count", lambda context, args: calls.append(1))
    ev = Evaluator(APP, agent, eval_set_manager=fill([make_case("a")]), num_runs=3, callbacks=callbacks)

    report = ev.evaluate(SET)

    assert log == ["start", "end"] * 3
    assert len(calls) == 3  # set-level callbacks fire once per run
    assert result_ids(report) == [(1, "a"), (2, "a"), (3, "a")]


def test_parallel_runs_overlap_and_keep_run_order() -> None:
    num_runs = 3
    arrivals: list[int] = []
    everyone_arrived: asyncio.Event | None = None

    async def agent(text: str) -> str:
        # Every run waits here until all runs are inside the agent at once: this only completes
        # when the runs overlap. The first to arrive then leaves last.
        nonlocal everyone_arrived
        if everyone_arrived is None:
            everyone_arrived = asyncio.Event()
        arrivals.append(len(arrivals))
        position = arrivals[-1]
        if len(arrivals) == num_runs:
            everyone_arrived.set()
        await asyncio.wait_for(everyone_arrived.wait(), timeout=10)
        await asyncio.sleep(0.01 * (num_runs - position))
        return echo(text)

    results = RecordingResultManager()
    ev = Evaluator(
        APP,
        agent,
        eval_set_manager=fill([make_case("a")]),
        metric_manager=metric_store([final_response()]),
        result_manager=results,
        num_runs=num_runs,
        parallel_runs=True,
    )

    report = ev.evaluate(SET)

    assert len(arrivals) == num_runs
    assert result_ids(report) == [(1, "a"), (2, "a"), (3, "a")]
    assert report.overall_status == PASSED
    assert len(results.saved) == 1


def test_a_set_level_failure_in_parallel_runs_raises_the_run_error_not_an_exception_group() -> None:
    def boom(context: EvalContext, args: BeforeInferenceSetArgs) -> None:
        raise ValueError("boom")

    results = RecordingResultManager()
    ev = Evaluator(
        APP,
        echo,
        eval_set_manager=fill([make_case("a")]),
        result_manager=results,
        callbacks=Callbacks().register_before_inference_set("boom", boom),
        num_runs=2,
    )

    with pytest.raises(CallbackError, match=r"^run 1: run before inference set callbacks"):
        ev.evaluate(SET)
    # The reference returns the first run error (errgroup) whether runs are serial or parallel.
    with pytest.raises(CallbackError, match=r"^run \d: run before inference set callbacks"):
        ev.evaluate(SET, parallel_runs=True)
    assert results.saved == []


# ---------------------------------------------------------------------------------------------- case order and filters


SHUFFLED = ["m5", "c3", "z0", "a1", "q7", "b2"]


def test_case_summaries_and_results_follow_the_eval_set_order() -> None:
    delays = {eval_id: 0.005 * ((index * 5) % 6) for index, eval_id in enumerate(SHUFFLED)}

    async def agent(text: str) -> str:
        await asyncio.sleep(delays[echo(text)])
        return echo(text)

    ev = Evaluator(
        APP,
        agent,
        eval_set_manager=fill([make_case(eval_id) for eval_id in SHUFFLED]),
        metric_manager=metric_store([final_response()]),
        parallel_inference=True,
        parallel_evaluation=True,
        parallelism=6,
        num_runs=2,
    )

    report = ev.evaluate(SET)

    assert case_ids(report) == SHUFFLED
    assert result_ids(report) == [(run, eval_id) for run in (1, 2) for eval_id in SHUFFLED]
    assert list(report.cases["eval_id"]) == SHUFFLED * 2


def test_an_evaluation_uses_the_eval_set_as_read_when_it_started() -> None:
    manager = fill([make_case(eval_id) for eval_id in SHUFFLED])

    added: list[str] = []

    async def add_late_cases(context: EvalContext, args: BeforeInferenceSetArgs) -> None:
        for eval_id in ("late-b", "late-a"):
            if eval_id not in added:
                await manager.add_case(APP, SET, make_case(eval_id))
                added.append(eval_id)

    ev = Evaluator(
        APP,
        echo,
        eval_set_manager=manager,
        num_runs=2,
        callbacks=Callbacks().register_before_inference_set("grow", add_late_cases),
    )

    report = ev.evaluate(SET)

    assert case_ids(report) == SHUFFLED
    assert result_ids(report) == [(run, eval_id) for run in (1, 2) for eval_id in SHUFFLED]


def test_case_results_missing_from_the_eval_set_come_last_in_lexicographic_order() -> None:
    ordering = EvalSet(eval_set_id=SET, eval_cases=[make_case(eval_id) for eval_id in SHUFFLED])
    results = [
        EvalCaseResult(eval_set_id=SET, eval_id=eval_id, run_id=1, final_eval_status=EvalStatus.PASSED)
        for eval_id in ["late-b", *reversed(SHUFFLED), "late-a"]
    ]
    report = EvaluationReport.from_result(
        EvalSetResult(eval_set_id=SET, eval_case_results=results), app_name=APP, eval_set=ordering
    )
    assert case_ids(report) == [*SHUFFLED, "late-a", "late-b"]


def test_eval_case_ids_restrict_the_cases_in_eval_set_order() -> None:
    ev = Evaluator(APP, echo, eval_set_manager=fill([make_case(eval_id) for eval_id in SHUFFLED]), eval_case_ids=["a1"])

    assert case_ids(ev.evaluate(SET)) == ["a1"]
    # A per-call value replaces the constructor's.
    report = ev.evaluate(SET, eval_case_ids=["b2", "m5"])
    assert case_ids(report) == ["m5", "b2"]
    assert [eval_id for _, eval_id in result_ids(report)] == ["m5", "b2"]


def test_an_unknown_eval_case_id_is_a_config_error_naming_it_before_the_agent_runs() -> None:
    # The reference silently skips unknown ids; a typo would give an empty report.
    calls: list[str] = []
    ev = Evaluator(APP, calls.append, eval_set_manager=fill([make_case("a"), make_case("b")]))

    with pytest.raises(
        ConfigError, match=r"eval_case_ids \['typo'\] are not in eval set set; its cases are \['a', 'b'\]"
    ):
        ev.evaluate(SET, eval_case_ids=["a", "typo"])
    assert calls == []


def test_eval_case_ids_as_a_string_is_a_config_error() -> None:
    with pytest.raises(
        ConfigError, match=r"eval_case_ids must be a list of case ids, got the string 'a'; write \['a'\]"
    ):
        Evaluator(APP, echo, eval_case_ids="a")


def test_an_empty_eval_set_gives_an_empty_not_evaluated_report_that_is_saved() -> None:
    results = RecordingResultManager()
    ev = Evaluator(APP, echo, eval_set_manager=fill([]), result_manager=results)

    report = ev.evaluate(SET)

    assert report.case_summaries == []
    assert report.result.eval_case_results == []
    assert report.overall_status == NOT_EVALUATED
    assert len(results.saved) == 1
    assert report.result.summary is not None
    assert report.result.summary.overall_status == NOT_EVALUATED


# ---------------------------------------------------------------------------------------------- options


def test_per_call_overrides_apply_to_that_call_only() -> None:
    ev = Evaluator(APP, echo, eval_set_manager=fill([make_case("a")]))

    twice = ev.evaluate(SET, num_runs=2)
    once = ev.evaluate(SET)

    assert twice.num_runs == 2
    assert result_ids(twice) == [(1, "a"), (2, "a")]
    assert twice.result.summary is not None and twice.result.summary.num_runs == 2
    assert once.num_runs == 1
    assert result_ids(once) == [(1, "a")]
    assert ev.options.num_runs == 1


def test_per_call_stores_replace_the_constructor_ones() -> None:
    default_results = RecordingResultManager()
    other_results = RecordingResultManager()
    ev = Evaluator(APP, echo, eval_set_manager=fill([make_case("a")]), result_manager=default_results)

    report = ev.evaluate(SET, result_manager=other_results, eval_set_manager=fill([make_case("x"), make_case("y")]))

    assert case_ids(report) == ["x", "y"]
    assert default_results.saved == []
    assert len(other_results.saved) == 1


def test_per_call_aggregator_function_is_used() -> None:
    def always_pass(data: AggregationInput) -> AggregationResult:
        return AggregationResult(score=0.5, status=PASSED)

    ev = Evaluator(APP, lambda text: "wrong", eval_set_manager=fill([make_case("a")]))

    default = ev.evaluate(SET, metrics=[final_response()])
    lenient = ev.evaluate(SET, metrics=[final_response()], aggregator=always_pass)

    assert default.overall_status == FAILED
    # With one run the aggregator's verdict decides the case, though its metric failed.
    assert lenient.overall_status == PASSED
    assert lenient.case_summaries[0].overall_status == PASSED
    assert lenient.case_summaries[0].metric_results[0].eval_status == FAILED
    assert lenient.result.eval_case_results[0].score == 0.5


def test_an_aggregator_class_instead_of_an_instance_is_a_config_error() -> None:
    class Lenient:
        def aggregate(self, data: AggregationInput) -> AggregationResult:
            return AggregationResult(score=1.0, status=PASSED)

    message = "the case aggregator is the class .*Lenient; pass an instance, e.g. .*Lenient\\(\\)"
    with pytest.raises(ConfigError, match=message):
        Evaluator(APP, echo, eval_set_manager=fill([make_case("a")]), aggregator=Lenient)
    ev = Evaluator(APP, echo, eval_set_manager=fill([make_case("a")]))
    with pytest.raises(ConfigError, match=message):
        ev.evaluate(SET, metrics=[final_response()], aggregator=Lenient)


def test_evaluating_an_eval_set_object_leaves_the_users_stores_alone() -> None:
    user_sets = fill([make_case("stored")], set_id="other")
    user_metrics = metric_store([final_response()], set_id="other")
    results = RecordingResultManager()
    ev = Evaluator(APP, echo, eval_set_manager=user_sets, metric_manager=user_metrics, result_manager=results)
    eval_set = EvalSet(eval_set_id="adhoc", eval_cases=[make_case("b"), make_case("a")])

    report = ev.evaluate(eval_set, metrics=[final_response()])

    assert case_ids(report) == ["b", "a"]
    assert report.overall_status == PASSED
    assert report.eval_set_id == "adhoc"
    assert [metric.metric_name for metric in report.eval_metrics] == ["final_response_avg_score"]
    assert results.saved[0].eval_set_id == "adhoc"
    assert run_sync(user_sets.list(APP)) == ["other"]
    assert [case.eval_id for case in run_sync(user_sets.get(APP, "other")).eval_cases] == ["stored"]
    assert run_sync(user_metrics.list(APP, "adhoc")) == []
    assert eval_set.eval_cases[0].creation_timestamp is None  # the caller's object is not modified


def test_an_eval_set_object_without_id_is_a_config_error() -> None:
    ev = Evaluator(APP, echo)

    with pytest.raises(ConfigError, match="evalSetId"):
        ev.evaluate(EvalSet(eval_cases=[make_case("a")]))


def test_metrics_come_from_the_metric_manager_in_its_order() -> None:
    def constant(score: float) -> EvaluatorFunction:
        def evaluate(
            actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
        ) -> EvaluateResult:
            status = PASSED if score >= metric.threshold else FAILED
            return EvaluateResult(
                overall_score=score,
                overall_status=status,
                per_invocation_results=[PerInvocationResult(score=score, status=status) for _ in actuals],
            )

        return evaluate

    registry = default_registry()
    registry.register("zeta", constant(1.0))
    registry.register("alpha", constant(0.5))
    configured = [
        EvalMetric(metric_name="zeta", threshold=1.0),
        final_response(),
        EvalMetric(metric_name="alpha", threshold=0.5),
    ]
    ev = Evaluator(
        APP,
        echo,
        eval_set_manager=fill([make_case("a")]),
        metric_manager=metric_store(configured),
        registry=registry,
    )

    report = ev.evaluate(SET)

    names = ["zeta", "final_response_avg_score", "alpha"]
    assert [metric.metric_name for metric in report.eval_metrics] == names
    assert [metric.metric_name for metric in report.result.eval_case_results[0].overall_eval_metric_results] == names
    assert [metric.metric_name for metric in report.case_summaries[0].metric_results] == names
    assert list(report.metrics["metric_name"]) == names
    assert list(report.metrics["score"]) == [1.0, 1.0, 0.5]


def test_explicit_metrics_replace_the_metric_managers() -> None:
    ev = Evaluator(
        APP,
        lambda text: "wrong",
        eval_set_manager=fill([make_case("a")]),
        metric_manager=metric_store([final_response()]),
    )

    assert ev.evaluate(SET).overall_status == FAILED
    without_metrics = ev.evaluate(SET, metrics=[])
    assert without_metrics.eval_metrics == []
    assert without_metrics.overall_status == NOT_EVALUATED


def test_unknown_eval_set_is_not_found() -> None:
    results = RecordingResultManager()
    ev = Evaluator(APP, echo, eval_set_manager=fill([make_case("a")]), result_manager=results)

    with pytest.raises(NotFoundError, match=r"^get eval set: ") as caught:
        ev.evaluate("missing")

    assert isinstance(caught.value, LookupError)
    assert results.saved == []


def test_empty_eval_set_id_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"^eval set id is not configured$"):
        Evaluator(APP, echo).evaluate("")


@pytest.mark.parametrize("num_runs", [0, -1])
def test_num_runs_must_be_positive(num_runs: int) -> None:
    with pytest.raises(ConfigError, match=f"num_runs must be greater than 0, got {num_runs}"):
        Evaluator(APP, echo, num_runs=num_runs)
    ev = Evaluator(APP, echo, eval_set_manager=fill([make_case("a")]))
    with pytest.raises(ConfigError, match=f"num_runs must be greater than 0, got {num_runs}"):
        ev.evaluate(SET, num_runs=num_runs)


@pytest.mark.parametrize("switches", [{}, {"parallel_inference": True}, {"parallel_runs": True}])
def test_parallelism_must_be_positive_whatever_the_switches(switches: dict[str, bool]) -> None:
    with pytest.raises(ConfigError, match="parallelism must be greater than 0, got 0"):
        Evaluator(APP, echo, parallelism=0, **switches)


@pytest.mark.parametrize("timeout", [0, -1.5])
def test_turn_timeout_must_be_positive(timeout: float) -> None:
    message = f"turn_timeout must be a positive number of seconds or None, got {type(timeout).__name__} {timeout}"
    with pytest.raises(ConfigError, match=message):
        Evaluator(APP, echo, turn_timeout=timeout)


def test_an_unknown_option_is_a_config_error_that_suggests_the_right_name() -> None:
    with pytest.raises(ConfigError, match=r"unknown option 'num_run' \(did you mean 'num_runs'\?\); the options are: "):
        Evaluator(APP, echo, num_run=3)
    ev = Evaluator(APP, echo, eval_set_manager=fill([make_case("a")]))
    with pytest.raises(ConfigError, match=r"unknown option 'zzz'; the options are: .*turn_timeout"):
        ev.evaluate(SET, zzz=1)
    with pytest.raises(ConfigError, match=r"'paralel_runs' \(did you mean 'parallel_runs'\?\)"):
        ev.rescore(ev.evaluate(SET), paralel_runs=True)


def test_a_turn_slower_than_turn_timeout_fails_its_case_only() -> None:
    async def agent(text: str) -> str:
        if text == "say slow":
            await asyncio.sleep(30)
        return text.removeprefix("say ")

    ev = Evaluator(APP, agent, eval_set_manager=fill([make_case("slow"), make_case("quick")]), turn_timeout=0.05)
    started = time.perf_counter()
    report = ev.evaluate(SET, metrics=[final_response()])

    assert time.perf_counter() - started < 5
    statuses = dict(zip(report.cases["eval_id"], report.cases["status"], strict=True))
    messages = dict(zip(report.cases["eval_id"], report.cases["error_message"], strict=True))
    assert statuses == {"slow": "failed", "quick": "passed"}
    # The table leaves out the reference's prefix, which repeats the row's case and session; the result keeps it.
    assert messages["slow"] == "turn 1 timed out after 0.05 s (turn_timeout)"
    saved = {case.eval_id: case.error_message for case in report.result.eval_case_results}
    assert saved["slow"].endswith("): runner run: turn 1 timed out after 0.05 s (turn_timeout)")


def test_a_timeout_error_raised_by_the_agent_itself_is_reported_as_such() -> None:
    def agent(text: str) -> str:
        raise TimeoutError("upstream API")

    ev = Evaluator(APP, agent, eval_set_manager=fill([make_case("a")]), turn_timeout=10)
    report = ev.evaluate(SET)

    [message] = report.cases["error_message"].tolist()
    assert re.fullmatch(r"TimeoutError: upstream API \(raised at \S*test_evaluation\.py:\d+ in agent\)", message)


def test_without_an_agent_trace_cases_evaluate_and_reports_rescore() -> None:
    trace_case = make_case("t").model_copy(
        update={"eval_mode": EvalMode.TRACE, "actual_conversation": [turn("say t", "t")]}
    )
    ev = Evaluator(APP, eval_set_manager=fill([trace_case, make_case("live")]))
    assert ev.runner is None

    report = ev.evaluate(SET, eval_case_ids=["t"], metrics=[final_response()])
    assert report.cases["status"].tolist() == ["passed"]
    assert report.provenance is not None and report.provenance.agent == ""
    rescored = ev.rescore(report, metrics=[final_response(threshold=0.5)])
    assert rescored.cases["status"].tolist() == ["passed"]
    with pytest.raises(ConfigError, match=r"this Evaluator has no agent, and cases \['live'\] run one"):
        ev.evaluate(SET)


def test_bad_app_name_and_agent_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="app name is empty"):
        Evaluator("", echo)
    with pytest.raises(ConfigError, match="the agent must be a Runner or a callable"):
        Evaluator(APP, 42)  # type: ignore[arg-type]


def test_repr_names_the_app_and_runs() -> None:
    text = repr(Evaluator(APP, echo, num_runs=2))
    assert "app_name='app'" in text
    assert "num_runs=2" in text


# ---------------------------------------------------------------------------------------------- multi-run aggregation


def flaky_agent() -> Callable[[str], str]:
    """Answers wrongly the first time it sees a message, correctly afterwards."""
    seen: set[str] = set()
    lock = threading.Lock()

    def agent(text: str) -> str:
        with lock:
            first = text not in seen
            seen.add(text)
        return "wrong" if first else echo(text)

    return agent


@pytest.mark.parametrize(
    ("threshold", "expected"),
    [(0.5, PASSED), (1.0, FAILED)],
)
def test_two_runs_where_run_one_fails_and_run_two_passes(threshold: float, expected: EvalStatus) -> None:
    ev = Evaluator(
        APP,
        flaky_agent(),
        eval_set_manager=fill([make_case("a")]),
        metric_manager=metric_store([final_response(threshold)]),
        num_runs=2,
    )

    report = ev.evaluate(SET)

    summary = report.case_summaries[0]
    assert [run.final_eval_status for run in summary.runs] == [FAILED, PASSED]
    assert [run.score for run in summary.runs] == [0.0, 1.0]
    assert len(summary.metric_results) == 1
    averaged = summary.metric_results[0]
    assert averaged.metric_name == "final_response_avg_score"
    assert averaged.score == pytest.approx(0.5)
    assert averaged.threshold == threshold
    assert averaged.eval_status == expected
    assert summary.overall_status == expected
    assert report.overall_status == expected
    assert report.passed is (expected == PASSED)
    saved_summary = report.result.summary
    assert saved_summary is not None
    assert saved_summary.run_status_counts is not None
    assert (saved_summary.run_status_counts.passed, saved_summary.run_status_counts.failed) == (1, 1)
    assert saved_summary.eval_case_summaries[0].overall_status == expected
    # The eval-set level counts whole-set runs: n = 2 runs, c = 1 passed.
    assert report.set_pass_at_k(1) == pytest.approx(0.5)
    assert report.set_pass_at_k(2) == pytest.approx(1.0)
    assert report.set_pass_hat_k(1) == pytest.approx(0.5)
    assert report.set_pass_hat_k(2) == pytest.approx(0.25)
    # Per case (one case here): the same pass@k; pass^2 is C(1, 2) / C(2, 2), no two runs both passed.
    assert report.pass_at_k(1) == pytest.approx(0.5)
    assert report.pass_at_k(2) == pytest.approx(1.0)
    assert report.pass_hat_k(2) == 0.0


def test_pass_k_of_an_always_passing_and_an_always_failing_agent() -> None:
    cases = fill([make_case("a"), make_case("b")])
    metrics = metric_store([final_response()])
    good = Evaluator(APP, echo, eval_set_manager=cases, metric_manager=metrics, num_runs=3).evaluate(SET)
    bad = Evaluator(APP, lambda text: "no", eval_set_manager=cases, metric_manager=metrics, num_runs=3).evaluate(SET)

    assert (good.pass_at_k(1), good.pass_at_k(3), good.pass_hat_k(3)) == (1.0, 1.0, 1.0)
    assert (bad.pass_at_k(1), bad.pass_at_k(3), bad.pass_hat_k(3)) == (0.0, 0.0, 0.0)
    with pytest.raises(ConfigError):
        good.pass_at_k(4)


def test_a_case_whose_agent_raises_is_failed_even_without_metrics() -> None:
    calls = 0

    def agent(text: str) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("model overloaded")
        return echo(text)

    ev = Evaluator(APP, agent, eval_set_manager=fill([make_case("a")]), num_runs=2)

    report = ev.evaluate(SET)

    first, second = report.case_summaries[0].runs
    assert first.final_eval_status == FAILED
    assert "RuntimeError: model overloaded" in first.error_message
    assert second.final_eval_status == NOT_EVALUATED
    assert report.case_summaries[0].metric_results == []
    assert report.case_summaries[0].overall_status == FAILED


def test_a_case_whose_aggregator_raises_in_every_run_is_failed() -> None:
    def broken(data: AggregationInput) -> AggregationResult:
        raise ValueError("boom")

    ev = Evaluator(
        APP,
        echo,
        eval_set_manager=fill([make_case("a")]),
        metric_manager=metric_store([final_response()]),
        aggregator=broken,
        num_runs=2,
    )

    report = ev.evaluate(SET)

    summary = report.case_summaries[0]
    for run in summary.runs:
        assert run.final_eval_status == FAILED
        assert run.error_message.startswith("aggregate eval case result: ValueError: boom (raised at ")
        # Kept so that a corrected aggregator can be tried without scoring again.
        assert [m.eval_status for m in run.overall_eval_metric_results] == [PASSED]
    assert summary.metric_results == []
    assert summary.overall_status == FAILED
    assert report.overall_status == FAILED
    saved = report.result.summary
    assert saved is not None
    assert saved.overall_status == FAILED
    (case_summary,) = saved.eval_case_summaries
    assert case_summary.overall_status == FAILED
    assert case_summary.metric_summaries == []
    assert [run.metric_summaries for run in saved.run_summaries] == [[], []]


def test_an_errored_run_does_not_count_in_the_metric_averages() -> None:
    calls = 0

    def fails_first(data: AggregationInput) -> AggregationResult:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ValueError("boom")
        return AggregationResult(score=1.0, status=PASSED)

    ev = Evaluator(
        APP,
        flaky_agent(),
        eval_set_manager=fill([make_case("a")]),
        metric_manager=metric_store([final_response()]),
        aggregator=fails_first,
        num_runs=2,
    )

    report = ev.evaluate(SET)

    summary = report.case_summaries[0]
    assert [run.final_eval_status for run in summary.runs] == [FAILED, PASSED]
    (averaged,) = summary.metric_results
    assert (averaged.score, averaged.eval_status) == (1.0, PASSED)
    assert summary.overall_status == PASSED
    saved = report.result.summary
    assert saved is not None
    (metric_summary,) = saved.eval_case_summaries[0].metric_summaries
    assert (metric_summary.average_score, metric_summary.eval_status) == (1.0, PASSED)
    assert saved.eval_case_summaries[0].overall_status == PASSED


# ---------------------------------------------------------------------------------------------- the bundled example


def test_math_example_end_to_end_with_local_stores(tmp_path: Path) -> None:
    results = LocalEvalResultManager(tmp_path)
    ev = Evaluator(
        APP_NAME,
        calculator_agent,
        eval_set_manager=LocalEvalSetManager(DATA_DIR),
        metric_manager=LocalMetricManager(DATA_DIR),
        result_manager=results,
    )

    report = ev.evaluate(EVAL_SET_ID)

    statuses = {summary.eval_id: summary.overall_status for summary in report.case_summaries}
    assert statuses == {
        "calc_add": PASSED,
        "calc_multiply": PASSED,
        "calc_divide_by_zero": PASSED,
        "calc_follow_up": PASSED,
        "calc_power": FAILED,
    }
    assert case_ids(report) == ["calc_add", "calc_multiply", "calc_divide_by_zero", "calc_follow_up", "calc_power"]
    assert report.overall_status == FAILED
    assert [metric.metric_name for metric in report.eval_metrics] == [
        "tool_trajectory_avg_score",
        "final_response_avg_score",
    ]
    power = report.result.eval_case_results[-1]
    reasons = {
        metric.metric_name: metric.details.reason for metric in power.overall_eval_metric_results if metric.details
    }
    assert "tool trajectory mismatch" in reasons["tool_trajectory_avg_score"]
    assert "number of tool calls mismatch" in reasons["tool_trajectory_avg_score"]
    assert "calculator" in reasons["tool_trajectory_avg_score"]
    assert "final response mismatch" in reasons["final_response_avg_score"]
    follow_up = report.result.eval_case_results[3]
    assert [
        len(turn.actual_invocation.tools)
        for turn in follow_up.eval_metric_result_per_invocation
        if turn.actual_invocation
    ] == [1, 1]

    result_id = report.result.eval_set_result_id
    assert (tmp_path / APP_NAME / f"{result_id}.evalset_result.json").is_file()
    loaded = run_sync(results.get(APP_NAME, result_id))
    assert loaded.eval_set_result_id == result_id
    assert loaded.eval_set_id == EVAL_SET_ID
    assert loaded.eval_case_results == report.result.eval_case_results
    assert loaded.summary == report.result.summary
    assert loaded.creation_timestamp is not None
    assert run_sync(results.list(APP_NAME)) == [result_id]


# ---------------------------------------------------------------------------------------------- case-level concurrency


def test_fifty_cases_of_200ms_with_parallelism_10_run_concurrently_in_order() -> None:
    ids = [f"case-{(index * 17) % 50:02d}" for index in range(50)]
    active = peak = 0

    async def agent(text: str) -> str:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.2)
        active -= 1
        return echo(text)

    ev = Evaluator(
        APP,
        agent,
        eval_set_manager=fill([make_case(eval_id) for eval_id in ids]),
        metric_manager=metric_store([final_response()]),
        parallel_inference=True,
        parallelism=10,
    )

    started = time.perf_counter()
    report = ev.evaluate(SET)
    elapsed = time.perf_counter() - started

    serial = 50 * 0.2
    assert elapsed < 0.5 * serial, f"took {elapsed:.2f}s, serial would be {serial:.0f}s"
    assert peak == 10
    assert [case.eval_id for case in report.result.eval_case_results] == ids
    assert case_ids(report) == ids
    assert report.overall_status == PASSED


def test_a_blocking_sync_agent_runs_in_worker_threads_in_parallel() -> None:
    ids = [f"case-{index:02d}" for index in range(20)]
    lock = threading.Lock()
    active = peak = 0
    threads: set[int] = set()

    def agent(text: str) -> str:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
            threads.add(threading.get_ident())
        time.sleep(0.1)
        with lock:
            active -= 1
        return echo(text)

    ev = Evaluator(
        APP,
        agent,
        eval_set_manager=fill([make_case(eval_id) for eval_id in ids]),
        parallel_inference=True,
        parallelism=5,
    )

    started = time.perf_counter()
    report = ev.evaluate(SET)
    elapsed = time.perf_counter() - started

    assert elapsed < 0.5 * 20 * 0.1
    assert peak == 5
    assert threading.get_ident() not in threads
    assert case_ids(report) == ids
    assert all(case.error_message == "" for case in report.result.eval_case_results)


def test_a_blocking_sync_agent_gets_the_configured_parallelism() -> None:
    # 40 blocking calls must all be in flight at once for any of them to finish: the barrier
    # breaks (and every case fails) when fewer threads than ``parallelism`` serve the agent.
    parallelism = 40
    barrier = threading.Barrier(parallelism, timeout=1.0)

    def agent(text: str) -> str:
        barrier.wait()
        return echo(text)

    ids = [f"case-{index:02d}" for index in range(parallelism)]
    ev = Evaluator(
        APP,
        agent,
        eval_set_manager=fill([make_case(eval_id) for eval_id in ids]),
        parallel_inference=True,
        parallelism=parallelism,
    )

    report = ev.evaluate(SET)

    errors = [case.error_message for case in report.result.eval_case_results if case.error_message]
    assert errors == []


@pytest.mark.asyncio
async def test_aevaluate_in_a_running_loop() -> None:
    manager = await afill([make_case("a"), make_case("b")])

    async def agent(text: str) -> str:
        await asyncio.sleep(0)
        return echo(text)

    ev = Evaluator(APP, agent, eval_set_manager=manager, num_runs=2, parallel_inference=True, parallel_runs=True)

    report = await ev.aevaluate(SET, metrics=[final_response()])

    assert report.overall_status == PASSED
    assert result_ids(report) == [(1, "a"), (1, "b"), (2, "a"), (2, "b")]
    assert report.result.eval_set_result_id
    await ev.aclose()


# ---------------------------------------------------------------------------------------------- Jupyter: a running loop


NESTED_LOOP_SCRIPT = textwrap.dedent(
    """
    import asyncio
    import json

    import agenteval as ae
    from agenteval.examples.math import APP_NAME, DATA_DIR, EVAL_SET_ID, calculator_agent

    agent_loops = set()

    async def agent(message, turn):
        agent_loops.add(id(asyncio.get_running_loop()))
        return calculator_agent(message, turn)

    def outcome(report):
        return {
            "status": str(report.overall_status),
            "failed": [c.eval_id for c in report.case_summaries if c.overall_status == "failed"],
            "passed": sum(c.overall_status == "passed" for c in report.case_summaries),
            "saved": bool(report.result.eval_set_result_id),
            "runs": sorted({c.run_id for c in report.result.eval_case_results}),
        }

    async def kernel():
        loop = asyncio.get_running_loop()
        ev = ae.Evaluator(
            APP_NAME,
            agent,
            eval_set_manager=ae.LocalEvalSetManager(DATA_DIR),
            metric_manager=ae.LocalMetricManager(DATA_DIR),
            parallel_inference=True,
            num_runs=2,
        )
        reports = [ev.evaluate(EVAL_SET_ID), ev.evaluate(EVAL_SET_ID)]
        reports.append(await ev.aevaluate(EVAL_SET_ID))
        # A notebook cell also runs as a plain callback of the kernel's loop.
        cell = loop.create_future()

        def run_cell():
            try:
                cell.set_result(ev.evaluate(EVAL_SET_ID, num_runs=1))
            except BaseException as exc:
                cell.set_exception(exc)

        loop.call_soon(run_cell)
        reports.append(await cell)
        return {
            "reports": [outcome(report) for report in reports],
            "same_loop": agent_loops == {id(loop)},
            "still_running": asyncio.get_running_loop() is loop,
        }

    print(json.dumps(asyncio.run(kernel())))
    """
)


def run_python(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_sync_evaluate_inside_a_running_event_loop(tmp_path: Path) -> None:
    completed = run_python(NESTED_LOOP_SCRIPT, tmp_path)

    assert completed.returncode == 0, completed.stderr
    outcome = json.loads(completed.stdout.strip().splitlines()[-1])
    expected = {"status": "failed", "failed": ["calc_power"], "passed": 4, "saved": True, "runs": [1, 2]}
    assert outcome["reports"] == [expected, expected, expected, {**expected, "runs": [1]}]
    assert outcome["same_loop"] is True
    assert outcome["still_running"] is True
