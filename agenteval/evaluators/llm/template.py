"""``llm_judge_template``: an LLM judge driven by a user-written prompt.

The metric's ``criterion.llmJudge.template`` holds the prompt (with ``{{placeholders}}`` bound by
``variableBindings``), the name of the response scorer that reads the judge's answer, and optionally
the names of a structured-output schema and of the samples and turns aggregators. All names are
looked up in an :class:`~agenteval.evaluators.llm.operators.OperatorRegistry`; register your own
operators there and pass the registry to :class:`TemplateJudgeEvaluator`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agenteval.errors import ConfigError, NotFoundError
from agenteval.evalset.message import Message
from agenteval.evalset.models import Invocation
from agenteval.evaluators.base import EvaluateResult, PerInvocationResult
from agenteval.evaluators.llm.base import LLMJudgeEvaluator
from agenteval.evaluators.llm.operators import (
    InvocationsAggregator,
    OperatorRegistry,
    ResponseScorer,
    SamplesAggregator,
    ScoreResult,
    StructuredOutputProvider,
)
from agenteval.evaluators.llm.scorers import categorical_schema, category_scores, default_operators, score_categorical
from agenteval.evaluators.llm.template_render import (
    build_template_messages,
    check_template,
    materialized_prompt,
    template_options,
)
from agenteval.llm.base import ChatResponse, StructuredOutput
from agenteval.metric.criterion import Criterion
from agenteval.metric.models import EvalMetric

__all__ = [
    "DEFAULT_INVOCATION_AGGREGATOR",
    "DEFAULT_SAMPLE_AGGREGATOR",
    "ResolvedOperators",
    "TemplateJudgeEvaluator",
]

DEFAULT_SAMPLE_AGGREGATOR = "majority_vote"
"""Samples aggregator used when ``template.sampleAggregatorName`` is empty."""
DEFAULT_INVOCATION_AGGREGATOR = "average"
"""Turns aggregator used when ``template.invocationAggregatorName`` is empty."""


@dataclass(frozen=True, slots=True)
class ResolvedOperators:
    """The operators a template metric names."""

    response_scorer: ResponseScorer
    """Scores one judge answer."""
    structured_output: StructuredOutputProvider | None
    """The answer's schema; ``None`` when the scorer has no default one and none is named."""
    samples_aggregator: SamplesAggregator
    """Picks a turn's result among its samples."""
    invocations_aggregator: InvocationsAggregator
    """Combines the turns."""


class TemplateJudgeEvaluator(LLMJudgeEvaluator):
    """The ``llm_judge_template`` evaluator.

    Per turn it renders the template prompt for that turn, asks the judge (``numSamples`` times),
    scores each answer with the named response scorer, aggregates the samples and then the turns
    with the named aggregators. Results store the rendered prompt in each turn's criterion.

    Args:
        operators: Where scorers, schemas and aggregators are looked up by name (default: a
            registry of the built-ins).
    """

    name = "llm_judge_template"
    description = "LLM template judge evaluator"

    def __init__(self, operators: OperatorRegistry | None = None) -> None:
        super().__init__()
        self.operators: OperatorRegistry = operators if operators is not None else default_operators()

    def resolve(self, metric: EvalMetric) -> ResolvedOperators:
        """Look up the operators the metric's template names.

        The schema is ``structuredOutputName`` if set, else the one registered under the scorer's name
        (if any).

        Raises:
            ConfigError: No template, an empty ``responseScorerName``, or a name that is not
                registered (the message lists the registered ones).
        """
        options = template_options(metric)
        if not options.response_scorer_name:
            raise ConfigError("template responseScorerName is empty")
        try:
            scorer = self.operators.response_scorer(options.response_scorer_name)
            samples = self.operators.samples_aggregator(options.sample_aggregator_name or DEFAULT_SAMPLE_AGGREGATOR)
            invocations = self.operators.invocations_aggregator(
                options.invocation_aggregator_name or DEFAULT_INVOCATION_AGGREGATOR
            )
            schema_name = options.structured_output_name
            if schema_name:
                schema: StructuredOutputProvider | None = self.operators.structured_output(schema_name)
            elif self.operators.has_structured_output(options.response_scorer_name):
                schema = self.operators.structured_output(options.response_scorer_name)
            else:
                schema = None
        except NotFoundError as exc:
            raise ConfigError(f"metric {metric.metric_name}: {exc}") from exc
        return ResolvedOperators(
            response_scorer=scorer,
            structured_output=schema,
            samples_aggregator=samples,
            invocations_aggregator=invocations,
        )

    def _check_operators(self, metric: EvalMetric) -> ResolvedOperators:
        if not template_options(metric).prompt:
            raise ConfigError("template prompt is empty")
        return self.resolve(metric)

    def check_metric(self, metric: EvalMetric) -> None:
        """Reject a metric that fails whatever the case, before any case runs.

        Runs the checks :meth:`evaluate` starts with (the prompt, the operator names, the judge
        settings) and those each turn's rendering and scoring would fail on for every turn: the
        bindings and placeholders (:func:`~agenteval.evaluators.llm.template_render.check_template`)
        and the categories of the built-in ``categorical`` scorer and schema.

        Raises:
            ConfigError: Naming what to fix.
        """
        operators = self._check_operators(metric)
        check_template(template_options(metric))
        if operators.response_scorer is score_categorical or operators.structured_output is categorical_schema:
            category_scores(metric)
        super().check_metric(metric)

    async def evaluate(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> EvaluateResult:
        """Judge every turn; the template and its operator names are checked before any judge call."""
        self._check_operators(metric)
        return await super().evaluate(actuals, expecteds, metric)

    def render_messages(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> list[Message]:
        """The judge messages for the last turn: one user message holding the rendered prompt."""
        return build_template_messages(actuals, expecteds, metric)

    async def construct_messages(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> list[Message]:
        """Render the template for the last of ``actuals`` (see :meth:`render_messages`)."""
        return self.render_messages(actuals, expecteds, metric)

    def structured_output(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> StructuredOutput | None:
        """The schema named by the template, or its scorer's default one, or ``None``."""
        provider = self.resolve(metric).structured_output
        return provider(metric) if provider is not None else None

    def score_response(self, response: ChatResponse, metric: EvalMetric) -> ScoreResult:
        """Score a judge answer with the template's ``responseScorerName``."""
        return self.resolve(metric).response_scorer(response, metric)

    def aggregate_samples(self, samples: Sequence[PerInvocationResult], metric: EvalMetric) -> PerInvocationResult:
        """Pick a turn's result with ``sampleAggregatorName`` (default ``majority_vote``)."""
        return self.resolve(metric).samples_aggregator(samples, metric)

    def aggregate_invocations(self, results: Sequence[PerInvocationResult], metric: EvalMetric) -> EvaluateResult:
        """Combine the turns with ``invocationAggregatorName`` (default ``average``)."""
        return self.resolve(metric).invocations_aggregator(results, metric)

    def materialize_criterion(
        self, metric: EvalMetric, actuals: Sequence[Invocation], expecteds: Sequence[Invocation]
    ) -> Criterion | None:
        """A copy of the metric's criterion whose template prompt is the one rendered for the last turn.

        One message gives its content; several give ``[role]`` blocks separated by blank lines.
        A metric without a template gets a plain copy.
        """
        if metric.criterion is None:
            return None
        criterion = metric.criterion.model_copy(deep=True)
        if criterion.llm_judge is None or criterion.llm_judge.template is None:
            return criterion
        messages = self.render_messages(actuals, expecteds, metric)
        criterion.llm_judge.template.prompt = materialized_prompt(messages)
        return criterion
