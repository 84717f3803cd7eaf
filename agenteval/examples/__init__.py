"""Bundled example apps, used by ``agenteval demo`` and the notebooks."""
