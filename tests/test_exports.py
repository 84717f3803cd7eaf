"""Tests for the public API surface: ``__all__`` of the package and of every public module."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from types import ModuleType

import pytest

import agenteval
from agenteval.errors import MissingDependencyError


def public_modules() -> list[str]:
    """Every importable module of the package whose dotted path has no private part."""
    names = []
    for info in pkgutil.walk_packages(agenteval.__path__, prefix="agenteval."):
        parts = info.name.split(".")
        # __main__ runs the command line when imported.
        if any(part.startswith("_") for part in parts):
            continue
        names.append(info.name)
    return sorted(names)


PUBLIC_MODULES = public_modules()


def import_public(module_name: str) -> ModuleType:
    """Import a public module; one that needs a missing optional dependency is skipped."""
    try:
        return importlib.import_module(module_name)
    except MissingDependencyError as exc:
        pytest.skip(str(exc))


def test_package_all_is_grouped_sorted_and_without_duplicates() -> None:
    source = (Path(agenteval.__file__)).read_text(encoding="utf-8")
    listing = source[source.index("__all__ = [") : source.index("]", source.index("__all__ = ["))]
    groups: list[list[str]] = []
    for line in listing.splitlines()[1:]:
        line = line.strip()
        if line.startswith("#"):
            groups.append([])
        elif line:
            groups[-1].append(line.strip('",'))

    assert [name for group in groups for name in group] == list(agenteval.__all__)
    assert [group for group in groups if group != sorted(group, key=lambda name: (name.startswith("_"), name))] == []
    assert len(agenteval.__all__) == len(set(agenteval.__all__))
    assert len(agenteval.__all__) <= 56, "the top level holds what a notebook user types; the rest goes in subpackages"


def test_every_name_in_package_all_exists() -> None:
    missing = [name for name in agenteval.__all__ if not hasattr(agenteval, name)]

    assert missing == []


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from agenteval import *", namespace)

    assert sorted(name for name in namespace if name != "__builtins__") == sorted(agenteval.__all__)


def test_core_public_names_are_exported() -> None:
    expected = {
        "Evaluator",
        "EvaluationReport",
        "SaveError",
        "EvalSet",
        "EvalCase",
        "Invocation",
        "Message",
        "Tool",
        "EvalMetric",
        "EvalSetResult",
        "EvalCaseResult",
        "EvalMetricResult",
        "EvalStatus",
        "InMemoryEvalSetManager",
        "LocalEvalSetManager",
        "InMemoryMetricManager",
        "LocalMetricManager",
        "InMemoryEvalResultManager",
        "LocalEvalResultManager",
        "default_registry",
        "Callbacks",
        "Turn",
        "AgentEvalError",
        "ConfigError",
        "ErrorType",
        "NotFoundError",
        "pass_at_k",
        "pass_hat_k",
        "criteria",
    }

    assert expected <= set(agenteval.__all__)


def test_every_exception_class_lives_in_errors_and_is_drawn_in_its_tree() -> None:
    from agenteval import errors

    defined_elsewhere = [
        f"{module_name}.{name}"
        for module_name in PUBLIC_MODULES
        for name, value in vars(import_public(module_name)).items()
        if not name.startswith("_")
        and isinstance(value, type)
        and issubclass(value, BaseException | Warning)
        and value.__module__.startswith("agenteval")
        and value.__module__ != "agenteval.errors"
    ]
    assert defined_elsewhere == []
    tree = errors.__doc__ or ""
    drawn = [name for name in errors.__all__ if isinstance(getattr(errors, name), type) and name not in tree]
    assert drawn == []


def test_modules_in_package_all_are_public_modules() -> None:
    modules = [name for name in agenteval.__all__ if isinstance(getattr(agenteval, name), ModuleType)]

    assert "criteria" in modules
    assert [name for name in modules if f"agenteval.{name}" not in PUBLIC_MODULES] == []


def test_version_is_a_string() -> None:
    assert isinstance(agenteval.__version__, str)
    assert agenteval.__version__


def test_there_are_public_modules() -> None:
    for name in ("agenteval.evaluation", "agenteval.analysis.report", "agenteval.cli", "agenteval.runner.function"):
        assert name in PUBLIC_MODULES
    assert "agenteval.__main__" not in PUBLIC_MODULES


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_module_all_names_exist(module_name: str) -> None:
    module = import_public(module_name)
    names = module.__all__  # tests/test_public_modules.py: every public module and package has one

    assert isinstance(names, list | tuple)
    assert all(isinstance(name, str) for name in names)
    assert len(names) == len(set(names)), f"duplicates in {module_name}.__all__"
    assert [name for name in names if not hasattr(module, name)] == []


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_package_reexports_are_the_module_objects(module_name: str) -> None:
    module = import_public(module_name)
    for name in getattr(module, "__all__", ()):
        if name in agenteval.__all__:
            assert getattr(agenteval, name) is getattr(module, name), f"agenteval.{name} differs from {module_name}"
