"""Table names, table prefixes, the DDL of the MySQL stores and the values their columns hold.

The DDL lives in the ``.sql`` files shipped next to this module, with ``{{PREFIX}}`` standing
for the table prefix. Each file's ``CREATE TABLE IF NOT EXISTS`` statements are run as written;
then every key the tables declare is created again with ``CREATE [UNIQUE] INDEX``, ignoring
"duplicate key name" (1061), so a table created by hand without its indexes gets them too and
running the schema twice is harmless. :func:`check_columns` refuses, before any SQL, a name the
tables cannot hold.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

from agenteval.errors import ConfigError

__all__ = [
    "EVALUATION_EVAL_CASES",
    "EVALUATION_EVAL_SETS",
    "EVALUATION_EVAL_SET_RESULTS",
    "EVALUATION_METRICS",
    "MAX_TABLE_NAME_LENGTH",
    "SCHEMA_FILES",
    "Statement",
    "check_columns",
    "column_lengths",
    "load_schema",
    "normalize_table_prefix",
    "schema_text",
    "table_name",
]

EVALUATION_EVAL_SETS = "evaluation_eval_sets"
"""Base name of the eval-set table."""
EVALUATION_EVAL_CASES = "evaluation_eval_cases"
"""Base name of the eval-case table."""
EVALUATION_METRICS = "evaluation_metrics"
"""Base name of the metric table."""
EVALUATION_EVAL_SET_RESULTS = "evaluation_eval_set_results"
"""Base name of the result table."""

MAX_TABLE_NAME_LENGTH = 64
"""Longest prefix accepted (MySQL's identifier limit; checked on the prefix alone, as the reference does)."""

SCHEMA_FILES = ("schema.sql", "evalset_schema.sql", "metric_schema.sql")
"""The shipped DDL files: results, eval sets and cases, metrics."""

_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_VARCHAR = re.compile(r"^\s*`(\w+)` VARCHAR\((\d+)\)", re.MULTILINE)
# Values longer than this are shown clipped in messages.
_SHOWN_LENGTH = 300
_PREFIX_PLACEHOLDER = "{{PREFIX}}"
_CREATE_TABLE = re.compile(r"CREATE TABLE IF NOT EXISTS `([A-Za-z0-9_]+)`")
_KEY = re.compile(r"^\s*(UNIQUE )?KEY `([A-Za-z0-9_]+)` \(([^)]*)\)", re.MULTILINE)


def normalize_table_prefix(prefix: str) -> str:
    """Validate a table prefix and return it as it is put in front of table names.

    Args:
        prefix: ``""`` for no prefix, otherwise letters, digits and underscores, not starting
            with a digit, at most 64 characters. A missing trailing ``_`` is added.

    Returns:
        ``""`` or the prefix ending in ``_`` (``"test"`` and ``"test_"`` both give ``"test_"``).

    Raises:
        ConfigError: The prefix is too long or holds other characters (the reference's wording).
    """
    if not prefix:
        return ""
    length = len(prefix.encode("utf-8"))
    if length > MAX_TABLE_NAME_LENGTH:
        raise ConfigError(
            f"invalid table prefix: table name too long: {length} characters (max {MAX_TABLE_NAME_LENGTH})"
        )
    if not _NAME.fullmatch(prefix):
        raise ConfigError(
            f"invalid table prefix: invalid table name: {prefix} (must start with letter/underscore "
            "and contain only alphanumeric characters and underscores)"
        )
    return prefix if prefix.endswith("_") else prefix + "_"


def table_name(prefix: str, base: str) -> str:
    """Return the full name of a table, e.g. ``table_name("test", EVALUATION_METRICS)``.

    Raises:
        ConfigError: An invalid prefix (see :func:`normalize_table_prefix`).
    """
    return normalize_table_prefix(prefix) + base


@dataclass(frozen=True)
class Statement:
    """One DDL statement of a schema.

    Attributes:
        table: The full table name it concerns.
        sql: The statement text.
        index: The index it creates, or ``""`` for ``CREATE TABLE``.
    """

    table: str
    sql: str
    index: str = ""


def schema_text(filename: str, prefix: str) -> str:
    """Return a shipped ``.sql`` file with ``{{PREFIX}}`` replaced by the normalized prefix.

    Raises:
        ConfigError: An invalid prefix.
    """
    text = resources.files("agenteval.storage").joinpath(filename).read_text(encoding="utf-8")
    return text.replace(_PREFIX_PLACEHOLDER, normalize_table_prefix(prefix))


def load_schema(filenames: tuple[str, ...], prefix: str) -> list[Statement]:
    """Return the statements that create the tables of some ``.sql`` files, then their indexes.

    Args:
        filenames: Shipped ``.sql`` files, e.g. ``("schema.sql",)``.
        prefix: The table prefix (validated here).

    Returns:
        Every ``CREATE TABLE`` in file order, followed by one ``CREATE [UNIQUE] INDEX`` per key
        the tables declare.
    """
    tables: list[Statement] = []
    indexes: list[Statement] = []
    for filename in filenames:
        text = schema_text(filename, prefix)
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
        for sql in (part.strip() for part in code.split(";")):
            match = _CREATE_TABLE.search(sql)
            if match is None:
                continue
            table = match.group(1)
            tables.append(Statement(table, sql))
            for unique, index, columns in _KEY.findall(sql):
                kind = "UNIQUE INDEX" if unique else "INDEX"
                indexes.append(Statement(table, f"CREATE {kind} `{index}` ON `{table}` ({columns})", index))
    return tables + indexes


@cache
def column_lengths() -> dict[str, int]:
    """Return the most characters each ``VARCHAR`` column of the shipped tables holds, by column name.

    A column name used by several tables gets the smallest of their lengths.
    """
    lengths: dict[str, int] = {}
    for filename in SCHEMA_FILES:
        for column, length in _VARCHAR.findall(schema_text(filename, "")):
            lengths[column] = min(int(length), lengths.get(column, int(length)))
    return lengths


def _shown(value: str) -> str:
    return repr(value) if len(value) <= _SHOWN_LENGTH else repr(value[:_SHOWN_LENGTH]) + "..."


def check_columns(*, advice: str = "", **values: str) -> None:
    """Refuse, before any SQL, a value its ``VARCHAR`` column cannot hold.

    Such a value would fail at the database, as a ``UnicodeEncodeError`` deep in the driver, or,
    on a server whose ``sql_mode`` is not strict, be cut to the column's length with only a
    warning: two ids that differ after the cut would then share a row.

    Args:
        advice: A sentence on how to shorten a value, added to the message when one is too long.
        **values: Values by the name of the column they go to (``app_name=...``, ``eval_id=...``),
            checked in the order given.

    Raises:
        ConfigError: A value holds a lone surrogate (it has no UTF-8 encoding), or has more
            characters than its column holds; the message names the column and shows the value.
    """
    lengths = column_lengths()
    for column, value in values.items():
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ConfigError(
                    f"{column} {_shown(value)} cannot be stored: it holds a lone surrogate"
                    f" ({value[exc.start]!r} at index {exc.start}), which is not a character and has no UTF-8"
                    " encoding; pass valid Unicode text"
                ) from None
        # Characters, as MySQL counts them in a utf8mb4 column: code points.
        if len(value) > lengths[column]:
            raise ConfigError(
                f"{column} {_shown(value)} is {len(value)} characters long; the MySQL store keeps it in a column"
                f" of at most {lengths[column]} characters" + (f". {advice}" if advice else "")
            )
