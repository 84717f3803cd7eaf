"""Running an evaluation.

The :class:`Evaluator` facade, its options, the record of a run in progress, the cache and
resume bookkeeping around it, and replaying a bundled report.

:mod:`~agenteval.evaluation.evaluator` (the facade), :mod:`~agenteval.evaluation.options` (every option, declared
once), :mod:`~agenteval.evaluation.run` (:class:`EvaluationRun`, an evaluation started in the background) and
:mod:`~agenteval.evaluation.replay` (a bundle run again offline).
"""

from agenteval.evaluation.evaluator import Evaluator
from agenteval.evaluation.options import DEFAULT_PARALLELISM, EvaluationOptions
from agenteval.evaluation.run import EvaluationRun

__all__ = ["DEFAULT_PARALLELISM", "EvaluationOptions", "EvaluationRun", "Evaluator"]
