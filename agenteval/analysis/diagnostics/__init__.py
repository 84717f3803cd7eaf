"""Why cases fail and whether a result is noise: flaky cases across runs, a failure taxonomy, trajectory alignment.

The package itself exports no names: import :mod:`~agenteval.analysis.diagnostics.flakiness`,
:mod:`~agenteval.analysis.diagnostics.failures` or :mod:`~agenteval.analysis.diagnostics.alignment`.
"""

__all__: list[str] = []
