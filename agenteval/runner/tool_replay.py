"""Tool replay: answer an agent's tool calls with the results an earlier evaluation recorded.

Re-running an eval set with a new model or prompt changes what the model does and, with live tools,
what the tools answer. Replaying the tool results of an earlier report separates the two: a call
identical to one recorded in the same turn of the same case and run gets the recorded result, and
the tool is not called; any other call runs the real tool.

The recordings are the tool calls of each actual turn (``InferenceResult.inferences[i].tools``, with
their ``result``). A replayed call is recorded like any other, with one more JSON key,
``"replayed": true`` (see :func:`was_replayed`); calls that ran live are written exactly as before.
"""

from __future__ import annotations

import copy
import json
from collections import deque
from collections.abc import Sequence
from typing import Any

from agenteval.errors import ConfigError
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalset.models import REPLAYED_KEY, Tool

__all__ = ["REPLAYED_KEY", "ToolReplay", "TurnReplay", "was_replayed"]


def was_replayed(tool: Tool) -> bool:
    """Whether a recorded tool call was answered from a :class:`ToolReplay` instead of running the tool.

    The same as :attr:`Tool.was_replayed <agenteval.evalset.models.Tool.was_replayed>`.
    """
    return tool.was_replayed


class TurnReplay:
    """The recorded tool calls of one turn, used up as identical calls are answered.

    Args:
        recorded: The turn's recorded calls, in call order.
    """

    def __init__(self, recorded: Sequence[Tool]) -> None:
        # deque.popleft is atomic: a plain agent's tools may be called from several threads at once.
        self._results: dict[tuple[str, str], deque[Any]] = {}
        for tool in recorded:
            self._results.setdefault(_call_key(tool.name, tool.arguments), deque()).append(tool.result)

    def answer(self, call: Tool) -> Any:
        """Answer a call from the recordings: the next unused recorded result of an identical call.

        A call is identical when its tool name is the same and its arguments are equal as JSON (key
        order and ``1`` versus ``1.0`` do not matter). Identical calls use the recordings in order.
        A recording without a result (the tool raised, or the framework recorded none) answers
        nothing: that call runs live too.

        Args:
            call: The call, as recorded so far (name and JSON arguments). When answered, it is
                marked replayed (see :func:`was_replayed`).

        Returns:
            A copy of the recorded result, or ``None`` when the real tool must run.
        """
        queue = self._results.get(_call_key(call.name, call.arguments))
        if queue is None:
            return None
        try:
            recorded = queue.popleft()
        except IndexError:  # used up
            return None
        if recorded is None:
            return None
        # An unknown key of the tool call (Tool keeps them), written with the result.
        setattr(call, REPLAYED_KEY, True)
        return copy.deepcopy(recorded)


class ToolReplay:
    """Recorded tool results of an earlier evaluation, by case and run, to answer the same calls again.

    Build it with :meth:`of`. A case-run is looked up by eval case id and run id; when the recordings
    hold no such run of the case, the lowest recorded run of that case is used, and a case they do
    not hold at all runs its tools live. A recorded run whose inference failed holds no turns, so
    its tools run live. Within a turn (by its 0-based position among the case's actual turns), see
    :meth:`TurnReplay.answer`. The eval set's ``toolMock`` rules take precedence: a mocked tool is
    never replayed.

    Args:
        runs: Per case id, per run id, the recorded calls of each turn.
    """

    def __init__(self, runs: dict[str, dict[int, list[list[Tool]]]]) -> None:
        self._runs = runs

    @classmethod
    def of(cls, inference_results: Sequence[Sequence[InferenceResult]]) -> ToolReplay:
        """The recordings of an earlier evaluation's inference results.

        Args:
            inference_results: One list of results per run, run 1 first, as
                :attr:`agenteval.EvaluationReport.inference_results` holds them.

        Returns:
            The replay.

        Raises:
            ConfigError: ``inference_results`` is not a list of lists of ``InferenceResult``.
        """
        if isinstance(inference_results, str | bytes) or not isinstance(inference_results, Sequence):
            raise ConfigError(
                f"ToolReplay.of takes a report's inference_results (one list of InferenceResult per run), got "
                f"{type(inference_results).__name__}: pass ToolReplay.of(report.inference_results)"
            )
        runs: dict[str, dict[int, list[list[Tool]]]] = {}
        for run_id, results in enumerate(inference_results, start=1):
            if not isinstance(results, Sequence):
                raise ConfigError(
                    f"ToolReplay.of: inference_results[{run_id - 1}] is a {type(results).__name__}, not the list of"
                    " one run's InferenceResult: pass ToolReplay.of(report.inference_results)"
                )
            for index, result in enumerate(results):
                if not isinstance(result, InferenceResult):
                    raise ConfigError(
                        f"ToolReplay.of: inference_results[{run_id - 1}][{index}] is a {type(result).__name__}, not an"
                        " InferenceResult: pass ToolReplay.of(report.inference_results)"
                    )
                turns = [list(turn.tools) for turn in result.inferences]
                runs.setdefault(result.eval_case_id, {}).setdefault(run_id, turns)
        return cls(runs)

    def for_case(self, eval_case_id: str, run_id: int) -> list[TurnReplay]:
        """The replay of each turn of one run of a case, unused; empty when the case was not recorded.

        Args:
            eval_case_id: The case.
            run_id: The run (1-based); a run not recorded for the case falls back to its lowest one.
        """
        runs = self._runs.get(eval_case_id)
        if not runs:
            return []
        turns = runs.get(run_id)
        if turns is None:
            turns = runs[min(runs)]
        return [TurnReplay(recorded) for recorded in turns]

    def __repr__(self) -> str:
        return f"ToolReplay({len(self._runs)} cases)"


def _call_key(name: str, arguments: Any) -> tuple[str, str]:
    return name, json.dumps(_normalized(arguments), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _normalized(value: Any) -> Any:
    """``value`` with integral floats as ints, so that JSON-equal arguments give the same key."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _normalized(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_normalized(item) for item in value]
    return value
