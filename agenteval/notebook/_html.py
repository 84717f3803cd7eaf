"""Building blocks shared by the report and case views: scoped CSS, escaping, badges, a text fallback."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser

from agenteval.status import EvalStatus

__all__ = [
    "CSS",
    "HTML",
    "badge",
    "clip",
    "fmt_duration",
    "fmt_score",
    "html_to_text",
    "pretty_json",
]

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


def clip(text: str, limit: int) -> str:
    """Escape ``text``, cut to ``limit`` characters; the full text (up to a bound) goes in a tooltip."""
    if len(text) <= limit:
        return html.escape(text)
    title = html.escape(text[:4000], quote=True)
    return f'<span title="{title}">{html.escape(text[:limit].rstrip())}…</span>'


def fmt_score(value: float | None) -> str:
    """A score with two decimals (``—`` when missing)."""
    return "—" if value is None else f"{value:.2f}"


def fmt_duration(seconds: float) -> str:
    """A duration for humans: ``85 ms``, ``12.3 s``, ``4 min 05 s``."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"


def pretty_json(value: object) -> str:
    """Indented JSON of any value; anything JSON cannot encode is shown with ``str``."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


_BLOCK = {"div", "p", "tr", "table", "h1", "h2", "h3", "h4", "h5", "h6", "li", "details", "summary", "section"}


class _TextRenderer(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0
        self._pre = 0
        self._cells = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in {"style", "script"}:
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
        if tag in {"style", "script"}:
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
