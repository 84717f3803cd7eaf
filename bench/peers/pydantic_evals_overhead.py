"""Framework overhead of pydantic-evals on the peer workload: one timed ``Dataset.evaluate`` call.

Usage (run.sh runs it in the benchmark's virtualenv):
``python bench/peers/pydantic_evals_overhead.py --n N --latency SECONDS --concurrency P``

The twin of ``agenteval_overhead.py``: the dataset is built before the clock starts, an untimed
one-case evaluation runs first, and only ``await dataset.evaluate(task, max_concurrency=P,
progress=False)`` is timed. Prints one JSON line with the same fields (less agenteval's phase
split); exits 1 unless every case passed both checks.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import time
from importlib.metadata import version

import pydantic_evals_workload as workload
from measure import GcClock, Record, emit


async def measure(n: int, latency: float, concurrency: int) -> Record:
    await workload.warm_up()
    task, dataset, gc_clock = workload.make_task(latency), workload.make_dataset(n), GcClock()

    started = time.perf_counter()
    with gc_clock.running():
        report = await dataset.evaluate(task, max_concurrency=concurrency, progress=False)
    wall = time.perf_counter() - started

    ideal = math.ceil(n / concurrency) * latency
    passed = sum(1 for case in report.cases if workload.case_passed(case))
    record: Record = {
        "framework": "pydantic-evals",
        "version": version("pydantic-evals"),
        "n": n,
        "latency": latency,
        "concurrency": concurrency,
        "wall_s": round(wall, 4),
        "us_per_case": round(wall / n * 1e6, 1),
        "ideal_s": round(ideal, 4),
        "ratio_to_ideal": round(wall / ideal, 3) if ideal > 0 else None,
        "passed_cases": passed if not report.failures else 0,
    }
    gc_clock.into(record, "wall")
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=2000, help="cases")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds the task takes")
    parser.add_argument("--concurrency", type=int, default=100, help="cases run at once")
    args = parser.parse_args()
    record = asyncio.run(measure(args.n, args.latency, args.concurrency))
    emit(record)
    print(f"pydantic-evals: passed {record['passed_cases']}/{args.n} cases", file=sys.stderr)
    return 0 if record["passed_cases"] == args.n else 1


if __name__ == "__main__":
    sys.exit(main())
