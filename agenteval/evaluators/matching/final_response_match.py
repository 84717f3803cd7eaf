"""The final-response criterion: compare a turn's final answer with the expected one.

Sub-criteria run in the order json, text, rouge, xml; all must pass and every mismatch is
reported, joined with ``"; "``. A ``finalResponse.compareName`` replaces all of them with a
registered compare of whole turns.
"""

from __future__ import annotations

from agenteval.errors import ConfigError
from agenteval.evalset.models import Invocation
from agenteval.evaluators.matching.rouge import match_rouge
from agenteval.evaluators.matching.text import check_text_criterion, match_text
from agenteval.evaluators.matching.xml import check_xml_criterion, match_xml
from agenteval.metric.criterion import FinalResponseCriterion
from agenteval.metric.json_match import (
    check_json_criterion,
    format_value,
    match_json_text,
    named_compare_mismatch,
)
from agenteval.metric.registry import active_metric_registry

__all__ = ["NO_FINAL_RESPONSE", "check_final_response_criterion", "match_final_response"]

NO_FINAL_RESPONSE = "the agent gave no final response"
"""Reason when the expected turn has a final response and the actual turn has none."""


def check_final_response_criterion(criterion: FinalResponseCriterion) -> None:
    """Reject a final-response criterion that cannot be applied, before any turn is compared.

    Every ``compareName`` and ``tokenizerName`` must be registered in the active
    :class:`~agenteval.metric.registry.MetricRegistry`; with a registered
    ``finalResponse.compareName`` nothing else is checked, since nothing else is used.

    Raises:
        ConfigError: An unknown name; no sub-criterion configured; invalid text length bounds; ROUGE
            without a type; an XML match strategy other than ``skip``; a JSON criterion that cannot be
            applied (:func:`~agenteval.evaluators.matching.jsonmatch.check_json_criterion`).
    """
    problems = active_metric_registry().unregistered_names(criterion)
    if problems:
        raise ConfigError("; ".join(problems))
    if criterion.compare_name:
        return
    if criterion.text is None and criterion.json_ is None and criterion.rouge is None and criterion.xml is None:
        raise ConfigError(
            "final response criterion must configure text, json, rouge, or xml: for an exact match give it "
            "ae.criteria.FinalResponseCriterion(text=ae.criteria.TextCriterion()) (in a metrics file: "
            '"finalResponse": {"text": {}})'
        )
    if criterion.json_ is not None:
        check_json_criterion(criterion.json_, "criterion.finalResponse.json")
    if criterion.text is not None:
        check_text_criterion(criterion.text, "criterion.finalResponse.text")
    if criterion.rouge is not None and not criterion.rouge.ignore and not criterion.rouge.rouge_type:
        raise ConfigError("criterion.finalResponse.rouge.rougeType is required (rouge1, rouge2, …, rougeL, rougeLsum)")
    if criterion.xml is not None:
        check_xml_criterion(criterion.xml)


def _content(invocation: Invocation) -> str:
    return "none" if invocation.final_response is None else format_value(invocation.final_response.content)


def _run_compare(name: str, actual: Invocation, expected: Invocation) -> str | None:
    compare = active_metric_registry().final_response_compare(name)
    return named_compare_mismatch("final response compare", name, compare, actual, expected, render=_content)


def match_final_response(
    actual: Invocation,
    expected: Invocation,
    criterion: FinalResponseCriterion,
    measures: dict[str, float] | None = None,
    *,
    checked: bool = False,
) -> str | None:
    """Compare the final responses of one turn.

    A named compare gets both turns and decides alone. Otherwise both missing passes; a missing
    actual response fails; a missing expected response is compared as ``""``.

    Args:
        actual: The agent's turn.
        expected: The expected turn.
        criterion: How to compare.
        measures: When given, receives what the sub-criteria measured, in the order they run:
            ``json_max_number_difference`` from the JSON criterion
            (:func:`~agenteval.evaluators.matching.jsonmatch.match_json_text`), then the ROUGE
            precision, recall and F1 (:func:`~agenteval.evaluators.matching.rouge.match_rouge`).
            Nothing is measured when a response is missing or a named compare decides.
        checked: The criterion was already checked (:func:`check_final_response_criterion`) against
            the active registry, as an evaluator does once for all its cases.

    Returns:
        ``None`` on a match, else the sub-criteria's reasons (``"text mismatch: …"``) joined
        with ``"; "``.

    Raises:
        ConfigError: The criterion is misconfigured, or a compare raised.
    """
    if not checked:
        check_final_response_criterion(criterion)
    if criterion.compare_name:
        return _run_compare(criterion.compare_name, actual, expected)
    if actual.final_response is None and expected.final_response is None:
        return None
    expected_text = "" if expected.final_response is None else expected.final_response.content
    if actual.final_response is None:
        return f"{NO_FINAL_RESPONSE} (expected {format_value(expected_text)})"
    actual_text = actual.final_response.content
    mismatches: list[str] = []
    if criterion.json_ is not None:
        reason = match_json_text(actual_text, expected_text, criterion.json_, measures)
        if reason is not None:
            mismatches.append(f"json mismatch: {reason}")
    if criterion.text is not None:
        reason = match_text(actual_text, expected_text, criterion.text)
        if reason is not None:
            mismatches.append(f"text mismatch: {reason}")
    if criterion.rouge is not None:
        rouge = criterion.rouge
        tokenizer = active_metric_registry().rouge_tokenizer(rouge.tokenizer_name) if rouge.tokenizer_name else None
        reason = match_rouge(actual_text, expected_text, rouge, tokenizer, measures)
        if reason is not None:
            mismatches.append(f"rouge mismatch: {reason}")
    if criterion.xml is not None:
        reason = match_xml(actual_text, expected_text, criterion.xml)
        if reason is not None:
            mismatches.append(f"xml mismatch: {reason}")
    return "; ".join(mismatches) if mismatches else None
