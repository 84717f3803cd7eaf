"""The options are described once, by their field docstrings, and README's option table follows the fields.

README's table under "What you can plug in" is a summary for readers: these tests hold it to
``dataclasses.fields(EvaluationOptions)`` (every option in a row, no row for an option that does not
exist, the defaults it shows are the real ones).
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

import pytest

from agenteval.aggregation import AllPassAggregator
from agenteval.evaluation import EvaluationOptions
from agenteval.evaluators.registry import EvaluatorRegistry, default_registry
from agenteval.service import ServiceOptions
from agenteval.service.options import uuid_session_id

README = Path(__file__).resolve().parents[1] / "README.md"
HEADER = "| Option of `Evaluator` | Default | What it does |"

DEFAULTS = EvaluationOptions()

# What the table's words for a default mean, beside Python literals (`""`, `"auto"`, 16).
WORDS: dict[str, Callable[[object], bool]] = {
    "on": lambda value: value is True,
    "off": lambda value: value is False or value is None,
    "none": lambda value: value is None or value == type(value)(),
    "auto": lambda value: value is None,
    "all": lambda value: value == (),
    "in memory": lambda value: type(value).__name__.startswith("InMemory"),
    "process default": lambda value: value is None,
    "all metrics must pass": lambda value: isinstance(value, AllPassAggregator),
    "`ae.default_registry()`": lambda value: (
        isinstance(value, EvaluatorRegistry) and value.names() == default_registry().names()
    ),
    "the `judgeModel`'s": lambda value: value is None,
    "a new UUID4 per case": lambda value: value is uuid_session_id,
}


def _cells(line: str) -> list[str]:
    """The cells of a table row; a ``|`` inside backticks is text, not a border."""
    cells, current, quoted = [], "", False
    for char in line.strip().strip("|"):
        if char == "`":
            quoted = not quoted
        if char == "|" and not quoted:
            cells.append(current.strip())
            current = ""
        else:
            current += char
    return [*cells, current.strip()]


def _split(text: str) -> list[str]:
    """``text`` split at commas outside parentheses and backticks, each part without its `` (notes)``."""
    parts, current, depth, quoted = [], "", 0, False
    for char in text:
        quoted = not quoted if char == "`" else quoted
        depth += (char == "(") - (char == ")") if not quoted else 0
        if char == "," and depth == 0 and not quoted:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [re.sub(r"\s+\([^()]*\)", "", part).strip() for part in parts]


def _table() -> list[tuple[list[str], str]]:
    """The rows of README's option table: the options each names, and its default cell."""
    lines = README.read_text(encoding="utf-8").splitlines()
    start = lines.index(HEADER)
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        option, default, _ = _cells(line)
        rows.append((re.findall(r"`([a-z_]+)`", option), default))
    return rows


def _means(text: str, value: object) -> bool:
    meaning = WORDS.get(text)
    if meaning is not None:
        return meaning(value)
    try:
        literal = ast.literal_eval(text.strip("`"))
    except (ValueError, SyntaxError):
        pytest.fail(f"README's option table shows the default {text!r}: add what it means to WORDS")
    return bool(literal == value and type(literal) is type(value))


def test_the_readme_table_has_a_row_for_every_option_and_none_other() -> None:
    named = [name for names, _ in _table() for name in names]
    options = [option.name for option in fields(EvaluationOptions)]

    assert [name for name in options if name not in named] == [], "options without a row in README's table"
    assert [name for name in named if name not in options] == [], "rows in README's table for no option"
    assert len(named) == len(set(named)), "an option in two rows"


def test_the_readme_table_shows_the_real_defaults() -> None:
    wrong = []
    for names, cell in _table():
        shown = _split(cell)
        if len(shown) not in (1, len(names)):
            wrong.append(f"{', '.join(names)}: {cell!r} is neither one default nor one per option")
            continue
        for name, text in zip(names, shown * len(names) if len(shown) == 1 else shown, strict=True):
            if not _means(text, getattr(DEFAULTS, name)):
                wrong.append(f"{name}: README shows {text!r}, the default is {getattr(DEFAULTS, name)!r}")

    assert wrong == []


@pytest.mark.parametrize("options", [ServiceOptions, EvaluationOptions])
def test_every_option_has_a_docstring_where_it_is_declared(options: type[ServiceOptions]) -> None:
    tree = ast.parse(inspect.getsource(inspect.getmodule(options)))  # type: ignore[arg-type]
    body = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == options.__name__).body
    declared = [
        (statement.target.id, following)
        for statement, following in zip(body, [*body[1:], None], strict=True)
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
    ]
    undocumented = [
        name
        for name, following in declared
        if not (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        )
    ]

    assert undocumented == []
    assert {name for name, _ in declared} <= {option.name for option in fields(options)}
