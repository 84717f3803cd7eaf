"""The save-side helpers shared by every eval-result store."""

from __future__ import annotations

import math
import re
import time

import pytest

from agenteval.errors import ConfigError
from agenteval.evalresult._prepare import filled_result, new_result_id, result_json
from agenteval.evalresult.models import EvalSetResult
from tests.evalresult._data import UUID4, make_result


def test_new_result_id() -> None:
    assert re.fullmatch(f"my-app_my-set_{UUID4}", new_result_id("my-app", "my-set"))
    assert new_result_id("a", "s") != new_result_id("a", "s")


def test_filled_result_fills_in_a_copy() -> None:
    result = make_result()
    before = time.time()
    filled = filled_result("app", result)

    assert filled is not result
    assert re.fullmatch(f"app_set_{UUID4}", filled.eval_set_result_id)
    assert filled.eval_set_result_name == filled.eval_set_result_id
    assert filled.creation_timestamp is not None and filled.creation_timestamp >= before
    assert result.eval_set_result_id == "" and result.creation_timestamp is None


def test_filled_result_without_timestamp_leaves_it_unset() -> None:
    filled = filled_result("app", make_result(eval_set_result_id="r1"), set_timestamp=False)
    assert filled.eval_set_result_id == "r1"
    assert filled.creation_timestamp is None
    kept = filled_result("app", make_result(creation_timestamp=5.0), set_timestamp=False)
    assert kept.creation_timestamp == 5.0


def test_result_json_is_the_text_that_reads_back() -> None:
    result = filled_result("app", make_result())
    text = result_json(result)
    assert "\n" not in text
    assert EvalSetResult.from_json(text) == EvalSetResult.from_json(result.to_json())
    assert result_json(result, indent=2) == result.to_json(indent=2)


def test_result_json_rejects_values_json_cannot_hold() -> None:
    result = make_result()
    result.eval_case_results[0].eval_metric_result_per_invocation[0].actual_invocation.tools[0].arguments = {  # type: ignore[union-attr]
        "f": print
    }
    with pytest.raises(ConfigError, match="^clone result: "):
        result_json(result)


def test_result_json_rejects_a_score_json_cannot_hold() -> None:
    result = make_result()
    result.eval_case_results[0].score = math.nan
    with pytest.raises(ConfigError, match="^clone result: field evalCaseResults\\[0\\]\\.score"):
        result_json(result)
