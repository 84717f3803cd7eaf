"""Eval sets: the data model and the stores."""

from agenteval.evalset.local import LocalEvalSetManager
from agenteval.evalset.manager import EvalSetManager
from agenteval.evalset.memory import InMemoryEvalSetManager
from agenteval.evalset.message import Message, Role
from agenteval.evalset.models import (
    ArgumentsMatch,
    ConversationScenario,
    EvalCase,
    EvalCaseRubric,
    EvalMode,
    EvalSet,
    Invocation,
    LLMGenerator,
    MockTool,
    RubricContent,
    ScenarioDriver,
    SessionInput,
    Tool,
    ToolMock,
)
from agenteval.evalset.mysql import MySQLEvalSetManager
from agenteval.evalset.trace import ExecutionTrace, TraceSkill, TraceSnapshot, TraceStep, TraceTool

__all__ = [
    "ArgumentsMatch",
    "ConversationScenario",
    "EvalCase",
    "EvalCaseRubric",
    "EvalMode",
    "EvalSet",
    "EvalSetManager",
    "ExecutionTrace",
    "InMemoryEvalSetManager",
    "Invocation",
    "LLMGenerator",
    "LocalEvalSetManager",
    "Message",
    "MockTool",
    "MySQLEvalSetManager",
    "Role",
    "RubricContent",
    "ScenarioDriver",
    "SessionInput",
    "Tool",
    "ToolMock",
    "TraceSkill",
    "TraceSnapshot",
    "TraceStep",
    "TraceTool",
]
