"""The final-response criterion: compare a turn's final answer with the expected one.

Sub-criteria run in the order json, text, rouge, xml; all must pass and every mismatch is
reported, joined with ``"; "``.
"""

from __future__ import annotations

from agenteval.errors import ConfigError
from agenteval.evalset.models import Invocation
from agenteval.evaluators.criteria.jsonmatch import format_value, match_json_text
from agenteval.evaluators.criteria.text import match_text
from agenteval.metric.criterion import FinalResponseCriterion

__all__ = ["NO_FINAL_RESPONSE", "check_final_response_criterion", "match_final_response"]

NO_FINAL_RESPONSE = "the agent gave no final response"
"""Reason when the expected turn has a final response and the actual turn has none."""


def _compare_names(criterion: FinalResponseCriterion) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    if criterion.compare_name:
        found.append(("finalResponse.compareName", criterion.compare_name))
    if criterion.text is not None and criterion.text.compare_name:
        found.append(("finalResponse.text.compareName", criterion.text.compare_name))
    if criterion.json_ is not None and criterion.json_.compare_name:
        found.append(("finalResponse.json.compareName", criterion.json_.compare_name))
    return found


def check_final_response_criterion(criterion: FinalResponseCriterion) -> None:
    """Reject a final-response criterion that cannot be applied.

    Raises:
        ConfigError: No sub-criterion is configured, a ``compareName`` is set (none are
            registered yet), or ROUGE or XML is configured (not supported yet).
    """
    found = _compare_names(criterion)
    if found:
        where, name = found[0]
        raise ConfigError(f"{where} {name!r} is not registered (named compares are not registered yet)")
    if criterion.text is None and criterion.json_ is None and criterion.rouge is None and criterion.xml is None:
        raise ConfigError("final response criterion must configure text, json, rouge, or xml")
    if criterion.rouge is not None and not criterion.rouge.ignore:
        raise ConfigError("final response criterion: rouge is not supported yet")
    if criterion.xml is not None and not criterion.xml.ignore:
        raise ConfigError("final response criterion: xml is not supported yet")


def match_final_response(actual: Invocation, expected: Invocation, criterion: FinalResponseCriterion) -> str | None:
    """Compare the final responses of one turn.

    Both missing passes; a missing actual response fails; a missing expected response is
    compared as ``""``.

    Args:
        actual: The agent's turn.
        expected: The expected turn.
        criterion: How to compare.

    Returns:
        ``None`` on a match, else the sub-criteria's reasons (``"text mismatch: …"``) joined
        with ``"; "``.

    Raises:
        ConfigError: The criterion is misconfigured or not supported yet.
    """
    check_final_response_criterion(criterion)
    if actual.final_response is None and expected.final_response is None:
        return None
    expected_text = "" if expected.final_response is None else expected.final_response.content
    if actual.final_response is None:
        return f"{NO_FINAL_RESPONSE} (expected {format_value(expected_text)})"
    actual_text = actual.final_response.content
    mismatches: list[str] = []
    if criterion.json_ is not None:
        reason = match_json_text(actual_text, expected_text, criterion.json_)
        if reason is not None:
            mismatches.append(f"json mismatch: {reason}")
    if criterion.text is not None:
        reason = match_text(actual_text, expected_text, criterion.text)
        if reason is not None:
            mismatches.append(f"text mismatch: {reason}")
    return "; ".join(mismatches) if mismatches else None
