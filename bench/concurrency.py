"""Concurrency and overhead benchmark of ``Evaluator.evaluate``.

Run with ``python bench/concurrency.py [--cases N] [--latency SECONDS] [--parallelism P]``.

1. Case parallelism: N one-turn cases, an async agent that takes L seconds per turn,
   ``parallel_inference=True, parallelism=P``. The ideal wall time is ``ceil(N / P) * L``; the
   inference phase's ratio measured / ideal (timed inside ``evaluate`` by an inference-set
   callback) should stay at or below 1.15 for N=1000, L=20 ms, P=100. A bare asyncio baseline (the
   same sleeps behind a semaphore, no framework) and the whole ``evaluate`` call (which adds reading
   the set, scoring, summarising and saving) are measured in the same run.
2. Framework overhead: N cases with an agent that answers at once, scored with a tool-trajectory
   and a final-response metric, serial and parallel; reported as cases per second and as
   microseconds per case next to the bare cost of calling the agent N times.

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
from pathlib import Path

if __package__ in (None, ""):  # run as a script from a source tree: make ``agenteval`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agenteval import (
    EvalCase,
    EvalMetric,
    Evaluator,
    InMemoryEvalSetManager,
    Invocation,
    Message,
    SessionInput,
    Tool,
    Turn,
)
from agenteval._async import run_sync
from agenteval.metric.criterion import (
    Criterion,
    FinalResponseCriterion,
    TextCriterion,
    TextMatchStrategy,
    ToolTrajectoryCriterion,
    ToolTrajectoryStrategy,
)
from agenteval.runner.base import TurnRequest
from agenteval.service import AfterInferenceSetArgs, Callbacks

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


def bench_parallelism(count: int, parallelism: int, latency: float, repeats: int) -> tuple[str, float]:
    """Wall time of N cases of latency L at parallelism P, against the ideal and two baselines.

    ``inference phase`` is the part of ``Evaluator.evaluate`` that runs the agent, timed by the
    framework's own inference-set callbacks: the part case parallelism speeds up, and the figure
    with a target. ``evaluate`` is the whole call, which adds the fixed work done around it
    (reading the set, scoring, the multi-run summary, saving); ``instant agent`` is that whole call
    with an agent that answers at once. ``bare asyncio`` runs the same sleeps without the framework.
    """
    manager = eval_set_manager(count)
    phases: list[float] = []

    def phase_ended(context: object, args: AfterInferenceSetArgs) -> None:
        phases.append(time.time() - args.start_time)

    def evaluator(agent: Callable[[str, Turn], object]) -> Evaluator:
        return Evaluator(
            APP,
            agent,
            eval_set_manager=manager,
            parallel_inference=True,
            parallelism=parallelism,
            callbacks=Callbacks().register_after_inference_set("timer", phase_ended),
        )

    slow, instant = evaluator(latency_agent(latency)), evaluator(instant_agent)
    check = slow.evaluate(SET, metrics=[])
    assert [case.eval_id for case in check.result.eval_case_results] == [case.eval_id for case in make_cases(count)]
    assert not any(case.error_message for case in check.result.eval_case_results)
    phases.clear()
    whole, whole_median = best_of(repeats, lambda: timed(lambda: slow.evaluate(SET, metrics=[])))
    inferred, inferred_median = min(phases), statistics.median(phases)
    fixed, _ = best_of(repeats, lambda: timed(lambda: instant.evaluate(SET, metrics=[])))
    baseline, _ = best_of(repeats, lambda: bare_asyncio(count, parallelism, latency))
    ideal = math.ceil(count / parallelism) * latency
    ratio = inferred / ideal
    text = table(
        ["N", "P", "L (ms)", "ideal (s)", "what", "wall (s)", "median (s)", "ratio"],
        [
            [
                str(count),
                str(parallelism),
                f"{latency * 1000:g}",
                f"{ideal:.3f}",
                "inference phase",
                f"{inferred:.3f}",
                f"{inferred_median:.3f}",
                f"{ratio:.3f}",
            ],
            ["", "", "", "", "bare asyncio", f"{baseline:.3f}", "-", f"{baseline / ideal:.3f}"],
            ["", "", "", "", "evaluate (whole call)", f"{whole:.3f}", f"{whole_median:.3f}", f"{whole / ideal:.3f}"],
            ["", "", "", "", "evaluate, instant agent", f"{fixed:.3f}", "-", "-"],
        ],
    )
    return text, ratio


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
    parser.add_argument("--target", type=float, default=1.15, help="highest acceptable wall/ideal ratio (1.15)")
    args = parser.parse_args(argv)
    if args.cases <= 0 or args.parallelism <= 0 or args.latency <= 0 or args.repeats <= 0:
        parser.error("--cases, --latency, --parallelism and --repeats must be positive")

    print(f"agenteval concurrency benchmark (Python {sys.version.split()[0]})\n")
    print("1. case parallelism: async agent with fixed latency, parallel_inference=True, no metrics")
    text, ratio = bench_parallelism(args.cases, args.parallelism, args.latency, args.repeats)
    print(text)
    verdict = "ok" if ratio <= args.target else "ABOVE TARGET"
    print(f"ratio {ratio:.3f} vs target <= {args.target:g}: {verdict}\n")
    print("2. framework overhead: instant agent, tool trajectory + final response metrics")
    print(bench_overhead(args.cases, args.parallelism, args.repeats))
    return 0 if ratio <= args.target else 1


if __name__ == "__main__":
    raise SystemExit(main())
