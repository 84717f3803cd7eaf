"""The cache (``cache=``): a warm re-run against the first run, and what keeping entries costs.

N one-turn cases, an ``async`` agent that waits L per turn (a model call), two deterministic metrics,
``parallelism`` P. Each repeat times, in one batch and in this order, with a fresh cache directory:

- ``no cache``: ``evaluate`` without ``cache=`` (the baseline);
- ``cold``: the first run with ``cache=`` (every inference and score is computed and written);
- ``warm``: the same evaluation again, by a new Evaluator (every inference and score is read back).

Target (issue 16): warm ≤ 10% of cold for N=1000, L=20 ms. The script exits 1 when the median ratio
is above ``--target``.

    python bench/cache.py                    # N=1000, L=20 ms, P=16, 3 repeats
    python bench/cache.py --cases 200 --repeats 5
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import agenteval as ae


def eval_set(cases: int) -> ae.EvalSet:
    return ae.EvalSet.of(
        "bench",
        [ae.EvalCase.of(f"case-{index}", f"question {index}", expect=f"answer {index}") for index in range(cases)],
    )


def make_agent(latency: float) -> object:
    async def agent(message: str) -> str:
        await asyncio.sleep(latency)
        return message.replace("question", "answer")

    return agent


METRICS = [ae.EvalMetric.tool_trajectory(), ae.EvalMetric.final_response()]


def timed(agent: object, cases: ae.EvalSet, parallelism: int, cache: Path | None) -> tuple[float, ae.EvaluationReport]:
    ev = ae.Evaluator("bench", agent, parallelism=parallelism, progress=False, cache=cache)  # type: ignore[arg-type]
    started = time.perf_counter()
    report = ev.evaluate(cases, metrics=METRICS)
    elapsed = time.perf_counter() - started
    assert report.passed, report.cases.head()
    return elapsed, report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.020)
    parser.add_argument("--parallelism", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--target", type=float, default=0.10)
    args = parser.parse_args()
    cases, agent = eval_set(args.cases), make_agent(args.latency)
    rows: list[tuple[float, float, float]] = []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as directory:
            plain, _ = timed(agent, cases, args.parallelism, None)
            cold, _ = timed(agent, cases, args.parallelism, Path(directory))
            warm, report = timed(agent, cases, args.parallelism, Path(directory))
            assert report.cases["cached_inference"].all() and (report.cases["cached_scores"] == len(METRICS)).all()
            size = ae.Cache(directory).stats().total_bytes
        rows.append((plain, cold, warm))
    print(f"N={args.cases} cases, L={args.latency * 1000:.0f} ms, P={args.parallelism}, {args.repeats} repeats")
    print(f"{'repeat':>6} {'no cache s':>11} {'cold s':>8} {'warm s':>8} {'warm/cold':>10} {'cold/no cache':>14}")
    for index, (plain, cold, warm) in enumerate(rows, start=1):
        print(f"{index:>6} {plain:>11.3f} {cold:>8.3f} {warm:>8.3f} {warm / cold:>10.3f} {cold / plain:>14.3f}")
    ratio = statistics.median(warm / cold for _, cold, warm in rows)
    overhead = statistics.median(cold / plain for plain, cold, _ in rows)
    warm_per_case = statistics.median(warm for _, _, warm in rows) / args.cases * 1e6
    print(f"median warm/cold {ratio:.3f} (target ≤ {args.target}: {'met' if ratio <= args.target else 'MISSED'})")
    print(
        f"median cold/no cache {overhead:.3f}; warm re-run {warm_per_case:.0f} µs per case; cache {size / 1024:.0f} KiB"
    )
    return 0 if ratio <= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
