"""Tests for the HTML views of a report: the summary, the side-by-side case view and the wrapper."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import pytest

from agenteval import (
    ConfigError,
    EvalCase,
    EvalMetric,
    EvalSet,
    EvaluationReport,
    Evaluator,
    Invocation,
    LocalEvalSetManager,
    LocalMetricManager,
    Message,
    NotFoundError,
    SessionInput,
    Tool,
    Turn,
)
from agenteval._async import run_sync
from agenteval.evalresult.models import EvalCaseResult, EvalMetricResult, EvalSetResult
from agenteval.examples.math import APP_NAME, DATA_DIR, EVAL_SET_ID, calculator_agent
from agenteval.examples.math.agent import calculator
from agenteval.notebook._html import fmt_duration
from agenteval.notebook.display import HTML, case_html, report_html
from agenteval.reanalysis import assemble_report
from agenteval.status import EvalStatus

HOSTILE = '<script>alert("owned")</script>'


def evaluate(agent: object, num_runs: int = 1) -> EvaluationReport:
    ev = Evaluator(
        APP_NAME,
        agent,  # type: ignore[arg-type]
        eval_set_manager=LocalEvalSetManager(DATA_DIR),
        metric_manager=LocalMetricManager(DATA_DIR),
        num_runs=num_runs,
    )
    return ev.evaluate(EVAL_SET_ID)


def sloppy_agent(message: str, turn: Turn) -> str:
    """The calculator, but it multiplies by 8 instead of 7 and crashes on division."""
    if "multiply 6 7" in message:
        turn.record_tool("calculator", {"operation": "multiply", "a": 6, "b": 8}, calculator("multiply", 6, 8))
        return "calc result: 48"
    if "divide" in message:
        raise RuntimeError("the divider broke")
    return calculator_agent(message, turn)


@pytest.fixture(scope="module")
def one_run() -> EvaluationReport:
    return evaluate(calculator_agent)


@pytest.fixture(scope="module")
def three_runs() -> EvaluationReport:
    return evaluate(calculator_agent, num_runs=3)


@pytest.fixture(scope="module")
def sloppy() -> EvaluationReport:
    return evaluate(sloppy_agent)


@pytest.fixture(scope="module")
def hostile() -> EvaluationReport:
    """A case whose id, message, expected reply and tool arguments all carry markup."""
    case = EvalCase(
        eval_id="evil<b>case</b>",
        conversation=[
            Invocation(
                user_content=Message.user(HOSTILE),
                final_response=Message.assistant("<img src=x onerror=alert(1)>"),
                tools=[Tool(name="<tool>", arguments={"q": HOSTILE})],
            )
        ],
        session_input=SessionInput(user_id="<u>"),
    )

    def agent(message: str, turn: Turn) -> str:
        turn.record_tool("<tool>", {"q": message + "!"})
        return f"echo {message}"

    eval_set = EvalSet(eval_set_id="set", eval_cases=[case])
    return Evaluator("app", agent).evaluate(eval_set, metrics=example_metrics())


def example_metrics() -> list[EvalMetric]:
    manager = LocalMetricManager(DATA_DIR)

    async def load() -> list[EvalMetric]:
        return [await manager.get(APP_NAME, EVAL_SET_ID, name) for name in await manager.list(APP_NAME, EVAL_SET_ID)]

    return run_sync(load())


def visible_text(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", re.sub(r"<style>.*?</style>", "", markup, flags=re.S)))


def test_summary_shows_status_metrics_and_the_failing_case_first(one_run: EvaluationReport) -> None:
    page = report_html(one_run)

    assert page.startswith('<div class="agenteval"><style>')
    assert '<span class="ae-badge ae-failed">failed</span>' in page
    assert "tool_trajectory_avg_score" in page
    assert "final_response_avg_score" in page
    assert "math-eval-app" in page and "math-basic" in page
    cases = page[page.index("Cases") :]
    assert cases.index("calc_power") < cases.index("calc_add") < cases.index("calc_follow_up")
    text = visible_text(cases)
    assert "final response mismatch" in text
    assert "Sorry, I cannot power" in text
    assert "80% (4/5)" in visible_text(page)
    # One run: neither per-run columns nor pass@k.
    assert "Run 1" not in page
    assert "pass@1" not in page


def test_multi_run_summary_shows_per_run_pass_rates_and_pass_at_1(three_runs: EvaluationReport) -> None:
    page = report_html(three_runs)
    text = visible_text(page)

    for run in (1, 2, 3):
        assert f"Run {run}</th>" in page
    assert "80% (12/15)" in text
    assert text.count("80% (4/5)") == 2 * 3
    assert "pass@1 0.00" in text
    assert "3 runs" in text
    assert "Runs passed" in page
    assert "0/3" in text and "3/3" in text


def test_summary_gives_a_case_error_as_its_reason(sloppy: EvaluationReport) -> None:
    text = visible_text(report_html(sloppy))

    assert "error: " in text
    assert "RuntimeError: the divider broke" in text
    assert text.index("calc_divide_by_zero") < text.index("calc_add")


def test_summary_truncates_long_reasons_and_limits_the_rows() -> None:
    def verbose(message: str, turn: Turn) -> str:
        return "x" * 2000

    report = evaluate(verbose)
    page = report_html(report, max_cases=2)

    assert "…</span>" in page
    assert 'title="' in page
    assert "x" * 2000 not in visible_text(page)
    assert "and 3 more cases" in page
    assert report_html(report, max_cases=None).count("ae-row-failed") > 2


def test_hostile_content_is_escaped_everywhere(hostile: EvaluationReport) -> None:
    for page in (report_html(hostile), case_html(hostile, "evil<b>case</b>")):
        assert "<script>" not in page
        assert "<img" not in page
        assert "<b>case" not in page
        assert "&lt;script&gt;" in page
        assert "evil&lt;b&gt;case&lt;/b&gt;" in page
    view = case_html(hostile, "evil<b>case</b>")
    assert "&lt;tool&gt;" in view
    assert HOSTILE in visible_text(view)


def test_case_view_shows_both_sides_and_marks_the_wrong_argument(sloppy: EvaluationReport) -> None:
    view = case_html(sloppy, "calc_multiply")

    assert '<div class="ae-colhead">Expected</div><div class="ae-colhead">Actual</div>' in view
    assert "calc multiply 6 7" in view
    # Final responses: both shown, the differing number marked on each side.
    assert 'calc result: <mark class="ae-hl">42</mark>' in view
    assert 'calc result: <mark class="ae-hl">48</mark>' in view
    # Tool arguments: the wrong value is marked, the matching ones are not.
    assert '<span class="ae-hl">&quot;b&quot;: 7</span>' in view
    assert '<span class="ae-hl">&quot;b&quot;: 8</span>' in view
    assert "  &quot;a&quot;: 6," in view
    assert '<span class="ae-hl">&quot;a&quot;' not in view
    assert "Tool call (differs)" in view
    # Each metric's verdict for the turn.
    assert "Metrics for turn 1" in view
    assert "arguments mismatch" in view
    assert view.count('<span class="ae-badge ae-failed">failed</span>') >= 3


def test_case_view_marks_a_tool_called_on_one_side_only(one_run: EvaluationReport) -> None:
    view = case_html(one_run, "calc_power")

    assert "Tool call (not in actual)" in view
    assert "ae-only" in view
    assert "— not called" in view
    assert "&quot;operation&quot;: &quot;power&quot;" in view


def test_case_view_of_a_passing_multi_turn_case(one_run: EvaluationReport) -> None:
    view = case_html(one_run, "calc_follow_up")

    assert "Turn 1" in view and "Turn 2" in view
    assert "now multiply it by 3" in view
    assert "Metrics for the case" in view
    assert 'class="ae-hl"' not in view
    assert "ae-cell ae-mismatch" not in view


def test_case_view_of_a_case_that_errored_shows_the_error_and_what_was_expected(sloppy: EvaluationReport) -> None:
    view = case_html(sloppy, "calc_divide_by_zero")

    assert "the divider broke" in view
    assert 'class="ae-error"' in view
    assert "calc divide 1 0" in view
    assert "calc error: division by zero" in view
    assert "— no response" in view


def test_case_view_shows_the_first_failing_run_by_default() -> None:
    calls = 0

    def flaky(message: str, turn: Turn) -> str:
        nonlocal calls
        if "add 2 3" in message:
            calls += 1
            if calls == 2:
                return "calc result: 6"
        return calculator_agent(message, turn)

    report = evaluate(flaky, num_runs=3)

    view = case_html(report, "calc_add")
    assert "showing run 2 (the first failing run)" in view
    assert '<span class="ae-run ae-run-failed ae-current">run 2 ✗</span>' in view
    assert '<span class="ae-run ae-run-passed">run 1 ✓</span>' in view
    assert 'calc result: <mark class="ae-hl">6</mark>' in view

    first = case_html(report, "calc_add", run_id=1)
    assert "showing run 1;" in first
    assert 'class="ae-hl"' not in first


def test_unknown_case_or_run_raises_not_found_listing_what_exists(one_run: EvaluationReport) -> None:
    with pytest.raises(NotFoundError, match="no case 'nope'.*'calc_add'.*'calc_power'"):
        case_html(one_run, "nope")
    with pytest.raises(NotFoundError, match="has no run 7; its runs are: 1"):
        case_html(one_run, "calc_add", run_id=7)


def test_style_block_can_be_left_out(one_run: EvaluationReport) -> None:
    assert "<style>" not in report_html(one_run, style=False)
    assert "<style>" not in case_html(one_run, "calc_add", style=False)


def test_html_wrapper_displays_in_jupyter_and_reads_as_text(one_run: EvaluationReport) -> None:
    markup = case_html(one_run, "calc_power")
    shown = HTML(markup)

    assert shown._repr_html_() == markup
    text = str(shown)
    assert repr(shown) == text
    assert "<" not in text.replace("< 1", "")
    assert "ae-badge" not in text and "font-family" not in text
    assert "Case calc_power" in text
    assert "calc power 2 10" in text
    assert "Metric | Score | Threshold | Status | Reason" in text
    assert HTML(markup) == shown and hash(HTML(markup)) == hash(shown)

    summary = str(HTML(report_html(one_run)))
    assert summary.splitlines()[0] == "failed Evaluation report"
    assert "failed | calc_power | 0.00 |" in summary


@pytest.fixture(autouse=True)
def _no_ipython_needed() -> Iterator[None]:
    """The views are plain strings: nothing here may import IPython."""
    import sys

    before = "IPython" in sys.modules
    yield
    assert ("IPython" in sys.modules) == before


def test_an_empty_report_says_so() -> None:
    report = Evaluator(APP_NAME, calculator_agent).evaluate(EvalSet(eval_set_id="empty"), metrics=[])

    text = visible_text(report_html(report))
    assert "No metric results." in text
    assert "No cases." in text
    assert "0 cases" in text


@pytest.mark.parametrize(
    ("seconds", "shown"), [(0.0123, "12 ms"), (3.14159, "3.1 s"), (59.94, "59.9 s"), (245.4, "4 min 05 s")]
)
def test_durations_read_naturally(seconds: float, shown: str) -> None:
    assert fmt_duration(seconds) == shown


def test_case_view_marks_an_unexpected_extra_call() -> None:
    def twice(message: str, turn: Turn) -> str:
        if "add 2 3" in message:
            turn.record_tool("lookup", {"q": "2+3"}, {"hits": 0})
        return calculator_agent(message, turn)

    view = case_html(evaluate(twice), "calc_add")

    assert "Tool call (not expected)" in view
    assert "— not expected" in view
    assert view.count('class="ae-cell ae-only"') == 1
    # The calculator call itself matches.
    assert '<span class="ae-label">Tool call</span>' in view


def scored_report(score: float, status: EvalStatus, *, execution_time: float = 0.0) -> EvaluationReport:
    """A one-case report built from a stored metric result, as a custom evaluator may leave it."""
    metric = EvalMetricResult(metric_name="strict_m", score=score, threshold=0.5, eval_status=status)
    case = EvalCaseResult(
        eval_set_id="s", eval_id="c", run_id=1, final_eval_status=status, overall_eval_metric_results=[metric]
    )
    report = assemble_report("app", None, EvalSetResult(eval_set_id="s", eval_case_results=[case]), [], [], 1)
    report.execution_time = execution_time
    return report


def test_a_failed_metric_above_its_threshold_is_not_shown_below_it() -> None:
    above = visible_text(report_html(scored_report(0.9, EvalStatus.FAILED)))
    below = visible_text(report_html(scored_report(0.2, EvalStatus.FAILED)))

    assert "strict_m (0.90, threshold 0.5)" in above
    assert "<" not in above.replace("strict_m (0.90, threshold 0.5)", "")
    assert "strict_m (0.20 < 0.5)" in below


def test_an_unknown_duration_reads_unknown_not_zero(three_runs: EvaluationReport) -> None:
    unknown = visible_text(report_html(scored_report(0.9, EvalStatus.PASSED)))
    known = visible_text(report_html(scored_report(0.9, EvalStatus.PASSED, execution_time=0.25)))
    derived = visible_text(report_html(three_runs.with_thresholds({})))

    assert "Duration unknown" in unknown
    assert "Duration 250 ms" in known
    assert "Duration unknown" not in derived and "Duration 0 ms" not in derived


def test_a_run_id_that_is_not_an_int_is_refused(three_runs: EvaluationReport) -> None:
    for bad in ("1", 1.0, True):
        with pytest.raises(ConfigError, match=rf"run_id must be an int, .*got {re.escape(repr(bad))} of type"):
            three_runs.show_case("calc_add", run_id=bad)  # type: ignore[arg-type]

    assert "showing run 2;" in str(three_runs.show_case("calc_add", run_id=2))
