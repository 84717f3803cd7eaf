"""Plots of a finished report, drawn with matplotlib's object-oriented API.

Each function returns a :class:`matplotlib.figure.Figure` and never calls ``pyplot``, so no GUI
backend is needed and nothing pops up; Jupyter displays a returned figure by itself. Functions
that draw a single chart accept ``ax=`` to draw into an existing axes instead (they then return
that axes' figure). matplotlib is imported only when a plot is drawn.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agenteval.errors import MissingDependencyError
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from agenteval.report import EvaluationReport

__all__ = ["plot_comparison", "plot_heatmap", "plot_pass_rates", "plot_report", "plot_score_distribution"]

PASSED_COLOR = "#1a7f37"
FAILED_COLOR = "#cf222e"
NEUTRAL_COLOR = "#6e7781"
_EVALUATED = ("passed", "failed")


def _figure(figsize: tuple[float, float]) -> Figure:
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise MissingDependencyError("plotting", "plot", "matplotlib") from exc

    class NotebookFigure(Figure):
        """A figure that shows itself as an image when it ends a notebook cell.

        Figures are made without pyplot (no GUI backend, nothing kept alive by a global figure
        list), so Jupyter's inline backend does not know them; a PNG representation does it.
        """

        def _repr_png_(self) -> bytes:
            buffer = io.BytesIO()
            self.savefig(buffer, format="png", bbox_inches="tight")
            return buffer.getvalue()

    return NotebookFigure(figsize=figsize, layout="constrained")


def _root(ax: Axes) -> Figure:
    figure = ax.get_figure(root=True)
    if figure is None:
        raise ValueError("ax does not belong to a figure")
    return figure


def _axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    if ax is not None:
        return _root(ax), ax
    figure = _figure(figsize)
    return figure, figure.add_subplot()


def _metric_names(report: EvaluationReport) -> list[str]:
    names = [metric.metric_name for metric in report.eval_metrics]
    for name in report.metrics["metric_name"]:
        if name not in names:
            names.append(str(name))
    return names


def _per_metric_size(names: Sequence[str]) -> tuple[float, float]:
    """Figure size of a chart with one group per metric."""
    return max(5.0, 1.6 * len(names) + 2), 4.0


def _evaluated_results(report: EvaluationReport) -> pd.DataFrame:
    """The rows of ``report.metrics`` that passed or failed (not those not evaluated)."""
    frame = report.metrics
    return frame[frame["status"].isin(_EVALUATED)]


def _no_data(ax: Axes, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what}", ha="center", va="center", transform=ax.transAxes, color=NEUTRAL_COLOR)
    ax.set_xticks([])
    ax.set_yticks([])


def _label_metrics(ax: Axes, names: Sequence[str]) -> None:
    ax.set_xticks(range(len(names)))
    rotate = len(names) > 2 and max(map(len, names)) > 14
    ax.set_xticklabels(names, rotation=20 if rotate else 0, ha="right" if rotate else "center")


def plot_score_distribution(report: EvaluationReport, *, ax: Axes | None = None) -> Figure:
    """Each metric's scores over every case and run: a box plot with the points on top.

    Points are green when that result passed and red when it failed; a dashed tick marks each
    metric's threshold. Results that were not evaluated are left out.

    Args:
        report: The report to plot.
        ax: Draw into this axes instead of a new figure.

    Returns:
        The figure drawn on.

    Raises:
        MissingDependencyError: matplotlib is not installed.
    """
    import numpy as np

    names = _metric_names(report)
    figure, ax = _axes(ax, _per_metric_size(names))
    frame = _evaluated_results(report)
    ax.set_title("Score distribution per metric")
    if frame.empty:
        _no_data(ax, "metric results")
        return figure
    thresholds = {metric.metric_name: metric.threshold for metric in report.eval_metrics}
    rng = np.random.default_rng(0)  # fixed jitter: the same report draws the same picture
    seen: set[str] = set()
    for index, name in enumerate(names):
        rows = frame[frame["metric_name"] == name]
        if rows.empty:
            continue
        scores = rows["score"].to_numpy(dtype=float)
        ax.boxplot(
            [scores],
            positions=[index],
            widths=0.5,
            showfliers=False,
            manage_ticks=False,
            boxprops={"color": "0.45"},
            whiskerprops={"color": "0.45"},
            capprops={"color": "0.45"},
            medianprops={"color": "#24292f", "linewidth": 1.5},
        )
        jitter = rng.uniform(-0.15, 0.15, len(scores))
        for status, color in (("passed", PASSED_COLOR), ("failed", FAILED_COLOR)):
            mask = (rows["status"] == status).to_numpy()
            if mask.any():
                label = status if status not in seen else "_nolegend_"
                seen.add(status)
                ax.scatter(index + jitter[mask], scores[mask], s=18, color=color, alpha=0.75, zorder=3, label=label)
        threshold = thresholds.get(name, float(rows["threshold"].iloc[0]))
        label = "threshold" if "threshold" not in seen else "_nolegend_"
        seen.add("threshold")
        ax.hlines(threshold, index - 0.35, index + 0.35, colors="0.3", linestyles="--", linewidth=1, label=label)
    _label_metrics(ax, names)
    ax.set_xlim(-0.6, len(names) - 0.4)
    low, high = min(0.0, float(frame["score"].min())), max(1.0, float(frame["score"].max()))
    ax.set_ylim(low - 0.05 * (high - low), high + 0.25 * (high - low))  # head room for the legend
    ax.set_yticks([tick for tick in ax.get_yticks() if low - 1e-9 <= tick <= high + 1e-9])
    ax.set_ylabel("score")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper center", fontsize="small", ncols=3, frameon=False)
    return figure


def plot_pass_rates(report: EvaluationReport, *, ax: Axes | None = None) -> Figure:
    """Each metric's pass rate, one bar per run (cases that passed / cases evaluated).

    Args:
        report: The report to plot.
        ax: Draw into this axes instead of a new figure.

    Returns:
        The figure drawn on.

    Raises:
        MissingDependencyError: matplotlib is not installed.
    """
    from matplotlib import colormaps
    from matplotlib.ticker import PercentFormatter

    names = _metric_names(report)
    figure, ax = _axes(ax, _per_metric_size(names))
    frame = _evaluated_results(report)
    runs = sorted({int(run) for run in frame["run_id"]})
    ax.set_title("Pass rate per metric" + (" and run" if len(runs) > 1 else ""))
    if frame.empty:
        _no_data(ax, "metric results")
        return figure
    width = 0.8 / len(runs)
    blues = colormaps["Blues"]
    for position, run in enumerate(runs):
        rows = frame[frame["run_id"] == run]
        rates = []
        for name in names:
            statuses = rows.loc[rows["metric_name"] == name, "status"]
            rates.append(float((statuses == "passed").mean()) if len(statuses) else math.nan)
        offsets = [i - 0.4 + width * (position + 0.5) for i in range(len(names))]
        color = blues(0.45 + 0.45 * position / max(1, len(runs) - 1)) if len(runs) > 1 else "#0969da"
        bars = ax.bar(
            offsets, [0 if math.isnan(r) else r for r in rates], width * 0.92, color=color, label=f"run {run}"
        )
        labels = ["n/a" if math.isnan(r) else f"{r:.0%}" for r in rates]
        ax.bar_label(bars, labels=labels, fontsize="x-small" if len(runs) > 3 else "small", padding=2)
    _label_metrics(ax, names)
    ax.set_ylim(0, 1.3 if len(runs) > 1 else 1.12)  # head room for the labels and the legend
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylabel("pass rate")
    ax.grid(axis="y", alpha=0.3)
    if len(runs) > 1:
        ax.legend(loc="upper center", fontsize="small", ncols=min(len(runs), 6), frameon=False)
    return figure


@dataclass(frozen=True, slots=True)
class _Cell:
    score: float
    status: EvalStatus | None


def _cells(report: EvaluationReport) -> dict[tuple[str, str], _Cell]:
    """Each (case, metric): the score averaged over runs and whether that average passes."""
    return {
        (summary.eval_id, metric.metric_name): _Cell(metric.score, metric.eval_status)
        for summary in report.case_summaries
        for metric in summary.metric_results
    }


def _draw_heatmap(report: EvaluationReport, ax: Axes) -> None:
    import numpy as np
    from matplotlib import colormaps
    from matplotlib.patches import Rectangle

    cases = [summary.eval_id for summary in report.case_summaries]
    names = _metric_names(report)
    runs = f" over {report.num_runs} runs" if report.num_runs > 1 else ""
    ax.set_title(f"Mean score per case and metric{runs} (✗ = failed)")
    if not cases or not names:
        _no_data(ax, "metric results")
        return
    cells = _cells(report)
    values = np.full((len(cases), len(names)), np.nan)
    rows, cols = {case: i for i, case in enumerate(cases)}, {name: i for i, name in enumerate(names)}
    for (case, metric), found in cells.items():
        if found.status in (EvalStatus.PASSED, EvalStatus.FAILED) and case in rows and metric in cols:
            values[rows[case], cols[metric]] = found.score
    cmap = colormaps["RdYlGn"].with_extremes(bad="#d0d7de")
    top = max(1.0, float(np.nanmax(values))) if not np.isnan(values).all() else 1.0
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=0.0, vmax=top, aspect="auto")
    annotate = len(cases) * len(names) <= 600
    for (row, col), value in np.ndenumerate(values):
        cell = cells.get((cases[row], names[col]))
        failed = cell is not None and cell.status is EvalStatus.FAILED
        if failed:  # a dark frame stays visible on any colour of the map
            ax.add_patch(Rectangle((col - 0.5, row - 0.5), 1, 1, fill=False, edgecolor="#24292f", linewidth=2))
        if not annotate:
            continue
        if math.isnan(value):
            ax.text(col, row, "n/a", ha="center", va="center", fontsize="small", color="#57606a")
            continue
        red, green, blue, _ = cmap(value / top)
        dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
        text = f"{value:.2f}" + (" ✗" if failed else "")
        weight = "bold" if failed else "normal"
        ax.text(col, row, text, ha="center", va="center", color="white" if dark else "black", weight=weight)
    errors = {s.eval_id for s in report.case_summaries if any(run.error_message for run in s.runs)}
    ax.set_yticks(range(len(cases)), [f"{case} (error)" if case in errors else case for case in cases])
    ax.set_xticks(
        range(len(names)), names, rotation=15 if len(names) > 2 else 0, ha="right" if len(names) > 2 else "center"
    )
    ax.tick_params(length=0)
    _root(ax).colorbar(image, ax=ax, label="mean score", shrink=0.9)


def plot_heatmap(report: EvaluationReport, *, ax: Axes | None = None) -> Figure:
    """A case × metric heat map of the score averaged over runs, annotated with the values.

    Cells whose averaged result failed are framed and marked ``✗``; metrics a case was not
    evaluated on are grey (``n/a``). Case ids of cases that errored are suffixed ``(error)``.

    Args:
        report: The report to plot.
        ax: Draw into this axes instead of a new figure (a colour bar is added beside it).

    Returns:
        The figure drawn on.

    Raises:
        MissingDependencyError: matplotlib is not installed.
    """
    rows, cols = len(report.case_summaries), len(_metric_names(report))
    figure, ax = _axes(ax, (min(20.0, 2.2 * cols + 4), min(30.0, max(3.0, 0.45 * rows + 1.8))))
    _draw_heatmap(report, ax)
    return figure


@dataclass(frozen=True, slots=True)
class _Change:
    case: str
    metric: str
    before: _Cell | None
    after: _Cell | None

    @property
    def kind(self) -> str:
        was = self.before.status if self.before else None
        now = self.after.status if self.after else None
        if was is EvalStatus.PASSED and now is EvalStatus.FAILED:
            return "regressed"
        if was is EvalStatus.FAILED and now is EvalStatus.PASSED:
            return "fixed"
        return "unchanged"

    @property
    def moved(self) -> bool:
        scores = [cell.score for cell in (self.before, self.after) if cell is not None]
        return len(scores) < 2 or not math.isclose(scores[0], scores[1])  # NaN is never close: it moved

    @property
    def label(self) -> str:
        missing = [side for side, cell in (("before", self.before), ("after", self.after)) if not _scored(cell)]
        return f"{self.case} · {self.metric}" + (f" (no score {' or '.join(missing)})" if missing else "")


def _scored(cell: _Cell | None) -> bool:
    return cell is not None and not math.isnan(cell.score)


_KIND_COLORS = {"regressed": FAILED_COLOR, "fixed": PASSED_COLOR, "unchanged": NEUTRAL_COLOR}
_KIND_ORDER = {"regressed": 0, "fixed": 1, "unchanged": 2}
_MAX_PAIRS = 60


def _with_errors(report: EvaluationReport, cells: dict[tuple[str, str], _Cell]) -> dict[tuple[str, str], _Cell]:
    """Add the metrics a failed case has no result for (it errored) as failed, with no score."""
    names = _metric_names(report)
    for summary in report.case_summaries:
        if summary.overall_status is EvalStatus.FAILED:
            for name in names:
                cells.setdefault((summary.eval_id, name), _Cell(math.nan, EvalStatus.FAILED))
    return cells


def _changes(baseline: EvaluationReport, candidate: EvaluationReport) -> list[_Change]:
    before, after = _with_errors(baseline, _cells(baseline)), _with_errors(candidate, _cells(candidate))
    keys = list(after) + [key for key in before if key not in after]
    changes = [_Change(case, metric, before.get((case, metric)), after.get((case, metric))) for case, metric in keys]
    return sorted(changes, key=lambda change: (_KIND_ORDER[change.kind], not change.moved))


def plot_comparison(baseline: EvaluationReport, candidate: EvaluationReport, *, ax: Axes | None = None) -> Figure:
    """Each (case, metric) score before and after, as a dumbbell chart.

    A hollow dot is the baseline's score (averaged over its runs), a filled dot the candidate's, and
    the line between them is red for a regression (passed → failed), green for a fix (failed →
    passed) and grey otherwise. Regressions are listed first, then fixes, then the rest. Beyond 60
    pairs, pairs whose score did not move are left out (the title says how many).

    Args:
        baseline: The report before the change.
        candidate: The report after the change.
        ax: Draw into this axes instead of a new figure.

    Returns:
        The figure drawn on.

    Raises:
        MissingDependencyError: matplotlib is not installed.
    """
    from matplotlib.lines import Line2D

    changes = _changes(baseline, candidate)
    hidden = 0
    if len(changes) > _MAX_PAIRS:
        kept = [change for change in changes if change.kind != "unchanged" or change.moved][:_MAX_PAIRS]
        hidden, changes = len(changes) - len(kept), kept
    figure, ax = _axes(ax, (9.0, min(30.0, max(3.0, 0.32 * len(changes) + 1.6))))
    counts = {kind: sum(1 for change in changes if change.kind == kind) for kind in _KIND_ORDER}
    title = f"Baseline → candidate: {counts['fixed']} fixed, {counts['regressed']} regressed"
    ax.set_title(title + (f" ({hidden} unchanged pairs not shown)" if hidden else ""))
    if not changes:
        _no_data(ax, "metric results in common")
        return figure
    for row, change in enumerate(changes):
        color = _KIND_COLORS[change.kind]
        before, after = change.before, change.after
        if before is not None and after is not None and _scored(before) and _scored(after):
            ax.plot([before.score, after.score], [row, row], color=color, linewidth=2.5, alpha=0.8)
        if before is not None and _scored(before):
            ax.scatter([before.score], [row], s=46, facecolors="white", edgecolors="#57606a", zorder=3)
        if after is not None and _scored(after):
            ax.scatter([after.score], [row], s=46, color=color, zorder=4)
    ax.set_yticks(range(len(changes)), [change.label for change in changes])
    for label, change in zip(ax.get_yticklabels(), changes, strict=True):
        label.set_color(_KIND_COLORS[change.kind] if change.kind != "unchanged" else "black")
    ax.invert_yaxis()
    cells = [cell for change in changes for cell in (change.before, change.after) if cell is not None]
    scores = [cell.score for cell in cells if not math.isnan(cell.score)]
    ax.set_xlim(min([0.0, *scores]) - 0.05, max([1.0, *scores]) + 0.05)
    ax.set_xlabel("mean score")
    ax.grid(axis="x", alpha=0.3)
    handles = [
        Line2D([], [], color=FAILED_COLOR, linewidth=2.5, label="regressed"),
        Line2D([], [], color=PASSED_COLOR, linewidth=2.5, label="fixed"),
        Line2D([], [], color=NEUTRAL_COLOR, linewidth=2.5, label="unchanged"),
        Line2D([], [], marker="o", linestyle="", markerfacecolor="white", markeredgecolor="#57606a", label="baseline"),
        Line2D([], [], marker="o", linestyle="", color="#24292f", label="candidate"),
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    return figure


def plot_report(report: EvaluationReport) -> Figure:
    """An overview: score distribution and pass rates side by side, the case × metric heat map below.

    Args:
        report: The report to plot.

    Returns:
        A new figure with the three charts (and the heat map's colour bar).

    Raises:
        MissingDependencyError: matplotlib is not installed.
    """
    heat_height = min(24.0, max(2.5, 0.45 * len(report.case_summaries) + 1.5))
    figure = _figure((13.0, 4.2 + heat_height))
    grid = figure.add_gridspec(2, 2, height_ratios=[4.2, heat_height])
    plot_score_distribution(report, ax=figure.add_subplot(grid[0, 0]))
    plot_pass_rates(report, ax=figure.add_subplot(grid[0, 1]))
    _draw_heatmap(report, figure.add_subplot(grid[1, :]))
    status = report.overall_status.value.replace("_", " ")
    figure.suptitle(f"{report.app_name} / {report.eval_set_id}: {status}", fontweight="bold")
    return figure
