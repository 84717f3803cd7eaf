"""Kill and re-run: what a SIGKILL mid-evaluation loses when the evaluation runs with ``cache=``.

Usage (run.sh runs it; agenteval only, pydantic-evals has no cache or resume):
``python bench/peers/agenteval_kill.py [--n 400] [--latency 0.05] [--concurrency 10] [--kill-at 0.5]``

The cases, agent and metrics are in ``agenteval_workload.py``; the agent sleeps ``--latency`` per
case. A child process runs ``aevaluate`` with parallel inference and scoring at P and
``cache=<a fresh temporary directory>``; the agent notes each case it starts and an
``after_evaluate_case`` callback each case it finished (scored), one line per event appended to a
log file with a single ``os.write``, so a line is whole or absent however the process dies. Once
``--kill-at`` × N cases are noted finished, this process SIGKILLs the child, then runs the same
evaluation with the same cache in a new child to the end. Counted from the two logs:

- ``finished_before_kill``: cases the killed child reported finished;
- ``in_flight``: cases it started but had not finished (these may rightly run again);
- ``lost``: cases it finished whose agent the re-run called again (the target: 0), and the oldest of
  them (``lost_oldest_s``: how long before the kill it finished);
- ``rescored``: finished cases whose agent the re-run did not call but whose scores it computed again;
- ``rerun_in_flight`` and ``rerun_not_started``: the other cases the re-run's agent ran.

The re-run must end as an uninterrupted run would: every case present and passed. Prints one JSON
line; exits 1 unless the re-run passed every case.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

import agenteval_workload as workload
from measure import Record, emit

import agenteval as ae
from agenteval.runner.function import AgentFunction
from agenteval.service import AfterEvaluateCaseArgs, AfterInferenceCaseArgs

CHILD_TIMEOUT_S = 600.0


def note(log: str, line: str) -> None:
    """Append one line to ``log`` in one ``write`` (whole or absent after a SIGKILL)."""
    descriptor = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(descriptor, f"{line} {time.time():.6f}\n".encode())
    finally:
        os.close(descriptor)


def logged_agent(latency: float, log: str) -> AgentFunction:
    """The workload's agent, noting ``start <i>`` before it answers case ``i``."""
    answer = workload.make_agent(latency)

    async def agent(message: str, turn: ae.Turn) -> str:
        note(log, f"start case-{message.split()[1]}")
        return str(await answer(message, turn))

    return agent


def logging_callbacks(log: str) -> ae.Callbacks:
    """Note ``done <case>`` after each case is scored and ``reused <case>`` for an inference from the cache."""

    def reused(context: ae.EvalContext, args: AfterInferenceCaseArgs) -> None:
        if args.reused:
            note(log, f"reused {args.result.eval_case_id}")

    def done(context: ae.EvalContext, args: AfterEvaluateCaseArgs) -> None:
        note(log, f"{'done-reused' if args.reused else 'done'} {args.inference_result.eval_case_id}")

    return ae.Callbacks().register_after_inference_case("bench", reused).register_after_evaluate_case("bench", done)


async def child(n: int, latency: float, concurrency: int, cache: str, log: str) -> int:
    """One evaluation with ``cache``; prints how many cases passed."""
    sets = ae.InMemoryEvalSetManager()
    await workload.add_cases(sets, workload.make_cases(n))
    evaluator = ae.Evaluator(
        workload.APP_NAME,
        logged_agent(latency, log),
        eval_set_manager=sets,
        metric_manager=await workload.metric_store(),
        callbacks=logging_callbacks(log),
        parallel_inference=True,
        parallel_evaluation=True,
        parallelism=concurrency,
        cache=cache,
        progress=False,
    )
    started = time.perf_counter()
    report = await evaluator.aevaluate(workload.EVAL_SET_ID)
    results = report.result.eval_case_results
    passed = sum(map(workload.case_passed, results)) if len(results) == n else 0
    print(json.dumps({"passed": passed, "wall_s": round(time.perf_counter() - started, 4)}), flush=True)
    return 0


@dataclass
class Log:
    """The events of one child: case ids per kind, and when each case was noted finished."""

    events: dict[str, set[str]] = field(default_factory=dict)
    finished_at: dict[str, float] = field(default_factory=dict)

    @classmethod
    def parse(cls, lines: list[str]) -> Log:
        log = cls()
        for line in lines:
            kind, case, at = line.split()
            log.events.setdefault(kind, set()).add(case)
            if kind.startswith("done"):
                log.finished_at[case] = float(at)
        return log

    def of(self, *kinds: str) -> set[str]:
        return set().union(*(self.events.get(kind, set()) for kind in kinds))


def spawn(args: argparse.Namespace, cache: Path, log: Path) -> subprocess.Popen[str]:
    command = [sys.executable, __file__, "--child", str(cache), str(log)]
    command += ["--n", str(args.n), "--latency", str(args.latency), "--concurrency", str(args.concurrency)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)


def kill_when_finished(process: subprocess.Popen[str], log: Path, count: int) -> float:
    """SIGKILL ``process`` once ``count`` cases are noted finished in ``log``; returns the kill's wall time."""
    deadline = time.monotonic() + CHILD_TIMEOUT_S
    while time.monotonic() < deadline and process.poll() is None:
        if log.exists() and sum(line.startswith("done") for line in log.read_text().splitlines()) >= count:
            break
        time.sleep(0.005)
    killed_at = time.time()
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=CHILD_TIMEOUT_S)
    return killed_at


def measure(args: argparse.Namespace) -> Record:
    record: Record = {
        "framework": "agenteval",
        "kind": "kill",
        "version": version("agenteval"),
        "n": args.n,
        "latency": args.latency,
        "concurrency": args.concurrency,
        "kill_at": args.kill_at,
    }
    with tempfile.TemporaryDirectory(prefix="agenteval-kill-") as tmp:
        # One log for both children: its path is part of the agent's identity, which the cache keys on.
        cache, log = Path(tmp) / "cache", Path(tmp) / "events.log"
        killed = spawn(args, cache, log)
        killed_at = kill_when_finished(killed, log, max(1, round(args.kill_at * args.n)))
        record["killed_returncode"] = killed.returncode
        lines = log.read_text().splitlines() if log.exists() else []
        rerun = spawn(args, cache, log)
        out, _ = rerun.communicate(timeout=CHILD_TIMEOUT_S)
        record["rerun_returncode"] = rerun.returncode
        before, after = Log.parse(lines), Log.parse(log.read_text().splitlines()[len(lines) :])
    finished = before.of("done", "done-reused")
    in_flight = before.of("start") - finished
    ran_again = after.of("start")
    lost = finished & ran_again
    summary = json.loads(out.splitlines()[-1]) if rerun.returncode == 0 and out.strip() else {}
    record.update(
        {
            "finished_before_kill": len(finished),
            "in_flight": len(in_flight),
            "lost": len(lost),
            "lost_oldest_s": round(max((killed_at - before.finished_at[case] for case in lost), default=0.0), 4),
            "rescored": len((finished - ran_again) - after.of("done-reused")),
            "rerun_agent_calls": len(ran_again),
            "rerun_in_flight": len(ran_again & in_flight),
            "rerun_not_started": len(ran_again - before.of("start")),
            "rerun_reused_inferences": len(after.of("reused")),
            "rerun_passed": summary.get("passed", 0),
            "rerun_wall_s": summary.get("wall_s"),
        }
    )
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=400, help="cases")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the agent takes per case")
    parser.add_argument("--concurrency", type=int, default=10, help="cases run at once")
    parser.add_argument("--kill-at", type=float, default=0.5, help="fraction of the cases finished at the kill")
    parser.add_argument("--child", nargs=2, metavar=("CACHE", "LOG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return asyncio.run(child(args.n, args.latency, args.concurrency, *args.child))
    record = measure(args)
    emit(record)
    print(
        f"agenteval kill: {record['finished_before_kill']} finished before the kill, {record['lost']} lost, "
        f"{record['in_flight']} in flight; re-run passed {record['rerun_passed']}/{args.n}",
        file=sys.stderr,
    )
    return 0 if record["rerun_passed"] == args.n else 1


if __name__ == "__main__":
    sys.exit(main())
