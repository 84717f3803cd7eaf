"""The agent under test (:class:`Runner`) and simulated users (:class:`UserSimulator`)."""

from agenteval.runner.base import Runner, TurnRequest, TurnResult
from agenteval.runner.function import AgentFunction, FunctionRunner, Turn, as_runner
from agenteval.runner.simulation import SimulatedConversation, SimulationStart, SimulatorDecision, UserSimulator

__all__ = [
    "AgentFunction",
    "FunctionRunner",
    "Runner",
    "SimulatedConversation",
    "SimulationStart",
    "SimulatorDecision",
    "Turn",
    "TurnRequest",
    "TurnResult",
    "UserSimulator",
    "as_runner",
]
