"""``strict=True``: what is only warned about otherwise is a ConfigError, raised before the agent runs (for CI)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import agenteval as ae

APP = "strict-app"
SET = "strict-set"


class CountingAgent:
    """Echoes its message and counts its turns."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, message: str) -> str:
        self.calls += 1
        return message


def eval_set() -> ae.EvalSet:
    return ae.EvalSet.of(SET, [ae.EvalCase.of("a", "hi", expect="hi"), ae.EvalCase.of("b", "yo", expect="yo")])


def write_app(
    base: Path, *, case_extra: dict[str, object] | None = None, metric_extra: dict[str, object] | None = None
) -> None:
    """``<base>/<APP>/<SET>.evalset.json`` and ``.metrics.json``, with extra keys where asked."""
    folder = base / APP
    folder.mkdir(parents=True)
    document = json.loads(eval_set().to_json())
    document["evalCases"][1].update(case_extra or {})
    (folder / f"{SET}.evalset.json").write_text(json.dumps(document))
    metric = ae.EvalMetric.final_response().to_dict()
    metric["criterion"]["finalResponse"].update(metric_extra or {})
    (folder / f"{SET}.metrics.json").write_text(json.dumps([metric]))


def local_evaluator(base: Path, agent: CountingAgent, **options: object) -> ae.Evaluator:
    return ae.Evaluator(
        APP,
        agent,
        eval_set_manager=ae.LocalEvalSetManager(base),
        metric_manager=ae.LocalMetricManager(base),
        progress=False,
        **options,
    )


def test_strict_refuses_a_metric_whose_evaluator_is_not_registered_naming_the_closest() -> None:
    agent = CountingAgent()
    misspelt = ae.EvalMetric.final_response().model_copy(
        update={"metric_name": "reply", "evaluator_name": "final_respons_avg_score"}
    )

    with pytest.raises(
        ae.ConfigError,
        match=r"^metric 'reply' names evaluator 'final_respons_avg_score', which is not registered \(did you mean"
        r" 'final_response_avg_score'\?\): strict=True refuses to skip it; correct its evaluatorName or register",
    ):
        ae.Evaluator(APP, agent, strict=True, progress=False).evaluate(eval_set(), metrics=[misspelt])

    assert agent.calls == 0


def test_without_strict_the_metric_is_skipped_with_a_warning_naming_the_closest() -> None:
    misspelt = ae.EvalMetric.final_response().model_copy(update={"evaluator_name": "final_respons_avg_score"})

    with pytest.warns(ae.SkippedMetricWarning, match=r"\(did you mean 'final_response_avg_score'\?\)"):
        report = ae.Evaluator(APP, CountingAgent(), progress=False).evaluate(
            eval_set(), metrics=[misspelt, ae.EvalMetric.final_response(name="kept")]
        )

    assert report.passed


def test_strict_refuses_an_unknown_field_in_the_eval_set_file_naming_the_file_and_field(tmp_path: Path) -> None:
    write_app(tmp_path, case_extra={"sesionInput": {"userId": "u"}})
    agent = CountingAgent()
    ev = local_evaluator(tmp_path, agent, strict=True)
    file = tmp_path / APP / f"{SET}.evalset.json"

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an error, not a warning and then an error
        with pytest.raises(
            ae.ConfigError,
            match=rf"^get eval set: eval set file {file}: unknown field\(s\) evalCases\[1\]\.sesionInput have no"
            r" effect: correct their spelling or remove them \(strict=True refuses them\)$",
        ):
            ev.evaluate(SET)

    assert agent.calls == 0


def test_strict_refuses_an_unknown_field_the_store_already_warned_about(tmp_path: Path) -> None:
    """The store keeps what it read and warns once per read from disk: strict checks what it is given too."""
    write_app(tmp_path, case_extra={"sesionInput": {"userId": "u"}})
    agent = CountingAgent()
    ev = local_evaluator(tmp_path, agent)
    with pytest.warns(ae.UnknownFieldWarning, match=r"evalCases\[1\]\.sesionInput"):
        ev.evaluate(SET)

    with pytest.raises(
        ae.ConfigError,
        match=rf"^eval set '{SET}': unknown field\(s\) evalCases\[1\]\.sesionInput have no effect: correct",
    ):
        ev.evaluate(SET, strict=True)

    assert agent.calls == 2


def test_strict_refuses_an_unknown_field_in_the_metrics_file(tmp_path: Path) -> None:
    write_app(tmp_path, metric_extra={"txt": {}})
    agent = CountingAgent()
    file = tmp_path / APP / f"{SET}.metrics.json"

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(
            ae.ConfigError,
            match=rf"^list metrics: metrics file {file}: unknown field\(s\) \[0\]\.criterion\.finalResponse\.txt have",
        ):
            local_evaluator(tmp_path, agent, strict=True).evaluate(SET)

    assert agent.calls == 0


def test_strict_refuses_unknown_fields_of_an_eval_set_and_metrics_given_in_code() -> None:
    agent = CountingAgent()
    ev = ae.Evaluator(APP, agent, strict=True, progress=False)
    metric = ae.EvalMetric.model_validate({**ae.EvalMetric.final_response().to_dict(), "treshold": 0.5})
    with_extra = ae.EvalSet.model_validate({**json.loads(eval_set().to_json()), "owner": "me"})

    with pytest.raises(ae.ConfigError, match=r"^metric 'final_response_avg_score': unknown field\(s\) treshold have"):
        ev.evaluate(eval_set(), metrics=[metric])
    with pytest.raises(ae.ConfigError, match=rf"^eval set '{SET}': unknown field\(s\) owner have no effect"):
        ev.evaluate(with_extra, metrics=[ae.EvalMetric.final_response()])

    assert agent.calls == 0


def test_strict_refuses_an_evaluation_without_metrics() -> None:
    agent = CountingAgent()

    with pytest.raises(ae.ConfigError, match=rf"^eval set {SET} has no metrics .*strict=True refuses"):
        ae.Evaluator(APP, agent, strict=True, progress=False).evaluate(eval_set())

    assert agent.calls == 0


def test_a_metric_without_the_criterion_its_evaluator_needs_is_refused_before_the_agent_runs() -> None:
    """With strict or without: the built-in evaluators reject it in their check, before any case runs."""
    agent = CountingAgent()
    bare = ae.EvalMetric(metric_name="bare", evaluator_name="final_response_avg_score", threshold=1.0)

    for strict in (True, False):
        with pytest.raises(
            ae.ConfigError, match=r"^resolve metric at index 0 \(bare\): final response criterion not configured: "
        ):
            ae.Evaluator(APP, agent, strict=strict, progress=False).evaluate(eval_set(), metrics=[bare])

    assert agent.calls == 0


def test_strict_passes_a_clean_evaluation_through(tmp_path: Path) -> None:
    write_app(tmp_path)

    report = local_evaluator(tmp_path, CountingAgent(), strict=True).evaluate(SET)

    assert report.passed


def test_rescore_under_strict_refuses_unknown_fields_of_the_new_metrics() -> None:
    ev = ae.Evaluator(APP, CountingAgent(), progress=False)
    report = ev.evaluate(eval_set(), metrics=[ae.EvalMetric.final_response()])
    metric = ae.EvalMetric.model_validate({**ae.EvalMetric.final_response().to_dict(), "treshold": 0.5})

    with pytest.raises(ae.ConfigError, match=r"^metric 'final_response_avg_score': unknown field\(s\) treshold"):
        ev.rescore(report, metrics=[metric], strict=True)


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_strict_must_be_true_or_false(value: object) -> None:
    if value is None:
        # None keeps the current value, as for every option that cannot be None.
        assert ae.Evaluator(APP, strict=None).options.strict is False
        return
    with pytest.raises(ae.ConfigError, match=rf"^strict must be True or False, got {type(value).__name__} "):
        ae.Evaluator(APP, strict=value)
