"""The options are checked once, by the class that declares each: the same value, the same message."""

from __future__ import annotations

from typing import Any

import pytest

from agenteval.errors import ConfigError
from agenteval.evaluation import EvaluationOptions
from agenteval.service import ServiceOptions

# Service options: declared (and checked) by ServiceOptions, inherited by EvaluationOptions.
SERVICE_CASES = [
    ("parallelism", 0, r"^parallelism must be greater than 0, got 0$"),
    ("parallelism", 2.5, r"^parallelism must be a whole number, got float 2.5$"),
    ("judge_num_samples", 0, r"^judge_num_samples must be greater than 0, got 0$"),
    ("judge_num_samples", "2", r"^judge_num_samples must be a whole number, got str '2'$"),
    ("max_simulated_turns", -3, r"^max_simulated_turns must be greater than 0, got -3$"),
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


@pytest.mark.parametrize("parallel_inference", [False, True])
def test_a_service_refuses_a_parallelism_below_one_whatever_the_switches(parallel_inference: bool) -> None:
    # With both switches off, -1 used to pass and fail later in asyncio.Semaphore with a ValueError.
    with pytest.raises(ConfigError, match=r"^parallelism must be greater than 0, got -1$"):
        ServiceOptions(parallelism=-1, parallel_inference=parallel_inference)


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
