"""Metrics: which evaluator scores a case, how, and the pass threshold."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, get_args

from agenteval._util.trpc_json import CamelModel, GoFloat, check_arguments
from agenteval.errors import ConfigError
from agenteval.metric.criterion import (
    _ROUGE_TYPE,
    Criterion,
    FinalResponseCriterion,
    JSONCriterion,
    JSONMatchStrategy,
    RougeCriterion,
    RougeThreshold,
    TextCriterion,
    TextMatchStrategy,
    ToolTrajectoryCriterion,
    ToolTrajectoryStrategy,
)

__all__ = ["EvalMetric"]

TOOL_TRAJECTORY = "tool_trajectory_avg_score"
FINAL_RESPONSE = "final_response_avg_score"

ToolPart = Literal["exact", "ignore"]
TextMatch = Literal["exact", "contains", "regex"]


class EvalMetric(CamelModel):
    """One metric instance of an eval set.

    A metric passes when its score is at least :attr:`threshold`. The constructors
    :meth:`tool_trajectory`, :meth:`final_response`, :meth:`rouge` and :meth:`json` build the
    common ones; each has its own default name, so a list of one of each has unique names.
    """

    metric_name: str = ""
    """Name shown in results; also the evaluator to use when :attr:`evaluator_name` is empty."""
    evaluator_name: str = ""
    """Evaluator implementation, so several metrics can share one evaluator."""
    threshold: GoFloat = 0.0
    """Pass when ``score >= threshold``."""
    criterion: Criterion | None = None
    """Evaluator-specific configuration."""
    extension: Any = None
    """Caller metadata (weights, groups…); never interpreted, not copied into results."""

    @property
    def evaluator(self) -> str:
        """The evaluator this metric runs: :attr:`evaluator_name`, or :attr:`metric_name`."""
        return self.evaluator_name or self.metric_name

    @classmethod
    def tool_trajectory(
        cls,
        *,
        order_sensitive: bool = False,
        subset: bool = False,
        arguments: ToolPart = "exact",
        results: ToolPart = "ignore",
        threshold: float = 1.0,
        name: str = TOOL_TRAJECTORY,
    ) -> EvalMetric:
        """Check each turn's tool calls against the expected ones (``tool_trajectory_avg_score``).

        A turn scores 1 when every expected call is matched by a distinct actual call with the
        same name (and arguments, and result, as chosen below), else 0; the metric's score is the
        mean over the turns. Tool call ids are never compared.

        Results are not compared by default: an eval set written in code rarely states what a tool
        returned, and comparing would then fail every call that returns something. Pass
        ``results="exact"`` when the expected tools carry their results.

        Args:
            order_sensitive: The calls must come in the expected order.
            subset: Extra actual calls are allowed (by default the counts must be equal).
            arguments: ``"exact"`` compares arguments as JSON (numbers within ``1e-6``);
                ``"ignore"`` does not compare them.
            results: ``"exact"`` or ``"ignore"``, as for ``arguments``.
            threshold: Pass when the mean over the turns is at least this (``0`` to ``1``).
            name: The metric's name in results.

        Returns:
            The metric.

        Raises:
            ConfigError: An argument of the wrong type, an unknown ``arguments`` or ``results``
                value, a threshold outside ``[0, 1]``, or an empty name.

        Example:
            >>> metric = EvalMetric.tool_trajectory(order_sensitive=True)
            >>> metric.metric_name, metric.threshold, metric.criterion.tool_trajectory.order_sensitive
            ('tool_trajectory_avg_score', 1.0, True)
        """
        where = "EvalMetric.tool_trajectory"
        check_arguments(
            where,
            order_sensitive=(order_sensitive, bool),
            subset=(subset, bool),
            threshold=(threshold, float),
            name=(name, str),
        )
        strategy = ToolTrajectoryStrategy(
            name=TextCriterion(match_strategy=TextMatchStrategy.EXACT),
            arguments=_tool_part(where, "arguments", arguments),
            result=_tool_part(where, "results", results),
        )
        criterion = ToolTrajectoryCriterion(
            default_strategy=strategy, order_sensitive=order_sensitive, subset_matching=subset
        )
        return _metric(where, name, TOOL_TRAJECTORY, threshold, Criterion(tool_trajectory=criterion))

    @classmethod
    def final_response(
        cls,
        match: TextMatch = "exact",
        *,
        case_insensitive: bool = False,
        threshold: float = 1.0,
        name: str = FINAL_RESPONSE,
    ) -> EvalMetric:
        """Compare each turn's final reply with the expected text (``final_response_avg_score``).

        A turn scores 1 on a match, else 0; the metric's score is the mean over the turns. A turn
        with no expected reply is compared with ``""``.

        Args:
            match: ``"exact"`` (equal texts), ``"contains"`` (the reply contains the expected
                text) or ``"regex"`` (the expected text is a regular expression found anywhere in
                the reply).
            case_insensitive: Lower-case both texts first (a regex pattern too).
            threshold: Pass when the mean over the turns is at least this (``0`` to ``1``).
            name: The metric's name in results.

        Returns:
            The metric.

        Raises:
            ConfigError: An argument of the wrong type, an unknown ``match``, a threshold outside
                ``[0, 1]``, or an empty name.

        Example:
            >>> metric = EvalMetric.final_response("contains", case_insensitive=True)
            >>> metric.metric_name, metric.criterion.final_response.text.match_strategy.value
            ('final_response_avg_score', 'contains')
        """
        where = "EvalMetric.final_response"
        check_arguments(
            where, case_insensitive=(case_insensitive, bool), threshold=(threshold, float), name=(name, str)
        )
        _check_choice(where, "match", match, TextMatch)
        text = TextCriterion(match_strategy=TextMatchStrategy(match), case_insensitive=case_insensitive)
        return _metric(where, name, FINAL_RESPONSE, threshold, _final_response(text=text))

    @classmethod
    def rouge(
        cls,
        rouge_type: str = "rougeL",
        *,
        f1: float = 0.0,
        precision: float = 0.0,
        recall: float = 0.0,
        use_stemmer: bool = False,
        tokenizer_name: str = "",
        threshold: float = 1.0,
        name: str = "final_response_rouge",
    ) -> EvalMetric:
        """Score each turn's final reply against the expected one with ROUGE (``final_response_avg_score``).

        A turn scores 1 when the ROUGE precision, recall and F1 of the reply (against the expected
        reply) all reach the given minimums, else 0; the metric's score is the mean over the turns.
        Give at least one minimum: with all three at 0 every reply would pass.

        Args:
            rouge_type: ``"rouge1"``, ``"rouge2"``, … (n-gram overlap), ``"rougeL"`` (longest
                common subsequence) or ``"rougeLsum"`` (``rougeL`` per line).
            f1: Minimum F1, ``0`` to ``1``.
            precision: Minimum precision, ``0`` to ``1``.
            recall: Minimum recall, ``0`` to ``1``.
            use_stemmer: Porter-stem tokens longer than three characters.
            tokenizer_name: A tokenizer registered in the
                :class:`~agenteval.metric.registry.MetricRegistry`, e.g. for Chinese text (the
                default tokenizer keeps only ASCII letters and digits).
            threshold: Pass when the mean over the turns is at least this (``0`` to ``1``).
            name: The metric's name in results.

        Returns:
            The metric.

        Raises:
            ConfigError: An argument of the wrong type; an unknown ``rouge_type``; a minimum
                outside ``[0, 1]``, or all three at 0; a threshold outside ``[0, 1]``; an empty
                name. An unregistered ``tokenizer_name`` is refused when the evaluation starts.

        Example:
            >>> metric = EvalMetric.rouge("rouge1", f1=0.6)
            >>> metric.metric_name, metric.criterion.final_response.rouge.threshold.f1
            ('final_response_rouge', 0.6)
        """
        where = "EvalMetric.rouge"
        check_arguments(
            where,
            rouge_type=(rouge_type, str),
            f1=(f1, float),
            precision=(precision, float),
            recall=(recall, float),
            use_stemmer=(use_stemmer, bool),
            tokenizer_name=(tokenizer_name, str),
            threshold=(threshold, float),
            name=(name, str),
        )
        if not _ROUGE_TYPE.fullmatch(rouge_type):
            raise ConfigError(f"{where}: unknown rouge_type {rouge_type!r}; use rouge1, rouge2, …, rougeL or rougeLsum")
        minimums = {"f1": f1, "precision": precision, "recall": recall}
        for label, value in minimums.items():
            _check_fraction(where, label, value)
        if not any(minimums.values()):
            raise ConfigError(
                f"{where}: f1, precision and recall are all 0, so every reply would pass; "
                "give at least one minimum, e.g. f1=0.5"
            )
        rouge = RougeCriterion(
            rouge_type=rouge_type,
            threshold=RougeThreshold(f1=f1, precision=precision, recall=recall),
            use_stemmer=use_stemmer,
            tokenizer_name=tokenizer_name,
        )
        return _metric(where, name, FINAL_RESPONSE, threshold, _final_response(rouge=rouge))

    @classmethod
    def json(  # type: ignore[override]  # pydantic's deprecated BaseModel.json; model_dump_json replaces it
        cls,
        *,
        number_tolerance: float | None = None,
        ignore_keys: Sequence[str] = (),
        only_keys: Sequence[str] = (),
        schema: Any = None,
        threshold: float = 1.0,
        name: str = "final_response_json",
    ) -> EvalMetric:
        """Compare each turn's final reply with the expected one as JSON (``final_response_avg_score``).

        Both replies are parsed as JSON (a reply that is not JSON does not match) and compared:
        objects need the same keys, arrays the same items in the same order, and numbers are equal
        within ``number_tolerance``. A turn scores 1 on a match, else 0; the metric's score is the
        mean over the turns. For nested key selections, build an
        :class:`~agenteval.criteria.JSONCriterion` with ``ignore_tree`` / ``only_tree`` yourself.

        Args:
            number_tolerance: Absolute tolerance for numbers (``1e-6`` when ``None``).
            ignore_keys: Top-level keys not compared (e.g. ``["id", "timestamp"]``).
            only_keys: Compare only these top-level keys; cannot be combined with ``ignore_keys``.
            schema: A JSON Schema (draft 2020-12 unless ``$schema`` says otherwise) the reply must
                also satisfy.
            threshold: Pass when the mean over the turns is at least this (``0`` to ``1``).
            name: The metric's name in results.

        Returns:
            The metric.

        Raises:
            ConfigError: An argument of the wrong type (keys given as one string, for instance);
                both ``ignore_keys`` and ``only_keys``; a negative or non-finite
                ``number_tolerance``; a threshold outside ``[0, 1]``; an empty name. An invalid
                ``schema`` is refused when the evaluation starts.

        Example:
            >>> metric = EvalMetric.json(ignore_keys=["id"], number_tolerance=0.01)
            >>> metric.metric_name, metric.criterion.final_response.json_.ignore_tree
            ('final_response_json', {'id': True})
        """
        where = "EvalMetric.json"
        check_arguments(
            where,
            number_tolerance=(number_tolerance, float | None),
            ignore_keys=(ignore_keys, list[str]),
            only_keys=(only_keys, list[str]),
            threshold=(threshold, float),
            name=(name, str),
        )
        if number_tolerance is not None and not (math.isfinite(number_tolerance) and number_tolerance >= 0):
            raise ConfigError(f"{where}: number_tolerance must be a non-negative number, got {number_tolerance!r}")
        if ignore_keys and only_keys:
            raise ConfigError(f"{where}: give ignore_keys or only_keys, not both")
        json_criterion = JSONCriterion(
            match_strategy=JSONMatchStrategy.EXACT,
            number_tolerance=number_tolerance,
            ignore_tree=dict.fromkeys(ignore_keys, True),
            only_tree=dict.fromkeys(only_keys, True),
            json_schema=schema,
        )
        return _metric(where, name, FINAL_RESPONSE, threshold, _final_response(json_=json_criterion))


def _metric(where: str, name: str, evaluator: str, threshold: float, criterion: Criterion) -> EvalMetric:
    if not name:
        raise ConfigError(f"{where}: name is empty; give the metric a name, unique among the metrics")
    _check_fraction(where, "threshold", threshold)
    return EvalMetric(metric_name=name, evaluator_name=evaluator, threshold=threshold, criterion=criterion)


def _final_response(**parts: Any) -> Criterion:
    return Criterion(final_response=FinalResponseCriterion(**parts))


def _check_choice(where: str, label: str, value: object, choices: Any) -> None:
    valid = get_args(choices)
    if value not in valid:
        raise ConfigError(f"{where}: {label}={value!r} is not one of {', '.join(map(repr, valid))}")


def _check_fraction(where: str, label: str, value: float) -> None:
    # ``not (0 <= value <= 1)`` also refuses NaN.
    if not 0 <= value <= 1:
        raise ConfigError(f"{where}: {label} must be between 0 and 1, got {value!r}")


def _tool_part(where: str, label: str, choice: ToolPart) -> JSONCriterion | None:
    """The JSON criterion of one tool-call part; ``None``, so not compared, for ``"ignore"``."""
    _check_choice(where, label, choice, ToolPart)
    return JSONCriterion(match_strategy=JSONMatchStrategy.EXACT) if choice == "exact" else None
