"""Scale and memory of agenteval: one evaluation of N instant cases × R runs, then the notebook operations.

Usage (run.sh runs it, one process per size):
``python bench/peers/agenteval_scale.py --n 5000 [--runs 1] [--concurrency 100] [--add-budget 60]``

The cases, agent and metrics are in ``agenteval_workload.py`` (latency 0). After an untimed
one-case evaluation (lazy imports, first calls), timed in this order in one process:

- ``add_memory``: N ``add_case`` calls into one eval set of an ``InMemoryEvalSetManager`` (the
  set the evaluation then reads); the cases are made one at a time, untimed, so that the store
  holds the only copies (a list of 100,000 cases would set the process's peak memory).
- ``evaluate``: ``await aevaluate(set_id)`` with ``num_runs=R``, parallel inference and
  scoring at P, saving to the default in-memory result store; with the time spent in the garbage
  collector.
- pandas' import on its own (agenteval imports it lazily; it is no part of a DataFrame build),
  then ``report.cases``, ``report.case_table`` and ``report.metrics``.
- ``report.reaggregate(mean_score)`` (a custom aggregator function) and
  ``report.with_thresholds(...)`` (both metrics at 0.5).
- ``report._repr_html_()`` (what Jupyter shows for the report) and ``report.show_case("case-7")``;
  ``records_read_by_views`` says whether anything so far read every case's record.
- ``report.save(LocalEvalResultManager(tmp))``; then the report is let go (a notebook that loads
  a result holds no other report of it), and ``EvaluationReport.load(path)`` of that file and the
  first ``.cases`` of the loaded report are timed.
- ``add_local``: N ``add_case`` calls into one eval set of a ``LocalEvalSetManager`` in a
  temporary directory. Each add rewrites the set's file, so this can grow quadratically: it stops
  after ``--add-budget`` seconds and reports how many adds it made. Skipped above
  ``ADD_LOCAL_MAX_N`` cases: it would only repeat the budget's first adds, and the N new cases it
  needs would add to the process's peak memory.

Memory: the kernel's peak RSS (``ru_maxrss``) after each step and the RSS now after setup, after
``evaluate``, before the load and at the end. The sync operations are called as a script calls them
(no running event loop). Prints one JSON line (seconds, MiB); exits 1 unless every case run passed
both metrics.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import agenteval_workload as workload
from measure import GcClock, Record, emit, peak_rss_mib, rss_mib, step

import agenteval as ae
from agenteval.evalset import EvalSetManager

ADD_LOCAL_MAX_N = 20_000
"""The largest set the local ``add_case`` step runs for."""


def mean_score(data: ae.AggregationInput) -> ae.AggregationResult:
    """A custom case aggregator: the mean of the metric scores, passing at 0.5."""
    scores = [result.score or 0.0 for result in data.metric_results]
    score = sum(scores) / len(scores) if scores else 0.0
    return ae.AggregationResult(score=score, status=ae.EvalStatus.PASSED if score >= 0.5 else ae.EvalStatus.FAILED)


async def evaluate(record: Record, n: int, runs: int, concurrency: int) -> ae.EvaluationReport:
    """Fill the in-memory eval set, then run the timed evaluation."""
    sets = ae.InMemoryEvalSetManager()
    record["add_memory_s"] = round(await workload.add_cases(sets, workload.make_cases(n)), 4)
    record["rss_after_setup_mib"] = round(rss_mib(), 1)
    record["peak_rss_after_setup_mib"] = round(peak_rss_mib(), 1)
    evaluator = ae.Evaluator(
        workload.APP_NAME,
        workload.make_agent(0.0),
        eval_set_manager=sets,
        metric_manager=await workload.metric_store(),
        num_runs=runs,
        parallel_inference=True,
        parallel_evaluation=True,
        parallelism=concurrency,
        progress=False,
    )
    gc_clock = GcClock()
    started = time.perf_counter()
    with gc_clock.running():
        report = await evaluator.aevaluate(workload.EVAL_SET_ID)
    record["evaluate_s"] = round(time.perf_counter() - started, 4)
    gc_clock.into(record, "evaluate")
    record["evaluate_peak_rss_mib"] = round(peak_rss_mib(), 1)
    record["rss_after_evaluate_mib"] = round(rss_mib(), 1)
    return report


async def add_within(store: EvalSetManager, cases: list[ae.EvalCase], budget: float) -> int:
    """Add ``cases`` to the benchmark's eval set one at a time until done or ``budget`` seconds passed."""
    deadline = time.perf_counter() + budget
    await store.create(workload.APP_NAME, workload.EVAL_SET_ID)
    for added, case in enumerate(cases):
        if time.perf_counter() > deadline:
            return added
        await store.add_case(workload.APP_NAME, workload.EVAL_SET_ID, case)
    return len(cases)


def notebook_operations(record: Record, report: ae.EvaluationReport, directory: str) -> Path:
    """Time what a notebook does with the report next; returns the file the report was saved to."""
    started = time.perf_counter()
    import pandas  # noqa: F401

    record["pandas_import_s"] = round(time.perf_counter() - started, 4)
    record["cases_rows"] = len(step(record, "cases", lambda: report.cases))
    record["case_table_rows"] = len(step(record, "case_table", lambda: report.case_table))
    record["metrics_rows"] = len(step(record, "metrics", lambda: report.metrics))
    step(record, "reaggregate", lambda: report.reaggregate(mean_score))
    thresholds = {metric.metric_name: 0.5 for metric in workload.metrics()}
    step(record, "with_thresholds", lambda: report.with_thresholds(thresholds))
    # What Jupyter shows for the report, and one case side by side: neither reads every case's record.
    step(record, "display", lambda: report._repr_html_())
    step(record, "show_case", lambda: report.show_case("case-7").html)
    record["records_read_by_views"] = "_unread_records" not in report.__dict__
    result_id = step(record, "save_local", lambda: report.save(ae.LocalEvalResultManager(directory)))
    path = Path(directory) / workload.APP_NAME / f"{result_id}.evalset_result.json"
    record["saved_file_mib"] = round(path.stat().st_size / 2**20, 2)
    return path


def passed_case_runs(metrics: Any) -> int:
    """How many (run, case) pairs passed both metrics, in a report's ``metrics`` table."""
    passed = metrics[metrics["status"] == "passed"].groupby(["run_id", "eval_id"]).size()
    return int((passed == len(workload.metrics())).sum())


def load_operations(record: Record, path: Path) -> None:
    """Time loading the saved file and the first ``.cases`` of the loaded report."""
    gc.collect()
    record["rss_before_load_mib"] = round(rss_mib(), 1)
    loaded = step(record, "load_local", lambda: ae.EvaluationReport.load(path))
    rows = len(step(record, "loaded_cases", lambda: loaded.cases))
    assert rows == record["cases_rows"], f"the loaded report has {rows} case rows, not {record['cases_rows']}"


def add_local(record: Record, add_budget: float) -> None:
    """Time adding the cases one at a time to a local eval set, within ``add_budget`` seconds."""
    if record["n"] > ADD_LOCAL_MAX_N:
        return
    cases = list(workload.make_cases(record["n"]))
    with tempfile.TemporaryDirectory(prefix="agenteval-scale-") as tmp:
        store = ae.LocalEvalSetManager(tmp)
        record["add_local_done"] = step(record, "add_local", lambda: asyncio.run(add_within(store, cases, add_budget)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=5000, help="cases")
    parser.add_argument("--runs", type=int, default=1, help="runs of every case")
    parser.add_argument("--concurrency", type=int, default=100, help="cases run at once")
    parser.add_argument("--add-budget", type=float, default=60.0, help="seconds for the local add_case calls")
    args = parser.parse_args()
    record: Record = {
        "framework": "agenteval",
        "version": version("agenteval"),
        "n": args.n,
        "runs": args.runs,
        "concurrency": args.concurrency,
    }
    asyncio.run(workload.warm_up())
    record["rss_before_setup_mib"] = round(rss_mib(), 1)
    report = asyncio.run(evaluate(record, args.n, args.runs, args.concurrency))
    case_runs = args.n * args.runs
    with tempfile.TemporaryDirectory(prefix="agenteval-scale-") as tmp:
        path = notebook_operations(record, report, tmp)
        # Checked after the timed steps, from the metrics table (reading every case result would hold them all).
        record["passed_case_runs"] = passed_case_runs(report.metrics)
        del report
        load_operations(record, path)
    add_local(record, args.add_budget)
    record["peak_rss_mib"] = round(peak_rss_mib(), 1)
    record["rss_at_end_mib"] = round(rss_mib(), 1)
    emit(record)
    print(f"agenteval: passed {record['passed_case_runs']}/{case_runs} case runs", file=sys.stderr)
    return 0 if record["passed_case_runs"] == case_runs else 1


if __name__ == "__main__":
    sys.exit(main())
