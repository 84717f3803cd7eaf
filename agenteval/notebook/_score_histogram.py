"""One metric's scores, counted into bins as they arrive and drawn as stacked HTML bars (the live board's histogram)."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

__all__ = ["FAILED_COLOUR", "PASSED_COLOUR", "ScoreHistogram"]

PASSED_COLOUR = "#1a7f37"
FAILED_COLOUR = "#cf222e"
_BAR_WIDTH = 14  # px, plus 1 px between bars
_BAR_HEIGHT = 60  # px of the tallest bar


@dataclass(slots=True, eq=False)
class ScoreHistogram:
    """One metric's scores so far, in equal bins over ``[low, high]``, split by the metric's verdict.

    The range is ``[0, 1]`` until a score falls outside it; then it widens to hold every score.
    ``threshold`` is NaN until known.
    """

    metric_name: str
    threshold: float = math.nan
    bins: int = 10
    low: float = 0.0
    high: float = 1.0
    passed: list[int] = field(init=False)
    """Per bin, the scores of results that passed."""
    failed: list[int] = field(init=False)
    """Per bin, the scores of results that failed."""
    _scores: list[tuple[float, bool]] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.passed = [0] * self.bins
        self.failed = [0] * self.bins

    def add(self, score: float, passed: bool) -> None:
        """Count one result's ``score`` (a NaN or infinite score is left out)."""
        if not math.isfinite(score):
            return
        self._scores.append((score, passed))
        if self.low <= score <= self.high:
            self._count(score, passed)
            return
        self.low, self.high = min(self.low, score), max(self.high, score)
        self.passed, self.failed = [0] * self.bins, [0] * self.bins
        for old, verdict in self._scores:
            self._count(old, verdict)

    def _count(self, score: float, passed: bool) -> None:
        index = min(int((score - self.low) / (self.high - self.low) * self.bins), self.bins - 1)
        (self.passed if passed else self.failed)[index] += 1

    @property
    def total(self) -> int:
        """Scores counted."""
        return len(self._scores)

    def edges(self) -> list[float]:
        """The ``bins + 1`` bin edges, from ``low`` to ``high``."""
        step = (self.high - self.low) / self.bins
        return [self.low + index * step for index in range(self.bins + 1)]

    def to_html(self) -> str:
        """Stacked bars (failed under passed), the range, and the threshold as a dashed line."""
        tallest = max((p + f for p, f in zip(self.passed, self.failed, strict=True)), default=0) or 1
        edges = self.edges()
        bars = []
        for index, (passed, failed) in enumerate(zip(self.passed, self.failed, strict=True)):
            tip = f"{edges[index]:.2f}–{edges[index + 1]:.2f}: {passed} passed, {failed} failed"
            bars.append(
                f'<div title="{tip}" style="width:{_BAR_WIDTH}px;display:flex;flex-direction:column-reverse">'
                f'<div style="height:{failed / tallest * _BAR_HEIGHT:.0f}px;background:{FAILED_COLOUR}"></div>'
                f'<div style="height:{passed / tallest * _BAR_HEIGHT:.0f}px;background:{PASSED_COLOUR}"></div>'
                "</div>"
            )
        width = self.bins * (_BAR_WIDTH + 1)
        marker, threshold = "", "threshold unknown"
        if not math.isnan(self.threshold):
            threshold = f"threshold {self.threshold:g}"
        if self.low <= self.threshold <= self.high:
            left = (self.threshold - self.low) / (self.high - self.low) * width
            marker = (
                f'<div title="{threshold}" style="position:absolute;left:{left:.0f}px;top:0;bottom:0;'
                'border-left:1px dashed #1f2328"></div>'
            )
        return (
            '<div style="display:inline-block;margin:0 24px 8px 0;vertical-align:top">'
            f'<div style="font-weight:bold">{html.escape(self.metric_name)}</div>'
            f'<div style="position:relative;display:flex;gap:1px;align-items:flex-end;height:{_BAR_HEIGHT}px;'
            f'width:{width}px;border-bottom:1px solid #6e7781">{"".join(bars)}{marker}</div>'
            f'<div style="display:flex;justify-content:space-between;width:{width}px;font-size:11px;color:#6e7781">'
            f"<span>{self.low:g}</span><span>{self.total} scores, {threshold}</span><span>{self.high:g}</span>"
            "</div></div>"
        )
