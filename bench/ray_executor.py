"""The Ray executor against the local one: N cases of an agent that takes L seconds per turn (issue 19).

Run with ``python bench/ray_executor.py [--cases 1000] [--latency 0.02]``; needs ``pip install 'agenteval[ray]'``.

It starts a two-node Ray cluster on 127.0.0.1 (a head and one more node, one CPU each, as the tests do),
runs the same eval set with the local executor and with ``RayExecutor`` at the same number of cases in
flight, and prints each wall time, the Ray/local ratio and Ray's overhead per case: the wall time times
the cases in flight, divided by the cases, minus the agent's own latency. The cluster is stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script from a source tree: make ``agenteval`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import agenteval as ae
from tests.ray.cluster import local_cluster
from tests.test_evaluation import final_response, make_case


class SleepyAgent:
    """Answers ``say X`` with ``X`` after ``latency`` seconds, awaiting (an agent waiting on a model API)."""

    def __init__(self, latency: float) -> None:
        self.latency = latency

    async def __call__(self, text: str) -> str:
        await asyncio.sleep(self.latency)
        return text.removeprefix("say ")


def timed(evaluator: ae.Evaluator, eval_set: ae.EvalSet) -> float:
    start = time.perf_counter()
    report = evaluator.evaluate(eval_set, metrics=[final_response()])
    elapsed = time.perf_counter() - start
    assert set(report.cases["status"]) == {"passed"}, report.cases["status"].value_counts()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.02)
    args = parser.parse_args()
    eval_set = ae.EvalSet(eval_set_id="bench", eval_cases=[make_case(f"c{n}") for n in range(args.cases)])
    agent = SleepyAgent(args.latency)
    print(f"{args.cases} cases x {args.latency * 1000:g} ms agent, two-node local Ray cluster (1 CPU per node)")
    print(f"{'in flight':>9}  {'local s':>8}  {'ray s':>8}  {'ray/local':>9}  {'ray overhead/case':>17}")
    with local_cluster() as cluster:
        for in_flight, cpus in ((2, 1.0), (8, 0.25)):
            local = timed(ae.Evaluator("bench", agent, parallelism=in_flight, progress=False), eval_set)
            executor = ae.RayExecutor(cluster.address, num_cpus=cpus, max_in_flight=in_flight)
            ray_evaluator = ae.Evaluator("bench", agent, executor=executor, parallelism=in_flight, progress=False)
            timed(ray_evaluator, ae.EvalSet(eval_set_id="warm-up", eval_cases=eval_set.eval_cases[:in_flight]))
            remote = timed(ray_evaluator, eval_set)
            executor.shutdown()
            overhead = remote * in_flight / args.cases - args.latency
            print(f"{in_flight:>9}  {local:>8.2f}  {remote:>8.2f}  {remote / local:>9.2f}  {overhead * 1000:>14.1f} ms")


if __name__ == "__main__":
    main()
