"""The failure taxonomy: each category from a scripted agent (or judge) built to make exactly that mistake."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Hashable
from typing import Any

import pytest

import agenteval as ae
from agenteval.analysis.diagnostics.failures import FAILURE_COLUMNS, find_failures
from agenteval.evalresult.models import (
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultDetails,
    EvalMetricResultPerInvocation,
    EvalSetResult,
)
from agenteval.evalset.models import RubricContent
from agenteval.metric.criterion import (
    Criterion,
    LLMCriterion,
    Rubric,
    ToolTrajectoryCriterion,
)
from agenteval.status import EvalStatus
from agenteval.testing import FunctionChatModel, ScriptedChatModel

PARIS_HOTELS = {"hits": ["Ritz", "Hilton"]}
SEARCH = ae.Tool(name="search", arguments={"q": "Paris hotels"}, result=PARIS_HOTELS)
BOOK = ae.Tool(name="book", arguments={"hotel": "Ritz", "nights": 2})
REPLY = "Booked the Ritz for 2 nights."
TRIP = ae.EvalSet.of(
    "trips", [ae.EvalCase.of("paris", "Book the Ritz in Paris for 2 nights.", expect=REPLY, tools=[SEARCH, BOOK])]
)

Agent = Callable[[str, ae.Turn], Any]


def search(q: str) -> dict[str, list[str]]:
    return PARIS_HOTELS


def book(hotel: str, nights: int) -> str:
    return f"booking {hotel}/{nights}"


def trip_agent(
    *,
    queries: tuple[str, ...] = ("Paris hotels",),
    book_first: bool = False,
    nights: int = 2,
    books: bool = True,
    search_tool: Callable[..., dict[str, list[str]]] = search,
    reply: str = REPLY,
) -> Agent:
    """The travel agent, with one mistake switched on by the arguments."""

    def agent(message: str, turn: ae.Turn) -> str:
        finder, booker = turn.tool(search_tool, name="search"), turn.tool(book)
        if book_first:
            booker(hotel="Ritz", nights=nights)
        for query in queries:
            finder(q=query)
        if books and not book_first:
            booker(hotel="Ritz", nights=nights)
        return reply

    return agent


def hilton_search(q: str) -> dict[str, list[str]]:
    return {"hits": ["Hilton", "Ritz"]}


def evaluate(agent: Agent, metrics: list[ae.EvalMetric], **options: Any) -> ae.EvaluationReport:
    return ae.Evaluator("travel", agent, progress=False, **options).evaluate(TRIP, metrics=metrics)


TRAJECTORY = ae.EvalMetric.tool_trajectory()


def only_failure(report: ae.EvaluationReport) -> dict[Hashable, Any]:
    rows = report.failures.to_dict("records")
    assert len(rows) == 1, rows
    return rows[0]


@pytest.mark.parametrize(
    ("agent", "metric", "category", "detail", "tool"),
    [
        (trip_agent(books=False), TRAJECTORY, "missing_tool", "", "book"),
        (trip_agent(queries=("Paris hotels", "cheap Paris hotels")), TRAJECTORY, "extra_tool", "", "search"),
        (trip_agent(book_first=True), ae.EvalMetric.tool_trajectory(order_sensitive=True), "wrong_order", "", "book"),
        (trip_agent(nights=3), TRAJECTORY, "wrong_arguments", "$.nights", "book"),
        (
            trip_agent(search_tool=hilton_search),
            ae.EvalMetric.tool_trajectory(results="exact"),
            "wrong_result",
            "$.hits[0]",
            "search",
        ),
        (trip_agent(reply="Booked the Hilton."), ae.EvalMetric.final_response(), "wrong_final_response", "", ""),
    ],
    ids=["missing_tool", "extra_tool", "wrong_order", "wrong_arguments", "wrong_result", "wrong_final_response"],
)
def test_each_mistake_of_the_agent_gets_its_category(
    agent: Agent, metric: ae.EvalMetric, category: str, detail: str, tool: str
) -> None:
    report = evaluate(agent, [metric])

    row = only_failure(report)
    assert (row["run_id"], row["eval_id"], row["turn"], row["metric_name"]) == (1, "paris", 1, metric.metric_name)
    assert (row["category"], row["detail"], row["tool"]) == (category, detail, tool)
    assert row["score"] == 0.0
    assert row["reason"] == report.invocations.loc[0, "reason"]


def test_the_same_agent_passing_has_no_failures() -> None:
    report = evaluate(trip_agent(), [TRAJECTORY, ae.EvalMetric.tool_trajectory(order_sensitive=True, name="ordered")])

    assert report.passed
    assert report.failures.empty
    assert list(report.failures.columns) == list(FAILURE_COLUMNS)


def test_a_tool_called_in_place_of_another_is_a_wrong_tool_naming_it() -> None:
    def agent(message: str, turn: ae.Turn) -> str:
        turn.tool(search)(q="Paris hotels")
        turn.record_tool("reserve", {"hotel": "Ritz", "nights": 2})
        return REPLY

    row = only_failure(evaluate(agent, [TRAJECTORY]))

    # As show_case marks it: the right position, another tool called in place of the expected one.
    assert (row["category"], row["tool"], row["detail"]) == ("wrong_tool", "book", "reserve")


def judge_metric() -> ae.EvalMetric:
    rubrics = [
        Rubric(id="polite", content=RubricContent(text="The reply is polite.")),
        Rubric(id="confirms", content=RubricContent(text="The reply confirms the booking.")),
    ]
    return ae.EvalMetric(
        metric_name="helpful",
        evaluator_name="llm_rubric_response",
        threshold=1.0,
        criterion=Criterion(llm_judge=LLMCriterion(rubrics=rubrics)),
    )


def rubric_reply(polite: float, confirms: float) -> str:
    scores = [
        {"id": "polite", "score": polite, "reason": "curt" if polite < 1 else "polite"},
        {"id": "confirms", "score": confirms, "reason": "confirmed"},
    ]
    return json.dumps({"rubricScores": scores})


def test_a_judge_rejecting_a_rubric_is_judge_rejected_naming_the_rubric() -> None:
    judge = ScriptedChatModel([rubric_reply(0, 1)])

    row = only_failure(evaluate(trip_agent(reply="Booked."), [judge_metric()], judge=judge))

    assert (row["category"], row["detail"], row["metric_name"]) == ("judge_rejected", "polite", "helpful")
    assert row["score"] == 0.5


def test_a_judge_rejecting_every_rubric_names_them_all() -> None:
    judge = FunctionChatModel(lambda request: rubric_reply(0, 0))

    row = only_failure(evaluate(trip_agent(), [judge_metric()], judge=judge))

    assert row["detail"] == "polite, confirms"


def test_an_agent_that_raises_is_an_agent_error_of_the_case() -> None:
    def agent(message: str, turn: ae.Turn) -> str:
        raise RuntimeError("the booking service is down")

    report = evaluate(agent, [TRAJECTORY])

    row = only_failure(report)
    assert row["category"] == "agent_error"
    assert report.failures["turn"].isna().all() and str(report.failures["turn"].dtype) == "Int64"
    assert row["metric_name"] == "" and math.isnan(row["score"])
    # Without the reference's prefix that repeats the row's case and session.
    assert row["reason"].startswith("RuntimeError: the booking service is down (raised at ")


def test_an_agent_slower_than_turn_timeout_is_a_timeout() -> None:
    async def agent(message: str, turn: ae.Turn) -> str:
        await asyncio.sleep(30)
        return REPLY

    row = only_failure(evaluate(agent, [TRAJECTORY], turn_timeout=0.2))

    assert (row["category"], row["detail"]) == ("timeout", "")
    assert row["reason"] == "turn 1 timed out after 0.2 s (turn_timeout)"


def test_a_judge_answering_nonsense_leaves_the_case_not_evaluated() -> None:
    judge = ScriptedChatModel(["I would rather not say."])

    row = only_failure(evaluate(trip_agent(), [judge_metric()], judge=judge))

    assert (row["category"], row["detail"]) == ("not_evaluated", "metric")


def test_several_turns_runs_and_metrics_each_get_a_row() -> None:
    eval_set = ae.EvalSet.of(
        "trips",
        [
            ae.EvalCase.of(
                "two_turns",
                ae.Invocation.of("Find Paris hotels.", "Found 2.", tools=[SEARCH.model_copy(update={"result": None})]),
                ae.Invocation.of("Book the Ritz for 2 nights.", REPLY, tools=[BOOK]),
            )
        ],
    )
    calls = 0

    def agent(message: str, turn: ae.Turn) -> str:
        nonlocal calls
        calls += 1
        if message.startswith("Find"):
            turn.tool(search)(q="Paris hotels")
            return "Found 2."
        turn.tool(book)(hotel="Ritz", nights=3 if calls > 2 else 2)  # wrong in run 2 only
        return "Booked."

    report = ae.Evaluator("travel", agent, progress=False, num_runs=2).evaluate(
        eval_set, metrics=[TRAJECTORY, ae.EvalMetric.final_response()]
    )

    rows = report.failures[["run_id", "turn", "metric_name", "category", "detail"]].to_dict("records")
    assert rows == [
        {
            "run_id": 1,
            "turn": 2,
            "metric_name": "final_response_avg_score",
            "category": "wrong_final_response",
            "detail": "",
        },
        {
            "run_id": 2,
            "turn": 2,
            "metric_name": "tool_trajectory_avg_score",
            "category": "wrong_arguments",
            "detail": "$.nights",
        },
        {
            "run_id": 2,
            "turn": 2,
            "metric_name": "final_response_avg_score",
            "category": "wrong_final_response",
            "detail": "",
        },
    ]


def test_categories_come_from_the_records_not_from_the_reason_text() -> None:
    """A stored result whose reasons say nothing useful is classified all the same."""
    expected = ae.Invocation.of("hi", tools=[BOOK])
    actual = ae.Invocation.of("hi", tools=[BOOK.model_copy(update={"arguments": {"hotel": "Ritz", "nights": 9}})])
    criterion = Criterion(tool_trajectory=ToolTrajectoryCriterion())
    turn = EvalMetricResult(
        metric_name="calls",
        score=0.0,
        threshold=1.0,
        eval_status=EvalStatus.FAILED,
        criterion=criterion,
        details=EvalMetricResultDetails(reason="missing tool, wrong order, timeout"),
    )
    case = EvalCaseResult(
        eval_id="c",
        run_id=1,
        final_eval_status=EvalStatus.FAILED,
        overall_eval_metric_results=[turn],
        eval_metric_result_per_invocation=[
            EvalMetricResultPerInvocation(
                actual_invocation=actual, expected_invocation=expected, eval_metric_results=[turn]
            )
        ],
    )

    (failure,) = find_failures(EvalSetResult(eval_set_id="s", eval_case_results=[case]))

    assert (failure.category, failure.detail, failure.tool) == ("wrong_arguments", "$.nights", "book")


def test_a_custom_metric_agenteval_cannot_look_into_is_other() -> None:
    metric = EvalMetricResult(metric_name="vibes", score=0.1, threshold=0.5, eval_status=EvalStatus.FAILED)
    case = EvalCaseResult(
        eval_id="c", run_id=1, final_eval_status=EvalStatus.FAILED, overall_eval_metric_results=[metric]
    )

    (failure,) = find_failures(EvalSetResult(eval_set_id="s", eval_case_results=[case]))

    assert (failure.category, failure.turn, failure.metric_name) == ("other", None, "vibes")


def test_a_saved_and_reloaded_report_has_the_same_failures(tmp_path: Any) -> None:
    report = evaluate(trip_agent(nights=3), [TRAJECTORY, ae.EvalMetric.final_response()])
    path = tmp_path / "result.json"
    path.write_text(report.result.model_dump_json(by_alias=True), encoding="utf-8")

    loaded = ae.EvaluationReport.from_result(ae.EvalSetResult.model_validate_json(path.read_text()))

    assert loaded.failures.equals(report.failures)


def test_plot_failures_stacks_the_categories_per_metric_and_per_category() -> None:
    report = evaluate(trip_agent(nights=3, reply="Booked."), [TRAJECTORY, ae.EvalMetric.final_response()])

    by_metric = report.plot_failures()
    by_category = report.plot_failures(by="category")

    (ax,) = by_metric.axes
    assert [label.get_text() for label in ax.get_xticklabels()] == [
        "tool_trajectory_avg_score",
        "final_response_avg_score",
    ]
    legend = ax.get_legend()
    assert legend is not None
    assert [text.get_text() for text in legend.get_texts()] == ["wrong_arguments", "wrong_final_response"]
    (ax,) = by_category.axes
    assert [label.get_text() for label in ax.get_xticklabels()] == ["wrong_arguments", "wrong_final_response"]
    with pytest.raises(ae.ConfigError, match='by must be "metric" or "category"'):
        report.plot_failures(by="case")  # type: ignore[arg-type]


def test_a_comparison_plots_both_reports_failures_on_one_scale() -> None:
    before = evaluate(trip_agent(books=False), [TRAJECTORY])
    after = evaluate(trip_agent(nights=3, reply="Booked."), [TRAJECTORY, ae.EvalMetric.final_response()])

    figure = ae.compare(before, after).plot_failures()

    left, right = figure.axes
    assert left.get_shared_y_axes().joined(left, right)
    assert [label.get_text() for label in left.get_xticklabels()] == [
        label.get_text() for label in right.get_xticklabels()
    ]
    legend = right.get_legend()
    assert legend is not None
    assert [text.get_text() for text in legend.get_texts()] == [
        "missing_tool",
        "wrong_arguments",
        "wrong_final_response",
    ]


def test_a_call_out_of_order_and_with_other_arguments_is_wrong_arguments_not_missing() -> None:
    swap = ae.EvalSet.of(
        "swap",
        [
            ae.EvalCase.of(
                "swap",
                "swap",
                expect="ok",
                tools=[ae.Tool(name="search", arguments={"q": "a"}), ae.Tool(name="book", arguments={"c": 1})],
            )
        ],
    )

    def agent(message: str, turn: ae.Turn) -> str:
        turn.record_tool("book", {"c": 2})
        turn.record_tool("search", {"q": "a"})
        return "ok"

    report = ae.Evaluator("app", agent, progress=False).evaluate(
        swap, metrics=[ae.EvalMetric.tool_trajectory(order_sensitive=True)]
    )

    rows = report.failures[["category", "detail", "tool"]].values.tolist()
    assert rows == [["wrong_arguments", "$.c", "book"]]
