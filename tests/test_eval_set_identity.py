"""One eval set, one identity: built in code, saved to a store and read back, or run from the CLI.

The stores stamp creation times on cases and turns and name the set: none of that may make
``compare`` see edited cases, the cache miss, or a result record another eval-set hash.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agenteval as ae
from agenteval._util.sync_bridge import run_sync
from agenteval.cli import main
from agenteval.evalset.identity import case_hash, changed_cases, eval_set_hash

APP = "identity-app"
CALLS: list[str] = []


def agent(message: str) -> str:
    CALLS.append(message)
    return f"echo: {message}"


def built_in_code() -> ae.EvalSet:
    cases = [
        ae.EvalCase.of(f"case-{index}", f"question {index}", expect=f"echo: question {index}") for index in range(4)
    ]
    cases.append(
        ae.EvalCase.of(
            "multi", ae.Invocation.of("first", "echo: first"), ae.Invocation.of("second", "echo: wrong"), state={"k": 1}
        )
    )
    return ae.EvalSet.of("identity", cases, name="Identity", description="a set built in code")


def saved_and_read_back(directory: Path) -> ae.EvalSet:
    """The set saved case by case (create + add_case) in a local store, and read back."""
    store = ae.LocalEvalSetManager(directory)
    run_sync(store.create(APP, "identity"))
    for case in built_in_code().eval_cases:
        run_sync(store.add_case(APP, "identity", case))
    return run_sync(store.get(APP, "identity"))


METRICS = [ae.EvalMetric.final_response()]


def test_the_hash_leaves_out_what_a_store_adds_and_sees_what_defines_a_case(tmp_path: Path) -> None:
    built, stored = built_in_code(), saved_and_read_back(tmp_path)

    assert stored.eval_cases[0].creation_timestamp is not None  # the store stamped it
    assert stored.description == "" and stored.name == "identity"
    assert eval_set_hash(stored) == eval_set_hash(built)
    assert eval_set_hash(list(reversed(built.eval_cases))) == eval_set_hash(built)
    assert changed_cases(built.eval_cases, stored.eval_cases) == []

    edited = built.model_copy(deep=True)
    assert edited.eval_cases[1].conversation[0].final_response is not None
    edited.eval_cases[1].conversation[0].final_response.content = "another answer"
    edited.eval_cases[2].session_input = ae.SessionInput(user_id="someone else")
    assert eval_set_hash(edited) != eval_set_hash(built)
    assert changed_cases(built.eval_cases, edited.eval_cases) == ["case-1", "case-2"]
    assert case_hash(edited.eval_cases[0]) == case_hash(stored.eval_cases[0])


def test_compare_pairs_every_case_of_a_set_run_from_code_and_from_its_file(tmp_path: Path) -> None:
    ev = ae.Evaluator(APP, agent, progress=False)
    from_code = ev.evaluate(built_in_code(), metrics=METRICS)
    from_file = ev.evaluate(saved_and_read_back(tmp_path), metrics=METRICS)

    assert from_code.provenance is not None and from_file.provenance is not None
    assert from_code.provenance.eval_set_hash == from_file.provenance.eval_set_hash
    diff = ae.compare(from_code, from_file)
    assert diff.same_eval_set is True
    assert diff.unpaired.empty
    assert len(diff.cases) == 5


def test_the_cache_serves_a_set_read_back_from_a_store_as_the_set_built_in_code(tmp_path: Path) -> None:
    ev = ae.Evaluator(APP, agent, cache=tmp_path / "cache", progress=False)
    ev.evaluate(built_in_code(), metrics=METRICS)
    CALLS.clear()

    again = ev.evaluate(saved_and_read_back(tmp_path / "store"), metrics=METRICS)

    assert CALLS == []
    assert again.cases["cached_inference"].all()


def test_the_cli_records_the_hash_the_notebook_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    saved_and_read_back(data)
    (data / APP / "identity.metrics.json").write_text(json.dumps([m.to_dict() for m in METRICS]))
    module = tmp_path / "identity_agent.py"
    module.write_text("def agent(message):\n    return f'echo: {message}'\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))

    status = main(["run", str(data / APP), "--agent", "identity_agent:agent", "--output", str(tmp_path / "out")])
    capsys.readouterr()

    assert status == 1  # the multi-turn case fails on purpose
    saved = json.loads(next((tmp_path / "out" / APP).glob("*.evalset_result.json")).read_text())
    notebook = ae.Evaluator(APP, agent, progress=False).evaluate(built_in_code(), metrics=METRICS)
    assert notebook.provenance is not None
    assert saved["summary"]["provenance"]["evalSetHash"] == notebook.provenance.eval_set_hash
