"""The shared metric store contract (tests/metric/test_managers.py), run against MySQL.

Every contract test that uses the ``manager`` fixture is copied into this module and collected
again here, where ``manager`` is a MySQL store on this run's tables (emptied before each test).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agenteval.metric import MySQLMetricManager
from agenteval.metric.manager import MetricManager
from tests.metric import test_managers as contract
from tests.mysql.conftest import MySQLServer, adopt_contract, close_store

ADOPTED, LEFT_OUT = adopt_contract(contract, frozenset({"manager"}), {})
globals().update(ADOPTED)


@pytest.fixture
def manager(mysql: MySQLServer) -> Iterator[MetricManager]:
    store = MySQLMetricManager(mysql.dsn, table_prefix=mysql.prefix)
    yield store
    close_store(store)


def test_every_contract_test_is_adopted() -> None:
    # These construct their stores themselves.
    assert LEFT_OUT == [
        "test_memory_keeps_api_key",
        "test_all_metrics_lists_then_gets_from_a_store_without_get_all",
        "test_all_metrics_reads_through_a_subclass_that_overrides_list_or_get",
    ]
    assert len(ADOPTED) >= 15
