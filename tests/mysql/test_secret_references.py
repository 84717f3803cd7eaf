"""The MySQL metric store keeps a judge's ``${VAR}`` references, ``apiKey`` included, and never a literal key."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

import agenteval as ae
from agenteval.metric import MySQLMetricManager
from tests.mysql.conftest import MySQLServer
from tests.test_secrets_references import (
    JUDGE,
    KEY,
    assert_no_expanded_value,
    judge_options,
    judged,
    set_environment,
    written_judge,
)

pytestmark = [
    pytest.mark.mysql,
    pytest.mark.asyncio,
    pytest.mark.filterwarnings(r"ignore:.*judgeModel\.token have no effect:agenteval.errors.UnknownFieldWarning"),
]


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch) -> None:
    set_environment(monkeypatch)


@pytest_asyncio.fixture
async def metrics(mysql: MySQLServer) -> AsyncIterator[MySQLMetricManager]:
    manager = MySQLMetricManager(mysql.dsn, table_prefix=mysql.prefix)
    yield manager
    await manager.close()


def stored_rows(mysql: MySQLServer) -> dict[str, str]:
    rows = mysql.query(f"SELECT metric_name, metric FROM `{mysql.prefix}evaluation_metrics`")
    return {name: payload for name, payload in rows}


async def test_a_stored_metric_keeps_its_references_through_edits(
    metrics: MySQLMetricManager, mysql: MySQLServer
) -> None:
    await metrics.add("app", "set", ae.EvalMetric.model_validate(judged()))
    await metrics.add("app", "set", ae.EvalMetric.final_response("contains"))
    await metrics.update("app", "set", await metrics.get("app", "set", "judged"))
    await metrics.delete("app", "set", "final_response_avg_score")

    rows = stored_rows(mysql)
    assert list(rows) == ["judged"]
    assert written_judge(json.loads(rows["judged"])) == JUDGE
    assert_no_expanded_value(rows["judged"])
    loaded = await metrics.get("app", "set", "judged")
    assert written_judge(loaded.to_dict()) == JUDGE
    assert judge_options(loaded).api_key == "sk-from-the-environment-0123456789"


async def test_a_literal_api_key_is_never_stored(metrics: MySQLMetricManager, mysql: MySQLServer) -> None:
    await metrics.add("app", "set", ae.EvalMetric.model_validate(judged(apiKey=KEY)))

    (payload,) = stored_rows(mysql).values()
    assert KEY not in payload
    assert "apiKey" not in written_judge(json.loads(payload))
    assert judge_options(await metrics.get("app", "set", "judged")).api_key == ""
