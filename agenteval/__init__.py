"""agenteval: evaluate LLM agents from Jupyter.

A Python port of the evaluation module of trpc-agent-go: eval sets of multi-turn cases, an
inference phase that runs the agent, an evaluate phase that scores what it did with metrics,
case aggregation, callbacks, concurrency, repeated runs and result stores — with results as
pandas DataFrames.
"""

from agenteval import criteria
from agenteval.aggregation import AggregationInput, AggregationResult, AllPassAggregator, EvalCaseResultAggregator
from agenteval.compare import Comparison, compare
from agenteval.context import EvalContext, current_context
from agenteval.errors import (
    AgentEvalError,
    CallbackError,
    ConfigError,
    MissingDependencyError,
    NoMetricsWarning,
    NotFoundError,
    SaveError,
    SkippedMetricWarning,
    StorageError,
    UnknownFieldWarning,
)
from agenteval.evalresult import (
    ErrorType,
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultDetails,
    EvalMetricResultPerInvocation,
    EvalResultManager,
    EvalSetResult,
    EvalSetResultSummary,
    InMemoryEvalResultManager,
    LocalEvalResultManager,
    MySQLEvalResultManager,
    RubricScore,
    ScoreKind,
    ScoreValue,
)
from agenteval.evalresult.provenance import Provenance, package_version
from agenteval.evalset import (
    ConversationScenario,
    EvalCase,
    EvalCaseRubric,
    EvalMode,
    EvalSet,
    EvalSetManager,
    ExecutionTrace,
    InMemoryEvalSetManager,
    Invocation,
    LocalEvalSetManager,
    Message,
    MySQLEvalSetManager,
    SessionInput,
    Tool,
)
from agenteval.evaluation import Evaluator
from agenteval.evaluators.base import EvaluateResult, MetricEvaluator, PerInvocationResult
from agenteval.evaluators.registry import EvaluatorRegistry, default_registry
from agenteval.llm import ChatModel, ChatRequest, ChatResponse
from agenteval.metric import (
    Criterion,
    EvalMetric,
    InMemoryMetricManager,
    LocalMetricManager,
    MetricManager,
    MetricRegistry,
    MySQLMetricManager,
)
from agenteval.passk import pass_at_k, pass_hat_k
from agenteval.report import EvaluationReport
from agenteval.runner import (
    FunctionRunner,
    Runner,
    SimulatorDecision,
    Turn,
    TurnRequest,
    TurnResult,
    UserSimulator,
)
from agenteval.runner.llm_simulator import LLMUserSimulator
from agenteval.service import Callback, CallbackResult, Callbacks, LocalService
from agenteval.status import EvalStatus
from agenteval.storage import Locator, SuffixLocator, register_mysql_instance

__version__ = package_version()

__all__ = [
    "AgentEvalError",
    "AggregationInput",
    "AggregationResult",
    "AllPassAggregator",
    "Callback",
    "CallbackError",
    "CallbackResult",
    "Callbacks",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "Comparison",
    "ConfigError",
    "ConversationScenario",
    "Criterion",
    "ErrorType",
    "EvalCase",
    "EvalCaseResult",
    "EvalCaseResultAggregator",
    "EvalCaseRubric",
    "EvalContext",
    "EvalMetric",
    "EvalMetricResult",
    "EvalMetricResultDetails",
    "EvalMetricResultPerInvocation",
    "EvalMode",
    "EvalResultManager",
    "EvalSet",
    "EvalSetManager",
    "EvalSetResult",
    "EvalSetResultSummary",
    "EvalStatus",
    "EvaluateResult",
    "EvaluationReport",
    "Evaluator",
    "EvaluatorRegistry",
    "ExecutionTrace",
    "FunctionRunner",
    "InMemoryEvalResultManager",
    "InMemoryEvalSetManager",
    "InMemoryMetricManager",
    "Invocation",
    "LLMUserSimulator",
    "LocalEvalResultManager",
    "LocalEvalSetManager",
    "LocalMetricManager",
    "LocalService",
    "Locator",
    "Message",
    "MetricEvaluator",
    "MetricManager",
    "MetricRegistry",
    "MissingDependencyError",
    "MySQLEvalResultManager",
    "MySQLEvalSetManager",
    "MySQLMetricManager",
    "NoMetricsWarning",
    "NotFoundError",
    "PerInvocationResult",
    "Provenance",
    "RubricScore",
    "Runner",
    "SaveError",
    "ScoreKind",
    "ScoreValue",
    "SessionInput",
    "SimulatorDecision",
    "SkippedMetricWarning",
    "StorageError",
    "SuffixLocator",
    "Tool",
    "Turn",
    "TurnRequest",
    "TurnResult",
    "UnknownFieldWarning",
    "UserSimulator",
    "__version__",
    "compare",
    "criteria",
    "current_context",
    "default_registry",
    "pass_at_k",
    "pass_hat_k",
    "register_mysql_instance",
]


def _register_presenter() -> None:
    # The composition root: results are drawn by the notebook views, which depend on them.
    from agenteval._presentation import register_presenter
    from agenteval.notebook.presenter import NotebookPresenter

    register_presenter(NotebookPresenter())


_register_presenter()
