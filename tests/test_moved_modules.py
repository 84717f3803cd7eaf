"""Modules that moved to a new home still import from their old paths, as the same module, with a warning."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

import agenteval as ae
from agenteval._util.moved_modules import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_gives_the_module_at_its_new_home_and_says_where(old: str) -> None:
    sys.modules.pop(old, None)

    with pytest.warns(DeprecationWarning, match=rf"{old} moved to {MOVED[old]}; import it from there"):
        module = importlib.import_module(old)

    assert module is importlib.import_module(MOVED[old])


def test_names_imported_from_an_old_path_are_the_same_objects() -> None:
    sys.modules.pop("agenteval.report", None)
    sys.modules.pop("agenteval.evaluators.criteria.jsonmatch", None)

    with pytest.warns(DeprecationWarning):
        from agenteval.report import EvaluationReport  # type: ignore[import-not-found]
    with pytest.warns(DeprecationWarning, match="agenteval.evaluators.matching.jsonmatch"):
        from agenteval.evaluators.criteria.jsonmatch import match_json  # type: ignore[import-not-found]

    from agenteval.evaluators.matching.jsonmatch import match_json as moved_match_json

    assert EvaluationReport is ae.EvaluationReport
    assert match_json is moved_match_json


def test_the_warning_points_at_the_line_that_imported_the_old_path() -> None:
    sys.modules.pop("agenteval.statistics", None)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import agenteval.statistics  # type: ignore[import-not-found]  # noqa: F401

    assert [warning.filename for warning in caught] == [__file__]


def test_an_old_module_is_an_attribute_of_the_package_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(ae, "plotting", raising=False)

    with pytest.warns(DeprecationWarning, match="agenteval.plotting moved to agenteval.notebook.plotting"):
        plotting = ae.plotting

    assert plotting is importlib.import_module("agenteval.notebook.plotting")


def test_a_name_that_never_existed_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="module 'agenteval' has no attribute 'nothing_here'"):
        ae.nothing_here  # noqa: B018
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("agenteval.nothing_here")


def test_an_old_path_works_in_a_fresh_process_before_anything_else_is_imported() -> None:
    code = "from agenteval.plotting import plot_comparison; print(plot_comparison.__module__)"
    done = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )

    assert done.stdout.strip() == "agenteval.notebook.plotting"


@pytest.mark.parametrize("name", ["compare", "pairwise"])
def test_importing_an_old_module_path_leaves_the_function_of_the_same_name(name: str) -> None:
    function = getattr(ae, name)
    sys.modules.pop(f"agenteval.{name}", None)

    with pytest.warns(DeprecationWarning):
        importlib.import_module(f"agenteval.{name}")

    assert getattr(ae, name) is function
    assert callable(function)


def test_importing_an_old_path_leaves_the_module_its_own_spec() -> None:
    sys.modules.pop("agenteval.passk", None)

    with pytest.warns(DeprecationWarning):
        importlib.import_module("agenteval.passk")
    module = importlib.import_module("agenteval.analysis.passk")

    # importlib.reload reads the spec: with the old path's, it would run nothing.
    assert module.__spec__ is not None and module.__spec__.name == "agenteval.analysis.passk"
    assert module.__spec__.origin == module.__file__


@pytest.mark.parametrize("code", ["ae.plotting", "from agenteval import plotting"])
def test_an_old_module_as_an_attribute_warns_once_at_the_users_line(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(ae, "plotting", raising=False)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(code, __file__, "exec"), {"ae": ae})

    assert [(warning.category, warning.filename) for warning in caught] == [(DeprecationWarning, __file__)]


def test_a_subpackage_gives_its_moved_module_as_an_attribute_too(monkeypatch: pytest.MonkeyPatch) -> None:
    import agenteval.evaluators as evaluators

    monkeypatch.delattr(evaluators, "criteria", raising=False)

    with pytest.warns(DeprecationWarning, match="agenteval.evaluators.criteria moved to agenteval.evaluators.matching"):
        criteria = evaluators.criteria

    assert criteria is importlib.import_module("agenteval.evaluators.matching")
