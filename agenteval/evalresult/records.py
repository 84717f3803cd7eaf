"""Finished case results held lean while an evaluation runs and after: their stored text and their row.

A case result is about 80 Python objects (models, their dicts, lists); an evaluation of 20,000 cases
held them all until it saved them, then held their JSON as well. A :class:`CaseRecord` is the case
result written once, as it finishes, as compact JSON (the text a save then stores as it is, or lays out
with indentation without going through the model again), with the
:class:`~agenteval.evalresult.summarize.RunRow` that tables, summaries and re-analysis read. The model
is read back from the text when something asks for it, and then kept: whatever is done to it is what a
later save writes.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError
from pydantic_core import from_json, to_json

from agenteval._util.files import describe_validation_error
from agenteval.errors import ConfigError
from agenteval.evalresult.models import EvalCaseResult, EvalMetricResult
from agenteval.evalresult.summarize import MetricRow, RunRow, run_row

__all__ = ["CaseRecord", "CaseRecorder", "SharedParts", "metric_results_of", "saves_records", "twin_of_save"]

_F = TypeVar("_F", bound=Callable[..., Any])

_TWIN = "agenteval_saves_records"
"""The mark :func:`saves_records` sets on a store's ``save``."""


def saves_records(save: _F) -> _F:
    """Mark a store's ``save`` as the twin of the ``save_recorded`` defined beside it.

    An evaluation then saves its records through ``save_recorded``, without reading the case results, as
    long as the store's ``save`` is this function: a ``save`` overridden, patched or wrapped is called instead.
    """
    vars(save)[_TWIN] = True
    return save


def twin_of_save(store: object) -> Callable[..., Awaitable[str]] | None:
    """The store's ``save_recorded``, when its ``save`` is the marked twin of it (:func:`saves_records`)."""
    save = getattr(store, "save", None)
    if not getattr(getattr(save, "__func__", None), _TWIN, False):
        return None
    save_recorded = getattr(store, "save_recorded", None)
    return save_recorded if inspect.iscoroutinefunction(save_recorded) else None


class CaseRecord:
    """One finished case result: its compact JSON, its row, and its model once asked for.

    Args:
        case: The case result, which no one changes after this (it is written now).
        shared: Metric rows made before, kept once (see :func:`~agenteval.evalresult.summarize.run_row`).
    """

    __slots__ = ("_model", "_row", "_text")

    def __init__(self, case: EvalCaseResult, shared: SharedParts | None = None) -> None:
        shared = shared if shared is not None else SharedParts()
        self._row = run_row(case, shared.rows)
        self._text: str | None
        self._model: EvalCaseResult | None
        try:
            self._text, self._model = case.to_json(indent=None), None
        except ConfigError:
            # Kept as it is: saving the result names the field that cannot be written, where it is in the result.
            self._text, self._model = None, case

    @property
    def row(self) -> RunRow:
        """What tables, summaries and re-analysis read of the case result (of the model as it is, once read)."""
        return self._row if self._model is None else run_row(self._model)

    @property
    def model(self) -> EvalCaseResult:
        """The case result, read from the text the first time; the same object after, and what a save writes.

        Raises:
            ConfigError: The text does not read back: a callback gave the case result a value its field cannot
                hold (the message names the case and the field).
        """
        if self._model is None:
            assert self._text is not None
            try:
                self._model = EvalCaseResult.from_json(self._text)
            except ValidationError as exc:
                row = self._row
                raise ConfigError(
                    f"the result of case {row.eval_id!r} (run {row.run_id}) does not read back as it was written:"
                    f" {describe_validation_error(exc)}; a callback may have set a field to a value it cannot hold"
                ) from None
        return self._model

    @property
    def read(self) -> bool:
        """Whether the model was asked for (or could not be written): a save writes it again."""
        return self._model is not None

    def metrics_text(self) -> str:
        """The JSON array of its overall metric results, as written (of the model as it is, once read).

        For re-analysis, which reads the metric results alone: cheaper to read than the whole case result.
        """
        if self._model is not None or self._text is None:
            return _METRIC_LIST.dump_json(self.model.overall_eval_metric_results, by_alias=True).decode()
        text = self._text
        if not self._row.overall_eval_metric_results:  # left out of the text: any key found is in the turns
            return "[]"
        # The members before it hold text and numbers only (a quote in text is escaped): the first is the member.
        found = text.find(_METRICS_KEY)
        start = text.index("[", found + len(_METRICS_KEY))
        _, end = _DECODER.raw_decode(text, start)
        return text[start:end]

    def stored_text(self) -> str | None:
        """Its compact text, while that is what it is written from (the model was not read), else ``None``."""
        return self._text if self._model is None else None

    def text(self, indent: int | None) -> str:
        """The case result as ``to_json(indent=indent)`` writes it now.

        Raises:
            ConfigError: The case result cannot be written as JSON (the message names the field).
        """
        text = self._text
        if self._model is not None or text is None:
            return self.model.to_json(indent=indent)
        if indent is None:
            return text
        # pydantic-core lays out its own JSON as it writes the model (tested on the reference's files), four
        # times faster than writing the model again, and without reading it.
        return to_json(from_json(text), indent=indent).decode()

    def __repr__(self) -> str:
        row = self.row
        return f"CaseRecord(eval_id={row.eval_id!r}, run_id={row.run_id}, status={row.final_eval_status})"


class SharedParts:
    """What the records of one evaluation share: each distinct metric row, kept once."""

    __slots__ = ("rows",)

    def __init__(self) -> None:
        self.rows: dict[MetricRow, MetricRow] = {}


def metric_results_of(text: str) -> list[EvalMetricResult]:
    """The metric results of a :meth:`CaseRecord.metrics_text`."""
    return _METRIC_LIST.validate_json(text, strict=True)


_METRIC_LIST: TypeAdapter[list[EvalMetricResult]] = TypeAdapter(list[EvalMetricResult])
_METRICS_KEY = '"overallEvalMetricResults":'
_DECODER = json.JSONDecoder()


class CaseRecorder:
    """Makes the :class:`CaseRecord` of each case result as it finishes, and hands it on.

    Args:
        keep: Called with each case result and its record as it is made (the evaluation's ledger); must not raise.
    """

    def __init__(self, keep: Callable[[EvalCaseResult, CaseRecord], None]) -> None:
        self._keep = keep
        self._shared = SharedParts()

    def record(self, case: EvalCaseResult) -> CaseRecord:
        """The record of a finished case result, handed to ``keep``."""
        made = CaseRecord(case, self._shared)
        self._keep(case, made)
        return made
