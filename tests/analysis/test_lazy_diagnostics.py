"""Failures, flakiness, rubric scores and the plots read only the records they need, and give what reading all does.

A report of a fresh evaluation, or loaded from a file, reads the record of a case result only when its
failures may be in its turns (it failed, a metric failed, or a turn may have failed a metric that passed
overall), when ``first_divergence`` compares its turns with another run's, or when it may hold rubric
scores; a case result that failed with an error is its row.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import matplotlib
import pandas as pd
import pytest

import agenteval as ae
from agenteval.analysis.report import report_from_result
from agenteval.evalresult.local import ResultIndex, load_result_file
from agenteval.evalresult.models import EvalCaseResult
from agenteval.evalresult.records import CaseRecord
from agenteval.evalset.models import RubricContent
from agenteval.metric.criterion import Criterion, LLMCriterion, Rubric
from agenteval.notebook import plotting
from agenteval.testing import FunctionChatModel

APP = "diagnostics-app"


def _weather(city: str) -> str:
    return {"Paris": "Sunny", "Rome": "Rain"}.get(city, "Fog")


def _call(city: str) -> ae.Tool:
    return ae.Tool(name="weather", arguments={"city": city})


CASES = ae.EvalSet.of(
    "diagnostics-set",
    [
        ae.EvalCase.of("paris", "Weather in Paris?", expect="Sunny", tools=[_call("Paris")]),
        ae.EvalCase.of("rome", "Weather in Rome?", expect="Showers", tools=[_call("Rome")]),  # a wrong reply
        ae.EvalCase.of("oslo", "Weather in Oslo?", expect="Fog", tools=[_call("Oslo")]),  # a wrong call
        ae.EvalCase.of("boom", "Explode, please", expect="Bang"),  # the agent raises
        # Turn 2's reply is wrong: "mentions" averages 0.5 over the turns, which passes, and its turn 2 fails.
        ae.EvalCase.of(
            "trip",
            ae.Invocation.of("Weather in Paris?", "Sunny", tools=[_call("Paris")]),
            ae.Invocation.of("And in Rome?", "Rain", tools=[_call("Rome")]),
        ),
        ae.EvalCase.of("flaky", "Weather in Lyon?", expect="Fog", tools=[_call("Lyon")]),  # wrong in run 2
    ],
)
METRICS = [ae.EvalMetric.tool_trajectory(), ae.EvalMetric.final_response("contains", name="mentions", threshold=0.5)]
PASSING = ae.EvalSet.of("passing-set", [case for case in CASES.eval_cases if case.eval_id in ("paris", "flaky")])


def _agent() -> Callable[[str, ae.Turn], str]:
    """The weather agent: "Sunny" after turn 1, Bergen's weather for Oslo, raises on request, Paris for Lyon in run 2.

    It is not told its run: runs run one after the other, so it counts how often each conversation starts.
    """
    starts: Counter[str] = Counter()
    run_of: dict[str, int] = {}

    def agent(message: str, turn: ae.Turn) -> str:
        if not turn.history:
            starts[message] += 1
            run_of[turn.session_id] = starts[message]
        if "Explode" in message:
            raise RuntimeError("the agent blew up")
        city = message.removesuffix("?").split()[-1]
        if city == "Oslo":
            city = "Bergen"
        if city == "Lyon" and run_of[turn.session_id] == 2:
            city = "Paris"
        reply = turn.tool(_weather, name="weather")(city=city)
        return "Sunny" if turn.history else reply

    return agent


def _evaluated(num_runs: int, eval_set: ae.EvalSet = CASES) -> ae.EvaluationReport:
    return ae.Evaluator(APP, _agent(), progress=False, num_runs=num_runs).evaluate(eval_set, metrics=METRICS)


def _saved(report: ae.EvaluationReport, directory: Path) -> Path:
    result_id = report.save(ae.LocalEvalResultManager(directory))
    return directory / APP / f"{result_id}.evalset_result.json"


@pytest.fixture(scope="module", params=[1, 3], ids=["one-run", "three-runs"])
def saved(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A result file of ``CASES`` evaluated with one run or three."""
    return _saved(_evaluated(request.param), tmp_path_factory.mktemp("results"))


@pytest.fixture(autouse=True)
def _agg() -> Iterator[None]:
    matplotlib.use("Agg")
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def _read(report: ae.EvaluationReport) -> bool:
    """Whether the report has read its records."""
    return "_unread_records" not in report.__dict__


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often a record was read: a fresh report's (``CaseRecord.model``), a loaded one's (``ResultIndex.record``)."""
    counted: Counter[str] = Counter()
    model: Any = CaseRecord.model
    record = ResultIndex.record

    def read_model(self: CaseRecord) -> EvalCaseResult:
        counted[f"{self.row.eval_id}/{self.row.run_id}"] += 1
        made: EvalCaseResult = model.fget(self)
        return made

    def read_record(self: ResultIndex, index: int) -> EvalCaseResult:
        counted[f"{self.runs[index].eval_id}/{self.runs[index].run_id}"] += 1
        return record(self, index)

    monkeypatch.setattr(CaseRecord, "model", property(read_model))
    monkeypatch.setattr(ResultIndex, "record", read_record)
    return counted


def _diagnostics(report: ae.EvaluationReport) -> list[pd.DataFrame]:
    return [report.failures, report.flakiness, report.rubric_scores]


def _assert_same(report: ae.EvaluationReport, expected: ae.EvaluationReport) -> None:
    expected.result  # noqa: B018 (a derived report reads its records when asked, as a loaded one does)
    assert _read(expected)
    for frame, wanted in zip(_diagnostics(report), _diagnostics(expected), strict=True):
        pd.testing.assert_frame_equal(frame, wanted)


def _whole(path: Path) -> ae.EvaluationReport:
    """The report as loading the whole file makes it."""
    return report_from_result(load_result_file(path), app_name=APP, source=f"result file {path}")


# ------------------------------------------------------------------ the frames are those of every record read


@pytest.mark.parametrize("num_runs", [1, 3])
def test_a_fresh_reports_diagnostics_are_those_of_its_records_read(num_runs: int) -> None:
    report = _evaluated(num_runs)

    lazy = _diagnostics(report)

    assert not _read(report)
    # "trip" passed with a failing turn: its record is read, and its failure is there.
    assert set(report.cases.query("eval_id == 'trip'")["status"]) == {"passed"}
    assert "trip" in set(lazy[0].loc[lazy[0]["metric_name"] == "mentions", "eval_id"])
    report.result  # noqa: B018 (reads every record)
    assert _read(report)
    for frame, wanted in zip(lazy, _diagnostics(report), strict=True):
        pd.testing.assert_frame_equal(frame, wanted)
    flakiness = lazy[1].set_index("eval_id")
    if num_runs > 1:
        assert flakiness.loc["flaky", "category"] == "flaky"
        assert str(flakiness.loc["flaky", "first_divergence"]).startswith("turn 1, tool 1: ")


def test_a_loaded_reports_diagnostics_are_the_whole_files(saved: Path, reads: Counter[str]) -> None:
    report = ae.EvaluationReport.load(saved)

    _assert_same(report, _whole(saved))
    assert not _read(report)
    assert not [case for case in reads if case.startswith(("boom/", "paris/"))] or report.num_runs > 1


def test_a_rethresholded_loaded_reports_diagnostics_are_the_whole_files_rethresholded(saved: Path) -> None:
    report = ae.EvaluationReport.load(saved).with_thresholds({"mentions": 1.0})

    _assert_same(report, _whole(saved).with_thresholds({"mentions": 1.0}))
    assert not _read(report)


def test_a_reaggregated_loaded_reports_diagnostics_are_the_whole_files_reaggregated(saved: Path) -> None:
    aggregator = ae.aggregation.at_least_k(1)
    report = ae.EvaluationReport.load(saved).reaggregate(aggregator)

    _assert_same(report, _whole(saved).reaggregate(aggregator))


# ------------------------------------------------------------------ what is not read


def test_the_failures_of_a_report_whose_cases_all_passed_read_no_record(tmp_path: Path, reads: Counter[str]) -> None:
    evaluated = _evaluated(1, PASSING)
    loaded = ae.EvaluationReport.load(_saved(evaluated, tmp_path))
    reads.clear()

    for report in (evaluated, loaded):
        assert report.passed
        assert report.failures.empty
        assert report.rubric_scores.empty
        assert report.flakiness["category"].tolist() == ["stable_pass", "stable_pass"]
        assert not _read(report)
    assert not reads


def test_only_the_failing_runs_are_read_for_failures(reads: Counter[str]) -> None:
    report = _evaluated(1)

    failures = report.failures

    # paris and flaky passed with every turn; boom failed with an error, which its row holds.
    assert sorted(reads) == ["oslo/1", "rome/1", "trip/1"]
    assert set(failures["eval_id"]) == {"boom", "oslo", "rome", "trip"}


def test_one_run_flakiness_reads_no_record_and_several_read_only_cases_with_several_runs(
    reads: Counter[str],
) -> None:
    one = _evaluated(1)
    assert one.flakiness["first_divergence"].tolist() == [""] * len(CASES.eval_cases)
    assert not reads

    several = _evaluated(3)
    reads.clear()
    several.flakiness  # noqa: B018
    assert sorted(reads) == sorted(f"{case.eval_id}/{run}" for case in CASES.eval_cases for run in (1, 2, 3))
    assert not _read(several)


def _judge_metric() -> ae.EvalMetric:
    rubrics = [Rubric(id="polite", content=RubricContent(text="The reply is polite."))]
    return ae.EvalMetric(
        metric_name="helpful",
        evaluator_name="llm_rubric_response",
        threshold=1.0,
        criterion=Criterion(llm_judge=LLMCriterion(rubrics=rubrics)),
    )


def test_rubric_scores_read_only_the_runs_a_judge_scored(tmp_path: Path, reads: Counter[str]) -> None:
    judge = FunctionChatModel(
        lambda request: json.dumps({"rubricScores": [{"id": "polite", "score": 1, "reason": "polite"}]})
    )
    eval_set = ae.EvalSet.of("judged", [case for case in CASES.eval_cases if case.eval_id in ("paris", "boom")])
    evaluated = ae.Evaluator(APP, _agent(), progress=False, judge=judge).evaluate(eval_set, metrics=[_judge_metric()])
    path = _saved(evaluated, tmp_path)

    for report in (evaluated, ae.EvaluationReport.load(path)):
        reads.clear()
        scores = report.rubric_scores
        assert sorted(reads) == ["paris/1"]  # the agent raised in "boom": nothing was judged
        assert scores[["eval_id", "rubric_id", "score"]].values.tolist() == [["paris", "polite", 1.0]]
    pd.testing.assert_frame_equal(ae.EvaluationReport.load(path).rubric_scores, _whole(path).rubric_scores)

    # The models read the key as the field is named too: a file may spell it so, in the store's layout.
    path.write_text(path.read_text().replace('"rubricScores"', '"rubric_scores"'))
    loaded = ae.EvaluationReport.load(path)
    assert not _read(loaded)
    pd.testing.assert_frame_equal(loaded.rubric_scores, _whole(path).rubric_scores)
    assert len(loaded.rubric_scores) == 1


# ------------------------------------------------------------------ the plots


def test_the_plots_read_no_record_of_a_passing_run(tmp_path: Path, reads: Counter[str]) -> None:
    evaluated = _evaluated(1)
    loaded = ae.EvaluationReport.load(_saved(evaluated, tmp_path))

    for report in (evaluated, loaded):
        reads.clear()
        report.plot()
        report.plot(measure=True)
        report.plot_flakiness()
        assert not reads
        report.plot_failures()
        report.plot_failures(by="category")
        assert set(reads) == {"oslo/1", "rome/1", "trip/1"}
        assert not _read(report)


def test_what_the_plots_draw_from_rows_is_what_they_draw_from_the_records(saved: Path) -> None:
    report, whole = ae.EvaluationReport.load(saved), _whole(saved)

    cells, results = plotting._cells(report), plotting._evaluated_results(report)
    assert not _read(report)

    assert cells == plotting._cells(whole)
    metrics = whole.metrics
    expected = metrics[metrics["status"].isin(["passed", "failed"])].reset_index(drop=True)
    pd.testing.assert_frame_equal(results, expected[list(results.columns)])
    plt_figure = report.plot()
    assert plt_figure.axes
