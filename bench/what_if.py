"""The what-if explorer (``report.explore()``): how long one change of a threshold or of the case rule takes.

A report of N cases × R runs × 3 metrics whose scores are spread over 0 to 1 is built once (by a real
evaluation with an instant agent). Then a series of changes (each metric's threshold moved, the k-of-n
rule, the weighted rule with new weights) is timed three ways:

- ``recompute``: ``WhatIf.outcome`` alone, the recomputation from the stored scores (statuses, pass rates
  per run and per metric, flips);
- ``widget``: setting one control of the explorer widget, which recomputes and redraws every output
  (tables, flips, metrics JSON, Python code), as a slider drag does;
- ``exported code``: the baseline, the Python the explorer exports for the same settings
  (``report.with_thresholds(...)`` or ``report.reaggregate(...)``), which makes the whole new report.

Target (issue 18): one change < 100 ms at N=1000, R=3. The script exits 1 when the slowest widget change is
above ``--target``.

    python bench/what_if.py                  # N=1000, R=3, 30 changes
    python bench/what_if.py --cases 5000 --changes 10
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import pandas  # noqa: F401  # imported here so that no timing includes its import

import agenteval as ae
from agenteval._presentation import WhatIfView
from agenteval.analysis._what_if import WhatIf
from agenteval.evaluators import EvaluateResult, PerInvocationResult, default_registry
from agenteval.evaluators.base import status_for

METRICS = ("accuracy", "relevance", "style")


def part(index: int) -> Callable[..., EvaluateResult]:
    """An evaluator that reads its metric's score from the agent's reply (``"0.31 0.77 0.05"``)."""

    def evaluate(actuals: Sequence[ae.Invocation], expecteds: object, metric: ae.EvalMetric) -> EvaluateResult:
        reply = actuals[0].final_response
        score = float((reply.content if reply is not None else "").split()[index])
        status = status_for(score, metric.threshold)
        turn = PerInvocationResult(score=score, status=status)
        return EvaluateResult(overall_score=score, overall_status=status, per_invocation_results=[turn])

    return evaluate


def build_report(cases: int, runs: int) -> ae.EvaluationReport:
    rng = random.Random(18)

    def agent(message: str) -> str:
        return " ".join(f"{rng.betavariate(4, 2):.3f}" for _ in METRICS)

    registry = default_registry()
    for index, _ in enumerate(METRICS):
        registry.register(f"part{index}", part(index))
    eval_set = ae.EvalSet.of("bench", [ae.EvalCase.of(f"case-{n:05d}", f"question {n}") for n in range(cases)])
    metrics = [
        ae.EvalMetric(metric_name=name, evaluator_name=f"part{index}", threshold=0.5)
        for index, name in enumerate(METRICS)
    ]
    evaluator = ae.Evaluator("bench", agent, num_runs=runs, registry=registry, progress=False)
    return evaluator.evaluate(eval_set, metrics=metrics)


def steps(thresholds: int) -> list[tuple[str, object]]:
    """(control, new value): each metric's threshold in turn, then the k-of-n rule, then the weighted one."""
    moves: list[tuple[str, object]] = [
        (f"threshold:{METRICS[step % len(METRICS)]}", round(0.3 + 0.4 * step / max(thresholds - 1, 1), 2))
        for step in range(thresholds)
    ]
    moves += [("rule", "k_of_n"), ("k", 2), ("k", 1), ("rule", "weighted"), ("minimum", 0.6)]
    return moves + [(f"weight:{name}", weight) for name, weight in zip(METRICS, (3.0, 0.5, 2.0), strict=True)]


def control(explorer: WhatIfView, name: str) -> Any:
    kind, _, metric = name.partition(":")
    if kind == "threshold":
        return explorer.thresholds[metric]
    if kind == "weight":
        return explorer.weights[metric]
    return {"rule": explorer.rule, "k": explorer.k, "minimum": explorer.minimum}[kind]


def timed(function: Callable[..., object], *args: object) -> float:
    started = time.perf_counter()
    function(*args)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--changes", type=int, default=30)
    parser.add_argument("--target", type=float, default=0.100, help="seconds per widget change (the slowest)")
    args = parser.parse_args()

    started = time.perf_counter()
    report = build_report(args.cases, args.runs)
    print(
        f"report: {args.cases} cases × {args.runs} runs × {len(METRICS)} metrics, built in "
        f"{time.perf_counter() - started:.1f} s"
    )
    setup = {"WhatIf(report)": timed(WhatIf, report), "report.explore()": timed(report.explore)}
    what_if = WhatIf(report)
    explorer = report.explore()

    moves = steps(args.changes)
    recompute: list[float] = []
    widget: list[float] = []
    baseline: list[float] = []
    for name, value in moves:
        widget.append(timed(setattr, control(explorer, name), "value", value))
        settings = explorer.settings
        recompute.append(timed(what_if.outcome, settings))
        baseline.append(timed(exec, what_if.python_code(settings), {"report": report}))
    rows = [("recompute (WhatIf.outcome)", recompute), ("widget change", widget), ("exported code", baseline)]
    print(f"\n{len(moves)} changes ({args.changes} thresholds, then the k-of-n and weighted rules):")
    print(f"{'':28} {'median':>9} {'max':>9}")
    for label, times in rows:
        print(f"{label:28} {statistics.median(times) * 1000:7.1f}ms {max(times) * 1000:7.1f}ms")
    for label, seconds in setup.items():
        print(f"{label:28} {seconds * 1000:7.1f}ms (once)")
    slowest = max(widget)
    verdict = "met" if slowest <= args.target else "MISSED"
    print(f"\ntarget: every widget change ≤ {args.target * 1000:.0f} ms: {verdict} (slowest {slowest * 1000:.1f} ms)")
    return 0 if slowest <= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
