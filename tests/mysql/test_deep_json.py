"""JSON nested deeper than the server accepts: a StorageError that says so, names the place, writes nothing.

MariaDB's ``JSON`` column is a ``LONGTEXT`` with ``CHECK (JSON_VALID(...))``, and ``JSON_VALID``
fails for 32 levels of arrays and objects or more. The server's own error (4025, "CONSTRAINT ...
failed") does not mention nesting. The limits below are MariaDB's, the server the tests run on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from agenteval.errors import StorageError
from agenteval.evalresult import MySQLEvalResultManager
from agenteval.evalresult.models import EvalSetResult
from agenteval.evalset import MySQLEvalSetManager
from agenteval.evalset.models import EvalCase, Invocation, Tool
from agenteval.metric import MySQLMetricManager
from agenteval.metric.models import EvalMetric
from agenteval.storage._mysql_json import Nesting, too_deep
from tests.evalresult._data import make_result
from tests.mysql.conftest import MySQLServer

pytestmark = [pytest.mark.mysql]

LIMIT = 31
ADVICE = "nothing was written. Flatten the value, or keep it as a JSON string"


def nested(levels: int) -> Any:
    """``{"a": {"a": ... 1}}``: ``levels`` objects, one inside the other."""
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


def with_arguments(result_id: str, arguments: Any) -> EvalSetResult:
    result = make_result(eval_set_result_id=result_id)
    invocation = result.eval_case_results[0].eval_metric_result_per_invocation[0].actual_invocation
    assert invocation is not None
    invocation.tools[0].arguments = arguments
    return result


@pytest_asyncio.fixture
async def mariadb(mysql: MySQLServer) -> MySQLServer:
    [(version,)] = mysql.query("SELECT VERSION()")
    if "MariaDB" not in version:
        pytest.skip(f"the nesting limits tested are MariaDB's; the server is MySQL {version}")
    return mysql


@pytest_asyncio.fixture
async def results(mariadb: MySQLServer) -> AsyncIterator[MySQLEvalResultManager]:
    store = MySQLEvalResultManager(mariadb.dsn, table_prefix=mariadb.prefix)
    yield store
    await store.close()


@pytest.mark.asyncio
async def test_a_result_nested_too_deeply_names_the_case_the_field_and_the_limit(
    results: MySQLEvalResultManager, mariadb: MySQLServer
) -> None:
    table = f"{mariadb.prefix}evaluation_eval_set_results"
    # The arguments are the 8th level of the column's document ([ {case} [ {turn} {invocation} [ {tool} {arguments}).
    deepest_kept = with_arguments("kept", nested(LIMIT - 7))
    assert await results.save("app", deepest_kept) == "kept"
    assert (await results.get("app", "kept")).eval_case_results == deepest_kept.eval_case_results

    with pytest.raises(StorageError) as info:
        await results.save("app", with_arguments("deep", nested(40)))
    path = "evalCaseResults[0].evalMetricResultPerInvocation[0].actualInvocation.tools[0].arguments" + ".a" * 24
    assert str(info.value) == (
        f"mysql 127.0.0.1:3306: store eval set result app.deep (table {table}) failed: JSON nested too deeply: in eval"
        f" case 'case-1', the value at {path} is nested 32 levels deep, and the server accepts at most {LIMIT} levels"
        f" of JSON arrays and objects (MySQL error 4025: CONSTRAINT `{table}.eval_case_results` failed for"
        f" `test`.`{table}`); {ADVICE}"
    )
    assert await results.list("app") == ["kept"]


@pytest.mark.asyncio
async def test_the_deep_case_is_named_among_others(results: MySQLEvalResultManager) -> None:
    result = with_arguments("deep", {"fine": True})
    deep = result.eval_case_results[0].model_copy(deep=True, update={"eval_id": "the-deep-one"})
    invocation = deep.eval_metric_result_per_invocation[0].actual_invocation
    assert invocation is not None
    invocation.tools[0].arguments = {"list": [nested(30)]}
    result.eval_case_results.append(deep)
    with pytest.raises(StorageError, match=r"in eval case 'the-deep-one', the value at evalCaseResults\[1\]\."):
        await results.save("app", result)


@pytest.mark.asyncio
async def test_an_eval_case_nested_too_deeply(mariadb: MySQLServer) -> None:
    sets = MySQLEvalSetManager(mariadb.dsn, table_prefix=mariadb.prefix)
    table = f"{mariadb.prefix}evaluation_eval_cases"
    await sets.create("app", "set")
    # The arguments are the 6th level of the case's document: {case} [ {turn} [ {tool} {arguments}.
    kept = EvalCase(eval_id="kept", conversation=[Invocation(tools=[Tool(name="t", arguments=nested(LIMIT - 5))])])
    await sets.add_case("app", "set", kept)
    deep = EvalCase(eval_id="deep", conversation=[Invocation(tools=[Tool(name="t", arguments=nested(27))])])
    for operation, call in [
        ("add eval case app.set.deep", sets.add_case("app", "set", deep)),
        ("update eval case app.set.kept", sets.update_case("app", "set", deep.model_copy(update={"eval_id": "kept"}))),
    ]:
        with pytest.raises(StorageError) as info:
            await call
        case = "deep" if "add" in operation else "kept"
        assert str(info.value) == (
            f"mysql 127.0.0.1:3306: {operation} (table {table}) failed: JSON nested too deeply: in eval case"
            f" '{case}', the value at conversation[0].tools[0].arguments{'.a' * 26} is nested 32 levels deep, and the"
            f" server accepts at most {LIMIT} levels of JSON arrays and objects (MySQL error 4025: CONSTRAINT"
            f" `{table}.eval_case` failed for `test`.`{table}`); {ADVICE}"
        )
    assert (await sets.get("app", "set")).eval_cases[0].conversation[0].tools == kept.conversation[0].tools
    await sets.close()


@pytest.mark.asyncio
async def test_a_metric_nested_too_deeply(mariadb: MySQLServer) -> None:
    metrics = MySQLMetricManager(mariadb.dsn, table_prefix=mariadb.prefix)
    with pytest.raises(StorageError) as info:
        await metrics.add("app", "set", EvalMetric(metric_name="m", extension={"list": [nested(LIMIT)]}))
    assert f"JSON nested too deeply: the value at extension.list[0]{'.a' * 28} is nested 32 levels deep" in str(
        info.value
    )
    assert await metrics.list("app", "set") == []
    await metrics.close()


def test_the_path_quotes_keys_that_are_not_identifiers() -> None:
    document = '{"evalId": "c", "x": [1, {"a b": {"é": [[]]}}]}'
    assert too_deep({"": document}, 4) == Nesting('x[1]["a b"]["é"]', 5, "c")
    assert too_deep({"root": document}, 5) == Nesting('root.x[1]["a b"]["é"][0]', 6, "c")
    assert too_deep({"root": document}, 6) is None


@pytest.mark.asyncio
async def test_an_evaluation_fails_only_the_case_too_deep_for_the_store_and_saves_the_others(
    results: MySQLEvalResultManager,
) -> None:
    import agenteval as ae
    from agenteval.evalset.trace import ExecutionTrace, TraceStep, TraceTool

    limit = await results.value_depth_limit()
    assert limit == LIMIT - 11  # the levels around a value in a result's execution trace

    def agent(message: str, turn: ae.Turn) -> str:
        levels = int(message)
        turn.record_tool("lookup", {"q": nested(levels - 1)}, "found")  # the arguments nest `levels` deep
        tool = TraceTool(name="lookup", arguments={"q": nested(levels - 1)})
        turn.execution_trace = ExecutionTrace(steps=[TraceStep(step_id="s1", tools=[tool])])
        return "done"

    cases = [
        ae.EvalCase.of(name, ae.Invocation.of(str(levels), "done"))
        for name, levels in (("shallow", 2), ("at_the_limit", limit), ("too_deep", limit + 1))
    ]
    report = await ae.Evaluator("deep-app", agent, result_manager=results, progress=False).aevaluate(
        ae.EvalSet.of("deep-set", cases), metrics=[ae.EvalMetric.final_response("exact")]
    )

    statuses = dict(zip(report.cases["eval_id"], report.cases["status"], strict=True))
    assert statuses == {"shallow": "passed", "at_the_limit": "passed", "too_deep": "failed"}
    [message] = report.cases.loc[report.cases["eval_id"] == "too_deep", "error_message"]
    assert f"nested {limit + 1} levels deep, over the limit of {limit} levels" in message
    stored = await results.get("deep-app", report.result.eval_set_result_id)
    assert [case.eval_id for case in stored.eval_case_results] == ["shallow", "at_the_limit", "too_deep"]
