"""Tests for the report plots, drawn with the Agg backend and checked through the returned figures."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator

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
    EvalSet,
    EvaluationReport,
    Evaluator,
    LocalEvalSetManager,
    LocalMetricManager,
    MissingDependencyError,
    Turn,
)
from agenteval.examples.math import APP_NAME, DATA_DIR, EVAL_SET_ID, calculator_agent
from agenteval.examples.math.agent import calculator
from agenteval.plotting import (
    FAILED_COLOR,
    PASSED_COLOR,
    plot_comparison,
    plot_heatmap,
    plot_pass_rates,
    plot_report,
    plot_score_distribution,
)

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
    assert legend_texts(ax) == ["regressed", "fixed", "unchanged", "baseline", "candidate"]


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
