"""agenteval: evaluate LLM agents from Jupyter.

A Python port of the evaluation module of trpc-agent-go: eval sets of multi-turn cases, an
inference phase that runs the agent, an evaluate phase that scores what it did with metrics,
case aggregation, callbacks, concurrency, repeated runs and result stores — with results as
pandas DataFrames.

The top level holds what a notebook user types; the rest lives in the subpackages: store protocols
and file layout in ``agenteval.evalset``, ``agenteval.metric`` and ``agenteval.evalresult``, store
plumbing (locators, MySQL instances) in ``agenteval.storage``, evaluators in
``agenteval.evaluators``, chat models in ``agenteval.llm``, runners and simulated users in
``agenteval.runner``, the service in ``agenteval.service``, every exception in ``agenteval.errors``
and test doubles in ``agenteval.testing``.
"""

import sys as _sys

from agenteval import criteria
from agenteval._util import moved_modules as _moved_modules
from agenteval.aggregation import AggregationInput, AggregationResult, AllPassAggregator
from agenteval.analysis.compare import Comparison, compare
from agenteval.analysis.pairwise import pairwise
from agenteval.analysis.passk import pass_at_k, pass_hat_k
from agenteval.analysis.report import EvaluationReport
from agenteval.cache import Cache
from agenteval.context import EvalContext, current_context
from agenteval.criteria import Criterion
from agenteval.errors import (
    AgentEvalError,
    ConfigError,
    NoMetricsWarning,
    NotFoundError,
    SaveError,
    SkippedMetricWarning,
    UnknownFieldWarning,
)
from agenteval.evalresult import (
    ErrorType,
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultDetails,
    EvalSetResult,
    InMemoryEvalResultManager,
    LocalEvalResultManager,
    MySQLEvalResultManager,
)
from agenteval.evalresult.provenance import package_version
from agenteval.evalset import (
    ConversationScenario,
    EvalCase,
    EvalMode,
    EvalSet,
    InMemoryEvalSetManager,
    Invocation,
    LocalEvalSetManager,
    Message,
    MySQLEvalSetManager,
    SessionInput,
    Tool,
)
from agenteval.evaluation.evaluator import Evaluator
from agenteval.evaluators import EvaluateResult, PerInvocationResult, default_registry
from agenteval.metric import EvalMetric, InMemoryMetricManager, LocalMetricManager, MySQLMetricManager
from agenteval.runner import Runner, Turn, TurnRequest, TurnResult
from agenteval.service import Callbacks
from agenteval.service.ray_executor import RayExecutor
from agenteval.status import EvalStatus

__version__ = package_version()

__all__ = [
    # Evaluate, and look at the results
    "Comparison",
    "EvaluationReport",
    "Evaluator",
    "RayExecutor",
    "compare",
    "pairwise",
    "pass_at_k",
    "pass_hat_k",
    # Eval sets
    "ConversationScenario",
    "EvalCase",
    "EvalMode",
    "EvalSet",
    "Invocation",
    "Message",
    "SessionInput",
    "Tool",
    # Metrics, and evaluators of your own
    "Criterion",
    "EvalMetric",
    "EvalMetricResultDetails",
    "EvaluateResult",
    "PerInvocationResult",
    "criteria",
    "default_registry",
    # Results
    "ErrorType",
    "EvalCaseResult",
    "EvalMetricResult",
    "EvalSetResult",
    "EvalStatus",
    # Your agent
    "Runner",
    "Turn",
    "TurnRequest",
    "TurnResult",
    # Case aggregation
    "AggregationInput",
    "AggregationResult",
    "AllPassAggregator",
    # Callbacks and the values they pass
    "Callbacks",
    "EvalContext",
    "current_context",
    # Stores
    "Cache",
    "InMemoryEvalResultManager",
    "InMemoryEvalSetManager",
    "InMemoryMetricManager",
    "LocalEvalResultManager",
    "LocalEvalSetManager",
    "LocalMetricManager",
    "MySQLEvalResultManager",
    "MySQLEvalSetManager",
    "MySQLMetricManager",
    # Errors and warnings (all of them: agenteval.errors)
    "AgentEvalError",
    "ConfigError",
    "NoMetricsWarning",
    "NotFoundError",
    "SaveError",
    "SkippedMetricWarning",
    "UnknownFieldWarning",
    "__version__",
]


def __getattr__(name: str) -> object:
    # ``agenteval.plotting`` and the other modules that moved still resolve, with a warning naming their new home.
    return _moved_modules.moved_attribute(_sys.modules[__name__], name)


def _register_presenter() -> None:
    # The composition root: results are drawn by the notebook views, which depend on them.
    from agenteval._presentation import register_presenter
    from agenteval.notebook._presenter import NotebookPresenter

    register_presenter(NotebookPresenter())


_moved_modules.install(_sys.modules[__name__])
_register_presenter()
