"""An eval-result store on MySQL (or MariaDB), with the reference framework's table."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import TypeAdapter

from agenteval._util.files import parse_json
from agenteval._util.name_checks import check_result, nonempty_names
from agenteval.errors import ConfigError, NotFoundError
from agenteval.evalresult._prepare import filled_result, result_json
from agenteval.evalresult.models import EvalCaseResult, EvalSetResult
from agenteval.evalresult.records import CaseRecord, saves_records
from agenteval.evalresult.summary import EvalSetResultSummary
from agenteval.storage._mysql_client import MySQLStore, sql_literal, to_seconds
from agenteval.storage._mysql_schema import EVALUATION_EVAL_SET_RESULTS, check_columns

__all__ = ["MySQLEvalResultManager"]

_column_names = nonempty_names.then(check_columns)
"""Names non-empty, then each fits its column."""

_CASE_RESULTS = TypeAdapter(list[EvalCaseResult])
_SHORTER_ID = (
    "Use a shorter app name or eval set id (the default result id is <app name>_<eval set id>_<uuid4>,"
    " 38 characters more), or give the result an explicit, shorter id"
)
_RESULT_VALUE_NESTING = 11
"""Levels a result document nests around its deepest free-form value, the value's own field included:
``{evalCaseResults: [{evalMetricResultPerInvocation: [{actualInvocation: {executionTrace: {Steps: [{Tools:
[{Arguments: ...}]}]}}}]}]}``."""
_NOT_READ = -1


def _column(result: EvalSetResult, field: str) -> str | None:
    """The compact JSON of one field of a result, as written in the whole result's JSON; ``None`` when empty.

    Each column is written once, by the same writer (and with the same checks and error paths,
    e.g. ``evalCaseResults[3].score``) as the whole result: the JSON of a result holding only
    that field is ``{"<key>":<value>}``, or ``{}`` when the value is the default.
    """
    text = result_json(EvalSetResult.model_construct(**{field: getattr(result, field)}))
    return None if text == "{}" else text[text.index(":") + 1 : -1]


class MySQLEvalResultManager(MySQLStore):
    """An :class:`~agenteval.evalresult.manager.EvalResultManager` on the reference's MySQL table.

    Results live in ``<prefix>evaluation_eval_set_results``, one row per (app, result id). Saving
    an existing id replaces the row's content but keeps its ``created_at``. The database sets
    ``created_at``, which is what ``get`` returns as the creation time: a creation time on the
    saved object is ignored, as the reference does. ``list`` returns the newest results first.
    As with the reference schema's ``utf8mb4_unicode_ci`` collation, app names and result ids
    compare without regard to case or trailing spaces.

    A result is written in one statement, which the server accepts only below its
    ``max_allowed_packet`` (16 MiB by default on MariaDB, 64 MiB on MySQL 8; a one-turn case
    with two metrics takes ~2.3 KB, so a 20,000-case result ~45 MB). A larger result fails at
    once, before anything is sent, with a :class:`~agenteval.errors.StorageError` that says how
    large it is and how to raise the limit.

    Names and ids longer than their ``VARCHAR(255)`` columns are refused before any SQL (a
    :class:`~agenteval.errors.ConfigError`). The server limits how deeply JSON may nest (MariaDB
    accepts 31 levels of arrays and objects, MySQL 100): an :class:`~agenteval.Evaluator` saving
    here fails a case whose values nest deeper than a result can hold (:meth:`value_depth_limit`)
    and saves the others; a result saved directly that nests too deeply fails with a
    :class:`~agenteval.errors.StorageError` naming the case and field.

    See :class:`~agenteval.storage._mysql_client.MySQLStore` for the arguments, e.g.
    ``MySQLEvalResultManager("mysql://root@127.0.0.1:3306/evals", table_prefix="trpc")``.
    """

    _SCHEMA_FILES = ("schema.sql",)
    _TABLES = (EVALUATION_EVAL_SET_RESULTS,)
    _value_depth: int | None = _NOT_READ

    @property
    def _table(self) -> str:
        return self._prefix + EVALUATION_EVAL_SET_RESULTS

    def check_new_result_id(self, app_name: str, result_id: str) -> None:
        """Refuse, before an evaluation runs, an id this store could not save its result under.

        Raises:
            ConfigError: An empty app name, or an app name or result id the table cannot hold (a
                lone surrogate, or more than 255 characters); the message says how to fix it.
        """
        _column_names.check(app_name=app_name)
        check_columns(eval_set_result_id=result_id, advice=_SHORTER_ID)

    async def value_depth_limit(self) -> int | None:
        """The most levels a free-form value (tool arguments and results…) may nest in a result this store saves.

        The server's JSON nesting limit less the levels a result document nests around its deepest
        free-form value; ``None`` when the server has no limit that low. Read once per store.

        Raises:
            StorageError: The database failed.
        """
        if self._value_depth == _NOT_READ:
            server = await self._client.json_depth_limit(self._table)
            self._value_depth = None if server is None else server - _RESULT_VALUE_NESTING
        return self._value_depth

    @saves_records
    @_column_names
    async def save(self, app_name: str, result: EvalSetResult | None) -> str:
        """Insert or replace a result and return its id.

        A missing id becomes ``<app>_<evalSetId>_<uuid4>`` and a missing name the id; the
        caller's object is not changed.

        Raises:
            ConfigError: A bad argument, a name or id the table cannot hold (see
                :meth:`check_new_result_id`), or a result that cannot be serialised.
            StorageError: The database failed, the result is too large for the server's
                ``max_allowed_packet``, or it nests JSON deeper than the server accepts (nothing
                is written then).
        """
        prepared = filled_result(app_name, check_result(result), set_timestamp=False)
        return await self._store(app_name, prepared, lambda: _column(prepared, "eval_case_results") or "[]")

    @_column_names
    async def save_recorded(self, app_name: str, result: EvalSetResult | None, records: Sequence[CaseRecord]) -> str:
        """As :meth:`save`, for a result whose case results are ``records`` (``result`` holds none).

        The records' texts make the case-results column as they are.
        """
        prepared = filled_result(app_name, check_result(result), set_timestamp=False)

        def cases() -> str:
            try:
                return "[" + ",".join(record.text(None) for record in records) + "]"
            except ConfigError:
                # Written whole, the case results name the field that cannot be written by its path in the result.
                whole = prepared.replaced(eval_case_results=[record.model for record in records])
                return _column(whole, "eval_case_results") or "[]"

        return await self._store(app_name, prepared, cases)

    async def _store(self, app_name: str, prepared: EvalSetResult, written_cases: Callable[[], str]) -> str:
        """Insert or replace ``prepared``, whose case-results column ``written_cases`` writes, and return its id."""
        result_id = prepared.eval_set_result_id
        check_columns(eval_set_result_id=result_id, advice=_SHORTER_ID)
        check_columns(eval_set_id=prepared.eval_set_id, eval_set_result_name=prepared.eval_set_result_name)
        cases = written_cases()
        summary = _column(prepared, "summary")
        head = (
            f"INSERT INTO `{self._table}` (app_name, eval_set_result_id, eval_set_id, eval_set_result_name,"
            " eval_case_results, summary) VALUES (%s, %s, %s, %s, "
        )
        tail = (
            ") ON DUPLICATE KEY UPDATE eval_set_id = VALUES(eval_set_id),"
            " eval_set_result_name = VALUES(eval_set_result_name),"
            " eval_case_results = VALUES(eval_case_results), summary = VALUES(summary),"
            " updated_at = CURRENT_TIMESTAMP(6)"
        )
        names = (app_name, result_id, prepared.eval_set_id, prepared.eval_set_result_name)

        def store(conn: Any) -> None:
            with conn.cursor() as cursor:
                # Built by hand: PyMySQL's escaping would take ~1 s for a 20,000-case result.
                columns = sql_literal(conn, cases) + ", " + ("NULL" if summary is None else sql_literal(conn, summary))
                sql = cursor.mogrify(head, names) + columns + tail
                self._client.execute_sized(cursor, sql, "the result")

        documents = {"evalCaseResults": cases} | ({} if summary is None else {"summary": summary})
        await self._client.call(
            f"store eval set result {app_name}.{result_id}", self._table, store, documents=documents
        )
        return result_id

    @_column_names
    async def get(self, app_name: str, eval_set_result_id: str) -> EvalSetResult:
        """Load a result; its id is the one asked for and its creation time the row's ``created_at``.

        Raises:
            ConfigError: An empty app name or id, or a stored row that does not fit the model.
            NotFoundError: No such result.
            StorageError: The database failed.
        """
        sql = (
            "SELECT eval_set_id, eval_set_result_name, eval_case_results, summary, created_at"
            f" FROM `{self._table}` WHERE app_name = %s AND eval_set_result_id = %s"
        )

        def load(conn: Any) -> tuple[Any, ...] | None:
            with conn.cursor() as cursor:
                cursor.execute(sql, (app_name, eval_set_result_id))
                row: tuple[Any, ...] | None = cursor.fetchone()
                return row

        where = f"{app_name}.{eval_set_result_id}"
        row = await self._client.call(f"load eval set result {where}", self._table, load)
        if row is None:
            raise NotFoundError(f"eval set result {where} not found")
        eval_set_id, name, cases, summary, created_at = row
        source = f"row {where} of table {self._table}"
        case_results = [] if _is_null(cases) else parse_json(cases, _CASE_RESULTS, f"eval_case_results of {source}")
        return EvalSetResult(
            eval_set_result_id=eval_set_result_id,
            eval_set_result_name=name,
            eval_set_id=eval_set_id,
            eval_case_results=case_results,
            summary=None if _is_empty(summary) else parse_json(summary, EvalSetResultSummary, f"summary of {source}"),
            creation_timestamp=to_seconds(created_at),
        )

    @_column_names
    async def list(self, app_name: str) -> builtins.list[str]:
        """Return the app's result ids, newest first (``[]`` for an unknown app).

        Raises:
            ConfigError: An empty app name.
            StorageError: The database failed.
        """
        # id breaks ties between results created in the same microsecond.
        sql = f"SELECT eval_set_result_id FROM `{self._table}` WHERE app_name = %s ORDER BY created_at DESC, id DESC"
        return await self._client.first_column(
            f"list eval set results for app {app_name}", self._table, sql, (app_name,)
        )


def _is_null(payload: str | bytes) -> bool:
    return payload.strip() in {"null", b"null"}


def _is_empty(payload: str | bytes | None) -> bool:
    return payload is None or not payload.strip() or _is_null(payload)
