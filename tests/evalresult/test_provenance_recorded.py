"""What a saved result records of how it was produced, so that a colleague can reproduce it."""

from __future__ import annotations

import functools
import subprocess
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

import agenteval as ae
from agenteval._util.callable_names import agent_label
from agenteval.errors import EvalSetChangedWarning
from agenteval.evalresult.provenance import git_revision

APP = "prov-app"


def echo(message: str) -> str:
    return f"echo: {message}"


def make_agent(
    model: str, temperature: float, api_key: str = "sk-never-shown-0000000000000000"
) -> Callable[[str], str]:
    def agent(message: str) -> str:
        return f"{model}@{temperature}: {message} {api_key[:0]}"

    return agent


def styled(message: str, style: str = "plain", token: str = "") -> str:
    return f"echo: {message}"


def cases() -> ae.EvalSet:
    return ae.EvalSet.of(
        "prov",
        [
            ae.EvalCase.of("one", "hi", expect="echo: hi"),
            ae.EvalCase.of("two", ae.Invocation.of("a", "echo: a"), ae.Invocation.of("b", "echo: b")),
        ],
    )


METRICS = [ae.EvalMetric.final_response()]


def test_the_settings_versions_and_agent_identity_are_recorded_and_survive_a_save(tmp_path: Path) -> None:
    ev = ae.Evaluator(
        APP,
        echo,
        agent_version="prompt-v2",
        turn_timeout=30,
        cache=tmp_path / "cache",
        result_manager=ae.LocalEvalResultManager(tmp_path / "results"),
        progress=False,
    )
    report = ev.evaluate(cases(), metrics=METRICS)
    loaded = ae.EvaluationReport.load(
        tmp_path / "results" / APP / f"{report.result.eval_set_result_id}.evalset_result.json"
    )

    for provenance in (report.provenance, loaded.provenance):
        assert provenance is not None
        assert provenance.agent_version == "prompt-v2"
        assert provenance.agent_label == "echo [prompt-v2]"
        assert provenance.agent_code_hash
        assert provenance.turn_timeout == 30
        assert provenance.cache_enabled is True
        assert set(provenance.library_versions) == {"pandas", "numpy", "scipy", "pydantic"}
        assert provenance.git_revision == git_revision(Path.cwd())
    assert loaded.provenance == report.provenance


def test_the_agent_code_hash_changes_with_the_agent_and_not_otherwise() -> None:
    def evaluated(agent: Callable[[str], str]) -> str:
        report = ae.Evaluator(APP, agent, progress=False).evaluate(cases(), metrics=METRICS)
        assert report.provenance is not None
        return report.provenance.agent_code_hash

    def shout(message: str) -> str:
        return f"echo: {message}".upper()

    assert evaluated(echo) == evaluated(echo)
    assert evaluated(shout) != evaluated(echo)


def test_two_agents_from_one_factory_get_labels_that_tell_them_apart() -> None:
    labels = []
    for agent in (make_agent("gpt-4o", 0.2), make_agent("gpt-4o-mini", 0.2), functools.partial(styled, style="terse")):
        report = ae.Evaluator(APP, agent, progress=False).evaluate(cases(), metrics=METRICS)
        assert report.provenance is not None
        labels.append(report.provenance.agent_label)

    assert labels == [
        "make_agent(model='gpt-4o', temperature=0.2)",
        "make_agent(model='gpt-4o-mini', temperature=0.2)",
        "styled(style='terse')",
    ]


def test_a_label_never_shows_a_credential_or_a_key_shaped_value() -> None:
    keyed = functools.partial(styled, style="planted7f3a9c1e5b2d4086", token="visible-only-by-name")
    report = ae.Evaluator(APP, keyed, progress=False).evaluate(cases(), metrics=METRICS)

    assert report.provenance is not None
    assert report.provenance.agent_label == "styled()"
    assert "planted" not in report.result.to_json() and "sk-never" not in report.result.to_json()


def test_git_revision_reads_the_checked_out_commit_of_the_enclosing_repository(tmp_path: Path) -> None:
    assert git_revision(tmp_path) == ""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "f.txt").write_text("x")
    environment = {
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@b",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@b",
    }
    subprocess.run(["git", "-C", str(tmp_path), "add", "f.txt"], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "commit", "-qm", "x"], check=True, env=environment)
    head = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    (tmp_path / "sub").mkdir()

    assert git_revision(tmp_path / "sub") == head
    subprocess.run(["git", "-C", str(tmp_path), "pack-refs", "--all"], check=True)
    assert git_revision(tmp_path) == head


def test_a_loaded_result_holds_its_eval_set_and_loading_it_with_another_warns_naming_the_cases(tmp_path: Path) -> None:
    ev = ae.Evaluator(APP, echo, result_manager=ae.LocalEvalResultManager(tmp_path), progress=False)
    report = ev.evaluate(cases(), metrics=METRICS)
    path = tmp_path / APP / f"{report.result.eval_set_result_id}.evalset_result.json"

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = ae.EvaluationReport.load(path)
        same = ae.EvaluationReport.load(path, eval_set=cases())
    assert loaded.eval_set is not None
    assert [len(case.conversation) for case in loaded.eval_set.eval_cases] == [1, 2]
    assert same.eval_set == cases()

    edited = cases()
    edited.eval_cases[1].conversation[1].final_response = ae.Message.assistant("echo: B")
    with pytest.warns(EvalSetChangedWarning, match=r"case\(s\) 'two' differ"):
        mismatched = ae.EvaluationReport.load(path, eval_set=edited)
    with pytest.warns(EvalSetChangedWarning, match=r"re-scoring with eval set 'prov'.*'two' differ"):
        ev.rescore(mismatched)


def test_only_the_evaluated_cases_are_kept_but_the_hash_covers_the_whole_set() -> None:
    report = ae.Evaluator(APP, echo, eval_case_ids=["two"], progress=False).evaluate(cases(), metrics=METRICS)
    whole = ae.Evaluator(APP, echo, progress=False).evaluate(cases(), metrics=METRICS)

    assert report.provenance is not None and whole.provenance is not None
    assert report.provenance.eval_set is not None
    assert [case.eval_id for case in report.provenance.eval_set.eval_cases] == ["two"]
    assert report.provenance.eval_set_hash == whole.provenance.eval_set_hash


def test_a_label_leaves_out_long_text_and_takes_no_time_over_it() -> None:
    document = "a1" * 2_500_000  # a 5 MB reply a factory closed over

    def make(reply: str, style: str) -> Callable[[str], str]:
        def agent(message: str) -> str:
            return reply[:0] + style[:0] + f"echo: {message}"

        return agent

    started = time.perf_counter()
    label = agent_label(make(document, "terse"))
    assert time.perf_counter() - started < 1.0
    assert label == "make(style='terse')"


@pytest.mark.parametrize(
    "secret",
    [
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "12345678901234567890123456789012",
        "abcdefghijklmnopqrstuvwxyzabcdef",
    ],
)
def test_a_label_leaves_out_key_shaped_values_and_values_under_short_credential_names(secret: str) -> None:
    def make(creds: str, pwd: str, setting: str, model: str) -> Callable[[str], str]:
        def agent(message: str) -> str:
            return creds[:0] + pwd[:0] + setting[:0] + model + message

        return agent

    assert agent_label(make("anything", "hunter2", secret, "claude-3-5-sonnet-20241022")) == (
        "make(model='claude-3-5-sonnet-20241022')"
    )
