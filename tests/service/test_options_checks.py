"""The options are checked once, by the class that declares each: the same value, the same message."""

from __future__ import annotations

from typing import Any

import pytest

from agenteval._util.sync_bridge import run_sync
from agenteval.errors import ConfigError
from agenteval.evaluation import EvaluationOptions
from agenteval.service import CaseLimits, EvaluateConfig, InferenceRequest, LocalService, ServiceOptions, ServiceRuntime
from agenteval.status import EvalStatus
from tests.test_evaluation import APP, SET, echo, fill, final_response, make_case

# Service options: declared (and checked) by ServiceOptions, inherited by EvaluationOptions.
SERVICE_CASES = [
    ("parallelism", 2.5, r"^parallelism must be a whole number, got float 2.5$"),
    ("judge_num_samples", 0, r"^judge runner num samples must be greater than 0, got 0$"),
    ("judge_num_samples", "2", r"^judge_num_samples must be a whole number, got str '2'$"),
    ("max_simulated_turns", -3, r"^max simulated turns must be greater than 0, got -3$"),
    ("max_simulated_turns", True, r"^max_simulated_turns must be a whole number, got bool True$"),
    ("parallel_inference", "no", r"^parallel_inference must be True or False, got str 'no'$"),
    ("parallel_evaluation", 1, r"^parallel_evaluation must be True or False, got int 1$"),
    ("turn_timeout", 0, r"^turn_timeout must be a positive number of seconds or None, got int 0$"),
    ("turn_timeout", float("nan"), r"^turn_timeout must be a positive number of seconds or None, got float nan$"),
    ("turn_timeout", 10**400, r"^turn_timeout must be a positive number of seconds or None, got int 1000"),
    ("judge_timeout", -1, r"^judge_timeout must be a positive number of seconds or None, got int -1$"),
]


@pytest.mark.parametrize(("option", "value", "message"), SERVICE_CASES)
@pytest.mark.parametrize("options", [ServiceOptions, EvaluationOptions])
def test_a_service_option_gets_one_message_from_either_class(
    options: type[ServiceOptions], option: str, value: Any, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        options(**{option: value})
    with pytest.raises(ConfigError, match=message):
        options().updated({option: value})


def test_a_service_needs_a_parallelism_above_0_only_to_run_cases_in_parallel() -> None:
    # As in the reference: the cap is checked only when a parallel switch is on.
    with pytest.raises(ConfigError, match=r"^eval case parallelism must be greater than 0$"):
        ServiceOptions(parallelism=0, parallel_inference=True, parallel_evaluation=False)
    with pytest.raises(ConfigError, match=r"^eval case parallelism must be greater than 0$"):
        ServiceOptions(parallelism=0, parallel_inference=False, parallel_evaluation=True)
    serial = ServiceOptions(parallelism=-1, parallel_inference=False, parallel_evaluation=False)

    assert serial.parallelism == -1


def test_an_evaluation_needs_a_parallelism_above_0_whatever_the_switches() -> None:
    # Every run of an evaluation shares one limit of this size.
    with pytest.raises(ConfigError, match=r"^parallelism must be greater than 0, got 0$"):
        EvaluationOptions(parallelism=0, parallel_inference=False, parallel_evaluation=False)


def test_whole_numbers_become_ints() -> None:
    np = pytest.importorskip("numpy")

    options = ServiceOptions(parallelism=np.int64(3), judge_num_samples=np.int32(2), turn_timeout=np.float32(1.5))

    assert (options.parallelism, options.judge_num_samples, options.turn_timeout) == (3, 2, 1.5)
    assert type(options.parallelism) is int and type(options.turn_timeout) is float


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("num_runs", 0, r"^num_runs must be greater than 0, got 0$"),
        ("parallel_runs", "yes", r"^parallel_runs must be True or False, got str 'yes'$"),
        ("strict", None, r"^strict must be True or False, got NoneType None$"),
        ("progress", 0, r"^progress must be True or False, got int 0$"),
    ],
)
def test_an_evaluation_option_is_checked_by_evaluation_options(option: str, value: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        EvaluationOptions(**{option: value})


def test_progress_may_be_none() -> None:
    assert EvaluationOptions(progress=None).progress is None


def test_an_unknown_option_still_names_the_closest_one() -> None:
    with pytest.raises(ConfigError, match=r"^unknown option 'paralelism' \(did you mean 'parallelism'\?\)"):
        EvaluationOptions().updated({"paralelism": 2})
    with pytest.raises(ConfigError, match=r"^unknown option 'num_runs'"):
        ServiceOptions().updated({"num_runs": 2})


def test_a_serial_service_runs_whatever_its_parallelism() -> None:
    sets = fill([make_case("a")])
    service = LocalService(
        echo, eval_set_manager=sets, parallelism=-1, parallel_inference=False, parallel_evaluation=False
    )
    request = InferenceRequest(app_name=APP, eval_set_id=SET)

    _, scored = run_sync(service.infer_and_evaluate(request, EvaluateConfig(eval_metrics=[final_response()])))

    assert [result.final_eval_status for result in scored.eval_case_results] == [EvalStatus.PASSED]


def test_the_collaborators_once_given_as_keywords_still_work_with_a_warning_that_says_how_now() -> None:
    limits = CaseLimits.of(2)

    with pytest.warns(
        DeprecationWarning,
        match=r"^LocalService\(limits=\.\.\.\) is now LocalService\(runtime=ServiceRuntime\(limits=\.\.\.\)\)",
    ):
        service = LocalService(echo, limits=limits)

    assert service.runtime == ServiceRuntime(limits=limits)
    with pytest.raises(ConfigError, match=r"^give limits= inside runtime=ServiceRuntime\(\.\.\.\), not beside it$"):
        LocalService(echo, runtime=ServiceRuntime(), limits=limits)
