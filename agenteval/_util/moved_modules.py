"""Old import paths of modules that moved to a new home keep working, with a warning that names the new one.

``import agenteval.plotting`` gives the very module object ``agenteval.notebook.plotting``, so classes keep one
identity (``isinstance`` checks, pickles, cache keys) whichever path loaded them.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Final

from agenteval.errors import warn_user

__all__ = ["MOVED", "import_moved", "install", "moved_attribute", "new_home"]

MOVED: Final = {
    "agenteval.bundle": "agenteval.analysis.bundle",
    "agenteval.cassettes": "agenteval.cache.cassettes",
    "agenteval.compare": "agenteval.analysis.compare",
    "agenteval.diagnostics": "agenteval.analysis.diagnostics",
    "agenteval.evaluation_run": "agenteval.evaluation.run",
    "agenteval.evaluators.criteria": "agenteval.evaluators.matching",
    "agenteval.pairwise": "agenteval.analysis.pairwise",
    "agenteval.passk": "agenteval.analysis.passk",
    "agenteval.plotting": "agenteval.notebook.plotting",
    "agenteval.ray_executor": "agenteval.service.ray_executor",
    "agenteval.replay": "agenteval.evaluation.replay",
    "agenteval.report": "agenteval.analysis.report",
    "agenteval.statistics": "agenteval.analysis.statistics",
}
"""Old module path → where the module lives now; a moved package's submodules follow it."""


def new_home(name: str) -> str | None:
    """Where the module once imported as ``name`` lives now, or ``None`` if it never moved."""
    for old, new in MOVED.items():
        if name == old or name.startswith(old + "."):
            return new + name[len(old) :]
    return None


def moved_attribute(package: ModuleType, name: str) -> ModuleType:
    """``package.<name>`` for a module that moved: imported, warned about, and kept as the attribute.

    Raises:
        AttributeError: ``name`` is no module that moved.
    """
    if new_home(f"{package.__name__}.{name}") is None:
        raise AttributeError(f"module {package.__name__!r} has no attribute {name!r}")
    module = import_moved(f"{package.__name__}.{name}")
    # Kept, so that ``from agenteval import plotting`` (which looks the name up twice) warns once.
    setattr(package, name, module)
    return module


def import_moved(name: str) -> ModuleType:
    """Import a module by its old path, warning once per path that it moved."""
    new = new_home(name)
    if new is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    warn_user(
        f"{name} moved to {new}; import it from there (the old path will go in a later version)", DeprecationWarning
    )
    return importlib.import_module(new)


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds old paths that no file answers any more, and loads them as the module at the new path."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if new_home(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        # The module at the new path itself, so it has one identity; its own spec is kept to be given back.
        module = import_moved(spec.name)
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module was imported at its new path.

        The import system gave it the old path's spec; it gets its own back (``importlib.reload`` reads it).
        """
        own = module.__spec__.loader_state if module.__spec__ is not None else None
        if own is not None:
            module.__spec__ = own


_FINDER: Final = _MovedModuleFinder()


class _Package(ModuleType):
    """The ``agenteval`` package: a module imported at an old path never replaces one of its names.

    Importing a submodule sets it as an attribute of its package, so ``import agenteval.compare`` would turn
    ``ae.compare``, the function, into the module.
    """

    def __setattr__(self, name: str, value: object) -> None:
        held = self.__dict__.get(name)
        if isinstance(value, ModuleType) and held is not None and not isinstance(held, ModuleType):
            return
        super().__setattr__(name, value)


def install(package: ModuleType) -> None:
    """Let the old paths be imported (once per process).

    The finder goes first: a moved package's directory would otherwise answer for its submodules under the old
    name, and the same file would load twice as two modules.
    """
    package.__class__ = _Package
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
