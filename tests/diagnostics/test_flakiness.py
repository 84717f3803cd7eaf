"""report.flakiness and report.plot_flakiness(): which cases change outcome across runs, and where their runs part."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Hashable, Iterator, Sequence
from typing import Any

import matplotlib
import pytest
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

import agenteval as ae
from agenteval.analysis.diagnostics.flakiness import FLAKINESS_COLUMNS
from agenteval.evalresult.models import EvalCaseResult, EvalMetricResultPerInvocation, EvalSetResult
from agenteval.notebook.plotting import FAILED_COLOR, PASSED_COLOR, plot_flakiness
from agenteval.status import EvalStatus

FLIGHTS = ae.Tool(name="search", arguments={"query": "flights Paris"})
HOTELS = ae.Tool(name="search", arguments={"query": "hotels Paris"})


def search(query: str) -> str:
    return f"results for {query}"


def lookup(query: str) -> str:
    return f"entry for {query}"


def trip_agent() -> ae.runner.AgentFunction:
    """An agent that answers the hotel turn with ``lookup`` in run 2 and ``search`` otherwise.

    The agent is not told its run: it counts how often each conversation starts (runs run one after
    the other by default), and remembers the run of each session for its later turns.
    """
    starts: Counter[str] = Counter()
    run_of: dict[str, int] = {}

    def agent(message: str, turn: ae.Turn) -> str:
        if not turn.history:
            starts[message] += 1
            run_of[turn.session_id] = starts[message]
        if message == "And hotels?":
            tool = lookup if run_of[turn.session_id] == 2 else search
            turn.tool(tool)(query="hotels Paris")
            return "Hotel Lutetia"
        if message == "Cheap flights?":
            turn.tool(lookup)(query="flights Paris")  # always the wrong tool
            return "Flight AF123"
        turn.tool(search)(query="flights Paris")
        return "Flight AF123"

    return agent


def trips() -> ae.EvalSet:
    return ae.EvalSet.of(
        "trips",
        [
            ae.EvalCase.of(
                "trip",
                ae.Invocation.of("Flights to Paris?", "Flight AF123", tools=[FLIGHTS]),
                ae.Invocation.of("And hotels?", "Hotel Lutetia", tools=[HOTELS]),
            ),
            ae.EvalCase.of("flight", "Flights to Paris, please?", expect="Flight AF123", tools=[FLIGHTS]),
            ae.EvalCase.of("cheap", "Cheap flights?", expect="Flight AF123", tools=[FLIGHTS]),
        ],
    )


def evaluate(num_runs: int) -> ae.EvaluationReport:
    evaluator = ae.Evaluator("trips-app", trip_agent(), num_runs=num_runs, progress=False)
    return evaluator.evaluate(trips(), metrics=[ae.EvalMetric.tool_trajectory()])


@pytest.fixture(scope="module")
def report() -> ae.EvaluationReport:
    return evaluate(num_runs=3)


@pytest.fixture(autouse=True)
def _agg() -> Iterator[None]:
    matplotlib.use("Agg")
    yield


def test_a_case_that_switches_tools_in_run_2_is_flaky_and_says_where(report: ae.EvaluationReport) -> None:
    table = report.flakiness.set_index("eval_id")

    assert list(report.flakiness.columns) == list(FLAKINESS_COLUMNS)
    trip = table.loc["trip"]
    assert (trip["runs"], trip["passed_runs"], trip["flip_rate"], trip["category"]) == (3, 2, 1.0, "flaky")
    assert trip["first_divergence"] == (
        'turn 2, tool 1: search(query="hotels Paris") vs lookup(query="hotels Paris") in run 2'
    )
    scores = report.cases[report.cases["eval_id"] == "trip"]["score"].tolist()
    assert len(set(scores)) == 2
    assert trip["score_std"] == pytest.approx(statistics.pstdev(scores))


def test_cases_that_do_the_same_in_every_run_are_stable(report: ae.EvaluationReport) -> None:
    rows = report.flakiness.set_index("eval_id").loc[["flight", "cheap"]]

    assert rows["category"].tolist() == ["stable_pass", "stable_fail"]
    assert rows["passed_runs"].tolist() == [3, 0]
    assert rows["flip_rate"].tolist() == [0.0, 0.0]
    assert rows["score_std"].tolist() == [0.0, 0.0]
    assert rows["first_divergence"].tolist() == ["", ""]


def test_a_report_read_back_from_json_gives_the_same_table(report: ae.EvaluationReport) -> None:
    loaded = ae.EvaluationReport.from_result(ae.EvalSetResult.from_json(report.result.to_json()))

    assert loaded.flakiness.equals(report.flakiness)


def test_with_one_run_every_case_is_stable() -> None:
    table = evaluate(num_runs=1).flakiness

    assert table["runs"].tolist() == [1, 1, 1]
    assert table["flip_rate"].tolist() == [0.0, 0.0, 0.0]
    assert table["score_std"].tolist() == [0.0, 0.0, 0.0]
    assert table["first_divergence"].tolist() == ["", "", ""]
    assert table["category"].tolist() == ["stable_pass", "stable_pass", "stable_fail"]


def turn(reply: str, *calls: ae.Tool) -> EvalMetricResultPerInvocation:
    invocation = ae.Invocation(
        user_content=ae.Message.user("hi"), final_response=ae.Message.assistant(reply), tools=list(calls)
    )
    return EvalMetricResultPerInvocation(actual_invocation=invocation)


def run(
    run_id: int,
    *turns: EvalMetricResultPerInvocation,
    status: EvalStatus = EvalStatus.PASSED,
    score: float = 1.0,
    eval_id: str = "case",
) -> EvalCaseResult:
    return EvalCaseResult(
        eval_id=eval_id,
        run_id=run_id,
        final_eval_status=status,
        score=score,
        eval_metric_result_per_invocation=list(turns),
    )


def flakiness_of(runs: Sequence[EvalCaseResult]) -> dict[Hashable, Any]:
    report = ae.EvaluationReport.from_result(EvalSetResult(eval_set_id="set", eval_case_results=list(runs)))
    rows = report.flakiness.to_dict("records")
    assert len(rows) == 1
    return rows[0]


def call(name: str, **arguments: object) -> ae.Tool:
    return ae.Tool(name=name, arguments=arguments)


def test_when_the_tools_agree_the_replies_are_compared() -> None:
    row = flakiness_of([run(1, turn("A", call("search", q="x"))), run(2, turn("B", call("search", q="x")))])

    assert row["first_divergence"] == 'turn 1, reply: "A" vs "B" in run 2'


def test_a_call_of_the_same_tool_shows_only_the_arguments_that_differ_clipped() -> None:
    long = "a long query " * 10
    first = call("search", q=long + "one", limit=5, lang="en")
    second = call("search", q=long + "two", limit=5, lang="en")

    row = flakiness_of([run(1, turn("A", first)), run(2, turn("A", second))])

    clipped = f'"{long[:38]}…'
    assert row["first_divergence"] == f"turn 1, tool 1: search(q={clipped}, …) vs search(q={clipped}, …) in run 2"


def test_a_call_or_a_turn_that_one_run_lacks_is_named() -> None:
    extra_call = [run(1, turn("A", call("search", q="x"))), run(2, turn("A", call("search", q="x"), call("book")))]
    errored = [run(1, turn("A", call("search", q="x"))), run(2, status=EvalStatus.FAILED, score=0.0)]

    assert flakiness_of(extra_call)["first_divergence"] == "turn 1, tool 2: (no call) vs book() in run 2"
    assert flakiness_of(errored)["first_divergence"] == 'turn 1, tool 1: search(q="x") vs (no turn) in run 2'


def test_the_earliest_difference_of_any_run_is_given() -> None:
    same = turn("A", call("search", q="x"))
    runs = [
        run(1, same, turn("B", call("search", q="y"))),
        run(2, same, turn("B", call("lookup", q="y"))),
        run(3, turn("other")),
    ]

    row = flakiness_of(runs)

    assert row["first_divergence"] == 'turn 1, tool 1: search(q="x") vs (no call) in run 3'
    assert row["flip_rate"] == 0.0
    assert row["category"] == "stable_pass"


def test_long_replies_are_cut_to_where_they_differ() -> None:
    shared = "The weather in Paris is lovely today and tomorrow it will be "
    row = flakiness_of([run(1, turn(shared + "sunny")), run(2, turn(shared + "rainy"))])

    assert row["first_divergence"] == 'turn 1, reply: "…t will be sunny" vs "…t will be rainy" in run 2'


@pytest.mark.parametrize(
    ("statuses", "passed_runs", "flip_rate", "category"),
    [
        (["passed", "passed", "failed"], 2, 0.5, "flaky"),
        (["passed", "not_evaluated"], 1, 0.0, "stable_pass"),
        (["passed", "not_evaluated", "passed", "passed"], 3, 0.0, "stable_pass"),
        (["not_evaluated", "not_evaluated"], 0, 0.0, "stable_fail"),
        (["failed", "not_evaluated", "failed"], 0, 0.0, "stable_fail"),
    ],
)
def test_only_passed_runs_count_as_passing_and_not_evaluated_runs_not_at_all(
    statuses: list[str], passed_runs: int, flip_rate: float, category: str
) -> None:
    runs = [run(number, turn("A"), status=EvalStatus(status)) for number, status in enumerate(statuses, start=1)]

    row = flakiness_of(runs)

    assert (row["runs"], row["passed_runs"], row["flip_rate"], row["category"]) == (
        len(statuses),
        passed_runs,
        flip_rate,
        category,
    )


def bars(figure: Figure) -> list[tuple[str, float, str]]:
    """Each bar of the chart, top to bottom: its case, its length and its colour."""
    ax = figure.axes[0]
    patches = sorted((patch for container in ax.containers for patch in container), key=lambda bar: bar.get_y())
    labels = {round(tick): label.get_text() for tick, label in zip(ax.get_yticks(), ax.get_yticklabels(), strict=True)}
    return [
        (labels[round(patch.get_y() + patch.get_height() / 2)], patch.get_width(), to_hex(patch.get_facecolor()))
        for patch in patches
    ]


def test_the_plot_has_one_bar_per_case_the_flakiest_first(report: ae.EvaluationReport) -> None:
    figure = report.plot_flakiness()

    assert isinstance(figure, Figure)
    assert bars(figure) == [("trip", 1.0, "#bf8700"), ("cheap", 0.0, FAILED_COLOR), ("flight", 0.0, PASSED_COLOR)]
    labels = [text.get_text() for text in figure.axes[0].texts]
    assert labels == ["2/3 passed", "0/3 passed", "3/3 passed"]
    assert figure.axes[0].get_title() == "Flip rate per case over 3 runs: 1 of 3 flaky"


def test_past_40_cases_the_plot_says_which_are_left_out() -> None:
    results = [
        run(number, turn("A"), status=status, eval_id=f"case_{case:02d}")
        for case in range(45)
        for number, status in enumerate(
            [EvalStatus.PASSED, EvalStatus.FAILED if case in (3, 44) else EvalStatus.PASSED], start=1
        )
    ]
    report = ae.EvaluationReport.from_result(EvalSetResult(eval_set_id="set", eval_case_results=results))

    figure = plot_flakiness(report)

    shown = bars(figure)
    assert len(shown) == 40
    assert [case for case, _, _ in shown[:2]] == ["case_03", "case_44"]
    assert "40 of 45 cases shown, the flakiest first; not shown: 5 stable_pass" in figure.axes[0].get_xlabel()
