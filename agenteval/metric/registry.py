"""Named runtime hooks that metric files refer to by name.

A metric file cannot hold code, so a criterion names its custom compare (``compareName``) or ROUGE
tokenizer (``tokenizerName``) and the code registers the implementation under that name in a
:class:`MetricRegistry`. The service checks every metric against the registry before it evaluates
anything and makes the registry active (:func:`use_metric_registry`) while it evaluates; the
deterministic matchers then look the names up in :func:`active_metric_registry`.

A compare named at a parent level (``toolTrajectory`` or ``finalResponse``) replaces everything
below it, so names below it are neither looked up nor checked.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar, runtime_checkable

from agenteval.errors import ConfigError, describe_exception
from agenteval.evalset.models import Invocation
from agenteval.metric.criterion import (
    Criterion,
    FinalResponseCriterion,
    JSONCriterion,
    TextCriterion,
    ToolTrajectoryCriterion,
    ToolTrajectoryStrategy,
)
from agenteval.metric.models import EvalMetric

__all__ = [
    "InvocationCompare",
    "JSONCompare",
    "MetricRegistry",
    "TextCompare",
    "Tokenizer",
    "XMLCompare",
    "active_metric_registry",
    "call_compare",
    "use_metric_registry",
]

TextCompare = Callable[[str, str], bool]
"""``compare(actual, expected) -> bool`` for texts (tool names, final-response texts)."""
JSONCompare = Callable[[Any, Any], bool]
"""``compare(actual, expected) -> bool`` for JSON values.

Tool arguments and results arrive decoded; final responses arrive as their raw content strings,
as the reference passes them.
"""
XMLCompare = Callable[[str, str], bool]
"""``compare(actual, expected) -> bool`` for final-response texts under an XML criterion."""
InvocationCompare = Callable[[Invocation, Invocation], bool]
"""``compare(actual, expected) -> bool`` for whole turns (tool trajectory, final response)."""


@runtime_checkable
class Tokenizer(Protocol):
    """Splits a text into ROUGE tokens."""

    def tokenize(self, text: str) -> Iterable[str]:
        """Return the tokens of ``text``: a list, or any other iterable of strings (a generator too)."""
        ...


_T = TypeVar("_T")
_V = TypeVar("_V")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _quote(name: str) -> str:
    return json.dumps(name, ensure_ascii=False)


def _key_path(path: str, key: str) -> str:
    return f"{path}.{key}" if _IDENTIFIER.fullmatch(key) else f"{path}[{_quote(key)}]"


class MetricRegistry:
    """Named compares and tokenizers, looked up by the names in metric criteria.

    Registering a name again replaces the earlier entry. A compare returns ``True`` on a match
    and ``False`` on a mismatch; an exception it raises fails the eval case.

    Example:
        >>> registry = MetricRegistry()
        >>> registry.register_text_compare("trim_equal", lambda a, e: a.strip() == e.strip())
        >>> registry.text_compare("trim_equal")(" x ", "x")
        True
    """

    def __init__(self) -> None:
        self._text: dict[str, TextCompare] = {}
        self._json: dict[str, JSONCompare] = {}
        self._xml: dict[str, XMLCompare] = {}
        self._tool_trajectory: dict[str, InvocationCompare] = {}
        self._final_response: dict[str, InvocationCompare] = {}
        self._tokenizers: dict[str, Tokenizer] = {}

    def __repr__(self) -> str:
        counts = {
            "text": len(self._text),
            "json": len(self._json),
            "xml": len(self._xml),
            "toolTrajectory": len(self._tool_trajectory),
            "finalResponse": len(self._final_response),
            "rougeTokenizer": len(self._tokenizers),
        }
        shown = ", ".join(f"{kind}={count}" for kind, count in counts.items() if count)
        return f"MetricRegistry({shown})"

    @staticmethod
    def _register(table: dict[str, _T], kind: str, name: str, entry: _T) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{kind} name is empty")
        if not callable(entry):
            raise ConfigError(f"{kind} {_quote(name)} is not callable")
        table[name] = entry

    def register_text_compare(self, name: str, compare: TextCompare) -> None:
        """Register a text compare, used by ``text.compareName`` and ``name.compareName``.

        It replaces the whole text criterion (length included) wherever it is named.

        Raises:
            ConfigError: ``name`` is empty or ``compare`` is not callable.
        """
        self._register(self._text, "text compare", name, compare)

    def register_json_compare(self, name: str, compare: JSONCompare) -> None:
        """Register a JSON compare, used by ``json``, ``arguments`` and ``result`` ``compareName``.

        It replaces the whole JSON criterion (``valid`` and ``schema`` included). Tool arguments and
        results are passed decoded; final responses as their raw content strings.

        Raises:
            ConfigError: ``name`` is empty or ``compare`` is not callable.
        """
        self._register(self._json, "json compare", name, compare)

    def register_xml_compare(self, name: str, compare: XMLCompare) -> None:
        """Register an XML compare, used by ``finalResponse.xml.compareName``.

        It replaces the XML criterion's own rules (``matchStrategy``, ``valid``) and gets the
        actual and expected final-response texts.

        Raises:
            ConfigError: ``name`` is empty or ``compare`` is not callable.
        """
        self._register(self._xml, "xml compare", name, compare)

    def register_tool_trajectory_compare(self, name: str, compare: InvocationCompare) -> None:
        """Register a whole-turn compare used by ``toolTrajectory.compareName``.

        It replaces the whole tool-trajectory criterion.

        Raises:
            ConfigError: ``name`` is empty or ``compare`` is not callable.
        """
        self._register(self._tool_trajectory, "tool trajectory compare", name, compare)

    def register_final_response_compare(self, name: str, compare: InvocationCompare) -> None:
        """Register a whole-turn compare used by ``finalResponse.compareName``.

        It replaces the whole final-response criterion.

        Raises:
            ConfigError: ``name`` is empty or ``compare`` is not callable.
        """
        self._register(self._final_response, "final response compare", name, compare)

    def register_rouge_tokenizer(self, name: str, tokenizer: Tokenizer) -> None:
        """Register a ROUGE tokenizer used by ``rouge.tokenizerName`` (e.g. one for Chinese).

        Raises:
            ConfigError: ``name`` is empty or ``tokenizer`` has no callable ``tokenize``.
        """
        if not isinstance(name, str) or not name:
            raise ConfigError("rouge tokenizer name is empty")
        if not callable(getattr(tokenizer, "tokenize", None)):
            raise ConfigError(f"rouge tokenizer {_quote(name)} has no tokenize(text) method")
        self._tokenizers[name] = tokenizer

    @staticmethod
    def _lookup(table: dict[str, _T], kind: str, name: str) -> _T:
        entry = table.get(name)
        if entry is None:
            raise ConfigError(f"{kind} {_quote(name)} is not registered")
        return entry

    def text_compare(self, name: str) -> TextCompare:
        """Return the text compare registered as ``name``.

        Raises:
            ConfigError: No such compare.
        """
        return self._lookup(self._text, "text compare", name)

    def json_compare(self, name: str) -> JSONCompare:
        """Return the JSON compare registered as ``name``.

        Raises:
            ConfigError: No such compare.
        """
        return self._lookup(self._json, "json compare", name)

    def xml_compare(self, name: str) -> XMLCompare:
        """Return the XML compare registered as ``name``.

        Raises:
            ConfigError: No such compare.
        """
        return self._lookup(self._xml, "xml compare", name)

    def tool_trajectory_compare(self, name: str) -> InvocationCompare:
        """Return the tool-trajectory compare registered as ``name``.

        Raises:
            ConfigError: No such compare.
        """
        return self._lookup(self._tool_trajectory, "tool trajectory compare", name)

    def final_response_compare(self, name: str) -> InvocationCompare:
        """Return the final-response compare registered as ``name``.

        Raises:
            ConfigError: No such compare.
        """
        return self._lookup(self._final_response, "final response compare", name)

    def rouge_tokenizer(self, name: str) -> Tokenizer:
        """Return the ROUGE tokenizer registered as ``name``.

        Raises:
            ConfigError: No such tokenizer.
        """
        return self._lookup(self._tokenizers, "rouge tokenizer", name)

    def unregistered_names(
        self, criterion: Criterion | ToolTrajectoryCriterion | FinalResponseCriterion | None
    ) -> list[str]:
        """Describe every ``compareName`` and ``tokenizerName`` in ``criterion`` missing here.

        Names below a parent-level compare that is registered are not looked at, since that
        compare replaces them.

        Args:
            criterion: A metric's criterion, or its tool-trajectory or final-response part.

        Returns:
            One line per unknown name, with its location, e.g.
            ``criterion.finalResponse.text.compareName "trim" is not registered as a text compare``.
        """
        if criterion is None:
            return []
        if isinstance(criterion, ToolTrajectoryCriterion):
            return self._tool_trajectory_problems(criterion, "criterion.toolTrajectory")
        if isinstance(criterion, FinalResponseCriterion):
            return self._final_response_problems(criterion, "criterion.finalResponse")
        problems: list[str] = []
        if criterion.tool_trajectory is not None:
            problems += self._tool_trajectory_problems(criterion.tool_trajectory, "criterion.toolTrajectory")
        if criterion.final_response is not None:
            problems += self._final_response_problems(criterion.final_response, "criterion.finalResponse")
        return problems

    def check(self, metric: EvalMetric) -> None:
        """Fail when ``metric`` names a compare or tokenizer that is not registered.

        The service calls this for every metric before it evaluates anything, as the reference
        resolves names at the start of an evaluation.

        Raises:
            ConfigError: Naming the metric and every unknown name with its location.
        """
        problems = self.unregistered_names(metric.criterion)
        if problems:
            raise ConfigError(f"metric {_quote(metric.metric_name)}: " + "; ".join(problems))

    @staticmethod
    def _missing(table: dict[str, Any], name: str, where: str, kind: str) -> list[str]:
        if not name or name in table:
            return []
        return [f"{where}.compareName {_quote(name)} is not registered as {kind}"]

    def _text_problems(self, criterion: TextCriterion | None, where: str) -> list[str]:
        if criterion is None:
            return []
        return self._missing(self._text, criterion.compare_name, where, "a text compare")

    def _json_problems(self, criterion: JSONCriterion | None, where: str) -> list[str]:
        if criterion is None:
            return []
        return self._missing(self._json, criterion.compare_name, where, "a JSON compare")

    def _strategy_problems(self, strategy: ToolTrajectoryStrategy | None, where: str) -> list[str]:
        if strategy is None:
            return []
        return (
            self._text_problems(strategy.name, f"{where}.name")
            + self._json_problems(strategy.arguments, f"{where}.arguments")
            + self._json_problems(strategy.result, f"{where}.result")
        )

    def _tool_trajectory_problems(self, criterion: ToolTrajectoryCriterion, where: str) -> list[str]:
        if criterion.compare_name:
            return self._missing(self._tool_trajectory, criterion.compare_name, where, "a tool trajectory compare")
        problems = self._strategy_problems(criterion.default_strategy, f"{where}.defaultStrategy")
        for tool_name, strategy in criterion.tool_strategy.items():
            problems += self._strategy_problems(strategy, _key_path(f"{where}.toolStrategy", tool_name))
        return problems

    def _final_response_problems(self, criterion: FinalResponseCriterion, where: str) -> list[str]:
        if criterion.compare_name:
            return self._missing(self._final_response, criterion.compare_name, where, "a final response compare")
        problems = self._text_problems(criterion.text, f"{where}.text")
        problems += self._json_problems(criterion.json_, f"{where}.json")
        if criterion.xml is not None:
            problems += self._missing(self._xml, criterion.xml.compare_name, f"{where}.xml", "an XML compare")
        rouge = criterion.rouge
        if rouge is not None and rouge.tokenizer_name and rouge.tokenizer_name not in self._tokenizers:
            problems.append(
                f"{where}.rouge.tokenizerName {_quote(rouge.tokenizer_name)} is not registered as a ROUGE tokenizer"
            )
        return problems


def call_compare(kind: str, name: str, compare: Callable[[_V, _V], bool], actual: _V, expected: _V) -> bool:
    """Call a named compare; an exception or a non-bool result fails the eval case.

    Args:
        kind: What the compare is, for messages (e.g. ``"text compare"``).
        name: Its registered name.
        compare: The compare.
        actual: The agent's side.
        expected: The expected side.

    Returns:
        What the compare returned.

    Raises:
        ConfigError: The compare raised (the message includes its error) or did not return a bool.
    """
    try:
        matched = compare(actual, expected)
    except Exception as err:
        raise ConfigError(f"{kind} {_quote(name)} failed: {describe_exception(err)}") from err
    if not isinstance(matched, bool):
        raise ConfigError(f"{kind} {_quote(name)} returned {type(matched).__name__}, not a bool")
    return matched


_DEFAULT_REGISTRY = MetricRegistry()
_ACTIVE: ContextVar[MetricRegistry] = ContextVar("agenteval_metric_registry", default=_DEFAULT_REGISTRY)


def active_metric_registry() -> MetricRegistry:
    """Return the registry of the running evaluation.

    Outside :func:`use_metric_registry` this is a process-wide default registry, empty unless
    something registers into it.
    """
    return _ACTIVE.get()


@contextlib.contextmanager
def use_metric_registry(registry: MetricRegistry) -> Iterator[MetricRegistry]:
    """Make ``registry`` the :func:`active_metric_registry` inside the ``with`` block.

    Raises:
        ConfigError: ``registry`` is not a :class:`MetricRegistry`.
    """
    if not isinstance(registry, MetricRegistry):
        raise ConfigError(f"metric registry must be a MetricRegistry, got {type(registry).__name__}")
    token = _ACTIVE.set(registry)
    try:
        yield registry
    finally:
        _ACTIVE.reset(token)
