"""``agenteval compare A B``: two results lined up in the terminal, with the significance of what changed."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval.analysis.compare import Comparison, compare
from agenteval.analysis.report import EvaluationReport
from agenteval.cli._output import json_text, say, table

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["compare_command"]


def compare_command(args: argparse.Namespace) -> int:
    """Print the comparison of two results (or bundles); 0 once both were read, whatever changed."""
    reports = [EvaluationReport.load(path) for path in (args.baseline, args.candidate)]
    comparison = compare(*reports)
    if args.json:
        print(json_text(_comparison_json(comparison, args.baseline, args.candidate)))
    else:
        say("\n".join(_comparison_text(comparison, args.baseline, args.candidate)))
    return 0


def _comparison_text(comparison: Comparison, baseline: Path, candidate: Path) -> list[str]:
    summary = comparison.summary
    significance = comparison.significance
    lines = [
        _described("baseline", comparison.baseline, baseline),
        _described("candidate", comparison.candidate, candidate),
        f"cases: {_counted(summary['cases'])}; (case, metric) results: {_counted(summary['metrics'])}",
        f"pairing: {summary['pairing']}",
        "",
        f"significance ({_percent(comparison.confidence)} confidence; only paired cases count):",
        *table(
            [
                ["metric", "counts", "pairs", "baseline", "candidate", "change", "interval", "p", "test"],
                *(_significance_cells(row) for row in significance.to_dict("records")),
            ]
        ),
        "",
        *(f"  {sentence}" for sentence in summary["significance"].values()),
        "",
    ]
    changed = comparison.cases[comparison.cases["change"] != "unchanged"]
    if changed.empty:
        lines.append("no case changed status")
    else:
        lines.append("changed cases:")
        lines += table(
            [
                ["case", "baseline", "candidate", "change", "baseline pass rate", "candidate pass rate"],
                *(
                    [
                        str(row["eval_id"]),
                        str(row["baseline_status"]) or "-",
                        str(row["candidate_status"]) or "-",
                        str(row["change"]),
                        _number(row["baseline_pass_rate"]),
                        _number(row["candidate_pass_rate"]),
                    ]
                    for row in changed.to_dict("records")
                ),
            ]
        )
    for title, frame in (("regressions", comparison.regressions), ("fixes", comparison.fixes)):
        if not frame.empty:
            lines += ["", f"{title} (case, metric: baseline → candidate score):"]
            lines += [
                f"  {row['eval_id']}, {row['metric_name']}: {_number(row['baseline_score'])} →"
                f" {_number(row['candidate_score'])}"
                for row in frame.to_dict("records")
            ]
    return lines


def _described(side: str, report: EvaluationReport, path: Path) -> str:
    runs = f"{report.num_runs} run{'s' if report.num_runs != 1 else ''}"
    return f"{side}: {path} (eval set {report.eval_set_id}, {runs}, result {report.result_id})"


def _counted(counts: dict[str, int]) -> str:
    """``1 fixed, 0 regressed, 4 unchanged``: fixed and regressed always, the others when there are some."""
    shown = [f"{count} {change}" for change, count in counts.items() if count or change in ("fixed", "regressed")]
    return ", ".join(shown)


def _significance_cells(row: Mapping[Hashable, Any]) -> list[str]:
    interval = "-" if _missing(row["ci_low"]) else f"[{_number(row['ci_low'])}, {_number(row['ci_high'])}]"
    p_value = "-" if _missing(row["p_value"]) else f"{row['p_value']:.3g}"
    return [
        str(row["metric"]),
        str(row["label"]),
        str(row["n_pairs"]),
        _number(row["baseline_mean"]),
        _number(row["candidate_mean"]),
        _number(row["mean_diff"], signed=True),
        interval,
        p_value,
        str(row["test"]),
    ]


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _number(value: object, *, signed: bool = False) -> str:
    if _missing(value) or not isinstance(value, int | float):
        return "-"
    return f"{value:+.2f}" if signed else f"{value:.2f}"


def _percent(level: float) -> str:
    return f"{level * 100:.6g}%"


def _comparison_json(comparison: Comparison, baseline: Path, candidate: Path) -> dict[str, Any]:
    summary = comparison.summary
    rows = _records(comparison.significance)
    for row in rows:
        row["significant"] = summary["significant"].get(row["metric"])
        row["inWords"] = summary["significance"].get(row["metric"])
    cases = comparison.cases
    return {
        "baseline": _side(comparison.baseline, baseline),
        "candidate": _side(comparison.candidate, candidate),
        "confidence": comparison.confidence,
        "sameEvalSet": summary["same_eval_set"],
        "pairing": summary["pairing"],
        "cases": summary["cases"],
        "metrics": summary["metrics"],
        "meanScoreChange": summary["mean_score_change"],
        "significance": rows,
        "changedCases": _records(cases[cases["change"] != "unchanged"]),
        "regressions": _records(comparison.regressions),
        "fixes": _records(comparison.fixes),
    }


def _side(report: EvaluationReport, path: Path) -> dict[str, Any]:
    return {
        "file": str(path),
        "appName": report.app_name,
        "evalSetId": report.eval_set_id,
        "evalSetResultId": report.result_id,
        "numRuns": report.num_runs,
    }


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of a table, their column names in the camelCase of agenteval's JSON files."""
    return [{_camel(str(name)): value for name, value in row.items()} for row in frame.to_dict("records")]


def _camel(name: str) -> str:
    return re.sub(r"_(\w)", lambda found: found.group(1).upper(), name)
