"""An evaluation killed with SIGKILL at any point, then run again with the same ``cache=``, loses nothing finished.

A child process imports agenteval once and forks one evaluation at a time from it (importing agenteval in
each of some forty processes would take most of a minute on two cores). Each evaluation is killed at a
random point, the next one runs on the same cache, and so on until one finishes before its point; then a new
chain starts on a new cache, until 30 evaluations have been killed. The agent writes ``start`` to a log when
it begins a case, and the callbacks ``inferred`` and ``done`` when the evaluation reports the case's inference
and the case finished, each with one ``os.write``, so the log holds everything a killed process said.

After each kill, the next evaluation must not start a case whose inference was reported finished before (it
takes the inference from the cache), nor therefore one reported done: only the cases in flight at the kill run
again. Each chain's last, uninterrupted evaluation must end as an uninterrupted evaluation from scratch does.
"""

from __future__ import annotations

import json
import os
import random
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

KILLS = 30
CASES = 120
SEED = 28
DELAY = (0.05, 0.8)
"""Seconds from the fork of an evaluation to its SIGKILL: from before its first case to after its last."""

ZYGOTE = r"""
import asyncio, json, os, random, resource, signal, sys, time

LIMIT = 2 << 30
resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))

import agenteval as ae

CASES = int(sys.argv[1])
RUN_TIMEOUT = 30.0


class Agent:
    def __init__(self, note, label):
        self.note = note
        self.label = label
        self.pace = random.Random(label)

    async def __call__(self, message):
        self.note("start", message, self.label)
        await asyncio.sleep(self.pace.uniform(0.002, 0.03))
        return message.upper()

    def cache_identity(self):
        # What decides the answers: not the log, the run's label nor the pace.
        return "upper"


def evaluate(cache, log, label, results):
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def note(*words):
        os.write(fd, (" ".join(words) + "\n").encode())


    def inferred(context, args):
        note("inferred", args.result.eval_case_id, label)

    def done(context, args):
        note("done", args.inference_result.eval_case_id, label)

    callbacks = (
        ae.Callbacks().register_after_inference_case("log", inferred).register_after_evaluate_case("log", done)
    )
    # Odd cases expect another reply: they fail, so that statuses and scores differ between cases.
    cases = [
        ae.EvalCase.of(f"c{i:03d}", f"c{i:03d}", expect=f"C{i:03d}" if i % 2 == 0 else "other")
        for i in range(CASES)
    ]
    report = ae.Evaluator(
        "app",
        Agent(note, label),
        progress=False,
        callbacks=callbacks,
        parallel_inference=True,
        parallel_evaluation=True,
        parallelism=4,
    ).evaluate(ae.EvalSet.of("s", cases), metrics=[ae.EvalMetric.final_response()], cache=cache)
    outcome = {
        case.eval_id: [
            str(case.final_eval_status),
            [metric.score for metric in case.overall_eval_metric_results],
            [turn.actual_invocation.final_response.content for turn in case.eval_metric_result_per_invocation],
        ]
        for case in report.result.eval_case_results
    }
    with open(results, "w", encoding="utf-8") as file:
        json.dump(outcome, file)


for line in sys.stdin:
    cache, log, label, results, kill_after = line.split()
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            evaluate(cache, log, label, results)
        except BaseException as exc:
            print(f"{label}: {exc!r}", file=sys.stderr, flush=True)
            code = 1
        os._exit(code)
    deadline = time.monotonic() + (float(kill_after) if kill_after != "never" else RUN_TIMEOUT)
    while (status := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.002)
    if status[0] == 0:
        # The parent has not reaped the child yet, so its pid is still its own.
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        print("killed" if kill_after != "never" else "timed out", flush=True)
    else:
        print(f"exited {os.waitstatus_to_exitcode(status[1])}", flush=True)
"""


class Zygote:
    """The child that forks evaluations; every wait for it is bounded."""

    def __init__(self, tmp_path: Path) -> None:
        script = tmp_path / "zygote.py"
        script.write_text(ZYGOTE, encoding="utf-8")
        self.stderr_path = tmp_path / "zygote.err"
        with self.stderr_path.open("wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, str(script), str(CASES)],
                cwd=tmp_path,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env={**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)},
            )
        assert self.process.stdin is not None and self.process.stdout is not None
        self._stdin = self.process.stdin
        self._stdout = self.process.stdout.fileno()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._stdout, selectors.EVENT_READ)
        self._buffer = b""

    def run(self, cache: Path, log: Path, label: str, results: Path, kill_after: float | None) -> str:
        """Fork one evaluation, killed ``kill_after`` seconds after the fork; what became of it."""
        after = "never" if kill_after is None else f"{kill_after:.4f}"
        self._stdin.write(f"{cache} {log} {label} {results} {after}\n".encode())
        self._stdin.flush()
        return self._line(timeout=60)

    def _line(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            assert left > 0 and self._selector.select(left), f"the zygote said nothing for {timeout} s"
            chunk = os.read(self._stdout, 4096)
            assert chunk, f"the zygote ended: {self.stderr_path.read_text(errors='replace')}"
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    def close(self) -> None:
        self._selector.close()
        self._stdin.close()
        try:
            self.process.wait(timeout=30)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(timeout=30)
            assert self.process.stdout is not None
            self.process.stdout.close()


@dataclass
class Said:
    """What the evaluations of one chain wrote to its log, per evaluation (by label)."""

    started: dict[str, list[str]] = field(default_factory=dict)
    inferred: dict[str, set[str]] = field(default_factory=dict)
    done: dict[str, set[str]] = field(default_factory=dict)


def read_log(log: Path) -> Said:
    said = Said()
    text = log.read_text(encoding="utf-8") if log.exists() else ""
    for line in text.splitlines():
        what, case, label = line.split()
        if what == "start":
            said.started.setdefault(label, []).append(case)
        else:
            getattr(said, what).setdefault(label, set()).add(case)
    return said


def test_a_killed_evaluation_run_again_loses_no_finished_case(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    zygote = Zygote(tmp_path)
    try:
        scratch = zygote.run(tmp_path / "scratch", tmp_path / "scratch.log", "scratch", tmp_path / "scratch.json", None)
        assert scratch == "exited 0", zygote.stderr_path.read_text(errors="replace")
        uninterrupted = json.loads((tmp_path / "scratch.json").read_text(encoding="utf-8"))
        assert len(uninterrupted) == CASES
        kills = 0
        chain = 0
        while kills < KILLS:
            chain += 1
            cache, log = tmp_path / f"cache{chain}", tmp_path / f"chain{chain}.log"
            labels: list[str] = []
            while True:
                label = f"{chain}.{len(labels) + 1}"
                results = tmp_path / f"{label}.json"
                kill_after = rng.uniform(*DELAY) if kills < KILLS else None
                outcome = zygote.run(cache, log, label, results, kill_after)
                said = read_log(log)
                inferred_before = set().union(*(said.inferred.get(earlier, set()) for earlier in labels))
                done_before = set().union(*(said.done.get(earlier, set()) for earlier in labels))
                started = said.started.get(label, [])
                assert len(started) == len(set(started)), f"evaluation {label} started a case twice"
                again = sorted(set(started) & inferred_before)
                assert not again, (
                    f"evaluation {label} ran again {len(again)} cases whose inference an evaluation killed before had"
                    f" reported finished ({len(set(started) & done_before)} of them reported done): {again[:8]}"
                )
                labels.append(label)
                if outcome == "killed":
                    kills += 1
                    continue
                assert outcome == "exited 0", f"{label}: {outcome}: {zygote.stderr_path.read_text(errors='replace')}"
                break
            assert said.done.get(label) == set(uninterrupted), f"evaluation {label} did not report every case"
            final = json.loads((tmp_path / f"{label}.json").read_text(encoding="utf-8"))
            assert final == uninterrupted, f"chain {chain} ended unlike an uninterrupted evaluation"
    finally:
        zygote.close()
