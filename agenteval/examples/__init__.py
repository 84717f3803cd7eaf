"""Bundled example apps, used by ``agenteval demo`` and the notebooks: one package per example (:mod:`.math`)."""

__all__: list[str] = []
