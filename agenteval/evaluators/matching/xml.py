"""The XML criterion: check that a final response is well-formed XML, or compare it by a named compare.

The only strategy is ``skip`` (there is no built-in XML comparison); with ``valid`` the actual text must be
one well-formed XML element, optionally surrounded by an XML declaration, a doctype, comments,
processing instructions and whitespace. Whitespace may come before the XML declaration too, as Go's
``encoding/xml`` allows (model replies often start with a newline); positions in messages count it.
Entities other than the predefined ones (``&amp;`` …) are rejected, as the reference does, so nothing
is ever expanded or fetched. The parser is expat rather than Go's tokenizer, so a few rare documents
are judged differently: duplicate attributes and a declaration after a comment are invalid here
(the XML standard's rules), while ``version="1.1"``, a non-UTF-8 ``encoding`` declaration and a
leading byte-order mark are accepted.
"""

from __future__ import annotations

import re
from xml.parsers import expat

from agenteval.errors import ConfigError
from agenteval.metric.criterion import XMLCriterion, XMLMatchStrategy
from agenteval.metric.json_match import format_value, named_compare_mismatch
from agenteval.metric.registry import active_metric_registry

__all__ = ["check_xml_criterion", "match_xml", "xml_problem"]

_END_TAG = re.compile(rb"</\s*([^\s>]+)")
_ROOT_START = re.compile(rb"\s*<[^!?/]")
_XML_SPACE = " \t\r\n"


def check_xml_criterion(criterion: XMLCriterion) -> None:
    """Reject an XML criterion whose match strategy is not ``skip`` (unless it is ignored or uses a named compare).

    Raises:
        ConfigError: The strategy is empty or unknown.
    """
    if criterion.ignore or criterion.compare_name:
        return
    strategy = criterion.match_strategy
    if strategy == XMLMatchStrategy.DEFAULT:
        raise ConfigError('xml match strategy is empty: set "matchStrategy": "skip"')
    if strategy != XMLMatchStrategy.SKIP:
        raise ConfigError(f'xml criterion: invalid match strategy {format_value(str(strategy))}: only "skip" exists')


def match_xml(actual: str, expected: str, criterion: XMLCriterion) -> str | None:
    """Check an XML final response.

    Order, as in the reference: ``ignore`` passes; a named compare (``compareName``) decides; else
    the strategy must be ``skip``, and with ``valid`` the actual text must be well-formed XML with
    one root element.

    Args:
        actual: The agent's text.
        expected: The expected text; only a named compare looks at it.
        criterion: How to check.

    Returns:
        ``None`` when the text passes, else the reason.

    Raises:
        ConfigError: The strategy is not ``skip``, or the named compare is unknown, raised or did
            not return a bool.
    """
    if criterion.ignore:
        return None
    if criterion.compare_name:
        name = criterion.compare_name
        return named_compare_mismatch("xml compare", name, active_metric_registry().xml_compare(name), actual, expected)
    check_xml_criterion(criterion)
    if criterion.valid:
        return xml_problem(actual)
    return None


class _EntityReference(Exception):
    """A reference to an entity the document declares itself, which the reference rejects."""


class _Scan:
    """Tracks elements while expat parses, to explain what is wrong with a document."""

    def __init__(self, parser: expat.XMLParserType) -> None:
        self.parser = parser
        self.open: list[str] = []
        self.roots = 0
        self.after_markup = 0
        """Byte offset just past the last markup or whitespace seen outside the root."""

    def start(self, name: str, _attributes: dict[str, str]) -> None:
        if not self.open:
            self.roots += 1
        self.open.append(name)

    def end(self, _name: str) -> None:
        self.open.pop()

    def text(self, data: str) -> None:
        """Take character data, so the default handler only sees markup and entity references."""

    def other(self, data: str) -> None:
        # With a default handler set, expat hands over references to entities the document
        # declares instead of expanding them.
        if self.open and data.startswith("&") and data.endswith(";"):
            raise _EntityReference(data)
        if not self.open:
            self.after_markup = self.parser.CurrentByteIndex + len(data.encode("utf-8"))


def _position(error: expat.ExpatError, skipped: str) -> str:
    """Locate ``error`` in the whole text, of which expat was not given the leading ``skipped`` whitespace."""
    line, column = error.lineno, error.offset
    if line == 1:
        column += len(skipped) - max(skipped.rfind("\n"), skipped.rfind("\r")) - 1
    line += skipped.count("\n") + skipped.count("\r") - skipped.count("\r\n")
    return f"line {line}, column {column}"


def _explain(error: expat.ExpatError, scan: _Scan, data: bytes, skipped: str) -> str:
    position = _position(error, skipped)
    syntax_error = f"xml syntax error: {expat.ErrorString(error.code)}: {position}"
    code = error.code
    at = scan.parser.ErrorByteIndex
    if scan.open:
        if code == expat.errors.codes[expat.errors.XML_ERROR_NO_ELEMENTS]:
            return f"xml content has unclosed elements: <{scan.open[-1]}> is never closed"
        if code == expat.errors.codes[expat.errors.XML_ERROR_TAG_MISMATCH]:
            # Expat points into the end tag, after its "</".
            closing = _END_TAG.match(data, max(data.rfind(b"</", 0, at + 1), 0))
            shown = closing.group(1).decode("utf-8", "replace") if closing else "?"
            return f"xml syntax error at {position}: element <{scan.open[-1]}> is closed by </{shown}>"
        return syntax_error
    if scan.roots:
        if _ROOT_START.match(data, at):
            return "xml content must contain a single root element"
        stray = data[at:].strip()
        if stray and not stray.startswith(b"<"):
            return "xml content has non-whitespace text outside the root element"
        return syntax_error
    before = data[scan.after_markup : at + 1].lstrip()
    if before and not before.startswith(b"<"):
        return "xml content has non-whitespace text outside the root element"
    if before.startswith(b"</"):
        return "xml content has an unexpected closing element"
    if code == expat.errors.codes[expat.errors.XML_ERROR_NO_ELEMENTS]:
        return "xml content must contain a root element"
    return syntax_error


def xml_problem(text: str) -> str | None:
    """Say what keeps ``text`` from being one well-formed XML document, or ``None`` if nothing does.

    Args:
        text: The text to check.

    Returns:
        ``None`` for well-formed XML with exactly one root element, else a reason such as
        ``xml content must contain a single root element``.
    """
    if not text.strip():
        return "xml content is empty"
    # Expat rejects anything, even whitespace, before an XML declaration; Go does not.
    body = text.lstrip(_XML_SPACE)
    skipped = text[: len(text) - len(body)]
    data = body.encode("utf-8")
    # The text is already decoded, so an encoding declaration in it must not apply.
    parser = expat.ParserCreate(encoding="utf-8")
    scan = _Scan(parser)
    parser.StartElementHandler = scan.start
    parser.EndElementHandler = scan.end
    parser.CharacterDataHandler = scan.text
    parser.DefaultHandler = scan.other
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        parser.Parse(data, True)
    except expat.ExpatError as err:
        return _explain(err, scan, data, skipped)
    except _EntityReference as err:
        return f"xml content references the entity {err}, which is not predefined"
    return None
