"""Read other evaluation tools' case files into an :class:`~agenteval.EvalSet`, one module per tool.

- :mod:`agenteval.importers.adk`: Google ADK eval sets (``*.evalset.json``) and test files
  (``*.test.json``) (``pip install 'agenteval[adk]'``)
- :mod:`agenteval.importers.pydantic_evals`: pydantic-evals datasets (YAML or JSON), with the metrics
  their evaluators map to (``pip install 'agenteval[pydantic-evals]'``)

Importing this package imports no other tool; each module imports its tool when it is imported. The package
itself exports no names: import the module you need.
"""

__all__: list[str] = []
