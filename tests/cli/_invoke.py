"""Run the command in-process and read what it printed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agenteval._util.sync_bridge import run_sync
from agenteval.cli import main
from agenteval.evalset.local import LocalEvalSetManager
from agenteval.evalset.models import EvalCase
from agenteval.metric.local import LocalMetricManager
from agenteval.metric.models import EvalMetric


@dataclass(frozen=True, slots=True)
class Ran:
    """How a command ended and what it printed."""

    status: int
    out: str
    err: str

    def json(self) -> Any:
        """Stdout as one JSON document: fails if anything else is there."""
        return json.loads(self.out)


def run_cli(argv: Sequence[str], capsys: pytest.CaptureFixture[str]) -> Ran:
    """Run ``agenteval ARGV``; an argparse exit counts as its status."""
    capsys.readouterr()
    try:
        status = main(list(argv))
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return Ran(status, captured.out, captured.err)


def write_app(base: Path, app: str, cases: dict[str, list[EvalCase]], metrics: Sequence[EvalMetric]) -> Path:
    """``<base>/<app>/<set>.evalset.json`` for each set of ``cases``, each scored by ``metrics``; the app directory."""

    async def write() -> None:
        sets, stored = LocalEvalSetManager(base), LocalMetricManager(base)
        for eval_set_id, set_cases in cases.items():
            await sets.create(app, eval_set_id)
            for case in set_cases:
                await sets.add_case(app, eval_set_id, case)
            for metric in metrics:
                await stored.add(app, eval_set_id, metric)

    run_sync(write())
    return base / app
