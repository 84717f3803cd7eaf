"""The JSON criterion: compare tool arguments, tool results and JSON final responses.

The comparison lives in :mod:`agenteval.metric.json_match`, below both the evaluators and the runner (whose
tool mocks match arguments with it); this module keeps its names where the evaluators' matchers are.
"""

from agenteval.metric.json_match import (
    DEFAULT_NUMBER_TOLERANCE,
    JSON_NUMBER_DIFFERENCE,
    JSONDifference,
    check_json_criterion,
    check_json_schema,
    format_value,
    json_differences,
    match_json,
    match_json_text,
    max_number_difference,
    named_compare_mismatch,
    parse_json_text,
)

__all__ = [
    "DEFAULT_NUMBER_TOLERANCE",
    "JSON_NUMBER_DIFFERENCE",
    "JSONDifference",
    "check_json_criterion",
    "check_json_schema",
    "format_value",
    "json_differences",
    "match_json",
    "match_json_text",
    "max_number_difference",
    "named_compare_mismatch",
    "parse_json_text",
]
