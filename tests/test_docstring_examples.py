"""The ``>>>`` examples in agenteval's docstrings run and show what they say.

The modules are found by scanning the source for ``>>>`` lines, so a new example is picked up; a module whose
examples the doctest finder cannot reach (say, in a comment or a nested function) fails too.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

_SPEC = importlib.util.find_spec("agenteval")
assert _SPEC is not None and _SPEC.origin is not None
PACKAGE = Path(_SPEC.origin).parent
_EXAMPLE = re.compile(r"^\s*>>> ", re.MULTILINE)


def modules_with_examples() -> list[str]:
    """The dotted names of the agenteval modules whose source has a ``>>>`` line."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if _EXAMPLE.search(path.read_text(encoding="utf-8")):
            parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def test_the_scan_finds_the_examples() -> None:
    assert "agenteval.metric.models" in modules_with_examples()


@pytest.mark.parametrize("name", modules_with_examples())
def test_the_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in doctest.DocTestFinder().find(module):
        runner.run(test, out=report.append)

    assert runner.tries, f"{name} has >>> lines that no docstring example holds: put them in a docstring"
    assert not runner.failures, "".join(report)
