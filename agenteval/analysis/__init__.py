"""Analysis of a finished evaluation.

The :class:`EvaluationReport` and its tables, re-aggregation and what-if
thresholds, comparison of two reports (with statistics), pass@k, pairwise judging, best-of-N and diagnostics.

Everything here reads results; nothing runs an agent. The modules: :mod:`~agenteval.analysis.report` (the report),
:mod:`~agenteval.analysis.compare`, :mod:`~agenteval.analysis.statistics`, :mod:`~agenteval.analysis.passk`,
:mod:`~agenteval.analysis.pairwise`, :mod:`~agenteval.analysis.bundle` (a report in one file) and
:mod:`~agenteval.analysis.diagnostics` (why cases failed).
"""

from agenteval.analysis.compare import Comparison, compare
from agenteval.analysis.pairwise import PairwiseComparison, apairwise, pairwise
from agenteval.analysis.passk import pass_at_k, pass_hat_k
from agenteval.analysis.report import EvaluationReport

__all__ = [
    "Comparison",
    "EvaluationReport",
    "PairwiseComparison",
    "apairwise",
    "compare",
    "pairwise",
    "pass_at_k",
    "pass_hat_k",
]
