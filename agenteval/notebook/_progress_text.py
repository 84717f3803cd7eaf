"""The text progress display: a bar redrawn in place on a terminal, plain lines elsewhere."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from typing import TextIO

from agenteval._presentation import CANCELLED, FinishedReport, ProgressSource, RunState
from agenteval._util.terminal import printable
from agenteval.notebook._env import stream_is_terminal
from agenteval.notebook._progress_base import Clock, ProgressBase, plural

__all__ = ["TextProgress"]

_RED, _GREEN, _RESET = "\x1b[31m", "\x1b[32m", "\x1b[0m"


def _encodes(stream: TextIO, text: str) -> bool:
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (LookupError, UnicodeEncodeError):
        return False
    return True


class TextProgress(ProgressBase):
    r"""A text bar on a stream (stderr by default).

    On a terminal, one line is redrawn in place (a carriage return) and each finished run is printed above
    it; elsewhere (logs, CI) only the header, one line per finished run and the final line are
    written, so the output stays readable. On a terminal, a message of the ``agenteval`` logger (the
    watchdog's, the note that an interrupted evaluation was saved) first clears the bar, so that it
    starts a line of its own; the bar is drawn again below it. On a terminal, a failed run and a failed evaluation are
    printed in red and a passed evaluation in green (unless the ``NO_COLOR`` variable is set); one
    that scored nothing is left uncoloured. Control characters in ids and messages are shown as
    their escapes (``\x1b``), so that none can hide or rewrite what the terminal shows.

    Args:
        stream: Where to write; ``sys.stderr`` when ``None``.
        width: Maximum width of the redrawn line; the terminal's width when ``None``.
        min_interval: Minimum seconds between two redraws of the line.
        clock: Monotonic time source, in seconds, of the display's own record.
        refresh: Seconds between redraws of the clocks while nothing else happens; ``None`` never.
        source: The record of an evaluation to follow; ``None`` keeps one of its own, fed by :meth:`callbacks`.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        width: int | None = None,
        min_interval: float = 0.1,
        clock: Clock = time.perf_counter,
        refresh: float | None = 1.0,
        source: ProgressSource | None = None,
    ) -> None:
        self.stream: TextIO | None = stream if stream is not None else sys.stderr
        self.tty = stream_is_terminal(self.stream)
        self._width = width
        self._line_length = 0
        self._fancy = self.stream is not None and _encodes(self.stream, "█×·")
        self._colour = self.tty and not os.environ.get("NO_COLOR")
        super().__init__(clock=clock, refresh=refresh if self.tty else None, min_interval=min_interval, source=source)

    def _write(self, text: str) -> None:
        if self.stream is not None:
            self.stream.write(text)
            self.stream.flush()

    def _text(self, text: str) -> str:
        # Ids and error messages come from files and agents: escaped, they cannot hide or rewrite the bar.
        text = printable(text)
        return text if self._fancy else text.replace("×", "x").replace("·", "-")

    def _max_width(self) -> int:
        if self._width is not None:
            return self._width
        import shutil

        return shutil.get_terminal_size((100, 20)).columns

    def live_line(self) -> str:
        """The line redrawn on a terminal: a bar over both phases of all runs, then the running totals."""
        done, total = self._steps()
        slots = 20
        filled = slots * done // total if total else 0
        bar = ("█" * filled + " " * (slots - filled)) if self._fancy else ("#" * filled + "-" * (slots - filled))
        inference = sum(run.inference_done for run in self.runs), sum(run.inference_total for run in self.runs)
        evaluation = sum(run.evaluation_done for run in self.runs), sum(run.evaluation_total for run in self.runs)
        parts = [
            f"{self.title or 'evaluation'} |{bar}|",
            f"inference {inference[0]}/{inference[1]}",
            f"evaluation {evaluation[0]}/{evaluation[1]}",
            self.live_text(),
        ]
        return self._text(" · ".join(parts))

    def _draw(self) -> None:
        if not self.tty:
            return
        line = self.live_line()[: max(self._max_width() - 1, 10)]
        self._write("\r" + line + " " * max(self._line_length - len(line), 0))
        self._line_length = len(line)

    def _print_line(self, line: str, colour: str = "") -> None:
        line = self._text(line)
        padding = " " * max(self._line_length - len(line), 0) if self.tty else ""
        if colour and self._colour:
            line = colour + line + _RESET
        if self.tty and self._line_length:
            # Overwrite the live line; it is drawn again below the printed one.
            self._write("\r" + line + padding + "\n")
            self._line_length = 0
        else:
            self._write(line + "\n")

    def ended(self, report: FinishedReport | None, error: BaseException | None) -> None:
        """Show the outcome on a line of its own (see :meth:`ProgressBase.ended`)."""
        try:
            super().ended(report, error)
        finally:
            logging.getLogger("agenteval").removeFilter(self._clear_before_message)

    def _clear_before_message(self, record: logging.LogRecord) -> bool:
        """A filter of the ``agenteval`` logger: clears the bar before a record is written, lets it through."""
        if self._line_length:
            with contextlib.suppress(Exception):  # a display problem never loses a log record
                self._write("\r" + " " * self._line_length + "\r")
            self._line_length = 0
        return True

    def _draw_start(self) -> None:
        self._line_length = 0
        if self.tty:
            logging.getLogger("agenteval").addFilter(self._clear_before_message)
        self._print_line(f"{self._heading()} · {self._metrics_text()}")
        self._draw()

    def _draw_run_end(self, run: RunState) -> None:
        marker = CANCELLED if run.error == CANCELLED else "FAILED" if run.error else "done"
        runs = len(self.runs)
        self._print_line(
            f"run {run.run}/{runs} {marker}: {plural(run.evaluation_done, 'case')}, {self.run_text(run)}",
            _RED if run.error else "",
        )

    def _draw_finish(self, error: BaseException | None) -> None:
        colour = {"passed": _GREEN, "not evaluated": ""}.get(self.outcome, _RED)
        self._print_line(self.summary, colour)
