"""The shared eval-result store contract (tests/evalresult/test_managers.py), run against MySQL.

Every contract test that uses the ``manager`` fixture is copied into this module and collected
again here, where ``manager`` is a MySQL store on this run's tables (emptied before each test).
Five tests describe behaviour the MySQL store deliberately does not have (the reference's MySQL
store behaves the same way); they are strict xfails, so they run and must fail.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agenteval.evalresult import MySQLEvalResultManager
from agenteval.evalresult.manager import EvalResultManager
from tests.evalresult import test_managers as contract
from tests.mysql.conftest import MySQLServer, adopt_contract, close_store

_DB_TIMESTAMP = "MySQL: created_at is set by the database, so a provided creation time is not kept"
XFAIL = {
    "test_provided_name_and_timestamp_are_kept": _DB_TIMESTAMP,
    "test_saved_content_round_trips": _DB_TIMESTAMP,
    "test_reference_results_round_trip": _DB_TIMESTAMP,
    "test_list_order_is_stable_and_survives_overwrites": "MySQL lists results newest first",
    "test_a_save_writes_the_result_as_json_once": "MySQL writes its two JSON columns one by one, each part"
    " of the result once (test_large_results.py::test_each_column_is_written_once)",
}

ADOPTED, LEFT_OUT = adopt_contract(contract, frozenset({"manager"}), XFAIL)
globals().update(ADOPTED)


@pytest.fixture
def manager(mysql: MySQLServer) -> Iterator[EvalResultManager]:
    store = MySQLEvalResultManager(mysql.dsn, table_prefix=mysql.prefix)
    yield store
    close_store(store)


def test_every_contract_test_is_adopted() -> None:
    assert LEFT_OUT == []
    assert len(ADOPTED) >= 20
