"""Configuration of the MySQL stores: table prefixes, DSNs, named instances (no server needed)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from agenteval.errors import ConfigError, MissingDependencyError
from agenteval.evalresult import MySQLEvalResultManager
from agenteval.evalset import MySQLEvalSetManager
from agenteval.metric import MySQLMetricManager
from agenteval.storage import (
    normalize_table_prefix,
    parse_dsn,
    register_mysql_instance,
    schema_text,
    table_name,
    unregister_mysql_instance,
)
from agenteval.storage._mysql_schema import EVALUATION_EVAL_SET_RESULTS, column_lengths, load_schema

DSN = "mysql://root@127.0.0.1:3306/test"


def options(store: Any) -> dict[str, Any]:
    result: dict[str, Any] = store._client._options
    return result


@pytest.fixture
def instances() -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        unregister_mysql_instance(name)


# --- table prefixes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [("", ""), ("test", "test_"), ("test_", "test_"), ("_x", "_x_"), ("T1_b", "T1_b_"), ("a" * 64, "a" * 64 + "_")],
)
def test_valid_prefixes(prefix: str, expected: str) -> None:
    assert normalize_table_prefix(prefix) == expected


def test_prefix_test_names_the_reference_table() -> None:
    assert table_name("test", EVALUATION_EVAL_SET_RESULTS) == "test_evaluation_eval_set_results"
    assert table_name("test_", EVALUATION_EVAL_SET_RESULTS) == "test_evaluation_eval_set_results"
    assert table_name("", EVALUATION_EVAL_SET_RESULTS) == "evaluation_eval_set_results"
    assert MySQLEvalResultManager(DSN, table_prefix="test").tables == ("test_evaluation_eval_set_results",)
    assert MySQLEvalSetManager(DSN, table_prefix="test").tables == (
        "test_evaluation_eval_sets",
        "test_evaluation_eval_cases",
    )
    assert MySQLMetricManager(DSN).tables == ("evaluation_metrics",)


def test_too_long_prefix() -> None:
    with pytest.raises(ConfigError, match=r"^invalid table prefix: table name too long: 65 characters \(max 64\)$"):
        normalize_table_prefix("a" * 65)
    with pytest.raises(ConfigError, match=r"too long: 66 characters"):
        normalize_table_prefix("é" * 33)  # counted in bytes, as the reference does


@pytest.mark.parametrize(
    "prefix",
    ["1abc", "a-b", "a b", "a.b", "a`b", "x'; DROP TABLE evaluation_metrics; --", "ünï", "a\n", "a;", '"a"', "%"],
)
def test_bad_prefix_characters(prefix: str) -> None:
    message = (
        f"invalid table prefix: invalid table name: {prefix} "
        "(must start with letter/underscore and contain only alphanumeric characters and underscores)"
    )
    with pytest.raises(ConfigError) as info:
        normalize_table_prefix(prefix)
    assert str(info.value) == message


def test_the_column_lengths_are_read_from_the_shipped_schema() -> None:
    names = ["app_name", "eval_set_id", "eval_set_result_id", "eval_set_result_name", "name", "eval_id", "metric_name"]
    assert column_lengths() == dict.fromkeys(names, 255) | {"eval_mode": 32}


@pytest.mark.parametrize("store", [MySQLEvalResultManager, MySQLEvalSetManager, MySQLMetricManager])
def test_bad_prefix_is_rejected_at_construction(store: type[Any]) -> None:
    with pytest.raises(ConfigError, match="^invalid table prefix: "):
        store(DSN, table_prefix="x`; DROP TABLE t; --")


# --- DSNs -----------------------------------------------------------------------------------


def test_url_dsn() -> None:
    assert parse_dsn("mysql://us%40er:p%40ss%3Aw%2Fd@db.example:3307/evals?charset=utf8mb4") == {
        "host": "db.example",
        "port": 3307,
        "user": "us@er",
        "password": "p@ss:w/d",
        "database": "evals",
        "charset": "utf8mb4",
    }
    assert parse_dsn("mysql://root@127.0.0.1/test") == {
        "host": "127.0.0.1",
        "port": 3306,
        "user": "root",
        "password": "",
        "database": "test",
    }
    assert parse_dsn("mariadb://[::1]:3310/x")["host"] == "::1"
    assert parse_dsn("mysql+pymysql://h/x?connect_timeout=2.5&read_timeout=7")["read_timeout"] == 7.0


def test_go_driver_dsn() -> None:
    parsed = parse_dsn("user:p@ss:w/rd@tcp(db.example:3307)/evals?parseTime=true&loc=Local&charset=utf8mb4,utf8")
    assert parsed == {
        "user": "user",
        "password": "p@ss:w/rd",  # verbatim, as the Go driver reads it
        "host": "db.example",
        "port": 3307,
        "database": "evals",
        "charset": "utf8mb4",
    }
    assert parse_dsn("root@tcp([::1]:3310)/test")[("host")] == "::1"
    assert parse_dsn("root@tcp(h)/test")["port"] == 3306
    assert parse_dsn("root@/test") == {
        "user": "root",
        "password": "",
        "host": "127.0.0.1",
        "port": 3306,
        "database": "test",
    }
    assert parse_dsn("u:p@unix(/run/mysqld/mysqld.sock)/db")["unix_socket"] == "/run/mysqld/mysqld.sock"
    timeouts = parse_dsn("u@tcp(h:1)/d?timeout=1m30s&readTimeout=500ms&writeTimeout=2s&allowNativePasswords=true")
    assert (timeouts["connect_timeout"], timeouts["read_timeout"], timeouts["write_timeout"]) == (90.0, 0.5, 2.0)


@pytest.mark.parametrize(
    ("dsn", "message"),
    [
        ("", "mysql: dsn is empty"),
        ("user:secret@tcp(host:3306)", "missing the '/'"),
        ("user:secret@tcp(host:port)/db", "port is not a number"),
        ("user:secret@tcp(host/db", "enclosed in"),
        ("user:secret@udp(host)/db", "unsupported network 'udp'"),
        ("postgres://user:secret@host/db", "unsupported scheme 'postgres'"),
        ("mysql://user:secret@host:port/db", "port is not a number"),
        ("user:secret@tcp(h)/db?tls=true", "tls is not supported"),
        ("user:secret@tcp(h)/db?timeout=soon", "parameter timeout is not a duration"),
        ("user:secret@tcp(h)/db?timeout=0s", "must be positive"),
    ],
)
def test_bad_dsn(dsn: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        parse_dsn(dsn)
    assert "secret" not in str(info.value)


def test_connect_options_override_the_dsn_and_are_checked() -> None:
    store = MySQLEvalResultManager(DSN + "?charset=utf8", connect_options={"charset": "utf8mb4", "read_timeout": 9})
    assert options(store)["charset"] == "utf8mb4"
    assert options(store)["read_timeout"] == 9
    assert options(store)["autocommit"] is True
    with pytest.raises(ConfigError, match=r"^unknown PyMySQL connect option\(s\): bogus$"):
        MySQLEvalResultManager(DSN, connect_options={"bogus": 1})


@pytest.mark.parametrize("option", ["cursorclass", "autocommit"])
def test_options_the_stores_manage_are_rejected(option: str) -> None:
    import pymysql.cursors

    value = pymysql.cursors.DictCursor if option == "cursorclass" else False
    with pytest.raises(
        ConfigError, match=rf"^PyMySQL connect option\(s\) {option} cannot be set: .*read rows as tuples"
    ):
        MySQLEvalResultManager(DSN, connect_options={option: value})


def test_no_dsn_and_no_instance() -> None:
    with pytest.raises(ConfigError, match="^mysql: dsn is empty$"):
        MySQLEvalResultManager()


def test_the_stores_have_timeouts_unless_told_otherwise() -> None:
    timeouts = ("connect_timeout", "read_timeout", "write_timeout")
    assert [options(MySQLEvalResultManager(DSN))[key] for key in timeouts] == [10.0, 120.0, 120.0]
    go = MySQLEvalSetManager("root@tcp(127.0.0.1:3306)/test?timeout=3s&readTimeout=1m&writeTimeout=500ms")
    assert [options(go)[key] for key in timeouts] == [3.0, 60.0, 0.5]
    unbounded = MySQLMetricManager(DSN, connect_options={"read_timeout": None})
    assert options(unbounded)["read_timeout"] is None


def test_init_timeout_not_positive_keeps_the_default() -> None:
    assert MySQLMetricManager(DSN, init_timeout=-1)._client._init_timeout == 30.0
    assert MySQLMetricManager(DSN, init_timeout=0)._client._init_timeout == 30.0
    assert MySQLMetricManager(DSN, init_timeout=2.5)._client._init_timeout == 2.5


def test_skip_db_init_plans_no_ddl() -> None:
    assert MySQLMetricManager(DSN, skip_db_init=True)._client._schema is None
    assert MySQLMetricManager(DSN)._client._schema == load_schema(("metric_schema.sql",), "")


def test_repr_hides_the_password() -> None:
    text = repr(MySQLEvalSetManager("mysql://root:hunter2@db.example:3307/evals", table_prefix="p"))
    assert text == "MySQLEvalSetManager(address='db.example:3307', database='evals', table_prefix='p_')"


# --- named instances ------------------------------------------------------------------------


def test_unknown_instance(instances: list[str]) -> None:
    with pytest.raises(ConfigError, match="^mysql instance nope not found$"):
        MySQLEvalResultManager(instance="nope")


def test_instance_is_used_when_there_is_no_dsn(instances: list[str]) -> None:
    instances.append("evals")
    register_mysql_instance("evals", dsn="app:pw@tcp(db.example:3310)/evals", connect_timeout=3)
    store = MySQLEvalResultManager(instance="evals", connect_options={"read_timeout": 4})
    assert store._client.address == "db.example:3310"
    assert {
        key: options(store)[key] for key in ["user", "password", "database", "connect_timeout", "read_timeout"]
    } == {
        "user": "app",
        "password": "pw",
        "database": "evals",
        "connect_timeout": 3,
        "read_timeout": 4,
    }


def test_dsn_wins_over_instance(instances: list[str]) -> None:
    instances.append("evals")
    register_mysql_instance("evals", dsn="mysql://a@db.example:3310/evals")
    assert MySQLMetricManager(DSN, instance="evals")._client.address == "127.0.0.1:3306"
    # An unknown instance is not even looked up when a DSN is given.
    assert MySQLMetricManager(DSN, instance="nope")._client.address == "127.0.0.1:3306"


def test_registering_again_replaces(instances: list[str]) -> None:
    instances.append("evals")
    register_mysql_instance("evals", dsn="mysql://a@one:1/x")
    register_mysql_instance("evals", host="two", port=2, user="b")
    assert MySQLMetricManager(instance="evals")._client.address == "two:2"
    unregister_mysql_instance("evals")
    with pytest.raises(ConfigError, match="^mysql instance evals not found$"):
        MySQLMetricManager(instance="evals")


def test_bad_registrations() -> None:
    with pytest.raises(ConfigError, match="^mysql instance name is empty$"):
        register_mysql_instance("", dsn=DSN)
    with pytest.raises(ConfigError, match="^mysql: dsn is empty$"):
        register_mysql_instance("empty")
    with pytest.raises(ConfigError, match="missing the '/'"):
        register_mysql_instance("bad", dsn="root@tcp(h)")


# --- the shipped schema and the optional dependency -----------------------------------------


def test_shipped_schema_files() -> None:
    text = schema_text("schema.sql", "trpc")
    assert "CREATE TABLE IF NOT EXISTS `trpc_evaluation_eval_set_results`" in text
    assert "UNIQUE KEY `uniq_results_app_result_id` (`app_name`, `eval_set_result_id`)" in text
    assert "{{PREFIX}}" not in text
    statements = load_schema(("schema.sql", "evalset_schema.sql", "metric_schema.sql"), "")
    assert [(s.table, s.index) for s in statements] == [
        ("evaluation_eval_set_results", ""),
        ("evaluation_eval_sets", ""),
        ("evaluation_eval_cases", ""),
        ("evaluation_metrics", ""),
        ("evaluation_eval_set_results", "uniq_results_app_result_id"),
        ("evaluation_eval_set_results", "idx_results_app_created"),
        ("evaluation_eval_set_results", "idx_results_app_set_created"),
        ("evaluation_eval_sets", "uniq_eval_sets_app_eval_set"),
        ("evaluation_eval_sets", "idx_eval_sets_app_created"),
        ("evaluation_eval_cases", "uniq_eval_cases_app_set_case"),
        ("evaluation_eval_cases", "idx_eval_cases_app_set_order"),
        ("evaluation_metrics", "uniq_metrics_app_set_name"),
        ("evaluation_metrics", "idx_metrics_app_set"),
    ]
    assert statements[5].sql == (
        "CREATE INDEX `idx_results_app_created` ON `evaluation_eval_set_results` (`app_name`, `created_at`)"
    )


def test_missing_pymysql(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pymysql", None)
    with pytest.raises(MissingDependencyError) as info:
        MySQLEvalResultManager(DSN)
    assert str(info.value) == "the MySQL store needs the optional package 'PyMySQL': pip install 'agenteval[mysql]'"
    assert isinstance(info.value, ImportError)
