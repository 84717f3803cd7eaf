"""``agenteval replay BUNDLE``: run a bundle again offline from its cassettes and say whether it matches."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator

from agenteval.cli._agent import importable_working_directory, load_agent
from agenteval.cli._output import one_line, say, table
from agenteval.evaluation.replay import ReplayOutcome, replay_bundle

__all__ = ["replay_command"]

PLACEHOLDER_KEY = "agenteval-replay-placeholder"
"""The OPENAI_API_KEY a replay sets when there is none: the cassettes answer, so no key is checked."""


def replay_command(args: argparse.Namespace) -> int:
    """Replay a bundle; 0 when every case run matches it, else 1."""
    if args.agent:
        agent = load_agent(args.agent)
    else:
        importable_working_directory()  # the bundled agent is imported by name, as --agent would be
        agent = None
    with _api_key_placeholder():
        outcome = replay_bundle(args.bundle, agent)
    say("\n".join(_outcome_text(outcome, args.bundle)))
    return 0 if outcome.matches else 1


@contextlib.contextmanager
def _api_key_placeholder() -> Iterator[None]:
    """Without OPENAI_API_KEY, a placeholder for the replay: the clients the agent and judges build need some key."""
    before = os.environ.get("OPENAI_API_KEY")
    if before:
        yield
        return
    say(
        "agenteval: OPENAI_API_KEY is not set; a placeholder is used for this replay (the cassettes answer every"
        " request, so no key is checked)",
        sys.stderr,
    )
    os.environ["OPENAI_API_KEY"] = PLACEHOLDER_KEY
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("OPENAI_API_KEY", None)
        else:
            os.environ["OPENAI_API_KEY"] = before


def _outcome_text(outcome: ReplayOutcome, bundle: object) -> list[str]:
    original = outcome.original
    differing = sum(1 for case in outcome.cases if not case.matches)
    lines = [
        f"replayed {bundle} (eval set {original.eval_set_id}, result {original.result_id}) offline from its cassettes",
        *table(
            [
                ["run", "case", "outcome"],
                *(
                    [
                        str(case.run_id),
                        case.eval_id,
                        "matches" if case.matches else f"differs: {one_line('; '.join(case.differences))}",
                    ]
                    for case in outcome.cases
                ),
            ]
        ),
    ]
    if outcome.same_agent_code is False:
        lines.append("the agent's code is not the code the bundle recorded (its code hash differs)")
    total = len(outcome.cases)
    if differing:
        lines.append(f"{differing} of {total} case run{'s' if total != 1 else ''} differ from the bundle")
    else:
        lines.append(f"all {total} case run{'s' if total != 1 else ''} match the bundle")
    return lines
