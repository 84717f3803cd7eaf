"""An evaluation chooses its cases and checks its metrics once, and callbacks may still edit each run's requests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

import agenteval as ae
from agenteval._util.sync_bridge import run_sync
from agenteval.service import EvaluateConfig, EvaluateRequest, InferenceRequest, LocalService
from agenteval.service.callbacks import BeforeEvaluateSetArgs, BeforeInferenceSetArgs
from tests.test_evaluation import APP, SET, echo, fill, final_response, make_case


def _cases() -> list[ae.EvalCase]:
    return [make_case(eval_id) for eval_id in "abc"]


def test_a_before_inference_set_callback_that_narrows_the_case_ids_is_followed() -> None:
    def only_b(context: ae.EvalContext, args: BeforeInferenceSetArgs) -> None:
        args.request.eval_case_ids = ["b"]

    callbacks = ae.Callbacks().register_before_inference_set("only b", only_b)
    report = ae.Evaluator(APP, echo, progress=False, callbacks=callbacks).evaluate(
        ae.EvalSet(eval_set_id=SET, eval_cases=_cases()), metrics=[final_response()]
    )

    assert [case.eval_id for case in report.result.eval_case_results] == ["b"]


def test_a_before_inference_set_callback_that_gives_another_eval_set_has_its_cases_run() -> None:
    other = ae.EvalSet(eval_set_id=SET, eval_cases=[make_case("x"), make_case("y")])

    def swap(context: ae.EvalContext, args: BeforeInferenceSetArgs) -> None:
        args.request.eval_set = other

    service = LocalService(echo, callbacks=ae.Callbacks().register_before_inference_set("swap", swap))
    eval_set = ae.EvalSet(eval_set_id=SET, eval_cases=_cases())
    request = InferenceRequest(app_name=APP, eval_set_id=SET, eval_set=eval_set, eval_cases=eval_set.eval_cases)
    inferences = run_sync(service.inference(request))

    assert [inference.eval_case_id for inference in inferences] == ["x", "y"]


def test_a_callback_that_edits_the_metrics_edits_only_its_own_run() -> None:
    extra = final_response().model_copy(update={"metric_name": "again"})
    scored: list[list[str]] = []

    def add_one(context: ae.EvalContext, args: BeforeEvaluateSetArgs) -> None:
        config = args.request.evaluate_config
        config.eval_metrics.append(extra)
        scored.append([metric.metric_name for metric in config.eval_metrics])

    callbacks = ae.Callbacks().register_before_evaluate_set("add one", add_one)
    ae.Evaluator(APP, echo, progress=False, num_runs=3, callbacks=callbacks).evaluate(
        ae.EvalSet(eval_set_id=SET, eval_cases=_cases()), metrics=[final_response()]
    )

    assert scored == [["final_response_avg_score", "again"]] * 3


@pytest.mark.asyncio
async def test_evaluate_cancelled_while_it_finds_the_cases_still_runs_the_after_evaluate_set_callbacks() -> None:
    class SlowSets(ae.InMemoryEvalSetManager):
        slow = False

        async def get(self, app_name: str, eval_set_id: str) -> ae.EvalSet:
            if self.slow:
                await asyncio.sleep(30)
            return await super().get(app_name, eval_set_id)

    sets = SlowSets()
    await sets.save(APP, ae.EvalSet(eval_set_id=SET, eval_cases=_cases()))
    ended: list[str] = []
    callbacks = ae.Callbacks().register_after_evaluate_set("ended", lambda c, a: ended.append(type(a.error).__name__))
    service = LocalService(echo, eval_set_manager=sets, callbacks=callbacks)
    inferences = await service.inference(InferenceRequest(app_name=APP, eval_set_id=SET))
    sets.slow = True
    config = EvaluateConfig(eval_metrics=[final_response()])
    task = asyncio.create_task(
        service.evaluate(
            EvaluateRequest(app_name=APP, eval_set_id=SET, inference_results=inferences, evaluate_config=config)
        )
    )
    await asyncio.sleep(0.1)
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    assert ended == ["CancelledError"]


def test_one_evaluation_checks_its_metrics_once_whatever_the_number_of_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import agenteval.evaluation.plan as plan
    import agenteval.service.local as local

    checks: list[str] = []
    for module in (plan, local):
        monkeypatch.setattr(module, "check_metrics", _counting(module.check_metrics, checks))

    ae.Evaluator(APP, echo, progress=False, num_runs=3, eval_set_manager=fill(_cases())).evaluate(
        SET, metrics=[final_response()]
    )

    assert checks == [""]


def _counting(check: Callable[..., None], checks: list[str]) -> Callable[..., None]:
    def counted(metrics: object, options: object, *, where: str = "") -> None:
        checks.append(where)
        check(metrics, options, where=where)

    return counted
