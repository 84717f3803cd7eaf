"""Every public module and package of agenteval (no part of its name starts with ``_``) says what it exports: an
``__all__``, written as a list of strings, naming only what it has.

Read from the source, so a module whose optional framework is not installed is checked too; only a module with a
module-level ``__getattr__`` (names it makes on demand) is imported to check the names it does not bind itself.
"""

from __future__ import annotations

import ast
import importlib
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


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def bound_names(statements: list[ast.stmt]) -> set[str]:
    """Names the statements bind at module level when the module runs (not those only under ``TYPE_CHECKING``)."""
    names: set[str] = set()
    for node in statements:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name))
        elif isinstance(node, ast.Import):
            names.update(alias.asname or alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.If):
            names |= bound_names(node.orelse) if _is_type_checking(node.test) else bound_names(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            handlers = [statement for handler in node.handlers for statement in handler.body]
            names |= bound_names(node.body + handlers + node.orelse + node.finalbody)
        elif isinstance(node, ast.With):
            names |= bound_names(node.body)
    return names


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


def test_every_name_in_an_all_exists() -> None:
    absent = {}
    for name, path in public_modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        declared = declared_names(tree) or []
        have = bound_names(tree.body)
        if path.name == "__init__.py":
            have |= {child.stem for child in path.parent.iterdir() if child.suffix == ".py" or any(child.glob("*.py"))}
        unknown = [item for item in declared if item not in have]
        if unknown and "__getattr__" in have:
            module = importlib.import_module(name)
            unknown = [item for item in unknown if not hasattr(module, item)]
        if unknown:
            absent[name] = unknown

    assert not absent, "names in __all__ that the module does not have: " + "; ".join(
        f"{name}: {', '.join(unknown)}" for name, unknown in absent.items()
    )


def test_the_check_sees_names_bound_at_run_time_only() -> None:
    tree = ast.parse(
        """
from typing import TYPE_CHECKING
import os.path
from json import loads as load_json

if TYPE_CHECKING:
    from pandas import DataFrame
else:
    DataFrame = None
try:
    import yaml
except ImportError:
    yaml = None

LIMIT: int = 3
first, second = 1, 2


class Report: ...


def build() -> None:
    inner = 1

__all__ = ["Report", "build"]
"""
    )

    assert declared_names(tree) == ["Report", "build"]
    assert bound_names(tree.body) == {
        "TYPE_CHECKING",
        "os",
        "load_json",
        "DataFrame",
        "yaml",
        "LIMIT",
        "first",
        "second",
        "Report",
        "build",
        "__all__",
    }
    assert declared_names(ast.parse("__all__ = sorted(['a'])")) is None
