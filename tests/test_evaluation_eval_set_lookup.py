"""``evaluate("nope")``: the NotFoundError says which eval sets the app has, or that it has none and where."""

from __future__ import annotations

from pathlib import Path

import pytest

import agenteval as ae
from agenteval._util.sync_bridge import run_sync
from agenteval.evalset.memory import InMemoryEvalSetManager

APP = "lookup-app"


def store_with(*eval_set_ids: str) -> InMemoryEvalSetManager:
    store = InMemoryEvalSetManager()
    for eval_set_id in eval_set_ids:
        run_sync(store.create(APP, eval_set_id))
    return store


def test_an_unknown_eval_set_lists_the_apps_sets_and_the_closest() -> None:
    ev = ae.Evaluator(APP, str, eval_set_manager=store_with("math-basic", "math-advanced"), progress=False)

    with pytest.raises(ae.NotFoundError) as raised:
        ev.evaluate("math-basci")

    assert str(raised.value) == (
        f"get eval set: eval set {APP}.math-basci not found; app '{APP}' has 2 eval sets: 'math-basic',"
        " 'math-advanced' (did you mean 'math-basic'?)"
    )


def test_many_eval_sets_are_listed_up_to_ten() -> None:
    ev = ae.Evaluator(APP, str, eval_set_manager=store_with(*(f"set-{n:02}" for n in range(12))), progress=False)

    with pytest.raises(ae.NotFoundError, match=r"has 12 eval sets: 'set-00', .*'set-09' and 2 more$"):
        ev.evaluate("unrelated")


def test_an_app_without_eval_sets_says_so_and_where_a_local_store_looks(tmp_path: Path) -> None:
    in_memory = ae.Evaluator(APP, str, progress=False)
    local = ae.Evaluator(APP, str, eval_set_manager=ae.LocalEvalSetManager(tmp_path), progress=False)

    with pytest.raises(
        ae.NotFoundError, match=rf"not found; app '{APP}' has no eval sets in this InMemoryEvalSetManager$"
    ):
        in_memory.evaluate("nope")
    with pytest.raises(
        ae.NotFoundError,
        match=rf"eval set file {tmp_path / APP / 'nope.evalset.json'} does not exist; app '{APP}' has no eval sets"
        r" in this LocalEvalSetManager$",
    ):
        local.evaluate("nope")
