"""The checks of store arguments (``agenteval._util.name_checks``), with the reference framework's messages."""

from __future__ import annotations

import pytest

from agenteval._util.name_checks import check_file_names, check_names, check_result
from agenteval.errors import ConfigError
from agenteval.evalresult.models import EvalSetResult
from tests.evalresult._data import make_result


def test_check_names_words_the_keyword_and_checks_in_order() -> None:
    with pytest.raises(ConfigError, match="^app name is empty$"):
        check_names(app_name="", eval_set_result_id="")
    with pytest.raises(ConfigError, match="^eval set result id is empty$"):
        check_names(app_name="app", eval_set_result_id="")
    with pytest.raises(ConfigError, match="^eval case id is empty$"):
        check_names(app_name="app", eval_set_id="set", eval_case_id="")
    check_names(app_name="app", eval_set_id="set", metric_name="m")


@pytest.mark.parametrize("name", ["math-basic", "math_basic.v2", "app.name", "a..b", "...", "评估集", "x y"])
def test_check_file_names_accepts_ordinary_ids(name: str) -> None:
    check_file_names(eval_set_id=name)


def test_check_file_names_rejects_an_empty_name() -> None:
    with pytest.raises(ConfigError, match="^eval set id is empty$"):
        check_file_names(eval_set_id="")


@pytest.mark.parametrize("name", [".", "..", "a/b", "../etc", "/abs", "dir/", "a\\b", "..\\up", "nul\0byte"])
def test_check_file_names_rejects_names_that_could_leave_the_directory(name: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_file_names(eval_set_id=name)
    assert str(info.value).startswith(f"eval set id {name!r} is not allowed in a file name")


def test_check_file_names_checks_one_name_at_a_time_in_order() -> None:
    with pytest.raises(ConfigError, match="^app name 'a/b' is not allowed"):
        check_file_names(app_name="a/b", eval_set_id="")
    with pytest.raises(ConfigError, match="^eval set id is empty$"):
        check_file_names(app_name="app", eval_set_id="")


def test_check_result_order() -> None:
    with pytest.raises(ConfigError, match="^eval set result is None$"):
        check_result(None)
    with pytest.raises(ConfigError, match="^the eval set id of eval set result is empty$"):
        check_result(EvalSetResult())
    result = make_result()
    assert check_result(result) is result
