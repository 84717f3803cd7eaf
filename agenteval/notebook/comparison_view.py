"""HTML views of a comparison of two reports, styled like the report: in Jupyter and as one self-contained page.

Everything taken from the reports is escaped: case ids and metric names come from users.
"""

from __future__ import annotations

import html
import math
import numbers
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval._util.files import write_atomic
from agenteval.notebook._html import CSS, Format, badge, data_table, fmt_score, folded_table, page

if TYPE_CHECKING:
    import os

    import pandas as pd

    from agenteval.analysis.compare import Comparison
    from agenteval.analysis.report import EvaluationReport

__all__ = ["comparison_html", "comparison_page", "export_comparison_html"]

_CHANGE_COLUMNS = {
    "eval_id": "Case",
    "metric_name": "Metric",
    "baseline_status": "Baseline",
    "candidate_status": "Candidate",
    "baseline_score": "Baseline score",
    "candidate_score": "Candidate score",
    "score_change": "Score change",
    "baseline_pass_rate": "Baseline runs passed",
    "candidate_pass_rate": "Candidate runs passed",
}
"""The columns of the metric regressions and fixes tables, and their headings."""

_CASE_COLUMNS = {
    "eval_id": "Case",
    "change": "Change",
    "baseline_status": "Baseline",
    "candidate_status": "Candidate",
    "baseline_pass_rate": "Baseline runs passed",
    "candidate_pass_rate": "Candidate runs passed",
    "pass_rate_change": "Runs passed change",
}
"""The columns of the table of cases whose status changed, and their headings."""

_SIGNIFICANCE_COLUMNS = {
    "metric": "Metric",
    "label": "Counts",
    "n_pairs": "Pairs",
    "baseline_mean": "Baseline mean",
    "candidate_mean": "Candidate mean",
    "mean_diff": "Change",
    "ci_low": "CI low",
    "ci_high": "CI high",
    "p_value": "p-value",
    "test": "Test",
}
"""The columns of the significance table, and their headings."""

_CASE_ORDER = {"regressed": 0, "fixed": 1, "changed": 2, "new": 3, "removed": 4}
"""The order of the changed cases: the worst news first."""


def _number(value: object) -> float | None:
    if isinstance(value, numbers.Real) and not math.isnan(float(value)):
        return float(value)
    return None


def _score(value: object) -> str:
    return f'<td class="ae-num">{fmt_score(_number(value))}</td>'


def _signed(value: object, percent: bool = False) -> str:
    number = _number(value)
    if number is None:
        return '<td class="ae-num ae-muted">—</td>'
    # Colour and sign follow the number as shown: float noise must not read as a gain or a loss.
    shown = round(number * 100) if percent else round(number, 2)
    css = "ae-up" if shown > 0 else "ae-down" if shown < 0 else "ae-muted"
    text = f"{shown:+.0f} pts" if percent else f"{shown:+.2f}"
    return f'<td class="ae-num {css}">{text if shown else text[1:]}</td>'


def _rate(value: object) -> str:
    number = _number(value)
    return f'<td class="ae-num">{"—" if number is None else f"{number:.0%}"}</td>'


def _status(value: object) -> str:
    return f"<td>{badge(str(value)) if value else ''}</td>"


def _p_value(value: object) -> str:
    number = _number(value)
    text = "—" if number is None else "< 0.001" if number < 0.001 else f"{number:.3g}"
    return f'<td class="ae-num">{text}</td>'


def _change(value: object) -> str:
    css = {"regressed": "ae-down", "fixed": "ae-up"}.get(str(value), "")
    return f'<td class="{css}">{html.escape(str(value))}</td>'


def _formats(names: dict[str, str]) -> dict[str, Format]:
    """How to show each column of the comparison's frames, under its heading in ``names``."""
    by_column: dict[str, Format] = {
        "baseline_score": _score,
        "candidate_score": _score,
        "score_change": _signed,
        "baseline_status": _status,
        "candidate_status": _status,
        "change": _change,
        "baseline_pass_rate": _rate,
        "candidate_pass_rate": _rate,
        "pass_rate_change": lambda value: _signed(value, percent=True),
        "baseline_mean": _score,
        "candidate_mean": _score,
        "mean_diff": _signed,
        "ci_low": _signed,
        "ci_high": _signed,
        "p_value": _p_value,
    }
    return {names.get(column, column): format_ for column, format_ in by_column.items()}


def _report_row(role: str, report: EvaluationReport) -> str:
    result_id = report.result_id
    cells = [
        f"<th>{role}</th>",
        f"<td>{badge(report.overall_status)}</td>",
        f'<td class="ae-id">{html.escape(report.app_name)}</td>',
        f'<td class="ae-id">{html.escape(report.eval_set_id)}</td>',
        f'<td class="ae-num">{len(report.case_statuses)}</td>',
        f'<td class="ae-num">{report.num_runs}</td>',
        f'<td class="ae-id">{html.escape(result_id) if result_id else "—"}</td>',
    ]
    return f"<tr>{''.join(cells)}</tr>"


def _counts(label: str, counts: dict[str, int]) -> str:
    text = ", ".join(f"{count} {change}" for change, count in counts.items() if count)
    return f"<span>{label}: <b>{html.escape(text or 'none')}</b></span>"


def _summary(comparison: Comparison, summary: dict[str, Any]) -> str:
    """Which reports, how many cases changed which way, whether the eval sets differ, the score moves."""
    reports = (
        "<table class='ae-table'><thead><tr><th></th><th>Status</th><th>App</th><th>Eval set</th>"
        "<th class='ae-num'>Cases</th><th class='ae-num'>Runs</th><th>Result</th></tr></thead><tbody>"
        f"{_report_row('Baseline', comparison.baseline)}{_report_row('Candidate', comparison.candidate)}"
        "</tbody></table>"
    )
    counts = _counts("Cases", summary["cases"]) + " " + _counts("Metric results (case × metric)", summary["metrics"])
    parts = [
        "<div class='ae-head'><span class='ae-title'>Comparison</span></div>",
        reports,
        f"<div class='ae-meta'>{counts}</div>",
    ]
    if summary["same_eval_set"] is False or comparison.baseline.eval_set_id != comparison.candidate.eval_set_id:
        parts.append(
            "<div class='ae-note'><b>Note:</b> the two reports evaluated different eval sets (or different "
            "contents of one), so cases may be new or removed, or the same id may ask something else.</div>"
        )
    moves = summary["mean_score_change"]
    if moves:
        rows = "".join(
            f'<tr><td class="ae-id">{html.escape(name)}</td>{_signed(change)}</tr>' for name, change in moves.items()
        )
        parts.append(
            "<h4>Mean score change per metric</h4><table class='ae-table'><thead><tr><th>Metric</th>"
            f"<th class='ae-num'>Change</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    return "".join(parts)


def _significance(comparison: Comparison, summary: dict[str, Any]) -> str:
    """In words, whether each change is significant; then the tests as a table, and the cases left out of them."""
    table = comparison.significance
    items = []
    for metric, change in zip(table["metric"], table["mean_diff"], strict=True):
        css = ("ae-up" if change > 0 else "ae-down") if summary["significant"][metric] else ""
        items.append(f'<li class="{css}">{html.escape(summary["significance"][metric])}</li>')
    level = f"{(1 - summary['confidence']) * 100:.6g}%"
    parts = [
        f"<p class='ae-muted'>{html.escape(summary['pairing'])}. A change is significant when its p-value is below"
        f" {level}. The intervals are paired bootstrap intervals (<code>comparison.significance</code>); with"
        " few cases they run narrow and may leave out 0 where the test, exact, finds no significant change.</p>",
        f"<ul>{''.join(items)}</ul>",
        data_table(table.rename(columns=_SIGNIFICANCE_COLUMNS), _formats(_SIGNIFICANCE_COLUMNS)),
    ]
    unpaired = comparison.unpaired
    if len(unpaired):
        parts.append(folded_table("comparison.unpaired", "cases left out of the tests", unpaired))
    return "".join(parts)


def _changes(frame: pd.DataFrame, columns: dict[str, str], what: str, none: str) -> str:
    """``what`` the rows of ``frame`` are, then the rows with readable headings (``columns``); or ``none``."""
    if not len(frame):
        return f'<p class="ae-muted">{none}</p>'
    shown = frame[[column for column in columns if column in frame.columns]].rename(columns=columns)
    return f"<p class='ae-muted'>{what}</p>{data_table(shown, _formats(columns))}"


def _changed_cases(comparison: Comparison) -> pd.DataFrame:
    """The rows of :attr:`Comparison.cases` whose status changed, regressions first."""
    cases = comparison.cases
    changed = cases[cases["change"] != "unchanged"]
    return changed.sort_values("change", key=lambda column: column.map(_CASE_ORDER), kind="stable")


def _data(comparison: Comparison) -> str:
    """The full tables, folded: one row per case and metric, and one per case."""
    frames = [
        ("comparison.table", "one per case and metric", comparison.table),
        ("comparison.cases", "one per case", comparison.cases),
    ]
    return "".join(folded_table(name, what, frame, _formats({})) for name, what, frame in frames)


def _sections(comparison: Comparison) -> list[tuple[str, str, str]]:
    summary = comparison.summary
    cases = _changed_cases(comparison)
    regressions = comparison.regressions
    fixes = comparison.fixes
    averaged = "scores averaged over the runs"
    return [
        ("summary", "Summary", _summary(comparison, summary)),
        ("significance", "Significance", _significance(comparison, summary)),
        (
            "cases",
            f"Cases whose status changed ({len(cases)})",
            _changes(
                cases,
                _CASE_COLUMNS,
                "Each case's overall status, as the case aggregator decided it (<code>comparison.cases</code>).",
                "No case changed its status.",
            ),
        ),
        (
            "regressions",
            f"Metric regressions ({len(regressions)})",
            _changes(
                regressions,
                _CHANGE_COLUMNS,
                "(case, metric) results that passed in the baseline and do not in the candidate "
                f"(<code>comparison.regressions</code>; {averaged}).",
                "No metric regressions.",
            ),
        ),
        (
            "fixes",
            f"Metric fixes ({len(fixes)})",
            _changes(
                fixes,
                _CHANGE_COLUMNS,
                "(case, metric) results that did not pass in the baseline and pass in the candidate "
                f"(<code>comparison.fixes</code>; {averaged}).",
                "No metric fixes.",
            ),
        ),
        ("tables", "Data", _data(comparison)),
    ]


def comparison_html(comparison: Comparison, *, style: bool = True) -> str:
    """The HTML view of a comparison (its ``_repr_html_``), styled like the report's.

    It shows both reports, how many cases and (case, metric) results were fixed, regressed or
    stayed, a note when the reports evaluated different eval sets, each metric's mean score
    change, whether the cases passed (by overall status), the runs passed and each metric's mean
    changed significantly (in words, then ``significance``, with the ``unpaired`` cases folded),
    the cases whose overall status changed (from ``cases``), the (case, metric) results that
    regressed and those fixed (``regressions`` and ``fixes``), then the full ``table`` and
    ``cases`` folded. Long texts are folded to their start (one click unfolds them); no script runs.

    Args:
        comparison: The comparison to show.
        style: Include the ``<style>`` block (leave it out when the page already has it).

    Returns:
        A self-contained HTML fragment.
    """
    sections = _sections(comparison)
    body = sections[0][2] + "".join(f"<h4>{html.escape(heading)}</h4>{content}" for _, heading, content in sections[1:])
    css = f"<style>{CSS}</style>" if style else ""
    return f'<div class="agenteval">{css}{body}</div>'


def comparison_page(comparison: Comparison, *, title: str | None = None) -> str:
    """The whole exported page as a string (what :func:`export_comparison_html` writes).

    Args:
        comparison: The comparison to export.
        title: The page title; by default names both reports' app and eval set.

    Returns:
        A complete HTML document with no external references.
    """
    baseline, candidate = comparison.baseline, comparison.candidate
    default = f"agenteval comparison: {baseline.app_name} / {baseline.eval_set_id}"
    if (candidate.app_name, candidate.eval_set_id) != (baseline.app_name, baseline.eval_set_id):
        default += f" vs {candidate.app_name} / {candidate.eval_set_id}"
    return page(title or default, _sections(comparison))


def export_comparison_html(comparison: Comparison, path: str | os.PathLike[str], *, title: str | None = None) -> Path:
    """Write the comparison to ``path`` as one self-contained HTML file, styled like an exported report.

    Args:
        comparison: The comparison to export.
        path: Where to write; parent directories are created. The file is replaced atomically.
        title: The page title; by default names both reports' app and eval set.

    Returns:
        The path written.

    Raises:
        StorageError: The file could not be written.
    """
    target = Path(path)
    write_atomic(target, comparison_page(comparison, title=title))
    return target
