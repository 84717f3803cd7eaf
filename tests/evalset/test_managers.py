"""Contract tests shared by the in-memory and local eval-set stores."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import pytest_asyncio

from agenteval._util.trpc_json import WireModel
from agenteval.errors import ConfigError, NotFoundError
from agenteval.evalset.identity import case_hash, eval_set_hash
from agenteval.evalset.local import LocalEvalSetManager
from agenteval.evalset.manager import EvalSetManager
from agenteval.evalset.memory import InMemoryEvalSetManager
from agenteval.evalset.message import Message, Role
from agenteval.evalset.models import EvalCase, EvalMode, EvalSet, Invocation, SessionInput, Tool
from tests.evalset._store_contract import empty_name_params, in_several_event_loops

APP = "app"
SET = "set"


def make_case(eval_id: str, *, text: str = "hi", stamp: float | None = None) -> EvalCase:
    return EvalCase(
        eval_id=eval_id,
        conversation=[
            Invocation(invocation_id=f"{eval_id}-1", user_content=Message(role=Role.USER, content=text)),
            Invocation(invocation_id=f"{eval_id}-2", creation_timestamp=5.0),
        ],
        session_input=SessionInput(app_name=APP, user_id="u", state={"k": [1, 2]}),
        creation_timestamp=stamp,
    )


@pytest.fixture(params=["memory", "local"])
def manager(request: pytest.FixtureRequest, tmp_path: Path) -> EvalSetManager:
    if request.param == "memory":
        return InMemoryEvalSetManager()
    return LocalEvalSetManager(tmp_path)


@pytest_asyncio.fixture
async def with_set(manager: EvalSetManager) -> EvalSetManager:
    await manager.create(APP, SET)
    return manager


def test_satisfies_protocol(manager: EvalSetManager) -> None:
    assert isinstance(manager, EvalSetManager)


@pytest.mark.asyncio
async def test_create_and_get(manager: EvalSetManager) -> None:
    before = time.time()
    created = await manager.create(APP, SET)
    after = time.time()
    assert created.eval_set_id == SET
    assert created.name == SET
    assert created.eval_cases == []
    assert created.creation_timestamp is not None
    assert before <= created.creation_timestamp <= after
    assert await manager.get(APP, SET) == created


@pytest.mark.asyncio
async def test_create_existing_is_config_error(with_set: EvalSetManager) -> None:
    with pytest.raises(ConfigError, match=r"^eval set app\.set already exists$"):
        await with_set.create(APP, SET)


@pytest.mark.asyncio
@pytest.mark.parametrize("app", [APP, "other-app"])
async def test_get_missing(with_set: EvalSetManager, app: str) -> None:
    with pytest.raises(NotFoundError, match=rf"eval set {app}\.missing not found"):
        await with_set.get(app, "missing")


@pytest.mark.asyncio
async def test_list(manager: EvalSetManager) -> None:
    assert await manager.list(APP) == []
    for eval_set_id in ["b", "a", "c"]:
        await manager.create(APP, eval_set_id)
    await manager.create("other", "z")
    assert sorted(await manager.list(APP)) == ["a", "b", "c"]
    assert await manager.list("other") == ["z"]
    assert await manager.list("unknown") == []


@pytest.mark.asyncio
async def test_list_order_memory() -> None:
    manager = InMemoryEvalSetManager()
    for eval_set_id in ["b", "a", "c"]:
        await manager.create(APP, eval_set_id)
    assert await manager.list(APP) == ["b", "a", "c"]


@pytest.mark.asyncio
async def test_list_order_local(tmp_path: Path) -> None:
    manager = LocalEvalSetManager(tmp_path)
    for eval_set_id in ["b", "a", "c"]:
        await manager.create(APP, eval_set_id)
    assert await manager.list(APP) == ["a", "b", "c"]


@pytest.mark.asyncio
async def test_delete(with_set: EvalSetManager) -> None:
    await with_set.create(APP, "keep")
    await with_set.delete(APP, SET)
    assert await with_set.list(APP) == ["keep"]
    with pytest.raises(NotFoundError):
        await with_set.get(APP, SET)
    with pytest.raises(NotFoundError, match=r"eval set app\.set not found"):
        await with_set.delete(APP, SET)
    with pytest.raises(NotFoundError):
        await with_set.delete("unknown", SET)
    await with_set.create(APP, SET)  # the id is free again
    assert (await with_set.get(APP, SET)).eval_cases == []


@pytest.mark.asyncio
async def test_add_and_get_case(with_set: EvalSetManager) -> None:
    case = make_case("c1", text="héllo")
    case.actual_conversation = [Invocation(invocation_id="a-1")]
    case.eval_mode = EvalMode.TRACE
    before = time.time()
    await with_set.add_case(APP, SET, case)
    after = time.time()

    got = await with_set.get_case(APP, SET, "c1")
    assert got.eval_mode == EvalMode.TRACE
    assert got.session_input == case.session_input
    assert got.conversation[0].user_content == Message(role=Role.USER, content="héllo")
    # Missing creation times are filled; present ones are kept.
    for stamp in [got.creation_timestamp, got.conversation[0].creation_timestamp]:
        assert stamp is not None
        assert before <= stamp <= after
    assert got.conversation[1].creation_timestamp == 5.0
    assert got.actual_conversation[0].creation_timestamp is not None
    # The caller's object is not touched.
    assert case.creation_timestamp is None
    assert case.conversation[0].creation_timestamp is None
    assert case.actual_conversation[0].creation_timestamp is None

    assert (await with_set.get(APP, SET)).eval_cases == [got]


@pytest.mark.asyncio
async def test_add_case_writes_the_case_as_json_once(with_set: EvalSetManager, monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[str] = []
    to_json = WireModel.to_json

    def counted(self: WireModel, *, indent: int | None = 2) -> str:
        written.append(type(self).__name__)
        return to_json(self, indent=indent)

    monkeypatch.setattr(WireModel, "to_json", counted)
    await with_set.add_case(APP, SET, make_case("c1"))
    assert written.count("EvalCase") == 1


@pytest.mark.asyncio
async def test_add_case_keeps_given_timestamp_and_order(with_set: EvalSetManager) -> None:
    for eval_id in ["z", "a", "m"]:
        await with_set.add_case(APP, SET, make_case(eval_id, stamp=42.5))
    eval_set = await with_set.get(APP, SET)
    assert [c.eval_id for c in eval_set.eval_cases] == ["z", "a", "m"]
    assert {c.creation_timestamp for c in eval_set.eval_cases} == {42.5}


@pytest.mark.asyncio
async def test_add_case_duplicate(with_set: EvalSetManager) -> None:
    await with_set.add_case(APP, SET, make_case("c1"))
    with pytest.raises(ConfigError, match=r"^eval case app\.set\.c1 already exists$"):
        await with_set.add_case(APP, SET, make_case("c1", text="other"))
    got = await with_set.get_case(APP, SET, "c1")
    assert got.conversation[0].user_content is not None
    assert got.conversation[0].user_content.content == "hi"


@pytest.mark.asyncio
async def test_add_case_to_missing_set(manager: EvalSetManager) -> None:
    with pytest.raises(NotFoundError, match=r"eval set app\.set not found"):
        await manager.add_case(APP, SET, make_case("c1"))
    assert await manager.list(APP) == []


@pytest.mark.asyncio
async def test_invalid_case_argument(with_set: EvalSetManager) -> None:
    for method in [with_set.add_case, with_set.update_case]:
        with pytest.raises(ConfigError, match=r"^eval case is None$"):
            await method(APP, SET, None)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match=r"^eval case id is empty$"):
            await method(APP, SET, EvalCase())


@pytest.mark.asyncio
async def test_a_case_json_cannot_hold_is_rejected(with_set: EvalSetManager) -> None:
    await with_set.add_case(APP, SET, make_case("kept"))
    before = await with_set.get(APP, SET)
    with_nan = make_case("kept")
    with_nan.conversation[0].tools = [Tool(name="t", arguments={"x": float("nan")})]
    with_inf = make_case("new")
    assert with_inf.session_input is not None
    with_inf.session_input.state = {"limit": float("inf")}

    with pytest.raises(ConfigError) as info:
        await with_set.add_case(APP, SET, with_inf)
    assert str(info.value) == (
        "eval case app.set.new: field sessionInput.state.limit is not a finite number (Infinity); "
        "JSON has no NaN or Infinity, so store a finite number (or a string) instead"
    )
    with pytest.raises(
        ConfigError, match=r"^eval case app\.set\.kept: field conversation\[0\]\.tools\[0\]\.arguments\.x "
    ):
        await with_set.update_case(APP, SET, with_nan)
    assert await with_set.get(APP, SET) == before


@pytest.mark.asyncio
async def test_get_case_missing(with_set: EvalSetManager) -> None:
    with pytest.raises(NotFoundError, match=r"^eval case app\.set\.nope not found$"):
        await with_set.get_case(APP, SET, "nope")
    with pytest.raises(NotFoundError, match=r"eval set app\.missing not found"):
        await with_set.get_case(APP, "missing", "nope")


@pytest.mark.asyncio
async def test_update_case(with_set: EvalSetManager) -> None:
    for eval_id in ["a", "b", "c"]:
        await with_set.add_case(APP, SET, make_case(eval_id))
    replacement = EvalCase(eval_id="b", session_input=SessionInput(user_id="new"))
    await with_set.update_case(APP, SET, replacement)
    eval_set = await with_set.get(APP, SET)
    assert [c.eval_id for c in eval_set.eval_cases] == ["a", "b", "c"]
    # The case is stored as given: update does not stamp creation times.
    assert eval_set.eval_cases[1] == replacement

    with pytest.raises(NotFoundError, match=r"^eval case app\.set\.nope not found$"):
        await with_set.update_case(APP, SET, EvalCase(eval_id="nope"))
    with pytest.raises(NotFoundError, match=r"eval set app\.missing not found"):
        await with_set.update_case(APP, "missing", replacement)


@pytest.mark.asyncio
async def test_delete_case(with_set: EvalSetManager) -> None:
    for eval_id in ["a", "b", "c"]:
        await with_set.add_case(APP, SET, make_case(eval_id))
    await with_set.delete_case(APP, SET, "b")
    assert [c.eval_id for c in (await with_set.get(APP, SET)).eval_cases] == ["a", "c"]
    with pytest.raises(NotFoundError, match=r"^eval case app\.set\.b not found$"):
        await with_set.get_case(APP, SET, "b")
    with pytest.raises(NotFoundError, match=r"^eval case app\.set\.b not found$"):
        await with_set.delete_case(APP, SET, "b")
    with pytest.raises(NotFoundError, match=r"eval set app\.missing not found"):
        await with_set.delete_case(APP, "missing", "a")
    await with_set.add_case(APP, SET, make_case("b"))  # the id is free again


@pytest.mark.asyncio
async def test_case_edits_after_a_delete_find_the_right_cases(with_set: EvalSetManager) -> None:
    for eval_id in ["a", "b", "c", "d"]:
        await with_set.add_case(APP, SET, make_case(eval_id, text=eval_id))
    await with_set.delete_case(APP, SET, "b")
    await with_set.update_case(APP, SET, make_case("d", text="d2"))
    await with_set.add_case(APP, SET, make_case("b", text="b2"))
    with pytest.raises(ConfigError, match="eval case app.set.c already exists"):
        await with_set.add_case(APP, SET, make_case("c"))
    await with_set.delete_case(APP, SET, "a")

    def text(case: EvalCase) -> str:
        message = case.conversation[0].user_content
        return message.content if message is not None else ""

    cases = (await with_set.get(APP, SET)).eval_cases
    assert [(case.eval_id, text(case)) for case in cases] == [("c", "c"), ("d", "d2"), ("b", "b2")]
    assert text(await with_set.get_case(APP, SET, "b")) == "b2"


@pytest.mark.asyncio
async def test_returned_objects_are_copies(with_set: EvalSetManager) -> None:
    case = make_case("c1")
    await with_set.add_case(APP, SET, case)
    case.conversation[0].invocation_id = "changed"
    assert case.session_input is not None
    case.session_input.state["k"].append(3)

    got = await with_set.get_case(APP, SET, "c1")
    assert got.conversation[0].invocation_id == "c1-1"
    assert got.session_input is not None
    assert got.session_input.state == {"k": [1, 2]}
    got.conversation.clear()
    got.session_input.state["k"].append(4)

    eval_set = await with_set.get(APP, SET)
    eval_set.eval_cases[0].eval_id = "renamed"
    eval_set.eval_cases.append(make_case("extra"))
    eval_set.name = "renamed"

    again = await with_set.get(APP, SET)
    assert again.name == SET
    assert [c.eval_id for c in again.eval_cases] == ["c1"]
    assert len(again.eval_cases[0].conversation) == 2
    assert again.eval_cases[0].session_input is not None
    assert again.eval_cases[0].session_input.state == {"k": [1, 2]}


@pytest.mark.asyncio
async def test_created_set_is_a_copy(manager: EvalSetManager) -> None:
    created = await manager.create(APP, SET)
    created.eval_cases.append(make_case("x"))
    created.name = "changed"
    got = await manager.get(APP, SET)
    assert got.name == SET
    assert got.eval_cases == []


@pytest.mark.asyncio
async def test_updated_case_is_copied(with_set: EvalSetManager) -> None:
    await with_set.add_case(APP, SET, make_case("c1"))
    replacement = make_case("c1", text="new")
    await with_set.update_case(APP, SET, replacement)
    replacement.conversation.clear()
    assert len((await with_set.get_case(APP, SET, "c1")).conversation) == 2


Call = Callable[[EvalSetManager], Awaitable[object]]

EMPTY_NAME_CALLS: list[tuple[str, Call, str]] = [
    ("get-app", lambda m: m.get("", SET), "app name is empty"),
    ("get-set", lambda m: m.get(APP, ""), "eval set id is empty"),
    ("create-app", lambda m: m.create("", SET), "app name is empty"),
    ("create-set", lambda m: m.create(APP, ""), "eval set id is empty"),
    ("list-app", lambda m: m.list(""), "app name is empty"),
    ("delete-app", lambda m: m.delete("", SET), "app name is empty"),
    ("delete-set", lambda m: m.delete(APP, ""), "eval set id is empty"),
    ("get_case-app", lambda m: m.get_case("", SET, "c"), "app name is empty"),
    ("get_case-set", lambda m: m.get_case(APP, "", "c"), "eval set id is empty"),
    ("get_case-case", lambda m: m.get_case(APP, SET, ""), "eval case id is empty"),
    ("add_case-app", lambda m: m.add_case("", SET, make_case("c")), "app name is empty"),
    ("add_case-set", lambda m: m.add_case(APP, "", make_case("c")), "eval set id is empty"),
    ("update_case-app", lambda m: m.update_case("", SET, make_case("c")), "app name is empty"),
    ("update_case-set", lambda m: m.update_case(APP, "", make_case("c")), "eval set id is empty"),
    ("delete_case-app", lambda m: m.delete_case("", SET, "c"), "app name is empty"),
    ("delete_case-set", lambda m: m.delete_case(APP, "", "c"), "eval set id is empty"),
    ("delete_case-case", lambda m: m.delete_case(APP, SET, ""), "eval case id is empty"),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(("call", "message"), empty_name_params(EMPTY_NAME_CALLS))
async def test_empty_names(with_set: EvalSetManager, call: Call, message: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{message}$"):
        await call(with_set)


@pytest.mark.asyncio
async def test_close(manager: EvalSetManager) -> None:
    assert await manager.close() is None  # type: ignore[func-returns-value]


@pytest.mark.asyncio
async def test_concurrent_add_case_loses_nothing(with_set: EvalSetManager) -> None:
    ids = [f"case-{i:03d}" for i in range(100)]
    await asyncio.gather(*(with_set.add_case(APP, SET, make_case(i)) for i in ids))
    eval_set = await with_set.get(APP, SET)
    assert sorted(c.eval_id for c in eval_set.eval_cases) == ids


def test_used_from_several_event_loops(manager: EvalSetManager) -> None:
    with asyncio.Runner() as runner:
        runner.run(manager.create(APP, SET))

    async def add_many(prefix: str) -> None:
        await asyncio.gather(*(manager.add_case(APP, SET, make_case(f"{prefix}-{i}")) for i in range(15)))

    in_several_event_loops(add_many)
    with asyncio.Runner() as runner:
        eval_set = runner.run(manager.get(APP, SET))
    assert len(eval_set.eval_cases) == 45


@pytest.mark.asyncio
@pytest.mark.parametrize("value", [b"\xff", object(), "\ud800"], ids=["bytes", "object", "lone-surrogate"])
async def test_a_value_json_cannot_hold_is_a_config_error_naming_the_field(
    manager: EvalSetManager, value: object
) -> None:
    await manager.create(APP, SET)
    case = EvalCase(
        eval_id="c",
        conversation=[Invocation(tools=[Tool(name="t", arguments={"x": value})])],
    )

    with pytest.raises(
        ConfigError, match=r"field conversation\[0\]\.tools\[0\]\.arguments\.x \(.*cannot be written as JSON"
    ):
        await manager.add_case(APP, SET, case)
    assert (await manager.get(APP, SET)).eval_cases == []


@pytest.mark.asyncio
async def test_a_whole_set_is_saved_in_one_call_with_its_description(manager: EvalSetManager) -> None:
    eval_set = EvalSet.of("whole", [make_case("b"), make_case("a", stamp=7.0)], name="Whole", description="why")
    before = time.time()
    saved = await manager.save(APP, eval_set)
    after = time.time()

    got = await manager.get(APP, "whole")
    assert got == saved
    assert (got.name, got.description) == ("Whole", "why")
    assert [case.eval_id for case in got.eval_cases] == ["b", "a"]
    assert got.creation_timestamp is not None and before - 1e-6 <= got.creation_timestamp <= after + 1e-6
    # Missing creation times are filled as add_case fills them; present ones are kept.
    assert got.eval_cases[1].creation_timestamp == 7.0
    first = got.eval_cases[0]
    assert first.creation_timestamp is not None and before <= first.creation_timestamp <= after
    assert first.conversation[0].creation_timestamp is not None
    assert first.conversation[1].creation_timestamp == 5.0
    # The caller's object is not touched.
    assert eval_set.creation_timestamp is None and eval_set.eval_cases[0].creation_timestamp is None
    assert await manager.list(APP) == ["whole"]


@pytest.mark.asyncio
async def test_saving_a_set_again_replaces_it(with_set: EvalSetManager) -> None:
    await with_set.add_case(APP, SET, make_case("old"))
    await with_set.save(APP, EvalSet.of(SET, [make_case("new", text="edited")], description="second"))

    got = await with_set.get(APP, SET)
    assert [case.eval_id for case in got.eval_cases] == ["new"]
    assert got.description == "second"
    assert got.name == SET
    with pytest.raises(NotFoundError):
        await with_set.get_case(APP, SET, "old")
    await with_set.add_case(APP, SET, make_case("after"))
    assert [case.eval_id for case in (await with_set.get(APP, SET)).eval_cases] == ["new", "after"]


@pytest.mark.asyncio
async def test_a_set_that_cannot_be_saved_stores_nothing(with_set: EvalSetManager) -> None:
    await with_set.add_case(APP, SET, make_case("kept"))
    twice = EvalSet(eval_set_id=SET, eval_cases=[make_case("x"), make_case("x")])
    with pytest.raises(ConfigError, match=r"more than one case with id 'x'"):
        await with_set.save(APP, twice)
    with pytest.raises(ConfigError, match=r"case at index 0 has no eval_id"):
        await with_set.save(APP, EvalSet(eval_set_id=SET, eval_cases=[EvalCase()]))
    with pytest.raises(ConfigError, match=r"has no eval_set_id"):
        await with_set.save(APP, EvalSet(eval_cases=[make_case("y")]))
    with pytest.raises(ConfigError, match=r"expected an ae.EvalSet, got list"):
        await with_set.save(APP, [make_case("y")])  # type: ignore[arg-type]
    assert [case.eval_id for case in (await with_set.get(APP, SET)).eval_cases] == ["kept"]


@pytest.mark.asyncio
async def test_a_set_read_back_has_the_identity_of_the_set_built_in_code(manager: EvalSetManager) -> None:
    built = EvalSet.of("ident", [make_case("a"), make_case("b")], description="bookkeeping only")
    await manager.create(APP, "ident")
    for case in built.eval_cases:
        await manager.add_case(APP, "ident", case)
    one_by_one = await manager.get(APP, "ident")
    await manager.save(APP, built.model_copy(update={"eval_set_id": "whole"}))
    whole = await manager.get(APP, "whole")

    assert one_by_one.eval_cases != built.eval_cases  # the store stamped creation times
    assert eval_set_hash(one_by_one) == eval_set_hash(built) == eval_set_hash(whole)
    assert [case_hash(case) for case in one_by_one.eval_cases] == [case_hash(case) for case in built.eval_cases]
