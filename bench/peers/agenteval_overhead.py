"""Framework overhead of agenteval on the peer workload: one timed ``aevaluate`` call.

Usage (run.sh runs it): ``python bench/peers/agenteval_overhead.py --n N --latency SECONDS --concurrency P``

The cases, agent and metrics are in ``agenteval_workload.py``; the eval set and the metrics live in
in-memory stores, built before the clock starts. An untimed one-case evaluation runs first (lazy
imports, first calls). Timed: ``await Evaluator(..., parallel_inference=True,
parallel_evaluation=True, parallelism=P, progress=False).aevaluate(set_id)``, which runs the agent,
scores, aggregates, builds the report and saves the result to an in-memory result store (agenteval
always saves). ``--concurrency 1`` turns both parallel switches off.

Prints one JSON line: wall time, µs per case, the ratio to the ideal ``ceil(N / P) * latency``, time
in the garbage collector, and a split measured by the framework's set-level callbacks (the
inference window, in which most cases are also scored, and the scoring left after it) and around
the result store's ``save``. Exits 1 unless every case passed both metrics.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import time
from collections.abc import Sequence
from importlib.metadata import version

import agenteval_workload as workload
from measure import GcClock, Record, emit

import agenteval as ae
from agenteval.evalresult.records import CaseRecord
from agenteval.service import AfterEvaluateSetArgs, AfterInferenceSetArgs


class TimedResults(ae.InMemoryEvalResultManager):
    """The default in-memory result store, timing the save an evaluation makes.

    An evaluation saves its records with ``save_recorded``; it would hand a store that overrides ``save``
    the whole result instead (that ``save`` may change it), so only ``save_recorded`` is overridden here.
    """

    def __init__(self) -> None:
        super().__init__()
        self.save_s = 0.0

    async def save_recorded(self, app_name: str, result: ae.EvalSetResult | None, records: Sequence[CaseRecord]) -> str:
        started = time.perf_counter()
        try:
            return await super().save_recorded(app_name, result, records)
        finally:
            self.save_s += time.perf_counter() - started


class PhaseClock:
    """The inference window and the scoring after it, timed by the framework's set-level callbacks.

    The evaluator scores each case as soon as its inference ends: most scoring happens inside the
    inference window (from the run's start to ``after_inference_set``); ``scoring_s`` is what is
    left after it (to ``after_evaluate_set``).
    """

    def __init__(self) -> None:
        self.inference_s = math.nan
        self.scoring_s = math.nan
        self._inference_ended = math.nan

    def after_inference(self, context: ae.EvalContext, args: AfterInferenceSetArgs) -> None:
        self._inference_ended = time.time()
        self.inference_s = self._inference_ended - args.start_time

    def after_scoring(self, context: ae.EvalContext, args: AfterEvaluateSetArgs) -> None:
        self.scoring_s = time.time() - self._inference_ended

    def callbacks(self) -> ae.Callbacks:
        return (
            ae.Callbacks()
            .register_after_inference_set("bench", self.after_inference)
            .register_after_evaluate_set("bench", self.after_scoring)
        )


async def evaluator(
    n: int, latency: float, concurrency: int, results: ae.InMemoryEvalResultManager, callbacks: ae.Callbacks
) -> ae.Evaluator:
    """An evaluator over fresh in-memory stores holding ``n`` cases and the two metrics."""
    sets = ae.InMemoryEvalSetManager()
    await workload.add_cases(sets, workload.make_cases(n))
    parallel = concurrency > 1
    return ae.Evaluator(
        workload.APP_NAME,
        workload.make_agent(latency),
        eval_set_manager=sets,
        metric_manager=await workload.metric_store(),
        result_manager=results,
        callbacks=callbacks,
        parallel_inference=parallel,
        parallel_evaluation=parallel,
        parallelism=concurrency,
        progress=False,
    )


async def measure(n: int, latency: float, concurrency: int) -> Record:
    await workload.warm_up()
    phases, results, gc_clock = PhaseClock(), TimedResults(), GcClock()
    timed = await evaluator(n, latency, concurrency, results, phases.callbacks())

    started = time.perf_counter()
    with gc_clock.running():
        report = await timed.aevaluate(workload.EVAL_SET_ID)
    wall = time.perf_counter() - started

    cases = report.result.eval_case_results
    ideal = math.ceil(n / concurrency) * latency
    record: Record = {
        "framework": "agenteval",
        "version": version("agenteval"),
        "n": n,
        "latency": latency,
        "concurrency": concurrency,
        "wall_s": round(wall, 4),
        "us_per_case": round(wall / n * 1e6, 1),
        "ideal_s": round(ideal, 4),
        "ratio_to_ideal": round(wall / ideal, 3) if ideal > 0 else None,
        "passed_cases": sum(1 for case in cases if workload.case_passed(case)) if len(cases) == n else 0,
        "inference_s": round(phases.inference_s, 4),
        "scoring_s": round(phases.scoring_s, 4),
        "save_s": round(results.save_s, 4),
    }
    gc_clock.into(record, "wall")
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=2000, help="cases")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds the agent takes per turn")
    parser.add_argument("--concurrency", type=int, default=100, help="cases run at once")
    args = parser.parse_args()
    record = asyncio.run(measure(args.n, args.latency, args.concurrency))
    emit(record)
    print(f"agenteval: passed {record['passed_cases']}/{args.n} cases", file=sys.stderr)
    return 0 if record["passed_cases"] == args.n else 1


if __name__ == "__main__":
    sys.exit(main())
