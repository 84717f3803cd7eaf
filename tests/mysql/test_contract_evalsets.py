"""The shared eval-set store contract (tests/evalset/test_managers.py), run against MySQL.

Every contract test that uses the ``manager`` or ``with_set`` fixture is copied into this module
and collected again here, where ``manager`` is a MySQL store on this run's tables (emptied
before each test); ``with_set`` is the contract's own fixture, which builds on ``manager``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agenteval.evalset import MySQLEvalSetManager
from agenteval.evalset.manager import EvalSetManager
from tests.evalset import test_managers as contract
from tests.evalset.test_managers import with_set  # noqa: F401  (a fixture the copied tests use)
from tests.mysql.conftest import MySQLServer, adopt_contract, close_store

ADOPTED, LEFT_OUT = adopt_contract(contract, frozenset({"manager", "with_set"}), {})
globals().update(ADOPTED)


@pytest.fixture
def manager(mysql: MySQLServer) -> Iterator[EvalSetManager]:
    store = MySQLEvalSetManager(mysql.dsn, table_prefix=mysql.prefix)
    yield store
    close_store(store)


def test_every_contract_test_is_adopted() -> None:
    # These two construct the in-memory and the local store themselves.
    assert sorted(LEFT_OUT) == ["test_list_order_local", "test_list_order_memory"]
    assert len(ADOPTED) >= 20
