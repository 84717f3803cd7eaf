"""A metric store on MySQL (or MariaDB), with the reference framework's table."""

from __future__ import annotations

import builtins
from typing import Any

from agenteval._util.files import parse_json
from agenteval._util.name_checks import nonempty_names
from agenteval._util.trpc_json import written_json
from agenteval.errors import NotFoundError
from agenteval.metric.memory import _metric_name
from agenteval.metric.models import EvalMetric
from agenteval.storage._mysql_client import MySQLStore, NewRow
from agenteval.storage._mysql_schema import EVALUATION_METRICS, check_columns

__all__ = ["MySQLMetricManager"]

_column_names = nonempty_names.then(check_columns)
"""Names non-empty, then each fits its column."""


class MySQLMetricManager(MySQLStore):
    """A :class:`~agenteval.metric.manager.MetricManager` on the reference's MySQL table.

    Metrics live in ``<prefix>evaluation_metrics``, one JSON document per (app, eval set, metric
    name). They are listed in the order they were added (the reference sorts them by name; the
    store protocol promises configuration order). A judge's literal API key is never written, so
    it does not survive a round trip (a ``${VAR}`` reference does), as with the local store. As
    with the reference schema's ``utf8mb4_unicode_ci`` collation, names compare without regard to
    case or trailing spaces.
    Names longer than their ``VARCHAR(255)`` columns are refused before any SQL.

    See :class:`~agenteval.storage._mysql_client.MySQLStore` for the arguments.
    """

    _SCHEMA_FILES = ("metric_schema.sql",)
    _TABLES = (EVALUATION_METRICS,)

    @property
    def _table(self) -> str:
        return self._prefix + EVALUATION_METRICS

    @_column_names
    async def list(self, app_name: str, eval_set_id: str) -> builtins.list[str]:
        """Return the metric names of an eval set in the order they were added (``[]`` when none).

        Raises:
            ConfigError: An empty name.
            StorageError: The database failed.
        """
        sql = f"SELECT metric_name FROM `{self._table}` WHERE app_name = %s AND eval_set_id = %s ORDER BY id ASC"
        where = f"list metrics for {app_name}.{eval_set_id}"
        return await self._client.first_column(where, self._table, sql, (app_name, eval_set_id))

    @_column_names
    async def get_all(self, app_name: str, eval_set_id: str) -> builtins.list[EvalMetric]:
        """Load every metric of an eval set, in the order they were added, in one query (``[]`` when none).

        Raises:
            ConfigError: An empty name, or a stored metric that does not fit the model.
            StorageError: The database failed.
        """
        sql = (
            f"SELECT metric_name, metric FROM `{self._table}` WHERE app_name = %s AND eval_set_id = %s ORDER BY id ASC"
        )

        def rows(conn: Any) -> builtins.list[tuple[Any, ...]]:
            with conn.cursor() as cursor:
                cursor.execute(sql, (app_name, eval_set_id))
                return builtins.list(cursor.fetchall())

        where = f"{app_name}.{eval_set_id}"
        found = await self._client.call(f"get metrics for {where}", self._table, rows)
        return [
            parse_json(metric, EvalMetric, f"metric {where}.{name} in table {self._table}") for name, metric in found
        ]

    @_column_names
    async def get(self, app_name: str, eval_set_id: str, metric_name: str) -> EvalMetric:
        """Load one metric.

        Raises:
            ConfigError: An empty name, or a stored metric that does not fit the model.
            NotFoundError: No such metric.
            StorageError: The database failed.
        """
        sql = f"SELECT metric FROM `{self._table}` WHERE app_name = %s AND eval_set_id = %s AND metric_name = %s"

        def load(conn: Any) -> tuple[Any, ...] | None:
            with conn.cursor() as cursor:
                cursor.execute(sql, (app_name, eval_set_id, metric_name))
                row: tuple[Any, ...] | None = cursor.fetchone()
                return row

        where = f"{app_name}.{eval_set_id}.{metric_name}"
        row = await self._client.call(f"get metric {where}", self._table, load)
        if row is None:
            raise NotFoundError(f"metric {where} not found")
        return parse_json(row[0], EvalMetric, f"metric {where} in table {self._table}")

    @_column_names
    async def add(self, app_name: str, eval_set_id: str, metric: EvalMetric) -> None:
        """Add a metric; its name must be new in the eval set.

        Raises:
            ConfigError: An empty name, a missing metric, or a name already in the set.
            StorageError: The database failed.
        """
        name = _metric_name(metric)
        check_columns(metric_name=name)
        where = f"{app_name}.{eval_set_id}.{name}"
        document = written_json(metric, f"metric {where}")
        row = NewRow(
            f"INSERT INTO `{self._table}` (app_name, eval_set_id, metric_name, metric) VALUES (%s, %s, %s, %s)",
            (app_name, eval_set_id, name, document),
            f"metric {where}",
            check_sql=f"SELECT metric FROM `{self._table}`"
            f" WHERE app_name = %s AND eval_set_id = %s AND metric_name = %s",
            check_args=(app_name, eval_set_id, name),
            written=(document,),
        )

        def insert(conn: Any) -> None:
            with conn.cursor() as cursor:
                row.execute(self._client, cursor)

        await self._client.call(f"add metric {where}", self._table, insert, documents={"": document})

    @_column_names
    async def update(self, app_name: str, eval_set_id: str, metric: EvalMetric) -> None:
        """Replace the metric with the same name; its position is kept.

        Raises:
            ConfigError: An empty name or a missing metric.
            NotFoundError: No such metric.
            StorageError: The database failed.
        """
        name = _metric_name(metric)
        check_columns(metric_name=name)
        sql = (
            f"UPDATE `{self._table}` SET metric = %s, updated_at = CURRENT_TIMESTAMP(6)"
            " WHERE app_name = %s AND eval_set_id = %s AND metric_name = %s"
        )
        where = f"{app_name}.{eval_set_id}.{name}"
        document = written_json(metric, f"metric {where}")
        await self._change(
            f"update metric {where}", where, sql, (document, app_name, eval_set_id, name), documents={"": document}
        )

    @_column_names
    async def delete(self, app_name: str, eval_set_id: str, metric_name: str) -> None:
        """Remove a metric.

        Raises:
            ConfigError: An empty name.
            NotFoundError: No such metric.
            StorageError: The database failed.
        """
        sql = f"DELETE FROM `{self._table}` WHERE app_name = %s AND eval_set_id = %s AND metric_name = %s"
        where = f"{app_name}.{eval_set_id}.{metric_name}"
        await self._change(f"delete metric {where}", where, sql, (app_name, eval_set_id, metric_name))

    async def _change(
        self, operation: str, where: str, sql: str, args: tuple[Any, ...], *, documents: dict[str, str] | None = None
    ) -> None:
        def change(conn: Any) -> int:
            with conn.cursor() as cursor:
                self._client.execute_sized(cursor, sql, f"metric {where}", args)
                count: int = cursor.rowcount
                return count

        if await self._client.call(operation, self._table, change, documents=documents) == 0:
            raise NotFoundError(f"metric {where} not found")
