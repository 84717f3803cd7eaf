"""Concurrency and overhead benchmark of ``Evaluator.evaluate``.

Run with ``python bench/concurrency.py [--cases N] [--latency SECONDS] [--parallelism P]``.

1. Case parallelism: N one-turn cases, an async agent that takes L seconds per turn,
   ``parallel_inference=True, parallelism=P``, scored with a tool-trajectory and a final-response
   metric. Two tables:

   a. The target. With perfect scheduling, running the agent takes ``ceil(N / P) * L`` (the
      ideal); the evaluator scores each case as soon as its inference ends, so scoring overlaps the
      agent's waiting. The whole ``evaluate`` call against the ideal should stay at or below 1.3
      for N=1000, L=20 ms, P=100 (issue 13). A bare asyncio baseline (the same sleeps behind a
      semaphore, no framework) is measured in the same run.
   b. The fastest whole call split into the inference window (from the start of the run until
      every case's inference ended, timed by the framework's own ``after_inference_set``
      callback; most cases are scored within it), the scoring left after the last inference
      (until ``after_evaluate_set``), saving the result (timed around the in-memory store's
      ``save``) and the rest (reading the set, the multi-run summary, building the report).
2. Framework overhead: N cases with an agent that answers at once, scored with the same two
   metrics, serial and parallel; reported as cases per second and as microseconds per case next
   to the bare cost of calling the agent N times.

Everything stays in memory: nothing is written, nothing touches the network.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script from a source tree: make ``agenteval`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agenteval import (
    EvalCase,
    EvalMetric,
    EvalSetResult,
    Evaluator,
    InMemoryEvalResultManager,
    InMemoryEvalSetManager,
    Invocation,
    Message,
    SessionInput,
    Tool,
    Turn,
)
from agenteval._util.sync_bridge import run_sync
from agenteval.metric.criterion import (
    Criterion,
    FinalResponseCriterion,
    TextCriterion,
    TextMatchStrategy,
    ToolTrajectoryCriterion,
    ToolTrajectoryStrategy,
)
from agenteval.runner.base import TurnRequest
from agenteval.service import AfterEvaluateSetArgs, AfterInferenceSetArgs, Callbacks

APP = "bench-app"
SET = "bench-set"
EXACT = TextMatchStrategy.EXACT
METRICS = [
    EvalMetric(
        metric_name="tool_trajectory_avg_score",
        threshold=1.0,
        criterion=Criterion(
            tool_trajectory=ToolTrajectoryCriterion(
                default_strategy=ToolTrajectoryStrategy(name=TextCriterion(match_strategy=EXACT))
            )
        ),
    ),
    EvalMetric(
        metric_name="final_response_avg_score",
        threshold=1.0,
        criterion=Criterion(final_response=FinalResponseCriterion(text=TextCriterion(match_strategy=EXACT))),
    ),
]


def make_cases(count: int) -> list[EvalCase]:
    """``count`` one-turn cases: ``echo i`` -> ``i``, with one ``echo`` tool call."""
    return [
        EvalCase(
            eval_id=f"case-{index:05d}",
            conversation=[
                Invocation(
                    invocation_id=f"case-{index:05d}-1",
                    user_content=Message.user(f"echo {index}"),
                    final_response=Message.assistant(str(index)),
                    tools=[Tool(name="echo", arguments={"value": index}, result=index)],
                )
            ],
            session_input=SessionInput(app_name=APP, user_id="bench"),
        )
        for index in range(count)
    ]


def eval_set_manager(count: int) -> InMemoryEvalSetManager:
    manager = InMemoryEvalSetManager()

    async def fill() -> None:
        await manager.create(APP, SET)
        for case in make_cases(count):
            await manager.add_case(APP, SET, case)

    run_sync(fill())
    return manager


def answer(message: str, turn: Turn) -> str:
    value = int(message.removeprefix("echo "))
    turn.record_tool("echo", {"value": value}, value)
    return str(value)


def latency_agent(latency: float) -> Callable[[str, Turn], object]:
    async def agent(message: str, turn: Turn) -> str:
        await asyncio.sleep(latency)
        return answer(message, turn)

    return agent


async def instant_agent(message: str, turn: Turn) -> str:
    return answer(message, turn)


def best_of(repeats: int, measure: Callable[[], float]) -> tuple[float, float]:
    """Best and median of ``repeats`` measurements."""
    times = [measure() for _ in range(repeats)]
    return min(times), statistics.median(times)


def timed(function: Callable[[], object]) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = [
        "  ".join(str(cell).rjust(width) for cell, width in zip(line, widths, strict=True)) for line in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def bare_asyncio(count: int, parallelism: int, latency: float) -> float:
    """The same sleeps behind a semaphore, without the framework."""

    async def main() -> None:
        gate = asyncio.Semaphore(parallelism)

        async def one() -> None:
            async with gate:
                await asyncio.sleep(latency)

        await asyncio.gather(*(one() for _ in range(count)))

    return timed(lambda: asyncio.run(main()))


@dataclass(frozen=True, slots=True)
class Parallelism:
    """What :func:`bench_parallelism` measured; times in seconds."""

    ideal: float
    inference: float
    inference_median: float
    baseline: float
    whole: float
    whole_median: float
    whole_inference: float
    whole_scoring: float
    whole_saving: float

    @property
    def ratio(self) -> float:
        """The target figure: the fastest whole call against the ideal."""
        return self.whole / self.ideal


class TimedResults(InMemoryEvalResultManager):
    """An in-memory result store that records how long each ``save`` takes."""

    def __init__(self) -> None:
        super().__init__()
        self.saves: list[float] = []

    async def save(self, app_name: str, result: EvalSetResult | None) -> str:
        started = time.perf_counter()
        try:
            return await super().save(app_name, result)
        finally:
            self.saves.append(time.perf_counter() - started)


def bench_parallelism(count: int, parallelism: int, latency: float, repeats: int) -> Parallelism:
    """N cases of latency L at parallelism P, scored with two metrics: the phases of ``evaluate``.

    The inference window (from the run's start to ``after_inference_set``) and the scoring left
    after it (to ``after_evaluate_set``) are timed by the framework's own set-level callbacks;
    saving is timed around the result store's ``save``. ``bare asyncio`` runs the same sleeps
    without the framework.
    """
    manager = eval_set_manager(count)
    inference_phases: list[float] = []
    inference_ends: list[float] = []
    scoring_phases: list[float] = []
    results = TimedResults()

    def inference_ended(context: object, args: AfterInferenceSetArgs) -> None:
        inference_ends.append(time.time())
        inference_phases.append(inference_ends[-1] - args.start_time)

    def scoring_ended(context: object, args: AfterEvaluateSetArgs) -> None:
        scoring_phases.append(time.time() - inference_ends[-1])

    evaluator = Evaluator(
        APP,
        latency_agent(latency),
        eval_set_manager=manager,
        result_manager=results,
        parallel_inference=True,
        parallelism=parallelism,
        callbacks=Callbacks()
        .register_after_inference_set("timer", inference_ended)
        .register_after_evaluate_set("timer", scoring_ended),
    )
    check = evaluator.evaluate(SET, metrics=METRICS)
    assert [case.eval_id for case in check.result.eval_case_results] == [case.eval_id for case in make_cases(count)]
    assert check.passed, "every bench case should pass both metrics"
    inference_phases.clear()
    inference_ends.clear()
    scoring_phases.clear()
    results.saves.clear()
    wholes = [timed(lambda: evaluator.evaluate(SET, metrics=METRICS)) for _ in range(repeats)]
    # The breakdown is that of the fastest whole call, so that its parts add up to it.
    fastest = wholes.index(min(wholes))
    baseline, _ = best_of(repeats, lambda: bare_asyncio(count, parallelism, latency))
    return Parallelism(
        ideal=math.ceil(count / parallelism) * latency,
        inference=min(inference_phases),
        inference_median=statistics.median(inference_phases),
        baseline=baseline,
        whole=wholes[fastest],
        whole_median=statistics.median(wholes),
        whole_inference=inference_phases[fastest],
        whole_scoring=scoring_phases[fastest],
        whole_saving=results.saves[fastest],
    )


def target_table(result: Parallelism) -> str:
    """The whole call, the inference window and the bare asyncio baseline against the ideal."""
    return table(
        ["what", "wall (s)", "median (s)", "ideal (s)", "ratio"],
        [
            [
                "evaluate() total",
                f"{result.whole:.3f}",
                f"{result.whole_median:.3f}",
                f"{result.ideal:.3f}",
                f"{result.ratio:.3f}",
            ],
            [
                "inference window",
                f"{result.inference:.3f}",
                f"{result.inference_median:.3f}",
                f"{result.ideal:.3f}",
                f"{result.inference / result.ideal:.3f}",
            ],
            [
                "bare asyncio",
                f"{result.baseline:.3f}",
                "-",
                f"{result.ideal:.3f}",
                f"{result.baseline / result.ideal:.3f}",
            ],
        ],
    )


def breakdown_table(result: Parallelism) -> str:
    """The fastest whole ``evaluate`` call, split into its phases."""
    rest = result.whole - result.whole_inference - result.whole_scoring - result.whole_saving
    parts = [
        ("inference window (agent, P cases at once; most scoring overlaps it)", result.whole_inference),
        ("scoring after the last inference", result.whole_scoring),
        ("saving (in-memory store, copies the result)", result.whole_saving),
        ("rest (read set, summary, build report)", rest),
    ]
    rows = [[label, f"{seconds:.3f}", f"{seconds / result.whole:.0%}"] for label, seconds in parts]
    rows.append(["evaluate() total", f"{result.whole:.3f}", "100%"])
    return table(["part", "wall (s)", "share"], rows)


def bench_overhead(count: int, parallelism: int, repeats: int) -> str:
    manager = eval_set_manager(count)
    rows = []
    # The bare cost: call the agent function N times with a real Turn, no framework around it.
    requests = [TurnRequest(message=Message.user(f"echo {index}"), session_id=f"s{index}") for index in range(count)]

    def bare_calls() -> float:
        async def main() -> None:
            for request in requests:
                await instant_agent(request.message.content, Turn(request, []))

        return timed(lambda: asyncio.run(main()))

    bare_best, _ = best_of(repeats, bare_calls)
    rows.append(["bare agent calls", str(count), "-", f"{bare_best:.3f}", f"{count / bare_best:,.0f}", "-"])
    for label, parallel in (("serial", False), ("parallel", True)):
        evaluator = Evaluator(
            APP,
            instant_agent,
            eval_set_manager=manager,
            parallel_inference=parallel,
            parallel_evaluation=parallel,
            parallelism=parallelism,
        )
        report = evaluator.evaluate(SET, metrics=METRICS)
        assert report.passed, "every bench case should pass both metrics"
        best, _ = best_of(repeats, lambda: timed(lambda: evaluator.evaluate(SET, metrics=METRICS)))  # noqa: B023
        rows.append(
            [
                f"evaluate, {label}",
                str(count),
                str(parallelism) if parallel else "1",
                f"{best:.3f}",
                f"{count / best:,.0f}",
                f"{(best - bare_best) / count * 1e6:,.0f}",
            ]
        )
    return table(["what", "N", "P", "wall (s)", "cases/s", "overhead/case (us)"], rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=1000, help="number of cases N (default 1000)")
    parser.add_argument("--latency", type=float, default=0.02, help="agent latency L in seconds (default 0.02)")
    parser.add_argument("--parallelism", type=int, default=100, help="cases at once P (default 100)")
    parser.add_argument("--repeats", type=int, default=3, help="measurements per figure; the best is shown (3)")
    parser.add_argument("--target", type=float, default=1.3, help="highest acceptable evaluate()/ideal ratio (1.3)")
    args = parser.parse_args(argv)
    if args.cases <= 0 or args.parallelism <= 0 or args.latency <= 0 or args.repeats <= 0:
        parser.error("--cases, --latency, --parallelism and --repeats must be positive")

    print(f"agenteval concurrency benchmark (Python {sys.version.split()[0]})\n")
    print(
        f"1. case parallelism: N={args.cases} cases, async agent with L={args.latency * 1000:g} ms per turn, "
        f"parallel_inference=True, P={args.parallelism}, tool trajectory + final response metrics"
    )
    result = bench_parallelism(args.cases, args.parallelism, args.latency, args.repeats)
    print(f"\n1a. target: the whole evaluate() call against the ideal ceil(N / P) * L = {result.ideal:.3f} s")
    print(target_table(result))
    verdict = "ok" if result.ratio <= args.target else "ABOVE TARGET"
    print(f"evaluate() ratio {result.ratio:.3f} vs target <= {args.target:g}: {verdict}")
    print("\n1b. the fastest evaluate() call, split into its parts")
    print(breakdown_table(result))
    print()
    print("2. framework overhead: instant agent, tool trajectory + final response metrics")
    print(bench_overhead(args.cases, args.parallelism, args.repeats))
    return 0 if result.ratio <= args.target else 1


if __name__ == "__main__":
    raise SystemExit(main())
