"""Deterministic matchers behind the built-in evaluators.

Every matcher returns ``None`` on a match and a one-line, human-readable reason otherwise, and
raises :class:`agenteval.errors.ConfigError` when its criterion cannot be applied. The
final-response matchers also accept a ``measures`` dict that receives what they measured (ROUGE
precision, recall and F1; the largest JSON number difference) without changing their verdict.
"""

from agenteval.evaluators.matching.final_response_match import (
    NO_FINAL_RESPONSE,
    check_final_response_criterion,
    match_final_response,
)
from agenteval.evaluators.matching.jsonmatch import (
    DEFAULT_NUMBER_TOLERANCE,
    JSON_NUMBER_DIFFERENCE,
    check_json_criterion,
    check_json_schema,
    format_value,
    match_json,
    match_json_text,
    max_number_difference,
    parse_json_text,
)
from agenteval.evaluators.matching.rouge import DefaultTokenizer, RougeScore, match_rouge, score_rouge
from agenteval.evaluators.matching.text import check_length_criterion, check_text_criterion, match_length, match_text
from agenteval.evaluators.matching.trajectory import (
    check_tool_trajectory_criterion,
    default_tool_strategy,
    match_tool,
    match_tool_trajectory,
    maximum_bipartite_matching,
    strategy_for,
)
from agenteval.evaluators.matching.xml import check_xml_criterion, match_xml, xml_problem

__all__ = [
    "DEFAULT_NUMBER_TOLERANCE",
    "JSON_NUMBER_DIFFERENCE",
    "NO_FINAL_RESPONSE",
    "DefaultTokenizer",
    "RougeScore",
    "check_final_response_criterion",
    "check_json_criterion",
    "check_json_schema",
    "check_length_criterion",
    "check_text_criterion",
    "check_tool_trajectory_criterion",
    "check_xml_criterion",
    "default_tool_strategy",
    "format_value",
    "match_final_response",
    "match_json",
    "match_json_text",
    "match_length",
    "match_rouge",
    "match_text",
    "match_tool",
    "match_tool_trajectory",
    "match_xml",
    "max_number_difference",
    "maximum_bipartite_matching",
    "parse_json_text",
    "score_rouge",
    "strategy_for",
    "xml_problem",
]
