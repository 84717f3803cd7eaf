"""A report in one file: bundled, loaded anywhere with nothing else at hand, and replayed offline."""

from __future__ import annotations

import json
import warnings
import zipfile
from pathlib import Path

import openai
import pytest

import agenteval as ae
from agenteval.analysis.bundle import read_bundle
from agenteval.errors import ConfigError
from agenteval.evaluation.replay import replay_bundle
from tests.llm._chat_server import ChatServer, Reply

APP = "bundle-app"
SERVER_URL = ""
"""The agent's model server, set by the test that starts it (the agent below reads it by name)."""


def echo(message: str, turn: ae.Turn) -> str:
    turn.record_tool("lookup", {"q": message}, {"hits": 1})
    return f"echo: {message}"


async def served_agent(message: str) -> str:
    """An agent whose replies come from a model server: what cassettes record."""
    async with openai.AsyncOpenAI(base_url=SERVER_URL, api_key="sk-agent-secret-0123456789", max_retries=0) as client:
        reply = await client.chat.completions.create(
            model="agent-model", messages=[{"role": "user", "content": message}]
        )
    return reply.choices[0].message.content or ""


def k_of_n_turns(data: ae.AggregationInput) -> ae.AggregationResult:
    turns = len(data.eval_case.conversation)
    score = 1.0 / turns
    return ae.AggregationResult(score=score, status=ae.EvalStatus.PASSED)


def eval_set() -> ae.EvalSet:
    return ae.EvalSet.of(
        "bundled",
        [
            ae.EvalCase.of("one", "hi", expect="echo: hi"),
            ae.EvalCase.of("two", ae.Invocation.of("a", "echo: a"), ae.Invocation.of("b", "echo: wrong")),
        ],
        description="two cases",
    )


METRICS = [ae.EvalMetric.final_response(), ae.EvalMetric.rouge(f1=0.5)]


def test_a_bundle_loads_back_into_a_report_that_rescores_reaggregates_and_compares(tmp_path: Path) -> None:
    report = ae.Evaluator(APP, echo, num_runs=2, progress=False).evaluate(eval_set(), metrics=METRICS)
    path = report.bundle(tmp_path / "shared" / "report.agenteval.zip")

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = ae.EvaluationReport.load(path)
        rescored = ae.Evaluator(APP).rescore(loaded, metrics=[ae.EvalMetric.final_response("contains")])
        reaggregated = loaded.reaggregate(k_of_n_turns)

    assert loaded.result == report.result
    assert loaded.eval_set == report.eval_set
    assert loaded.eval_metrics == report.eval_metrics
    assert loaded.num_runs == 2
    assert list(rescored.case_table["status"]) == ["passed", "failed"]
    assert rescored.metric_names == ["final_response_avg_score"]
    assert list(reaggregated.case_table["score"]) == [1.0, 0.5]
    diff = ae.compare(report, loaded)
    assert diff.unpaired.empty and (diff.table["change"] == "unchanged").all()


def test_a_bundle_holds_the_reference_layout_the_environment_and_the_html(tmp_path: Path) -> None:
    report = ae.Evaluator(APP, echo, progress=False).evaluate(eval_set(), metrics=METRICS)
    path = report.bundle(tmp_path / "report.zip")
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(path) as archive:
        archive.extractall(unpacked)
        names = set(archive.namelist())

    result_id = report.result.eval_set_result_id
    assert names == {
        "manifest.json",
        f"results/{APP}/{result_id}.evalset_result.json",
        f"data/{APP}/bundled.evalset.json",
        f"data/{APP}/bundled.metrics.json",
        "environment.json",
        "report.html",
    }
    stores = ae.LocalEvalSetManager(unpacked / "data"), ae.LocalMetricManager(unpacked / "data")
    from_files = ae.Evaluator(APP, echo, eval_set_manager=stores[0], metric_manager=stores[1], progress=False)
    assert from_files.evaluate("bundled").result.eval_case_results[0].final_eval_status == "passed"
    stored = ae.EvaluationReport.load(ae.LocalEvalResultManager(unpacked / "results"), APP, result_id)
    assert stored.result == report.result
    environment = json.loads((unpacked / "environment.json").read_text())
    assert {"pandas", "numpy", "pydantic"} <= set(environment["packages"])
    assert environment["pythonVersion"] and "gitRevision" in environment
    assert "two cases" in (unpacked / f"data/{APP}/bundled.evalset.json").read_text()
    assert "<html" in (unpacked / "report.html").read_text().lower()


def test_a_file_that_is_not_a_bundle_is_a_clear_error(tmp_path: Path) -> None:
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("notes.txt", "hello")
    with pytest.raises(
        ae.ConfigError, match=r"other.zip is a zip file but not an agenteval bundle: it has no manifest"
    ):
        ae.EvaluationReport.load(other)

    newer = tmp_path / "newer.zip"
    with zipfile.ZipFile(newer, "w") as archive:
        archive.writestr("manifest.json", json.dumps({"format": "agenteval-bundle", "version": 99}))
    with pytest.raises(ae.ConfigError, match=r"format version 99, newer than this agenteval reads \(1\); upgrade"):
        ae.EvaluationReport.load(newer)

    report = ae.Evaluator(APP, echo, progress=False).evaluate(eval_set(), metrics=METRICS)
    with pytest.raises(ae.NotFoundError, match="cassettes='.*missing' is not a directory"):
        report.bundle(tmp_path / "b.zip", cassettes=tmp_path / "missing")
    with pytest.raises(ae.ConfigError, match="holds no cassettes"):
        replay_bundle(report.bundle(tmp_path / "b.zip"), echo)


def test_a_bundle_with_cassettes_replays_offline_and_says_case_by_case_whether_it_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassettes = tmp_path / "cassettes"
    with ChatServer(default=Reply("echo: hi")) as server:
        monkeypatch.setattr(__import__(__name__, fromlist=["_"]), "SERVER_URL", server.url)
        ev = ae.Evaluator(APP, served_agent, cassette=cassettes, progress=False)
        report = ev.evaluate(eval_set(), metrics=METRICS)
        url = server.url
    path = report.bundle(tmp_path / "replayable.zip")
    assert "secret-0123456789" not in zipfile.ZipFile(path).read("cassettes/bundled/one/run-1.yaml").decode()

    # The server is gone; the agent is found by its name and its code is checked.
    outcome = replay_bundle(path)
    assert outcome.matches, outcome.table.to_dict("records")
    assert outcome.same_agent_code is True
    assert list(outcome.table["eval_id"]) == ["one", "two"]

    async def another_agent(message: str) -> str:
        async with openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0) as client:
            reply = await client.chat.completions.create(
                model="another-model", messages=[{"role": "user", "content": message}]
            )
        return reply.choices[0].message.content or ""

    changed = replay_bundle(path, another_agent)
    assert not changed.matches
    assert changed.same_agent_code is False
    assert all("status: " in row or "error: " in row for row in changed.table["differences"])


async def flaky_served_agent(message: str) -> str:
    """Raises for "hi" (the same error every time); asks the model server otherwise."""
    if message == "hi":
        raise RuntimeError("refused to greet")
    return await served_agent(message)


def test_a_replay_matches_an_error_made_again_and_tells_a_changed_reply_of_a_still_failing_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ChatServer(default=Reply("echo: b")) as server:
        monkeypatch.setattr(__import__(__name__, fromlist=["_"]), "SERVER_URL", server.url)
        ev = ae.Evaluator(APP, flaky_served_agent, cassette=tmp_path / "cassettes", progress=False)
        report = ev.evaluate(eval_set(), metrics=METRICS)
    assert list(report.cases["status"]) == ["failed", "failed"]
    path = report.bundle(tmp_path / "flaky.zip")

    again = replay_bundle(path, flaky_served_agent)
    assert again.matches, again.table.to_dict("records")

    async def other_words(message: str) -> str:
        return await flaky_served_agent(message) if message == "hi" else "something else"

    changed = replay_bundle(path, other_words)
    rows = changed.table.set_index("eval_id")
    assert bool(rows.loc["one", "matches"])
    assert not rows.loc["two", "matches"]
    differences = str(rows.loc["two", "differences"])
    assert "turn 1 reply: 'echo: b' → 'something else'" in differences
    assert "status" not in differences


def test_a_bundle_is_readable_by_others_and_rebundling_without_the_cassettes_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with ChatServer(default=Reply("echo: hi")) as server:
        monkeypatch.setattr(__import__(__name__, fromlist=["_"]), "SERVER_URL", server.url)
        report = ae.Evaluator(APP, served_agent, cassette="cass", progress=False).evaluate(eval_set(), metrics=METRICS)
    assert report.provenance is not None and report.provenance.cassette == str(tmp_path / "cass")
    path = report.bundle(tmp_path / "first.zip")
    assert path.stat().st_mode & 0o777 == 0o644

    loaded = ae.EvaluationReport.load(path)
    monkeypatch.chdir(tmp_path.parent)
    (tmp_path / "cass").rename(tmp_path / "moved")
    with pytest.warns(ae.errors.MissingCassettesWarning, match=r"recorded cassettes in '.*cass', which is not here"):
        loaded.reaggregate(ae.AllPassAggregator()).bundle(tmp_path / "second.zip")
    assert not any(name.startswith("cassettes/") for name in zipfile.ZipFile(tmp_path / "second.zip").namelist())
    extracted = ae.EvaluationReport.load(path)
    from agenteval.analysis.bundle import extract_cassettes

    again = extracted.bundle(tmp_path / "third.zip", cassettes=extract_cassettes(path, tmp_path / "unpacked"))
    assert replay_bundle(again).matches


@pytest.mark.parametrize("member", ["manifest.json", "environment.json"])
@pytest.mark.parametrize("hostile", ["[" * 100_000 + "]" * 100_000, "9" * 5000])
def test_a_bundle_with_a_hostile_document_is_a_config_error(tmp_path: Path, member: str, hostile: str) -> None:
    """Deep nesting or a huge integer in a bundle's JSON is a clear error naming the bundle, not a bare exception."""
    report = ae.Evaluator(APP, echo, progress=False).evaluate(eval_set(), metrics=METRICS)
    original = report.bundle(tmp_path / "original.zip")
    bundle = tmp_path / "hostile.zip"
    with zipfile.ZipFile(original) as source, zipfile.ZipFile(bundle, "w") as target:
        for name in source.namelist():
            document = source.read(name)
            if name == member:
                document = json.dumps(json.loads(document)).replace("{", '{"planted": ' + hostile + ", ", 1).encode()
            target.writestr(name, document)
    with pytest.raises(ConfigError, match=f"the {member} .*bundle .*hostile.zip"):
        read_bundle(bundle)


def test_a_directory_given_as_a_bundle_is_named_as_such(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a regular file"):
        read_bundle(tmp_path)
