"""``agenteval demo`` and ``agenteval run``: evaluate an app directory's eval sets, print and save the results."""

from __future__ import annotations

import argparse
import builtins
import sys
from collections.abc import Sequence
from pathlib import Path

from agenteval._util.sync_bridge import run_sync
from agenteval.analysis.report import EvaluationReport
from agenteval.cli._agent import load_agent
from agenteval.cli._output import json_text, say
from agenteval.cli._summary import summary_json, summary_text
from agenteval.errors import ConfigError
from agenteval.evalresult.local import LocalEvalResultManager
from agenteval.evalset.local import LocalEvalSetManager
from agenteval.evaluation.evaluator import Evaluator
from agenteval.metric.local import LocalMetricManager
from agenteval.metric.manager import MetricManager
from agenteval.runner.function import AgentFunction

__all__ = ["demo_command", "run_command"]


def demo_command(args: argparse.Namespace) -> int:
    """Evaluate the bundled calculator agent; 0 whatever the verdict, since its failing case is on purpose."""
    from agenteval.examples.math import APP_NAME, DATA_DIR, EVAL_SET_ID, calculator_agent

    evaluate_app(DATA_DIR, APP_NAME, calculator_agent, [EVAL_SET_ID], args)
    return 0


def run_command(args: argparse.Namespace) -> int:
    """Evaluate an app directory; 0 when no eval set failed, else 1."""
    app_dir: Path = args.app_dir
    if not app_dir.is_dir():
        raise ConfigError(f"{app_dir} is not a directory")
    app_dir = app_dir.resolve()
    return 0 if evaluate_app(app_dir.parent, app_dir.name, load_agent(args.agent), args.eval_set, args) else 1


def evaluate_app(
    data_dir: Path, app_name: str, agent: AgentFunction, eval_set_ids: Sequence[str], args: argparse.Namespace
) -> bool:
    """Evaluate the eval sets (all of the app's when none is named) and say how it went; whether none failed."""
    eval_sets = LocalEvalSetManager(data_dir)
    if not eval_set_ids:
        eval_set_ids = run_sync(eval_sets.list(app_name))
        if not eval_set_ids:
            raise ConfigError(f"no *.evalset.json files in {data_dir / app_name}")
    _check_one_eval_set(eval_set_ids, args)
    results = LocalEvalResultManager(args.output)
    evaluator = Evaluator(
        app_name,
        agent,
        eval_set_manager=eval_sets,
        metric_manager=_metric_manager(data_dir, args.metrics),
        result_manager=results,
        num_runs=args.num_runs,
        turn_timeout=args.turn_timeout,
        parallel_inference=not args.serial,
        parallel_evaluation=not args.serial,
        parallelism=args.parallelism,
        cache=args.cache,
        agent_version=args.agent_version,
        cassette=args.cassette,
        strict=args.strict,
    )
    # With --json, stdout holds the JSON alone: what people read goes to stderr.
    people = sys.stderr if args.json else sys.stdout
    summaries = []
    all_passed = True
    for eval_set_id in eval_set_ids:
        report = evaluator.evaluate(eval_set_id, resume=args.resume)
        written = _written_files(report, args)
        say("\n".join([summary_text(report), *(f"{kind} written to {path}" for kind, path in written.items())]), people)
        say("", people)
        summaries.append(summary_json(report, _result_file(results, report), **written))
        all_passed = all_passed and report.overall_status != "failed"
    say(f"results are in {Path(args.output).resolve() / app_name}", people)
    if args.json:
        print(json_text({"passed": all_passed, "evalSets": summaries}))
    return all_passed


def _check_one_eval_set(eval_set_ids: Sequence[str], args: argparse.Namespace) -> None:
    """--resume, --html and --bundle name one eval set's result or file."""
    if len(eval_set_ids) <= 1:
        return
    given = [
        option
        for option, value in (("--resume", args.resume), ("--html", args.html), ("--bundle", args.bundle))
        if value
    ]
    if given:
        raise ConfigError(
            f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} for one eval set, and this would evaluate"
            f" {len(eval_set_ids)} ({', '.join(map(repr, eval_set_ids))}): choose one with --eval-set ID"
        )


def _metric_manager(data_dir: Path, metrics_file: Path | None) -> MetricManager:
    """Each eval set's ``<set>.metrics.json``, or with ``--metrics FILE`` that file for every eval set."""
    if metrics_file is None:
        return LocalMetricManager(data_dir)
    if not metrics_file.is_file():
        raise ConfigError(f"--metrics {metrics_file}: there is no such file")
    # Read as the store reads metrics files: checked, unknown keys warned about (refused with --strict),
    # ${VAR}s expanded.
    return LocalMetricManager(metrics_file.parent, locator=_OneFile(metrics_file.name))


class _OneFile:
    """A locator that puts every eval set's metrics in one file."""

    def __init__(self, name: str) -> None:
        self.name = name

    def build(self, base_dir: Path, app_name: str, item_id: str) -> Path:
        return base_dir / self.name

    def list(self, base_dir: Path, app_name: str) -> builtins.list[str]:
        return []


def _written_files(report: EvaluationReport, args: argparse.Namespace) -> dict[str, Path]:
    """Write what --html and --bundle ask for; the paths written, by kind."""
    written: dict[str, Path] = {}
    if args.html is not None:
        written["html"] = report.to_html(args.html).resolve()
    if args.bundle is not None:
        written["bundle"] = report.bundle(args.bundle).resolve()
    return written


def _result_file(results: LocalEvalResultManager, report: EvaluationReport) -> Path | None:
    result_id = report.result_id
    if not result_id:
        return None
    return results.locator.build(results.base_dir, report.app_name, result_id).resolve()
