"""The Evaluator's ``progress`` option wires the live progress display in."""

from __future__ import annotations

import pytest

import agenteval as ae
from agenteval.examples.math import APP_NAME, DATA_DIR, EVAL_SET_ID, calculator_agent


def _evaluator(**options: object) -> ae.Evaluator:
    return ae.Evaluator(
        APP_NAME,
        calculator_agent,
        eval_set_manager=ae.LocalEvalSetManager(DATA_DIR),
        metric_manager=ae.LocalMetricManager(DATA_DIR),
        **options,
    )


def test_progress_true_outside_a_kernel_writes_a_text_summary(capsys: pytest.CaptureFixture[str]) -> None:
    _evaluator(progress=True, num_runs=2).evaluate(EVAL_SET_ID)
    err = capsys.readouterr().err
    assert "math-eval-app / math-basic" in err
    assert "FAILED" in err
    assert "5 cases × 2 runs" in err or "5 cases x 2 runs" in err


def test_progress_is_silent_by_default_when_output_is_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    _evaluator().evaluate(EVAL_SET_ID)
    assert capsys.readouterr().err == ""


def test_progress_false_is_silent(capsys: pytest.CaptureFixture[str]) -> None:
    _evaluator(progress=False).evaluate(EVAL_SET_ID)
    assert capsys.readouterr().err == ""


def test_the_progress_displays_last_line_leaves_the_reports_records_unread(capsys: pytest.CaptureFixture[str]) -> None:
    # Counting the cases' statuses once read every case's record: seconds and hundreds of MiB at 20,000 cases.
    report = _evaluator(progress=True, num_runs=2).evaluate(EVAL_SET_ID)
    assert "5 cases × 2 runs" in capsys.readouterr().err
    assert "_unread_records" in report.__dict__
