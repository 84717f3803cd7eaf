"""Evaluation results: the data model, the multi-run summary types and the stores."""

from agenteval.evalresult.local import LocalEvalResultManager
from agenteval.evalresult.manager import EvalResultManager
from agenteval.evalresult.memory import InMemoryEvalResultManager
from agenteval.evalresult.models import (
    ErrorType,
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultDetails,
    EvalMetricResultPerInvocation,
    EvalSetResult,
    RubricScore,
    ScoreKind,
    ScoreValue,
)
from agenteval.evalresult.mysql import MySQLEvalResultManager
from agenteval.evalresult.summary import (
    EvalCaseResultSummary,
    EvalCaseRunSummary,
    EvalMetricRunSummary,
    EvalMetricSummary,
    EvalSetResultSummary,
    EvalSetRunSummary,
    EvalStatusCounts,
)

__all__ = [
    "ErrorType",
    "EvalCaseResult",
    "EvalCaseResultSummary",
    "EvalCaseRunSummary",
    "EvalMetricResult",
    "EvalMetricResultDetails",
    "EvalMetricResultPerInvocation",
    "EvalMetricRunSummary",
    "EvalMetricSummary",
    "EvalResultManager",
    "EvalSetResult",
    "EvalSetResultSummary",
    "EvalSetRunSummary",
    "EvalStatusCounts",
    "InMemoryEvalResultManager",
    "LocalEvalResultManager",
    "MySQLEvalResultManager",
    "RubricScore",
    "ScoreKind",
    "ScoreValue",
]
