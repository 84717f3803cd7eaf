"""An eval-set store on MySQL (or MariaDB), with the reference framework's tables."""

from __future__ import annotations

import builtins
from typing import Any

from agenteval._util.files import parse_json
from agenteval._util.name_checks import nonempty_names
from agenteval._util.trpc_json import written_json
from agenteval.errors import NotFoundError
from agenteval.evalset._case_edits import checked, new_case, whole_set
from agenteval.evalset.models import EvalCase, EvalSet
from agenteval.storage._mysql_client import MySQLStore, NewRow, from_seconds, to_seconds, transaction, utc_now
from agenteval.storage._mysql_schema import EVALUATION_EVAL_CASES, EVALUATION_EVAL_SETS, check_columns

__all__ = ["MySQLEvalSetManager"]

_column_names = nonempty_names.then(check_columns, eval_case_id="eval_id")
"""Names non-empty, then each fits its column (a case id goes to ``eval_id``)."""


class MySQLEvalSetManager(MySQLStore):
    """An :class:`~agenteval.evalset.manager.EvalSetManager` on the reference's MySQL tables.

    Sets live in ``<prefix>evaluation_eval_sets`` and their cases, one JSON document per row, in
    ``<prefix>evaluation_eval_cases``. Sets are listed by id; cases keep the order they were
    added in. As with the reference schema's ``utf8mb4_unicode_ci`` collation, names compare
    without regard to case or trailing spaces. Names longer than their ``VARCHAR(255)`` columns
    are refused before any SQL.

    See :class:`~agenteval.storage._mysql_client.MySQLStore` for the arguments.
    """

    _SCHEMA_FILES = ("evalset_schema.sql",)
    _TABLES = (EVALUATION_EVAL_SETS, EVALUATION_EVAL_CASES)

    @property
    def _sets(self) -> str:
        return self._prefix + EVALUATION_EVAL_SETS

    @property
    def _cases(self) -> str:
        return self._prefix + EVALUATION_EVAL_CASES

    def _lock_set(self, cursor: Any, app_name: str, eval_set_id: str) -> None:
        # A shared lock keeps a concurrent delete from orphaning the case being written.
        cursor.execute(
            f"SELECT 1 FROM `{self._sets}` WHERE app_name = %s AND eval_set_id = %s LOCK IN SHARE MODE",
            (app_name, eval_set_id),
        )
        if cursor.fetchone() is None:
            raise NotFoundError(f"eval set {app_name}.{eval_set_id} not found")

    def _parse_case(self, payload: str | bytes, app_name: str, eval_set_id: str, eval_id: str) -> EvalCase:
        source = f"eval case {app_name}.{eval_set_id}.{eval_id} in table {self._cases}"
        return parse_json(payload, EvalCase, source)

    @_column_names
    async def get(self, app_name: str, eval_set_id: str) -> EvalSet:
        """Load an eval set with its cases, in the order they were added.

        Raises:
            ConfigError: An empty name, or a stored case that does not fit the model.
            NotFoundError: No such set.
            StorageError: The database failed.
        """
        sql = (
            f"SELECT s.name, s.description, s.created_at, c.eval_id, c.eval_case FROM `{self._sets}` s"
            f" LEFT JOIN `{self._cases}` c ON c.app_name = s.app_name AND c.eval_set_id = s.eval_set_id"
            " WHERE s.app_name = %s AND s.eval_set_id = %s ORDER BY c.id"
        )

        def load(conn: Any) -> builtins.list[tuple[Any, ...]]:
            with conn.cursor() as cursor:
                cursor.execute(sql, (app_name, eval_set_id))
                return builtins.list(cursor.fetchall())

        rows = await self._client.call(f"get eval set {app_name}.{eval_set_id}", self._sets, load)
        if not rows:
            raise NotFoundError(f"eval set {app_name}.{eval_set_id} not found")
        name, description, created_at = rows[0][:3]
        cases = [self._parse_case(row[4], app_name, eval_set_id, row[3]) for row in rows if row[4] is not None]
        return EvalSet(
            eval_set_id=eval_set_id,
            name=name,
            description=description or "",
            eval_cases=cases,
            creation_timestamp=to_seconds(created_at),
        )

    @_column_names
    async def create(self, app_name: str, eval_set_id: str) -> EvalSet:
        """Create an empty eval set named after its id.

        Raises:
            ConfigError: An empty name, or the set already exists.
            StorageError: The database failed.
        """
        created_at, timestamp = utc_now()
        row = NewRow(
            f"INSERT INTO `{self._sets}` (app_name, eval_set_id, name, description, created_at)"
            " VALUES (%s, %s, %s, %s, %s)",
            (app_name, eval_set_id, eval_set_id, "", created_at),
            f"eval set {app_name}.{eval_set_id}",
            check_sql=f"SELECT name, description, created_at FROM `{self._sets}`"
            f" WHERE app_name = %s AND eval_set_id = %s",
            check_args=(app_name, eval_set_id),
            written=(eval_set_id, "", created_at),
        )

        def insert(conn: Any) -> None:
            with conn.cursor() as cursor:
                row.execute(self._client, cursor)

        await self._client.call(f"create eval set {app_name}.{eval_set_id}", self._sets, insert)
        return EvalSet(eval_set_id=eval_set_id, name=eval_set_id, eval_cases=[], creation_timestamp=timestamp)

    async def save(self, app_name: str, eval_set: EvalSet) -> EvalSet:
        """Store a whole eval set in one transaction: its row inserted or updated, its cases replaced.

        Raises:
            ConfigError: An empty or too long name, a case without an id, or a case id used twice.
            StorageError: The database failed; nothing was changed.
        """
        header, texts = whole_set(app_name, eval_set)
        eval_set_id = header.eval_set_id
        check_columns(app_name=app_name, eval_set_id=eval_set_id, name=header.name)
        for case in eval_set.eval_cases:
            check_columns(eval_id=case.eval_id)
        created_at = from_seconds(header.creation_timestamp or 0.0)
        upsert = (
            f"INSERT INTO `{self._sets}` (app_name, eval_set_id, name, description, created_at)"
            " VALUES (%s, %s, %s, %s, %s) ON DUPLICATE KEY UPDATE"
            " name = VALUES(name), description = VALUES(description), created_at = VALUES(created_at)"
        )
        insert = (
            f"INSERT INTO `{self._cases}` (app_name, eval_set_id, eval_id, eval_mode, eval_case)"
            " VALUES (%s, %s, %s, %s, %s)"
        )
        where = f"{app_name}.{eval_set_id}"

        def write(conn: Any) -> None:
            with transaction(conn) as cursor:
                row = (app_name, eval_set_id, header.name, header.description, created_at)
                self._client.execute_sized(cursor, upsert, f"eval set {where}", row)
                cursor.execute(
                    f"DELETE FROM `{self._cases}` WHERE app_name = %s AND eval_set_id = %s", (app_name, eval_set_id)
                )
                for case, document in zip(eval_set.eval_cases, texts, strict=True):
                    args = (app_name, eval_set_id, case.eval_id, case.eval_mode.value, document)
                    self._client.execute_sized(
                        cursor, insert, f"eval case {app_name}.{eval_set_id}.{case.eval_id}", args
                    )

        documents = {case.eval_id: text for case, text in zip(eval_set.eval_cases, texts, strict=True)}
        await self._client.call(f"save eval set {where}", self._sets, write, documents=documents)
        return await self.get(app_name, eval_set_id)

    @_column_names
    async def list(self, app_name: str) -> builtins.list[str]:
        """Return the app's eval-set ids in id order (``[]`` for an unknown app).

        Raises:
            ConfigError: An empty app name.
            StorageError: The database failed.
        """
        sql = f"SELECT eval_set_id FROM `{self._sets}` WHERE app_name = %s ORDER BY eval_set_id ASC"
        return await self._client.first_column(f"list eval sets for app {app_name}", self._sets, sql, (app_name,))

    @_column_names
    async def delete(self, app_name: str, eval_set_id: str) -> None:
        """Delete an eval set and its cases, in one transaction.

        Raises:
            ConfigError: An empty name.
            NotFoundError: No such set.
            StorageError: The database failed.
        """

        def remove(conn: Any) -> None:
            with transaction(conn) as cursor:
                # The set row first: writers of cases lock it before touching the case table.
                cursor.execute(
                    f"DELETE FROM `{self._sets}` WHERE app_name = %s AND eval_set_id = %s", (app_name, eval_set_id)
                )
                if cursor.rowcount == 0:
                    raise NotFoundError(f"eval set {app_name}.{eval_set_id} not found")
                cursor.execute(
                    f"DELETE FROM `{self._cases}` WHERE app_name = %s AND eval_set_id = %s", (app_name, eval_set_id)
                )

        await self._client.call(f"delete eval set {app_name}.{eval_set_id}", self._sets, remove)

    @_column_names
    async def get_case(self, app_name: str, eval_set_id: str, eval_case_id: str) -> EvalCase:
        """Load one case of an eval set.

        Raises:
            ConfigError: An empty name, or a stored case that does not fit the model.
            NotFoundError: No such set or case.
            StorageError: The database failed.
        """
        sql = (
            f"SELECT c.eval_case FROM `{self._sets}` s LEFT JOIN `{self._cases}` c"
            " ON c.app_name = s.app_name AND c.eval_set_id = s.eval_set_id AND c.eval_id = %s"
            " WHERE s.app_name = %s AND s.eval_set_id = %s"
        )

        def load(conn: Any) -> tuple[Any, ...] | None:
            with conn.cursor() as cursor:
                cursor.execute(sql, (eval_case_id, app_name, eval_set_id))
                row: tuple[Any, ...] | None = cursor.fetchone()
                return row

        where = f"{app_name}.{eval_set_id}.{eval_case_id}"
        row = await self._client.call(f"get eval case {where}", self._cases, load)
        if row is None:
            raise NotFoundError(f"eval set {app_name}.{eval_set_id} not found")
        if row[0] is None:
            raise NotFoundError(f"eval case {where} not found")
        return self._parse_case(row[0], app_name, eval_set_id, eval_case_id)

    @_column_names
    async def add_case(self, app_name: str, eval_set_id: str, eval_case: EvalCase) -> None:
        """Append a case, filling missing creation times with now.

        Raises:
            ConfigError: An empty name, a missing case or id, or a case id already in the set.
            NotFoundError: No such set.
            StorageError: The database failed.
        """
        check_columns(eval_id=checked(eval_case).eval_id)
        case, document = new_case(app_name, eval_set_id, eval_case)
        where = f"{app_name}.{eval_set_id}.{case.eval_id}"
        row = NewRow(
            f"INSERT INTO `{self._cases}` (app_name, eval_set_id, eval_id, eval_mode, eval_case)"
            " VALUES (%s, %s, %s, %s, %s)",
            (app_name, eval_set_id, case.eval_id, case.eval_mode.value, document),
            f"eval case {where}",
            check_sql=f"SELECT eval_case FROM `{self._cases}`"
            f" WHERE app_name = %s AND eval_set_id = %s AND eval_id = %s",
            check_args=(app_name, eval_set_id, case.eval_id),
            written=(document,),
        )

        def insert(conn: Any) -> None:
            with transaction(conn) as cursor:
                self._lock_set(cursor, app_name, eval_set_id)
                row.execute(self._client, cursor)

        await self._client.call(f"add eval case {where}", self._cases, insert, documents={"": document})

    @_column_names
    async def update_case(self, app_name: str, eval_set_id: str, eval_case: EvalCase) -> None:
        """Replace the case with the same id by ``eval_case``, as given; its position is kept.

        Raises:
            ConfigError: An empty name or a missing case or id.
            NotFoundError: No such set or case.
            StorageError: The database failed.
        """
        case_id = checked(eval_case).eval_id
        check_columns(eval_id=case_id)
        document = written_json(eval_case, f"eval case {app_name}.{eval_set_id}.{case_id}")
        args = (eval_case.eval_mode.value, document, app_name, eval_set_id, case_id)
        sql = (
            f"UPDATE `{self._cases}` SET eval_mode = %s, eval_case = %s, updated_at = CURRENT_TIMESTAMP(6)"
            " WHERE app_name = %s AND eval_set_id = %s AND eval_id = %s"
        )
        await self._change_case("update", app_name, eval_set_id, case_id, sql, args, document)

    @_column_names
    async def delete_case(self, app_name: str, eval_set_id: str, eval_case_id: str) -> None:
        """Remove a case.

        Raises:
            ConfigError: An empty name.
            NotFoundError: No such set or case.
            StorageError: The database failed.
        """
        sql = f"DELETE FROM `{self._cases}` WHERE app_name = %s AND eval_set_id = %s AND eval_id = %s"
        args = (app_name, eval_set_id, eval_case_id)
        await self._change_case("delete", app_name, eval_set_id, eval_case_id, sql, args)

    async def _change_case(
        self,
        action: str,
        app_name: str,
        eval_set_id: str,
        eval_case_id: str,
        sql: str,
        args: tuple[Any, ...],
        document: str = "",
    ) -> None:
        """Run an ``UPDATE`` or ``DELETE`` of one case with its set locked; no row changed is a missing case.

        ``document`` is the case's JSON an ``UPDATE`` writes (``""`` for a ``DELETE``).
        """
        where = f"{app_name}.{eval_set_id}.{eval_case_id}"

        def change(conn: Any) -> None:
            with transaction(conn) as cursor:
                self._lock_set(cursor, app_name, eval_set_id)
                self._client.execute_sized(cursor, sql, f"eval case {where}", args)
                if cursor.rowcount == 0:
                    raise NotFoundError(f"eval case {where} not found")

        documents = {"": document} if document else None
        await self._client.call(f"{action} eval case {where}", self._cases, change, documents=documents)
