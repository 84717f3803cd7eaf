"""Folding many statuses into one (``agenteval.status.summarize``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agenteval.errors import AgentEvalError
from agenteval.status import EvalStatus, summarize

P, F, N = EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ([], N),
        ([N], N),
        ([N, N], N),
        ([P], P),
        ([N, P, N], P),
        ([F], F),
        ([P, F, P], F),
        ([N, F], F),
        (["passed", "not_evaluated"], P),
        (["failed"], F),
        ([F, "garbage"], F),
        ([P, F, EvalStatus.UNKNOWN], F),
        ([F, None, ""], F),
    ],
)
def test_failed_wins_then_passed_then_not_evaluated(
    statuses: list[EvalStatus | str | None], expected: EvalStatus
) -> None:
    result = summarize(statuses)
    assert result is expected


@pytest.mark.parametrize(
    ("statuses", "message"),
    [
        ([EvalStatus.UNKNOWN], "unexpected eval status unknown"),
        (["unknown"], "unexpected eval status unknown"),
        ([P, ""], "unexpected eval status "),
        ([None], "unexpected eval status "),
        ([N, "great", F], "unexpected eval status great"),
        (["PASSED"], "unexpected eval status PASSED"),
    ],
)
def test_invalid_status_before_any_failure_is_an_error(statuses: list[EvalStatus | str | None], message: str) -> None:
    with pytest.raises(AgentEvalError) as info:
        summarize(statuses)
    assert str(info.value) == message


def test_failed_short_circuits_a_lazy_iterable() -> None:
    consumed: list[EvalStatus | str] = []

    def statuses() -> Iterator[EvalStatus | str]:
        for status in (P, F, "never-read"):
            consumed.append(status)
            yield status

    assert summarize(statuses()) is F
    assert consumed == [P, F]
