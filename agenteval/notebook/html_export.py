"""Export a report as ONE self-contained HTML file that opens in any browser, without a kernel.

Nothing is loaded from elsewhere: styles are inline, the plots are embedded as base64 PNG, and
there is no script at all (case sections fold with ``<details>``).
"""

from __future__ import annotations

import base64
import datetime as dt
import html
from pathlib import Path
from typing import TYPE_CHECKING

from agenteval._util.files import write_atomic
from agenteval.errors import MissingDependencyError, describe_exception
from agenteval.evalresult.provenance import Provenance
from agenteval.notebook._case_view import ShownCase, shown_case_html
from agenteval.notebook._html import badge, folded_table, page, pretty_json
from agenteval.notebook.display import case_anchor, report_html
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    from agenteval.analysis.report import EvaluationReport

__all__ = ["export_html", "report_page"]


def _plots(report: EvaluationReport) -> str:
    """The overview plots as an embedded PNG, or a note saying why there are none.

    The tables are the page's main content, so a plot that cannot be drawn must not cost the page.
    """
    try:
        from agenteval.notebook.plotting import report_png

        png = report_png(report, dpi=100)
    except MissingDependencyError as exc:
        return f'<p class="ae-muted">No plots: {html.escape(str(exc))}</p>'
    except Exception as exc:
        return f'<p class="ae-error">The plots could not be drawn: {html.escape(describe_exception(exc))}</p>'
    encoded = base64.b64encode(png).decode("ascii")
    alt = "Score distribution, pass rate per metric and run, and the case by metric heat map"
    return f'<img class="ae-plot" alt="{alt}" src="data:image/png;base64,{encoded}">'


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return ""
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _provenance(report: EvaluationReport) -> str:
    provenance: Provenance | None = report.provenance
    rows: list[tuple[str, str]] = [("result id", report.result_id)]
    # Only the result records when it was created; the page reads every record anyway, for the cases and tables.
    if report.result.creation_timestamp is not None:
        rows.append(("saved", _when(report.result.creation_timestamp)))
    if provenance is None:
        rows.append(("provenance", "not recorded (a result written by another tool)"))
    else:
        settings = ("num_runs", "parallel_inference", "parallel_evaluation", "parallel_runs", "parallelism")
        rows += [
            ("agenteval", provenance.agenteval_version),
            ("Python", provenance.python_version),
            ("libraries", ", ".join(f"{name} {version}" for name, version in provenance.library_versions.items())),
            ("platform", provenance.platform),
            ("git revision", provenance.git_revision),
            ("eval set hash", provenance.eval_set_hash),
            ("metrics hash", provenance.metrics_hash),
            ("agent", provenance.agent),
            ("agent label", provenance.agent_label if provenance.agent_label != provenance.agent else ""),
            ("agent code hash", provenance.agent_code_hash),
            ("aggregator", provenance.aggregator),
            ("judge", provenance.judge),
            *((name.replace("_", " "), str(getattr(provenance, name))) for name in settings),
            ("turn timeout", "" if provenance.turn_timeout is None else f"{provenance.turn_timeout:g} s"),
            ("cache", "on" if provenance.cache_enabled else ""),
            ("cassettes", provenance.cassette),
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
    # Every case in full, so every record: read at once, not case by case (each looks its case up among all).
    for summary in sorted(report.case_summaries, key=lambda s: order.get(s.overall_status, 1)):
        failed = summary.overall_status is EvalStatus.FAILED
        shown = ShownCase(summary.eval_id, summary.overall_status, summary.score, summary.runs)
        parts.append(
            f'<details class="ae-case" id="{case_anchor(summary.eval_id)}"{" open" if failed else ""}>'
            f'<summary>{badge(summary.overall_status)}<span class="ae-id">{html.escape(summary.eval_id)}</span>'
            f"</summary>{shown_case_html(report, shown, style=False, page=True)}</details>"
        )
    return "".join(parts) or '<p class="ae-muted">No cases.</p>'


def _tables(report: EvaluationReport) -> str:
    frames = [
        ("report.cases", "one row per run and case", report.cases),
        ("report.metrics", "one row per run, case and metric", report.metrics),
        ("report.invocations", "one row per run, case, turn and metric", report.invocations),
        ("report.rubric_scores", "one row per rubric score of an LLM judge", report.rubric_scores),
    ]
    # Raw rows run long (one per run, case and metric), so each table waits folded, its size in view.
    return "".join(
        folded_table(name, what, frame) for name, what, frame in frames if name != "report.rubric_scores" or len(frame)
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
    return page(
        title,
        [
            ("summary", "Summary", report_html(report, max_cases=None, link_cases=True, style=False)),
            ("plots", "Overview plots", _plots(report)),
            ("cases", "Cases, expected vs actual (failing first, open)", _cases(report)),
            ("provenance", "Provenance", _provenance(report)),
            ("tables", "Data", _tables(report)),
        ],
    )


def export_html(report: EvaluationReport, path: str | Path, *, title: str | None = None) -> Path:
    """Write the report to ``path`` as one self-contained HTML file.

    The page holds the summary, the overview plots (embedded PNG), every case side by side (failing
    cases first and unfolded), the provenance (versions, content hashes, settings) and the
    ``cases``, ``metrics``, ``invocations`` and ``rubric_scores`` tables, folded (each says how
    many rows it holds; one click unfolds it). Long texts are folded to their start the same way.
    It references nothing outside itself and runs no script, so it can be mailed or archived as
    it is.

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
