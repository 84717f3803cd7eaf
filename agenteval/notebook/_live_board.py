"""The live board of a running evaluation (ipywidgets): a case × run grid, score histograms, counts and a case view.

The board listens to an :class:`~agenteval.evaluation.run.EvaluationRun`, which calls it on every
finished case. That call only schedules a redraw on the event loop, at most one per ``interval``
seconds, so a burst of cases costs one redraw, and the run ending always redraws at once. A redraw
reads only the results that arrived since the previous one, and a widget sends the frontend only
what changed. The counts, the elapsed time and the ETA are the run's, read from the evaluation's
record (the ledger that a progress display of the evaluation reads too).

The grid has one square per (case, run), coloured by status, a case's runs side by side; cases come
in the order their first result arrived while the run goes, failing cases first once it ended,
``page_size`` cases per page. Clicking a square shows that case side by side below the board. Every
square is an option of one ``ToggleButtons`` widget (one widget per square would cost the run a
widget model each), laid out and coloured by a style sheet the board writes into an ``HTML`` widget.

Beside the widget, the board's output holds the board in plain HTML (and its status line as text),
written again when the run ends: a saved notebook shows the final board where no widget can be drawn.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import math
import time
import uuid
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agenteval.errors import AgentEvalError, ProgressWarning, describe_exception
from agenteval.evalresult.models import EvalSetResult
from agenteval.evalresult.records import CaseRecord
from agenteval.notebook._case_view import case_html
from agenteval.notebook._html import fmt_duration
from agenteval.notebook._score_histogram import FAILED_COLOUR, PASSED_COLOUR, ScoreHistogram
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    from agenteval.evaluation.run import EvaluationRun

__all__ = ["COLOURS", "LiveBoard", "status_line"]

PENDING = "pending"
COLOURS = {
    EvalStatus.PASSED.value: PASSED_COLOUR,
    EvalStatus.FAILED.value: FAILED_COLOUR,
    EvalStatus.NOT_EVALUATED.value: "#6e7781",
    PENDING: "#d0d7de",
}
"""The colour of a grid square by the status of its case run (``pending``: not finished)."""

_CASE_ORDER = {EvalStatus.FAILED: 0, EvalStatus.NOT_EVALUATED: 1, EvalStatus.PASSED: 2}
_GRID_WIDTH = 500  # px: where the grid wraps
_CELL = 18  # px per square
_GAP = 2  # px between squares
_CASE_GAP = 6  # extra px after a case's last run
_HINT = '<span style="color:#6e7781">Click a square to see that case side by side.</span>'


def _status(result: CaseRecord) -> str:
    return str(result.row.final_eval_status or EvalStatus.NOT_EVALUATED)


def _run_text(run: EvaluationRun, counts: dict[str, int]) -> str:
    if not run.done:
        state = "running"
    elif run.error is None:
        state = "done"
    elif isinstance(run.error, asyncio.CancelledError):
        state = "cancelled"
    else:
        state = f"stopped by {describe_exception(run.error)}"
    tally = f"{counts.get('passed', 0)} passed, {counts.get('failed', 0)} failed"
    if counts.get("not_evaluated"):
        tally += f", {counts['not_evaluated']} not evaluated"
    parts = [state, f"{run.finished}/{run.total} case runs: {tally}", fmt_duration(run.elapsed)]
    eta = run.eta
    if not run.done and eta is not None:
        parts.append(f"ETA {fmt_duration(eta)}")
    return " · ".join(parts)


def status_line(run: EvaluationRun) -> str:
    """One line on where ``run`` stands.

    E.g. ``app / set: running · 40/100 case runs: 38 passed, 2 failed · 1.2 s · ETA 1.8 s``.
    """
    return f"{run.title}: {_run_text(run, run.counts)}"


def _status_html(run: EvaluationRun, counts: dict[str, int]) -> str:
    """A progress bar (blue while running, then green, or red after a failure) and the status line."""
    share = min(run.finished / run.total, 1.0) if run.total else 0.0
    colour = "#0969da"
    if run.done:
        colour = FAILED_COLOUR if run.error is not None or counts.get("failed") else PASSED_COLOUR
    return (
        '<div style="display:flex;align-items:center;gap:8px">'
        '<div style="width:240px;height:12px;background:#eaeef2;border-radius:3px;overflow:hidden">'
        f'<div style="width:{share * 100:.1f}%;height:100%;background:{colour}"></div></div>'
        f"<span>{html.escape(_run_text(run, counts))}</span></div>"
    )


def _grid_css(scope: str, runs: int) -> str:
    """The grid's layout: squares in rows that wrap, a case's runs side by side, the clicked one outlined."""
    if runs == 1:
        columns = f"repeat({_GRID_WIDTH // (_CELL + _GAP)}, {_CELL}px)"
    else:
        tracks = " ".join([f"{_CELL}px"] * (runs - 1) + [f"{_CELL + _CASE_GAP}px"])
        columns = f"repeat({max(1, _GRID_WIDTH // (runs * (_CELL + _GAP) + _CASE_GAP))}, {tracks})"
    square = f".{scope} .widget-toggle-button"
    return (
        f".{scope}>div{{display:grid;grid-template-columns:{columns};gap:{_GAP}px;justify-items:start}}"
        f"{square}{{width:{_CELL}px;height:{_CELL}px;min-width:0;margin:0;padding:0;border:0;border-radius:2px;"
        f"font-size:0;box-shadow:none;background:{COLOURS[PENDING]}}}"
        f"{square}.mod-active{{outline:2px solid #0969da;outline-offset:1px}}"
    )


def _colours_css(scope: str, statuses: list[str]) -> str:
    """One rule per status, naming the squares of that status by position (pending ones keep the default)."""
    by_status: dict[str, list[int]] = {}
    for position, status in enumerate(statuses, start=1):
        if status != PENDING:
            by_status.setdefault(status, []).append(position)
    return "".join(
        f".{scope} .widget-toggle-button:is({','.join(f':nth-child({p})' for p in positions)})"
        f"{{background:{COLOURS[status]}}}"
        for status, positions in by_status.items()
    )


def _legend_html(title: str, runs: int) -> str:
    swatch = '<span style="display:inline-block;width:10px;height:10px;background:{}"></span> {}'
    legend = " ".join(swatch.format(colour, name.replace("_", " ")) for name, colour in COLOURS.items())
    layout = f"; a case's {runs} runs side by side" if runs > 1 else ""
    return f'<b>{html.escape(title)}</b><br><span style="font-size:11px;color:#6e7781">{legend}{layout}</span>'


def _widgets() -> Any:
    try:
        import ipywidgets
    except ImportError as exc:
        raise ImportError("the live board needs ipywidgets: pip install ipywidgets") from exc
    return ipywidgets


class LiveBoard:
    """An ipywidgets board that fills in as ``run`` goes; display it (or the run) in a notebook cell.

    Args:
        run: The evaluation to show.
        page_size: Cases per page of the grid.
        interval: Minimum seconds between two redraws for arriving cases (the run ending redraws at once).
        refresh: Seconds between redraws of the clock while no case finishes.
    """

    def __init__(
        self, run: EvaluationRun, *, page_size: int = 100, interval: float = 0.25, refresh: float = 1.0
    ) -> None:
        widgets = _widgets()
        self.run = run
        self.page_size = max(1, page_size)
        self._interval = interval
        self._refresh = refresh
        self._runs = max(1, run.num_runs)
        # Style sheets apply to the whole page, which may show boards of other kernels: a unique scope.
        self._scope = f"ae-board-{uuid.uuid4().hex}"
        self._seen = 0
        self._by_case: dict[str, dict[int, CaseRecord]] = {}
        self.order: list[str] = []
        """The grid's cases, in display order."""
        self.counts = run.counts
        """Finished case runs by status, as the run counts them."""
        self.histograms = {name: ScoreHistogram(name) for name in run.metric_names}
        """Per metric, its scores so far."""
        self.page = 0
        self.selected: tuple[str, int] | None = None
        """The (case, run) shown in :attr:`case_view`."""
        self._slots: list[tuple[str, int]] = []
        self._ordered_at_end = False
        self._histograms_changed = True
        self._drawing_grid = False
        self._timer: asyncio.TimerHandle | None = None
        self._redraw_due = False
        self._last_draw = -math.inf
        self._broken = False
        self._display: Any = None
        """The handle of the output the board is shown in, which the run's end updates."""

        # Each widget is a model the frontend is told about: those that need no layout or style of
        # their own share one.
        plain = widgets.Layout()
        self.title: Any = widgets.HTML(
            _legend_html(run.title, self._runs) + f"<style>{_grid_css(self._scope, self._runs)}</style>", layout=plain
        )
        text = self.title.style
        self.status: Any = widgets.HTML(layout=plain, style=text)
        """A progress bar, the counts, elapsed time and ETA."""
        self.grid: Any = widgets.ToggleButtons(options=[], index=None, layout=plain)
        """The squares: one option per (case, run) of the page, whose value is ``(case, run)``."""
        self.grid.add_class(self._scope)
        self.grid.observe(self._clicked, "index")
        self.colours: Any = widgets.HTML(layout=plain, style=text)
        """The style sheet that colours the squares (:data:`COLOURS`)."""
        arrow, arrow_style = widgets.Layout(width="32px"), widgets.ButtonStyle()
        self.previous: Any = widgets.Button(description="◀", layout=arrow, style=arrow_style, disabled=True)
        self.next: Any = widgets.Button(description="▶", layout=arrow, style=arrow_style, disabled=True)
        self.page_label: Any = widgets.HTML(layout=plain, style=text)
        self.previous.on_click(lambda _: self._turn_page(-1))
        self.next.on_click(lambda _: self._turn_page(1))
        self.histogram: Any = widgets.HTML(layout=plain, style=text)
        """Every metric's :meth:`~agenteval.notebook._score_histogram.ScoreHistogram.to_html`."""
        self.case_view: Any = widgets.HTML(_HINT, layout=plain, style=text)
        """The clicked case, side by side."""
        self.container: Any = widgets.VBox(
            [
                self.title,
                self.status,
                self.colours,
                self.grid,
                widgets.HBox([self.previous, self.page_label, self.next], layout=plain),
                self.histogram,
                self.case_view,
            ],
            layout=plain,
        )
        self._safely(self._redraw)
        run.listen(self._changed)

    def _ipython_display_(self) -> None:
        import IPython.display

        show: Any = IPython.display.display  # untyped
        self._display = show(self._repr_mimebundle_(), raw=True, display_id=True)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The widget, with :meth:`static_html` and :func:`status_line` for viewers that show no widgets."""
        bundle = dict(self.container._repr_mimebundle_(**kwargs))
        bundle["text/html"] = self.static_html()
        bundle["text/plain"] = status_line(self.run)
        return bundle

    def static_html(self) -> str:
        """The board as it stands, in plain HTML: title, status, the first page of the grid, the histograms.

        A saved notebook keeps it beside the widget, for viewers that cannot draw widgets (nbconvert
        without the widgets' state, GitHub); the run's end writes its final state into the output.
        """
        shown = self.order[: self.page_size]
        squares = "".join(
            f'<span title="{html.escape(self._tip(eval_id, run_id))}" style="display:inline-block;width:{_CELL}px;'
            f"height:{_CELL}px;margin:0 {_GAP + (_CASE_GAP if run_id == self._runs else 0)}px {_GAP}px 0;"
            f'border-radius:2px;background:{COLOURS[self._square_status(eval_id, run_id)]}"></span>'
            for eval_id in shown
            for run_id in range(1, self._runs + 1)
        )
        more = f"<div>cases 1–{len(shown)} of {len(self.order)}</div>" if len(shown) < len(self.order) else ""
        histograms = "".join(histogram.to_html() for histogram in self.histograms.values())
        return (
            f"<div>{_legend_html(self.run.title, self._runs)}{_status_html(self.run, self.counts)}"
            f'<div style="max-width:{_GRID_WIDTH + _CELL + _CASE_GAP}px;line-height:0;margin:6px 0">{squares}</div>'
            f"{more}{histograms}</div>"
        )

    # ------------------------------------------------------------------ the grid and the case view

    def cell(self, eval_id: str, run_id: int) -> int | None:
        """The position in :attr:`grid` of case ``eval_id``'s run ``run_id``; ``None`` when not on this page."""
        try:
            return self._slots.index((eval_id, run_id))
        except ValueError:
            return None

    def cell_status(self, position: int) -> str:
        """The status the square at ``position`` shows: ``passed``, ``failed``, ``not_evaluated`` or ``pending``."""
        return self._square_status(*self._slots[position])

    def _square_status(self, eval_id: str, run_id: int) -> str:
        result = self._by_case[eval_id].get(run_id)
        return _status(result) if result is not None else PENDING

    def _tip(self, eval_id: str, run_id: int) -> str:
        result = self._by_case[eval_id].get(run_id)
        if result is None:
            return f"{eval_id} · run {run_id}: not finished"
        error = f" · {result.row.short_error[:120]}" if result.row.error_message else ""
        return f"{eval_id} · run {run_id}: {_status(result).replace('_', ' ')}, score {result.row.score:.2f}{error}"

    def show_case(self, eval_id: str, run_id: int) -> None:
        """Show case ``eval_id``'s run ``run_id`` side by side in :attr:`case_view` (what a click does)."""
        self.selected = (eval_id, run_id)
        self.case_view.value = self._case_html(eval_id, run_id)

    def _clicked(self, change: dict[str, Any]) -> None:
        if not self._drawing_grid and change["new"] is not None:
            self.show_case(*self._slots[change["new"]])

    def _case_html(self, eval_id: str, run_id: int) -> str:
        result = self._by_case.get(eval_id, {}).get(run_id)
        if result is None:
            return f"<p>Case <code>{html.escape(eval_id)}</code> has not finished run {run_id} yet.</p>"
        report = self.run.report
        try:
            if report is not None and eval_id in report.case_statuses:
                return report.show_case(eval_id, run_id).html
            # Still running: the case's result alone makes a one-case report the case view can draw.
            from agenteval.analysis.report import report_from_result

            alone = EvalSetResult.trusted(eval_set_id=result.row.eval_set_id, eval_case_results=[result.model])
            return case_html(report_from_result(alone), eval_id, run_id)
        except AgentEvalError as exc:
            return f"<p>Case <code>{html.escape(eval_id)}</code> cannot be shown: {html.escape(str(exc))}</p>"

    # ------------------------------------------------------------------ throttling

    def _changed(self, run: EvaluationRun) -> None:
        # Called for every finished case: when a redraw is already due, there is nothing to do.
        if self._broken or (self._redraw_due and not run.done):
            return
        if run.done:
            self._cancel_timer()
            self._safely(self._redraw)
            self._safely(self._show_final_state)
        else:
            self._redraw_due = True
            self._schedule(self._last_draw + self._interval - time.monotonic())

    def _show_final_state(self) -> None:
        # Sent again whole, the output now holds the final board where a saved notebook's viewer looks.
        if self._display is not None and not self._broken:
            self._display.update(self._repr_mimebundle_(), raw=True)

    def _schedule(self, delay: float) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # driven by hand, outside an event loop
            if delay <= 0:
                self._safely(self._redraw)
            return
        due = loop.time() + max(delay, 0.0)
        if self._timer is not None:
            if self._timer.when() <= due:
                return
            self._timer.cancel()
        self._timer = loop.call_at(due, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if not self._broken:
            self._safely(self._redraw)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _safely(self, draw: Callable[[], None]) -> None:
        try:
            draw()
        except Exception as exc:
            # The board is called from the evaluation's own callbacks: it must never stop the run.
            self._broken = True
            self._cancel_timer()
            with contextlib.suppress(Exception):
                warnings.warn(f"live board switched off: {describe_exception(exc)}", ProgressWarning, stacklevel=2)

    # ------------------------------------------------------------------ drawing

    def _redraw(self) -> None:
        self._last_draw = time.monotonic()
        self._redraw_due = False
        self._take_new_results()
        if self.run.done and not self._ordered_at_end:
            self._ordered_at_end = True
            self._order_failing_first()
        self._draw_grid()
        if self._histograms_changed:
            self._histograms_changed = False
            self.histogram.value = "".join(histogram.to_html() for histogram in self.histograms.values())
        self.status.value = _status_html(self.run, self.counts)
        if not self.run.done and self._refresh > 0:
            self._schedule(self._refresh)

    def _take_new_results(self) -> None:
        # Read together on the loop, where the run's ledger changes: the counts are those of these results.
        results, self.counts = self.run.ledger.records, self.run.counts
        by_case, histograms = self._by_case, self.histograms  # the loop runs per case
        for record in results[self._seen :]:
            result = record.row
            runs = by_case.get(result.eval_id)
            if runs is None:
                runs = by_case[result.eval_id] = {}
                self.order.append(result.eval_id)
            runs[result.run_id] = record
            for metric in result.overall_eval_metric_results:
                verdict = metric.eval_status
                if verdict is EvalStatus.PASSED or verdict is EvalStatus.FAILED:
                    histogram = histograms.get(metric.metric_name)
                    if histogram is None:
                        histogram = histograms[metric.metric_name] = ScoreHistogram(metric.metric_name)
                    if math.isnan(histogram.threshold):
                        histogram.threshold = metric.threshold
                    histogram.add(metric.score, verdict is EvalStatus.PASSED)
                    self._histograms_changed = True
        self._seen = len(results)

    def _order_failing_first(self) -> None:
        report = self.run.report
        if report is not None:  # its cases are in eval-set order, each with its verdict across runs
            statuses = list(report.case_statuses.items())
        else:
            statuses = [
                (
                    eval_id,
                    EvalStatus.FAILED if any(_status(r) == "failed" for r in runs.values()) else EvalStatus.PASSED,
                )
                for eval_id, runs in self._by_case.items()
            ]
        rank = {eval_id: (_CASE_ORDER.get(status, 2), index) for index, (eval_id, status) in enumerate(statuses)}
        unknown = (len(_CASE_ORDER), 0)
        self.order.sort(key=lambda eval_id: rank.get(eval_id, unknown))
        self.page = 0

    def _turn_page(self, step: int) -> None:
        self.page += step
        self._safely(self._draw_grid)

    def _draw_grid(self) -> None:
        pages = max(1, math.ceil(len(self.order) / self.page_size))
        self.page = min(max(self.page, 0), pages - 1)
        shown = self.order[self.page * self.page_size : (self.page + 1) * self.page_size]
        slots = [(eval_id, run_id) for eval_id in shown for run_id in range(1, self._runs + 1)]
        statuses = [self._square_status(eval_id, run_id) for eval_id, run_id in slots]
        tips = [self._tip(eval_id, run_id) for eval_id, run_id in slots]
        with self.grid.hold_sync():  # one message for the options, the tooltips and the selection
            if slots != self._slots:
                self._slots = slots
                self._drawing_grid = True  # new options reset the selection: that is not a click
                try:
                    self.grid.options = [(f"{run_id}:{eval_id}", (eval_id, run_id)) for eval_id, run_id in slots]
                    self.grid.index = slots.index(self.selected) if self.selected in slots else None
                finally:
                    self._drawing_grid = False
            self.grid.tooltips = tips
        self.colours.value = f"<style>{_colours_css(self._scope, statuses)}</style>"
        first = self.page * self.page_size + 1 if shown else 0
        self.page_label.value = f"cases {first}–{first + len(shown) - 1 if shown else 0} of {len(self.order)}"
        self.previous.disabled = self.page == 0
        self.next.disabled = self.page >= pages - 1
