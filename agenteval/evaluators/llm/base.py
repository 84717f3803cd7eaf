"""The judge pipeline shared by every ``llm_*`` evaluator.

For each turn (in order): build the judge messages from the turns so far, ask the judge
``num_samples`` times (concurrently when ``sampleParallelismEnabled``), score each reply, keep one
sample (majority vote by default), then combine the turns (average by default).
"""

from __future__ import annotations

import asyncio
import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from agenteval.errors import AgentEvalError, ConfigError, describe_exception, rewrap
from agenteval.evalresult.models import EvalMetricResultDetails
from agenteval.evalset.message import Message
from agenteval.evalset.models import Invocation
from agenteval.evaluators.base import UNIT_SCORE_RANGE, EvaluateResult, PerInvocationResult, ScoreRange, status_for
from agenteval.evaluators.llm.operators import (
    InvocationsAggregator,
    SamplesAggregator,
    ScoreResult,
    average_invocations,
    majority_vote,
)
from agenteval.llm.base import ChatModel, ChatRequest, ChatResponse, StructuredOutput
from agenteval.llm.judge import DEFAULT_GENERATION, active_judge, chat_model_for
from agenteval.metric.criterion import GenerationConfig, LLMCriterion
from agenteval.metric.models import EvalMetric

__all__ = ["JUDGE_SCORE", "LLMJudgeEvaluator"]

JUDGE_SCORE = "judge_score"
"""Measure name of a judged turn's score in its ``details.measures``."""


def _judge_criterion(metric: EvalMetric) -> LLMCriterion:
    if metric.criterion is None or metric.criterion.llm_judge is None:
        raise ConfigError(f"metric {metric.metric_name} has no criterion.llmJudge: an LLM judge needs one")
    return metric.criterion.llm_judge


class LLMJudgeEvaluator(ABC):
    """Base class of the LLM-judge evaluators.

    Subclasses build the judge's messages (:meth:`construct_messages`), optionally a JSON schema for
    its answer (:meth:`structured_output`), and score a reply (:meth:`score_response`). Sample and
    turn aggregation can be swapped per instance. Each turn's score, the judge's before any
    threshold, is also recorded as the measure :data:`JUDGE_SCORE` in its ``details.measures``.

    Args:
        samples_aggregator: Picks one result among a turn's samples (default: majority vote).
        invocations_aggregator: Combines the turns (default: average of evaluated turns).
    """

    name: ClassVar[str] = ""
    """Registry name of the evaluator."""
    description: ClassVar[str] = ""
    score_range: ClassVar[ScoreRange] = UNIT_SCORE_RANGE
    """Judges score from 0 to 1 (a custom scorer or aggregator must keep to it)."""

    def __init__(
        self,
        *,
        samples_aggregator: SamplesAggregator | None = None,
        invocations_aggregator: InvocationsAggregator | None = None,
    ) -> None:
        self._samples_aggregator = samples_aggregator or majority_vote
        self._invocations_aggregator = invocations_aggregator or average_invocations

    @abstractmethod
    async def construct_messages(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> list[Message]:
        """Build the judge messages for the last turn of ``actuals`` (earlier turns are context)."""

    def structured_output(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> StructuredOutput | None:
        """The JSON schema the judge must answer with, or ``None`` for free text."""
        return None

    @abstractmethod
    def score_response(self, response: ChatResponse, metric: EvalMetric) -> ScoreResult:
        """Score one judge reply; raise :class:`JudgeOutputError` when it is malformed."""

    def aggregate_samples(self, samples: Sequence[PerInvocationResult], metric: EvalMetric) -> PerInvocationResult:
        """Pick the turn's result among its samples."""
        return self._samples_aggregator(samples, metric)

    def aggregate_invocations(self, results: Sequence[PerInvocationResult], metric: EvalMetric) -> EvaluateResult:
        """Combine the turns' results."""
        return self._invocations_aggregator(results, metric)

    def judge_for(self, metric: EvalMetric) -> tuple[ChatModel, int, GenerationConfig]:
        """The judge model, samples per turn and sampling options for ``metric``.

        A judge override set on the evaluation wins over the metric's ``judgeModel``; without a model, its
        timeout and retry budget win over the ``judgeModel``'s.

        Raises:
            ConfigError: Neither is available, or the sample settings are invalid.
        """
        criterion = _judge_criterion(metric)
        override = active_judge()
        judge_model = criterion.judge_model
        generation = (judge_model.generation_config if judge_model else None) or DEFAULT_GENERATION
        generation = generation.model_copy(update={"stream": False})
        if override is not None and override.model is not None:
            return override.model, override.num_samples, generation
        if judge_model is None:
            raise ConfigError(
                f"metric {metric.metric_name} needs criterion.llmJudge.judgeModel, or pass judge=<ChatModel> to "
                "the Evaluator"
            )
        samples = judge_model.num_samples if judge_model.num_samples is not None else 1
        if samples <= 0:
            raise ConfigError(f"num samples must be greater than 0, got {samples}")
        if override is not None:
            judge_model = override.applied_to(judge_model)
        return chat_model_for(judge_model), samples, generation

    async def call_judge(
        self, metric: EvalMetric, messages: list[Message], structured_output: StructuredOutput | None = None
    ) -> ChatResponse:
        """Ask the metric's judge once."""
        model, _, generation = self.judge_for(metric)
        try:
            return await model.generate(
                ChatRequest(messages=messages, structured_output=structured_output, generation=generation)
            )
        except Exception as exc:
            raise AgentEvalError(f"judge response: {describe_exception(exc)}") from exc

    def check_metric(self, metric: EvalMetric) -> None:
        """Reject a metric this judge cannot run, by the checks :meth:`evaluate` starts with.

        Subclasses with more case-independent checks extend it (and call it).

        Raises:
            ConfigError: No ``criterion.llmJudge``; neither a judge override nor a ``judgeModel``; an
                invalid ``numSamples``; a ``judgeModel`` that names an unknown provider or is
                incomplete (e.g. no ``modelName``); a negative ``sampleParallelism``.
        """
        self._sampling(metric)

    def _sampling(self, metric: EvalMetric) -> tuple[int, int]:
        """Samples per turn and how many run at once."""
        criterion = _judge_criterion(metric)
        _, num_samples, _ = self.judge_for(metric)
        if criterion.sample_parallelism < 0:
            raise ConfigError("sample parallelism must be non-negative")
        return num_samples, _sample_parallelism(criterion, num_samples)

    async def evaluate(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> EvaluateResult:
        """Judge every turn and combine the results; each turn's score is also its :data:`JUDGE_SCORE` measure."""
        num_samples, parallelism = self._sampling(metric)
        if len(actuals) != len(expecteds):
            raise ConfigError(
                f"actual invocations ({len(actuals)}) and expected invocations ({len(expecteds)}) count mismatch"
            )
        results: list[PerInvocationResult] = []
        for turn in range(len(actuals)):
            try:
                chosen = await self._judge_turn(
                    actuals[: turn + 1], expecteds[: turn + 1], metric, num_samples, parallelism
                )
            except Exception as exc:
                if len(actuals) == 1:
                    raise
                # Name the turn so a failure in a long conversation can be found.
                raise rewrap(f"turn {turn + 1}", exc) from exc
            chosen.actual_invocation = actuals[turn]
            chosen.expected_invocation = expecteds[turn]
            if chosen.details is not None:
                chosen.details.measures[JUDGE_SCORE] = chosen.score
            results.append(chosen)
        return self.aggregate_invocations(results, metric)

    async def _judge_turn(
        self,
        turn_actuals: Sequence[Invocation],
        turn_expecteds: Sequence[Invocation],
        metric: EvalMetric,
        num_samples: int,
        parallelism: int,
    ) -> PerInvocationResult:
        """Judge the last turn of ``turn_actuals`` and pick one of its samples."""
        try:
            messages = await self.construct_messages(turn_actuals, turn_expecteds, metric)
        except Exception as exc:
            raise rewrap("construct messages", exc) from exc
        schema = self.structured_output(turn_actuals, turn_expecteds, metric)
        samples = await self._collect_samples(metric, messages, schema, num_samples, parallelism)
        return self.aggregate_samples(samples, metric)

    async def _collect_samples(
        self,
        metric: EvalMetric,
        messages: list[Message],
        schema: StructuredOutput | None,
        count: int,
        parallelism: int,
    ) -> list[PerInvocationResult]:
        if parallelism <= 1:
            return [await self._sample(metric, messages, schema) for _ in range(count)]
        gate = asyncio.Semaphore(parallelism)

        async def gated() -> PerInvocationResult:
            async with gate:
                return await self._sample(metric, messages, schema)

        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(gated()) for _ in range(count)]
        except BaseExceptionGroup as group_error:
            # The first sample to fail cancelled the others; surface its error as serial sampling would.
            first = group_error.exceptions[0]
            raise first from first.__cause__
        return [task.result() for task in tasks]

    async def _sample(
        self, metric: EvalMetric, messages: list[Message], schema: StructuredOutput | None
    ) -> PerInvocationResult:
        response = await self.call_judge(metric, messages, schema)
        try:
            scored = self.score_response(response, metric)
        except Exception as exc:
            raise rewrap("score based on response", exc) from exc
        return PerInvocationResult(
            score=scored.score,
            status=status_for(scored.score, metric.threshold),
            details=EvalMetricResultDetails(
                reason=scored.reason, score=scored.score, value=scored.value, rubric_scores=scored.rubric_scores
            ),
        )


def _sample_parallelism(criterion: LLMCriterion, num_samples: int) -> int:
    if not criterion.sample_parallelism_enabled or num_samples <= 1:
        return 1
    limit = criterion.sample_parallelism or (os.cpu_count() or 1)
    return min(limit, num_samples)
