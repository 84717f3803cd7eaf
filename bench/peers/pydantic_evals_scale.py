"""Scale and memory of pydantic-evals, the twin of ``agenteval_scale.py``.

Usage (run.sh runs it in the benchmark's virtualenv, one process per size):
``python bench/peers/pydantic_evals_scale.py --n 5000 [--runs 1] [--concurrency 100]``

The cases, task and evaluators are in ``pydantic_evals_workload.py`` (latency 0). After an
untimed one-case evaluation, timed in one process: ``setup`` (building the ``Dataset`` of N
cases, its counterpart of adding them to an eval set), ``evaluate`` (``await
dataset.evaluate(task, max_concurrency=P, repeat=R, progress=False)``, with the time spent in the
garbage collector), then the nearest operations pydantic-evals has to agenteval's notebook ones:
``report.averages()`` (its aggregate), a pandas DataFrame of the cases built by hand
(pydantic-evals has no DataFrame export; pandas' import is timed on its own),
``EvaluationReportAdapter.dump_json`` to a file (its way to keep a report) and
``EvaluationReportAdapter.validate_json`` of that file.

Memory as in ``agenteval_scale.py``. Prints one JSON line (seconds, MiB); exits 1 unless every
case run passed both checks.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pydantic_evals_workload as workload
from measure import GcClock, Record, emit, peak_rss_mib, rss_mib, step
from pydantic_evals.reporting import EvaluationReportAdapter


async def evaluate(record: Record, n: int, runs: int, concurrency: int) -> Any:
    """Build the dataset, then run the timed evaluation; returns the ``EvaluationReport``."""
    dataset = step(record, "setup", lambda: workload.make_dataset(n))
    record["rss_after_setup_mib"] = round(rss_mib(), 1)
    record["peak_rss_after_setup_mib"] = round(peak_rss_mib(), 1)
    task, gc_clock = workload.make_task(0.0), GcClock()
    started = time.perf_counter()
    with gc_clock.running():
        report = await dataset.evaluate(task, max_concurrency=concurrency, progress=False, repeat=runs)
    record["evaluate_s"] = round(time.perf_counter() - started, 4)
    gc_clock.into(record, "evaluate")
    record["evaluate_peak_rss_mib"] = round(peak_rss_mib(), 1)
    record["rss_after_evaluate_mib"] = round(rss_mib(), 1)
    return report


def report_operations(record: Record, report: Any) -> None:
    """Time the report operations nearest to agenteval's notebook ones."""
    step(record, "averages", report.averages)
    started = time.perf_counter()
    import pandas as pd

    record["pandas_import_s"] = round(time.perf_counter() - started, 4)

    def cases_frame() -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "name": case.name,
                    **{f"assert_{name}": result.value for name, result in case.assertions.items()},
                    **{f"score_{name}": result.value for name, result in case.scores.items()},
                    "task_duration": case.task_duration,
                }
                for case in report.cases
            ]
        )

    record["cases_by_hand_rows"] = len(step(record, "cases_by_hand", cases_frame))
    with tempfile.TemporaryDirectory(prefix="pydantic-evals-scale-") as tmp:
        path = Path(tmp) / "report.json"
        step(record, "save_json", lambda: path.write_bytes(EvaluationReportAdapter.dump_json(report)))
        record["saved_file_mib"] = round(path.stat().st_size / 2**20, 2)
        loaded = step(record, "load_json", lambda: EvaluationReportAdapter.validate_json(path.read_bytes()))
        assert len(loaded.cases) == len(report.cases)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=5000, help="cases")
    parser.add_argument("--runs", type=int, default=1, help="runs of every case")
    parser.add_argument("--concurrency", type=int, default=100, help="cases run at once")
    args = parser.parse_args()
    record: Record = {
        "framework": "pydantic-evals",
        "version": version("pydantic-evals"),
        "n": args.n,
        "runs": args.runs,
        "concurrency": args.concurrency,
    }
    asyncio.run(workload.warm_up())
    record["rss_before_setup_mib"] = round(rss_mib(), 1)
    report = asyncio.run(evaluate(record, args.n, args.runs, args.concurrency))
    case_runs = args.n * args.runs
    passed = sum(map(workload.case_passed, report.cases))
    record["passed_case_runs"] = passed if len(report.cases) == case_runs and not report.failures else 0
    report_operations(record, report)
    record["peak_rss_mib"] = round(peak_rss_mib(), 1)
    record["rss_at_end_mib"] = round(rss_mib(), 1)
    emit(record)
    print(f"pydantic-evals: passed {record['passed_case_runs']}/{case_runs} case runs", file=sys.stderr)
    return 0 if record["passed_case_runs"] == case_runs else 1


if __name__ == "__main__":
    sys.exit(main())
