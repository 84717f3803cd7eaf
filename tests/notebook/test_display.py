"""Tests for the HTML views of a report: the summary, the side-by-side case view and the wrapper."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser

import pytest

import agenteval as ae
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
from agenteval._util.sync_bridge import run_sync
from agenteval.evalresult.models import (
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultDetails,
    EvalMetricResultPerInvocation,
    EvalSetResult,
)
from agenteval.examples.math import APP_NAME, DATA_DIR, EVAL_SET_ID, calculator_agent
from agenteval.examples.math.agent import calculator
from agenteval.notebook._html import TEXT_LIMIT, clip, fmt_duration
from agenteval.notebook.display import HTML, case_html, report_html
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


@dataclass
class Fold:
    """A long text folded by the views: what shows (``preview``) and what one click unfolds (``full``)."""

    preview: str = ""
    full: str = ""


class Folds(HTMLParser):
    """The folded texts of some markup (``<details class="ae-clip">``), as text, and every tag met."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[Fold] = []
        self.tags: list[str] = []
        self._depth = 0  # <details> open inside the current fold
        self._in_summary = False

    @classmethod
    def of(cls, markup: str) -> list[Fold]:
        parser = cls()
        parser.feed(markup)
        parser.close()
        return parser.found

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "details" and self._depth:
            self._depth += 1
        elif tag == "details" and "ae-clip" in (dict(attrs).get("class") or "").split():
            self._depth = 1
            self.found.append(Fold())
        elif tag == "summary" and self._depth == 1:
            self._in_summary = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "details" and self._depth:
            self._depth -= 1
        elif tag == "summary" and self._in_summary:
            self._in_summary = False

    def handle_data(self, data: str) -> None:
        if self._depth and self._in_summary:
            self.found[-1].preview += data
        elif self._depth:
            self.found[-1].full += data


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
    # Per case, not per whole run: 4 of the 5 cases pass every run (no run passes as a whole set).
    assert "pass@1 (per case) 0.80" in text and "pass^3 (per case) 0.80" in text
    assert three_runs.set_pass_at_k(1) == 0.0
    assert "the chance that every one of 3 runs of a case passes" in page
    assert "3 runs" in text
    assert "<th class='ae-num'>Runs</th>" in page
    assert "passed 0/3 runs" in text and "passed 3/3 runs" in text


def test_summary_gives_a_case_error_as_its_reason(sloppy: EvaluationReport) -> None:
    text = visible_text(report_html(sloppy))

    assert "error: " in text
    assert "RuntimeError: the divider broke" in text
    assert text.index("calc_divide_by_zero") < text.index("calc_add")


def test_summary_folds_long_reasons_and_limits_the_rows() -> None:
    def verbose(message: str, turn: Turn) -> str:
        return "x" * 2000

    report = evaluate(verbose)
    page = report_html(report, max_cases=None)

    folds = Folds.of(page)
    assert folds, "no long reason was folded"
    for fold in folds:
        assert fold.preview.endswith("…")
        assert len(fold.preview) <= 241
        assert fold.full.startswith(fold.preview[:-1])
    one_turn = report.metrics[report.metrics["eval_id"] != "calc_follow_up"]
    reasons = [reason for reason in one_turn["reason"] if len(reason) > 240]
    assert reasons
    assert all(any(reason in fold.full for fold in folds) for reason in reasons)  # one click away
    assert "and 3 more cases" in report_html(report, max_cases=2)
    assert page.count("ae-row-failed") > 2


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
    report = EvaluationReport.from_result(EvalSetResult(eval_set_id="empty"), app_name=APP_NAME)

    text = visible_text(report_html(report))
    assert "No metric results." in text
    assert "No cases." in text
    assert "0 cases" in text


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0.0003, "<1 ms"), (0.0123, "12 ms"), (3.14159, "3.1 s"), (59.94, "59.9 s"), (245.4, "4 min 05 s")],
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
    report = EvaluationReport.from_result(EvalSetResult(eval_set_id="s", eval_case_results=[case]), app_name="app")
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


def test_a_folded_text_keeps_markup_quotes_and_ampersands_as_text() -> None:
    text = '<script>alert("x & y")</script> \'single\' & "double" &amp; ' * 20
    parser = Folds()
    parser.feed(clip(text, 50))
    parser.close()

    assert parser.tags == ["details", "summary", "span"]  # nothing from the text became a tag
    [fold] = parser.found
    assert fold.full == text
    assert fold.preview == " ".join(text[:50].split()) + "…"
    assert clip("a<b & 'c'", 50) == "a&lt;b &amp; &#x27;c&#x27;"  # short: no fold


def test_a_huge_text_is_bounded_and_says_how_much_was_left_out() -> None:
    [fold] = Folds.of(clip("y" * (TEXT_LIMIT + 123), 10))

    assert fold.full == "y" * TEXT_LIMIT + "\n… [123 bytes more; full text in the saved result]"


def test_text_rendering_shows_a_folded_text_once_in_full() -> None:
    long = "word " * 100

    text = str(HTML(f"<table><tr><td>a</td><td>{clip(long, 20)}</td></tr></table>"))

    assert text == "a | " + long.strip()


SHARED = 'the agent raised <RuntimeError> & "gave up"'


def shared_reason_report() -> EvaluationReport:
    """Two runs of one case whose three metrics fail for the same reason, and a fourth for its own."""

    def metric(name: str, reason: str) -> EvalMetricResult:
        details = EvalMetricResultDetails(reason=reason)
        return EvalMetricResult(
            metric_name=name, score=0.0, threshold=1.0, eval_status=EvalStatus.FAILED, details=details
        )

    runs = [
        EvalCaseResult(
            eval_set_id="s",
            eval_id="c",
            run_id=run,
            final_eval_status=EvalStatus.FAILED,
            overall_eval_metric_results=[
                metric("m_one", SHARED),
                metric("m_own", "too short"),
                metric("m_two", SHARED),
                metric("m_three", SHARED),
            ],
        )
        for run in (1, 2)
    ]
    return EvaluationReport.from_result(EvalSetResult(eval_set_id="s", eval_case_results=runs), app_name="app")


def test_the_summary_shows_a_reason_shared_by_several_metrics_once_naming_them() -> None:
    text = visible_text(report_html(shared_reason_report()))

    assert text.count(SHARED) == 1
    assert f"m_one (0.00 < 1), m_two (0.00 < 1), m_three (0.00 < 1) [run 1, 2]: {SHARED}" in text
    assert "m_own (0.00 < 1) [run 1, 2]: too short" in text


def test_the_case_view_shows_a_reason_shared_by_several_metrics_once_next_to_all_of_them() -> None:
    view = case_html(shared_reason_report(), "c")

    assert visible_text(view).count(SHARED) == 1
    assert f'<td rowspan="3"><div class="ae-reason">{html.escape(SHARED)}</div></td>' in view
    rows = re.findall(r"<tr class=\"ae-row-failed\"><td class=\"ae-id\">(\w+)</td>", view)
    assert rows == ["m_one", "m_two", "m_three", "m_own"]  # the metrics sharing it are its rows


def test_the_case_view_folds_long_replies_tool_arguments_and_reasons() -> None:
    reply = 'A long reply <with markup> & "quotes". ' * 40
    note = "keep it exact & 'careful' " * 40

    def wordy(message: str, turn: Turn) -> str:
        if "multiply" in message:
            turn.record_tool("calculator", {"operation": "multiply", "a": 6, "b": 7, "note": note})
            return reply
        return calculator_agent(message, turn)

    report = evaluate(wordy)
    view = case_html(report, "calc_multiply")
    folds = Folds.of(view)

    assert any(fold.full == reply for fold in folds)
    assert any(note in fold.full and fold.preview.startswith('{"operation": "multiply"') for fold in folds)
    reason = next(r for r in report.metrics["reason"] if r.startswith("final response mismatch"))
    assert any(fold.full == reason for fold in folds)
    assert all(len(fold.preview) <= 301 for fold in folds)
    # Short texts stay as they are.
    assert "calc multiply 6 7" in view and "calc multiply 6 7" not in "".join(fold.full for fold in folds)


def test_the_case_view_does_not_show_a_result_the_expected_call_does_not_state() -> None:
    def agent(message: str, turn: Turn) -> str:
        turn.record_tool("get_weather", {"city": "Paris"}, {"sky": "sunny"})
        return "Sunny"

    eval_set = ae.EvalSet.of(
        "weather",
        [
            ae.EvalCase.of(
                "paris", "Weather?", expect="Sunny", tools=[ae.Tool(name="get_weather", arguments={"city": "Paris"})]
            )
        ],
    )
    report = ae.Evaluator("app", agent, progress=False).evaluate(eval_set, metrics=[ae.EvalMetric.tool_trajectory()])
    view = case_html(report, "paris")

    assert "Tool call (differs)" not in view and "ae-cell ae-mismatch" not in view
    assert view.count('<span class="ae-label">result</span>') == 1  # the actual call's result only
    assert "null" not in view


def flaky_add(passing_runs: set[int]) -> Callable[[str, Turn], str]:
    """The calculator, except that ``calc add 2 3`` is answered wrong in the runs not in ``passing_runs``."""
    calls = 0

    def agent(message: str, turn: Turn) -> str:
        nonlocal calls
        if "add 2 3" in message:
            calls += 1
            if calls not in passing_runs:
                return "calc result: 6"
        return calculator_agent(message, turn)

    return agent


@pytest.fixture(scope="module")
def passed_once() -> EvaluationReport:
    """Three runs; ``calc_add`` passes in run 1 only, so its overall score (0) is not its mean run score (0.33)."""
    return evaluate(flaky_add({1}), num_runs=3)


def case_row(page: str, eval_id: str) -> str:
    """The visible text of the summary's row of one case."""
    [row] = [row for row in page.split("<tr") if f'<td class="ae-id">{eval_id}</td>' in row]
    return visible_text("<tr" + row)


def test_the_summary_score_is_the_case_tables_and_the_runs_passed_are_labelled(passed_once: EvaluationReport) -> None:
    table = passed_once.case_table.set_index("eval_id")
    assert table.loc["calc_add", "score"] == 0.0 and table.loc["calc_add", "mean_score"] == pytest.approx(1 / 3)

    page = report_html(passed_once)

    assert "<th>Overall status</th><th>Case</th><th class='ae-num'>Overall score</th>" in page
    assert case_row(page, "calc_add").startswith("failedcalc_add0.00passed 1/3 runs")
    assert "0.33" not in case_row(page, "calc_add")
    assert case_row(page, "calc_multiply").startswith("passedcalc_multiply1.00passed 3/3 runs")
    assert "the case aggregator's verdict across the runs" in visible_text(page)


def test_with_one_run_the_summary_shows_the_score_without_run_counts(one_run: EvaluationReport) -> None:
    page = report_html(one_run)

    assert "<th>Status</th><th>Case</th><th class='ae-num'>Score</th><th>Reason</th>" in page
    assert "runs" not in case_row(page, "calc_add")


def test_the_case_head_labels_the_overall_status_and_the_shown_runs() -> None:
    # calc_add fails run 2 and passes overall: its metrics, averaged over the runs (0.67), reach 0.5.
    thresholds = {"tool_trajectory_avg_score": 0.5, "final_response_avg_score": 0.5}
    report = evaluate(flaky_add({1, 3}), num_runs=3).with_thresholds(thresholds)
    assert report.case_table.set_index("eval_id").loc["calc_add", "status"] == "passed"

    text = visible_text(case_html(report, "calc_add"))

    assert "Case calc_add overall: passed run 2: failed" in text
    assert "overall score 1.00" in text and "run 2 score 0.00" in text
    assert "across runs" not in text
    assert "Case calc_add overall: passed run 1: passed" in visible_text(case_html(report, "calc_add", run_id=1))


def test_with_one_run_the_case_head_shows_one_status(sloppy: EvaluationReport) -> None:
    text = visible_text(case_html(sloppy, "calc_multiply"))

    assert "failed Case calc_multiply" in text
    assert "overall" not in text and "run 1:" not in text


def follow_up_fails(message: str, turn: Turn) -> str:
    """The calculator, but the follow-up's second turn answers wrong."""
    if "multiply it by 3" in message:
        turn.record_tool("calculator", {"operation": "multiply", "a": 15, "b": 3}, calculator("multiply", 15, 3))
        return "calc result: 46"
    return calculator_agent(message, turn)


def test_the_case_metrics_name_their_run_and_do_not_repeat_the_turns_reasons() -> None:
    report = evaluate(follow_up_fails, num_runs=2)

    view = case_html(report, "calc_follow_up")
    text = visible_text(view)

    assert "<h4>Metrics for the case, run 1</h4>" in view
    assert "<h4>Metrics for the case, run 2</h4>" in case_html(report, "calc_follow_up", run_id=2)
    reason = 'final response mismatch: text mismatch: actual "calc result: 46" and expected "calc result: 45"'
    assert text.count(reason) == 1  # in turn 2's table only
    case_table = view[view.index("Metrics for the case") : view.index("Turn 1")]
    assert "see turn 2 below" in visible_text(case_table)
    assert "<h4>Metrics for the case</h4>" in case_html(evaluate(follow_up_fails), "calc_follow_up")


def two_turn_report(case_reason: str) -> EvaluationReport:
    """One run of a two-turn case whose metric failed turn 2 (``"off by one"``), with ``case_reason`` overall."""

    def metric(score: float, reason: str) -> EvalMetricResult:
        status = EvalStatus.PASSED if score >= 1 else EvalStatus.FAILED
        details = EvalMetricResultDetails(reason=reason)
        return EvalMetricResult(metric_name="m", score=score, threshold=1.0, eval_status=status, details=details)

    turns = [
        EvalMetricResultPerInvocation(eval_metric_results=[metric(1.0, "")]),
        EvalMetricResultPerInvocation(eval_metric_results=[metric(0.0, "off by one")]),
    ]
    case = EvalCaseResult(
        eval_set_id="s",
        eval_id="c",
        run_id=1,
        final_eval_status=EvalStatus.FAILED,
        overall_eval_metric_results=[metric(0.5, case_reason)],
        eval_metric_result_per_invocation=turns,
    )
    return EvaluationReport.from_result(EvalSetResult(eval_set_id="s", eval_case_results=[case]), app_name="app")


def test_the_case_metrics_show_a_reason_that_says_more_than_the_turns() -> None:
    joined = visible_text(case_html(two_turn_report(";off by one"), "c"))
    own = visible_text(case_html(two_turn_report("1 of 2 turns failed: off by one"), "c"))

    assert joined.count("off by one") == 1 and "see turn 2 below" in joined
    assert "1 of 2 turns failed: off by one" in own and "see turn" not in own
