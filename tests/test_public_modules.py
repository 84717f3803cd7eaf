"""Every public module and package of agenteval (no part of its name starts with ``_``) says what it exports: an
``__all__`` written as a list of strings, an empty one for a package that exports nothing but its modules.

Read from the source, so a module whose optional framework is not installed is checked too. That each name in an
``__all__`` exists is checked by ``tests/test_exports.py``, which imports the modules.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

_SPEC = importlib.util.find_spec("agenteval")
assert _SPEC is not None and _SPEC.origin is not None
PACKAGE = Path(_SPEC.origin).parent


def public_modules() -> dict[str, Path]:
    """Module name → file, for every public module and package."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if not any(part.startswith("_") for part in parts):
            found[".".join(parts)] = path
    return found


def declared_names(tree: ast.Module) -> list[str] | None:
    """The strings of a top-level ``__all__ = [...]`` (or a tuple, annotated or not); ``None`` without one."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if not (isinstance(target, ast.Name) and target.id == "__all__"):
            continue
        if not isinstance(value, ast.List | ast.Tuple):
            return None
        items = [item.value for item in value.elts if isinstance(item, ast.Constant)]
        strings = [item for item in items if isinstance(item, str)]
        return strings if len(strings) == len(value.elts) else None
    return None


def test_every_public_module_has_an_all() -> None:
    missing = [
        name
        for name, path in public_modules().items()
        if declared_names(ast.parse(path.read_text(encoding="utf-8"))) is None
    ]

    assert not missing, (
        "public modules without an __all__ written as a list of strings (an empty one when a package exports "
        "nothing but its modules): " + ", ".join(missing)
    )


def test_the_check_reads_only_a_literal_list_of_strings() -> None:
    assert declared_names(ast.parse("__all__ = ['Report', 'build']")) == ["Report", "build"]
    assert declared_names(ast.parse("__all__: tuple[str, ...] = ()")) == []
    assert declared_names(ast.parse("__all__ = sorted(['a'])")) is None
    assert declared_names(ast.parse("__all__ = ['a', 1]")) is None
    assert declared_names(ast.parse("names = ['a']")) is None
