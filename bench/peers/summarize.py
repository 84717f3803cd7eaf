"""Markdown tables from the JSON lines of the peer benchmarks, with the targets of issue 13.

Usage (run.sh calls it): ``python bench/peers/summarize.py overhead|scale RESULTS.jsonl``

run.sh runs the two frameworks back to back for every configuration in every repetition, so the
k-th line of agenteval for a configuration pairs with the k-th line of pydantic-evals for it: the
ratios between frameworks are per-repetition ratios of those pairs (a lone absolute time from a
shared machine means little). Cells with several repetitions read ``median (min–max)``; a target
is judged on the median.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, TypeVar

Record = dict[str, Any]
Key = TypeVar("Key", bound=Hashable)
OverheadKey = tuple[int, float, int]
ScaleKey = tuple[int, int]
PEER = "pydantic-evals"
OURS = "agenteval"
TARGET_N = 20_000
"""The size the issue's scale targets are stated for."""
BASE_N = 1_000
"""The size per-case growth is measured against."""
MIB_PER_MB = 10**6 / 2**20


def read(path: Path) -> list[Record]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def grouped(records: Sequence[Record], key: Callable[[Record], Key]) -> dict[tuple[str, Key], list[Record]]:
    """Records per (framework, configuration), in the order they ran (index k = repetition k)."""
    groups: dict[tuple[str, Key], list[Record]] = defaultdict(list)
    for record in records:
        groups[(record["framework"], key(record))].append(record)
    return groups


def span(values: Sequence[float], digits: int = 2, unit: str = "") -> str:
    if not values:
        return "—"
    median = f"{statistics.median(values):.{digits}f}{unit}"
    return median if len(values) == 1 else f"{median} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def paired(ours: Sequence[float], theirs: Sequence[float]) -> list[float]:
    return [a / b for a, b in zip(ours, theirs, strict=False) if b > 0]


def judged(value: float | None, limit: float) -> str:
    if value is None:
        return "—"
    return "met" if value <= limit else "MISSED"


def median_or_none(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


# --- overhead ------------------------------------------------------------------------------------


def overhead_targets(n: int, latency: float, us: float | None, ratio: float | None, ideal: float | None) -> str:
    """The issue's target for this configuration, and whether the medians meet it."""
    if (n, latency) == (2000, 0.0):
        if us is None or ratio is None:
            return "≤ 100 µs/case and ≤ 0.5× pydantic-evals: —"
        verdict = "met" if us <= 100 and ratio <= 0.5 else "MISSED"
        return f"≤ 100 µs/case and ≤ 0.5× pydantic-evals: {verdict}"
    limits = {(1000, 0.02): 1.3, (1000, 0.5): 1.03}
    if (n, latency) in limits:
        return f"≤ {limits[n, latency]}× ideal: {judged(ideal, limits[n, latency])}"
    return ""


def overhead(records: Sequence[Record]) -> None:
    def key(r: Record) -> OverheadKey:
        return (r["n"], r["latency"], r["concurrency"])

    groups = grouped(records, key)
    configs = sorted({config for _, config in groups}, key=lambda c: (c[1], c[0], c[2]))
    versions = {record["framework"]: record["version"] for record in records}
    print(f"Overhead: {PEER} {versions.get(PEER, '?')} and {OURS} {versions.get(OURS, '?')}, interleaved.\n")
    head = [
        "workload",
        "reps",
        f"{PEER} µs/case",
        f"{OURS} µs/case",
        f"{PEER} wall/ideal",
        f"{OURS} wall/ideal",
        f"{OURS} ÷ {PEER} per rep",
        "median (range)",
        "target (agenteval)",
    ]
    print(row(head))
    print(row(["---"] * len(head)))
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
        target = overhead_targets(
            n,
            latency,
            median_or_none([r["us_per_case"] for r in ours]),
            median_or_none(ratios),
            median_or_none(ideal[OURS]),
        )
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
                    target,
                ]
            )
        )
    print("\nWhere the time goes (medians, seconds; agenteval scores most cases inside the inference window):\n")
    head = ["workload", "framework", "wall", "in GC (full passes)", "inference window", "scoring after it", "save"]
    print(row(head))
    print(row(["---"] * len(head)))
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

    def __init__(self, theirs: list[Record], ours: list[Record], at_target: bool) -> None:
        self.theirs, self.ours, self.at_target = theirs, ours, at_target
        print(row(["step", PEER, OURS, f"{OURS} ÷ {PEER} (paired)", "target (agenteval)", ""]))
        print(row(["---"] * 6))

    @staticmethod
    def values(records: Sequence[Record], field: str | Callable[[Record], float]) -> list[float]:
        if callable(field):
            return [field(r) for r in records]
        return [r[field] for r in records if field in r]

    def line(
        self,
        step: str,
        theirs: str | Callable[[Record], float] | None,
        ours: str | Callable[[Record], float] | None,
        *,
        digits: int = 3,
        unit: str = " s",
        ratio: bool = False,
        limit: float | None = None,
        limit_text: str = "",
        everywhere: bool = False,
    ) -> None:
        """A row; ``limit`` is judged on agenteval's median at the issue's size (or at every size)."""
        a = self.values(self.theirs, theirs) if theirs is not None else []
        b = self.values(self.ours, ours) if ours is not None else []
        ratios = span(paired(b, a)) if ratio else ""
        applies = limit is not None and (everywhere or self.at_target)
        verdict = judged(median_or_none(b), limit) if applies and limit is not None else ""
        print(row([step, span(a, digits, unit), span(b, digits, unit), ratios, limit_text if applies else "", verdict]))


def per_case_growth(
    records: list[Record], base: list[Record], field: str, count: Callable[[Record], float]
) -> Callable[[Record], float]:
    """Cost per item of record k over that of the 1k-case record of the same repetition."""
    index = {id(record): k for k, record in enumerate(records)}

    def growth(record: Record) -> float:
        k = index[id(record)]
        reference = base[min(k, len(base) - 1)]
        return float(record[field] / count(record)) / float(reference[field] / count(reference))

    return growth


def scale_table(n: int, runs: int, groups: dict[tuple[str, ScaleKey], list[Record]]) -> None:
    theirs, ours = groups.get((PEER, (n, runs)), []), groups.get((OURS, (n, runs)), [])
    reps = max(len(theirs), len(ours))
    print(f"\n### {n:,} cases × {runs} run{'s' if runs > 1 else ''} ({reps} rep{'s' if reps > 1 else ''})\n")
    table = ScaleTable(theirs, ours, at_target=(n, runs) == (TARGET_N, 1))

    def case_runs(r: Record) -> float:
        return float(r["n"] * r["runs"])

    table.line(
        "set up the N cases (pydantic-evals: Dataset; agenteval: in-memory add_case)",
        "setup_s",
        "add_memory_s",
        limit=2.0,
        limit_text="< 2 s",
    )
    table.line("evaluate", "evaluate_s", "evaluate_s", ratio=True)
    table.line(
        "evaluate, µs per case-run",
        lambda r: r["evaluate_s"] / case_runs(r) * 1e6,
        lambda r: r["evaluate_s"] / case_runs(r) * 1e6,
        digits=0,
        unit="",
    )
    base_theirs, base_ours = groups.get((PEER, (BASE_N, 1)), []), groups.get((OURS, (BASE_N, 1)), [])
    if runs == 1 and n != BASE_N and base_theirs and base_ours:
        table.line(
            f"evaluate, per case-run ÷ at {BASE_N:,}",
            per_case_growth(theirs, base_theirs, "evaluate_s", case_runs),
            per_case_growth(ours, base_ours, "evaluate_s", case_runs),
            digits=2,
            unit="×",
            limit=1.1,
            limit_text="≤ 1.1×",
        )
    table.line("evaluate, time in GC", "evaluate_gc_s", "evaluate_gc_s")
    table.line("evaluate, full GC passes", "evaluate_gc_full_passes", "evaluate_gc_full_passes", digits=0, unit="")
    table.line(
        "peak RSS after evaluate",
        "evaluate_peak_rss_mib",
        "evaluate_peak_rss_mib",
        digits=0,
        unit=" MiB",
        ratio=True,
        limit=400 * MIB_PER_MB,
        limit_text="< 400 MB (381 MiB)",
    )

    def retained(r: Record) -> float:
        return float(r["rss_after_evaluate_mib"] - r["rss_after_setup_mib"]) * 1024 / case_runs(r)

    table.line(
        "RSS growth per case-run over evaluate",
        retained,
        retained,
        digits=1,
        unit=" KiB",
        limit=10.0,
        limit_text="≤ 10 KiB",
        everywhere=True,
    )
    table.line("aggregate (pydantic-evals: report.averages())", "averages_s", None)
    table.line("pandas import (not in the builds below)", "pandas_import_s", "pandas_import_s")
    table.line("cases DataFrame (pydantic-evals: by hand; agenteval: report.cases)", "cases_by_hand_s", "cases_s")
    table.line("report.case_table", None, "case_table_s")
    table.line("report.metrics", None, "metrics_s")
    table.line("report.reaggregate(fn)", None, "reaggregate_s", limit=1.0, limit_text="< 1 s")
    table.line("report.with_thresholds(...)", None, "with_thresholds_s", limit=1.0, limit_text="< 1 s")
    table.line(
        "save (pydantic-evals: dump_json to a file; agenteval: LocalEvalResultManager)",
        "save_json_s",
        "save_local_s",
        ratio=True,
        limit=1.0,
        limit_text="< 1 s",
    )
    table.line("saved file", "saved_file_mib", "saved_file_mib", digits=1, unit=" MiB")
    table.line(
        "load (pydantic-evals: validate_json; agenteval: EvaluationReport.load)",
        "load_json_s",
        "load_local_s",
        ratio=True,
        limit=1.0,
        limit_text="< 1 s",
    )
    if base_ours and n != BASE_N:

        def per_add(field: str) -> Callable[[Record], float]:
            return per_case_growth(ours, base_ours, field, lambda r: float(r["n"]))

        table.line(f"in-memory add_case, per add ÷ at {BASE_N:,}", None, per_add("add_memory_s"), digits=2, unit="×")
    local = [f"{r['add_local_s']:.1f} s for {r['add_local_done']:,}" for r in ours if "add_local_s" in r]
    stopped = any(r["add_local_done"] < r["n"] for r in ours if "add_local_done" in r)
    print(
        row(
            [
                "local add_case into one eval set",
                "—",
                "; ".join(local) + (" (stopped at the budget)" if stopped else ""),
                "",
                "",
                "",
            ]
        )
    )
    table.line(
        "local add_case, ms per add",
        None,
        lambda r: r["add_local_s"] / max(r["add_local_done"], 1) * 1000,
        digits=2,
        unit=" ms",
    )
    table.line("peak RSS of the process", "peak_rss_mib", "peak_rss_mib", digits=0, unit=" MiB", ratio=True)


def scale(records: Sequence[Record]) -> None:
    def key(r: Record) -> ScaleKey:
        return (r["n"], r["runs"])

    groups = grouped(records, key)
    versions = {record["framework"]: record["version"] for record in records}
    print(f"Scale: {PEER} {versions.get(PEER, '?')} and {OURS} {versions.get(OURS, '?')}, instant agent, P=100.")
    for n, runs in sorted({config for _, config in groups}, key=lambda c: (c[1], c[0])):
        scale_table(n, runs, groups)


def main() -> int:
    if len(sys.argv) < 3 or sys.argv[1] not in ("overhead", "scale"):
        print("usage: summarize.py overhead|scale RESULTS.jsonl...", file=sys.stderr)
        return 2
    records = [record for name in sys.argv[2:] for record in read(Path(name))]
    (overhead if sys.argv[1] == "overhead" else scale)(records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
