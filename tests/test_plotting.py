"""Tests for the report plots, drawn with the Agg backend and checked through the returned figures."""

from __future__ import annotations

import ast
import io
import sys
from collections.abc import Collection, Iterator
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.text import Text

from agenteval import (
    EvalCase,
    EvalSet,
    EvaluationReport,
    Evaluator,
    Invocation,
    LocalEvalSetManager,
    LocalMetricManager,
    Message,
    SessionInput,
    Turn,
)
from agenteval.errors import MissingDependencyError
from agenteval.evalresult.models import EvalCaseResult, EvalMetricResult, EvalSetResult
from agenteval.examples.math import APP_NAME, DATA_DIR, EVAL_SET_ID, calculator_agent
from agenteval.examples.math.agent import calculator
from agenteval.metric.criterion import Criterion, FinalResponseCriterion, TextCriterion
from agenteval.metric.models import EvalMetric
from agenteval.notebook import plotting
from agenteval.notebook.plotting import (
    FAILED_COLOR,
    PASSED_COLOR,
    plot_comparison,
    plot_heatmap,
    plot_pass_rates,
    plot_report,
    plot_score_distribution,
)
from agenteval.status import EvalStatus, summarize

METRICS = ["tool_trajectory_avg_score", "final_response_avg_score"]
CASES = ["calc_add", "calc_multiply", "calc_divide_by_zero", "calc_follow_up", "calc_power"]


@pytest.fixture(autouse=True)
def _agg() -> Iterator[None]:
    matplotlib.use("Agg")
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def evaluate(agent: object, num_runs: int = 1) -> EvaluationReport:
    ev = Evaluator(
        APP_NAME,
        agent,  # type: ignore[arg-type]
        eval_set_manager=LocalEvalSetManager(DATA_DIR),
        metric_manager=LocalMetricManager(DATA_DIR),
        num_runs=num_runs,
    )
    return ev.evaluate(EVAL_SET_ID)


def changed_agent(message: str, turn: Turn) -> str:
    """The calculator after a change: it learned ``power`` but now gets ``add 2 3`` wrong."""
    if "power 2 10" in message:
        turn.record_tool(
            "calculator",
            {"operation": "power", "a": 2, "b": 10},
            {"operation": "power", "a": 2, "b": 10, "result": 1024},
        )
        return "calc result: 1024"
    if "add 2 3" in message:
        turn.record_tool("calculator", {"operation": "add", "a": 2, "b": 4}, calculator("add", 2, 4))
        return "calc result: 6"
    return calculator_agent(message, turn)


@pytest.fixture(scope="module")
def one_run() -> EvaluationReport:
    return evaluate(calculator_agent)


@pytest.fixture(scope="module")
def three_runs() -> EvaluationReport:
    return evaluate(calculator_agent, num_runs=3)


@pytest.fixture(scope="module", params=[1, 3], ids=["one-run", "three-runs"])
def report(request: pytest.FixtureRequest) -> EvaluationReport:
    return evaluate(calculator_agent, num_runs=request.param)


def labels(texts: list[Text]) -> list[str]:
    return [text.get_text() for text in texts]


def legend_texts(ax: Axes) -> list[str]:
    legend = ax.get_legend()
    assert legend is not None
    return labels(legend.get_texts())


def test_score_distribution_has_one_box_and_strip_per_metric(report: EvaluationReport) -> None:
    figure = plot_score_distribution(report)

    assert isinstance(figure, Figure)
    [ax] = figure.axes
    assert labels(ax.get_xticklabels()) == METRICS
    assert ax.get_title() == "Score distribution per metric"
    strips = [c for c in ax.collections if isinstance(c, PathCollection)]
    # Each metric has passing and failing points: one strip per status.
    assert len(strips) == 2 * len(METRICS)
    assert sum(len(np.asarray(strip.get_offsets())) for strip in strips) == len(METRICS) * len(CASES) * report.num_runs
    colors = {to_hex(np.asarray(strip.get_facecolor())[0].tolist()) for strip in strips}
    assert colors == {PASSED_COLOR, FAILED_COLOR}
    assert len([c for c in ax.collections if isinstance(c, LineCollection)]) == len(METRICS)  # thresholds
    assert legend_texts(ax) == ["passed", "failed", "threshold"]


def test_pass_rates_have_one_bar_per_metric_and_run(report: EvaluationReport) -> None:
    figure = plot_pass_rates(report)

    [ax] = figure.axes
    bars = [patch for patch in ax.patches if isinstance(patch, Rectangle)]
    assert len(bars) == len(METRICS) * report.num_runs
    assert [bar.get_height() for bar in bars] == pytest.approx([0.8] * len(bars))
    assert labels(ax.get_xticklabels()) == METRICS
    bar_labels = [text.get_text() for text in ax.texts]
    assert bar_labels == ["80%"] * len(bars)
    if report.num_runs == 1:
        assert ax.get_legend() is None
        assert ax.get_title() == "Pass rate per metric"
    else:
        assert legend_texts(ax) == ["run 1", "run 2", "run 3"]
        assert ax.get_title() == "Pass rate per metric and run"


def test_heatmap_annotates_mean_scores_and_frames_failing_cells(report: EvaluationReport) -> None:
    figure = plot_heatmap(report)

    heat, colorbar = figure.axes
    assert colorbar.get_ylabel() == "mean score"
    assert labels(heat.get_yticklabels()) == CASES
    assert labels(heat.get_xticklabels()) == METRICS
    texts = [text.get_text() for text in heat.texts]
    assert texts.count("0.00 ✗") == 2
    assert texts.count("1.00") == 8
    frames = [patch for patch in heat.patches if isinstance(patch, Rectangle) and not patch.get_fill()]
    assert len(frames) == 2
    assert {(frame.get_x() + 0.5, frame.get_y() + 0.5) for frame in frames} == {(0, 4), (1, 4)}
    if report.num_runs > 1:
        assert "over 3 runs" in heat.get_title()


def test_heatmap_greys_out_a_case_that_errored() -> None:
    def crashing(message: str, turn: Turn) -> str:
        if "divide" in message:
            raise RuntimeError("crash")
        return calculator_agent(message, turn)

    heat = plot_heatmap(evaluate(crashing)).axes[0]

    assert "calc_divide_by_zero (error)" in labels(heat.get_yticklabels())
    assert [text.get_text() for text in heat.texts].count("n/a") == 2


def test_report_overview_has_the_three_plots(report: EvaluationReport) -> None:
    figure = plot_report(report)

    assert len(figure.axes) == 4  # distribution, pass rates, heat map and its colour bar
    titles = [ax.get_title() for ax in figure.axes[:3]]
    assert titles[0] == "Score distribution per metric"
    assert titles[1].startswith("Pass rate per metric")
    assert titles[2].startswith("Mean score per case and metric")
    assert figure.get_suptitle() == "math-eval-app / math-basic: failed"
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=40)
    assert buffer.getvalue().startswith(b"\x89PNG")


def test_plots_draw_into_a_given_axes(one_run: EvaluationReport) -> None:
    figure = Figure()
    left, right = figure.subplots(1, 2)

    assert plot_pass_rates(one_run, ax=right) is figure
    assert plot_score_distribution(one_run, ax=left) is figure
    assert len(right.patches) == 2
    assert labels(left.get_xticklabels()) == METRICS
    assert plot_heatmap(one_run, ax=figure.add_subplot(2, 1, 2)) is figure


def test_comparison_colours_the_fix_and_the_regression(one_run: EvaluationReport) -> None:
    candidate = evaluate(changed_agent, num_runs=3)

    figure = plot_comparison(one_run, candidate)

    [ax] = figure.axes
    assert ax.get_title() == "Baseline → candidate: 2 fixed, 2 regressed"
    rows = labels(ax.get_yticklabels())
    assert rows[:2] == [f"calc_add · {metric}" for metric in METRICS]
    assert rows[2:4] == [f"calc_power · {metric}" for metric in METRICS]
    assert len(rows) == len(CASES) * len(METRICS)
    assert [to_hex(label.get_color()) for label in ax.get_yticklabels()[:4]] == [FAILED_COLOR] * 2 + [PASSED_COLOR] * 2
    segments = [line for line in ax.lines if len(np.asarray(line.get_xdata())) == 2]
    assert sorted(to_hex(line.get_color()) for line in segments[:4]) == sorted([FAILED_COLOR] * 2 + [PASSED_COLOR] * 2)
    assert [tuple(np.asarray(line.get_xdata())) for line in segments[:4]] == [
        (1.0, 0.0),
        (1.0, 0.0),
        (0.0, 1.0),
        (0.0, 1.0),
    ]
    assert legend_texts(ax) == ["regressed", "fixed", "other", "baseline", "candidate"]


def test_comparison_of_a_report_with_itself_changes_nothing(three_runs: EvaluationReport) -> None:
    ax = plot_comparison(three_runs, three_runs).axes[0]

    assert ax.get_title() == "Baseline → candidate: 0 fixed, 0 regressed"
    assert all(to_hex(label.get_color()) == "#000000" for label in ax.get_yticklabels())


def test_an_empty_report_draws_placeholders() -> None:
    report = Evaluator(APP_NAME, calculator_agent).evaluate(EvalSet(eval_set_id="empty"), metrics=[])

    for plot in (plot_score_distribution, plot_pass_rates, plot_heatmap):
        ax = plot(report).axes[0]
        assert [text.get_text() for text in ax.texts] == ["no metric results"]
    assert len(plot_report(report).axes) == 3
    assert plot_comparison(report, report).axes[0].texts[0].get_text() == "no metric results in common"


def test_missing_matplotlib_names_the_extra(one_run: EvaluationReport, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)

    with pytest.raises(MissingDependencyError, match=r"pip install 'agenteval\[plot\]'"):
        plot_report(one_run)
    with pytest.raises(ImportError):
        plot_heatmap(one_run)


def test_plots_draw_into_an_axes_on_a_subfigure(one_run: EvaluationReport) -> None:
    figure = Figure()
    grid = figure.add_gridspec(1, 2)
    left, right = figure.add_subfigure(grid[0]), figure.add_subfigure(grid[1])

    assert plot_heatmap(one_run, ax=right.add_subplot()) is figure
    assert len(right.axes) == 2  # the heat map and its colour bar, both on the subfigure
    assert plot_score_distribution(one_run, ax=left.add_subplot()) is figure
    figure.savefig(io.BytesIO(), format="png", dpi=40)


def test_plotting_avoids_calls_that_need_matplotlib_3_10() -> None:
    """pyproject allows matplotlib 3.8, and ``get_figure(root=...)`` only came with 3.10."""
    tree = ast.parse(Path(plotting.__file__).read_text(encoding="utf-8"))

    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get_figure"
    ]

    assert calls == []


# Large eval sets -------------------------------------------------------------------------------

LARGE_METRICS = ["accuracy", "helpfulness", "tone"]


def passing_score(case: int) -> float:
    """A passing case's score on every metric and run: distinct per case, in [0.6, 1.0)."""
    return 0.6 + 0.4 * ((case * 389) % 1000) / 1000  # 389 is prime to 1000: no two cases tie


def synthetic_report(
    num_cases: int,
    num_runs: int = 1,
    *,
    metrics: Collection[str] = LARGE_METRICS,
    failing: Collection[int] = (),
    errored: Collection[int] = (),
    not_evaluated: Collection[int] = (),
) -> EvaluationReport:
    """A report on cases ``case_0000``… built from results, without running an agent.

    Failing cases score 0.2 (threshold 0.5), errored ones have no metric result and an error
    message, not evaluated ones have only not-evaluated results; the rest pass with ``passing_score``.
    """
    results = []
    for run in range(1, num_runs + 1):
        for case in range(num_cases):
            if case in errored:
                metric_results = []
            else:
                score = 0.2 if case in failing else passing_score(case)
                status = (
                    EvalStatus.NOT_EVALUATED
                    if case in not_evaluated
                    else EvalStatus.PASSED
                    if score >= 0.5
                    else EvalStatus.FAILED
                )
                metric_results = [
                    EvalMetricResult(metric_name=name, score=score, threshold=0.5, eval_status=status)
                    for name in metrics
                ]
            results.append(
                EvalCaseResult(
                    eval_set_id="large",
                    eval_id=f"case_{case:04d}",
                    run_id=run,
                    final_eval_status=(
                        EvalStatus.FAILED
                        if case in errored
                        else summarize(result.eval_status for result in metric_results)
                    ),
                    error_message="agent crashed" if case in errored else "",
                    overall_eval_metric_results=metric_results,
                )
            )
    result = EvalSetResult(eval_set_id="large", eval_case_results=results)
    return EvaluationReport.from_result(result, app_name="big-app")


LARGE_FAILING = range(7, 1000, 100)  # case_0007, case_0107, …, case_0907
LARGE_ERRORED = 500
LARGE_NOT_EVALUATED = 900


@pytest.fixture(scope="module")
def large() -> EvaluationReport:
    """1,000 cases × 3 runs × 3 metrics: 10 failing, one errored, one not evaluated, 988 passing."""
    return synthetic_report(
        1000, 3, failing=LARGE_FAILING, errored={LARGE_ERRORED}, not_evaluated={LARGE_NOT_EVALUATED}
    )


def lowest_passing(count: int, excluded: Collection[int]) -> list[str]:
    cases = sorted((case for case in range(1000) if case not in excluded), key=passing_score)
    return [f"case_{case:04d}" for case in cases[:count]]


def test_heatmap_of_a_large_report_shows_the_cases_not_passing_then_the_lowest_passing(
    large: EvaluationReport,
) -> None:
    figure = plot_heatmap(large)

    heat, _ = figure.axes
    rows = labels(heat.get_yticklabels())
    failed = sorted([*(f"case_{case:04d}" for case in LARGE_FAILING), f"case_{LARGE_ERRORED:04d} (error)"])
    assert rows[:12] == [*failed, f"case_{LARGE_NOT_EVALUATED:04d}"]
    assert rows[12:] == lowest_passing(28, {*LARGE_FAILING, LARGE_ERRORED, LARGE_NOT_EVALUATED})
    values = heat.images[0].get_array()
    assert values is not None and values.shape == (40, 3)
    assert len(heat.texts) == 40 * 3  # each shown cell annotated, nothing for the hidden ones
    note = heat.get_xlabel()
    assert "40 of 1000 cases shown" in note
    assert note.endswith("… 960 passing cases not shown")
    assert figure.get_size_inches()[1] <= 15  # was 30 inches, the most the old cap allowed


def test_heatmap_with_more_failing_cases_than_rows_shows_the_first_failing(one_run: EvaluationReport) -> None:
    report = synthetic_report(100, metrics=["accuracy"], failing=range(0, 100, 2))

    heat = plot_heatmap(report).axes[0]

    assert labels(heat.get_yticklabels()) == [f"case_{case:04d}" for case in range(0, 80, 2)]
    assert heat.get_xlabel() == (
        "40 of 100 cases shown: the first that failed, errored or were not evaluated\n"
        "… 10 failing and 50 passing cases not shown"
    )


@pytest.mark.parametrize("num_cases", [40, 41])
def test_heatmap_limit_starts_past_40_cases(num_cases: int) -> None:
    report = synthetic_report(num_cases, metrics=["accuracy"])

    heat = plot_heatmap(report).axes[0]

    rows = labels(heat.get_yticklabels())
    assert len(rows) == 40
    if num_cases == 40:
        assert rows == [f"case_{case:04d}" for case in range(40)]  # eval-set order, nothing left out
        assert heat.get_xlabel() == ""
    else:
        assert rows == sorted(rows, key=lambda row: passing_score(int(row.removeprefix("case_"))))
        assert heat.get_xlabel().endswith("… 1 passing case not shown")


def test_score_distribution_of_a_large_report_draws_histograms(large: EvaluationReport) -> None:
    ax = plot_score_distribution(large).axes[0]

    assert not [c for c in ax.collections if isinstance(c, PathCollection)]  # no point per result
    bars = [patch for patch in ax.patches if isinstance(patch, Rectangle)]
    assert len(bars) <= len(LARGE_METRICS) * 2 * 20  # two stacked bars per bin at most
    red = [bar for bar in bars if to_hex(bar.get_facecolor()) == FAILED_COLOR]
    assert len(red) == len(LARGE_METRICS)  # the failing cases all score 0.2: one bin per metric
    assert all(abs(bar.get_y() + bar.get_height() / 2 - 0.2) < 0.05 for bar in red)  # in 0.2's bin
    assert max(bar.get_x() + bar.get_width() for bar in bars) <= len(LARGE_METRICS) - 1 + 0.4
    assert legend_texts(ax) == ["passed", "failed", "threshold"]
    # 998 cases × 3 runs: the errored and the not evaluated cases have no score.
    assert ax.get_xlabel() == "2994 results per metric: histograms beside the boxes"


def test_report_overview_of_a_large_report_stays_small(large: EvaluationReport) -> None:
    figure = plot_report(large)

    distribution, rates, heat, _ = figure.axes
    assert len(heat.get_yticklabels()) == 40
    assert heat.get_xlabel().endswith("… 960 passing cases not shown")
    assert len([patch for patch in rates.patches if isinstance(patch, Rectangle)]) == 3 * 3
    assert sum(len(np.asarray(c.get_offsets())) for c in distribution.collections if isinstance(c, PathCollection)) == 0
    # What drawing costs grows with the number of texts; drawing every case was over 4,000 of them.
    assert len(figure.findobj(Text)) < 400
    width, height = figure.get_size_inches()
    assert width == 13 and height <= 19
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=40)
    assert buffer.getvalue().startswith(b"\x89PNG")


# Text from the user -----------------------------------------------------------------------------

DOLLAR_CASES = ["price_$5_vs_$10", "plain"]
DOLLAR_METRIC = "cost_$x$_score"


def dollar_report(reply: str = "ok") -> EvaluationReport:
    """A report whose app, eval set, case ids and metric name hold pairs of ``$`` (mathtext to matplotlib)."""
    conversation = [Invocation(user_content=Message.user("hi"), final_response=Message.assistant("ok"))]
    eval_set = EvalSet(
        eval_set_id="set_$a$",
        eval_cases=[
            EvalCase(eval_id=case, conversation=conversation, session_input=SessionInput(user_id="u"))
            for case in DOLLAR_CASES
        ],
    )
    metric = EvalMetric(
        metric_name=DOLLAR_METRIC,
        evaluator_name="final_response_avg_score",
        threshold=1.0,
        criterion=Criterion(final_response=FinalResponseCriterion(text=TextCriterion())),
    )
    return Evaluator("app_$1_$2", lambda message: reply).evaluate(eval_set, metrics=[metric])


def drawn(text: Text | str) -> str:
    """What matplotlib shows for ``text``, checking it is not parsed as mathtext."""
    from matplotlib import cbook

    raw = text if isinstance(text, str) else text.get_text()
    assert not cbook.is_math_text(raw), raw
    return raw.replace("\\$", "$")


def test_dollars_in_user_text_are_drawn_as_plain_text() -> None:
    report, changed = dollar_report(), dollar_report("changed")

    overview = plot_report(report)
    comparison = plot_comparison(report, changed)
    for figure in (overview, comparison):
        figure.savefig(io.BytesIO(), format="png", dpi=40)

    distribution, rates, heat, _ = overview.axes
    for ax in (distribution, rates, heat):
        assert [drawn(label) for label in ax.get_xticklabels()] == [DOLLAR_METRIC]
    assert [drawn(label) for label in heat.get_yticklabels()] == DOLLAR_CASES
    assert drawn(overview.get_suptitle()) == "app_$1_$2 / set_$a$: passed"
    rows = [drawn(label) for label in comparison.axes[0].get_yticklabels()]
    assert rows == [f"{case} · {DOLLAR_METRIC}" for case in DOLLAR_CASES]


def rouge_report() -> EvaluationReport:
    """Two ROUGE-1 turns, one above the F1 threshold of 0.5 and one below, and an exact-match metric."""
    cases = EvalSet.of(
        "set",
        [
            EvalCase.of("close", "a", expect="the cat sat on the mat"),
            EvalCase.of("far", "b", expect="the dog ran in the park"),
        ],
    )
    replies = {"a": "the cat sat on a mat", "b": "the bird flew"}
    metrics = [EvalMetric.rouge("rouge1", f1=0.5, name="rouge"), EvalMetric.final_response()]
    return Evaluator("app", lambda message: replies[message], progress=False).evaluate(cases, metrics=metrics)


def strip_values(ax: Axes, position: int) -> list[float]:
    """The y values of the points drawn at x ``position`` (jittered by at most 0.15)."""
    points = np.concatenate([np.asarray(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection)])
    return sorted(float(y) for x, y in points if abs(x - position) < 0.2)


def test_score_distribution_can_draw_rouges_f1_instead_of_its_0_or_1_score() -> None:
    report = rouge_report()
    f1 = report.metrics.query("metric_name == 'rouge'").set_index("eval_id")["measure"]

    [scores] = plot_score_distribution(report).axes
    [measures] = plot_score_distribution(report, measure=True).axes

    assert strip_values(scores, 0) == [0.0, 1.0]
    assert strip_values(measures, 0) == pytest.approx(sorted([f1["far"], f1["close"]]))
    assert 0 < f1["far"] < 0.5 < f1["close"] < 1
    assert labels(measures.get_xticklabels()) == ["rouge\n(rouge1_f1)", "final_response_avg_score"]
    assert strip_values(measures, 1) == strip_values(scores, 1)  # no measure: drawn by its score
    # A threshold tick for the metric drawn by its score only.
    assert len([c for c in measures.collections if isinstance(c, LineCollection)]) == 1
    assert measures.get_title() == "Score distribution per metric, by measure where recorded"
    assert measures.get_ylabel() == "score or measure"
    overview = report.plot(measure=True)
    assert labels(overview.axes[0].get_xticklabels())[0] == "rouge\n(rouge1_f1)"
    assert labels(report.plot().axes[0].get_xticklabels())[0] == "rouge"
