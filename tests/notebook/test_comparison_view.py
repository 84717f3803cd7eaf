"""Tests for the HTML views of a comparison: in Jupyter (``_repr_html_``) and as one self-contained page."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import agenteval as ae
from agenteval import EvalCase, EvalSet, EvaluationReport, Evaluator, Invocation, Message, SessionInput, Turn
from agenteval.aggregation import AggregationInput, AggregationResult
from agenteval.notebook._html import CSS
from agenteval.notebook.comparison_view import comparison_page
from tests.notebook.test_display import Folds, example_metrics, visible_text
from tests.notebook.test_html_export import Tags

HOSTILE_ID = "<script>alert('x & \"y\"')</script>" + " and a very long case id" * 8


def eval_set(eval_set_id: str = "set") -> EvalSet:
    def case(eval_id: str, a: int) -> EvalCase:
        conversation = [
            Invocation(
                user_content=Message.user(f"calc add {a} 1"), final_response=Message.assistant(f"calc result: {a + 1}")
            )
        ]
        return EvalCase(eval_id=eval_id, conversation=conversation, session_input=SessionInput(user_id="u"))

    return EvalSet(eval_set_id=eval_set_id, eval_cases=[case("steady", 1), case(HOSTILE_ID, 2), case("flip", 3)])


def agent(wrong: str) -> Callable[[str, Turn], str]:
    """The right sum, except for the case that adds ``wrong`` and 1."""

    def answer(message: str, turn: Turn) -> str:
        a = message.split()[2]
        return f"calc result: {int(a) + (2 if a == wrong else 1)}"

    return answer


def evaluate(wrong: str, eval_set_id: str = "set") -> EvaluationReport:
    metrics = [metric for metric in example_metrics() if metric.metric_name == "final_response_avg_score"]
    return Evaluator("app", agent(wrong)).evaluate(eval_set(eval_set_id), metrics=metrics)


@pytest.fixture(scope="module")
def comparison() -> ae.Comparison:
    """The hostile case regresses and ``flip`` is fixed."""
    return ae.compare(evaluate(wrong="3"), evaluate(wrong="2"))


def test_the_view_has_the_report_styling(comparison: ae.Comparison) -> None:
    markup = comparison._repr_html_()

    assert markup.startswith(f'<div class="agenteval"><style>{CSS}</style>')
    assert markup.count("<style>") == 1


def test_the_view_shows_counts_regressions_fixes_and_the_folded_tables(comparison: ae.Comparison) -> None:
    markup = comparison._repr_html_()
    text = visible_text(markup)

    assert "Cases: 1 fixed, 1 regressed, 1 unchanged" in text
    assert "Note:" not in text  # the same eval set
    regressions = markup[markup.index("<h4>Metric regressions (1)</h4>") : markup.index("<h4>Metric fixes (1)</h4>")]
    assert '<span class="ae-badge ae-passed">passed</span>' in regressions
    assert '<span class="ae-badge ae-failed">failed</span>' in regressions
    assert "<th>Case</th><th>Metric</th>" in regressions
    fixes = markup[markup.index("<h4>Metric fixes (1)</h4>") :]
    assert "<td>flip</td>" in fixes
    for name, rows in (("comparison.table", 3), ("comparison.cases", 3)):
        assert f'<details class="ae-fold"><summary><code>{name}</code> <span class="ae-muted">({rows} rows: ' in markup
    assert '<td class="ae-down">regressed</td>' in markup and '<td class="ae-up">fixed</td>' in markup


def test_long_cells_are_folded_and_escaped(comparison: ae.Comparison) -> None:
    markup = comparison._repr_html_()

    tags = Tags()
    tags.feed(markup)
    assert "script" not in {tag for tag, _ in tags.found}
    folds = Folds.of(markup)
    assert sum(fold.full == HOSTILE_ID for fold in folds) >= 3  # regressions, table, cases
    assert all(fold.preview == " ".join(HOSTILE_ID[:120].split()) + "…" for fold in folds)


def test_a_note_says_when_the_eval_sets_differ() -> None:
    with pytest.warns(ae.errors.EvalSetChangedWarning, match="different eval sets"):
        diff = ae.compare(evaluate(wrong="3"), evaluate(wrong="3", eval_set_id="other"))

    assert "the two reports evaluated different eval sets" in visible_text(diff._repr_html_())


def test_a_comparison_without_changes_says_so() -> None:
    report = evaluate(wrong="3")

    text = visible_text(ae.compare(report, report)._repr_html_())

    assert "Cases: 3 unchanged" in text
    assert "No case changed its status." in text
    assert "No metric regressions." in text and "No metric fixes." in text


def test_to_html_writes_one_self_contained_page(comparison: ae.Comparison, tmp_path: Path) -> None:
    path = comparison.to_html(tmp_path / "nested" / "diff.html")

    assert path == tmp_path / "nested" / "diff.html"
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<title>agenteval comparison: app / set</title>" in page
    assert page.count("<style>") == 1 and CSS in page
    assert '<div class="agenteval ae-page">' in page
    tags = Tags()
    tags.feed(page)
    found = {tag for tag, _ in tags.found}
    assert not {"script", "link", "iframe", "img", "object", "embed", "base"} & found
    ids = {value for _, attrs in tags.found for name, value in attrs if name == "id"}
    hrefs = [value for _, attrs in tags.found for name, value in attrs if name == "href"]
    assert hrefs and all((href or "").startswith("#") and (href or "")[1:] in ids for href in hrefs)
    for heading in ("Summary", "Cases whose status changed (2)", "Metric regressions (1)", "Metric fixes (1)", "Data"):
        assert f"<h2>{heading}</h2>" in page

    def strip(text: str) -> str:
        return re.sub(r"on \d{4}-\d\d-\d\d \d\d:\d\d UTC", "", text).strip()

    assert strip(page) == strip(comparison_page(comparison))


def test_showing_a_comparison_loads_the_views_only_then() -> None:
    code = (
        "import sys, agenteval\n"
        "assert 'agenteval.notebook.comparison_view' not in sys.modules\n"
        "assert 'agenteval.notebook._html' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_cases_whose_status_changed_come_first_regressions_before_fixes(comparison: ae.Comparison) -> None:
    markup = comparison._repr_html_()

    cases = markup[markup.index("<h4>Cases whose status changed (2)</h4>") : markup.index("<h4>Metric regressions")]
    assert "<th>Case</th><th>Change</th><th>Baseline</th><th>Candidate</th>" in cases
    assert '<td class="ae-down">regressed</td>' in cases and '<td class="ae-up">fixed</td>' in cases
    assert cases.index("regressed") < cases.index("<td>flip</td>")
    assert "steady" not in cases  # unchanged


def weighted(data: AggregationInput) -> AggregationResult:
    """Passes a case whose metric scores average at least 0.5 (across runs: each averaged over the runs)."""
    scores = [metric.score for metric in data.metric_results]
    score = sum(scores) / len(scores) if scores else 0.0
    return AggregationResult(score=score, status=ae.EvalStatus.PASSED if score >= 0.5 else ae.EvalStatus.FAILED)


def test_cases_fixed_by_another_aggregator_are_counted_and_listed_apart_from_metric_fixes() -> None:
    report = ae.Evaluator("app", agent(wrong="3"), num_runs=2).evaluate(
        eval_set(), metrics=[ae.EvalMetric.final_response(), ae.EvalMetric.tool_trajectory()]
    )
    diff = ae.compare(report, report.reaggregate(weighted))

    assert (
        repr(diff) == "Comparison(cases: 1 fixed, 0 regressed, 2 unchanged; metrics: 0 fixed, 0 regressed, 6 unchanged)"
    )
    assert len(diff.fixes) == 0 and len(diff.regressions) == 0
    markup = diff._repr_html_()
    cases = markup[markup.index("<h4>Cases whose status changed (1)</h4>") : markup.index("<h4>Metric regressions")]
    assert "<td>flip</td>" in cases and '<td class="ae-up">fixed</td>' in cases
    assert '<h4>Metric regressions (0)</h4><p class="ae-muted">No metric regressions.</p>' in markup
    assert '<h4>Metric fixes (0)</h4><p class="ae-muted">No metric fixes.</p>' in markup
    assert "Cases: 1 fixed, 2 unchanged" in visible_text(markup)
