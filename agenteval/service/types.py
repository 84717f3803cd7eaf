"""Requests and results of the two service phases: inference and evaluate."""

from __future__ import annotations

from dataclasses import dataclass, field

from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalCaseResult
from agenteval.evalresult.records import CaseRecord
from agenteval.evalset.models import EvalCase, EvalSet
from agenteval.metric.models import EvalMetric

__all__ = ["EvalSetRunResult", "EvaluateConfig", "EvaluateRequest", "InferenceRequest", "RecordedRunResult"]


@dataclass(slots=True, kw_only=True)
class InferenceRequest:
    """Which cases of which eval set to run. ``before_inference_set`` callbacks may edit it."""

    app_name: str
    """The app."""
    eval_set_id: str
    """The eval set."""
    eval_case_ids: list[str] = field(default_factory=list)
    """Cases to run, in any order; empty means all. Unknown ids are ignored."""
    run_id: int = 0
    """Which run of an evaluation this is (1-based; ``0``, as in the reference's service, outside a
    multi-run evaluation); carried to every inference result and callback."""
    eval_set: EvalSet | None = None
    """The eval set itself, when the caller holds it; ``None`` reads it once from the eval-set manager."""
    eval_cases: list[EvalCase] | None = None
    """The cases to run, already chosen from ``eval_set`` by the caller (an evaluation chooses them once for all
    its runs); ``eval_case_ids``, when given, still narrows them. A ``before_inference_set`` callback that puts
    another eval set in the request has the cases chosen from that one."""


@dataclass(slots=True, kw_only=True)
class EvaluateConfig:
    """The metrics to score with, in order."""

    eval_metrics: list[EvalMetric] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class EvaluateRequest:
    """Which inference results to score, with which metrics. ``before_evaluate_set`` callbacks may edit it."""

    app_name: str
    eval_set_id: str
    inference_results: list[InferenceResult] = field(default_factory=list)
    evaluate_config: EvaluateConfig = field(default_factory=EvaluateConfig)
    run_id: int = 0
    """Which run of an evaluation this is (1-based; ``0`` outside a multi-run evaluation); stamped on
    every case result and carried to every callback."""
    eval_set: EvalSet | None = None
    """The eval set the results are of, when the caller holds it; ``None`` reads it once from the
    eval-set manager."""


@dataclass(slots=True, kw_only=True)
class EvalSetRunResult:
    """The case results of one evaluate call, in the order of its inference results."""

    app_name: str
    eval_set_id: str
    eval_case_results: list[EvalCaseResult] = field(default_factory=list)
    """In order. An evaluation's ``after_evaluate_set`` callbacks may change the list: what they leave is saved."""


_CASE_RESULTS = EvalSetRunResult.__dict__["eval_case_results"]
"""The slot that holds an :class:`EvalSetRunResult`'s case results."""


class RecordedRunResult(EvalSetRunResult):
    """The case results of one evaluate call of an evaluation, held as records until someone asks for them.

    :attr:`eval_case_results` is read from the records the first time it is asked for (an ``after_evaluate_set``
    callback that reads it); then it is the list any other run result holds, and the evaluation saves what it
    holds when the callbacks are done (:meth:`records`).

    It is an :class:`EvalSetRunResult` in every other way: ``dataclasses.replace`` makes one holding the case
    results given, and it equals a run result holding the same values.

    Args:
        app_name: The app.
        eval_set_id: The eval set.
        eval_case_results: The case results, when given as models (``dataclasses.replace`` gives them).
        records: The case results' records, in order, when ``eval_case_results`` is not given.
    """

    def __init__(
        self,
        *,
        app_name: str,
        eval_set_id: str,
        eval_case_results: list[EvalCaseResult] | None = None,
        records: list[CaseRecord] | None = None,
    ) -> None:
        self.app_name, self.eval_set_id = app_name, eval_set_id
        self._records = records or []
        self._by_model: dict[int, CaseRecord] | None = None
        if eval_case_results is not None:
            self.eval_case_results = eval_case_results

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EvalSetRunResult):
            return NotImplemented
        return (self.app_name, self.eval_set_id, self.eval_case_results) == (
            other.app_name,
            other.eval_set_id,
            other.eval_case_results,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass it extends

    @property
    def eval_case_results(self) -> list[EvalCaseResult]:
        """In order; read from the records when first asked for. A callback may change the list."""
        if self._by_model is None:
            models = [record.model for record in self._records]
            # The records keep their models alive: no other object takes one's id while this maps it.
            self._by_model = {id(model): record for model, record in zip(models, self._records, strict=True)}
            _CASE_RESULTS.__set__(self, models)
        cases: list[EvalCaseResult] = _CASE_RESULTS.__get__(self)
        return cases

    @eval_case_results.setter
    def eval_case_results(self, cases: list[EvalCaseResult]) -> None:
        if self._by_model is None:
            self._by_model = {}
        _CASE_RESULTS.__set__(self, cases)

    def records(self) -> list[CaseRecord]:
        """The records of the case results the run result holds: its own, unless someone read the case results.

        Then, the records of those it holds now (reordered, some left out or replaced: a new one is recorded).
        """
        if self._by_model is None:
            return self._records
        by_model = self._by_model
        return [by_model.get(id(case)) or CaseRecord(case) for case in _CASE_RESULTS.__get__(self)]
