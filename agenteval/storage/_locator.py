"""Where the local stores keep their files."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

__all__ = ["Locator", "SuffixLocator"]


@runtime_checkable
class Locator(Protocol):
    """Maps (app, id) to a file path, and lists the ids an app has."""

    def build(self, base_dir: Path, app_name: str, item_id: str) -> Path:
        """Return the file that holds ``item_id`` of ``app_name``."""
        ...

    def list(self, base_dir: Path, app_name: str) -> list[str]:
        """Return the ids stored for ``app_name``, in a stable order (``[]`` when none)."""
        ...


class SuffixLocator:
    """The reference layout: ``<base>/<app>/<id><suffix>``, listed in file-name order.

    Args:
        suffix: File-name suffix, e.g. ``".evalset.json"``.
    """

    def __init__(self, suffix: str) -> None:
        self.suffix = suffix

    def build(self, base_dir: Path, app_name: str, item_id: str) -> Path:
        """Return ``<base_dir>/<app_name>/<item_id><suffix>``."""
        return base_dir / app_name / f"{item_id}{self.suffix}"

    def list(self, base_dir: Path, app_name: str) -> list[str]:
        """Return the ids of the regular files in ``<base_dir>/<app_name>`` ending in the suffix.

        They come in the order of their file names, suffix included, as Go's ``os.ReadDir`` gives
        them: with ``.evalset.json``, ``run-2``, ``run.b``, ``run``, ``run_1``.
        """
        directory = base_dir / app_name
        if not directory.is_dir():
            return []
        names = sorted(
            entry.name for entry in directory.iterdir() if entry.name.endswith(self.suffix) and entry.is_file()
        )
        return [name.removesuffix(self.suffix) for name in names]

    def __repr__(self) -> str:
        return f"SuffixLocator({self.suffix!r})"
