"""Building blocks shared by the HTML views: scoped CSS, escaping, folded long text, tables, pages, a text fallback."""

from __future__ import annotations

import datetime as dt
import html
import json
import math
import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from html.parser import HTMLParser
from typing import TYPE_CHECKING

from agenteval.evalresult.provenance import package_version
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CSS",
    "HTML",
    "Format",
    "MAX_TABLE_ROWS",
    "PAGE_CSS",
    "TEXT_LIMIT",
    "badge",
    "bound",
    "clip",
    "compact_json",
    "data_table",
    "folded_table",
    "fmt_duration",
    "fmt_score",
    "fmt_size",
    "fold",
    "html_to_text",
    "page",
    "pretty_json",
]

TEXT_LIMIT = 20_000
"""Most characters of one text a page holds; the rest is counted, not shown."""

MAX_TABLE_ROWS = 2_000
"""Most rows of a data table a page holds."""

# Every rule hangs off the root class so the styles never leak into the rest of a notebook. Text
# keeps the theme's colour; only borders, badges (white on a solid colour) and translucent
# highlights carry status colours, so the output reads in JupyterLab's light and dark themes alike.
CSS = """
.agenteval{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;font-size:13px;
line-height:1.45;color:inherit;max-width:1200px}
.agenteval *{box-sizing:border-box}
.agenteval .ae-head{display:flex;align-items:center;gap:.6em;flex-wrap:wrap;margin:.2em 0 .3em}
.agenteval .ae-title{font-size:1.3em;font-weight:600}
.agenteval .ae-meta{display:flex;flex-wrap:wrap;gap:.3em 1.4em;margin:.2em 0 .8em;opacity:.85}
.agenteval .ae-meta b{font-weight:600}
.agenteval .ae-muted{opacity:.65}
.agenteval h4{font-size:1.05em;font-weight:600;margin:1em 0 .3em;padding:0;border:0}
.agenteval .ae-badge{display:inline-block;padding:.05em .6em;border-radius:999px;font-size:.78em;font-weight:700;
letter-spacing:.04em;text-transform:uppercase;color:#fff;white-space:nowrap;vertical-align:middle}
.agenteval .ae-passed{background:#1a7f37}
.agenteval .ae-failed{background:#cf222e}
.agenteval .ae-not_evaluated,.agenteval .ae-unknown{background:#6e7781}
.agenteval table.ae-table{border-collapse:collapse;margin:.3em 0 1em;width:auto;table-layout:auto}
.agenteval table.ae-table th,.agenteval table.ae-table td{border:1px solid rgba(127,127,127,.35);padding:.3em .65em;
text-align:left;vertical-align:top;white-space:normal}
.agenteval table.ae-table thead th{font-weight:600;border-bottom:2px solid rgba(127,127,127,.55)}
.agenteval table.ae-table tbody th{font-weight:600}
.agenteval table.ae-table td.ae-num,.agenteval table.ae-table th.ae-num{text-align:right;
font-variant-numeric:tabular-nums;white-space:nowrap}
.agenteval table.ae-table tr.ae-row-failed td:first-child{box-shadow:inset 4px 0 0 #cf222e}
.agenteval table.ae-table tr.ae-row-passed td:first-child{box-shadow:inset 4px 0 0 #1a7f37}
.agenteval table.ae-table tr.ae-row-not_evaluated td:first-child{box-shadow:inset 4px 0 0 #6e7781}
.agenteval .ae-bar{display:inline-block;width:70px;height:.7em;border-radius:3px;vertical-align:middle;
margin-right:.5em;background:rgba(207,34,46,.45);overflow:hidden}
.agenteval .ae-bar>span{display:block;height:100%;background:#1a7f37}
.agenteval .ae-reason{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em;
white-space:pre-wrap;word-break:break-word;max-width:70em}
.agenteval .ae-reason+.ae-reason{margin-top:.25em}
.agenteval .ae-id{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.92em}
.agenteval a{color:inherit}
.agenteval .ae-turn{border:1px solid rgba(127,127,127,.4);border-radius:6px;padding:.6em .8em;margin:.6em 0 1em}
.agenteval .ae-turn-head{display:flex;gap:.6em;align-items:center;font-weight:600;margin-bottom:.4em}
.agenteval .ae-label{display:block;font-size:.78em;font-weight:600;text-transform:uppercase;letter-spacing:.05em;
opacity:.7;margin-bottom:.15em}
.agenteval .ae-user{border-left:3px solid #0969da;padding:.2em .7em;margin-bottom:.6em}
.agenteval .ae-text{white-space:pre-wrap;word-break:break-word;max-height:24em;overflow:auto}
.agenteval .ae-grid{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:.4em .8em}
.agenteval .ae-colhead{font-weight:600;border-bottom:2px solid rgba(127,127,127,.55);padding-bottom:.15em}
.agenteval .ae-cell{border:1px solid rgba(127,127,127,.35);border-radius:4px;padding:.35em .6em;min-width:0}
.agenteval .ae-cell.ae-mismatch{border-color:#cf222e;box-shadow:inset 3px 0 0 #cf222e}
.agenteval .ae-cell.ae-only{border:1px dashed #cf222e;box-shadow:inset 3px 0 0 #cf222e}
.agenteval .ae-cell.ae-absent{border-style:dashed;opacity:.6;font-style:italic}
.agenteval .ae-tool-name{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-weight:600}
.agenteval pre.ae-json{margin:.2em 0;padding:.3em .5em;font-size:.88em;line-height:1.35;white-space:pre-wrap;
word-break:break-word;background:rgba(127,127,127,.08);border-radius:3px;max-height:20em;overflow:auto;
color:inherit}
.agenteval .ae-hl{background:rgba(207,34,46,.22);color:inherit;border-radius:2px;
text-decoration:underline wavy rgba(207,34,46,.8);text-decoration-skip-ink:none}
.agenteval .ae-runs{display:flex;gap:.4em;flex-wrap:wrap;align-items:center;margin:.2em 0 .6em}
.agenteval .ae-run{border:1px solid rgba(127,127,127,.45);border-radius:4px;padding:0 .45em;font-size:.85em}
.agenteval .ae-run.ae-current{border-width:2px;font-weight:700}
.agenteval .ae-run.ae-run-failed{border-color:#cf222e}
.agenteval .ae-run.ae-run-passed{border-color:#1a7f37}
.agenteval .ae-error{border:1px solid #cf222e;border-radius:4px;padding:.4em .7em;margin:.4em 0 .8em}
.agenteval .ae-note{border:1px solid #bf8700;border-radius:4px;padding:.4em .7em;margin:.4em 0 .8em}
.agenteval details.ae-clip>summary{cursor:pointer}
.agenteval details.ae-clip>summary::after{content:"more";margin-left:.5em;font-family:system-ui,sans-serif;
font-size:.8em;opacity:.65;text-decoration:underline}
.agenteval details.ae-clip[open]>summary::after{content:"less"}
.agenteval details.ae-clip[open]>summary .ae-peek{display:none}
.agenteval details.ae-fold>summary{cursor:pointer;font-weight:600;margin:.5em 0}
.agenteval table.ae-data td{white-space:pre-wrap;word-break:break-word;max-width:36em;font-size:.92em}
.agenteval .ae-up{color:#1a7f37}
.agenteval .ae-down{color:#cf222e}
"""

# A page is a document of its own, so it fixes a light scheme rather than inheriting one.
PAGE_CSS = """
:root{color-scheme:light}
html{background:#fff;color:#1f2328}
body{margin:0;padding:24px 32px 48px}
.ae-page{max-width:1280px;margin:0 auto}
.ae-page>section{margin:0 0 28px}
.agenteval h2{font-size:1.35em;font-weight:650;margin:1.4em 0 .5em;padding-bottom:.2em;
border-bottom:1px solid rgba(127,127,127,.35)}
.ae-nav{display:flex;gap:1.2em;flex-wrap:wrap;font-size:.92em;margin:0 0 1em;padding:.4em 0;
border-bottom:1px solid rgba(127,127,127,.35)}
.ae-nav a{text-decoration:none;font-weight:600}
.ae-plot{max-width:100%;height:auto;border:1px solid rgba(127,127,127,.3);border-radius:6px}
details.ae-case{border:1px solid rgba(127,127,127,.4);border-radius:6px;padding:.4em .8em;margin:.6em 0}
details.ae-case>summary{cursor:pointer;font-weight:600;padding:.2em 0}
details.ae-case>summary .ae-id{margin-left:.4em}
.ae-footer{margin-top:2em;font-size:.85em;opacity:.7}
"""


class HTML:
    """A piece of HTML that displays itself in Jupyter and reads as plain text in a terminal.

    Jupyter calls :meth:`_repr_html_`; ``print()`` and the REPL show a text rendering of the same
    content. The markup itself is :attr:`html`.
    """

    __slots__ = ("html",)

    def __init__(self, html: str) -> None:
        self.html = html
        """The HTML markup."""

    def _repr_html_(self) -> str:
        return self.html

    def __str__(self) -> str:
        return html_to_text(self.html)

    def __repr__(self) -> str:
        return str(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HTML) and other.html == self.html

    def __hash__(self) -> int:
        return hash(self.html)


def badge(status: EvalStatus | str | None) -> str:
    """A coloured status pill (``not evaluated`` when the status is missing)."""
    value = str(status or EvalStatus.NOT_EVALUATED)
    css = value if value in {s.value for s in EvalStatus} else "unknown"
    return f'<span class="ae-badge ae-{css}">{html.escape(value.replace("_", " "))}</span>'


def bound(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out and where the whole text is.

    A page shows a text, however long, at this size: the result holds it in full.
    """
    if len(text) <= limit:
        return text
    rest = text[limit:]
    size = len(rest) if rest.isascii() else len(rest.encode("utf-8", "surrogatepass"))
    return f"{text[:limit]}\n… [{fmt_size(size)} more; full text in the saved result]"


def fmt_size(size: int) -> str:
    """A size in bytes for humans: ``850 bytes``, ``12.3 kB``, ``49.9 MB``."""
    if size < 1000:
        return f"{size} bytes"
    if size < 1_000_000:
        return f"{size / 1000:.1f} kB"
    return f"{size / 1_000_000:.1f} MB"


def fold(text: str, body: str, limit: int) -> str:
    """``body`` (the markup of ``text``) as it is, or folded when ``text`` is longer than ``limit`` characters.

    Folded, the first ``limit`` characters of ``text`` show, and one click on them unfolds the
    whole ``body``: a ``<details>`` element, so it needs no script.
    """
    if len(text) <= limit:
        return body
    preview = html.escape(" ".join(text[:limit].split()))
    return f'<details class="ae-clip"><summary><span class="ae-peek">{preview}…</span></summary>{body}</details>'


def clip(text: str, limit: int, *, bound_at: int = TEXT_LIMIT) -> str:
    """``text`` escaped, cut to ``bound_at`` characters and folded to its first ``limit`` when longer.

    See :func:`bound` and :func:`fold`.
    """
    return fold(text, html.escape(bound(text, bound_at)), limit)


def fmt_score(value: float | None) -> str:
    """A score with two decimals (``—`` when missing)."""
    return "—" if value is None else f"{value:.2f}"


def fmt_duration(seconds: float) -> str:
    """A duration for humans: ``<1 ms``, ``85 ms``, ``12.3 s``, ``4 min 05 s``."""
    if 0 < seconds < 0.0005:
        return "<1 ms"  # not "0 ms", which reads as not measured
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"


def pretty_json(value: object) -> str:
    """Indented JSON of any value; anything JSON cannot encode is shown with ``str``."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


def compact_json(value: object) -> str:
    """One-line JSON of any value; anything JSON cannot encode is shown with ``str``."""
    return json.dumps(value, ensure_ascii=False, sort_keys=False, default=str)


_CELL_LIMIT = 120
_CELL_TEXT_LIMIT = 2_000
"""Most characters of a data-table cell: the raw tables repeat a turn's texts in the row of every metric."""
Format = Callable[[object], str]
"""Markup of one table cell from its value."""


def _is_missing(value: object) -> bool:
    import pandas as pd

    return value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and math.isnan(value))


def _data_cell(value: object) -> str:
    if _is_missing(value):
        return "<td></td>"
    if isinstance(value, bool):
        return f"<td>{value}</td>"
    if isinstance(value, numbers.Integral):
        return f'<td class="ae-num">{value}</td>'
    if isinstance(value, numbers.Real):
        return f'<td class="ae-num">{float(value):.4g}</td>'
    text = value if isinstance(value, str) else compact_json(value)
    return f"<td>{clip(text, _CELL_LIMIT, bound_at=_CELL_TEXT_LIMIT)}</td>"


def data_table(frame: pd.DataFrame, formats: Mapping[str, Format] | None = None) -> str:
    """A DataFrame as a table: long texts folded, lists and dicts as JSON, at most :data:`MAX_TABLE_ROWS` rows.

    Args:
        frame: The rows; its index is left out.
        formats: Markup of a whole ``<td>`` cell per column name, for columns that read better
            formatted (the rest are shown as values).

    Returns:
        The ``<table>``, followed by a note when rows were left out.
    """
    formats = formats or {}
    columns = [str(column) for column in frame.columns]
    shown = frame.head(MAX_TABLE_ROWS)
    head = "".join(f"<th>{html.escape(column)}</th>" for column in columns)
    rows = [
        "<tr>"
        + "".join(
            formats[column](value) if column in formats else _data_cell(value)
            for column, value in zip(columns, row, strict=True)
        )
        + "</tr>"
        for row in shown.itertuples(index=False, name=None)
    ]
    table = f"<table class='ae-table ae-data'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    if len(frame) > len(shown):
        table += f'<p class="ae-muted">First {len(shown)} of {len(frame)} rows.</p>'
    return table


def folded_table(name: str, what: str, frame: pd.DataFrame, formats: Mapping[str, Format] | None = None) -> str:
    """:func:`data_table` folded under a line naming it and saying how many rows it holds (one click unfolds it)."""
    return (
        f'<details class="ae-fold"><summary><code>{html.escape(name)}</code> '
        f'<span class="ae-muted">({len(frame)} rows: {html.escape(what)})</span></summary>'
        f"{data_table(frame, formats)}</details>"
    )


def page(title: str, sections: Sequence[tuple[str, str, str]]) -> str:
    """A complete, self-contained HTML document: ``sections`` are ``(anchor, heading, markup)``.

    Styles are inline and nothing is loaded from elsewhere; with several sections a bar at the
    top links to each.
    """
    nav = ""
    if len(sections) > 1:
        links = "".join(f'<a href="#{key}">{html.escape(heading.split(",")[0])}</a>' for key, heading, _ in sections)
        nav = f'<nav class="ae-nav">{links}</nav>'
    body = "".join(
        f'<section id="{key}"><h2>{html.escape(heading)}</h2>{content}</section>' for key, heading, content in sections
    )
    generated = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{PAGE_CSS}{CSS}</style></head>"
        f'<body><div class="agenteval ae-page">{nav}{body}'
        f'<div class="ae-footer">Generated by agenteval {html.escape(package_version())} on {generated}.</div>'
        "</div></body></html>"
    )


_BLOCK = {"div", "p", "tr", "table", "h1", "h2", "h3", "h4", "h5", "h6", "li", "details", "summary", "section"}


class _TextRenderer(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0
        self._pre = 0
        self._cells = 0
        self._folds: list[bool] = []  # per open <details>: whether it folds a long text (see fold)

    def _in_fold(self) -> bool:
        return bool(self._folds) and self._folds[-1]

    # Text has room for the whole of a folded text: its preview is left out and the text stays in line.
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "details":
            self._folds.append("ae-clip" in (dict(attrs).get("class") or "").split())
            if self._in_fold():
                return
        if tag in {"style", "script"} or (tag == "summary" and self._in_fold()):
            self._skip += 1
        elif tag == "pre":
            self._pre += 1
            self.parts.append("\n")
        elif tag == "br" or tag in _BLOCK:
            self.parts.append("\n")
            self._cells = 0
        elif tag in {"td", "th"}:
            self.parts.append(" | " if self._cells else "")
            self._cells += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "details" and self._folds and self._folds.pop():
            return
        if tag in {"style", "script"} or (tag == "summary" and self._in_fold()):
            self._skip = max(0, self._skip - 1)
        elif tag == "pre":
            self._pre = max(0, self._pre - 1)
            self.parts.append("\n")
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data if self._pre else re.sub(r"\s+", " ", data))


def html_to_text(markup: str) -> str:
    """A plain-text rendering of markup made by this package: blocks on their own lines, cells split by ``|``."""
    renderer = _TextRenderer()
    renderer.feed(markup)
    renderer.close()
    lines = [line.rstrip() for line in "".join(renderer.parts).splitlines()]
    text = "\n".join(line if line.strip() else "" for line in lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")
