"""Markdown tables from the JSON lines of the peer benchmarks, each target of issue 28 marked met or missed.

Usage (run.sh calls it with one mode's results):
``python bench/peers/summarize.py overhead|scale|kill|issue28 RESULTS.jsonl...``

``overhead``, ``scale`` and ``kill`` print the tables of their measurements, then the rows of issue
28's table that those measurements cover; ``issue28`` prints issue 28's whole table from results of
several modes (e.g. ``bench/.peer-results/{overhead,scale,kill}-*.jsonl`` of one session). The
targets of issue 13 (≤ 100 µs per case, < 400 MB at 20,000 cases, ≤ 10 KiB retained per case-run,
save and load < 1 s, ...) are superseded by issue 28's and are no longer judged; the tables still
show what they measured.

run.sh runs the two frameworks back to back for every configuration in every repetition, so the
k-th line of agenteval for a configuration pairs with the k-th line of pydantic-evals for it: the
ratios between frameworks are per-repetition ratios of those pairs (a lone absolute time from a
shared machine means little). Cells with several repetitions read ``median (min–max)``; a target
is judged on the median, except "nothing finished is lost", which every kill must meet.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, TypeVar

Record = dict[str, Any]
Key = TypeVar("Key", bound=Hashable)
Groups = dict[tuple[str, Any], list[Record]]
OverheadKey = tuple[int, float, int]
ScaleKey = tuple[int, int]
KillKey = tuple[int, float, int, float]
PEER = "pydantic-evals"
OURS = "agenteval"
MODES = ("overhead", "scale", "kill", "issue28")
TARGET_N = 20_000
"""The size issue 28's memory, load, reaggregate and with_thresholds targets are stated for."""
LARGE_N = 100_000
"""The size of issue 28's "completes" row."""
BASE_N = 1_000
"""The size per-case growth is measured against."""
LARGE_PEAK_MIB = 1024.0
"""The 100,000-case run's peak RSS after evaluate must stay below 1 GiB."""


def kind(record: Record) -> str:
    """Which script wrote ``record`` (lines written before the ``kind`` field are told apart by their fields)."""
    return str(record.get("kind") or ("scale" if "runs" in record else "overhead"))


def read(path: Path) -> list[Record]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def grouped(records: Sequence[Record], key: Callable[[Record], Key]) -> dict[tuple[str, Key], list[Record]]:
    """Records per (framework, configuration), in the order they ran (index k = repetition k)."""
    groups: dict[tuple[str, Key], list[Record]] = defaultdict(list)
    for record in records:
        groups[(record["framework"], key(record))].append(record)
    return groups


def overhead_key(record: Record) -> OverheadKey:
    return (record["n"], record["latency"], record["concurrency"])


def scale_key(record: Record) -> ScaleKey:
    return (record["n"], record["runs"])


def kill_key(record: Record) -> KillKey:
    return (record["n"], record["latency"], record["concurrency"], record["kill_at"])


def span(values: Sequence[float], digits: int = 2, unit: str = "") -> str:
    if not values:
        return "—"
    median = f"{statistics.median(values):.{digits}f}{unit}"
    return median if len(values) == 1 else f"{median} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def paired(ours: Sequence[float], theirs: Sequence[float]) -> list[float]:
    return [a / b for a, b in zip(ours, theirs, strict=False) if b > 0]


def judged(value: float | None, limit: float, *, below: bool = False) -> str:
    """``met`` when ``value`` is at most ``limit`` (below it, with ``below``), ``MISSED`` otherwise."""
    if value is None:
        return "—"
    return "met" if (value < limit if below else value <= limit) else "MISSED"


def median_or_none(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def table(head: Sequence[str]) -> None:
    print(row(head))
    print(row(["---"] * len(head)))


def field_values(records: Sequence[Record], field: str | Callable[[Record], float]) -> list[float]:
    if callable(field):
        return [value for value in map(field, records) if not math.isnan(value)]
    return [r[field] for r in records if r.get(field) is not None]


def case_runs(record: Record) -> float:
    return float(record["n"] * record["runs"])


def per_item_growth(base: Sequence[Record], field: str, count: Callable[[Record], float]) -> Callable[[Record], float]:
    """``field`` per item of a record over the median of its file's 1k-case records (NaN without one).

    The median, not the 1k run of the same repetition: one short run on a shared machine varies by
    2× (hence ``scale100k`` runs 1k before and after the 100k).
    """

    def growth(record: Record) -> float:
        references = [r[field] / count(r) for r in base if r.get("batch") == record.get("batch")]
        if not references:
            return math.nan
        return float(record[field] / count(record)) / float(statistics.median(references))

    return growth


def per_case_growth(base: Sequence[Record]) -> Callable[[Record], float]:
    """``evaluate`` time per case-run of a record over that of its file's 1k-case records."""
    return per_item_growth(base, "evaluate_s", case_runs)


# --- issue 28's table ----------------------------------------------------------------------------

Issue28Row = tuple[str, str, str, str, str]
"""workload, pydantic-evals, agenteval, target, verdict."""


def overhead_rows(records: Sequence[Record]) -> list[Issue28Row]:
    groups = grouped([r for r in records if kind(r) == "overhead"], overhead_key)
    rows: list[Issue28Row] = []
    theirs, ours = groups.get((PEER, (2000, 0.0, 100)), []), groups.get((OURS, (2000, 0.0, 100)), [])
    if ours:
        ratios = paired([r["wall_s"] for r in ours], [r["wall_s"] for r in theirs])
        rows.append(
            (
                "2000 instant cases, P=100: framework cost per case",
                span([r["us_per_case"] for r in theirs], 0, " µs"),
                f"{span([r['us_per_case'] for r in ours], 0, ' µs')}; {span(ratios, 2, '×')} pydantic-evals",
                "≤ 0.5× pydantic-evals",
                judged(median_or_none(ratios), 0.5),
            )
        )
    for latency, limit in ((0.02, 1.3), (0.5, 1.03)):
        theirs, ours = groups.get((PEER, (1000, latency, 100)), []), groups.get((OURS, (1000, latency, 100)), [])
        if ours:
            ideal = [r["ratio_to_ideal"] for r in ours]
            rows.append(
                (
                    f"1000 × {latency * 1000:g} ms agent, P=100: whole `evaluate()`",
                    span([r["ratio_to_ideal"] for r in theirs], 2, "×") + " ideal",
                    span(ideal, 2, "×") + " ideal",
                    f"≤ {limit}× ideal",
                    judged(median_or_none(ideal), limit),
                )
            )
    return rows


def scale_rows(records: Sequence[Record]) -> list[Issue28Row]:
    groups = grouped([r for r in records if kind(r) == "scale"], scale_key)
    rows: list[Issue28Row] = []
    theirs, ours = groups.get((PEER, (TARGET_N, 1)), []), groups.get((OURS, (TARGET_N, 1)), [])
    if ours:
        peaks = [r["evaluate_peak_rss_mib"] for r in ours]
        ratios = paired(peaks, [r["evaluate_peak_rss_mib"] for r in theirs])
        rows.append(
            (
                "peak RSS after `evaluate`, 20,000 cases",
                span([r["evaluate_peak_rss_mib"] for r in theirs], 0, " MiB"),
                f"{span(peaks, 0, ' MiB')} ({span(ratios, 2, '×')} pydantic-evals; "
                f"{span(field_values(ours, 'load_local_peak_rss_mib'), 0, ' MiB')} by the end of save + load)",
                "≤ pydantic-evals'",
                judged(median_or_none(ratios), 1.0),
            )
        )
    large = large_row(groups)
    if large:
        rows.append(large)
    if ours:
        load, cases = field_values(ours, "load_local_s"), field_values(ours, "loaded_cases_s")
        verdicts = {judged(median_or_none(load), 1.0, below=True), judged(median_or_none(cases), 0.5, below=True)}
        rows.append(
            (
                "20k: `EvaluationReport.load` / first `report.cases` after it",
                f"`validate_json` {span(field_values(theirs, 'load_json_s'), 2, ' s')}",
                f"{span(load, 2, ' s')} / {span(cases, 2, ' s')}",
                "< 1 s / < 0.5 s",
                "MISSED" if "MISSED" in verdicts else "—" if "—" in verdicts else "met",
            )
        )
        reaggregate, thresholds = field_values(ours, "reaggregate_s"), field_values(ours, "with_thresholds_s")
        verdicts = {judged(median_or_none(reaggregate), 0.5, below=True)}
        verdicts.add(judged(median_or_none(thresholds), 0.5, below=True))
        rows.append(
            (
                "20k: `reaggregate` / `with_thresholds`",
                "—",
                f"{span(reaggregate, 2, ' s')} / {span(thresholds, 2, ' s')}",
                "< 0.5 s each",
                "MISSED" if "MISSED" in verdicts else "met",
            )
        )
    return rows


def large_row(groups: Groups) -> Issue28Row | None:
    """The 100,000-case run: completes, peak RSS after evaluate < 1 GiB, per-case cost ÷ the 1k run's ≤ 1.1."""
    theirs, ours = groups.get((PEER, (LARGE_N, 1)), []), groups.get((OURS, (LARGE_N, 1)), [])
    if not ours:
        return None

    def described(records: list[Record], base: list[Record]) -> tuple[str, list[str]]:
        if not records:
            return "not run", []
        completed = all(r["passed_case_runs"] == r["n"] for r in records)
        peaks = [r["evaluate_peak_rss_mib"] for r in records]
        growth = field_values(records, per_case_growth(base))
        verdicts = [
            "met" if completed else "MISSED",
            judged(median_or_none(peaks), LARGE_PEAK_MIB, below=True),
            judged(median_or_none(growth), 1.1),
        ]
        text = (
            f"{'completes' if completed else 'does not complete'}; "
            f"evaluate {span(field_values(records, 'evaluate_s'), 1, ' s')}; "
            f"peak RSS {span(peaks, 0, ' MiB')}; per case ÷ 1k {span(growth, 2, '×')}"
        )
        return text, verdicts

    peer_text, _ = described(theirs, groups.get((PEER, (BASE_N, 1)), []))
    our_text, verdicts = described(ours, groups.get((OURS, (BASE_N, 1)), []))
    verdict = "MISSED" if "MISSED" in verdicts else "—" if "—" in verdicts else "met"
    return (
        "100,000 cases × 1 run",
        peer_text,
        our_text,
        "completes; peak RSS < 1 GiB; per-case cost ÷ the 1k run ≤ 1.1",
        verdict,
    )


def kill_rows(records: Sequence[Record]) -> list[Issue28Row]:
    kills = [r for r in records if kind(r) == "kill"]
    if not kills:
        return []
    lost = [r["lost"] for r in kills]
    finished = [r["finished_before_kill"] for r in kills]
    text = (
        f"{sum(lost)} of {sum(finished)} finished cases lost over {len(kills)} kills "
        f"(per kill {span(lost, 0)}; {span([r['in_flight'] for r in kills], 0)} in flight)"
    )
    complete = all(r["rerun_passed"] == r["n"] for r in kills)
    verdict = "met" if max(lost) == 0 and complete else "MISSED"
    return [
        (
            "SIGKILL mid-run, then re-run with the same `cache=`",
            "— (no cache or resume)",
            text,
            "nothing finished is lost: only cases in flight run again",
            verdict,
        )
    ]


def issue28(records: Sequence[Record], *, heading: str = "Issue 28's targets") -> None:
    rows = overhead_rows(records) + scale_rows(records) + kill_rows(records)
    if not rows:
        return
    print(f"\n{heading}:\n")
    table(["workload", PEER, OURS, "target", "verdict"])
    for cells in rows:
        print(row(cells))


# --- overhead ------------------------------------------------------------------------------------


def overhead(records: Sequence[Record]) -> None:
    groups = grouped([r for r in records if kind(r) == "overhead"], overhead_key)
    configs = sorted({config for _, config in groups}, key=lambda c: (c[1], c[0], c[2]))
    versions = {record["framework"]: record["version"] for record in records}
    print(f"Overhead: {PEER} {versions.get(PEER, '?')} and {OURS} {versions.get(OURS, '?')}, interleaved.\n")
    table(
        [
            "workload",
            "reps",
            f"{PEER} µs/case",
            f"{OURS} µs/case",
            f"{PEER} wall/ideal",
            f"{OURS} wall/ideal",
            f"{OURS} ÷ {PEER} per rep",
            "median (range)",
        ]
    )
    for config in configs:
        n, latency, concurrency = config
        theirs, ours = groups.get((PEER, config), []), groups.get((OURS, config), [])
        ratios = paired([r["wall_s"] for r in ours], [r["wall_s"] for r in theirs])
        ideal = {
            fw: [r["ratio_to_ideal"] for r in rs if r["ratio_to_ideal"] is not None]
            for fw, rs in ((PEER, theirs), (OURS, ours))
        }
        agent = "instant agent" if latency == 0 else f"{latency * 1000:g} ms agent"
        ideal_s = f", ideal {ours[0]['ideal_s']:g} s" if ours and latency > 0 else ""
        print(
            row(
                [
                    f"{n} cases, {agent}, P={concurrency}{ideal_s}",
                    str(max(len(theirs), len(ours))),
                    span([r["us_per_case"] for r in theirs], 0),
                    span([r["us_per_case"] for r in ours], 0),
                    span(ideal[PEER], 2, "×"),
                    span(ideal[OURS], 2, "×"),
                    ", ".join(f"{ratio:.2f}" for ratio in ratios) or "—",
                    span(ratios),
                ]
            )
        )
    print("\nWhere the time goes (medians, seconds; agenteval scores most cases inside the inference window):\n")
    table(["workload", "framework", "wall", "in GC (full passes)", "inference window", "scoring after it", "save"])
    for config in configs:
        for framework in (PEER, OURS):
            rs = groups.get((framework, config), [])
            if not rs:
                continue

            def med(field: str, rs: list[Record] = rs) -> str:
                values = [r[field] for r in rs if field in r]
                return f"{statistics.median(values):.3f}" if values else "—"

            passes = statistics.median(r["wall_gc_full_passes"] for r in rs)
            print(
                row(
                    [
                        f"{config[0]} cases, latency {config[1]:g} s",
                        framework,
                        med("wall_s"),
                        f"{med('wall_gc_s')} ({passes:g})",
                        med("inference_s"),
                        med("scoring_s"),
                        med("save_s"),
                    ]
                )
            )


# --- scale ---------------------------------------------------------------------------------------


class ScaleTable:
    """One size's table: a row per step, pydantic-evals beside agenteval."""

    def __init__(self, theirs: list[Record], ours: list[Record]) -> None:
        self.theirs, self.ours = theirs, ours
        table(["step", PEER, OURS, f"{OURS} ÷ {PEER} (paired)"])

    def line(
        self,
        step: str,
        theirs: str | Callable[[Record], float] | None,
        ours: str | Callable[[Record], float] | None,
        *,
        digits: int = 3,
        unit: str = " s",
        ratio: bool = False,
    ) -> None:
        a = field_values(self.theirs, theirs) if theirs is not None else []
        b = field_values(self.ours, ours) if ours is not None else []
        print(row([step, span(a, digits, unit), span(b, digits, unit), span(paired(b, a)) if ratio else ""]))


def scale_table(n: int, runs: int, groups: Groups) -> None:
    theirs, ours = groups.get((PEER, (n, runs)), []), groups.get((OURS, (n, runs)), [])
    reps = max(len(theirs), len(ours))
    print(f"\n### {n:,} cases × {runs} run{'s' if runs > 1 else ''} ({reps} measurement{'s' if reps > 1 else ''})\n")
    t = ScaleTable(theirs, ours)
    t.line("set up the N cases (pydantic-evals: Dataset; agenteval: in-memory add_case)", "setup_s", "add_memory_s")
    t.line("evaluate", "evaluate_s", "evaluate_s", ratio=True)
    t.line(
        "evaluate, µs per case-run",
        lambda r: r["evaluate_s"] / case_runs(r) * 1e6,
        lambda r: r["evaluate_s"] / case_runs(r) * 1e6,
        digits=0,
        unit="",
    )
    base_theirs, base_ours = groups.get((PEER, (BASE_N, 1)), []), groups.get((OURS, (BASE_N, 1)), [])
    if runs == 1 and n != BASE_N and base_theirs and base_ours:
        t.line(
            f"evaluate, per case-run ÷ at {BASE_N:,}",
            per_case_growth(base_theirs),
            per_case_growth(base_ours),
            digits=2,
            unit="×",
        )
    t.line("evaluate, time in GC", "evaluate_gc_s", "evaluate_gc_s")
    t.line("evaluate, full GC passes", "evaluate_gc_full_passes", "evaluate_gc_full_passes", digits=0, unit="")
    t.line(
        "peak RSS after evaluate", "evaluate_peak_rss_mib", "evaluate_peak_rss_mib", digits=0, unit=" MiB", ratio=True
    )

    def retained(r: Record) -> float:
        return float(r["rss_after_evaluate_mib"] - r["rss_after_setup_mib"]) * 1024 / case_runs(r)

    t.line("RSS growth per case-run over evaluate", retained, retained, digits=1, unit=" KiB")
    t.line("aggregate (pydantic-evals: report.averages())", "averages_s", None)
    t.line("pandas import (not in the builds below)", "pandas_import_s", "pandas_import_s")
    t.line("cases DataFrame (pydantic-evals: by hand; agenteval: report.cases)", "cases_by_hand_s", "cases_s")
    t.line("report.case_table", None, "case_table_s")
    t.line("report.metrics", None, "metrics_s")
    t.line("report.reaggregate(fn)", None, "reaggregate_s")
    t.line("report.with_thresholds(...)", None, "with_thresholds_s")
    t.line("the report shown in Jupyter (_repr_html_)", None, "display_s")
    t.line("report.show_case(one case)", None, "show_case_s")
    t.line("peak RSS after the views", None, "show_case_peak_rss_mib", digits=0, unit=" MiB")
    t.line(
        "save (pydantic-evals: dump_json to a file; agenteval: LocalEvalResultManager)",
        "save_json_s",
        "save_local_s",
        ratio=True,
    )
    t.line("saved file", "saved_file_mib", "saved_file_mib", digits=1, unit=" MiB")
    t.line(
        "RSS before the load (agenteval: the evaluated report let go)",
        None,
        "rss_before_load_mib",
        digits=0,
        unit=" MiB",
    )
    t.line(
        "load (pydantic-evals: validate_json; agenteval: EvaluationReport.load)",
        "load_json_s",
        "load_local_s",
        ratio=True,
    )
    t.line("first report.cases of the loaded report", None, "loaded_cases_s")
    if base_ours and n != BASE_N:
        per_add = per_item_growth(base_ours, "add_memory_s", lambda r: float(r["n"]))
        t.line(f"in-memory add_case, per add ÷ at {BASE_N:,}", None, per_add, digits=2, unit="×")
    local = [f"{r['add_local_s']:.1f} s for {r['add_local_done']:,}" for r in ours if "add_local_s" in r]
    stopped = any(r["add_local_done"] < r["n"] for r in ours if "add_local_done" in r)
    text = "; ".join(local) + (" (stopped at the budget)" if stopped else "") if local else "skipped at this size"
    print(row(["local add_case into one eval set", "—", text, ""]))
    if local:
        t.line(
            "local add_case, ms per add",
            None,
            lambda r: r["add_local_s"] / max(r["add_local_done"], 1) * 1000,
            digits=2,
            unit=" ms",
        )
    t.line("peak RSS of the process", "peak_rss_mib", "peak_rss_mib", digits=0, unit=" MiB", ratio=True)


def scale(records: Sequence[Record]) -> None:
    groups = grouped([r for r in records if kind(r) == "scale"], scale_key)
    versions = {record["framework"]: record["version"] for record in records}
    print(f"Scale: {PEER} {versions.get(PEER, '?')} and {OURS} {versions.get(OURS, '?')}, instant agent, P=100.")
    for n, runs in sorted({config for _, config in groups}, key=lambda c: (c[1], c[0])):
        scale_table(n, runs, groups)


# --- kill ----------------------------------------------------------------------------------------


def kill(records: Sequence[Record]) -> None:
    groups = grouped([r for r in records if kind(r) == "kill"], kill_key)
    print("Kill and re-run (agenteval only): SIGKILL once a share of the cases finished, re-run with the same cache.\n")
    table(
        [
            "workload",
            "kill at",
            "kills",
            "finished before the kill",
            "in flight",
            "lost (finished, agent ran again)",
            "oldest lost, s before the kill",
            "finished, re-scored only",
            "re-run: agent calls",
            "of them in flight at the kill",
            "of them never started",
            "re-run passed",
        ]
    )
    for config in sorted({config for _, config in groups}):
        n, latency, concurrency, kill_at = config
        rs = groups[(OURS, config)]
        print(
            row(
                [
                    f"{n} cases × {latency * 1000:g} ms, P={concurrency}",
                    f"{kill_at:.0%} finished",
                    str(len(rs)),
                    span([r["finished_before_kill"] for r in rs], 0),
                    span([r["in_flight"] for r in rs], 0),
                    ", ".join(str(r["lost"]) for r in rs),
                    span([r["lost_oldest_s"] for r in rs if r["lost"]], 2),
                    span([r["rescored"] for r in rs], 0),
                    span([r["rerun_agent_calls"] for r in rs], 0),
                    span([r["rerun_in_flight"] for r in rs], 0),
                    span([r["rerun_not_started"] for r in rs], 0),
                    ", ".join(f"{r['rerun_passed']}/{r['n']}" for r in rs),
                ]
            )
        )


def main() -> int:
    if len(sys.argv) < 3 or sys.argv[1] not in MODES:
        print(f"usage: summarize.py {'|'.join(MODES)} RESULTS.jsonl...", file=sys.stderr)
        return 2
    mode = sys.argv[1]
    # A file is one batch: sizes are compared within it (a 100k run with the 1k runs of its own batch).
    records = [{**record, "batch": batch} for batch, name in enumerate(sys.argv[2:]) for record in read(Path(name))]
    if mode == "issue28":
        issue28(records, heading="Issue 28's table")
        return 0
    {"overhead": overhead, "scale": scale, "kill": kill}[mode](records)
    issue28([r for r in records if kind(r) == mode], heading="Issue 28's targets this batch measured")
    return 0


if __name__ == "__main__":
    sys.exit(main())
