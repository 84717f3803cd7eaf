"""Flaky cases: how each case's outcome and trajectory vary across the runs of one evaluation."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Protocol, cast

from agenteval._util.gc_tuning import fewer_collections
from agenteval.analysis._frames import RunView
from agenteval.evalresult.models import EvalCaseResult
from agenteval.evalset.models import Invocation, Tool
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FLAKINESS_COLUMNS", "CaseRuns", "flakiness_frame"]

FLAKINESS_COLUMNS = ("eval_id", "runs", "passed_runs", "flip_rate", "score_std", "first_divergence", "category")
"""Columns of :attr:`~agenteval.EvaluationReport.flakiness`: one row per case across runs, in eval-set order.

A run *passed* when its own status (the row of :attr:`~agenteval.EvaluationReport.cases`) is
``passed``; a run that failed or errored did not pass. A run that was not evaluated (no metric could
score it) is left out of ``passed_runs``, ``flip_rate``, ``score_std`` and ``category``, as
``case_table``'s ``pass_rate`` leaves it out.

- ``runs``: the runs in which the case has a result (as ``num_runs`` in ``case_table``).
- ``passed_runs``: those that passed.
- ``flip_rate``: the share of consecutive run pairs (run 1 and 2, 2 and 3, …, not-evaluated runs left
  out) of which one passed and the other did not; ``0.0`` with one run. Passing runs 1 and 3 of three
  flips twice (``1.0``);
  passing runs 1 and 2 flips once (``0.5``): a high rate is an outcome that keeps changing.
- ``score_std``: the population standard deviation (``ddof=0``) of the runs' own case scores, the ones
  ``mean_score`` in ``case_table`` averages; ``0.0`` with one run, NaN when no run has a number.
- ``first_divergence``: where the recorded trajectories first differ, ``""`` when every run did the
  same. Each run is compared with the case's first run (run 1) turn by turn: the tool calls in call
  order (name and arguments), then the final reply once the calls agree. The earliest difference of
  any run is given, e.g. ``turn 2, tool 1: search(query="x") vs lookup(query="x") in run 2`` (run 1's
  call, then run 2's) or ``turn 1, reply: "Sunny" vs "Rain" in run 3``. A call of the same tool shows
  only the arguments that differ (``…`` stands for the others); long values are clipped. ``(no call)``
  and ``(no turn)`` mark a call or a turn one run has and the other does not (a run that failed
  before recording any turn has none). Tool results are not compared.
- ``category``: ``stable_pass`` when every evaluated run passed, ``stable_fail`` when none did (a case
  not evaluated in any run is one), ``flaky`` otherwise.
"""

_DTYPES: dict[str, Any] = {
    "eval_id": str,
    "runs": "int64",
    "passed_runs": "int64",
    "flip_rate": "float64",
    "score_std": "float64",
    "first_divergence": str,
    "category": str,
}

_MAX_VALUE = 40
"""Characters of one argument value shown in ``first_divergence``."""
_MAX_REPLY = 60
"""Characters of a reply shown in ``first_divergence``."""
_KEPT_PREFIX = 10
"""Characters of the shared beginning kept before the first difference of two long replies."""
_NO_CALL = "(no call)"
_NO_TURN = "(no turn)"


class CaseRuns(Protocol):
    """One case across runs (a :class:`~agenteval.analysis.report.CaseSummary`, or its row)."""

    @property
    def eval_id(self) -> str:
        """The case."""
        ...

    @property
    def runs(self) -> Sequence[RunView]:
        """The case's result in each run, or the rows of those results."""
        ...


@dataclass(frozen=True, slots=True, order=True)
class _Divergence:
    turn: int
    at_reply: bool
    call: int
    run_id: int
    text: str = ""


def flakiness_frame(
    cases: Sequence[CaseRuns], results: Callable[[int], Sequence[EvalCaseResult]] | None = None
) -> pd.DataFrame:
    """One row per case with its flakiness across runs (``FLAKINESS_COLUMNS``).

    Only ``first_divergence`` reads the turns, and only of a case with several runs (one run diverges
    from nothing): the other columns come from the runs' statuses and scores, which rows hold.

    Args:
        cases: Each case with its result, or the row of its result, in each run it ran in (at least one).
        results: The case results of the case at an index of ``cases``, asked for only for a case with
            several runs; by default its ``runs``, which then must be the case results.
    """
    rows = []
    for index, case in enumerate(cases):
        runs = sorted(case.runs, key=lambda run: run.run_id)
        divergence: _Divergence | None = None
        if len(runs) > 1:
            given = results(index) if results is not None else cast(Sequence[EvalCaseResult], case.runs)
            divergence = _first_divergence(sorted(given, key=lambda run: run.run_id))
        rows.append(_row(case.eval_id, runs, divergence))
    with fewer_collections():
        import pandas as pd

        return pd.DataFrame.from_records(rows, columns=list(FLAKINESS_COLUMNS)).astype(_DTYPES)


def _row(eval_id: str, runs: Sequence[RunView], divergence: _Divergence | None) -> dict[str, Any]:
    # A run no metric could score says nothing about passing: left out, as case_table's pass_rate does.
    decided = [run for run in runs if run.final_eval_status is not EvalStatus.NOT_EVALUATED]
    passed = [run.final_eval_status == EvalStatus.PASSED for run in decided]
    flips = sum(before != after for before, after in pairwise(passed))
    scores = [run.score for run in decided if math.isfinite(run.score)]
    return {
        "eval_id": eval_id,
        "runs": len(runs),
        "passed_runs": sum(passed),
        "flip_rate": flips / (len(passed) - 1) if len(passed) > 1 else 0.0,
        "score_std": _pstdev(scores),
        "first_divergence": divergence.text if divergence is not None else "",
        "category": "stable_pass" if passed and all(passed) else "flaky" if any(passed) else "stable_fail",
    }


def _pstdev(scores: Sequence[float]) -> float:
    """``statistics.pstdev``, NaN for no score; equal scores are 0.0 without its exact (and slow) arithmetic."""
    if not scores:
        return math.nan
    if all(score == scores[0] for score in scores):
        return 0.0
    return statistics.pstdev(scores)


def _first_divergence(runs: Sequence[EvalCaseResult]) -> _Divergence | None:
    first = _turns(runs[0])
    found = [_divergence(first, _turns(run), run.run_id) for run in runs[1:]]
    return min((divergence for divergence in found if divergence is not None), default=None)


def _turns(run: EvalCaseResult) -> list[Invocation | None]:
    return [turn.actual_invocation for turn in run.eval_metric_result_per_invocation]


def _divergence(
    first: Sequence[Invocation | None], other: Sequence[Invocation | None], run_id: int
) -> _Divergence | None:
    """Where ``other`` (run ``run_id``) first departs from ``first``, or ``None`` when it never does."""
    for number in range(1, max(len(first), len(other)) + 1):
        mine = first[number - 1] if number <= len(first) else None
        theirs = other[number - 1] if number <= len(other) else None
        if mine is None and theirs is None:
            continue
        mine_calls, their_calls = _calls(mine), _calls(theirs)
        for call in range(max(len(mine_calls), len(their_calls))):
            a = mine_calls[call] if call < len(mine_calls) else None
            b = their_calls[call] if call < len(their_calls) else None
            if a is None or b is None or a.name != b.name or a.arguments != b.arguments:
                left, right = _call_pair(a, b)
                left = left or (_NO_TURN if mine is None else _NO_CALL)
                right = right or (_NO_TURN if theirs is None else _NO_CALL)
                text = f"turn {number}, tool {call + 1}: {left} vs {right} in run {run_id}"
                return _Divergence(number, False, call, run_id, text)
        mine_reply, their_reply = _reply(mine), _reply(theirs)
        if mine_reply != their_reply:
            left, right = _reply_pair(mine_reply, their_reply)
            return _Divergence(number, True, 0, run_id, f"turn {number}, reply: {left} vs {right} in run {run_id}")
    return None


def _calls(invocation: Invocation | None) -> list[Tool]:
    return invocation.tools if invocation is not None else []


def _reply(invocation: Invocation | None) -> str | None:
    if invocation is None:
        return None
    return invocation.final_response.content if invocation.final_response is not None else ""


def _call_pair(a: Tool | None, b: Tool | None) -> tuple[str, str]:
    """Two differing calls as text (``""`` for a missing one); the same tool shows only the arguments that differ."""
    if (
        a is not None
        and b is not None
        and a.name == b.name
        and isinstance(a.arguments, dict)
        and isinstance(b.arguments, dict)
    ):
        keys = {key for key in {**a.arguments, **b.arguments} if a.arguments.get(key) != b.arguments.get(key)}
        return _call(a, keys), _call(b, keys)
    return (_call(a) if a is not None else ""), (_call(b) if b is not None else "")


def _call(tool: Tool, keys: set[str] | None = None) -> str:
    """``name(key=value, …)``: every argument, or only ``keys`` with ``…`` for the others."""
    arguments = tool.arguments
    if arguments is None:
        return f"{tool.name}()"
    if not isinstance(arguments, dict):
        return f"{tool.name}({_clip(_json(arguments), _MAX_VALUE)})"
    shown = [
        f"{key}={_clip(_json(value), _MAX_VALUE)}" for key, value in arguments.items() if keys is None or key in keys
    ]
    if keys is not None and len(shown) < len(arguments):
        shown.append("…")
    return f"{tool.name}({', '.join(shown)})"


def _reply_pair(a: str | None, b: str | None) -> tuple[str, str]:
    """Two differing replies as quoted text; a long shared beginning is cut, so that the difference stays in view."""
    skip = 0
    if a is not None and b is not None:
        shared = next((index for index, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        skip = shared - _KEPT_PREFIX if shared > _MAX_REPLY // 2 else 0
    return _quoted(a, skip), _quoted(b, skip)


def _quoted(reply: str | None, skip: int) -> str:
    if reply is None:
        return _NO_TURN
    return _clip(f'"…{_json(reply[skip:])[1:]}' if skip else _json(reply), _MAX_REPLY)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=repr)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
