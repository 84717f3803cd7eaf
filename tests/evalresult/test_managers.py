"""Contract tests every eval-result store must pass (reference test ideas 74-76)."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import pytest

from agenteval._util.trpc_json import WireModel
from agenteval.errors import ConfigError, NotFoundError
from agenteval.evalresult.local import LocalEvalResultManager
from agenteval.evalresult.manager import EvalResultManager
from agenteval.evalresult.memory import InMemoryEvalResultManager
from agenteval.evalresult.models import EvalCaseResult, EvalSetResult
from agenteval.evalset.models import Tool
from tests.evalresult._data import INTEROP_RESULTS, UUID4, make_result


@pytest.fixture(params=["memory", "local"])
def manager(request: pytest.FixtureRequest, tmp_path: Path) -> EvalResultManager:
    if request.param == "memory":
        return InMemoryEvalResultManager()
    return LocalEvalResultManager(tmp_path / "results")


def _tool(result: EvalSetResult) -> Tool:
    invocation = result.eval_case_results[0].eval_metric_result_per_invocation[0].actual_invocation
    assert invocation is not None
    return invocation.tools[0]


def test_implements_the_protocol(manager: EvalResultManager) -> None:
    assert isinstance(manager, EvalResultManager)


@pytest.mark.asyncio
async def test_save_generates_id_name_and_timestamp(manager: EvalResultManager) -> None:
    before = time.time()
    result_id = await manager.save("app", make_result("set"))
    after = time.time()

    assert result_id.startswith("app_set_")
    assert re.fullmatch(f"app_set_{UUID4}", result_id)
    stored = await manager.get("app", result_id)
    assert stored.eval_set_result_id == result_id
    assert stored.eval_set_result_name == result_id
    assert stored.creation_timestamp is not None
    assert before <= stored.creation_timestamp <= after
    assert await manager.list("app") == [result_id]


@pytest.mark.asyncio
async def test_generated_ids_are_unique(manager: EvalResultManager) -> None:
    first = await manager.save("app", make_result())
    second = await manager.save("app", make_result())
    assert first != second
    assert sorted(await manager.list("app")) == sorted([first, second])


@pytest.mark.asyncio
async def test_explicit_id_is_used_and_becomes_the_name(manager: EvalResultManager) -> None:
    result_id = await manager.save("app", make_result(eval_set_result_id="my-result"))
    assert result_id == "my-result"
    stored = await manager.get("app", "my-result")
    assert stored.eval_set_result_id == "my-result"
    assert stored.eval_set_result_name == "my-result"


@pytest.mark.asyncio
@pytest.mark.parametrize("timestamp", [1761134484.9804401, 0.0])
async def test_provided_name_and_timestamp_are_kept(manager: EvalResultManager, timestamp: float) -> None:
    result = make_result(eval_set_result_name="nightly", creation_timestamp=timestamp)
    result_id = await manager.save("app", result)
    stored = await manager.get("app", result_id)
    assert stored.eval_set_result_name == "nightly"
    assert stored.creation_timestamp == timestamp


@pytest.mark.asyncio
async def test_the_callers_object_is_not_mutated(manager: EvalResultManager) -> None:
    result = make_result()
    snapshot = result.model_dump()
    await manager.save("app", result)
    assert result.eval_set_result_id == ""
    assert result.eval_set_result_name == ""
    assert result.creation_timestamp is None
    assert result.model_dump() == snapshot


@pytest.mark.asyncio
async def test_saved_content_round_trips(manager: EvalResultManager) -> None:
    result = make_result(eval_set_result_id="r1", eval_set_result_name="n", creation_timestamp=1.5)
    await manager.save("app", result)
    assert (await manager.get("app", "r1")).to_dict() == result.to_dict()


@pytest.mark.asyncio
@pytest.mark.parametrize("path", INTEROP_RESULTS, ids=lambda path: path.parts[-4])
async def test_reference_results_round_trip(manager: EvalResultManager, path: Path) -> None:
    result = EvalSetResult.from_json(path.read_text(encoding="utf-8"))
    result_id = await manager.save("app", result)
    assert result_id == result.eval_set_result_id
    assert (await manager.get("app", result_id)).to_dict() == result.to_dict()


@pytest.mark.asyncio
async def test_changing_the_callers_object_after_save_does_not_change_the_store(manager: EvalResultManager) -> None:
    result = make_result(eval_set_result_id="r1")
    await manager.save("app", result)

    _tool(result).arguments["a"] = 100
    result.eval_case_results.append(EvalCaseResult(eval_id="late"))
    result.eval_set_result_name = "changed"

    stored = await manager.get("app", "r1")
    assert _tool(stored).arguments["a"] == 1
    assert [case.eval_id for case in stored.eval_case_results] == ["case-1"]
    assert stored.eval_set_result_name == "r1"


@pytest.mark.asyncio
async def test_changing_a_returned_object_does_not_change_the_store(manager: EvalResultManager) -> None:
    await manager.save("app", make_result(eval_set_result_id="r1"))

    first = await manager.get("app", "r1")
    _tool(first).arguments["b"][1]["c"] = "mutated"
    first.eval_case_results[0].score = 0.0
    first.eval_case_results.clear()

    second = await manager.get("app", "r1")
    assert second is not first
    assert _tool(second).arguments == {"a": 1, "b": [2, {"c": None}]}
    assert second.eval_case_results[0].score == 1.0


@pytest.mark.asyncio
async def test_list_of_a_missing_app_is_empty(manager: EvalResultManager) -> None:
    assert await manager.list("nobody") == []
    await manager.save("app", make_result())
    assert await manager.list("nobody") == []


@pytest.mark.asyncio
async def test_get_of_a_missing_app_raises_not_found(manager: EvalResultManager) -> None:
    with pytest.raises(NotFoundError) as info:
        await manager.get("nobody", "r1")
    assert isinstance(info.value, LookupError)
    assert "nobody" in str(info.value)


@pytest.mark.asyncio
async def test_get_of_a_missing_id_raises_not_found(manager: EvalResultManager) -> None:
    await manager.save("app", make_result(eval_set_result_id="r1"))
    with pytest.raises(LookupError) as info:
        await manager.get("app", "r2")
    assert isinstance(info.value, NotFoundError)
    assert "app" in str(info.value)
    assert "r2" in str(info.value)


_SAVE_CASES: list[tuple[str, Any, str]] = [
    ("", None, "app name is empty"),
    ("", EvalSetResult(), "app name is empty"),
    ("app", None, "eval set result is None"),
    ("app", EvalSetResult(), "the eval set id of eval set result is empty"),
    ("app", EvalSetResult(eval_set_result_id="r1"), "the eval set id of eval set result is empty"),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(("app_name", "result", "message"), _SAVE_CASES)
async def test_save_validation(manager: EvalResultManager, app_name: str, result: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}$"):
        await manager.save(app_name, result)
    assert await manager.list("app") == []


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("app_name", "result_id", "message"),
    [("", "", "app name is empty"), ("", "r1", "app name is empty"), ("app", "", "eval set result id is empty")],
)
async def test_get_validation(manager: EvalResultManager, app_name: str, result_id: str, message: str) -> None:
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}$"):
        await manager.get(app_name, result_id)


@pytest.mark.asyncio
async def test_list_validation(manager: EvalResultManager) -> None:
    with pytest.raises(ConfigError, match="^app name is empty$"):
        await manager.list("")


@pytest.mark.asyncio
async def test_arguments_are_checked_before_the_result_is_serialised(manager: EvalResultManager) -> None:
    result = make_result("")
    result.eval_case_results[0].session_id = object()  # type: ignore[assignment]
    with pytest.raises(ConfigError, match="^the eval set id of eval set result is empty$"):
        await manager.save("app", result)


@pytest.mark.asyncio
async def test_a_save_writes_the_result_as_json_once(
    manager: EvalResultManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[str] = []
    to_json = WireModel.to_json

    def counted(self: WireModel, *, indent: int | None = 2) -> str:
        written.append(type(self).__name__)
        return to_json(self, indent=indent)

    monkeypatch.setattr(WireModel, "to_json", counted)
    result = make_result(eval_set_result_id="r1")
    await manager.save("app", result)
    # The bundled stores write the result's shell once and each case result once (plus the shell's stand-in
    # for them): no text of the whole result, which a large one would hold twice over.
    assert sorted(written) == ["EvalCaseResult"] * (len(result.eval_case_results) + 1) + ["EvalSetResult"]


@pytest.mark.asyncio
async def test_an_unserialisable_value_is_rejected(manager: EvalResultManager) -> None:
    result = make_result(eval_set_result_id="r1")
    _tool(result).arguments = {"callback": lambda: None}
    with pytest.raises(ConfigError) as info:
        await manager.save("app", result)
    assert str(info.value).startswith("clone result: ")
    assert await manager.list("app") == []


@pytest.mark.asyncio
async def test_a_non_finite_number_in_a_free_form_value_is_rejected(manager: EvalResultManager) -> None:
    result = make_result(eval_set_result_id="r1")
    _tool(result).arguments = {"x": float("nan"), "y": float("inf")}
    with pytest.raises(ConfigError) as info:
        await manager.save("app", result)
    assert str(info.value) == (
        "clone result: field evalCaseResults[0].evalMetricResultPerInvocation[0].actualInvocation.tools[0]"
        ".arguments.x is not a finite number (NaN); JSON has no NaN or Infinity, so store a finite number "
        "(or a string) instead"
    )
    assert await manager.list("app") == []


@pytest.mark.asyncio
async def test_saving_an_existing_id_overwrites(manager: EvalResultManager) -> None:
    await manager.save("app", make_result("set-1", eval_set_result_id="r1", eval_set_result_name="old"))
    await manager.save("app", make_result("set-2", eval_set_result_id="r1"))

    stored = await manager.get("app", "r1")
    assert stored.eval_set_id == "set-2"
    assert stored.eval_set_result_name == "r1"
    assert await manager.list("app") == ["r1"]


@pytest.mark.asyncio
async def test_list_order_is_stable_and_survives_overwrites(manager: EvalResultManager) -> None:
    for result_id in ["r1", "r2", "r3"]:
        await manager.save("app", make_result(eval_set_result_id=result_id))
    assert await manager.list("app") == ["r1", "r2", "r3"]
    await manager.save("app", make_result("other", eval_set_result_id="r2"))
    assert await manager.list("app") == ["r1", "r2", "r3"]
    assert await manager.list("app") == await manager.list("app")


@pytest.mark.asyncio
async def test_apps_are_separate(manager: EvalResultManager) -> None:
    await manager.save("app-a", make_result(eval_set_result_id="r1"))
    await manager.save("app-b", make_result("other", eval_set_result_id="r1"))
    assert (await manager.get("app-a", "r1")).eval_set_id == "set"
    assert (await manager.get("app-b", "r1")).eval_set_id == "other"
    with pytest.raises(NotFoundError):
        await manager.get("app-c", "r1")


@pytest.mark.asyncio
async def test_concurrent_saves(manager: EvalResultManager) -> None:
    results = [make_result(f"set-{index}", eval_set_result_name=f"run {index}") for index in range(200)]
    ids = await asyncio.gather(*(manager.save("app", result) for result in results))

    assert len(set(ids)) == 200
    assert sorted(await manager.list("app")) == sorted(ids)
    loaded = await asyncio.gather(*(manager.get("app", result_id) for result_id in ids))
    for result_id, result, stored in zip(ids, results, loaded, strict=True):
        assert result_id.startswith(f"app_{result.eval_set_id}_")
        expected = result.model_copy(update={"eval_set_result_id": result_id})
        expected.creation_timestamp = stored.creation_timestamp
        assert stored.to_dict() == expected.to_dict()


@pytest.mark.asyncio
async def test_concurrent_saves_of_one_id_leave_one_whole_version(manager: EvalResultManager) -> None:
    await asyncio.gather(
        *(manager.save("app", make_result(f"set-{index}", eval_set_result_id="r1")) for index in range(20))
    )
    stored = await manager.get("app", "r1")
    assert stored.eval_set_id in {f"set-{index}" for index in range(20)}
    assert stored.eval_case_results[0].eval_set_id == stored.eval_set_id
    assert await manager.list("app") == ["r1"]


@pytest.mark.asyncio
async def test_close_does_nothing(manager: EvalResultManager) -> None:
    await manager.save("app", make_result(eval_set_result_id="r1"))
    await manager.close()
    await manager.close()
    assert (await manager.get("app", "r1")).eval_set_result_id == "r1"


@pytest.mark.asyncio
async def test_a_result_that_would_not_read_back_is_refused_at_save(manager: EvalResultManager) -> None:
    result = make_result()
    result.eval_case_results[0].run_id = 2**64  # set after validation: fits no Go int

    refused = r"^clone result: field evalCaseResults\[0\]\.runId \(int 18446744073709551616\) does not fit Go's"
    with pytest.raises(ConfigError, match=refused):
        await manager.save("app", result)
    assert await manager.list("app") == []


@pytest.mark.asyncio
async def test_a_value_of_the_wrong_type_assigned_after_validation_is_refused_at_save(
    manager: EvalResultManager,
) -> None:
    result = make_result()
    result.eval_case_results[0].score = "high"  # type: ignore[assignment]

    with pytest.raises(
        ConfigError, match=r"^clone result: field evalCaseResults\[0\]\.score holds str .high., which does"
    ):
        await manager.save("app", result)
    assert await manager.list("app") == []
