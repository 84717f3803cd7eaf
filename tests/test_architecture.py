"""Data flows one way: every top-level name of agenteval sits in one layer of ``LAYERS``, imports only from its own
layer and the layers below it, and no modules import each other in a loop.

The graph is read from the source (every import counts: inside functions and under ``TYPE_CHECKING`` too).

To place a new top-level package or module, put its name in the lowest layer that may import everything it imports
(the layer's own members and the layers below it: its ``on`` layers, followed down); whatever imports it must then
sit in that layer or above it. When no layer fits (the new name would let a layer import what it must not), add a
layer after the ones it sits on and before the ones that import it, naming in ``on`` the layers directly below it.
Imports within one layer are allowed; the cycle test keeps them acyclic.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

_SPEC = importlib.util.find_spec("agenteval")
assert _SPEC is not None and _SPEC.origin is not None
# Found, not imported: the map is read from the files.
PACKAGE = Path(_SPEC.origin).parent
HERE = "tests/test_architecture.py"


@dataclass(frozen=True)
class Layer:
    """Top-level names of agenteval that may import each other and everything in the layers they sit on."""

    name: str
    members: tuple[str, ...]
    """Subpackages and root modules (``__init__`` and ``__main__`` for the package's own two files)."""
    on: tuple[str, ...] = ()
    """The layers directly below; theirs are below this one too."""


LAYERS = (
    Layer("base", ("errors",)),
    # The presentation seam is here so that results can ask for a presenter without knowing the notebook.
    Layer("util", ("_util", "_presentation", "context", "status", "storage", "tokenizers"), on=("base",)),
    Layer("data", ("evalset", "metric", "evalresult", "criteria", "importers"), on=("util",)),
    Layer("models", ("llm",), on=("data",)),
    Layer("scoring", ("aggregation", "evaluators"), on=("models",)),
    # The agent runner runs agents and tool mocks; it never scores them.
    Layer("agent", ("runner",), on=("models",)),
    # Analysis reads results and re-scores them; it never runs an agent.
    Layer("analysis", ("analysis",), on=("scoring",)),
    Layer("running", ("adapters", "cache", "service"), on=("agent", "scoring")),
    Layer("facade", ("evaluation",), on=("running", "analysis")),
    Layer("presentation", ("notebook",), on=("facade",)),
    Layer("entry", ("cli", "testing", "examples", "__init__", "__main__"), on=("presentation",)),
)
"""Every top-level name of agenteval, in layers from the bottom up."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}

    def known(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets = imported_names(path.read_text(encoding="utf-8"), package)
        graph[module] = {found for target in targets if (found := known(target)) and found != module}
    return graph


def imported_names(source: str, package: str) -> set[str]:
    """Every name the source imports, anywhere in it, as absolute dotted names (``from a import b`` gives ``a.b``).

    Args:
        source: A module's text.
        package: The package that relative imports start from.
    """
    targets: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            targets.update(f"{base}.{alias.name}" for alias in node.names)
    return targets


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in graph[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def top_level(module: str) -> str:
    """The top-level name of a module: ``agenteval.runner.toolmock`` → ``runner``, ``agenteval`` → ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def top_level_names() -> set[str]:
    """Every subpackage and root module of agenteval, read from the files."""
    return {path.relative_to(PACKAGE).parts[0].removesuffix(".py") for path in PACKAGE.rglob("*.py")}


def reachable(layers: Iterable[Layer]) -> dict[str, set[str]]:
    """Each layer's name → the names of the layers it may import: itself and every layer below it."""
    below: dict[str, set[str]] = {}
    for layer in layers:
        below[layer.name] = {layer.name}.union(*(below[name] for name in layer.on))
    return below


def violations(graph: Mapping[str, Iterable[str]], layers: Iterable[Layer]) -> list[str]:
    """The imports of ``graph`` against ``layers``, one line each; imports of unclassified names are not judged."""
    layers = tuple(layers)
    layer_of = {member: layer for layer in layers for member in layer.members}
    below = reachable(layers)
    found = []
    for module, targets in sorted(graph.items()):
        importer = layer_of.get(top_level(module))
        for target in sorted(targets):
            imported = layer_of.get(top_level(target))
            if importer is None or imported is None or imported.name in below[importer.name]:
                continue
            allowed = ", ".join(layer.name for layer in layers if layer.name in below[importer.name])
            found.append(
                f"{module} -> {target}: layer {importer.name!r} ({top_level(module)}) may not import layer "
                f"{imported.name!r} ({top_level(target)}); it may import {allowed}"
            )
    return found


def test_the_layer_map_is_ordered_and_names_each_member_once() -> None:
    seen: set[str] = set()
    for layer in LAYERS:
        assert set(layer.on) <= seen, f"layer {layer.name!r} sits on a layer not listed before it: {layer.on}"
        seen.add(layer.name)
    members = [member for layer in LAYERS for member in layer.members]
    assert sorted(members) == sorted(set(members)), "a name is in more than one layer"


def test_every_top_level_name_is_in_the_layer_map() -> None:
    mapped = {member for layer in LAYERS for member in layer.members}
    unmapped = sorted(top_level_names() - mapped)

    assert not unmapped, (
        f"agenteval has top-level names in no layer: {', '.join(unmapped)}. Add each to LAYERS in {HERE} "
        "(its docstring says where)."
    )


def test_every_name_in_the_layer_map_exists() -> None:
    gone = sorted({member for layer in LAYERS for member in layer.members} - top_level_names())

    assert not gone, f"LAYERS in {HERE} names what agenteval no longer has: {', '.join(gone)}. Remove them."


def test_no_module_imports_against_the_layer_map() -> None:
    found = violations(import_graph(), LAYERS)

    assert not found, f"{len(found)} imports against LAYERS in {HERE}:\n" + "\n".join(found)


def test_the_layer_check_flags_an_upward_import_and_a_sideways_one() -> None:
    layers = (
        Layer("data", ("evalset",)),
        Layer("scoring", ("evaluators",), on=("data",)),
        Layer("agent", ("runner",), on=("data",)),
        Layer("running", ("service",), on=("agent", "scoring")),
    )
    graph = {
        "agenteval.runner.toolmock": {"agenteval.evaluators.matching", "agenteval.evalset.models"},
        "agenteval.evalset": {"agenteval.evalset.models", "agenteval.service"},
        "agenteval.service.local": {"agenteval.runner.base", "agenteval.evalset.models", "agenteval.notebook"},
    }

    assert violations(graph, layers) == [
        "agenteval.evalset -> agenteval.service: layer 'data' (evalset) may not import layer 'running' (service); "
        "it may import data",
        "agenteval.runner.toolmock -> agenteval.evaluators.matching: layer 'agent' (runner) may not import layer "
        "'scoring' (evaluators); it may import data, agent",
    ]


def test_agenteval_has_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_the_graph_sees_imports_inside_functions() -> None:
    graph = import_graph()

    # agenteval/__init__ registers the notebook presenter from inside a function.
    assert "agenteval.notebook._presenter" in graph["agenteval"]
    assert "agenteval._presentation" in graph["agenteval.analysis.report"]


def test_the_graph_reads_imports_in_functions_under_type_checking_and_relative_ones() -> None:
    source = """
from typing import TYPE_CHECKING

import agenteval.errors
from . import sibling
from ..metric import registry

if TYPE_CHECKING:
    from agenteval.notebook.progress import create_progress


def run() -> None:
    from agenteval.evaluators import registry
"""

    assert imported_names(source, "agenteval.runner") == {
        "typing.TYPE_CHECKING",
        "agenteval.errors",
        "agenteval.runner.sibling",
        "agenteval.metric.registry",
        "agenteval.notebook.progress.create_progress",
        "agenteval.evaluators.registry",
    }


def test_the_readme_layout_table_names_every_top_level_package_and_module() -> None:
    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    layout = readme[readme.index("## Layout") :]
    layout = layout[: layout.index("\n## ", 1)] if "\n## " in layout[1:] else layout
    rows = [row.split("|")[1] for row in layout.splitlines() if row.startswith("| `")]
    named = {
        code.removeprefix("agenteval/").rstrip("/").removesuffix(".py")
        for row in rows
        for code in re.findall(r"`([^`]+)`", row)
    }
    missing = sorted(name for name in top_level_names() - {"__init__", "__main__"} if name not in named)

    assert missing == [], f"README's Layout table does not say what these hold: {missing}"
