"""The criterion classes, in one namespace: ``ae.criteria.TextCriterion`` after ``import agenteval as ae``.

A metric's :class:`Criterion` configures its evaluator: ``tool_trajectory`` for
``tool_trajectory_avg_score``, ``final_response`` for ``final_response_avg_score``, ``llm_judge``
for the LLM judges. The common metrics have one-line constructors on
:class:`~agenteval.EvalMetric` (``EvalMetric.tool_trajectory()``, ``EvalMetric.final_response()``,
…); build a criterion from these classes for anything else, e.g. a tool-trajectory metric that
compares only the ``query`` argument of ``search`` calls::

    import agenteval as ae

    search_query = ae.criteria.ToolTrajectoryStrategy(
        name=ae.criteria.TextCriterion(match_strategy=ae.criteria.TextMatchStrategy.EXACT),
        arguments=ae.criteria.JSONCriterion(only_tree={"query": True}),
    )
    metric = ae.EvalMetric(
        metric_name="search_query",
        evaluator_name="tool_trajectory_avg_score",
        threshold=1.0,
        criterion=ae.criteria.Criterion(
            tool_trajectory=ae.criteria.ToolTrajectoryCriterion(tool_strategy={"search": search_query})
        ),
    )

:class:`RubricContent` (the text of a :class:`Rubric`) is here too, although it is defined with
the eval-set models.
"""

from agenteval.evalset.models import RubricContent
from agenteval.metric.criterion import (
    CategoryScore,
    Criterion,
    FinalResponseCriterion,
    GenerationConfig,
    JSONCriterion,
    JSONMatchStrategy,
    JudgeModelOptions,
    JudgeTemplateOptions,
    LengthCriterion,
    LLMCriterion,
    ResponseScorerOptions,
    RougeCriterion,
    RougeMeasure,
    RougeThreshold,
    Rubric,
    TemplateVariableBinding,
    TemplateVariableField,
    TemplateVariableScope,
    TemplateVariableSelector,
    TemplateVariableSource,
    TextCriterion,
    TextMatchStrategy,
    ToolTrajectoryCriterion,
    ToolTrajectoryStrategy,
    XMLCriterion,
    XMLMatchStrategy,
)

__all__ = [
    "CategoryScore",
    "Criterion",
    "FinalResponseCriterion",
    "GenerationConfig",
    "JSONCriterion",
    "JSONMatchStrategy",
    "JudgeModelOptions",
    "JudgeTemplateOptions",
    "LLMCriterion",
    "LengthCriterion",
    "ResponseScorerOptions",
    "RougeCriterion",
    "RougeMeasure",
    "RougeThreshold",
    "Rubric",
    "RubricContent",
    "TemplateVariableBinding",
    "TemplateVariableField",
    "TemplateVariableScope",
    "TemplateVariableSelector",
    "TemplateVariableSource",
    "TextCriterion",
    "TextMatchStrategy",
    "ToolTrajectoryCriterion",
    "ToolTrajectoryStrategy",
    "XMLCriterion",
    "XMLMatchStrategy",
]
