"""Evaluation results: per metric, per turn, per case and per eval-set run."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from agenteval._util.trpc_json import CamelModel, EpochTime, GoFloat, GoInt, Shared
from agenteval.evalresult.summary import EvalSetResultSummary
from agenteval.evalset.models import Invocation
from agenteval.metric.criterion import Criterion
from agenteval.status import EvalStatus

__all__ = [
    "ErrorType",
    "EvalCaseResult",
    "EvalMetricResult",
    "EvalMetricResultDetails",
    "EvalMetricResultPerInvocation",
    "EvalSetResult",
    "RubricScore",
    "ScoreKind",
    "ScoreValue",
]


class ScoreKind(StrEnum):
    """The type of a typed score value."""

    UNSET = ""
    NUMERIC = "numeric"
    BOOLEAN = "boolean"
    CATEGORICAL = "categorical"


class ErrorType(StrEnum):
    """What kind of failure an :attr:`EvalCaseResult.error_type` records (an agenteval extension)."""

    NONE = ""
    """No error."""
    AGENT = "agent"
    """The agent raised, or returned something that is not a reply."""
    TIMEOUT = "timeout"
    """A turn took longer than ``turn_timeout``."""
    CASE = "case"
    """The case cannot run as written (no turns, no session input, an unusable tool mock, …)."""
    SIMULATION = "simulation"
    """The simulated user or the expected runner failed."""
    METRIC = "metric"
    """An evaluator raised or returned a malformed result."""
    AGGREGATOR = "aggregator"
    """The case aggregator raised or returned a malformed result."""
    CALLBACK = "callback"
    """A case-level callback raised."""
    OTHER = "other"
    """Anything else, and errors recorded by tools that do not classify them (the reference framework)."""


class ScoreValue(CamelModel):
    """A typed per-turn score for display; it never decides pass or fail."""

    kind: ScoreKind = ScoreKind.UNSET
    """Which of the other fields holds the value."""
    numeric: GoFloat | None = None
    """A numeric score (written even when ``0``)."""
    boolean: bool | None = None
    """A boolean verdict (written even when ``false``)."""
    categorical: str = ""
    """A category label."""


class RubricScore(CamelModel):
    """A judge's score for one rubric."""

    id: str = ""
    """Rubric id."""
    reason: str = ""
    """Why the judge scored it so."""
    score: GoFloat = 0.0
    """Score in ``[0, 1]``."""


class EvalMetricResultDetails(CamelModel):
    """Why a metric scored what it did."""

    reason: str = ""
    """Explanation; per-turn reasons joined by ``;`` at the overall level."""
    score: GoFloat = 0.0
    """The score again."""
    value: ScoreValue | None = None
    """Typed per-turn score (never set on overall results)."""
    rubric_scores: list[RubricScore] = Field(default_factory=list)
    """Per-rubric scores (LLM judges)."""
    measures: dict[str, GoFloat] = Field(default_factory=dict)
    """The measures behind the score, by name; left out of the JSON when empty.

    An agenteval extension (the reference framework ignores the key). Per turn, a metric whose score
    is a 0/1 pass records what it measured: ``<rougeType>_precision``, ``<rougeType>_recall`` and
    ``<rougeType>_f1`` (e.g. ``rougeL_f1``) for a final-response ROUGE criterion, and
    ``json_max_number_difference`` for a final-response JSON criterion (the largest absolute
    difference between two numbers at the same place; absent when the two values cannot be lined
    up). LLM judges record ``judge_score``. Keys are in the order the criterion runs (json, text,
    rouge, xml), so the first is the headline measure.
    """


class EvalMetricResult(CamelModel):
    """One metric's outcome, for one turn or for a whole case."""

    metric_name: str = ""
    """Metric name."""
    score: GoFloat = 0.0
    """Score, usually in ``[0, 1]``."""
    eval_status: EvalStatus | None = None
    """``passed``, ``failed`` or ``not_evaluated``."""
    threshold: GoFloat = 0.0
    """The metric's threshold."""
    criterion: Annotated[Criterion | None, Shared] = None
    """The effective criterion (secrets stripped, ``${VAR}`` references kept; template prompts rendered per turn)."""
    details: EvalMetricResultDetails | None = None
    """Reason, typed value and rubric scores."""

    @property
    def shown_reason(self) -> str:
        """The reason as views show it: trimmed, without the ``;`` separators an overall reason joins turns' with.

        A multi-turn case's overall reason joins the per-turn ones with ``;``, so a turn that passed
        leaves only a separator behind (``; tool trajectory mismatch …``).
        """
        return self.details.reason.strip().strip(";").strip() if self.details is not None else ""


class EvalMetricResultPerInvocation(CamelModel):
    """Metric results for one turn, with the actual and expected turns they compared."""

    actual_invocation: Invocation | None = None
    """What the agent did."""
    expected_invocation: Invocation | None = None
    """What was expected."""
    eval_metric_results: list[EvalMetricResult] = Field(default_factory=list)
    """One result per evaluated metric, in metric order."""


class EvalCaseResult(CamelModel):
    """The outcome of one case in one run."""

    eval_set_id: str = ""
    """Eval set id."""
    eval_id: str = ""
    """Case id."""
    run_id: GoInt = 0
    """1-based run number."""
    score: GoFloat = 0.0
    """Case score from the case aggregator."""
    final_eval_status: EvalStatus | None = None
    """Case status from the case aggregator."""
    error_message: str = ""
    """Why the case failed to run or to be scored."""
    error_type: str = ""
    """What kind of failure :attr:`error_message` describes: an :class:`ErrorType` value.

    An agenteval extension (the reference framework ignores the key); a result written by the
    reference has only the message.
    """
    overall_eval_metric_results: list[EvalMetricResult] = Field(default_factory=list)
    """One overall result per evaluated metric."""
    eval_metric_result_per_invocation: list[EvalMetricResultPerInvocation] = Field(default_factory=list)
    """Per-turn results."""
    session_id: str = ""
    """Session the agent ran in."""
    user_id: str = ""
    """User the agent ran as."""

    @property
    def short_error(self) -> str:
        """:attr:`error_message` as tables and views show it, beside the case's id and session.

        A failed inference's message starts, as the reference framework writes it (and the saved
        result keeps it), with ``inference eval case (evalCaseID=<id>, sessionID=<session>): runner
        run: ``, which repeats this result's own :attr:`eval_id` and :attr:`session_id`; that prefix
        is left out. A message naming another case or session is kept whole.
        """
        context = f"inference eval case (evalCaseID={self.eval_id}, sessionID={self.session_id}): "
        if not self.error_message.startswith(context):
            return self.error_message
        return self.error_message.removeprefix(context).removeprefix("runner run: ")


class EvalSetResult(CamelModel):
    """Everything one evaluation produced: every case of every run, and a summary."""

    eval_set_result_id: str = ""
    """Result id (``<app>_<evalSetId>_<uuid4>`` when generated)."""
    eval_set_result_name: str = ""
    """Display name; the id by default."""
    eval_set_id: str = ""
    """Eval set id."""
    eval_case_results: list[EvalCaseResult] = Field(default_factory=list)
    """Case results: run 1's cases, then run 2's, and so on."""
    summary: EvalSetResultSummary | None = None
    """Multi-run summary."""
    creation_timestamp: EpochTime | None = None
    """When the result was saved."""
