"""Reading YAML another tool (or anyone) wrote, within bounds: nesting, alias expansion and integer size.

PyYAML's safe loader shares one object for every alias of an anchor, so a 500-byte document of
nested aliases (a "billion laughs") loads at once, and kills the process later, when something
walks the value (pydantic-core allocates gigabytes to write it). It also nests as deeply as the
text does, until Python's recursion limit, and reads any integer until Python's limit on digits.
:func:`load_yaml` refuses each of these with a :class:`~agenteval.errors.ConfigError`.
"""

from __future__ import annotations

import sys
from typing import Any

import yaml  # type: ignore[import-untyped]  # pyyaml ships no types; it comes with pydantic-evals

from agenteval._util.files import NESTING_LIMIT, huge_integer_problem, nesting_problem
from agenteval.errors import ConfigError

__all__ = ["EXPANSION_LIMIT", "load_yaml"]

EXPANSION_LIMIT = 100
"""How many times its own size a document may grow to once its aliases are written out.

A document without aliases stays about its own size; a hand-written one that repeats a block through
an anchor or a merge key (``<<: *defaults``) grows a few times."""


def load_yaml(text: str, source: str) -> Any:
    """Load one YAML document with the safe loader, within bounds.

    Args:
        text: The YAML text.
        source: How messages name the document (its path).

    Returns:
        The document's value (``None`` for an empty document).

    Raises:
        ConfigError: The document nests more than :data:`~agenteval._util.files.NESTING_LIMIT` levels (with
            its aliases written out too), its aliases make it hold itself or grow past
            :data:`EXPANSION_LIMIT` times its size, or an integer has more digits than Python reads;
            the message names ``source`` and the line.
        yaml.YAMLError: The text is not YAML.
    """
    loader = _BoundedLoader(text, source)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expanded(node, EXPANSION_LIMIT * len(text), source)
        return loader.construct_document(node)
    finally:
        loader.dispose()


class _BoundedLoader(yaml.SafeLoader):  # type: ignore[misc]  # pyyaml ships no types
    """The safe loader, refusing nesting past :data:`NESTING_LIMIT` and integers Python cannot read."""

    def __init__(self, text: str, source: str) -> None:
        super().__init__(text)
        self._source = source
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        # The composer recurses once per level: past the limit it would raise a bare RecursionError.
        if self._depth == NESTING_LIMIT:
            raise ConfigError(f"{self._source}: {_position(self.peek_event().start_mark)}: {nesting_problem()}")
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_yaml_int(self, node: Any) -> int:
        # Python reads hexadecimal, octal and binary integers of any length (in quadratic time): the
        # same bound holds for every base.
        if isinstance(node.value, str) and len(node.value) > sys.get_int_max_str_digits():
            raise ConfigError(f"{self._source}: {_position(node.start_mark)}: {huge_integer_problem()}")
        try:
            value: int = super().construct_yaml_int(node)
        except ValueError:
            # The YAML grammar admits only well-formed integers: int() refuses only too many digits.
            raise ConfigError(f"{self._source}: {_position(node.start_mark)}: {huge_integer_problem()}") from None
        return value


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)


def _position(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _check_expanded(root: Any, largest: int, source: str) -> None:
    """Refuse a document that, with its aliases written out, holds itself, nests too deeply or passes ``largest``.

    Its size counts one per node plus the characters of each scalar. Each node is measured once
    (an alias is the anchored node itself), so this takes time in proportion to the text.
    """
    measured: dict[int, tuple[int, int]] = {}  # id(node) -> (size, depth) with aliases written out
    unfinished: set[int] = set()  # the nodes being measured: the path from the root to the current one
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_measured = stack.pop()
        key = id(node)
        if children_measured:
            unfinished.remove(key)
            measured[key] = _measure(node, measured, largest, source)
        elif key in unfinished:
            raise ConfigError(
                f"{source}: the value anchored at {_position(node.start_mark)} holds itself through an alias:"
                " write the inner copy out"
            )
        elif key not in measured:
            unfinished.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node))


def _measure(node: Any, measured: dict[int, tuple[int, int]], largest: int, source: str) -> tuple[int, int]:
    """The size and depth of ``node`` written out, from those of its children."""
    if isinstance(node, yaml.ScalarNode):
        return 1 + len(node.value), 1
    children = [measured[id(child)] for child in _children(node)]
    size = 1 + sum(size for size, _ in children)
    depth = 1 + max((depth for _, depth in children), default=0)
    if size > largest:
        raise ConfigError(
            f"{source}: its YAML aliases (*name) make it more than {EXPANSION_LIMIT} times its own size once written"
            ' out (as a "billion laughs" document does): write the repeated parts out, or repeat them less'
        )
    if depth > NESTING_LIMIT:
        raise ConfigError(f"{source}: with its YAML aliases written out, {nesting_problem()}")
    return size, depth


def _children(node: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
