"""The ``agenteval`` command: evaluate an app directory or the bundled demo, compare two results, replay a bundle.

:func:`main` parses the command line (:mod:`agenteval.cli._parser`) and runs the command:
``demo`` and ``run`` (:mod:`agenteval.cli._evaluate`), ``compare`` (:mod:`agenteval.cli._compare`) and
``replay`` (:mod:`agenteval.cli._replay`); it turns how the command ended into the exit status.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from agenteval.analysis.report import EvaluationReport
from agenteval.cli._compare import compare_command
from agenteval.cli._evaluate import demo_command, run_command
from agenteval.cli._output import say
from agenteval.cli._parser import INTERRUPTED, build_parser
from agenteval.cli._replay import replay_command
from agenteval.errors import AgentEvalError, report_of

__all__ = ["main"]

BROKEN_PIPE = 141
"""The exit status when the reader of stdout went away, as a shell reports a process ended by SIGPIPE (128 + 13)."""

_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "demo": demo_command,
    "run": run_command,
    "compare": compare_command,
    "replay": replay_command,
}


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
    say(warnings.formatwarning(message, category, filename, lineno, line).rstrip("\n"), file or sys.stderr)


def _main(argv: Sequence[str] | None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments or (arguments[0].startswith("-") and arguments[0] not in ("-h", "--help", "--version")):
        arguments.insert(0, "demo")
    args = build_parser().parse_args(arguments)
    return _exit_status(_COMMANDS[args.command], args)


def _exit_status(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run ``command`` and say how it ended, as the exit status and on stderr."""
    try:
        status = command(args)
        sys.stdout.flush()  # here, not at exit, so that a reader gone away is handled below
        return status
    except AgentEvalError as exc:
        say(f"agenteval: {exc}", sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:
        say(f"agenteval: interrupted{_partial_result(interrupt, args)}", sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:
        # The reader of stdout stopped reading (`agenteval run --json | head`): nothing more can be said
        # there, and Python's flush at exit must not print a traceback either.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE


def _partial_result(interrupt: KeyboardInterrupt, args: argparse.Namespace) -> str:
    """Where the evaluation that Ctrl-C stopped saved its finished cases, if it did."""
    report: EvaluationReport | None = report_of(interrupt)
    if report is None or not report.result_id:
        return ""
    folder = Path(args.output).resolve() / report.app_name
    return f"; the finished cases were saved as {report.result_id} in {folder}"
