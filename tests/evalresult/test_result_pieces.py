"""A result written in pieces, one per case result, is the text written whole, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from agenteval.errors import ConfigError
from agenteval.evalresult._prepare import result_json, result_pieces
from agenteval.evalresult.local import load_result_file
from agenteval.evalresult.models import EvalCaseResult, EvalSetResult
from tests.evalresult._data import INTEROP_RESULTS, make_result


def _results() -> list[EvalSetResult]:
    one = make_result(eval_set_result_id="r1")
    many = make_result(eval_set_result_id="r2")
    case = many.eval_case_results[0]
    many.eval_case_results = [
        case,
        case.model_copy(update={"eval_id": 'ünïcode \u2028 "quoted" \n line', "run_id": 2}),
        EvalCaseResult.model_validate({"evalId": "extra", "someNewKey": {"nested": [1, {"a": []}]}, "score": 0.5}),
        EvalCaseResult(eval_id="bare"),
    ]
    empty = make_result(eval_set_result_id="r3")
    empty.eval_case_results = []
    with_extra = EvalSetResult.model_validate({**many.to_dict(), "keyFromANewerVersion": [1, 2]})
    return [one, many, empty, with_extra]


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("result", _results(), ids=["one-case", "several-cases", "no-cases", "unknown-key"])
def test_the_pieces_make_the_whole_text(result: EvalSetResult, indent: int | None) -> None:
    pieces = result_pieces(result, indent=indent)
    assert "".join(pieces) == result_json(result, indent=indent)
    assert len(pieces) == (2 * len(result.eval_case_results) + 1 if result.eval_case_results else 1)


@pytest.mark.parametrize("path", INTEROP_RESULTS, ids=lambda path: path.parent.parent.parent.name)
def test_the_reference_files_write_in_pieces_as_whole(path: Path) -> None:
    result = load_result_file(path)
    assert "".join(result_pieces(result, indent=2)) == result_json(result, indent=2)


def test_a_value_that_cannot_be_written_is_named_by_its_path_in_the_result() -> None:
    result = make_result(eval_set_result_id="r1")
    result.eval_case_results.append(EvalCaseResult(eval_id="second"))
    result.eval_case_results[1].score = float("nan")
    with pytest.raises(ConfigError, match=r"clone result: field evalCaseResults\[1\]\.score is not a finite number"):
        result_pieces(result)


def test_a_subclass_of_a_case_result_is_written_as_the_result_writes_it() -> None:
    class Tagged(EvalCaseResult):
        tag: str = "written alone, not inside a result"

    result = make_result(eval_set_result_id="r1")
    result.eval_case_results = [Tagged(eval_id="tagged")]
    assert "".join(result_pieces(result, indent=2)) == result_json(result, indent=2)
    assert "written alone" not in "".join(result_pieces(result))


@pytest.mark.parametrize("kind", [tuple, lambda cases: (case for case in cases)], ids=["tuple", "generator"])
def test_case_results_that_are_not_a_list_are_refused_as_the_whole_text_refuses_them(kind: object) -> None:
    result = make_result(eval_set_result_id="r1")
    result.eval_case_results = kind(result.eval_case_results)  # type: ignore[operator]
    with pytest.raises(ConfigError, match="clone result"):
        result_pieces(result)
