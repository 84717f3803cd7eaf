"""The ipywidgets progress display: one row of two bars per run, a total bar and a footer."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from agenteval._presentation import EVALUATION, INFERENCE, ProgressSource, RunState
from agenteval.notebook._progress_base import Clock, ProgressBase

__all__ = ["RunRow", "WidgetProgress"]


@dataclass(slots=True, frozen=True)
class RunRow:
    """The widgets of one run's row (ipywidgets objects)."""

    box: Any
    """``HBox`` holding the others."""
    name: Any
    """``Label``: ``run 1``."""
    inference: Any
    """``IntProgress``: inference cases done out of the run's cases."""
    inference_count: Any
    """``Label``: ``3/5``."""
    evaluation: Any
    """``IntProgress``: evaluation cases done out of the run's cases."""
    evaluation_count: Any
    """``Label``: ``2/5``."""
    status: Any
    """``Label``: counts, elapsed time, rate."""


def _import_widgets() -> Any:
    try:
        import ipywidgets
    except ImportError as exc:
        raise ImportError("the progress widget needs ipywidgets: pip install ipywidgets") from exc
    return ipywidgets


class WidgetProgress(ProgressBase):
    """An ipywidgets display: a title, the metrics, one row of two bars per run, a total bar and a footer.

    Args:
        display: Show the widget in the cell output on ``start`` (``False`` for tests).
        min_interval: Minimum seconds between two updates of the widgets (runs ending always update).
        clock: Monotonic time source, in seconds, of the display's own record.
        refresh: Seconds between redraws of the clocks while nothing else happens; ``None`` never.
        source: The record of an evaluation to follow; ``None`` keeps one of its own, fed by :meth:`callbacks`.
    """

    def __init__(
        self,
        display: bool = True,
        *,
        min_interval: float = 0.1,
        clock: Clock = time.perf_counter,
        refresh: float | None = 1.0,
        source: ProgressSource | None = None,
    ) -> None:
        widgets = _import_widgets()
        self._widgets = widgets
        self._display = display
        self._displayed = False
        self.title_label: Any = widgets.Label(style={"font_weight": "bold"})
        self.metrics_label: Any = widgets.Label()
        self.rows: list[RunRow] = []
        self.rows_box: Any = widgets.VBox()
        self.bar: Any = widgets.IntProgress(value=0, min=0, max=1, description="total", bar_style="")
        self.footer: Any = widgets.Label()
        self.container: Any = widgets.VBox(
            [self.title_label, self.metrics_label, self.rows_box, widgets.HBox([self.bar, self.footer])]
        )
        super().__init__(clock=clock, refresh=refresh, min_interval=min_interval, source=source)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.container._repr_mimebundle_(**kwargs)

    def _draw_start(self) -> None:
        self.title_label.value = self._heading()
        self.metrics_label.value = self._metrics_text()
        self.rows = []
        for run in self.runs:
            self.rows.append(self._new_row(run))
        self.rows_box.children = tuple(row.box for row in self.rows)
        self.bar.bar_style = ""
        self._draw_totals()
        if self._display and not self._displayed:
            import IPython.display

            show: Any = IPython.display.display  # untyped
            show(self.container)
            self._displayed = True

    def _new_row(self, run: RunState) -> RunRow:
        widgets = self._widgets
        layout = {"width": "auto"}
        style = {"description_width": "initial"}
        row = RunRow(
            box=widgets.HBox(),
            name=widgets.Label(f"run {run.run}"),
            inference=widgets.IntProgress(min=0, max=1, description=INFERENCE, style=style, layout=layout),
            inference_count=widgets.Label(),
            evaluation=widgets.IntProgress(min=0, max=1, description=EVALUATION, style=style, layout=layout),
            evaluation_count=widgets.Label(),
            status=widgets.Label(),
        )
        row.box.children = (
            row.name,
            row.inference,
            row.inference_count,
            row.evaluation,
            row.evaluation_count,
            row.status,
        )
        self._sync_row(row, run)
        return row

    def _sync_row(self, row: RunRow, run: RunState) -> None:
        # Raise max before value: ipywidgets clamps value to the current max.
        row.inference.max = max(run.inference_total, 1)
        row.inference.value = run.inference_done
        row.inference_count.value = f"{run.inference_done}/{run.inference_total}"
        row.evaluation.max = max(run.evaluation_total, 1)
        row.evaluation.value = run.evaluation_done
        row.evaluation_count.value = f"{run.evaluation_done}/{run.evaluation_total}"
        row.status.value = self.run_text(run)
        unfinished_at_error = self.outcome in ("failed", "interrupted") and not run.finished
        if run.failing or unfinished_at_error:
            style = "danger"
        elif run.finished:
            style = "success"
        else:
            style = ""
        row.inference.bar_style = style
        row.evaluation.bar_style = style

    def _draw_totals(self) -> None:
        done, total = self._steps()
        self.bar.max = max(total, 1)
        self.bar.value = done
        if not self.outcome:
            self.bar.bar_style = "danger" if any(run.failing for run in self.runs) else ""
            self.footer.value = self.live_text()

    def _draw_new_run(self, run: RunState) -> None:
        self.rows.append(self._new_row(run))
        self.rows_box.children = tuple(row.box for row in self.rows)

    def _draw(self) -> None:
        # Unchanged traits send nothing, so syncing every row costs only what changed.
        for row, run in zip(self.rows, self.runs, strict=False):
            self._sync_row(row, run)
        self._draw_totals()

    def _draw_finish(self, error: BaseException | None) -> None:
        self._draw()
        self.bar.bar_style = {"passed": "success", "not evaluated": "warning"}.get(self.outcome, "danger")
        self.bar.description = "FAILED" if self.outcome == "failed" else self.outcome
        self.footer.value = self.summary
