"""The notebook's views of a report read only the records of the cases they show in full.

A fresh report and one loaded from a result file hold each case result's outcome and scores;
reading every record takes seconds for thousands of cases. ``_repr_html_`` must read the records of
the cases whose reasons its case table shows (at most ``max_cases``) and ``show_case`` those of its
case, and both must show exactly what the same report shows once it has read its records.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

import agenteval as ae
from agenteval.evalresult.models import EvalCaseResult
from agenteval.notebook import html_export
from agenteval.notebook.display import report_html
from agenteval.notebook.html_export import report_page
from tests.analysis.weather_cases import METRICS, weather_cases

APP = "lazy-views-app"
NUM_GENERATED = 60
NAMED = ["trip", "paris", "boom", "rome"]
"""A three-turn case half right, a passing one, one whose agent raises, and a failing one."""

CASES = weather_cases(
    "lazy-views-set", *(ae.EvalCase.of(f"case-{i:02d}", f"Echo {i}", expect=f"echo {i}") for i in range(NUM_GENERATED))
)


def _agent() -> Callable[[str], str]:
    """An agent that raises on ``boom``, is wrong about Rome and Oslo, and wrong on every third echo's first call."""
    calls: dict[str, int] = {}

    def agent(message: str) -> str:
        if "Explode" in message:
            raise RuntimeError("the agent blew <up> & stopped")
        if message.startswith("Echo"):
            number = int(message.split()[1])
            calls[message] = calls.get(message, 0) + 1
            return "no idea" if number % 3 == 0 and calls[message] == 1 else f"echo {number}"
        return "Sunny" if "Paris" in message else "Rain"

    return agent


def _evaluated(num_runs: int) -> ae.EvaluationReport:
    return ae.Evaluator(APP, _agent(), progress=False, num_runs=num_runs).evaluate(CASES, metrics=METRICS)


def _read(report: ae.EvaluationReport) -> bool:
    """Whether the report has read its records."""
    return "_unread_records" not in report.__dict__


@pytest.fixture(scope="module", params=[1, 2], ids=["one-run", "two-runs"])
def num_runs(request: pytest.FixtureRequest) -> int:
    runs: int = request.param
    return runs


@pytest.fixture(scope="module")
def saved(num_runs: int, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A result file an evaluation of ``CASES`` wrote (failures, reasons, an agent error)."""
    report = _evaluated(num_runs)
    directory = tmp_path_factory.mktemp("results")
    result_id = report.save(ae.LocalEvalResultManager(directory))
    return directory / APP / f"{result_id}.evalset_result.json"


@pytest.fixture(params=["evaluated", "loaded"])
def kind(request: pytest.FixtureRequest) -> str:
    """How the report was made: by an evaluation, or loaded from a result file."""
    made: str = request.param
    return made


@pytest.fixture
def report(kind: str, num_runs: int, saved: Path) -> ae.EvaluationReport:
    """A report that has not read its records: fresh from an evaluation, or loaded from ``saved``."""
    made = _evaluated(num_runs) if kind == "evaluated" else ae.EvaluationReport.load(saved)
    assert not _read(made)
    return made


def _case_view(report: ae.EvaluationReport, eval_id: str, run_id: int | None = None) -> str:
    return report.show_case(eval_id, run_id)._repr_html_()


SCORED = ["trip", "paris", "rome", "case-00", "case-01"]
"""Cases whose runs were all scored (``boom``'s agent raised, so its expected turns come from the eval set)."""


# ------------------------------------------------------------------ the summary


def test_the_summary_reads_no_record_it_does_not_show_and_is_the_read_reports(report: ae.EvaluationReport) -> None:
    lazy = report._repr_html_()
    assert not _read(report)
    assert "the agent blew &lt;up&gt; &amp; stopped" in lazy  # the agent error's reason, read from its record
    assert "… and 14 more cases" in lazy  # 64 cases, 50 rows

    report.result  # noqa: B018 - reads the records
    assert _read(report)
    assert report._repr_html_() == lazy


def test_the_summary_of_every_case_is_the_read_reports(report: ae.EvaluationReport) -> None:
    lazy = report_html(report, max_cases=None, link_cases=True, style=False)
    assert not _read(report)

    report.result  # noqa: B018 - reads the records
    assert report_html(report, max_cases=None, link_cases=True, style=False) == lazy


def test_the_summary_reads_the_records_of_the_shown_cases_with_a_reason_only(
    report: ae.EvaluationReport, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    case_results = ae.EvaluationReport.case_results

    def spy(self: ae.EvaluationReport, eval_id: str) -> list[EvalCaseResult]:
        asked.append(eval_id)
        return case_results(self, eval_id)

    monkeypatch.setattr(ae.EvaluationReport, "case_results", spy)
    page = report_html(report, max_cases=5)

    assert not _read(report)
    shown = re.findall(r'<td class="ae-id">([^<]+)</td><td class="ae-num">', page.split("<h4>Cases")[1])
    assert len(shown) == 5 and "… and 59 more cases" in page
    # Failing first: each shown case failed, so has a reason, read from its records alone.
    assert all(report.case_statuses[eval_id] is ae.EvalStatus.FAILED for eval_id in shown)
    assert sorted(asked) == sorted(shown)

    asked.clear()
    report._repr_html_()
    assert not _read(report)
    assert 0 < len(asked) <= 50


# ------------------------------------------------------------------ one case


def test_a_case_view_reads_only_its_case_and_is_the_read_reports(report: ae.EvaluationReport) -> None:
    runs: list[int | None] = [None, *range(1, report.num_runs + 1)]
    lazy = {(eval_id, run): _case_view(report, eval_id, run) for eval_id in SCORED for run in runs}
    assert not _read(report)
    assert "Sunny and warm" in lazy[("rome", None)]

    report.result  # noqa: B018 - reads the records
    assert {(eval_id, run): _case_view(report, eval_id, run) for eval_id, run in lazy} == lazy


def test_the_view_of_a_case_whose_agent_raised_is_the_read_reports(kind: str, report: ae.EvaluationReport) -> None:
    lazy = [_case_view(report, "boom", run) for run in (None, report.num_runs)]
    assert "the agent blew &lt;up&gt; &amp; stopped" in lazy[0] and "Bang" in lazy[0]
    if kind == "evaluated":  # it holds the eval set (a loaded report reads it with every record)
        assert not _read(report)

    report.result  # noqa: B018 - reads the records
    assert [_case_view(report, "boom", run) for run in (None, report.num_runs)] == lazy


def test_the_case_views_errors_are_the_read_reports(report: ae.EvaluationReport) -> None:
    def errors() -> list[str]:
        found = []
        for eval_id, run_id in (("lisbon", None), ("paris", 7), ("paris", "1")):
            with pytest.raises((ae.NotFoundError, ae.ConfigError)) as caught:
                report.show_case(eval_id, run_id)  # type: ignore[arg-type]
            found.append(f"{type(caught.value).__name__}: {caught.value}")
        return found

    lazy = errors()
    assert not _read(report)
    assert lazy[0].startswith("NotFoundError: no case 'lisbon' in this report; its cases are: 'trip', 'paris', 'boom'")
    assert lazy[0].endswith(", …")
    runs = ", ".join(str(run) for run in range(1, report.num_runs + 1))
    assert lazy[1] == f"NotFoundError: case 'paris' has no run 7; its runs are: {runs}"
    assert lazy[2].startswith("ConfigError: run_id must be an int")

    report.result  # noqa: B018 - reads the records
    assert errors() == lazy


# ------------------------------------------------------------------ the exported page


def _without_generation_time(page: str) -> str:
    return re.sub(r"Generated by agenteval \S+ on [^<]*UTC", "Generated by agenteval", page)


def test_the_exported_page_of_a_loaded_report_is_the_read_reports(saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The plots are drawn from the tables, which read no record either way; drawing them twice takes seconds.
    monkeypatch.setattr(html_export, "_plots", lambda report: "<img>")
    lazy = ae.EvaluationReport.load(saved)
    read = ae.EvaluationReport.load(saved)
    read.result  # noqa: B018 - reads the records

    assert _without_generation_time(report_page(lazy)) == _without_generation_time(report_page(read))
