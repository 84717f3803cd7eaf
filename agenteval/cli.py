"""The ``agenteval`` command: evaluate an app directory against an agent, or run the bundled demo."""

from __future__ import annotations

import argparse
import importlib
import math
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from agenteval._async import run_sync
from agenteval._headline import pass_k_text
from agenteval._terminal import printable
from agenteval.errors import AgentEvalError, ConfigError, describe_exception
from agenteval.evalresult.local import LocalEvalResultManager
from agenteval.evalresult.provenance import package_version
from agenteval.evalset.local import LocalEvalSetManager
from agenteval.evaluation import DEFAULT_PARALLELISM, Evaluator
from agenteval.metric.local import LocalMetricManager
from agenteval.report import EvaluationReport
from agenteval.runner.function import AgentFunction

__all__ = ["main"]

DEFAULT_OUTPUT = "agenteval-results"
INTERRUPTED = 130
"""The exit status after Ctrl-C, as a shell reports a process ended by SIGINT (128 + 2)."""


def _say(text: str, stream: TextIO | None = None) -> None:
    """Print ``text`` (to stdout by default), its control characters escaped: ids and messages come from files."""
    print(printable(text, lines=True), file=stream or sys.stdout)


def _load_agent(spec: str) -> AgentFunction:
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ConfigError(f"--agent must look like 'package.module:function', got {spec!r}")
    sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import {module_name!r} for --agent: {exc}") from exc
    except Exception as exc:  # the module itself is broken: a syntax error, or its code raised
        problem = describe_exception(exc).splitlines()[0]
        raise ConfigError(
            f"cannot import {module_name!r} for --agent: importing it raised {problem}; fix the module"
        ) from exc
    try:
        agent: AgentFunction = getattr(module, attribute)
    except AttributeError:
        raise ConfigError(f"module {module_name!r} has no attribute {attribute!r} (from --agent {spec})") from None
    return agent


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def summary_text(report: EvaluationReport) -> str:
    """A plain-text summary of a report: one line per case, then the metrics and the verdict."""
    metric_names = [metric.metric_name for metric in report.eval_metrics]
    rows = [["case", "status", *metric_names, "error"]]
    for case in report.case_summaries:
        scores = {m.metric_name: f"{m.score:.2f} {m.eval_status or ''}".strip() for m in case.metric_results}
        errors = sorted({run.error_message.splitlines()[0] for run in case.runs if run.error_message})
        rows.append(
            [
                case.eval_id,
                str(case.overall_status),
                *(scores.get(name, "-") for name in metric_names),
                "; ".join(errors),
            ]
        )
    # Escaped before the columns are measured, so that an escape cannot break their alignment.
    rows = [[printable(cell) for cell in row] for row in rows]
    passed = sum(1 for case in report.case_summaries if case.overall_status == "passed")
    lines = [
        f"eval set {report.eval_set_id} ({report.num_runs} run{'s' if report.num_runs != 1 else ''}, "
        f"{report.execution_time:.2f}s)",
        _table(rows),
        f"{passed}/{len(report.case_summaries)} cases passed; overall {report.overall_status}",
    ]
    if headline := pass_k_text(report):
        lines.append(headline)
    if report.result.eval_set_result_id:
        lines.append(f"result saved as {report.result.eval_set_result_id}")
    return "\n".join(lines)


def _evaluate(
    data_dir: Path, app_name: str, agent: AgentFunction, eval_set_ids: Sequence[str], args: argparse.Namespace
) -> bool:
    eval_sets = LocalEvalSetManager(data_dir)
    if not eval_set_ids:
        eval_set_ids = run_sync(eval_sets.list(app_name))
        if not eval_set_ids:
            raise ConfigError(f"no *.evalset.json files in {data_dir / app_name}")
    evaluator = Evaluator(
        app_name,
        agent,
        eval_set_manager=eval_sets,
        metric_manager=LocalMetricManager(data_dir),
        result_manager=LocalEvalResultManager(args.output),
        num_runs=args.num_runs,
        turn_timeout=args.turn_timeout,
        parallel_inference=not args.serial,
        parallel_evaluation=not args.serial,
        parallelism=args.parallelism,
    )
    all_passed = True
    for eval_set_id in eval_set_ids:
        report = evaluator.evaluate(eval_set_id)
        _say(summary_text(report) + "\n")
        all_passed = all_passed and report.overall_status != "failed"
    _say(f"results are in {Path(args.output).resolve() / app_name}")
    return all_passed


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agenteval",
        description=__doc__,
        epilog="Exit status: 0 when the evaluation ran (for 'run': and no eval set failed), 1 when an eval set of"
        f" 'run' failed, 2 for bad arguments or configuration, {INTERRUPTED} when interrupted (Ctrl-C; the"
        " finished cases are saved).",
    )
    parser.add_argument("--version", action="version", version=f"agenteval {package_version()}")
    commands = parser.add_subparsers(dest="command")

    def common(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--num-runs", type=int, default=1, help="run every case this many times (default 1)")
        sub.add_argument(
            "--parallelism",
            type=int,
            default=DEFAULT_PARALLELISM,
            help=f"most cases run and scored at once (default {DEFAULT_PARALLELISM})",
        )
        sub.add_argument("--serial", action="store_true", help="run and score one case at a time")
        sub.add_argument(
            "--turn-timeout",
            type=_seconds,
            metavar="SECONDS",
            help="fail a case whose agent takes longer than this for one turn (default: no limit)",
        )
        sub.add_argument(
            "--output", default=DEFAULT_OUTPUT, help=f"directory for result files (default ./{DEFAULT_OUTPUT})"
        )

    demo = commands.add_parser("demo", help="evaluate the bundled calculator agent on its eval set (the default)")
    common(demo)
    run = commands.add_parser("run", help="evaluate an app directory (<dir>/<set>.evalset.json) against an agent")
    run.add_argument("app_dir", type=Path, help="the app directory; its name is the app name")
    run.add_argument("--agent", required=True, help="the agent as 'package.module:function'")
    run.add_argument("--eval-set", action="append", default=[], help="eval set id (repeatable; default all)")
    common(run)
    return parser


def _seconds(text: str) -> float:
    """A positive, finite number of seconds, or an argparse error saying so."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return seconds


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    with warnings.catch_warnings():
        # Warnings name keys, metrics and ids from the user's files: printed escaped, as everything else.
        warnings.showwarning = _show_warning
        return _main(argv)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    _say(warnings.formatwarning(message, category, filename, lineno, line).rstrip("\n"), file or sys.stderr)


def _main(argv: Sequence[str] | None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments or (arguments[0].startswith("-") and arguments[0] not in ("-h", "--help", "--version")):
        arguments.insert(0, "demo")
    args = _parser().parse_args(arguments)
    if args.command == "demo":
        return _exit_status(lambda: _demo(args), args)
    app_dir: Path = args.app_dir
    if not app_dir.is_dir():
        _say(f"agenteval: {app_dir} is not a directory", sys.stderr)
        return 2
    return _exit_status(
        lambda: _evaluate(
            app_dir.resolve().parent, app_dir.resolve().name, _load_agent(args.agent), args.eval_set, args
        ),
        args,
    )


def _demo(args: argparse.Namespace) -> bool:
    from agenteval.examples.math import APP_NAME, DATA_DIR, EVAL_SET_ID, calculator_agent

    _evaluate(DATA_DIR, APP_NAME, calculator_agent, [EVAL_SET_ID], args)
    return True  # its failing case is on purpose


def _exit_status(evaluate: Callable[[], bool], args: argparse.Namespace) -> int:
    """Run ``evaluate`` (whether every eval set passed) and say how it ended, as the exit status and on stderr."""
    try:
        return 0 if evaluate() else 1
    except AgentEvalError as exc:
        _say(f"agenteval: {exc}", sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:
        _say(f"agenteval: interrupted{_partial_result(interrupt, args)}", sys.stderr)
        return INTERRUPTED


def _partial_result(interrupt: KeyboardInterrupt, args: argparse.Namespace) -> str:
    """Where the evaluation that Ctrl-C stopped saved its finished cases, if it did."""
    report: EvaluationReport | None = getattr(interrupt, "report", None)
    if report is None or not report.result.eval_set_result_id:
        return ""
    folder = Path(args.output).resolve() / report.app_name
    return f"; the finished cases were saved as {report.result.eval_set_result_id} in {folder}"


if __name__ == "__main__":
    raise SystemExit(main())
