"""The MySQL result store used the way a notebook does: synchronously, and with a DSN copied from Go code."""

from __future__ import annotations

import pytest

import agenteval as ae
from agenteval.evalresult import MySQLEvalResultManager
from agenteval.examples.math import APP_NAME, DATA_DIR, EVAL_SET_ID, calculator_agent
from agenteval.storage import parse_dsn
from tests.mysql.conftest import MySQLServer, close_store

pytestmark = pytest.mark.mysql


def go_dsn(url_dsn: str) -> str:
    """The Go driver form of a URL DSN (``user:pass@tcp(host:port)/db?parseTime=true``)."""
    options = parse_dsn(url_dsn)
    credentials = options["user"] + (f":{options['password']}" if options.get("password") else "")
    return f"{credentials}@tcp({options['host']}:{options['port']})/{options['database']}?parseTime=true&loc=UTC"


def test_a_report_saves_synchronously_through_a_go_driver_dsn(mysql: MySQLServer) -> None:
    store = MySQLEvalResultManager(go_dsn(mysql.dsn), table_prefix=mysql.prefix)
    report = ae.Evaluator(
        APP_NAME,
        calculator_agent,
        eval_set_manager=ae.LocalEvalSetManager(DATA_DIR),
        metric_manager=ae.LocalMetricManager(DATA_DIR),
        progress=False,
    ).evaluate(EVAL_SET_ID)

    try:
        saved_id = report.save(store)
        again = report.save(store)
        loaded = ae.EvaluationReport.load(store, APP_NAME, saved_id)
    finally:
        close_store(store)

    assert again == saved_id
    assert mysql.query(f"SELECT COUNT(*) FROM `{mysql.prefix}evaluation_eval_set_results`") == [(1,)]
    assert loaded.cases.equals(report.cases)
