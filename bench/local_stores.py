"""Cost of adding cases one at a time to a local (file) eval-set store, against the in-memory store.

Run with ``python bench/local_stores.py [--cases 500 2000] [--results 2000] [--dir DIR] [--target SECONDS]``.

For each N, one fresh eval set gets N one-turn cases through ``add_case``, one call at a time, in
an ``InMemoryEvalSetManager`` and in a ``LocalEvalSetManager`` (in the same process, on the same
cases). Each ``add_case`` on the local store rewrites the whole file atomically (with an fsync),
so its cost grows with the set; it must not also parse the file again. The table shows the total
time, the mean cost per add, the cost of the last 10% of the adds (the largest set) and the ratio
local / memory. **Target: 2000 adds to the local store in under 30 s** (the script exits 1 if the
largest N takes longer than ``--target``).

Then ``--results`` results (each one evaluation of 10 cases with two metrics; no target) are saved
one ``save`` call at a time to an ``InMemoryEvalResultManager`` and a ``LocalEvalResultManager``,
which shows what validating, serialising and writing one result costs.

The local stores write to a temporary directory (under ``--dir``, default the system's temporary
directory), removed at the end; nothing touches the network.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script from a source tree: make ``agenteval`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agenteval import (
    EvalCase,
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultDetails,
    EvalSetResult,
    EvalStatus,
    InMemoryEvalResultManager,
    InMemoryEvalSetManager,
    Invocation,
    LocalEvalResultManager,
    LocalEvalSetManager,
    Message,
    SessionInput,
    Tool,
)
from agenteval._util.sync_bridge import run_sync
from agenteval.evalresult import EvalMetricResultPerInvocation, EvalResultManager
from agenteval.evalset import EvalSetManager

APP = "bench-app"
SET = "bench-set"


def make_cases(count: int) -> list[EvalCase]:
    """``count`` one-turn cases shaped like a calculator agent's: a question, a tool call, an answer."""
    return [
        EvalCase(
            eval_id=f"case-{index:05d}",
            conversation=[
                Invocation(
                    invocation_id=f"case-{index:05d}-1",
                    user_content=Message.user(f"what is {index} + 3?"),
                    final_response=Message.assistant(f"calc result: {index + 3}"),
                    tools=[Tool(name="calculator", arguments={"op": "add", "a": index, "b": 3}, result=index + 3)],
                )
            ],
            session_input=SessionInput(app_name=APP, user_id="bench"),
        )
        for index in range(count)
    ]


@dataclass(frozen=True)
class Timing:
    total: float
    """Seconds for all the adds."""
    tail: float
    """Mean seconds per add over the last 10% of the adds."""


def time_adds(manager: EvalSetManager, cases: list[EvalCase]) -> Timing:
    """Create the set, then add ``cases`` one ``add_case`` call at a time."""
    tail_from = len(cases) - max(1, len(cases) // 10)

    async def run() -> Timing:
        await manager.create(APP, SET)
        start = time.perf_counter()
        tail_start = start
        for index, case in enumerate(cases):
            if index == tail_from:
                tail_start = time.perf_counter()
            await manager.add_case(APP, SET, case)
        end = time.perf_counter()
        if len((await manager.get(APP, SET)).eval_cases) != len(cases):
            raise AssertionError("the store lost cases")
        return Timing(end - start, (end - tail_start) / (len(cases) - tail_from))

    return run_sync(run())


def make_result(cases: int = 10) -> EvalSetResult:
    """One evaluation's result: ``cases`` calculator cases, each scored by two metrics on its one turn."""

    def metric(name: str) -> EvalMetricResult:
        details = EvalMetricResultDetails(reason="match", score=1.0)
        return EvalMetricResult(
            metric_name=name, score=1.0, eval_status=EvalStatus.PASSED, threshold=1.0, details=details
        )

    case_results = []
    for case in make_cases(cases):
        metrics = [metric("tool_trajectory_avg_score"), metric("final_response_avg_score")]
        case_results.append(
            EvalCaseResult(
                eval_set_id=SET,
                eval_id=case.eval_id,
                run_id=1,
                score=1.0,
                final_eval_status=EvalStatus.PASSED,
                overall_eval_metric_results=metrics,
                eval_metric_result_per_invocation=[
                    EvalMetricResultPerInvocation(
                        actual_invocation=case.conversation[0],
                        expected_invocation=case.conversation[0],
                        eval_metric_results=metrics,
                    )
                ],
                session_id=f"session-{case.eval_id}",
                user_id="bench",
            )
        )
    return EvalSetResult(eval_set_id=SET, eval_case_results=case_results)


def time_saves(manager: EvalResultManager, result: EvalSetResult, count: int) -> float:
    """Seconds to save ``result`` ``count`` times, one ``save`` call at a time (each gets a new id)."""

    async def run() -> float:
        start = time.perf_counter()
        for _ in range(count):
            await manager.save(APP, result)
        end = time.perf_counter()
        if len(await manager.list(APP)) != count:
            raise AssertionError("the store lost results")
        return end - start

    return run_sync(run())


def report_saves(count: int, directory: Path | None) -> None:
    """Print the time to save ``count`` results to the in-memory and the local result store."""
    result = make_result()
    memory = time_saves(InMemoryEvalResultManager(), result, count)
    with tempfile.TemporaryDirectory(dir=directory) as base:
        local = time_saves(LocalEvalResultManager(base), result, count)
    print(f"\n{'results':>7}  {'store':<6}  {'total s':>8}  {'ms/save':>8}")
    for name, total in [("memory", memory), ("local", local)]:
        print(f"{count:>7}  {name:<6}  {total:>8.2f}  {total / count * 1e3:>8.3f}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, nargs="+", default=[500, 2000], help="values of N (default 500 2000)")
    parser.add_argument("--dir", type=Path, default=None, help="where the local store's temporary directory goes")
    parser.add_argument(
        "--target", type=float, default=30.0, help="seconds the largest N may take on the local store (default 30)"
    )
    parser.add_argument("--results", type=int, default=2000, help="results to save to each result store (0: none)")
    args = parser.parse_args(argv)

    print(f"{'N':>6}  {'store':<6}  {'total s':>8}  {'ms/add':>7}  {'last 10% ms/add':>15}  {'local/memory':>12}")
    local_totals: dict[int, float] = {}
    for count in args.cases:
        cases = make_cases(count)
        memory = time_adds(InMemoryEvalSetManager(), cases)
        with tempfile.TemporaryDirectory(dir=args.dir) as directory:
            local = time_adds(LocalEvalSetManager(directory), cases)
        local_totals[count] = local.total
        for name, timing in [("memory", memory), ("local", local)]:
            ratio = f"{local.total / memory.total:12.1f}" if timing is local else ""
            print(
                f"{count:>6}  {name:<6}  {timing.total:>8.2f}  {timing.total / count * 1e3:>7.3f}  "
                f"{timing.tail * 1e3:>15.3f}  {ratio:>12}"
            )
    largest = max(local_totals)
    met = local_totals[largest] <= args.target
    print(
        f"target: {largest} adds to the local store in at most {args.target:g} s: "
        f"{local_totals[largest]:.1f} s, {'met' if met else 'MISSED'}"
    )
    if args.results > 0:
        report_saves(args.results, args.dir)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
