"""The save-side helpers shared by every eval-result store."""

from __future__ import annotations

import math
import re
import time

import pytest

from agenteval.errors import ConfigError
from agenteval.evalresult._prepare import (
    clone_result,
    new_result_id,
    prepare_result,
    validate_get,
    validate_list,
    validate_save,
)
from agenteval.evalresult.models import EvalSetResult
from tests.evalresult._data import UUID4, make_result


def test_new_result_id() -> None:
    assert re.fullmatch(f"my-app_my-set_{UUID4}", new_result_id("my-app", "my-set"))
    assert new_result_id("a", "s") != new_result_id("a", "s")


def test_validation_order() -> None:
    with pytest.raises(ConfigError, match="^app name is empty$"):
        validate_save("", None)
    with pytest.raises(ConfigError, match="^eval set result is None$"):
        validate_save("app", None)
    with pytest.raises(ConfigError, match="^the eval set id of eval set result is empty$"):
        validate_save("app", EvalSetResult())
    result = make_result()
    assert validate_save("app", result) is result
    with pytest.raises(ConfigError, match="^app name is empty$"):
        validate_get("", "")
    with pytest.raises(ConfigError, match="^eval set result id is empty$"):
        validate_get("app", "")
    validate_get("app", "r1")
    with pytest.raises(ConfigError, match="^app name is empty$"):
        validate_list("")
    validate_list("app")


def test_prepare_fills_in_a_copy() -> None:
    result = make_result()
    before = time.time()
    prepared = prepare_result("app", result)

    assert prepared is not result
    assert re.fullmatch(f"app_set_{UUID4}", prepared.eval_set_result_id)
    assert prepared.eval_set_result_name == prepared.eval_set_result_id
    assert prepared.creation_timestamp is not None and prepared.creation_timestamp >= before
    assert result.eval_set_result_id == "" and result.creation_timestamp is None
    assert prepared.eval_case_results[0] is not result.eval_case_results[0]


def test_prepare_without_timestamp_leaves_it_unset() -> None:
    prepared = prepare_result("app", make_result(eval_set_result_id="r1"), set_timestamp=False)
    assert prepared.eval_set_result_id == "r1"
    assert prepared.creation_timestamp is None
    kept = prepare_result("app", make_result(creation_timestamp=5.0), set_timestamp=False)
    assert kept.creation_timestamp == 5.0


def test_prepare_validates_before_copying() -> None:
    result = make_result("")
    result.eval_case_results[0].session_id = object()  # type: ignore[assignment]
    with pytest.raises(ConfigError, match="^the eval set id of eval set result is empty$"):
        prepare_result("app", result)


def test_clone_rejects_values_json_cannot_hold() -> None:
    result = make_result()
    result.eval_case_results[0].eval_metric_result_per_invocation[0].actual_invocation.tools[0].arguments = {  # type: ignore[union-attr]
        "f": print
    }
    with pytest.raises(ConfigError, match="^clone result: "):
        clone_result(result)
    with pytest.raises(ConfigError, match="^clone eval set result app.r1: "):
        clone_result(result, "clone eval set result app.r1")


def test_clone_rejects_a_score_json_cannot_hold() -> None:
    result = make_result()
    result.eval_case_results[0].score = math.nan
    with pytest.raises(ConfigError, match="^clone result: field evalCaseResults\\[0\\]\\.score"):
        clone_result(result)
