"""Run ids travel with the work, and the service takes the eval set it is given."""

from __future__ import annotations

from collections import Counter

import pytest

import agenteval as ae
from agenteval._util.sync_bridge import run_sync
from agenteval.evalset.memory import InMemoryEvalSetManager
from agenteval.service import EvaluateConfig, EvaluateRequest, InferenceRequest, LocalService, ServiceOptions

POINTS = (
    "before_inference_set",
    "before_inference_case",
    "after_inference_case",
    "after_inference_set",
    "before_evaluate_set",
    "before_evaluate_case",
    "after_evaluate_case",
    "after_evaluate_set",
)


def eval_set() -> ae.EvalSet:
    return ae.EvalSet.of("set", [ae.EvalCase.of(eval_id, f"say {eval_id}", expect=eval_id) for eval_id in "abc"])


def test_every_callback_and_result_of_a_run_carries_its_run_id() -> None:
    seen: Counter[tuple[str, int]] = Counter()
    callbacks = ae.Callbacks()
    for point in POINTS:
        callbacks = getattr(callbacks, f"register_{point}")(
            point, lambda ctx, args, p=point: seen.update([(p, args.run_id)])
        )

    ev = ae.Evaluator("app", lambda text: text.removeprefix("say "), callbacks=callbacks, progress=False)
    report = ev.evaluate(eval_set(), metrics=[ae.EvalMetric.final_response()], num_runs=3, parallel_runs=True)

    per_set = {"before_inference_set", "after_inference_set", "before_evaluate_set", "after_evaluate_set"}
    assert seen == Counter({(point, run): 1 if point in per_set else 3 for point in POINTS for run in (1, 2, 3)})
    assert [case.run_id for case in report.result.eval_case_results] == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert [[inference.run_id for inference in run] for run in report.inference_results] == [[1] * 3, [2] * 3, [3] * 3]


class UnreadableStore(InMemoryEvalSetManager):
    async def get(self, app_name: str, eval_set_id: str) -> ae.EvalSet:
        raise AssertionError("the service read the store although the request holds the eval set")


def test_the_service_uses_the_eval_set_the_request_holds_without_reading_the_store() -> None:
    service = LocalService(lambda text: text.removeprefix("say "), ServiceOptions(eval_set_manager=UnreadableStore()))
    given = eval_set()

    async def both_phases() -> list[ae.EvalCaseResult]:
        inferences = await service.inference(
            InferenceRequest(app_name="app", eval_set_id="set", eval_set=given, run_id=2)
        )
        request = EvaluateRequest(
            app_name="app",
            eval_set_id="set",
            inference_results=inferences,
            evaluate_config=EvaluateConfig(eval_metrics=[ae.EvalMetric.final_response()]),
            eval_set=given,
            run_id=2,
        )
        return (await service.evaluate(request)).eval_case_results

    results = run_sync(both_phases())
    assert [(case.eval_id, case.run_id, case.final_eval_status) for case in results] == [
        (eval_id, 2, ae.EvalStatus.PASSED) for eval_id in "abc"
    ]


def test_a_request_whose_eval_set_has_another_id_is_refused() -> None:
    service = LocalService(lambda text: text)

    with pytest.raises(ae.ConfigError, match=r"holds eval set 'set' but names 'other'"):
        run_sync(service.inference(InferenceRequest(app_name="app", eval_set_id="other", eval_set=eval_set())))


def test_a_service_used_on_its_own_numbers_no_run_as_the_reference() -> None:
    manager = InMemoryEvalSetManager()
    run_sync(manager.create("app", "set"))
    for case in eval_set().eval_cases:
        run_sync(manager.add_case("app", "set", case))
    service = LocalService(lambda text: text.removeprefix("say "), ServiceOptions(eval_set_manager=manager))

    inferences = run_sync(service.inference(InferenceRequest(app_name="app", eval_set_id="set")))
    evaluated = run_sync(
        service.evaluate(
            EvaluateRequest(
                app_name="app",
                eval_set_id="set",
                inference_results=inferences,
                evaluate_config=EvaluateConfig(eval_metrics=[ae.EvalMetric.final_response()]),
            )
        )
    )

    assert {case.run_id for case in evaluated.eval_case_results} == {0}
    assert "runId" not in evaluated.eval_case_results[0].to_json()
