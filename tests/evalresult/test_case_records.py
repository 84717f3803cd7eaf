"""Case results held as records: written once as they finish, read back exactly, saved as written."""

from __future__ import annotations

import dataclasses
import gc
import json
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

import agenteval as ae
from agenteval._util.sync_bridge import run_sync
from agenteval.errors import ConfigError, SaveError, report_of
from agenteval.evalresult._prepare import recorded_pieces, result_json, streamed_pieces
from agenteval.evalresult.local import load_result_file
from agenteval.evalresult.models import EvalCaseResult, EvalMetricResultPerInvocation, EvalSetResult
from agenteval.evalresult.records import CaseRecord, metric_results_of
from agenteval.evalresult.summarize import run_row
from agenteval.evaluation.run import EvaluationRun
from agenteval.service import AfterEvaluateCaseArgs, AfterEvaluateSetArgs, EvalSetRunResult
from tests.evalresult._data import INTEROP_RESULTS, make_result

APP = "records_app"
METRICS = [ae.EvalMetric.final_response(), ae.EvalMetric.rouge(f1=0.5)]


def words(count: int) -> ae.EvalSet:
    # Every third reply is wrong, so that reasons, failures and partial scores are in the results.
    return ae.EvalSet.of(
        "words", [ae.EvalCase.of(f"c{i}", f"w{i}", expect=f"W{i}" if i % 3 else "other") for i in range(count)]
    )


def _case_results() -> list[EvalCaseResult]:
    cases = [case for path in INTEROP_RESULTS for case in load_result_file(path).eval_case_results]
    cases += make_result(eval_set_result_id="r").eval_case_results
    cases.append(EvalCaseResult.model_validate({"evalId": "extra", "someNewKey": {"a": [1, 0.1, 1e-7]}, "score": 1.0}))
    return cases


@pytest.mark.parametrize("indent", [None, 2, 4])
def test_a_record_writes_the_case_result_as_to_json_does(indent: int | None) -> None:
    for case in _case_results():
        record = CaseRecord(case)
        assert record.text(indent) == case.to_json(indent=indent)
        assert not record.read  # laid out without reading the case result


def test_a_record_reads_back_the_case_result_and_its_row() -> None:
    for case in _case_results():
        record = CaseRecord(case)
        assert not record.read
        assert record.model == case
        assert record.read and record.model is record.model
        assert record.row == run_row(case)


def test_a_case_result_a_record_handed_out_is_written_as_it_is_now() -> None:
    case = make_result(eval_set_result_id="r").eval_case_results[0]
    record = CaseRecord(case.model_copy(deep=True))
    record.model.user_id = "edited"
    assert json.loads(record.text(None))["userId"] == "edited"


def test_a_case_result_that_cannot_be_written_is_named_by_its_path_when_saved() -> None:
    case = EvalCaseResult(eval_id="second")
    case.score = float("nan")
    record = CaseRecord(case)
    shell = make_result(eval_set_result_id="r").replaced(eval_case_results=[])
    first = CaseRecord(make_result(eval_set_result_id="r").eval_case_results[0])
    with pytest.raises(ConfigError, match=r"evalCaseResults\[1\]\.score is not a finite number"):
        recorded_pieces(shell, [first, record])


@pytest.mark.parametrize("indent", [None, 2])
def test_the_pieces_of_records_make_the_whole_text(indent: int | None) -> None:
    result = make_result(eval_set_result_id="r")
    result.eval_case_results = _case_results()
    records = [CaseRecord(case) for case in result.eval_case_results]
    pieces = recorded_pieces(result.replaced(eval_case_results=[]), records, indent=indent)
    assert "".join(pieces) == result_json(result, indent=indent)


@pytest.mark.parametrize("indent", [None, 2])
def test_streamed_pieces_write_the_result_as_it_was_when_asked_for_them(indent: int | None) -> None:
    # A local store iterates them in the thread that writes the file, after the call returned.
    result = make_result(eval_set_result_id="r")
    result.eval_case_results = _case_results()
    records = [CaseRecord(case.model_copy(deep=True)) for case in result.eval_case_results]
    records[1].model  # noqa: B018 - a read record is written from its model
    shell = result.replaced(eval_case_results=[])

    pieces = streamed_pieces(shell, records, indent=indent)
    for record in records[:2]:
        record.model.user_id = "edited later"
    shell.eval_set_result_name = "renamed later"

    assert "".join(pieces) == result_json(result, indent=indent)


def _frames(report: ae.EvaluationReport) -> list[Any]:
    return [report.cases, report.metrics, report.case_table]


@pytest.mark.parametrize("num_runs", [1, 3])
def test_a_fresh_report_reads_as_its_models_and_its_saved_file_do(tmp_path: Path, num_runs: int) -> None:
    store = ae.LocalEvalResultManager(tmp_path)
    report = ae.Evaluator(APP, str.upper, result_manager=store, progress=False, num_runs=num_runs).evaluate(
        words(7), metrics=METRICS
    )
    assert "result" not in report.__dict__  # the records are not read yet
    fresh = _frames(report)
    assert report.case_statuses == {summary.eval_id: summary.overall_status for summary in report.case_summaries}
    loaded = ae.EvaluationReport.load(tmp_path / APP / f"{report.result.eval_set_result_id}.evalset_result.json")
    for before, after, from_file in zip(fresh, _frames(report), _frames(loaded), strict=True):
        assert before.equals(after) and before.equals(from_file)
    assert report.overall_status == loaded.overall_status == ae.EvalStatus.FAILED


def test_the_saved_file_is_the_result_written_whole(tmp_path: Path) -> None:
    store = ae.LocalEvalResultManager(tmp_path)
    report = ae.Evaluator(APP, str.upper, result_manager=store, progress=False).evaluate(words(5), metrics=METRICS)
    path = tmp_path / APP / f"{report.result.eval_set_result_id}.evalset_result.json"
    text = path.read_text()
    assert text == load_result_file(path).to_json(indent=2) + "\n"
    saved = json.loads(text)
    del saved["creationTimestamp"]
    assert saved == json.loads(report.result.to_json(indent=None))


def test_the_in_memory_store_keeps_the_result_the_report_reads() -> None:
    store = ae.InMemoryEvalResultManager()
    report = ae.Evaluator(APP, str.upper, result_manager=store, progress=False).evaluate(words(4), metrics=METRICS)
    stored = run_sync(store.get(APP, report.result.eval_set_result_id))
    assert stored.replaced(creation_timestamp=None).to_json() == report.result.to_json()


def test_an_after_evaluate_set_callback_s_edit_of_a_result_is_saved_and_shown(tmp_path: Path) -> None:
    def edit(context: ae.EvalContext, args: AfterEvaluateSetArgs) -> None:
        assert args.result is not None
        args.result.eval_case_results[1].user_id = "edited"

    store = ae.LocalEvalResultManager(tmp_path)
    callbacks = ae.Callbacks().register_after_evaluate_set("edit", edit)
    report = ae.Evaluator(APP, str.upper, result_manager=store, progress=False, callbacks=callbacks).evaluate(
        words(3), metrics=METRICS
    )
    assert report.cases.set_index("eval_id").loc["c1", "user_id"] == "edited"
    loaded = ae.EvaluationReport.load(tmp_path / APP / f"{report.result.eval_set_result_id}.evalset_result.json")
    assert [case.user_id for case in loaded.result.eval_case_results] == [
        case.user_id for case in report.result.eval_case_results
    ]
    assert loaded.result.eval_case_results[1].user_id == "edited"


def _case_result_models() -> int:
    gc.collect()
    return sum(type(item) is EvalCaseResult for item in gc.get_objects())


def test_an_evaluation_holds_no_case_result_models_once_done() -> None:
    before = _case_result_models()
    report = ae.Evaluator(APP, str.upper, progress=False).evaluate(words(30), metrics=METRICS)
    assert _case_result_models() <= before
    assert len(report.cases) == 30
    assert len(report.result.eval_case_results) == 30  # read when asked for


def test_a_multi_run_custom_aggregator_sees_each_run_s_whole_case_result() -> None:
    seen: list[tuple[str, int]] = []

    def mean_score(data: ae.AggregationInput) -> ae.AggregationResult:
        for run in data.runs:
            seen.append((run.eval_id, len(run.eval_metric_result_per_invocation)))
        score = sum(result.score or 0.0 for result in data.metric_results) / max(len(data.metric_results), 1)
        return ae.AggregationResult(score=score, status=ae.EvalStatus.PASSED if score >= 0.5 else ae.EvalStatus.FAILED)

    report = ae.Evaluator(APP, str.upper, progress=False, num_runs=2, aggregator=mean_score).evaluate(
        words(3), metrics=METRICS
    )
    assert sorted(seen) == [("c0", 1), ("c0", 1), ("c1", 1), ("c1", 1), ("c2", 1), ("c2", 1)]
    assert report.result.summary is not None
    recorded = {summary.eval_id: summary.overall_score for summary in report.result.summary.eval_case_summaries}
    assert recorded == {summary.eval_id: summary.score for summary in report.case_summaries}


def test_a_result_of_no_case_saves_as_one_piece() -> None:
    shell = EvalSetResult(eval_set_id="s", eval_set_result_id="r")
    assert recorded_pieces(shell, []) == [result_json(shell)]


def test_a_record_s_metric_results_read_alone_are_the_case_result_s() -> None:
    tricky = (
        make_result(eval_set_result_id="r")
        .eval_case_results[0]
        .model_copy(update={"error_message": 'said "overallEvalMetricResults": [1, 2] and ]}'})
    )
    for case in [*_case_results(), tricky, EvalCaseResult(eval_id="none")]:
        record = CaseRecord(case)
        assert metric_results_of(record.metrics_text()) == case.overall_eval_metric_results
        record.model.overall_eval_metric_results = []
        assert metric_results_of(record.metrics_text()) == []


def test_saving_a_fresh_report_to_a_local_store_reads_no_case_result(tmp_path: Path) -> None:
    report = ae.Evaluator(APP, str.upper, progress=False).evaluate(words(6), metrics=METRICS)
    result_id = report.save(ae.LocalEvalResultManager(tmp_path))
    recorded = report._unread()
    assert recorded is not None and not any(record.read for record in recorded.recorded)  # type: ignore[attr-defined]
    text = (tmp_path / APP / f"{result_id}.evalset_result.json").read_text()
    saved = json.loads(text)
    del saved["creationTimestamp"]
    assert saved == json.loads(report.result.to_json(indent=None))
    assert text == load_result_file(tmp_path / APP / f"{result_id}.evalset_result.json").to_json(indent=2) + "\n"


def test_a_store_that_overrides_save_has_its_save_called(tmp_path: Path) -> None:
    calls: list[str] = []

    class TaggingStore(ae.LocalEvalResultManager):
        async def save(self, app_name: str, result: EvalSetResult | None) -> str:
            assert result is not None
            calls.append("local")
            return await super().save(app_name, result.model_copy(update={"eval_set_result_name": "tagged"}))

    class AuditedStore(ae.InMemoryEvalResultManager):
        async def save(self, app_name: str, result: EvalSetResult | None) -> str:
            calls.append("memory")
            return await super().save(app_name, result)

    report = ae.Evaluator(APP, str.upper, result_manager=TaggingStore(tmp_path), progress=False).evaluate(
        words(3), metrics=METRICS
    )
    saved = json.loads((tmp_path / APP / f"{report.result.eval_set_result_id}.evalset_result.json").read_text())
    assert saved["evalSetResultName"] == "tagged"
    report.save(AuditedStore())
    assert calls == ["local", "memory"]


def test_an_after_evaluate_set_callback_may_reorder_drop_and_replace_results() -> None:
    def edit(context: ae.EvalContext, args: AfterEvaluateSetArgs) -> None:
        assert args.result is not None
        cases = args.result.eval_case_results
        assert isinstance(cases, list)
        cases.sort(key=lambda case: case.eval_id, reverse=True)
        cases.pop()
        cases[0] = cases[0].model_copy(update={"user_id": "replaced"})

    store = ae.InMemoryEvalResultManager()
    callbacks = ae.Callbacks().register_after_evaluate_set("edit", edit)
    report = ae.Evaluator(APP, str.upper, result_manager=store, progress=False, callbacks=callbacks).evaluate(
        words(3), metrics=METRICS
    )
    stored = run_sync(store.get(APP, report.result.eval_set_result_id))
    assert [(case.eval_id, case.user_id == "replaced") for case in stored.eval_case_results] == [
        ("c2", True),
        ("c1", False),
    ]
    assert sorted(report.cases["eval_id"]) == ["c1", "c2"]


def test_a_case_without_metric_results_has_none_though_a_tool_returned_that_key() -> None:
    turn = ae.Invocation(
        user_content=ae.Message.user("q"),
        tools=[ae.Tool(name="t", result={"overallEvalMetricResults": [{"metricName": "m", "score": 1}]})],
    )
    case = EvalCaseResult(
        eval_id="c",
        final_eval_status=ae.EvalStatus.NOT_EVALUATED,
        eval_metric_result_per_invocation=[EvalMetricResultPerInvocation(actual_invocation=turn)],
    )
    assert CaseRecord(case).metrics_text() == "[]"


def mean_score(data: ae.AggregationInput) -> ae.AggregationResult:
    """An aggregator that reads the metric scores only."""
    score = sum(result.score or 0.0 for result in data.metric_results) / max(len(data.metric_results), 1)
    return ae.AggregationResult(score=score, status=ae.EvalStatus.PASSED if score >= 0.5 else ae.EvalStatus.FAILED)


@pytest.mark.parametrize("aggregator", [None, mean_score], ids=["default", "reads-scores-only"])
def test_several_runs_are_decided_without_reading_the_case_results(aggregator: Any) -> None:
    options: dict[str, Any] = {} if aggregator is None else {"aggregator": aggregator}
    report = ae.Evaluator(APP, str.upper, progress=False, num_runs=3, **options).evaluate(words(6), metrics=METRICS)
    recorded = report._unread()
    assert recorded is not None and not any(record.read for record in recorded.recorded)  # type: ignore[attr-defined]
    assert report.case_statuses == {summary.eval_id: summary.overall_status for summary in report.case_summaries}


def test_a_result_a_callback_broke_is_refused_when_saved_naming_the_field() -> None:
    # None in a text field was written as null, saved, and then could not be read back by any reader.
    def break_it(context: ae.EvalContext, args: AfterEvaluateCaseArgs) -> None:
        if args.result is not None and args.result.eval_id == "c1":
            args.result.user_id = None  # type: ignore[assignment]

    callbacks = ae.Callbacks().register_after_evaluate_case("break", break_it)
    results = ae.InMemoryEvalResultManager()
    evaluator = ae.Evaluator(APP, str.upper, progress=False, callbacks=callbacks, result_manager=results)
    with pytest.raises(
        SaveError, match=r"evalCaseResults\[1\]\.userId holds None, which its type does not allow"
    ) as caught:
        evaluator.evaluate(words(3), metrics=METRICS)
    assert run_sync(results.list(APP)) == []
    report = report_of(caught.value)
    assert report is not None
    assert [case.user_id for case in report.result.eval_case_results] == ["user", None, "user"]


def test_a_finished_result_edited_after_the_run_shows_in_the_tables() -> None:
    async def evaluate() -> tuple[EvaluationRun, ae.EvaluationReport]:
        run = ae.Evaluator(APP, str.upper, progress=False).start(words(3), metrics=METRICS)
        return run, await run

    run, report = run_sync(evaluate())
    run.finished_results[0].user_id = "edited"
    assert "edited" in set(report.cases["user_id"])
    assert "edited" in {case.user_id for case in report.result.eval_case_results}


def test_an_after_evaluate_set_callback_that_does_not_read_the_results_leaves_them_unread() -> None:
    seen: list[float] = []

    def timing(context: ae.EvalContext, args: AfterEvaluateSetArgs) -> None:
        seen.append(args.start_time)

    callbacks = ae.Callbacks().register_after_evaluate_set("timing", timing)
    report = ae.Evaluator(APP, str.upper, progress=False, callbacks=callbacks).evaluate(words(5), metrics=METRICS)
    recorded = report._unread()
    assert seen and recorded is not None
    assert not any(record.read for record in recorded.recorded)  # type: ignore[attr-defined]


def test_a_store_that_overrides_save_recorded_alone_keeps_the_records_unread() -> None:
    class TimedStore(ae.InMemoryEvalResultManager):
        calls = 0

        async def save_recorded(self, app_name: str, result: EvalSetResult | None, records: Any) -> str:
            TimedStore.calls += 1
            return await super().save_recorded(app_name, result, records)

    report = ae.Evaluator(APP, str.upper, result_manager=TimedStore(), progress=False).evaluate(
        words(4), metrics=METRICS
    )
    recorded = report._unread()
    assert TimedStore.calls == 1 and recorded is not None
    assert not any(record.read for record in recorded.recorded)  # type: ignore[attr-defined]


def test_a_patched_or_synchronous_save_is_the_one_called() -> None:
    class SyncTwin(ae.InMemoryEvalResultManager):
        def save_recorded(self, app_name: str, result: Any, records: Any) -> str:  # type: ignore[override]
            raise AssertionError("a synchronous save_recorded is not awaited")

    report = ae.Evaluator(APP, str.upper, progress=False).evaluate(words(3), metrics=METRICS)
    patched = ae.InMemoryEvalResultManager()
    with mock.patch.object(patched, "save", wraps=patched.save) as save:
        result_id = report.save(patched)
    assert save.call_count == 1
    assert run_sync(patched.get(APP, result_id)).eval_case_results == report.result.eval_case_results
    assert report.save(SyncTwin()) == result_id


def test_a_run_result_replaced_or_compared_in_a_callback_is_a_run_result() -> None:
    seen: list[bool] = []

    def check(context: ae.EvalContext, args: AfterEvaluateSetArgs) -> None:
        assert args.result is not None
        copy = dataclasses.replace(args.result, app_name="other")
        plain = EvalSetRunResult(
            app_name=args.result.app_name,
            eval_set_id=args.result.eval_set_id,
            eval_case_results=list(args.result.eval_case_results),
        )
        seen.extend([copy.app_name == "other", copy.eval_case_results == plain.eval_case_results])
        seen.extend([args.result == plain, plain == args.result, args.result != copy])

    callbacks = ae.Callbacks().register_after_evaluate_set("check", check)
    ae.Evaluator(APP, str.upper, progress=False, callbacks=callbacks).evaluate(words(3), metrics=METRICS)
    assert seen == [True] * 5


def _stored_summary(store: ae.InMemoryEvalResultManager, result_id: str) -> Any:
    summary = run_sync(store.get(APP, result_id)).summary
    assert summary is not None
    return summary.model_dump(exclude={"provenance"})


def test_the_saved_summary_follows_case_results_an_aggregator_or_the_user_changed() -> None:
    def bump(data: ae.AggregationInput) -> ae.AggregationResult:
        run = data.runs[0]
        run.overall_eval_metric_results[0].score = 0.25
        return ae.AggregationResult(score=0.5, status=ae.EvalStatus.PASSED)

    store = ae.InMemoryEvalResultManager()
    report = ae.Evaluator(APP, str.upper, progress=False, num_runs=3, aggregator=bump, result_manager=store).evaluate(
        words(3), metrics=METRICS
    )
    result = report.result
    assert result.summary is not None
    assert _stored_summary(store, result.eval_set_result_id) == result.summary.model_dump(exclude={"provenance"})

    async def evaluate() -> tuple[EvaluationRun, ae.EvaluationReport]:
        run = ae.Evaluator(APP, str.upper, progress=False).start(words(3), metrics=METRICS)
        return run, await run

    run, fresh = run_sync(evaluate())
    run.finished_results[1].final_eval_status = ae.EvalStatus.FAILED
    other = ae.InMemoryEvalResultManager()
    result_id = fresh.save(other)
    expected = fresh.result.summary
    assert expected is not None
    assert _stored_summary(other, result_id) == expected.model_dump(exclude={"provenance"})
