"""Evaluation statuses and the rule that folds many statuses into one."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from agenteval.errors import AgentEvalError

__all__ = ["EvalStatus", "summarize"]


class EvalStatus(StrEnum):
    """Outcome of a metric, a case, a run or a whole evaluation."""

    UNKNOWN = "unknown"
    """Never produced by agenteval; aggregation rejects it."""
    PASSED = "passed"
    FAILED = "failed"
    NOT_EVALUATED = "not_evaluated"


def summarize(statuses: Iterable[EvalStatus | str | None]) -> EvalStatus:
    """Fold statuses into one: any failed wins, else any passed, else not evaluated.

    An empty input is ``not_evaluated``. ``failed`` short-circuits, so a failure listed
    before an invalid status wins without error, as in the reference framework.

    Args:
        statuses: Statuses to fold, in order.

    Returns:
        The folded status.

    Raises:
        AgentEvalError: A status is ``unknown``, empty or not a status at all
            (``unexpected eval status <value>``).
    """
    seen_passed = False
    for status in statuses:
        if status == EvalStatus.FAILED:
            return EvalStatus.FAILED
        if status == EvalStatus.PASSED:
            seen_passed = True
        elif status != EvalStatus.NOT_EVALUATED:
            raise AgentEvalError(f"unexpected eval status {'' if status is None else status}")
    return EvalStatus.PASSED if seen_passed else EvalStatus.NOT_EVALUATED
