"""Tests for :class:`agenteval.EvaluationReport`: its DataFrames, pass@k and representation."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from agenteval import (
    ConfigError,
    EvalCase,
    EvalMetric,
    EvalSet,
    EvalSetResult,
    EvalStatus,
    EvaluateResult,
    EvaluationReport,
    Evaluator,
    InMemoryEvalSetManager,
    Invocation,
    LocalEvalSetManager,
    LocalMetricManager,
    Message,
    PerInvocationResult,
    SessionInput,
    Tool,
    Turn,
    default_registry,
)
from agenteval._util.sync_bridge import run_sync
from agenteval.analysis.report import (
    CASE_COLUMNS,
    CASE_SUMMARY_COLUMNS,
    INVOCATION_COLUMNS,
    METRIC_COLUMNS,
    CaseSummary,
)
from agenteval.metric.criterion import (
    Criterion,
    FinalResponseCriterion,
    TextCriterion,
    TextMatchStrategy,
    ToolTrajectoryCriterion,
    ToolTrajectoryStrategy,
)

# Many tests here run cases without metrics on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::agenteval.errors.NoMetricsWarning")

APP = "app"
SET = "set"

EXACT = TextMatchStrategy.EXACT
FINAL_RESPONSE = EvalMetric(
    metric_name="final_response_avg_score",
    threshold=1.0,
    criterion=Criterion(final_response=FinalResponseCriterion(text=TextCriterion(match_strategy=EXACT))),
)
TOOL_TRAJECTORY = EvalMetric(
    metric_name="tool_trajectory_avg_score",
    threshold=1.0,
    criterion=Criterion(
        tool_trajectory=ToolTrajectoryCriterion(
            default_strategy=ToolTrajectoryStrategy(name=TextCriterion(match_strategy=EXACT))
        )
    ),
)


def turn(user: str, reply: str, tool: str = "lookup") -> Invocation:
    return Invocation(
        user_content=Message.user(user),
        final_response=Message.assistant(reply),
        tools=[Tool(name=tool, arguments={"q": user})],
    )


def make_case(eval_id: str, *turns: Invocation) -> EvalCase:
    return EvalCase(eval_id=eval_id, conversation=list(turns), session_input=SessionInput(user_id="ann"))


def store(cases: Sequence[EvalCase]) -> InMemoryEvalSetManager:
    manager = InMemoryEvalSetManager()

    async def fill() -> None:
        await manager.create(APP, SET)
        for case in cases:
            await manager.add_case(APP, SET, case)

    run_sync(fill())
    return manager


def agent(message: str, turn: Turn) -> str:
    """Answers ``X`` with ``X!`` after a ``lookup`` call; fails on ``crash``; answers ``hello`` wrongly."""
    if message == "crash":
        raise RuntimeError("agent crashed")
    turn.record_tool("lookup", {"q": message})
    turn.invocation_id = f"{message}-inv"
    return "hi?" if message == "hello" else f"{message}!"


CASES = [
    make_case("single", turn("one", "one!")),
    make_case("multi", turn("two", "two!"), turn("hello", "hello!")),
    make_case("broken", turn("crash", "never")),
]


@pytest.fixture(scope="module")
def report() -> EvaluationReport:
    ev = Evaluator(APP, agent, eval_set_manager=store(CASES), num_runs=2)
    return ev.evaluate(SET, metrics=[FINAL_RESPONSE, TOOL_TRAJECTORY])


def test_column_constants() -> None:
    assert CASE_COLUMNS == (
        "run_id",
        "eval_id",
        "status",
        "score",
        "error_type",
        "error_message",
        "session_id",
        "user_id",
        "cached_inference",
        "cached_scores",
    )
    assert METRIC_COLUMNS == (
        "run_id",
        "eval_id",
        "metric_name",
        "score",
        "status",
        "threshold",
        "measure_name",
        "measure",
        "reason",
        "cached",
    )
    assert INVOCATION_COLUMNS[:4] == ("run_id", "eval_id", "turn", "invocation_id")
    assert INVOCATION_COLUMNS[-5:] == (
        "user_content",
        "actual_response",
        "expected_response",
        "actual_tools",
        "expected_tools",
    )
    assert CASE_SUMMARY_COLUMNS == (
        "eval_id",
        "status",
        "score",
        "num_runs",
        "runs_passed",
        "pass_rate",
        "mean_score",
        "error_type",
        "error_message",
    )


def test_cases_frame_has_one_row_per_run_and_case(report: EvaluationReport) -> None:
    cases = report.cases

    assert tuple(cases.columns) == CASE_COLUMNS
    assert len(cases) == 6
    assert list(cases["run_id"]) == [1, 1, 1, 2, 2, 2]
    assert list(cases["eval_id"]) == ["single", "multi", "broken"] * 2
    assert list(cases["status"]) == ["passed", "failed", "failed"] * 2
    assert list(cases["score"]) == [1.0, 0.0, 0.0] * 2
    assert list(cases["user_id"]) == ["ann"] * 6
    errors = list(cases["error_message"])
    assert errors[0] == errors[1] == ""
    assert "RuntimeError: agent crashed" in errors[2]
    assert list(cases["session_id"]) == [case.session_id for case in report.result.eval_case_results]
    assert cases["session_id"].nunique() == 6


def test_metrics_frame_has_one_row_per_run_case_and_metric(report: EvaluationReport) -> None:
    metrics = report.metrics

    assert tuple(metrics.columns) == METRIC_COLUMNS
    # The failed inference has no metric results.
    assert len(metrics) == 2 * 2 * 2
    run_one = metrics[metrics["run_id"] == 1]
    assert list(run_one["eval_id"]) == ["single", "single", "multi", "multi"]
    assert list(run_one["metric_name"]) == ["final_response_avg_score", "tool_trajectory_avg_score"] * 2
    assert list(run_one["score"]) == [1.0, 1.0, 0.5, 1.0]
    assert list(run_one["status"]) == ["passed", "passed", "failed", "passed"]
    assert list(run_one["threshold"]) == [1.0] * 4
    reasons = list(run_one["reason"])
    assert reasons[0] == ""
    assert "final response mismatch" in reasons[2]
    assert '"hi?"' in reasons[2]


def test_invocations_frame_has_one_row_per_run_case_turn_and_metric(report: EvaluationReport) -> None:
    invocations = report.invocations

    assert tuple(invocations.columns) == INVOCATION_COLUMNS
    assert len(invocations) == 2 * (1 + 2) * 2
    run_two = invocations[invocations["run_id"] == 2]
    assert list(run_two["eval_id"]) == ["single"] * 2 + ["multi"] * 4
    assert list(run_two["turn"]) == [1, 1, 1, 1, 2, 2]
    assert list(run_two["invocation_id"]) == ["one-inv"] * 2 + ["two-inv"] * 2 + ["hello-inv"] * 2
    assert list(run_two["user_content"]) == ["one"] * 2 + ["two"] * 2 + ["hello"] * 2
    assert list(run_two["actual_response"]) == ["one!"] * 2 + ["two!"] * 2 + ["hi?"] * 2
    assert list(run_two["expected_response"]) == ["one!"] * 2 + ["two!"] * 2 + ["hello!"] * 2
    assert list(run_two["metric_name"]) == ["final_response_avg_score", "tool_trajectory_avg_score"] * 3
    assert list(run_two["status"]) == ["passed", "passed", "passed", "passed", "failed", "passed"]
    assert list(run_two["score"]) == [1.0, 1.0, 1.0, 1.0, 0.0, 1.0]
    assert "final response mismatch" in run_two["reason"].iloc[4]
    lookups = [{"name": "lookup", "arguments": {"q": text}} for text in ("one", "two", "hello")]
    assert list(run_two["actual_tools"]) == [[lookups[0]]] * 2 + [[lookups[1]]] * 2 + [[lookups[2]]] * 2
    assert [[tool["name"] for tool in tools] for tools in run_two["expected_tools"]] == [["lookup"]] * 6


TOOL_USE = EvalMetric(metric_name="tool_use", threshold=1.0)


def tool_use(actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric) -> EvaluateResult:
    """Scores 1 per turn; not evaluated for a case that expects no tool calls."""
    status = EvalStatus.PASSED if any(expected.tools for expected in expecteds) else EvalStatus.NOT_EVALUATED
    return EvaluateResult(
        overall_score=1.0,
        overall_status=status,
        per_invocation_results=[PerInvocationResult(score=1.0, status=status) for _ in actuals],
    )


@pytest.fixture(scope="module")
def flaky_report() -> EvaluationReport:
    """Two runs: ``tools`` passes in run 1 only (it forgets a tool call in run 2), ``chat`` (no tools) in both,
    ``broken`` in neither."""
    calls: Counter[str] = Counter()

    def flaky_agent(message: str, turn: Turn) -> str:
        if message == "crash":
            raise RuntimeError("agent crashed")
        if message == "2+1, times 2":
            calls[message] += 1
            turn.record_tool("add", {"a": 2, "b": 1}, 3)
            if calls[message] > 1:
                return "3"
            turn.record_tool("multiply", {"a": 3, "b": 2}, 6)
            return "6"
        return "hello"

    expected_calc = Invocation(
        user_content=Message.user("2+1, times 2"),
        final_response=Message.assistant("6"),
        tools=[Tool(name="add", arguments={"a": 2, "b": 1}), Tool(name="multiply", arguments={"a": 3, "b": 2})],
    )
    expected_chat = Invocation(user_content=Message.user("hi"), final_response=Message.assistant("hello"))
    cases = [
        make_case("tools", expected_calc),
        make_case("chat", expected_chat),
        make_case("broken", turn("crash", "never")),
    ]
    registry = default_registry()
    registry.register("tool_use", tool_use)
    ev = Evaluator(APP, flaky_agent, eval_set_manager=store(cases), num_runs=2, registry=registry)
    return ev.evaluate(SET, metrics=[TOOL_USE, FINAL_RESPONSE, TOOL_TRAJECTORY])


def test_invocations_list_the_tools_called_in_each_turn(flaky_report: EvaluationReport) -> None:
    invocations = flaky_report.invocations
    turns = invocations[invocations["metric_name"] == "final_response_avg_score"]

    assert list(zip(turns["run_id"], turns["eval_id"], strict=True)) == [
        (1, "tools"),
        (1, "chat"),
        (2, "tools"),
        (2, "chat"),
    ]

    def names(column: str, frame: pd.DataFrame = turns) -> list[list[str]]:
        return [[tool["name"] for tool in tools] for tools in frame[column]]

    assert names("actual_tools") == [["add", "multiply"], [], ["add"], []]
    assert names("expected_tools") == [["add", "multiply"], [], ["add", "multiply"], []]
    # Every metric row of a turn lists the turn's tools.
    assert names("actual_tools", invocations) == [["add", "multiply"]] * 3 + [[]] * 3 + [["add"]] * 3 + [[]] * 3


def test_case_table_has_one_row_per_case_across_runs(flaky_report: EvaluationReport) -> None:
    table = flaky_report.case_table

    metric_names = ("tool_use", "final_response_avg_score", "tool_trajectory_avg_score")
    assert tuple(table.columns) == CASE_SUMMARY_COLUMNS + metric_names
    assert list(table["eval_id"]) == ["tools", "chat", "broken"]
    assert list(table["status"]) == ["failed", "passed", "failed"]
    assert list(table["num_runs"]) == [2, 2, 2]
    assert list(table["runs_passed"]) == [1, 2, 0]
    assert list(table["pass_rate"]) == [0.5, 1.0, 0.0]
    assert list(table["mean_score"]) == [0.5, 1.0, 0.0]
    tools, chat, broken = (row for _, row in table.iterrows())
    assert (tools["tool_use"], tools["final_response_avg_score"], tools["tool_trajectory_avg_score"]) == (
        1.0,
        0.5,
        0.5,
    )
    assert math.isnan(chat["tool_use"])
    assert (chat["final_response_avg_score"], chat["tool_trajectory_avg_score"]) == (1.0, 1.0)
    assert all(math.isnan(broken[name]) for name in metric_names)


def test_case_table_adds_metrics_found_only_in_the_results(flaky_report: EvaluationReport) -> None:
    unconfigured = replace(flaky_report, eval_metrics=[FINAL_RESPONSE])

    table = unconfigured.case_table

    assert tuple(table.columns) == CASE_SUMMARY_COLUMNS + (
        "final_response_avg_score",
        "tool_use",
        "tool_trajectory_avg_score",
    )
    assert list(table["tool_use"].isna()) == [False, True, True]


def test_case_summaries_hold_each_case_across_runs(report: EvaluationReport) -> None:
    assert [summary.eval_id for summary in report.case_summaries] == ["single", "multi", "broken"]
    assert [summary.overall_status for summary in report.case_summaries] == [
        EvalStatus.PASSED,
        EvalStatus.FAILED,
        EvalStatus.FAILED,
    ]
    multi = report.case_summaries[1]
    assert isinstance(multi, CaseSummary)
    assert [run.run_id for run in multi.runs] == [1, 2]
    assert [(m.metric_name, m.score) for m in multi.metric_results] == [
        ("final_response_avg_score", 0.5),
        ("tool_trajectory_avg_score", 1.0),
    ]
    assert report.case_summaries[2].metric_results == []
    assert report.overall_status == EvalStatus.FAILED
    assert not report.passed


def test_inference_results_are_kept_per_run(report: EvaluationReport) -> None:
    assert len(report.inference_results) == 2
    run_one = report.inference_results[0]
    assert [result.eval_case_id for result in run_one] == ["single", "multi", "broken"]
    assert [len(result.inferences) for result in run_one] == [1, 2, 0]
    assert run_one[1].inferences[1].tools[0].arguments == {"q": "hello"}


def test_pass_k_on_a_report(report: EvaluationReport) -> None:
    # A case fails in every run, so no run passes as a whole set; per case, one of three passes both runs.
    assert report.set_pass_at_k(1) == 0.0
    assert report.set_pass_hat_k(2) == 0.0
    assert report.pass_at_k(1) == pytest.approx(1 / 3)
    assert report.pass_hat_k(2) == pytest.approx(1 / 3)


def test_a_loaded_result_at_the_int64_limits_reports_them_exactly(tmp_path: Path) -> None:
    # 2**63 used to load and show as -2**63 in the frames; a larger numRuns overflowed pass@k.
    path = tmp_path / APP / "r.evalset_result.json"
    path.parent.mkdir()
    case = {"evalId": "a", "runId": 2**63 - 1, "finalEvalStatus": "passed"}
    summary = {"numRuns": 2**63 - 1, "runStatusCounts": {"passed": 2**62}}
    path.write_text(
        f'{{"evalSetResultId": "r", "evalCaseResults": [{json.dumps(case)}], "summary": {json.dumps(summary)}}}'
    )

    report = EvaluationReport.load(path)

    assert report.cases["run_id"].tolist() == [2**63 - 1]
    assert report.set_pass_at_k(1) == pytest.approx(2**62 / (2**63 - 1), rel=1e-15)
    assert report.set_pass_at_k(10**6) == 1.0
    assert report.set_pass_hat_k(2) == pytest.approx(0.25, rel=1e-15)
    assert report.pass_at_k(1) == 1.0  # per case: the one run the result holds passed
    assert "pass@1 (per case) <b>1.00</b>" in report._repr_html_()


@pytest.mark.parametrize(("field", "key"), [("runId", "evalCaseResults[0].runId"), ("numRuns", "summary.numRuns")])
def test_a_loaded_result_beyond_int64_is_refused_naming_the_file_and_field(
    tmp_path: Path, field: str, key: str
) -> None:
    path = tmp_path / APP / "r.evalset_result.json"
    path.parent.mkdir()
    container = (
        '"evalCaseResults": [{"evalId": "a", "runId": %s}]' if field == "runId" else '"summary": {"numRuns": %s}'
    )
    path.write_text('{"evalSetResultId": "r", ' + container % 2**64 + "}")

    with pytest.raises(ConfigError, match=rf"^eval set result file {path} is malformed: field {re.escape(key)}: "):
        EvaluationReport.load(path)


def test_repr_summarises_the_report(report: EvaluationReport) -> None:
    text = repr(report)
    assert text.startswith("EvaluationReport(app='app', eval_set='set', status=failed, cases=3, failed=2, runs=2,")
    assert repr(report.result.eval_set_result_id) in text


def test_empty_evaluation_gives_empty_frames_with_the_columns() -> None:
    ev = Evaluator(APP, agent, eval_set_manager=store([]))

    empty = ev.evaluate(SET, metrics=[FINAL_RESPONSE])

    assert empty.case_summaries == []
    for frame, columns in ((empty.cases, CASE_COLUMNS), (empty.metrics, METRIC_COLUMNS)):
        assert tuple(frame.columns) == columns
        assert frame.empty
    assert tuple(empty.invocations.columns) == INVOCATION_COLUMNS
    assert empty.invocations.empty
    assert tuple(empty.case_table.columns) == CASE_SUMMARY_COLUMNS + ("final_response_avg_score",)
    assert empty.case_table.empty
    assert empty.overall_status == EvalStatus.NOT_EVALUATED


def test_a_bare_report_has_empty_frames_and_no_pass_k() -> None:
    bare = EvaluationReport(
        app_name=APP,
        eval_set_id=SET,
        result=EvalSetResult(eval_set_id=SET),
        case_summaries=[],
        overall_status=EvalStatus.NOT_EVALUATED,
    )

    assert tuple(bare.cases.columns) == CASE_COLUMNS
    assert tuple(bare.metrics.columns) == METRIC_COLUMNS
    assert tuple(bare.invocations.columns) == INVOCATION_COLUMNS
    assert tuple(bare.case_table.columns) == CASE_SUMMARY_COLUMNS
    assert bare.case_table.empty
    assert len(bare.cases) == len(bare.metrics) == len(bare.invocations) == 0
    assert bare.num_runs == 1
    assert bare.execution_time == 0.0
    with pytest.raises(ConfigError, match="summary is missing"):
        bare.set_pass_at_k(1)
    with pytest.raises(ConfigError, match="summary is missing"):
        bare.set_pass_hat_k(1)


def test_a_case_without_metrics_has_a_case_row_only() -> None:
    ev = Evaluator(APP, agent, eval_set_manager=store([make_case("single", turn("one", "one!"))]))

    bare = ev.evaluate(SET, metrics=[])

    assert list(bare.cases["status"]) == ["not_evaluated"]
    assert bare.metrics.empty
    assert bare.invocations.empty


def test_metric_reasons_name_their_turns_in_multi_turn_cases() -> None:
    from agenteval.examples.math import APP_NAME, DATA_DIR, EVAL_SET_ID

    def forgets_context(message: str, turn: Turn) -> str:
        return "calc result: 15" if "add" in message else "calc result: 0"

    report = Evaluator(
        APP_NAME,
        forgets_context,
        eval_set_manager=LocalEvalSetManager(DATA_DIR),
        metric_manager=LocalMetricManager(DATA_DIR),
    ).evaluate(EVAL_SET_ID, eval_case_ids=["calc_follow_up"])
    reasons = report.metrics.set_index("metric_name")["reason"]
    final = str(reasons["final_response_avg_score"])
    assert final.startswith("turn 2: final response mismatch")
    assert ";" not in final.split("turn 2:")[0]
    # The stored result keeps the reference's joined form.
    overall = report.result.eval_case_results[0].overall_eval_metric_results[1]
    assert overall.details is not None and overall.details.reason.startswith(";final response mismatch")


def test_case_table_pass_rate_leaves_out_runs_that_were_not_evaluated() -> None:
    eval_set = EvalSet(
        eval_set_id="s",
        eval_cases=[
            EvalCase(
                eval_id="c",
                conversation=[Invocation(user_content=Message.user("hi"), final_response=Message.assistant("hi"))],
                session_input=SessionInput(app_name="app", user_id="u"),
            )
        ],
    )
    report = Evaluator("app", lambda text: text).evaluate(eval_set, metrics=[], num_runs=2)

    table = report.case_table
    assert table["status"].tolist() == ["not_evaluated"]
    assert table["num_runs"].tolist() == [2]
    assert table["runs_passed"].tolist() == [0]
    assert math.isnan(table["pass_rate"][0])


RUBRIC_RESULT = next(
    (Path(__file__).parent / "interop" / "trpc-examples" / "llm" / "rubricresponse" / "output").rglob(
        "*.evalset_result.json"
    )
)
FRAMES = ("cases", "metrics", "invocations", "rubric_scores", "case_table")


def test_frames_keep_their_dtypes_when_empty() -> None:
    full = EvaluationReport.load(RUBRIC_RESULT)  # a row in every frame, rubric scores included
    assert all(len(getattr(full, name)) for name in FRAMES)
    no_cases = Evaluator(APP, agent).evaluate(EvalSet(eval_set_id="empty"), metrics=[FINAL_RESPONSE])
    crashing = make_case("broken", turn("crash", "never"))
    all_errors = Evaluator(APP, agent, eval_set_manager=store([crashing])).evaluate(SET, metrics=[FINAL_RESPONSE])
    assert no_cases.cases.empty and all_errors.metrics.empty and all_errors.invocations.empty

    for name in FRAMES:
        expected = dict(getattr(full, name).dtypes)
        for empty in (no_cases, all_errors):
            frame = getattr(empty, name)
            fixed = {column: dtype for column, dtype in frame.dtypes.items() if column in expected}
            assert fixed == {column: expected[column] for column in fixed}, name
            assert dict(pd.concat([frame, getattr(full, name)]).dtypes) == {**expected, **dict(frame.dtypes)}, name
    assert len(no_cases.case_table.columns) == len(CASE_SUMMARY_COLUMNS) + 1
    assert no_cases.case_table["final_response_avg_score"].dtype == "float64"
    assert no_cases.metrics["score"].dtype == "float64"
    assert no_cases.rubric_scores["turn"].dtype == "int64"
    assert no_cases.invocations["actual_tools"].dtype == object
