"""The rubric judges: each rubric item of a metric is scored 0 or 1 by an LLM, the turn scores their mean.

``llm_rubric_response`` judges the final answer on its own, ``llm_rubric_critic`` against a golden
answer, ``llm_rubric_reference_critic`` against a reference used as a quality anchor, and
``llm_rubric_knowledge_recall`` judges the knowledge the agent retrieved. All ask for a strict
``{"rubricScores": [{id, score, reason}]}`` JSON answer and look at the current turn only.
"""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import Sequence
from string import Template
from typing import ClassVar

from agenteval.errors import AgentEvalError, ConfigError, rewrap
from agenteval.evalset.message import Message
from agenteval.evalset.models import Invocation
from agenteval.evaluators.llm.base import LLMJudgeEvaluator
from agenteval.evaluators.llm.context_text import NO_KNOWLEDGE_RESULTS, knowledge_search_results, message_text
from agenteval.evaluators.llm.operators import ScoreResult
from agenteval.evaluators.llm.rubrics import (
    expected_rubric_ids,
    render_rubrics,
    rubric_scores_schema,
    score_rubric_response,
    validate_rubric_ids,
    visible_rubrics,
)
from agenteval.llm.base import ChatResponse, StructuredOutput
from agenteval.metric.models import EvalMetric

__all__ = [
    "RubricCriticEvaluator",
    "RubricJudgeEvaluator",
    "RubricKnowledgeRecallEvaluator",
    "RubricReferenceCriticEvaluator",
    "RubricResponseEvaluator",
]

_ANSWER_FORMAT = """\
# Answer format

Reply with a single JSON object and nothing else:

{
  "rubricScores": [
    {
      "id": "<the rubric item's id, exactly as given in <rubric>>",
      "score": <1 or 0>,
      "reason": "<the decisive evidence, labelled with its source ($sources), followed by your judgment>"
    }
  ]
}

Rules for the answer:
- Give exactly one rubricScores entry per rubric item, in the order of <rubric>, with the item's id copied \
exactly. Do not add, drop, merge, split, rename or translate ids.
- score is the number 1 or 0 as defined above. Neither value is a default: decide each item on its evidence.
- reason is one short note holding both the evidence and the judgment$reason_extra. Do not add separate \
fields for the rubric text, evidence or verdict.
- Write plain JSON: keys and strings in double quotes, quotes and line breaks inside strings escaped, \
no Markdown, comments, trailing commas, summaries or extra keys.
"""

_USER_PROMPT = """\
<user_prompt>
<main_prompt>
$user_prompt
</main_prompt>
</user_prompt>
"""

_RESPONSE_PROMPT = Template(
    """\
# Task

You score an AI agent's final answer against a rubric. You get the user's request (<user_prompt>), the \
agent's reply (<response>, holding <final_answer>) and the rubric (<rubric>, one "<id>: <item>" line per \
item). For every rubric item, decide whether the final answer satisfies it. Score only the listed items \
and never invent new ones.

# Scores

1: the final answer satisfies the item, or the item's condition clearly does not apply here.
0: the item applies and the final answer does not satisfy it, or whether it does cannot be established \
beyond doubt from <user_prompt> and <final_answer>.

# Principles

1. Judge the content of the final answer only, not the tools used, intermediate steps or reasoning.
2. The only evidence is the text of <user_prompt> (what the user asked and supplied) and of \
<final_answer>. Do not fill gaps with outside knowledge, common sense or guesses.
3. Meaning counts, wording does not: accept paraphrases, other formatting and equivalent ways of writing \
a number; small rounding differences are fine when they do not change the conclusion.
4. A conditional item ("if ..., then ...") may get 1 as not applicable only when <user_prompt> and \
<final_answer> make clear that its condition does not hold. When that is unclear, the item applies \
(usually score 0).

"""
    + _ANSWER_FORMAT.replace("$sources", "User: or Answer:").replace(
        "$reason_extra", "; for a not-applicable item, cite what makes it not applicable"
    )
    + "\n# Input\n\n"
    + _USER_PROMPT
    + """
<response>
  <final_answer>
  $final_answer
  </final_answer>
</response>

<rubric>
$rubrics</rubric>

# Your answer
"""
)

_CRITIC_RULES = """\
# Deciding an item

Work through each rubric item on its own:
1. State to yourself what exactly the item demands.
2. Find what the $anchor_name and, where needed, the user request say about it.
3. Find the matching content in the ACTUAL OUTPUT.
4. Score 0 if a material defect remains, otherwise 1.

A defect is material when a reasonable grader would conclude the item is not really satisfied, for \
example: required information is missing; an entity, number, unit, condition or conclusion is wrong; the \
output contradicts the $anchor_name$contradicts_extra; the content is weaker$weaker_extra or less complete \
where that matters for this item;$specificity_extra the output asks for clarification, refuses or deflects \
although the $anchor_name shows the task can be done; or satisfaction cannot be verified from the allowed \
evidence.

Further rules:
- The only evidence is <user_prompt>, <final_answer> and <reference_answer>. Tool traces, hidden \
reasoning, outside facts and guesses are not evidence.
- Judge one item at a time; a flaw that belongs to another item does not fail this one.
- Do not nitpick or invent requirements. Style, tone, length, formatting or ordering alone never fail an \
item, nor does extra detail unless it contradicts, weakens or obscures what this item needs.
- A conditional item may get 1 as not applicable only when <user_prompt> and <reference_answer> make \
clear that its condition does not hold; when in doubt, the item applies.

"""

_CRITIC_PROMPT = Template(
    """\
# Role

You are llm_rubric_critic and you carry out this metric's scoring; you are not advising the user. For \
each rubric item, decide whether the ACTUAL OUTPUT (<final_answer>) satisfies it, judged against the \
GOLDEN ANSWER (<reference_answer>) and the USER REQUEST (<user_prompt>). Score only the listed items.

# Stance

The GOLDEN ANSWER is the authoritative target and the single source of truth for what the answer must \
contain: never correct, override or soften it with your own knowledge. Start from what it requires for the \
item, then check the ACTUAL OUTPUT against that. Paraphrases, reordering, concise wording and harmless \
formatting differences are fine when the meaning is preserved; literal wording need not match, material \
meaning must. Score 1 only when the ACTUAL OUTPUT materially satisfies the item; score 0 when a material \
defect remains.

"""
    + _CRITIC_RULES.replace("$anchor_name", "GOLDEN ANSWER")
    .replace("$contradicts_extra", "")
    .replace("$weaker_extra", "")
    .replace("$specificity_extra", "")
    + _ANSWER_FORMAT.replace("$sources", "Golden:, Actual:, User:").replace(
        "$reason_extra", "; when the score is 0, name the concrete defect or what is missing"
    )
    + "\n# Input\n\n"
    + _USER_PROMPT
    + """
<final_answer>
$final_answer
</final_answer>

<reference_answer>
$reference_answer
</reference_answer>

<rubric>
$rubrics</rubric>

# Your answer
"""
)

_REFERENCE_CRITIC_PROMPT = Template(
    """\
# Role

You are llm_rubric_reference_critic and you carry out this metric's scoring; you are not advising the \
user. For each rubric item, decide whether the ACTUAL OUTPUT (<final_answer>) satisfies it, judged against \
the REFERENCE ANSWER (<reference_answer>) and the USER REQUEST (<user_prompt>). Score only the listed items.

# Stance

The REFERENCE ANSWER is a quality anchor, not an exact-match target. Use it to see how grounded, specific, \
complete and faithful a good answer is. Do not require its wording, sentence structure or a one-to-one \
match, but do require the ACTUAL OUTPUT to keep the same decisive facts, constraints and useful grounded \
detail, as far as the USER REQUEST supports them. Paraphrases, reordering, concise wording and harmless \
formatting differences are fine when the grounded meaning and level of useful detail are preserved. Score 1 \
only when the ACTUAL OUTPUT materially satisfies the item; score 0 when a material defect remains.

"""
    + _CRITIC_RULES.replace("$anchor_name", "REFERENCE ANSWER")
    .replace("$contradicts_extra", " or the user request")
    .replace("$weaker_extra", ", more generic")
    .replace("$specificity_extra", " the output adds specifics that cannot be verified from the allowed evidence;")
    + _ANSWER_FORMAT.replace("$sources", "Reference:, Actual:, User:").replace(
        "$reason_extra", "; when the score is 0, name the concrete defect or what is missing or unverifiable"
    )
    + "\n# Input\n\n"
    + _USER_PROMPT
    + """
<reference_answer>
$reference_answer
</reference_answer>

<response>
  <final_answer>
  $final_answer
  </final_answer>
</response>

<rubric>
$rubrics</rubric>

# Your answer
"""
)

_KNOWLEDGE_RECALL_PROMPT = Template(
    """\
# Task

You judge what an AI agent retrieved from its knowledge base. You get the user's question \
(<user_prompt>), the retrieved documents (<retrieved_knowledge>) and a rubric (<rubric>, one "<id>: <item>" \
line per item). For every rubric item, decide whether the retrieved knowledge is relevant to the question \
and sufficient to support that item. Score only the listed items and never invent new ones.

# Scores

1: the retrieved knowledge directly supports the key information the item needs, or the item's condition \
clearly does not apply to this question.
0: the item applies but the retrieved knowledge is missing, insufficient, only loosely on topic or \
irrelevant, so it cannot support the item.

# Principles

1. Only <retrieved_knowledge> is trusted evidence. Never use a final answer, model reasoning, outside \
knowledge or guesses to fill gaps.
2. Relevance comes first: knowledge that is correct but only on the same topic, or general background \
that does not give what the item needs, scores 0.
3. Sufficiency test: picture someone who sees only <retrieved_knowledge>. If they could meet the item (give \
its key conclusion or elements) from it alone, score 1; if key entities, steps, numbers, conditions or \
definitions are missing, score 0.
4. Quote evidence verbatim (shortened if needed, meaning unchanged) or paraphrase so closely it can be \
found in the documents. Cite document ids, titles or sections when the documents have them; otherwise \
quote enough text to locate the source.
5. A conditional item may get 1 as not applicable only when <user_prompt> makes clear that its condition \
does not hold, and the reason must then say which part of <user_prompt> shows it. When that is unclear, the \
item applies.

"""
    + _ANSWER_FORMAT.replace("$sources", "e.g. Doc 2:").replace(
        "$reason_extra",
        "; say what key information is missing when the score is 0, and cite <user_prompt> for a not-applicable item",
    )
    + "\n# Input\n\n"
    + _USER_PROMPT
    + """
<retrieved_knowledge>
$retrieved_knowledge
</retrieved_knowledge>

<rubric>
$rubrics</rubric>

# Your answer
"""
)


class RubricJudgeEvaluator(LLMJudgeEvaluator):
    """Base of the rubric judges: rubric checks, the rubric-scores schema and its scorer.

    Subclasses set :attr:`schema_name` and :attr:`schema_description` and write the prompt.
    """

    schema_name: ClassVar[str] = ""
    """Name of the structured-output schema sent to the judge."""
    schema_description: ClassVar[str] = ""
    """Description of the structured-output schema."""

    async def construct_messages(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> list[Message]:
        """One user message about the current turn, listing the metric's rubrics."""
        if not actuals:
            raise ConfigError("actuals is empty")
        if metric.criterion is None or metric.criterion.llm_judge is None:
            raise ConfigError("llm judge criterion is required")
        rubrics = visible_rubrics(metric)
        if not rubrics:
            raise ConfigError("llm judge rubrics are required")
        return [Message.user(self.prompt(actuals, expecteds, render_rubrics(rubrics)))]

    @abstractmethod
    def prompt(self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], rubrics: str) -> str:
        """The judge prompt for the last turn, with the rendered rubric lines."""

    def structured_output(
        self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], metric: EvalMetric
    ) -> StructuredOutput:
        """The strict rubric-scores schema: one item per rubric id, scores 0 or 1."""
        schema = rubric_scores_schema(self.schema_name, validate_rubric_ids(metric))
        return dataclasses.replace(schema, description=self.schema_description)

    def score_response(self, response: ChatResponse, metric: EvalMetric) -> ScoreResult:
        """Mean of the rubric scores; every configured rubric must be scored exactly once."""
        return score_rubric_response(response, expected_rubric_ids(metric))


class RubricResponseEvaluator(RubricJudgeEvaluator):
    """Scores the final answer against each rubric item (``llm_rubric_response``)."""

    name = "llm_rubric_response"
    description = "LLM rubric response evaluator"
    schema_name = "rubric_response_scores"
    schema_description = "Per-rubric binary scores and reasons for rubric response evaluation."

    def prompt(self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], rubrics: str) -> str:
        """Prompt with the user prompt, the final answer and the rubrics."""
        actual = actuals[-1]
        return _RESPONSE_PROMPT.substitute(
            user_prompt=message_text(actual.user_content),
            final_answer=message_text(actual.final_response),
            rubrics=rubrics,
        )


class _ExpectedAnswerRubricEvaluator(RubricJudgeEvaluator):
    """A rubric judge that also reads the expected final response; every turn needs one."""

    template: ClassVar[Template]
    """Prompt with ``user_prompt``, ``final_answer``, ``reference_answer`` and ``rubrics``."""

    def prompt(self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], rubrics: str) -> str:
        """Prompt with the user prompt, the final answer, the expected answer and the rubrics."""
        if not expecteds:
            raise ConfigError("expecteds is empty")
        expected = expecteds[-1]
        if expected.final_response is None:
            raise ConfigError(f"expected final response is required for {self.name}")
        actual = actuals[-1]
        return self.template.substitute(
            user_prompt=message_text(actual.user_content),
            final_answer=message_text(actual.final_response),
            reference_answer=expected.final_response.content,
            rubrics=rubrics,
        )


class RubricCriticEvaluator(_ExpectedAnswerRubricEvaluator):
    """Strict per-rubric review against the expected (golden) answer (``llm_rubric_critic``).

    Every turn needs an expected final response.
    """

    name = "llm_rubric_critic"
    description = "LLM rubric critic evaluator"
    schema_name = "rubric_critic_scores"
    schema_description = "Per-rubric binary scores and reasons for rubric critic evaluation."
    template = _CRITIC_PROMPT


class RubricReferenceCriticEvaluator(_ExpectedAnswerRubricEvaluator):
    """Per-rubric review using the expected answer as a quality anchor (``llm_rubric_reference_critic``).

    Every turn needs an expected final response.
    """

    name = "llm_rubric_reference_critic"
    description = "LLM rubric critic evaluator against reference answers"
    schema_name = "rubric_reference_critic_scores"
    schema_description = "Per-rubric binary scores and reasons for rubric reference critic evaluation."
    template = _REFERENCE_CRITIC_PROMPT


class RubricKnowledgeRecallEvaluator(RubricJudgeEvaluator):
    """Whether retrieved knowledge supports each rubric item (``llm_rubric_knowledge_recall``).

    The evidence is the results of the current turn's ``knowledge_search`` and
    ``knowledge_search_with_agentic_filter`` calls.
    """

    name = "llm_rubric_knowledge_recall"
    description = "LLM rubric knowledge recall evaluator"
    schema_name = "rubric_knowledge_recall_scores"
    schema_description = "Per-rubric binary scores and reasons for knowledge recall evaluation."

    def prompt(self, actuals: Sequence[Invocation], expecteds: Sequence[Invocation], rubrics: str) -> str:
        """Prompt with the user prompt, the knowledge-search results and the rubrics."""
        actual = actuals[-1]
        try:
            retrieved = knowledge_search_results(actual.tools) or NO_KNOWLEDGE_RESULTS
        except AgentEvalError as exc:
            raise rewrap("extract knowledge recall", exc) from exc
        return _KNOWLEDGE_RECALL_PROMPT.substitute(
            user_prompt=message_text(actual.user_content),
            retrieved_knowledge=retrieved,
            rubrics=rubrics,
        )
