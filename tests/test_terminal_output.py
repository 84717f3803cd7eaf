"""What reaches a terminal: ids and messages from files and agents cannot hide or rewrite what it shows.

The command line's own output is tested in ``test_cli.py``; here, the one escaping helper, and the text
progress bar, which the command line (and any script on a terminal) shows while it runs.
"""

from __future__ import annotations

import io
import logging
import re
import sys

import pytest

import agenteval as ae
from agenteval._util.terminal import printable
from agenteval.context import EvalContext
from agenteval.evalresult.inference import InferenceResult
from agenteval.notebook.progress import TextProgress
from agenteval.service.callbacks import (
    AfterInferenceCaseArgs,
    AfterInferenceSetArgs,
    BeforeInferenceCaseArgs,
    BeforeInferenceSetArgs,
)
from agenteval.service.types import InferenceRequest
from agenteval.status import EvalStatus

UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""Control characters (C0, DEL, C1) and the bidi embeddings, overrides and isolates."""

HIDING_ID = "c\x1b[8mHIDDEN"
ERASING_ERROR = "boom\x1b[2K\rall is well\u202e\x9b\nsecond line"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("c\x1b[8mHIDDEN", "c\\x1b[8mHIDDEN"),
        ("a\rb\x00c\x7fd", "a\\rb\\x00c\\x7fd"),
        ("csi\x9b2K nel\x85", "csi\\x9b2K nel\\x85"),
        ("\u202aLRE \u202bRLE \u202cPDF \u202dLRO \u202eRLO", "\\u202aLRE \\u202bRLE \\u202cPDF \\u202dLRO \\u202eRLO"),
        ("\u2066LRI \u2067RLI \u2068FSI \u2069PDI", "\\u2066LRI \\u2067RLI \\u2068FSI \\u2069PDI"),
        ("tab\tnew\nline", "tab\\tnew\\nline"),
    ],
)
def test_control_and_bidi_characters_are_shown_as_their_escapes(text: str, shown: str) -> None:
    assert printable(text) == shown


def test_text_that_is_already_safe_is_left_as_it_is() -> None:
    text = "café — 数学 ✓ █×· \\x1b (a backslash stays)"

    assert printable(text) is text


def test_lines_keep_their_newlines_and_tabs_but_not_a_carriage_return() -> None:
    assert printable("one\n\ttwo\r\x1b[2Kthree", lines=True) == "one\n\ttwo\\r\\x1b[2Kthree"


class TtyStringIO(io.StringIO):
    def isatty(self) -> bool:
        return True


def drive(bar: TextProgress) -> None:
    """One run: case ``HIDING_ID`` is still running when another fails with ``ERASING_ERROR``, the run stops on it."""
    context = EvalContext()

    def call(point: str, args: object) -> None:
        for named in getattr(bar.callbacks(), point):
            named.callback(context, args)

    request = InferenceRequest(app_name="app", eval_set_id="s\x1b]0;title\x07", run_id=1)
    failed = InferenceResult(
        app_name="app",
        eval_set_id=request.eval_set_id,
        eval_case_id="other\u2067",
        run_id=1,
        status=EvalStatus.FAILED,
        error_message=ERASING_ERROR,
    )
    bar.start(title=request.eval_set_id, num_runs=1, cases_per_run=2, metric_names=["metric\u202e"])
    call("before_inference_set", BeforeInferenceSetArgs(request=request))
    for eval_id in (HIDING_ID, failed.eval_case_id):
        call("before_inference_case", BeforeInferenceCaseArgs(request=request, eval_case_id=eval_id, session_id=""))
    call("after_inference_case", AfterInferenceCaseArgs(request=request, result=failed, error=None, start_time=0))
    error = RuntimeError(ERASING_ERROR)
    call("after_inference_set", AfterInferenceSetArgs(request=request, results=None, error=error, start_time=0))
    bar.finish(error=error)


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "log"])
def test_the_text_bar_shows_hostile_ids_and_errors_escaped(terminal: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    stream = TtyStringIO() if terminal else io.StringIO()
    bar = TextProgress(stream, width=1000, min_interval=0, refresh=None)

    drive(bar)

    output = stream.getvalue()
    # The bar's own redraws and colours are the only control characters it may write.
    own = re.sub("\r|\n|\x1b\\[(31|32|0)m", "", output)
    assert not UNSAFE.search(own), output
    assert "s\\x1b]0;title\\x07" in output
    assert "metric\\u202e" in output
    assert "boom\\x1b[2K\\rall is well\\u202e\\x9b\\nsecond line" in output
    if terminal:
        assert "waiting on c\\x1b[8mHIDDEN (run 1 inference" in output


def screen(output: str) -> list[str]:
    """The lines a terminal shows for ``output``: a carriage return goes back to the line's start and overwrites."""
    lines = []
    for raw in output.split("\n"):
        shown = ""
        for part in raw.split("\r"):
            shown = part + shown[len(part) :]
        lines.append(shown.rstrip())
    return lines


def test_ctrl_c_ends_the_bar_before_the_message_and_says_once_which_run_was_cancelled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.test_evaluation import APP, SET, echo, fill, final_response, make_case

    calls = 0

    def agent(text: str) -> str:
        nonlocal calls
        calls += 1
        if calls == 4:  # the first case of run 2
            raise KeyboardInterrupt
        return echo(text)

    monkeypatch.setenv("NO_COLOR", "1")
    stream = TtyStringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    handler = logging.StreamHandler(stream)
    logging.getLogger("agenteval").addHandler(handler)
    ev = ae.Evaluator(APP, agent, eval_set_manager=fill([make_case("a"), make_case("b"), make_case("c")]))
    try:
        with pytest.raises(KeyboardInterrupt):
            ev.evaluate(SET, metrics=[final_response()], num_runs=3, progress=True)
    finally:
        logging.getLogger("agenteval").removeHandler(handler)

    lines = screen(stream.getvalue())
    assert [line for line in lines if line.startswith("run 2/3 ")] == [
        "run 2/3 cancelled: 0 cases, 0 passed, 0 failed, 0 errors · 0.0 s · cancelled"
    ]
    stopped = [line for line in lines if "stopped by" in line]
    assert len(stopped) == 1
    assert stopped[0].startswith("evaluation of set stopped by cancellation"), stopped
    assert lines[-2].startswith("INTERRUPTED app / set: 3 of 9 case runs")


def test_a_log_record_mid_run_clears_the_bar_which_is_drawn_again_below_it() -> None:
    stream = TtyStringIO()
    bar = TextProgress(stream, width=200, min_interval=0, refresh=None)
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("agenteval")
    logger.addHandler(handler)
    try:
        bar.start(title="set", num_runs=1, cases_per_run=2, metric_names=[])
        request = InferenceRequest(app_name="app", eval_set_id="set", run_id=1)
        callbacks = bar.callbacks()
        callbacks.before_inference_set[0].callback(EvalContext(), BeforeInferenceSetArgs(request=request))
        logger.warning("the event loop is blocked")
        done = InferenceResult(app_name="app", eval_set_id="set", eval_case_id="a", run_id=1, status=EvalStatus.PASSED)
        after = AfterInferenceCaseArgs(request=request, result=done, error=None, start_time=0)
        callbacks.after_inference_case[0].callback(EvalContext(), after)
        bar.finish()
    finally:
        logger.removeHandler(handler)

    assert bar._clear_before_message not in logger.filters  # finished, the bar no longer listens

    output = stream.getvalue()
    assert "the event loop is blocked" in screen(output)
    # The bar is drawn again on the line below the message (where the final line later replaces it).
    assert output.split("the event loop is blocked\n")[1].startswith("\rset |")
