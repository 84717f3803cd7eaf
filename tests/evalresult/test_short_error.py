"""``EvalCaseResult.short_error``: the saved message without the reference's prefix that repeats the row's ids."""

from __future__ import annotations

import pytest

import agenteval as ae
from agenteval.evalresult.models import EvalCaseResult

PREFIX = "inference eval case (evalCaseID=weather, sessionID=s-1): "


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        (PREFIX + "runner run: ValueError: no model (raised at agent.py:3 in agent)",
         "ValueError: no model (raised at agent.py:3 in agent)"),
        (PREFIX + "runner run: turn 2 timed out after 5 s (turn_timeout)", "turn 2 timed out after 5 s (turn_timeout)"),
        (PREFIX + "session input is nil", "session input is nil"),
        (PREFIX + "runner run: boom\nrun after inference case callbacks (app=a): quota",
         "boom\nrun after inference case callbacks (app=a): quota"),
        # Another case's or session's ids say something: kept.
        ("inference eval case (evalCaseID=other, sessionID=s-1): runner run: boom",
         "inference eval case (evalCaseID=other, sessionID=s-1): runner run: boom"),
        ("metric final_response_avg_score: judge failed", "metric final_response_avg_score: judge failed"),
        ("", ""),
    ],
)  # fmt: skip
def test_the_prefix_that_repeats_the_row_s_case_and_session_is_left_out(message: str, shown: str) -> None:
    result = EvalCaseResult(eval_id="weather", session_id="s-1", error_message=message)

    assert result.short_error == shown
    assert result.error_message == message  # the saved text stays the reference's


def test_an_agent_error_of_a_real_evaluation_reads_without_the_prefix() -> None:
    def agent(message: str) -> str:
        raise ValueError("no model")

    eval_set = ae.EvalSet.of("s", [ae.EvalCase.of("weather", "hi", expect="hi")])
    report = ae.Evaluator("app", agent, progress=False).evaluate(eval_set, metrics=[ae.EvalMetric.final_response()])

    (case,) = report.result.eval_case_results
    assert case.error_message.startswith(f"inference eval case (evalCaseID=weather, sessionID={case.session_id}): ")
    assert case.short_error.startswith("ValueError: no model (raised at ")
    assert "shortError" not in case.to_json() and "short_error" not in case.model_dump()
