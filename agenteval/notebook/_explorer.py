"""The what-if explorer: a slider per metric threshold and a case rule, deciding a report's cases again as they move.

The recomputation is :class:`agenteval.analysis._what_if.WhatIf`'s; this module only draws it with ipywidgets.
"""

from __future__ import annotations

import html
import math
import numbers
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from agenteval.analysis._what_if import (
    CASE_TABLE_COLUMNS,
    AllMetricsPass,
    AtLeastKMetricsPass,
    CaseRule,
    ScoredReport,
    WeightedScoreAtLeast,
    WhatIf,
    WhatIfOutcome,
    WhatIfSettings,
)
from agenteval.notebook._html import CSS, badge, data_table

__all__ = ["FLIPS_SHOWN", "RULES", "WhatIfExplorer"]

FLIPS_SHOWN = 100
"""Most flipped cases the explorer lists (it counts them all)."""

RULES = (
    ("all metrics pass", "all"),
    ("at least k of the metrics pass", "k_of_n"),
    ("weighted score ≥ x", "weighted"),
)
"""The case rules offered, as (label, value) of the rule drop-down."""

_STEPS = 100
"""Slider positions across a metric's score range."""
_DIGITS = 6
"""Decimals kept of a moved slider: the browser sends steps such as 0.7000000000000001."""
_LABEL = {"width": "16em"}
_HIDDEN, _SHOWN = "none", ""


class WhatIfExplorer(widgets.VBox):  # type: ignore[misc]  # ipywidgets has no type hints
    """A widget that decides a report's cases again, from its stored scores, as its controls change.

    Each metric has a threshold slider (and a weight, for the weighted rule); the case rule is one of
    :data:`RULES`. Every change recomputes the case statuses, the pass rates per run and per metric,
    and the cases that flip against the report, and rewrites the settings as a metrics file and as
    Python code. The controls and outputs are attributes, so that code can set and read them.

    Args:
        report: The report to explore (an :class:`~agenteval.EvaluationReport`).
    """

    def __init__(self, report: ScoredReport) -> None:
        super().__init__()
        self.what_if = WhatIf(report)
        """The recomputation."""
        names = self.what_if.metric_names
        own = self.what_if.thresholds
        ranges = {name: self.what_if.score_range(name) for name in names}
        self.rule: Any = widgets.Dropdown(options=RULES, value="all", description="case rule", disabled=not names)
        """``Dropdown``: the case rule (a value of :data:`RULES`)."""
        self.k: Any = widgets.IntSlider(value=max(len(names), 1), min=1, max=max(len(names), 1), description="k")
        """``IntSlider``: how many metrics must pass, for the k-of-n rule."""
        low = min((low for low, _ in ranges.values()), default=0.0)
        high = max((high for _, high in ranges.values()), default=1.0)
        start = sum(own.values()) / len(own) if own else 0.5
        self.minimum: Any = widgets.FloatSlider(
            value=start, min=low, max=high, step=(high - low) / _STEPS, description="x", readout_format=".3g"
        )
        """``FloatSlider``: the weighted score a case needs, for the weighted rule."""
        self.thresholds: dict[str, Any] = {
            name: widgets.FloatSlider(
                value=own[name],
                min=ranges[name][0],
                max=ranges[name][1],
                step=(ranges[name][1] - ranges[name][0]) / _STEPS,
                readout_format=".3g",
                description="threshold",
            )
            for name in names
        }
        """``FloatSlider`` per metric name: its threshold (the report's to begin with)."""
        self.weights: dict[str, Any] = {
            name: widgets.BoundedFloatText(value=1.0, min=0.0, max=1e6, step=0.1, description="weight")
            for name in names
        }
        """``BoundedFloatText`` per metric name: its weight, for the weighted rule."""
        self.reset: Any = widgets.Button(description="the report's settings", icon="undo")
        """``Button``: put every control back to the report's own settings."""
        self.summary: Any = widgets.HTML()
        """``HTML``: how many cases pass, against the report, and how many flip."""
        self.runs_table: Any = widgets.HTML()
        """``HTML``: the pass rate of each run, against the report's."""
        self.metric_table: Any = widgets.HTML()
        """``HTML``: each metric's threshold and pass rate, against the report's."""
        self.flips: Any = widgets.HTML()
        """``HTML``: the cases whose status changed (at most :data:`FLIPS_SHOWN`)."""
        self.metrics_json: Any = widgets.Textarea(layout={"width": "100%", "height": "14em"})
        """``Textarea``: the report's metrics with the new thresholds, as a metrics file holds them."""
        self.python_code: Any = widgets.Textarea(layout={"width": "100%", "height": "14em"})
        """``Textarea``: the code that makes the new report from ``report``."""
        self.outcome: WhatIfOutcome
        """What the current settings give."""
        self._resetting = False
        self.children = (
            widgets.HTML(self._heading()),
            widgets.HBox([self.rule, self.k, self.minimum, self.reset]),
            *(
                widgets.HBox([widgets.Label(name, layout=_LABEL), self.thresholds[name], self.weights[name]])
                for name in names
            ),
            self.summary,
            self.runs_table,
            self.metric_table,
            self.flips,
            widgets.Accordion(children=[self.metrics_json, self.python_code], titles=("metrics JSON", "Python")),
        )
        for control in (self.rule, self.k, self.minimum, *self.thresholds.values(), *self.weights.values()):
            control.observe(self._changed, names="value")
        self.reset.on_click(self._reset)
        self._update()

    @property
    def settings(self) -> WhatIfSettings:
        """The settings the controls hold; thresholds only for the metrics moved off the report's."""
        own = self.what_if.thresholds
        thresholds = {
            name: round(float(slider.value), _DIGITS)
            for name, slider in self.thresholds.items()
            if slider.value != own[name]
        }
        rule: CaseRule = AllMetricsPass()
        if self.rule.value == "k_of_n":
            rule = AtLeastKMetricsPass(int(self.k.value))
        elif self.rule.value == "weighted":
            weights = {name: float(box.value) for name, box in self.weights.items()}
            rule = WeightedScoreAtLeast(round(float(self.minimum.value), _DIGITS), weights)
        return WhatIfSettings(thresholds, rule)

    def _changed(self, change: object) -> None:
        if not self._resetting:
            self._update()

    def _reset(self, button: object) -> None:
        # One update for the whole reset, not one per control.
        self._resetting = True
        try:
            self.rule.value = "all"
            for name, slider in self.thresholds.items():
                slider.value = self.what_if.thresholds[name]
        finally:
            self._resetting = False
        self._update()

    def _update(self) -> None:
        settings = self.settings
        self.outcome = outcome = self.what_if.outcome(settings)
        rule = self.rule.value
        self.k.layout.display = _SHOWN if rule == "k_of_n" else _HIDDEN
        self.minimum.layout.display = _SHOWN if rule == "weighted" else _HIDDEN
        for box in self.weights.values():
            box.layout.display = _SHOWN if rule == "weighted" else _HIDDEN
        self.summary.value = _styled(_summary(outcome))
        self.runs_table.value = _styled("<h4>Pass rate per run</h4>" + data_table(outcome.runs, _RATES))
        self.metric_table.value = _styled("<h4>Per metric</h4>" + data_table(outcome.metric_table, _RATES))
        self.flips.value = _styled(_flips(outcome))
        self.metrics_json.value = self.what_if.metrics_json(settings)
        self.python_code.value = self.what_if.python_code(settings)

    def _heading(self) -> str:
        what_if = self.what_if
        runs = f"{what_if.num_runs} run{'s' if what_if.num_runs != 1 else ''}"
        shape = f"{len(what_if.eval_ids)} cases × {runs} × {len(what_if.metric_names)} metrics"
        notes = [
            "Case statuses are decided again from the stored scores: neither the agent nor a judge runs. "
            "Runs that failed before scoring (an agent, metric or timeout error) stay failed whatever the "
            f"settings: {what_if.errored_runs} run(s) of {what_if.errored_cases} case(s) here."
        ]
        if not what_if.decided_by_all_pass:
            name = what_if.aggregator_name or "an aggregator it does not record"
            notes.append(
                f"The report was decided by {html.escape(name)}, not by these rules: what it decided is "
                "the “before” the flips are counted against."
            )
        body = "".join(f'<p class="ae-muted">{note}</p>' for note in notes)
        title = f"What if… {html.escape(what_if.eval_set_id)}"
        head = f'<div class="ae-head"><span class="ae-title">{title}</span><span>{shape}</span></div>'
        # The one stylesheet: a notebook applies it to the other outputs too, which then send only their rows.
        return f'<div class="agenteval"><style>{CSS}</style>{head}{body}</div>'


def _percent(value: object) -> str:
    number = float(value) if isinstance(value, numbers.Real) else math.nan
    return '<td class="ae-num">—</td>' if math.isnan(number) else f'<td class="ae-num">{number:.1%}</td>'


def _status(value: object) -> str:
    return f"<td>{badge(str(value))}</td>"


_RATES: dict[str, Callable[[object], str]] = {"pass_rate": _percent, "pass_rate_before": _percent}
_FLIP_CELLS: dict[str, Callable[[object], str]] = {"before": _status, "status": _status, "pass_rate": _percent}


def _summary(outcome: WhatIfOutcome) -> str:
    cases = len(outcome.case_table)
    now = f"<b>{outcome.passed}</b> of {cases} cases pass ({_rate_text(outcome.pass_rate)})"
    before = f"the report: {outcome.passed_before} ({_rate_text(outcome.pass_rate_before)})"
    flips = outcome.flips
    fixed = int(((flips["before"] != "passed") & (flips["status"] == "passed")).sum())
    broken = int(((flips["before"] == "passed") & (flips["status"] != "passed")).sum())
    other = len(flips) - fixed - broken
    changes = [f"{broken} passed → failed", f"{fixed} failed → passed"]
    if other:
        changes.append(f"{other} otherwise")
    flipped = f"{len(flips)} case{'s' if len(flips) != 1 else ''} flip: {', '.join(changes)}" if len(flips) else ""
    return f"<p>{now}; {before}. {flipped or 'No case flips'}.</p>"


def _rate_text(rate: float) -> str:
    return "—" if math.isnan(rate) else f"{rate:.1%}"


def _flips(outcome: WhatIfOutcome) -> str:
    flips = outcome.flips
    if flips.empty:
        return "<h4>Cases that flip</h4><p class='ae-muted'>None: every case keeps the report's status.</p>"
    shown = flips.head(FLIPS_SHOWN)
    more = f"<p class='ae-muted'>First {len(shown)} of {len(flips)}.</p>" if len(flips) > len(shown) else ""
    columns = ["eval_id", "before", "status", "score", *flips.columns[len(CASE_TABLE_COLUMNS) :]]
    return f"<h4>Cases that flip</h4>{data_table(shown[columns], _FLIP_CELLS)}{more}"


def _styled(body: str) -> str:
    return f'<div class="agenteval">{body}</div>'
