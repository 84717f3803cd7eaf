"""Saving and loading one large eval-set result with the MySQL result store.

Run with ``python bench/mysql_scale.py [--cases 20000] [--repeats 3] [--dsn mysql://root@127.0.0.1:3306/test]``.

The result is made the way an evaluation makes it: N one-turn cases (``add i i`` -> ``result 2i``,
one ``calculator`` tool call) in an in-memory eval set, an async agent that answers at once and
records the tool call, scored with ``tool_trajectory_avg_score`` and ``final_response_avg_score``
(the workload of the peer benchmark; not timed). That result is saved to a
``MySQLEvalResultManager`` once (creating the row), then ``--repeats`` more times (each replaces
the row) and loaded back as many times; the load is checked against what was saved. The table
shows the best and median time of each, and of two shares of them: writing the two JSON columns
(the save's serialisation) and reading the row's text from the server (the load without
parsing). **Targets for 20,000 cases: save < 3 s, load < 2 s** (the script exits 1 when the best
time of either is above its target, or when the save fails, e.g. a result larger than the
server's ``max_allowed_packet``: then it prints how long the failure took).

The table is created with a random prefix (``bench_<hex>_``) in the DSN's database and dropped
at the end. The server must be reachable (``scripts/mariadb.sh`` starts the project's test server).
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script from a source tree: make ``agenteval`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agenteval import (
    EvalCase,
    EvalMetric,
    EvalSetResult,
    Evaluator,
    InMemoryEvalSetManager,
    InMemoryMetricManager,
    Invocation,
    Message,
    SessionInput,
    Tool,
    Turn,
)
from agenteval.errors import StorageError
from agenteval.evalresult.mysql import MySQLEvalResultManager, _column
from agenteval.metric.criterion import (
    Criterion,
    FinalResponseCriterion,
    JSONCriterion,
    TextCriterion,
    TextMatchStrategy,
    ToolTrajectoryCriterion,
    ToolTrajectoryStrategy,
)

APP = "calc_app"
SET = "add_bench"
EXACT = TextMatchStrategy.EXACT
METRICS = [
    EvalMetric(
        metric_name="tool_trajectory_avg_score",
        threshold=1.0,
        criterion=Criterion(
            tool_trajectory=ToolTrajectoryCriterion(
                default_strategy=ToolTrajectoryStrategy(
                    name=TextCriterion(match_strategy=EXACT), arguments=JSONCriterion()
                )
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
    return [
        EvalCase(
            eval_id=f"case-{index}",
            conversation=[
                Invocation(
                    invocation_id=f"expected-{index}",
                    user_content=Message.user(f"add {index} {index}"),
                    final_response=Message.assistant(f"result {2 * index}"),
                    tools=[Tool(name="calculator", arguments={"a": index, "b": index}, result=2 * index)],
                )
            ],
            session_input=SessionInput(app_name=APP, user_id="bench_user"),
        )
        for index in range(count)
    ]


async def calculator(message: str, turn: Turn) -> str:
    _, a, b = message.split()
    turn.record_tool("calculator", {"a": int(a), "b": int(b)}, int(a) + int(b))
    return f"result {int(a) + int(b)}"


async def make_result(count: int) -> EvalSetResult:
    """One evaluation of ``count`` cases, as ``Evaluator.aevaluate`` returns it."""
    sets, metrics = InMemoryEvalSetManager(), InMemoryMetricManager()
    await sets.create(APP, SET)
    for case in make_cases(count):
        await sets.add_case(APP, SET, case)
    for metric in METRICS:
        await metrics.add(APP, SET, metric)
    evaluator = Evaluator(
        APP,
        calculator,
        eval_set_manager=sets,
        metric_manager=metrics,
        parallel_inference=True,
        parallel_evaluation=True,
        parallelism=100,
        progress=False,
    )
    report = await evaluator.aevaluate(SET)
    return report.result


async def server_packet_limit(store: MySQLEvalResultManager) -> int:
    def read(conn: Any) -> int:
        with conn.cursor() as cursor:
            cursor.execute("SELECT @@max_allowed_packet")
            return int(cursor.fetchone()[0])

    return await store._client.call("read max_allowed_packet", store.tables[0], read)


async def read_row(store: MySQLEvalResultManager, result_id: str) -> None:
    """The database's share of a load: the row's two JSON columns, as text, without parsing them."""

    def read(conn: Any) -> None:
        with conn.cursor() as cursor:
            cursor.execute(
                f"SELECT eval_case_results, summary FROM `{store.tables[0]}` WHERE app_name = %s"
                " AND eval_set_result_id = %s",
                (APP, result_id),
            )
            cursor.fetchone()

    await store._client.call("read row", store.tables[0], read)


async def drop(store: MySQLEvalResultManager) -> None:
    def run(conn: Any) -> None:
        with conn.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS `{store.tables[0]}`")

    await store._client.call("drop table", store.tables[0], run)


async def repeat(times: int, operation: Callable[[], Awaitable[object]]) -> list[float]:
    measured = []
    for _ in range(times):
        started = time.perf_counter()
        value = await operation()
        measured.append(time.perf_counter() - started)
        del value  # freeing a loaded result is not part of loading it
    return measured


def row(name: str, times: list[float], target: float | None = None) -> str:
    best = min(times)
    goal = "" if target is None else f"< {target:g}"
    verdict = "" if target is None else "met" if best < target else "MISSED"
    return f"{name:<24}  {best:>7.3f}  {statistics.median(times):>8.3f}  {goal:>7}  {verdict}"


async def serialise(result: EvalSetResult) -> None:
    _column(result, "eval_case_results")
    _column(result, "summary")


async def bench(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    result = await make_result(args.cases)
    print(f"evaluated {args.cases} cases in {time.perf_counter() - started:.1f} s (not timed below)")
    size = len(result.to_json(indent=None).encode())
    store = MySQLEvalResultManager(args.dsn, table_prefix=f"bench_{secrets.token_hex(4)}")
    try:
        await store.list(APP)  # creates the table, so the first save is not charged for it
        limit = await server_packet_limit(store)
        print(f"result JSON {size / 2**20:.1f} MiB; server max_allowed_packet {limit / 2**20:.0f} MiB")
        started = time.perf_counter()
        try:
            result_id = await store.save(APP, result)
        except StorageError as exc:
            print(f"save failed after {time.perf_counter() - started:.2f} s: {exc}")
            return 1
        # The first save created the row; the timed ones replace it.
        result = result.model_copy(update={"eval_set_result_id": result_id})
        saves = await repeat(args.repeats, lambda: store.save(APP, result))
        serialised = await repeat(args.repeats, lambda: serialise(result))
        loads = await repeat(args.repeats, lambda: store.get(APP, result_id))
        reads = await repeat(args.repeats, lambda: read_row(store, result_id))
        loaded = await store.get(APP, result_id)
        if loaded.eval_case_results != result.eval_case_results or loaded.summary != result.summary:
            raise AssertionError("the loaded result differs from the saved one")
        print(f"\n{'operation':<24}  {'best s':>7}  {'median s':>8}  {'target':>7}")
        print(row("save", saves, args.save_target))
        print(row("  of which: write JSON", serialised))
        print(row("load", loads, args.load_target))
        print(row("  of which: read the row", reads))
        return 0 if min(saves) < args.save_target and min(loads) < args.load_target else 1
    finally:
        await drop(store)
        await store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=20000, help="cases in the result (default 20000)")
    parser.add_argument("--repeats", type=int, default=3, help="saves and loads to time (default 3)")
    parser.add_argument("--dsn", default="mysql://root@127.0.0.1:3306/test", help="the server and database")
    parser.add_argument("--save-target", type=float, default=3.0, help="seconds a save may take (default 3)")
    parser.add_argument("--load-target", type=float, default=2.0, help="seconds a load may take (default 2)")
    return asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
