"""An error carries the report of what finished through one typed pair: attach_report and report_of."""

from __future__ import annotations

from agenteval.errors import SaveError, attach_report, report_of


def test_an_attached_report_is_read_back_and_is_exc_report() -> None:
    error = KeyboardInterrupt()
    report = object()

    attach_report(error, report)

    assert report_of(error) is report
    assert error.report is report  # type: ignore[attr-defined]


def test_an_error_without_a_report_has_none() -> None:
    assert report_of(ValueError("bad")) is None


def test_a_save_error_carries_the_report_it_could_not_save() -> None:
    report = object()

    assert report_of(SaveError("could not save", report)) is report
