"""The command's arguments, and its help: plain text, laid out for a terminal."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from agenteval.evalresult.provenance import package_version
from agenteval.evaluation.options import DEFAULT_PARALLELISM

__all__ = ["DEFAULT_OUTPUT", "INTERRUPTED", "build_parser"]

DEFAULT_OUTPUT = "agenteval-results"
INTERRUPTED = 130
"""The exit status after Ctrl-C, as a shell reports a process ended by SIGINT (128 + 2)."""

_DESCRIPTION = """\
Evaluate an LLM agent on eval sets: run it on every case, score what it did with the eval
set's metrics, print a summary and save the result (in trpc-agent-go's file format).
Compare two results, or replay a bundled one offline. Without a command, runs the demo."""

_EXAMPLES = """\
examples:
  agenteval demo --num-runs 3
  agenteval run apps/my-app --agent my_package.agent:answer --strict --json > summary.json
  agenteval run apps/my-app --agent my_package.agent:answer --cache --bundle report.agenteval.zip
  agenteval compare baseline.agenteval.zip agenteval-results/my-app/<id>.evalset_result.json
  agenteval replay report.agenteval.zip"""

_EXIT_STATUS = {
    "demo": [("0", "it ran (its failing case is on purpose)")],
    "run": [("0", "every eval set ran and none failed"), ("1", "an eval set failed")],
    "compare": [("0", "both results were read and compared, whatever changed")],
    "replay": [("0", "every case run matches the bundle"), ("1", "a case run differs from it")],
}
"""What each command's own exit statuses mean."""

_COMMON_STATUS = [
    ("2", "bad arguments or configuration"),
    (str(INTERRUPTED), "interrupted (Ctrl-C); an evaluation saves its finished cases first"),
]
"""The exit statuses every command shares."""


def _exit_status(command: str) -> str:
    """One command's exit statuses, a line each."""
    return "\n".join(
        [
            "exit status:",
            *(f"  {code.ljust(3)}  {meaning}" for code, meaning in [*_EXIT_STATUS[command], *_COMMON_STATUS]),
        ]
    )


def _all_exit_statuses() -> str:
    """Every command's exit statuses, a line per command."""
    width = max(map(len, _EXIT_STATUS))

    def line(name: str, statuses: list[tuple[str, str]]) -> str:
        return f"  {name.ljust(width)}  {'; '.join(f'{code} {meaning}' for code, meaning in statuses)}"

    every = [line(name, statuses) for name, statuses in _EXIT_STATUS.items()]
    return "\n".join(["exit status:", *every, line("all", _COMMON_STATUS[:1]), line("", _COMMON_STATUS[1:])])


def build_parser() -> argparse.ArgumentParser:
    """The parser of the whole command line, a sub-parser per command."""
    parser = argparse.ArgumentParser(
        prog="agenteval",
        description=_DESCRIPTION,
        epilog=f"{_EXAMPLES}\n\n{_all_exit_statuses()}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"agenteval {package_version()}")
    commands = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")

    demo = _command(
        commands,
        "demo",
        "evaluate the bundled calculator agent on its eval set (the default)",
        "Evaluate the bundled calculator agent on its eval set: five cases, two metrics, one case\n"
        "the agent gets wrong on purpose.",
    )
    _evaluation_options(demo)

    run = _command(
        commands,
        "run",
        "evaluate the eval sets of an app directory against an agent",
        "Evaluate the eval sets of an app directory (<dir>/<set>.evalset.json, scored with\n"
        "<dir>/<set>.metrics.json) against an agent, and save each result under --output.",
    )
    run.add_argument("app_dir", type=Path, help="the app directory; its name is the app name")
    run.add_argument(
        "--agent",
        required=True,
        metavar="MODULE:FUNCTION",
        help="the agent, as package.module:function (the current directory is importable)",
    )
    run.add_argument(
        "--eval-set", action="append", default=[], metavar="ID", help="an eval set to run (repeatable; default: all)"
    )
    _evaluation_options(run)

    compare = _command(
        commands,
        "compare",
        "compare two results: what changed, and whether beyond noise",
        "Line two results of one eval set up case by case: the paired significance tests of the\n"
        "pass rates and of each metric's mean score (in a table and in words), then the cases\n"
        "whose status changed and the (case, metric) regressions and fixes.",
    )
    compare.add_argument("baseline", type=Path, help="the result to compare against: a result file or a bundle")
    compare.add_argument("candidate", type=Path, help="the new result: a result file or a bundle")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON instead")

    replay = _command(
        commands,
        "replay",
        "run a bundle again offline from its cassettes and check the results match",
        "Evaluate a bundle's eval set again with its metrics and settings, answering every HTTP\n"
        "request (the agent's, the judges', the simulated user's) from the cassettes it holds, and\n"
        "say case run by case run whether the results match the bundled ones. Nothing reaches\n"
        "the network. Without OPENAI_API_KEY, a placeholder key is set for the replay.",
    )
    replay.add_argument("bundle", type=Path, help="a bundle written with --bundle or report.bundle(path)")
    replay.add_argument(
        "--agent",
        metavar="MODULE:FUNCTION",
        help="the agent to run (default: the one the bundle names, if it can be imported and its code is the"
        " recorded code)",
    )
    return parser


def _command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], name: str, summary: str, description: str
) -> argparse.ArgumentParser:
    return commands.add_parser(
        name,
        help=summary,
        description=description,
        epilog=_exit_status(name),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _evaluation_options(command: argparse.ArgumentParser) -> None:
    runs = command.add_argument_group("running")
    runs.add_argument("--num-runs", type=int, default=1, metavar="N", help="run every case N times (default 1)")
    runs.add_argument(
        "--parallelism",
        type=int,
        default=DEFAULT_PARALLELISM,
        metavar="N",
        help=f"most cases run and scored at once (default {DEFAULT_PARALLELISM})",
    )
    runs.add_argument("--serial", action="store_true", help="run and score one case at a time")
    runs.add_argument(
        "--turn-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="fail a case whose agent takes longer than this for one turn (default: no limit)",
    )
    runs.add_argument(
        "--metrics",
        type=Path,
        metavar="FILE",
        help="score with the metrics in FILE (a JSON array, as in <set>.metrics.json) instead of each eval set's",
    )
    runs.add_argument(
        "--strict",
        action="store_true",
        help="for CI: refuse, before the agent runs, what is otherwise a warning: a metric whose evaluator is not"
        " registered, no metrics, a key no field takes in the eval set or metrics file",
    )
    reuse = command.add_argument_group("reusing work")
    reuse.add_argument(
        "--cache",
        nargs="?",
        const=True,
        metavar="DIR",
        help="take finished inferences and scores from the cache in DIR (default ./.agenteval-cache) and keep new"
        " ones there; without DIR, give it after the app directory",
    )
    reuse.add_argument(
        "--agent-version",
        default="",
        metavar="TEXT",
        help="part of the agent's identity in the cache and the result, for what its code does not show (a"
        " prompt file, a model name): change it to run the agent again",
    )
    reuse.add_argument(
        "--resume",
        metavar="RESULT_ID",
        help="carry on the interrupted evaluation whose partial result (in --output) has this id; one eval set",
    )
    reuse.add_argument(
        "--cassette",
        type=Path,
        metavar="DIR",
        help="record each case run's HTTP traffic (the agent's model calls, the judges') in DIR and replay what"
        " is recorded there; --bundle then takes it along for 'agenteval replay'",
    )
    output = command.add_argument_group("output")
    output.add_argument(
        "--output",
        default=DEFAULT_OUTPUT,
        metavar="DIR",
        help=f"directory for result files (default ./{DEFAULT_OUTPUT})",
    )
    output.add_argument(
        "--html", type=Path, metavar="FILE", help="also write the report as one HTML page; one eval set"
    )
    output.add_argument(
        "--bundle",
        type=Path,
        metavar="FILE",
        help="also write the report as one file to share (result, eval set, metrics, environment, HTML,"
        " cassettes), which 'compare' and 'replay' read; one eval set",
    )
    output.add_argument(
        "--json",
        action="store_true",
        help="print a summary for scripts (JSON) on stdout, and the table on stderr",
    )


def _seconds(text: str) -> float:
    """A positive, finite number of seconds, or an argparse error saying so."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return seconds
