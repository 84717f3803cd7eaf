"""Data flows one way: no import cycles in agenteval, and the core never imports presentation or the facade.

The graph is read from the source (every import counts: inside functions and under ``TYPE_CHECKING`` too).
"""

from __future__ import annotations

import ast
from pathlib import Path

import agenteval

PACKAGE = Path(agenteval.__file__).parent

CORE = ("evalset", "metric", "evalresult", "service", "evaluators", "runner", "llm", "aggregation", "storage")
"""Subpackages and modules that hold data and the pipeline."""
UPPER = ("notebook", "plotting", "report", "compare", "_reanalysis", "_frames", "evaluation", "cli")
"""Presentation, reports and the facade: they depend on the core, never the reverse."""


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
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                targets.update(f"{base}.{alias.name}" for alias in node.names)
        graph[module] = {found for target in targets if (found := known(target)) and found != module}
    return graph


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


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_agenteval_has_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_the_core_never_imports_presentation_reports_or_the_facade() -> None:
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        if layer(module) in CORE
        for target in targets
        if layer(target) in UPPER
    )
    assert upward == []


def test_the_graph_sees_imports_inside_functions() -> None:
    graph = import_graph()

    # agenteval/__init__ registers the notebook presenter from inside a function.
    assert "agenteval.notebook._presenter" in graph["agenteval"]
    assert "agenteval._presentation" in graph["agenteval.analysis.report"]
