"""What the live board costs a running evaluation (issue 18).

N one-turn cases, an agent that answers at once (the worst case for the board: cases finish as fast as
the framework can score them, so any per-case cost of the board shows), two deterministic metrics,
``parallelism`` P. Each repeat times, in one batch inside one asyncio loop, in alternating order:

- ``without``: ``run = ev.start(...)``, then ``await run`` (the baseline);
- ``with board``: the same, with a ``LiveBoard`` created right after ``start`` (as displaying the run
  in a notebook cell does), listening to every finished case and drawing its final state at the end.

Widgets need a frontend to talk to; here every widget message is serialised to JSON, as a kernel
does before sending it, so building and encoding the messages is counted (sending them is not).
Besides the wall times, the board's own time is measured directly (its construction, and every call
the run or the loop makes into it): a steadier figure than the difference of two noisy wall times.

Target: the run with the board at most 5% slower than without (median of the per-repeat ratios);
the script exits 1 above ``--target``. The ratio of the fastest runs of each kind is printed too: on a
shared machine single runs of this workload vary by ±15%, so use many repeats.

    python bench/live_board.py                     # N=1000, P=16, 21 repeats
    python bench/live_board.py --cases 200 --repeats 31
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script from a source tree: make ``agenteval`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import comm

import agenteval as ae
from agenteval.notebook._live_board import LiveBoard

METRICS = [ae.EvalMetric.tool_trajectory(), ae.EvalMetric.final_response()]


class SerialisingComm(comm.DummyComm):
    """A comm that encodes every message as a kernel would, and sends it nowhere."""

    messages = 0

    def publish_msg(
        self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
    ) -> None:
        json.dumps(data, default=str)
        SerialisingComm.messages += 1


class Stopwatch:
    """Seconds spent in the board's entry points: its listener and its timer."""

    spent = 0.0

    @classmethod
    def wrap(cls, function: Callable[..., None]) -> Callable[..., None]:
        def timed(*args: Any) -> None:
            started = time.perf_counter()
            try:
                function(*args)
            finally:
                cls.spent += time.perf_counter() - started

        return timed


def eval_set(cases: int) -> ae.EvalSet:
    return ae.EvalSet.of(
        "bench",
        [ae.EvalCase.of(f"case-{index}", f"question {index}", expect=f"answer {index}") for index in range(cases)],
    )


def agent(message: str) -> str:
    return message.replace("question", "answer")


async def timed(cases: ae.EvalSet, parallelism: int, board: bool) -> tuple[float, LiveBoard | None]:
    ev = ae.Evaluator("bench", agent, parallelism=parallelism, progress=False)
    started = time.perf_counter()
    run = ev.start(cases, metrics=METRICS)
    live = None
    if board:
        created = time.perf_counter()
        live = LiveBoard(run)
        Stopwatch.spent += time.perf_counter() - created
    report = await run
    elapsed = time.perf_counter() - started
    assert report.passed, report.cases.head()
    return elapsed, live


async def measure(args: argparse.Namespace) -> list[tuple[float, float, float, int]]:
    cases = eval_set(args.cases)
    await timed(eval_set(5), args.parallelism, board=True)  # imports and first-call costs, untimed
    rows = []
    for repeat in range(args.repeats):
        # Alternate which goes first, so a machine slowing down or speeding up favours neither.
        first, second = (False, True) if repeat % 2 == 0 else (True, False)
        times: dict[bool, float] = {}
        sent, spent = SerialisingComm.messages, Stopwatch.spent
        for board in (first, second):
            gc.collect()  # each run starts with the same garbage to collect: none
            times[board], live = await timed(cases, args.parallelism, board)
            if live is not None:
                assert live.counts["passed"] == args.cases and "<span>done · " in live.status.value
        rows.append((times[False], times[True], Stopwatch.spent - spent, SerialisingComm.messages - sent))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--parallelism", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--target", type=float, default=1.05)
    args = parser.parse_args()
    comm.create_comm = SerialisingComm
    LiveBoard._changed = Stopwatch.wrap(LiveBoard._changed)  # type: ignore[method-assign]
    LiveBoard._on_timer = Stopwatch.wrap(LiveBoard._on_timer)  # type: ignore[method-assign]
    rows = asyncio.run(measure(args))
    print(f"N={args.cases} cases, instant agent, P={args.parallelism}, {args.repeats} repeats")
    print(
        f"{'repeat':>6} {'without s':>10} {'with board s':>13} {'ratio':>7} {'board own ms':>13} {'own/without':>12}"
        f" {'widget messages':>16}"
    )
    for index, (plain, board, own, messages) in enumerate(rows, start=1):
        print(
            f"{index:>6} {plain:>10.3f} {board:>13.3f} {board / plain:>7.3f} {own * 1000:>13.1f}"
            f" {own / plain:>12.3f} {messages:>16}"
        )
    ratio = statistics.median(board / plain for plain, board, _, _ in rows)
    fastest = min(board for _, board, _, _ in rows) / min(plain for plain, _, _, _ in rows)
    own = statistics.median(own / plain for plain, _, own, _ in rows)
    verdict = "met" if ratio <= args.target else "MISSED"
    print(f"median with/without {ratio:.3f} (target ≤ {args.target}: {verdict})")
    print(f"fastest with / fastest without {fastest:.3f}; the board's own time (median) {own:.1%} of a run without it")
    return 0 if ratio <= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
