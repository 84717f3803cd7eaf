"""Export a report as ONE self-contained HTML file that opens in any browser, without a kernel.

Nothing is loaded from elsewhere: styles are inline, the plots are embedded as base64 PNG, and
there is no script at all (case sections fold with ``<details>``).
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import io
from pathlib import Path
from typing import TYPE_CHECKING

from agenteval._files import write_atomic
from agenteval.errors import AgentEvalError, MissingDependencyError, describe_exception
from agenteval.notebook._html import CSS, badge, pretty_json
from agenteval.notebook.display import case_anchor, case_html, report_html
from agenteval.provenance import Provenance, package_version, read_provenance
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    import pandas as pd

    from agenteval.report import EvaluationReport

__all__ = ["export_html", "report_page"]

_MAX_TABLE_ROWS = 2_000

# The page is a document of its own, so it fixes a light scheme rather than inheriting one.
_PAGE_CSS = """
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
details.ae-fold>summary{cursor:pointer;font-weight:600;margin:.5em 0}
table.ae-data td{white-space:pre-wrap;word-break:break-word;max-width:36em;font-size:.92em}
.ae-footer{margin-top:2em;font-size:.85em;opacity:.7}
"""


def _frame_html(frame: pd.DataFrame) -> str:
    shown = frame.head(_MAX_TABLE_ROWS)
    table = shown.to_html(index=False, border=0, classes="ae-table ae-data", escape=True, na_rep="")
    if len(frame) > len(shown):
        table += f'<p class="ae-muted">First {len(shown)} of {len(frame)} rows.</p>'
    return table


def _plots(report: EvaluationReport) -> str:
    """The overview plots as an embedded PNG, or a note saying why there are none.

    The tables are the page's main content, so a plot that cannot be drawn must not cost the page.
    """
    buffer = io.BytesIO()
    try:
        from agenteval.plotting import plot_report

        plot_report(report).savefig(buffer, format="png", dpi=100)
    except MissingDependencyError as exc:
        return f'<p class="ae-muted">No plots: {html.escape(str(exc))}</p>'
    except Exception as exc:
        return f'<p class="ae-error">The plots could not be drawn: {html.escape(describe_exception(exc))}</p>'
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    alt = "Score distribution, pass rate per metric and run, and the case by metric heat map"
    return f'<img class="ae-plot" alt="{alt}" src="data:image/png;base64,{encoded}">'


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return ""
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _provenance(report: EvaluationReport) -> str:
    provenance: Provenance | None = report.provenance
    if provenance is None:
        try:
            provenance = read_provenance(report.result)
        except AgentEvalError as exc:
            return f'<p class="ae-muted">The stored provenance is unreadable: {html.escape(str(exc))}</p>'
    rows: list[tuple[str, str]] = [("result id", report.result.eval_set_result_id)]
    if report.result.creation_timestamp is not None:
        rows.append(("saved", _when(report.result.creation_timestamp)))
    if provenance is None:
        rows.append(("provenance", "not recorded (a result written by another tool)"))
    else:
        settings = ("num_runs", "parallel_inference", "parallel_evaluation", "parallel_runs", "parallelism")
        rows += [
            ("agenteval", provenance.agenteval_version),
            ("Python", provenance.python_version),
            ("platform", provenance.platform),
            ("eval set hash", provenance.eval_set_hash),
            ("metrics hash", provenance.metrics_hash),
            ("agent", provenance.agent),
            ("aggregator", provenance.aggregator),
            ("judge", provenance.judge),
            *((name.replace("_", " "), str(getattr(provenance, name))) for name in settings),
            ("case filter", ", ".join(provenance.eval_case_ids)),
            ("started", _when(provenance.started_at)),
            ("finished", _when(provenance.finished_at)),
            ("derived from", provenance.derived_from),
        ]
    body = "".join(
        f'<tr><th>{html.escape(key)}</th><td class="ae-id">{html.escape(value)}</td></tr>'
        for key, value in rows
        if value
    )
    table = f"<table class='ae-table'><tbody>{body}</tbody></table>"
    if provenance is not None and provenance.metrics:
        config = html.escape(pretty_json([metric.to_dict() for metric in provenance.metrics]))
        table += (
            '<details class="ae-fold"><summary>Metric configuration</summary>'
            f'<pre class="ae-json">{config}</pre></details>'
        )
    return table


def _cases(report: EvaluationReport) -> str:
    order = {EvalStatus.FAILED: 0, EvalStatus.NOT_EVALUATED: 1, EvalStatus.PASSED: 2}
    parts = []
    for summary in sorted(report.case_summaries, key=lambda s: order.get(s.overall_status, 1)):
        failed = summary.overall_status is EvalStatus.FAILED
        parts.append(
            f'<details class="ae-case" id="{case_anchor(summary.eval_id)}"{" open" if failed else ""}>'
            f'<summary>{badge(summary.overall_status)}<span class="ae-id">{html.escape(summary.eval_id)}</span>'
            f"</summary>{case_html(report, summary.eval_id, style=False)}</details>"
        )
    return "".join(parts) or '<p class="ae-muted">No cases.</p>'


def _tables(report: EvaluationReport) -> str:
    frames = [
        ("report.cases", "one row per run and case", report.cases),
        ("report.metrics", "one row per run, case and metric", report.metrics),
        ("report.invocations", "one row per run, case, turn and metric", report.invocations),
        ("report.rubric_scores", "one row per rubric score of an LLM judge", report.rubric_scores),
    ]
    return "".join(
        f'<details class="ae-fold"{" open" if name == "report.metrics" else ""}><summary>'
        f'<code>{name}</code> <span class="ae-muted">({len(frame)} rows: {what})</span></summary>'
        f"{_frame_html(frame)}</details>"
        for name, what, frame in frames
        if name != "report.rubric_scores" or len(frame)
    )


def report_page(report: EvaluationReport, *, title: str | None = None) -> str:
    """The whole exported page as a string (what :func:`export_html` writes).

    Args:
        report: The report to export.
        title: The page title; by default names the app and the eval set.

    Returns:
        A complete HTML document with no external references.
    """
    title = title or f"agenteval report: {report.app_name} / {report.eval_set_id}"
    sections = [
        ("summary", "Summary", report_html(report, max_cases=None, link_cases=True, style=False)),
        ("plots", "Overview plots", _plots(report)),
        ("cases", "Cases, expected vs actual (failing first, open)", _cases(report)),
        ("provenance", "Provenance", _provenance(report)),
        ("tables", "Data", _tables(report)),
    ]
    nav = "".join(f'<a href="#{key}">{heading.split(",")[0]}</a>' for key, heading, _ in sections)
    body = "".join(f'<section id="{key}"><h2>{heading}</h2>{content}</section>' for key, heading, content in sections)
    generated = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_PAGE_CSS}{CSS}</style></head>"
        f'<body><div class="agenteval ae-page"><nav class="ae-nav">{nav}</nav>{body}'
        f'<div class="ae-footer">Generated by agenteval {html.escape(package_version())} on {generated}.</div>'
        "</div></body></html>"
    )


def export_html(report: EvaluationReport, path: str | Path, *, title: str | None = None) -> Path:
    """Write the report to ``path`` as one self-contained HTML file.

    The page holds the summary, the overview plots (embedded PNG), every case side by side (failing
    cases first and unfolded), the provenance (versions, content hashes, settings) and the
    ``cases``, ``metrics``, ``invocations`` and ``rubric_scores`` tables. It references nothing
    outside itself and runs no script, so it can be mailed or archived as it is.

    Args:
        report: The report to export.
        path: Where to write; parent directories are created. The file is replaced atomically.
        title: The page title; by default names the app and the eval set.

    Returns:
        The path written.

    Raises:
        StorageError: The file could not be written.
    """
    target = Path(path)
    write_atomic(target, report_page(report, title=title))
    return target
