"""Tests for the public API surface: ``__all__`` of the package and of every public module."""

from __future__ import annotations

import importlib
import pkgutil
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


def test_package_all_is_sorted_without_duplicates() -> None:
    names = agenteval.__all__
    misplaced = [
        (index, name, wanted)
        for index, (name, wanted) in enumerate(zip(names, sorted(names), strict=True))
        if name != wanted
    ]

    assert misplaced == []
    assert len(names) == len(set(names))


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
        "ScoreValue",
        "InMemoryEvalSetManager",
        "LocalEvalSetManager",
        "InMemoryMetricManager",
        "LocalMetricManager",
        "InMemoryEvalResultManager",
        "LocalEvalResultManager",
        "EvaluatorRegistry",
        "default_registry",
        "LocalService",
        "Callbacks",
        "Callback",
        "FunctionRunner",
        "Turn",
        "AgentEvalError",
        "ConfigError",
        "ErrorType",
        "NotFoundError",
        "StorageError",
        "pass_at_k",
        "pass_hat_k",
        "criteria",
    }

    assert expected <= set(agenteval.__all__)


def test_modules_in_package_all_are_public_modules() -> None:
    modules = [name for name in agenteval.__all__ if isinstance(getattr(agenteval, name), ModuleType)]

    assert "criteria" in modules
    assert [name for name in modules if f"agenteval.{name}" not in PUBLIC_MODULES] == []


def test_version_is_a_string() -> None:
    assert isinstance(agenteval.__version__, str)
    assert agenteval.__version__


def test_there_are_public_modules() -> None:
    for name in ("agenteval.evaluation", "agenteval.report", "agenteval.cli", "agenteval.runner.function"):
        assert name in PUBLIC_MODULES
    assert "agenteval.__main__" not in PUBLIC_MODULES


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_module_all_names_exist(module_name: str) -> None:
    module = import_public(module_name)
    names = getattr(module, "__all__", None)
    if names is None:
        assert module.__file__ is not None
        assert module.__file__.endswith("__init__.py"), f"{module_name} has no __all__"
        return

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
