"""The XML criterion, mirroring the reference's tables plus the inventory's rules."""

from __future__ import annotations

from typing import Any

import pytest

from agenteval.errors import ConfigError
from agenteval.evalset.message import Message
from agenteval.evalset.models import Invocation
from agenteval.evaluators.matching import check_xml_criterion, match_final_response, match_xml, xml_problem
from agenteval.metric.criterion import FinalResponseCriterion, XMLCriterion, XMLMatchStrategy
from agenteval.metric.registry import MetricRegistry, use_metric_registry

VALID = XMLCriterion(valid=True, match_strategy=XMLMatchStrategy.SKIP)
UNKNOWN_STRATEGY = XMLCriterion.model_construct(match_strategy="exact")  # type: ignore[arg-type]

WELL_FORMED = [
    # The reference's table.
    "<root><child>value</child></root>",
    '<?xml version="1.0"?><root xmlns:h="urn:test"><h:child /></root>',
    "<!-- comment --><root/>",
    # Whitespace, comments and processing instructions may surround the root.
    "\n  <root/>\n",
    "<root/>\n<?pi data?>\n<!-- trailing -->\n",
    '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE root>\n<root a="1">x</root>',
    "<r>&amp;&lt;&gt;&quot;&apos;&#65;&#x42;</r>",
    "<r><![CDATA[a & b < c]]></r>",
    "<r a='>'/>",
    "<r>北京</r>",
    # A declaration in an already decoded text does not apply.
    "<?xml version='1.0' encoding='ISO-8859-1'?><r>é</r>",
    # A declared entity that is never used.
    '<!DOCTYPE r [<!ENTITY x "y">]><r/>',
    # Whitespace before the declaration, as Go's encoding/xml accepts (replies often start with a newline).
    "\n<?xml version='1.0'?>\n<a/>",
    ' \r\n\t<?xml version="1.0" encoding="UTF-8"?><r>x</r>\n',
]


@pytest.mark.parametrize("content", WELL_FORMED)
def test_valid_xml(content: str) -> None:
    assert xml_problem(content) is None
    assert match_xml(content, "", VALID) is None


MALFORMED = [
    # The reference's table.
    ("", "xml content is empty"),
    ("   ", "xml content is empty"),
    ("<root>", "xml content has unclosed elements: <root> is never closed"),
    ("<root></other>", "xml syntax error at line 1, column 8: element <root> is closed by </other>"),
    ("<a/><b/>", "xml content must contain a single root element"),
    ("text<root/>", "xml content has non-whitespace text outside the root element"),
    # More of the same rules.
    ("\n\t\n", "xml content is empty"),
    ("<a/>\n  <b/>", "xml content must contain a single root element"),
    ("<a/><!-- between --><b/>", "xml content must contain a single root element"),
    ("<a x='>'/><b/>", "xml content must contain a single root element"),
    ("<a/>text", "xml content has non-whitespace text outside the root element"),
    ("<!-- c --> text <a/>", "xml content has non-whitespace text outside the root element"),
    ("&amp;<r/>", "xml content has non-whitespace text outside the root element"),
    ("<r/>&amp;", "xml content has non-whitespace text outside the root element"),
    ("<!-- only a comment -->", "xml content must contain a root element"),
    ("</a>", "xml content has an unexpected closing element"),
    ("<a><b></a>", "element <b> is closed by </a>"),
    ("<r>\n  <a>\n</r>", "xml syntax error at line 3, column 2: element <a> is closed by </r>"),
    # Positions count the whitespace before an XML declaration.
    ("\n\n  <?xml version='1.0'?><a></b>", "xml syntax error at line 3, column 28: element <a> is closed by </b>"),
    ("\r\n <?xml version='1.0'?>\n<a>&x;</a>", "xml syntax error: undefined entity: line 3, column 3"),
    ("\n  <r", "xml syntax error: unclosed token: line 2, column 2"),
    ("\n<?xml version='1.0'?>\n<a/>\n<b/>", "xml content must contain a single root element"),
    ("<r><a>", "xml content has unclosed elements: <a> is never closed"),
    ("<r", "xml syntax error: unclosed token"),
    ("<r a='1' a='2'/>", "xml syntax error: duplicate attribute"),
    ("<r>&nbsp;</r>", "xml syntax error: undefined entity"),
    # Entities are never expanded, so neither amplified nor read from files.
    ('<!DOCTYPE r [<!ENTITY x "y">]><r>&x;</r>', "xml content references the entity &x;, which is not predefined"),
    ('<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>', "references the entity &x;"),
    (
        '<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><r>&b;</r>',
        "references the entity &b;",
    ),
]


@pytest.mark.parametrize(("content", "reason"), MALFORMED)
def test_invalid_xml(content: str, reason: str) -> None:
    problem = xml_problem(content)
    assert problem is not None
    assert reason in problem, problem
    result = match_xml(content, "", VALID)
    assert result is not None
    assert reason in result
    assert "\n" not in result


def test_reasons_are_exact_for_the_reference_messages() -> None:
    assert xml_problem("<a/><b/>") == "xml content must contain a single root element"
    assert xml_problem("text<root/>") == "xml content has non-whitespace text outside the root element"
    assert xml_problem("") == "xml content is empty"


@pytest.mark.parametrize(
    ("criterion", "message"),
    [
        (XMLCriterion(), "xml match strategy is empty"),
        (XMLCriterion(valid=False), "xml match strategy is empty"),
        (UNKNOWN_STRATEGY, 'invalid match strategy "exact"'),
    ],
)
def test_match_strategy_must_be_skip(criterion: XMLCriterion, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        match_xml("<root/>", "", criterion)
    with pytest.raises(ConfigError, match=message):
        check_xml_criterion(criterion)


def test_unknown_strategy_is_rejected_when_loading() -> None:
    with pytest.raises(ValueError, match="matchStrategy"):
        XMLCriterion.model_validate({"matchStrategy": "exact"})


@pytest.mark.parametrize(
    ("criterion", "content"),
    [
        (XMLCriterion(ignore=True), ""),
        (XMLCriterion(ignore=True, valid=True), "<a/><b/>"),
        (XMLCriterion(match_strategy=XMLMatchStrategy.SKIP), "<root>"),
        (XMLCriterion(match_strategy=XMLMatchStrategy.SKIP, valid=False), "not xml at all"),
    ],
)
def test_passes_without_validation(criterion: XMLCriterion, content: str) -> None:
    assert match_xml(content, "", criterion) is None
    check_xml_criterion(criterion)


def _same_root(actual: str, expected: str) -> bool:
    return actual.split(">")[0] == expected.split(">")[0]


def test_a_named_xml_compare_decides_instead_of_the_rules() -> None:
    registry = MetricRegistry()
    registry.register_xml_compare("same_root", _same_root)
    criterion = XMLCriterion(compare_name="same_root")  # no matchStrategy needed
    check_xml_criterion(criterion)

    with use_metric_registry(registry):
        assert match_xml("<a>1</a>", "<a>2</a>", criterion) is None
        assert match_xml("<a/><b/>", "<b/>", criterion) == (
            'xml compare "same_root" returned false (actual "<a/><b/>", expected "<b/>")'
        )
        assert match_xml("<b>", "<b/>", criterion.model_copy(update={"ignore": True})) is None
        result = match_final_response(
            _turn("<a>x</a>"),
            _turn("<a>y</a>"),
            FinalResponseCriterion.model_validate({"xml": {"compareName": "same_root"}}),
        )
        assert result is None


def test_an_xml_compare_that_raises_or_is_missing_is_a_config_error() -> None:
    def broken(actual: str, expected: str) -> bool:
        raise ValueError("bad")

    registry = MetricRegistry()
    registry.register_xml_compare("broken", broken)
    with use_metric_registry(registry):
        with pytest.raises(ConfigError, match=r'^xml compare "broken" failed: ValueError: bad$'):
            match_xml("<a/>", "<a/>", XMLCriterion(compare_name="broken"))
        with pytest.raises(ConfigError, match=r'^xml compare "missing" is not registered'):
            match_xml("<a/>", "<a/>", XMLCriterion(compare_name="missing"))


def test_compare_name_round_trips_as_a_metric_file_key() -> None:
    criterion = XMLCriterion.model_validate({"compareName": "same_root"})
    assert criterion.to_dict() == {"compareName": "same_root"}


def _turn(content: str | None) -> Invocation:
    return Invocation(final_response=None if content is None else Message.assistant(content))


FINAL_RESPONSE_CASES: list[tuple[str, dict[str, Any], str | None, str | None, str | None]] = [
    ("valid xml", {"xml": {"valid": True, "matchStrategy": "skip"}}, "<a>1</a>", None, None),
    (
        "two roots",
        {"xml": {"valid": True, "matchStrategy": "skip"}},
        "<a/><b/>",
        "<a/>",
        "xml mismatch: xml content must contain a single root element",
    ),
    ("skip without valid", {"xml": {"matchStrategy": "skip"}}, "not xml", "", None),
    ("both missing", {"xml": {"valid": True, "matchStrategy": "skip"}}, None, None, None),
    (
        "json, text then xml",
        {
            "xml": {"valid": True, "matchStrategy": "skip"},
            "text": {"matchStrategy": "contains"},
            "json": {"valid": True, "matchStrategy": "skip"},
        },
        "<a/><b/>",
        "<c/>",
        'json mismatch: parse actual raw json: Expecting value: line 1 column 1 (char 0) (text "<a/><b/>"); '
        'text mismatch: actual "<a/><b/>" does not contain expected "<c/>"; '
        "xml mismatch: xml content must contain a single root element",
    ),
]


@pytest.mark.parametrize(
    ("fields", "actual", "expected", "reason"),
    [case[1:] for case in FINAL_RESPONSE_CASES],
    ids=[case[0] for case in FINAL_RESPONSE_CASES],
)
def test_xml_in_final_response(
    fields: dict[str, Any], actual: str | None, expected: str | None, reason: str | None
) -> None:
    result = match_final_response(_turn(actual), _turn(expected), FinalResponseCriterion.model_validate(fields))
    assert result == reason
