"""Plots of a finished report, drawn with matplotlib's object-oriented API.

Each function returns a :class:`matplotlib.figure.Figure` and never calls ``pyplot``, so no GUI
backend is needed and nothing pops up. In Jupyter a new figure is shown once, as pyplot's inline
backend shows its figures: as the cell's value, or else when the cell that made it ends (so
``fig = report.plot()`` followed by more code shows it too). Functions that draw a single chart
accept ``ax=`` to draw into an existing axes instead (they then return that axes' figure, and show
nothing themselves). matplotlib is imported only when a plot is drawn.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agenteval._util.gc_tuning import fewer_collections
from agenteval.analysis.report import CaseSummary, case_views, run_views
from agenteval.errors import ConfigError, MissingDependencyError
from agenteval.evalresult.models import EvalMetricResult
from agenteval.evalresult.summarize import MetricRow, averaged_metrics, headline_measure
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

    from agenteval.analysis._frames import CaseAcrossRuns, RunView
    from agenteval.analysis.report import EvaluationReport

__all__ = [
    "plot_comparison",
    "plot_failure_comparison",
    "plot_failures",
    "plot_flakiness",
    "plot_heatmap",
    "plot_pass_rates",
    "plot_report",
    "plot_score_distribution",
    "report_png",
]

PASSED_COLOR = "#1a7f37"
FAILED_COLOR = "#cf222e"
NEUTRAL_COLOR = "#6e7781"
_EVALUATED = ("passed", "failed")


def _figure(figsize: tuple[float, float], *, show: bool = True) -> Figure:
    """A new figure; with ``show``, one a notebook shows at the end of the cell unless displayed before."""
    try:
        # Importing matplotlib next to a large report would otherwise set off full collections.
        with fewer_collections():
            from matplotlib.figure import Figure
    except ImportError as exc:
        raise MissingDependencyError("plotting", "plot", "matplotlib") from exc
    from agenteval.notebook._figures import note_displayed, show_at_end_of_cell

    class NotebookFigure(Figure):
        """A figure that shows itself as an image in a notebook.

        Figures are made without pyplot (no GUI backend, nothing kept alive by a global figure
        list), so Jupyter's inline backend does not know them; a PNG representation does it.
        """

        def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> None:
            # IPython asks for this first on every display (the cell's value, display(fig)), then
            # draws the PNG with matplotlib's printer for Figure when pyplot is loaded, else with
            # _repr_png_: note the display here, and leave the drawing to them.
            note_displayed(self)

        def _repr_png_(self) -> bytes:
            buffer = io.BytesIO()
            self.savefig(buffer, format="png", bbox_inches="tight")
            return buffer.getvalue()

    figure = NotebookFigure(figsize=figsize, layout="constrained")
    if show:
        show_at_end_of_cell(figure)
    return figure


def _parent(ax: Axes) -> Figure | SubFigure:
    """The figure or subfigure ``ax`` is on."""
    parent: Figure | SubFigure | None = ax.figure  # typed optional up to matplotlib 3.9
    if parent is None:
        raise ValueError("ax does not belong to a figure")
    return parent


def _root(ax: Axes) -> Figure:
    """The figure ``ax`` is drawn on: the root figure when ``ax`` is on a subfigure.

    ``ax.get_figure(root=True)`` needs matplotlib 3.10; ``(Sub)Figure.figure`` is the root figure
    in every version this package supports (3.8 and later).
    """
    return _parent(ax).figure


def _axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    if ax is not None:
        return _root(ax), ax
    figure = _figure(figsize)
    return figure, figure.add_subplot()


def _per_metric_size(names: Sequence[str]) -> tuple[float, float]:
    """Figure size of a chart with one group per metric."""
    return max(5.0, 1.6 * len(names) + 2), 4.0


def _evaluated_results(report: EvaluationReport) -> pd.DataFrame:
    """The rows of ``report.metrics`` that passed or failed (not those not evaluated), but ``reason`` and ``cached``.

    Made from the rows of the case results (:func:`~agenteval.analysis.report.run_views`): the reasons of a
    loaded report's metrics may be in its turns, which the plots do not show.
    """
    rows = []
    with fewer_collections():  # the rows' objects, and the first import of pandas, with a large report alive
        for run in run_views(report):
            for metric in run.overall_eval_metric_results:
                status = str(metric.eval_status or "")
                if status not in _EVALUATED:
                    continue
                measure_name, measure = "", math.nan
                if isinstance(metric, MetricRow):
                    measure_name, measure = metric.measure_name, metric.measure
                elif isinstance(metric, EvalMetricResult):
                    measure_name, measure = headline_measure(metric)
                values = (run.run_id, run.eval_id, metric.metric_name, metric.score, status, metric.threshold)
                rows.append((*values, measure_name, measure))
        import pandas as pd

    frame = pd.DataFrame.from_records(rows, columns=list(_RESULT_COLUMNS))
    dtypes = {"run_id": "int64", "score": "float64", "threshold": "float64", "measure": "float64"}
    return frame.astype(dtypes | {column: str for column in _RESULT_COLUMNS if column not in dtypes})


_RESULT_COLUMNS = ("run_id", "eval_id", "metric_name", "score", "status", "threshold", "measure_name", "measure")


def _no_data(ax: Axes, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what}", ha="center", va="center", transform=ax.transAxes, color=NEUTRAL_COLOR)
    ax.set_xticks([])
    ax.set_yticks([])


def _plain(text: str) -> str:
    """``text`` as matplotlib draws it literally: a pair of ``$`` would otherwise start mathtext.

    Every string that comes from the user (case ids, metric names, the app and eval set) goes through here.
    """
    return text.replace("$", r"\$")


def _label_metrics(ax: Axes, names: Sequence[str]) -> None:
    ax.set_xticks(range(len(names)))
    rotate = len(names) > 2 and max(map(len, names)) > 14
    ax.set_xticklabels(
        [_plain(name) for name in names], rotation=20 if rotate else 0, ha="right" if rotate else "center"
    )


_MAX_STRIP_POINTS = 300  # past this many results of one metric, a histogram instead of points
_HISTOGRAM_BINS = 20


def plot_score_distribution(report: EvaluationReport, *, measure: bool = False, ax: Axes | None = None) -> Figure:
    """Each metric's scores over every case and run: a box plot with the points beside it.

    Points are green when that result passed and red when it failed; a dashed tick marks each
    metric's threshold. Results that were not evaluated are left out. A metric with more than 300
    results gets a histogram of its scores (failed and passed counts, stacked) beside its box
    instead of one point per result, which stays readable and quick to draw for large eval sets.

    With ``measure=True``, a metric that records a measure (``report.metrics``' ``measure``: a
    ROUGE F1, the largest JSON number difference) is drawn by that continuous value instead of its
    score (for ROUGE, 0 or 1 per turn by the F1 threshold), its name followed by the measure's; its
    points keep the colour of the result's verdict, and it has no threshold tick (the threshold
    applies to the score).

    Args:
        report: The report to plot.
        measure: Draw each metric's measure where it records one.
        ax: Draw into this axes instead of a new figure.

    Returns:
        The figure drawn on.

    Raises:
        MissingDependencyError: matplotlib is not installed.
    """
    names = report.metric_names
    figure, ax = _axes(ax, _per_metric_size(names))
    _draw_distribution(report, _evaluated_results(report), names, ax, measure=measure)
    return figure


def _measured(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """``frame`` with each metric that records a measure scored by it, and the name of each such metric's measure.

    A metric's measure is the first one its rows name; its rows without that measure are left out.
    """
    import numpy as np
    import pandas as pd

    recorded = frame[(frame["measure_name"] != "") & np.isfinite(frame["measure"].to_numpy(dtype=float))]
    measure_names = {
        str(k): str(v) for k, v in recorded.groupby("metric_name", sort=False)["measure_name"].first().items()
    }
    kept = recorded[recorded["measure_name"] == recorded["metric_name"].map(measure_names)]
    scored = frame[~frame["metric_name"].isin(list(measure_names))]
    return pd.concat([scored, kept.assign(score=kept["measure"])]), measure_names


def _draw_distribution(
    report: EvaluationReport, frame: pd.DataFrame, names: Sequence[str], ax: Axes, *, measure: bool = False
) -> None:
    import numpy as np

    measure_names: dict[str, str] = {}
    if measure:
        frame, measure_names = _measured(frame)
    ax.set_title("Score distribution per metric" + (", by measure where recorded" if measure else ""))
    if frame.empty:
        _no_data(ax, "metric results")
        return
    thresholds = {metric.metric_name: metric.threshold for metric in report.eval_metrics}
    low, high = min(0.0, float(frame["score"].min())), max(1.0, float(frame["score"].max()))
    edges = np.linspace(low, high, _HISTOGRAM_BINS + 1)
    rng = np.random.default_rng(0)  # fixed jitter: the same report draws the same picture
    handles: dict[str, Artist] = {}
    sizes: set[int] = set()
    for index, (name, rows) in enumerate((name, frame[frame["metric_name"] == name]) for name in names):
        if rows.empty:
            continue
        scores = rows["score"].to_numpy(dtype=float)
        passed = (rows["status"] == "passed").to_numpy()
        sizes.add(len(scores))
        histogram = len(scores) > _MAX_STRIP_POINTS
        ax.boxplot(
            [scores[np.isfinite(scores)]],
            positions=[index - 0.18 if histogram else index],
            widths=0.28 if histogram else 0.5,
            showfliers=False,
            manage_ticks=False,
            boxprops={"color": "0.45"},
            whiskerprops={"color": "0.45"},
            capprops={"color": "0.45"},
            medianprops={"color": "#24292f", "linewidth": 1.5},
        )
        if histogram:
            handles.update(_histogram(ax, index, scores, passed, edges))
        else:
            jitter = rng.uniform(-0.15, 0.15, len(scores))
            for status, color, mask in (("passed", PASSED_COLOR, passed), ("failed", FAILED_COLOR, ~passed)):
                if mask.any():
                    x, y = index + jitter[mask], scores[mask]
                    handles[status] = ax.scatter(x, y, s=18, color=color, alpha=0.75, zorder=3)
        if name in measure_names:
            continue  # the threshold is the score's, not the measure's
        threshold = thresholds.get(name, float(rows["threshold"].iloc[0]))
        handles["threshold"] = ax.hlines(
            threshold,
            index - 0.35,
            index + (0.4 if histogram else 0.35),
            colors="0.3",
            linestyles="--",
            linewidth=1,
            zorder=2.5,
        )
    _label_metrics(ax, [f"{name}\n({measure_names[name]})" if name in measure_names else name for name in names])
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_ylim(low - 0.05 * (high - low), high + 0.25 * (high - low))  # head room for the legend
    ax.set_yticks([tick for tick in ax.get_yticks() if low - 1e-9 <= tick <= high + 1e-9])
    ax.set_ylabel("score or measure" if measure_names else "score")
    if max(sizes, default=0) > _MAX_STRIP_POINTS:
        count = f"{max(sizes)}" if len(sizes) == 1 else f"up to {max(sizes)}"
        ax.set_xlabel(f"{count} results per metric: histograms beside the boxes", fontsize="small")
    ax.grid(axis="y", alpha=0.3)
    order = [label for label in ("passed", "failed", "threshold") if label in handles]
    ax.legend([handles[label] for label in order], order, loc="upper center", fontsize="small", ncols=3, frameon=False)


def _histogram(ax: Axes, index: int, scores: np.ndarray, passed: np.ndarray, edges: np.ndarray) -> dict[str, Artist]:
    """Horizontal bars right of position ``index``: how many results failed, then passed, per score bin.

    The longest bar is 0.36 wide; a bin holding any result is at least 0.012 wide, so that a few
    failures among thousands of results stay visible.
    """
    import numpy as np

    finite = np.isfinite(scores)
    counts = {
        "failed": np.histogram(scores[finite & ~passed], edges)[0],
        "passed": np.histogram(scores[finite & passed], edges)[0],
    }
    scale = 0.36 / max(1, int((counts["failed"] + counts["passed"]).max()))
    widths = {status: np.where(count > 0, np.maximum(count * scale, 0.012), 0.0) for status, count in counts.items()}
    centers, height = (edges[:-1] + edges[1:]) / 2, 0.9 * (edges[1] - edges[0])
    handles: dict[str, Artist] = {}
    for status, color, start in (("failed", FAILED_COLOR, 0.0), ("passed", PASSED_COLOR, widths["failed"])):
        keep = counts[status] > 0
        if keep.any():
            left = index + 0.02 + np.broadcast_to(start, centers.shape)[keep]
            bars = ax.barh(centers[keep], widths[status][keep], height, left=left, color=color, alpha=0.8, zorder=2)
            handles[status] = bars.patches[0]
    return handles


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
    names = report.metric_names
    figure, ax = _axes(ax, _per_metric_size(names))
    _draw_pass_rates(_evaluated_results(report), names, ax)
    return figure


def _draw_pass_rates(frame: pd.DataFrame, names: Sequence[str], ax: Axes) -> None:
    from matplotlib import colormaps
    from matplotlib.ticker import PercentFormatter

    runs = sorted({int(run) for run in frame["run_id"]})
    ax.set_title("Pass rate per metric" + (" and run" if len(runs) > 1 else ""))
    if frame.empty:
        _no_data(ax, "metric results")
        return
    passed = frame["status"] == "passed"
    rates = passed.groupby([frame["run_id"].astype(int), frame["metric_name"]]).mean()
    width = 0.8 / len(runs)
    blues = colormaps["Blues"]
    for position, run in enumerate(runs):
        values = [float(rates.get((run, name), math.nan)) for name in names]
        offsets = [i - 0.4 + width * (position + 0.5) for i in range(len(names))]
        color = blues(0.45 + 0.45 * position / max(1, len(runs) - 1)) if len(runs) > 1 else "#0969da"
        bars = ax.bar(
            offsets, [0 if math.isnan(r) else r for r in values], width * 0.92, color=color, label=f"run {run}"
        )
        labels = ["n/a" if math.isnan(r) else f"{r:.0%}" for r in values]
        ax.bar_label(bars, labels=labels, fontsize="x-small" if len(runs) > 3 else "small", padding=2)
    _label_metrics(ax, names)
    ax.set_ylim(0, 1.3 if len(runs) > 1 else 1.12)  # head room for the labels and the legend
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylabel("pass rate")
    ax.grid(axis="y", alpha=0.3)
    if len(runs) > 1:
        ax.legend(loc="upper center", fontsize="small", ncols=min(len(runs), 6), frameon=False)


@dataclass(frozen=True, slots=True)
class _Cell:
    score: float
    status: EvalStatus | None


def _cells(report: EvaluationReport) -> dict[tuple[str, str], _Cell]:
    """Each (case, metric): the score averaged over runs and whether that average passes.

    As the case summaries' ``metric_results`` have them, from the summaries once the report has read its
    records, else from the rows of its case results.
    """
    cells: dict[tuple[str, str], _Cell] = {}
    for case in case_views(report):
        if isinstance(case, CaseSummary):
            for metric in case.metric_results:
                cells[(case.eval_id, metric.metric_name)] = _Cell(metric.score, metric.eval_status)
        else:
            for name, cell in _averaged(case.runs).items():
                cells[(case.eval_id, name)] = cell
    return cells


def _averaged(runs: Sequence[RunView]) -> dict[str, _Cell]:
    """Each metric averaged over the runs, as :func:`~agenteval.evalresult.summarize.average_metric_results` does."""
    return {metric.metric_name: _Cell(metric.score, metric.eval_status) for metric in averaged_metrics(runs)}


_MAX_HEATMAP_ROWS = 40  # the heat map shows at most this many cases, those not passing first
_HEATMAP_MAX_HEIGHT = 14.0  # inches: 40 rows of about 0.3 inch, plus the title and the labels


def _errored(report: EvaluationReport) -> set[str]:
    return {case.eval_id for case in case_views(report) if any(run.error_message for run in case.runs)}


def _case_kind(summary: CaseAcrossRuns, errored: set[str]) -> str:
    if summary.overall_status is EvalStatus.NOT_EVALUATED and summary.eval_id not in errored:
        return "not evaluated"
    if summary.overall_status is EvalStatus.PASSED and summary.eval_id not in errored:
        return "passing"
    return "failing"  # failed, errored (in any run) or an unexpected status


@dataclass(frozen=True, slots=True)
class _HeatmapRows:
    cases: list[str]
    """The cases shown, top to bottom."""
    hidden: dict[str, int]
    """How many cases of each kind (failing, not evaluated, passing) are not shown."""
    passing_shown: bool = False
    """Whether some of the cases shown passed (when some are hidden)."""

    @property
    def note(self) -> str:
        """What is left out, or nothing when every case is shown."""
        parts = [f"{count} {kind}" for kind, count in self.hidden.items() if count]
        if not parts:
            return ""
        total = len(self.cases) + sum(self.hidden.values())
        listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        noun = "case" if sum(self.hidden.values()) == 1 else "cases"
        if self.passing_shown:
            rule = "those failed, errored or not evaluated first, then the lowest-scoring passing ones"
        else:
            rule = "the first that failed, errored or were not evaluated"
        return f"{len(self.cases)} of {total} cases shown: {rule}\n… {listed} {noun} not shown"


def _heatmap_rows(report: EvaluationReport, names: Sequence[str], cells: dict[tuple[str, str], _Cell]) -> _HeatmapRows:
    """The cases to draw: all of them, or past 40 the most telling ones.

    Those are the cases that failed, errored or were not evaluated (in eval-set order), then the
    passing cases with the lowest mean score over their metrics.
    """
    summaries = case_views(report)
    if len(summaries) <= _MAX_HEATMAP_ROWS:
        return _HeatmapRows([summary.eval_id for summary in summaries], {})
    errored = _errored(report)
    kinds = {summary.eval_id: _case_kind(summary, errored) for summary in summaries}

    def mean_score(eval_id: str) -> float:
        scores = [
            cell.score
            for name in names
            if (cell := cells.get((eval_id, name))) is not None
            and cell.status in (EvalStatus.PASSED, EvalStatus.FAILED)
            and not math.isnan(cell.score)
        ]
        return sum(scores) / len(scores) if scores else math.inf

    ordered = [eval_id for kind in ("failing", "not evaluated") for eval_id, k in kinds.items() if k == kind]
    ordered += sorted((eval_id for eval_id, k in kinds.items() if k == "passing"), key=mean_score)
    shown = ordered[:_MAX_HEATMAP_ROWS]
    hidden = dict.fromkeys(("failing", "not evaluated", "passing"), 0)
    for eval_id in ordered[_MAX_HEATMAP_ROWS:]:
        hidden[kinds[eval_id]] += 1
    return _HeatmapRows(shown, hidden, passing_shown=any(kinds[eval_id] == "passing" for eval_id in shown))


def _heatmap_height(report: EvaluationReport, *, margin: float, minimum: float) -> float:
    """Height in inches of the heat map: 0.45 inch a row, bounded (rows get thinner past 27 cases)."""
    cases = len(case_views(report))
    rows = min(cases, _MAX_HEATMAP_ROWS)
    note = 0.4 if cases > rows else 0.0  # the note under the map
    return min(_HEATMAP_MAX_HEIGHT, max(minimum, 0.45 * rows + margin)) + note


def _draw_heatmap(report: EvaluationReport, names: Sequence[str], ax: Axes) -> None:
    import numpy as np
    from matplotlib import colormaps
    from matplotlib.patches import Rectangle

    runs = f" over {report.num_runs} runs" if report.num_runs > 1 else ""
    ax.set_title(f"Mean score per case and metric{runs} (✗ = failed)")
    if not case_views(report) or not names:
        _no_data(ax, "metric results")
        return
    cells = _cells(report)
    selection = _heatmap_rows(report, names, cells)
    cases = selection.cases
    values = np.full((len(cases), len(names)), np.nan)
    for row, case in enumerate(cases):
        for col, name in enumerate(names):
            found = cells.get((case, name))
            if found is not None and found.status in (EvalStatus.PASSED, EvalStatus.FAILED):
                values[row, col] = found.score
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
    errors = _errored(report)
    ax.set_yticks(range(len(cases)), [_plain(f"{case} (error)" if case in errors else case) for case in cases])
    ax.set_xticks(
        range(len(names)),
        [_plain(name) for name in names],
        rotation=15 if len(names) > 2 else 0,
        ha="right" if len(names) > 2 else "center",
    )
    if selection.note:
        ax.set_xlabel(selection.note, fontsize="small", color="#57606a")
    ax.tick_params(length=0)
    _parent(ax).colorbar(image, ax=ax, label="mean score", shrink=0.9)


def plot_heatmap(report: EvaluationReport, *, ax: Axes | None = None) -> Figure:
    """A case × metric heat map of the score averaged over runs, annotated with the values.

    Cells whose averaged result failed are framed and marked ``✗``; metrics a case was not
    evaluated on are grey (``n/a``). Case ids of cases that errored are suffixed ``(error)``.
    With more than 40 cases, only 40 are drawn: the cases that failed,
    errored or were not evaluated first, then the lowest-scoring passing ones; a note under the
    map says how many cases are not shown, and the figure's height stays bounded.

    Args:
        report: The report to plot.
        ax: Draw into this axes instead of a new figure (a colour bar is added beside it).

    Returns:
        The figure drawn on.

    Raises:
        MissingDependencyError: matplotlib is not installed.
    """
    names = report.metric_names
    figure, ax = _axes(ax, (min(20.0, 2.2 * len(names) + 4), _heatmap_height(report, margin=1.8, minimum=3.0)))
    _draw_heatmap(report, names, ax)
    return figure


@dataclass(frozen=True, slots=True)
class _Change:
    case: str
    metric: str
    before: _Cell | None
    after: _Cell | None
    kind: str
    """The change as :func:`agenteval.analysis.compare.compare` names it."""

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


_KIND_COLORS = {"regressed": FAILED_COLOR, "fixed": PASSED_COLOR}
_KIND_ORDER = {"regressed": 0, "fixed": 1}
_MAX_PAIRS = 60


def _side(row: dict[Any, Any], which: str) -> _Cell | None:
    status, score = str(row[f"{which}_status"]), row[f"{which}_score"]
    if not status:
        return None
    return _Cell(math.nan if score is None else float(score), EvalStatus(status))


def _changes(baseline: EvaluationReport, candidate: EvaluationReport) -> list[_Change]:
    from agenteval.analysis.compare import compare

    rows = compare(baseline, candidate).table.to_dict("records")
    changes = [
        _Change(
            str(row["eval_id"]),
            str(row["metric_name"]),
            _side(row, "baseline"),
            _side(row, "candidate"),
            str(row["change"]),
        )
        for row in rows
    ]
    return sorted(changes, key=lambda change: (_KIND_ORDER.get(change.kind, 2), not change.moved))


def plot_comparison(baseline: EvaluationReport, candidate: EvaluationReport, *, ax: Axes | None = None) -> Figure:
    """Each (case, metric) score before and after, as a dumbbell chart.

    A hollow dot is the baseline's score (averaged over its runs), a filled dot the candidate's, and
    the line between them is red for a regression (passed before, not now), green for a fix (passes
    now, did not before) and grey otherwise, as :func:`agenteval.analysis.compare.compare` classifies them; a
    case that failed before it was scored (the agent raised, say) counts as failed, with no score.
    Regressions are listed first, then fixes, then the rest. Beyond 60 pairs, unchanged pairs whose
    score did not move are left out (the title says how many).

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
    counts = {kind: sum(1 for change in changes if change.kind == kind) for kind in _KIND_ORDER}
    hidden = 0
    if len(changes) > _MAX_PAIRS:
        kept = [change for change in changes if change.kind != "unchanged" or change.moved][:_MAX_PAIRS]
        hidden, changes = len(changes) - len(kept), kept
    figure, ax = _axes(ax, (9.0, min(30.0, max(3.0, 0.32 * len(changes) + 1.6))))
    title = f"Baseline → candidate: {counts['fixed']} fixed, {counts['regressed']} regressed"
    ax.set_title(title + (f" ({hidden} pairs not shown)" if hidden else ""))
    if not changes:
        _no_data(ax, "metric results in common")
        return figure
    for row, change in enumerate(changes):
        color = _KIND_COLORS.get(change.kind, NEUTRAL_COLOR)
        before, after = change.before, change.after
        if before is not None and after is not None and _scored(before) and _scored(after):
            ax.plot([before.score, after.score], [row, row], color=color, linewidth=2.5, alpha=0.8)
        if before is not None and _scored(before):
            ax.scatter([before.score], [row], s=46, facecolors="white", edgecolors="#57606a", zorder=3)
        if after is not None and _scored(after):
            ax.scatter([after.score], [row], s=46, color=color, zorder=4)
    ax.set_yticks(range(len(changes)), [_plain(change.label) for change in changes])
    for label, change in zip(ax.get_yticklabels(), changes, strict=True):
        label.set_color(_KIND_COLORS.get(change.kind, "black"))
    ax.invert_yaxis()
    cells = [cell for change in changes for cell in (change.before, change.after) if cell is not None]
    scores = [cell.score for cell in cells if not math.isnan(cell.score)]
    ax.set_xlim(min([0.0, *scores]) - 0.05, max([1.0, *scores]) + 0.05)
    ax.set_xlabel("mean score")
    ax.grid(axis="x", alpha=0.3)
    handles = [
        Line2D([], [], color=FAILED_COLOR, linewidth=2.5, label="regressed"),
        Line2D([], [], color=PASSED_COLOR, linewidth=2.5, label="fixed"),
        Line2D([], [], color=NEUTRAL_COLOR, linewidth=2.5, label="other"),
        Line2D([], [], marker="o", linestyle="", markerfacecolor="white", markeredgecolor="#57606a", label="baseline"),
        Line2D([], [], marker="o", linestyle="", color="#24292f", label="candidate"),
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    return figure


_CATEGORY_COLORS = {"flaky": "#bf8700", "stable_fail": FAILED_COLOR, "stable_pass": PASSED_COLOR}
"""The colour of each flakiness category, in the order cases with the same flip rate are listed."""
_MAX_FLAKINESS_ROWS = 40


def plot_flakiness(report: EvaluationReport, *, ax: Axes | None = None) -> Figure:
    """Cases by flip rate across runs: one horizontal bar per case, the flakiest at the top.

    A bar's length is the case's flip rate and its colour the case's category, as
    :attr:`~agenteval.EvaluationReport.flakiness` gives them: amber for ``flaky``, red for
    ``stable_fail`` and green for ``stable_pass`` (whose bars, with a flip rate of 0, are empty); the
    label beside each bar counts the runs that passed (``2/3 passed``). Cases are sorted by flip
    rate, then flaky, stable failing and stable passing, then in eval-set order. With more than 40
    cases, the first 40 are drawn and a note under the chart says how many of each category are not.

    Args:
        report: The report to plot.
        ax: Draw into this axes instead of a new figure.

    Returns:
        The figure drawn on.

    Raises:
        MissingDependencyError: matplotlib is not installed.
    """
    from matplotlib.patches import Patch
    from matplotlib.ticker import PercentFormatter

    frame = report.flakiness
    rank = {category: index for index, category in enumerate(_CATEGORY_COLORS)}
    frame = frame.assign(rank=frame["category"].map(rank), position=range(len(frame)))
    frame = frame.sort_values(["flip_rate", "rank", "position"], ascending=[False, True, True])
    shown, hidden = frame.iloc[:_MAX_FLAKINESS_ROWS], frame.iloc[_MAX_FLAKINESS_ROWS:]
    figure, ax = _axes(ax, (8.0, min(_HEATMAP_MAX_HEIGHT, max(2.5, 0.32 * len(shown) + 1.8))))
    runs = "1 run" if report.num_runs == 1 else f"{report.num_runs} runs"
    ax.set_title(f"Flip rate per case over {runs}: {int((frame['category'] == 'flaky').sum())} of {len(frame)} flaky")
    if shown.empty:
        _no_data(ax, "cases")
        return figure
    rows = range(len(shown))
    colors = [_CATEGORY_COLORS[category] for category in shown["category"]]
    bars = ax.barh(rows, shown["flip_rate"], height=0.6, color=colors)
    passed = [f"{passed}/{count} passed" for passed, count in zip(shown["passed_runs"], shown["runs"], strict=True)]
    ax.bar_label(bars, labels=passed, padding=3, fontsize="small")
    ax.set_yticks(rows, [_plain(eval_id) for eval_id in shown["eval_id"]])
    for label, color in zip(ax.get_yticklabels(), colors, strict=True):
        label.set_color(color)
    ax.invert_yaxis()
    ax.set_xlim(0.0, 1.3)  # room for the labels of the longest bars
    ax.set_xticks([0.0, 0.25, 0.5, 0.75, 1.0])
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    xlabel = "flip rate: share of consecutive runs of which one passed and the other did not"
    if not hidden.empty:
        counts = hidden["category"].value_counts()
        left_out = ", ".join(f"{counts[category]} {category}" for category in _CATEGORY_COLORS if category in counts)
        xlabel += f"\n{len(shown)} of {len(frame)} cases shown, the flakiest first; not shown: {left_out}"
    ax.set_xlabel(xlabel, fontsize="small")
    ax.grid(axis="x", alpha=0.3)
    present = set(frame["category"])
    handles = [
        Patch(color=color, label=category) for category, color in _CATEGORY_COLORS.items() if category in present
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    return figure


_FAILURE_BARS = ("metric", "category")
_CASE_ERROR = "(case error)"
"""The bar of the failures with no metric: case runs that failed unscored."""


def _failure_counts(report: EvaluationReport, by: str) -> pd.DataFrame:
    """The report's failures counted: a row per bar (metric or category), a column per stack."""
    import pandas as pd

    from agenteval.analysis.diagnostics.failures import FAILURE_CATEGORIES

    if by not in _FAILURE_BARS:
        raise ConfigError(f'by must be "metric" or "category", got {by!r}')
    frame = report.failures
    frame = frame.assign(metric_name=frame["metric_name"].where(frame["metric_name"] != "", _CASE_ERROR))
    metrics = [name for name in [*report.metric_names, _CASE_ERROR] if name in set(frame["metric_name"])]
    categories = [category for category in FAILURE_CATEGORIES if category in set(frame["category"])]
    counts = pd.crosstab(frame["metric_name"], frame["category"]).reindex(index=metrics, columns=categories)
    return counts if by == "metric" else counts.T


def _draw_failures(counts: pd.DataFrame, colors: dict[str, Any], ax: Axes, title: str, top: float) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.set_title(_plain(title))
    if counts.empty:
        _no_data(ax, "failures")
        return
    bottom = [0.0] * len(counts.index)
    positions = range(len(counts.index))
    for stack in counts.columns:
        values = [float(value) for value in counts[stack].fillna(0)]
        ax.bar(positions, values, 0.6, bottom=bottom, color=colors[stack], label=_plain(str(stack)))
        bottom = [low + value for low, value in zip(bottom, values, strict=True)]
    totals = ax.bar(positions, [0.0] * len(bottom), 0.6, bottom=bottom)
    ax.bar_label(totals, labels=[f"{total:g}" for total in bottom], padding=2, fontsize="small")
    _label_metrics(ax, [str(name) for name in counts.index])
    ax.set_ylim(0, top * 1.15)
    ax.set_ylabel("failures")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(axis="y", alpha=0.3)


def _stack_colors(stacks: Sequence[str]) -> dict[str, Any]:
    """A colour per stack: each failure category keeps its own, metrics take the palette in order."""
    from matplotlib import colormaps

    from agenteval.analysis.diagnostics.failures import FAILURE_CATEGORIES

    palette = colormaps["tab20"]
    if all(stack in FAILURE_CATEGORIES for stack in stacks):
        return {stack: palette(FAILURE_CATEGORIES.index(stack)) for stack in stacks}
    return {stack: palette(index % 20) for index, stack in enumerate(stacks)}


def plot_failures(report: EvaluationReport, *, by: str = "metric", ax: Axes | None = None) -> Figure:
    """The report's failures (:attr:`~agenteval.EvaluationReport.failures`) counted in stacked bars.

    With ``by="metric"`` each metric has a bar, stacked by failure category (``missing_tool``,
    ``wrong_arguments``, ``judge_rejected``, …), and case runs that failed before they were scored
    (``agent_error``, ``timeout``, ``not_evaluated``) have a bar of their own, ``(case error)``; with
    ``by="category"`` each category has a bar, stacked by metric. A number above each bar gives its
    total. A category keeps its colour in every chart.

    Args:
        report: The report to plot.
        by: ``"metric"`` or ``"category"``: what each bar is.
        ax: Draw into this axes instead of a new figure.

    Returns:
        The figure drawn on.

    Raises:
        ConfigError: ``by`` is neither ``"metric"`` nor ``"category"``.
        MissingDependencyError: matplotlib is not installed.
    """
    counts = _failure_counts(report, by)
    figure, ax = _axes(ax, _per_metric_size([str(name) for name in counts.index]))
    top = float(counts.sum(axis=1).max()) if not counts.empty else 1.0
    _draw_failures(counts, _stack_colors(list(counts.columns)), ax, f"Failures per {by}", top)
    if not counts.empty:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    return figure


def plot_failure_comparison(baseline: EvaluationReport, candidate: EvaluationReport, *, by: str = "metric") -> Figure:
    """Both reports' failures side by side, as :func:`plot_failures` draws them, on one scale.

    The two charts share their bars (the metrics or categories of either report), their colours and
    their y axis, so that the heights compare directly.

    Args:
        baseline: The report before the change (left).
        candidate: The report after the change (right).
        by: ``"metric"`` or ``"category"``: what each bar is.

    Returns:
        A new figure with the two charts.

    Raises:
        ConfigError: ``by`` is neither ``"metric"`` nor ``"category"``.
        MissingDependencyError: matplotlib is not installed.
    """
    before, after = _failure_counts(baseline, by), _failure_counts(candidate, by)
    bars = list(dict.fromkeys([*before.index, *after.index]))
    stacks = list(dict.fromkeys([*before.columns, *after.columns]))
    if by == "metric":  # the categories in their own order, whichever report has them
        from agenteval.analysis.diagnostics.failures import FAILURE_CATEGORIES

        stacks = [category for category in FAILURE_CATEGORIES if category in stacks]
    before, after = (counts.reindex(index=bars, columns=stacks).fillna(0) for counts in (before, after))
    width, height = _per_metric_size([str(bar) for bar in bars])
    figure = _figure((2 * width + 2, height))
    left = figure.add_subplot(1, 2, 1)
    right = figure.add_subplot(1, 2, 2, sharey=left)
    colors = _stack_colors(stacks)
    top = max([float(counts.sum(axis=1).max()) for counts in (before, after) if not counts.empty] or [1.0])
    _draw_failures(before if bars else before.iloc[:0], colors, left, f"Baseline: failures per {by}", top)
    _draw_failures(after if bars else after.iloc[:0], colors, right, f"Candidate: failures per {by}", top)
    if bars:
        right.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    return figure


def plot_report(report: EvaluationReport, *, measure: bool = False) -> Figure:
    """An overview: score distribution and pass rates side by side, the case × metric heat map below.

    The charts behave as :func:`plot_score_distribution`, :func:`plot_pass_rates` and
    :func:`plot_heatmap` do, so the figure stays readable (and bounded in size) for large eval sets.

    Args:
        report: The report to plot.
        measure: Draw each metric's measure (a ROUGE F1) instead of its score in the distribution,
            where it records one (see :func:`plot_score_distribution`).

    Returns:
        A new figure with the three charts (and the heat map's colour bar).

    Raises:
        MissingDependencyError: matplotlib is not installed.
    """
    return _overview(report, measure=measure, show=True)


def report_png(report: EvaluationReport, *, dpi: int = 100) -> bytes:
    """The overview :func:`plot_report` draws, as PNG bytes, for a file: a notebook does not show it.

    Raises:
        MissingDependencyError: matplotlib is not installed.
    """
    buffer = io.BytesIO()
    _overview(report, measure=False, show=False).savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def _overview(report: EvaluationReport, *, measure: bool, show: bool) -> Figure:
    heat_height = _heatmap_height(report, margin=1.5, minimum=2.5)
    figure = _figure((13.0, 4.2 + heat_height), show=show)
    grid = figure.add_gridspec(2, 2, height_ratios=[4.2, heat_height])
    names, frame = report.metric_names, _evaluated_results(report)
    _draw_distribution(report, frame, names, figure.add_subplot(grid[0, 0]), measure=measure)
    _draw_pass_rates(frame, names, figure.add_subplot(grid[0, 1]))
    _draw_heatmap(report, names, figure.add_subplot(grid[1, :]))
    status = report.overall_status.value.replace("_", " ")
    figure.suptitle(_plain(f"{report.app_name} / {report.eval_set_id}: {status}"), fontweight="bold")
    return figure
