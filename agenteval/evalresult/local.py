"""An eval-result store that keeps one JSON file per result, in the reference framework's layout."""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import functools
import math
import os
import re
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from pydantic import TypeAdapter, ValidationError
from pydantic_core import from_json, to_json

from agenteval._util.files import ensure_inside, parse_json, read_data_file, write_atomic
from agenteval._util.gc_tuning import no_collections
from agenteval._util.name_checks import check_file_path, check_result, file_names
from agenteval._util.trpc_json import SHARED_VALUES, non_finite_path
from agenteval.errors import ConfigError, NotFoundError, StorageError
from agenteval.evalresult._prepare import filled_result, result_pieces, streamed_pieces
from agenteval.evalresult.journal import (
    JOURNAL_DIRECTORY,
    ResultJournal,
    is_being_written,
    journal_result_id,
    read_journal,
    remove_journal,
)
from agenteval.evalresult.models import EvalCaseResult, EvalMetricResult, EvalSetResult
from agenteval.evalresult.provenance import Provenance
from agenteval.evalresult.records import CaseRecord, saves_records
from agenteval.evalresult.summarize import MetricRow, RunRow
from agenteval.evalset.models import EvalCase
from agenteval.status import EvalStatus
from agenteval.storage import Locator, SuffixLocator

__all__ = [
    "RESULT_FILE_SUFFIX",
    "CaseDecision",
    "LocalEvalResultManager",
    "ResultIndex",
    "index_result_file",
    "load_result_file",
]

RESULT_FILE_SUFFIX = ".evalset_result.json"
"""File-name suffix of a result file in the default layout."""

_WHAT = "eval set result"
_LEGACY_TEXT: TypeAdapter[str] = TypeAdapter(str)
_ALIASES = {name: field.alias or name for name, field in EvalSetResult.model_fields.items()}


class LocalEvalResultManager:
    """Keeps each eval-set result in its own JSON file under a base directory.

    The default layout is the reference framework's,
    ``<base_dir>/<app>/<id>.evalset_result.json``, so both read each other's files. App names and
    ids that could leave the base directory are rejected, and every write is atomic.

    While an evaluation runs, its finished case results go to a journal named as the file it will
    write, in the app's ``.journals/`` directory (see :mod:`agenteval.evalresult.journal`), removed
    once the result is saved. A journal a killed process left is a partial result: :meth:`get` and
    :meth:`list` show it under its id, so ``ev.evaluate(..., resume=<id>)`` carries the evaluation on.
    A journal still being written (its evaluation runs, in this process or another) is not shown.

    Args:
        base_dir: Directory holding one sub-directory per app; created on the first save.
        locator: Where files go; defaults to ``SuffixLocator(".evalset_result.json")``.
    """

    def __init__(self, base_dir: str | os.PathLike[str], *, locator: Locator | None = None) -> None:
        self._base_dir = Path(base_dir)
        self._locator: Locator = locator if locator is not None else SuffixLocator(RESULT_FILE_SUFFIX)

    @property
    def base_dir(self) -> Path:
        """The directory the results live in."""
        return self._base_dir

    @property
    def locator(self) -> Locator:
        """The locator that maps (app, id) to a file."""
        return self._locator

    @saves_records
    @file_names
    async def save(self, app_name: str, result: EvalSetResult | None) -> str:
        """Write a result to its file, replacing any previous version, and return its id.

        Args:
            app_name: The app the result belongs to.
            result: The result; a missing id, name or creation time is filled in on a copy.

        Returns:
            The result id.

        Raises:
            ConfigError: A bad argument, an app name or id unfit for a file name, or a result that
                cannot be serialised (``clone result: ...``).
            StorageError: The file could not be written; any previous version is intact.
        """
        prepared = filled_result(app_name, check_result(result))
        self.check_new_result_id(app_name, prepared.eval_set_result_id)
        # Serialised on the caller's task, so the file holds the object as it was at the call.
        pieces = result_pieces(prepared, indent=2)
        await asyncio.to_thread(self._write, app_name, prepared.eval_set_result_id, pieces)
        return prepared.eval_set_result_id

    @file_names
    async def save_recorded(self, app_name: str, result: EvalSetResult | None, records: Sequence[CaseRecord]) -> str:
        """As :meth:`save`, for a result whose case results are ``records`` (``result`` holds none).

        The records' texts are laid out as the file lays them out, without reading the case results.
        """
        prepared = filled_result(app_name, check_result(result))
        self.check_new_result_id(app_name, prepared.eval_set_result_id)
        pieces = streamed_pieces(prepared, records, indent=2)
        await asyncio.to_thread(self._write, app_name, prepared.eval_set_result_id, pieces)
        return prepared.eval_set_result_id

    def open_journal(
        self, app_name: str, result_id: str, *, eval_set_id: str, provenance: Provenance | None
    ) -> ResultJournal:
        """Start the journal of an evaluation that will save its result under ``result_id``.

        The evaluator calls this before any case runs and appends each finished case run; saving the
        result removes the journal.

        Raises:
            ConfigError: The app name or id cannot name a file here.
            StorageError: The journal could not be created.
        """
        self.check_new_result_id(app_name, result_id)
        return ResultJournal(
            self._journal_path(app_name, result_id),
            app_name=app_name,
            result_id=result_id,
            eval_set_id=eval_set_id,
            provenance=provenance,
        )

    def check_new_result_id(self, app_name: str, result_id: str) -> None:
        """Refuse a result id this store could not save a result under, before anything runs or is written.

        Its file name (the id and ``.evalset_result.json`` in the default layout) must fit the
        file system's limit of :data:`~agenteval._util.name_checks.FILE_NAME_LIMIT` bytes, and the app name
        and id must be text that can be a file name. The evaluator calls this with the id it will
        save under before any agent runs; :meth:`save` applies the same check.

        Raises:
            ConfigError: The app name or id cannot be part of a file name, or the id makes the file
                name too long (the message names the id, its length, the limit, and how to shorten it).
        """
        file_names.check(app_name=app_name, eval_set_result_id=result_id)
        self._located(app_name, result_id)

    @file_names
    async def get(self, app_name: str, eval_set_result_id: str) -> EvalSetResult:
        """Read a result from its file, or the partial result a killed evaluation's journal holds.

        The file may hold the result object, or the legacy form: a JSON string holding the
        object's JSON. The stored ``evalSetResultId`` is returned as it is, even if it differs from
        the file name.

        Raises:
            ConfigError: A bad argument, or a malformed file (the message names it).
            NotFoundError: There is no such file.
            StorageError: The file could not be read.
        """
        return await asyncio.to_thread(self._read, app_name, eval_set_result_id)

    @file_names
    async def list(self, app_name: str) -> builtins.list[str]:
        """Return the app's result ids in file-name order (``[]`` when the app has none).

        A result only a journal holds (its evaluation was killed) is listed too.

        Raises:
            ConfigError: A bad app name.
            StorageError: The directory could not be read.
        """
        return await asyncio.to_thread(self._list, app_name)

    async def close(self) -> None:
        """Do nothing: no file stays open between calls."""

    def __repr__(self) -> str:
        return f"LocalEvalResultManager({str(self._base_dir)!r}, locator={self._locator!r})"

    def _located(self, app_name: str, eval_set_result_id: str) -> Path:
        """The file of a result, once its file names are known to fit (nothing on disk is looked at)."""
        path = self._locator.build(self._base_dir, app_name, eval_set_result_id)
        check_file_path(self._base_dir, path, app_name=app_name, eval_set_result_id=eval_set_result_id)
        return path

    def _path(self, app_name: str, eval_set_result_id: str) -> Path:
        return ensure_inside(self._base_dir, self._located(app_name, eval_set_result_id))

    def _journal_path(self, app_name: str, eval_set_result_id: str) -> Path:
        # Named as the result file (so no longer than it), in a directory of its own beside it.
        path = self._path(app_name, eval_set_result_id)
        return path.parent / JOURNAL_DIRECTORY / path.name

    def _write(self, app_name: str, eval_set_result_id: str, pieces: Iterable[str]) -> None:
        write_atomic(self._path(app_name, eval_set_result_id), pieces)
        # The result is whole on disk: the journal of the evaluation that made it has nothing more to give
        # (one that cannot be removed is harmless: a saved file is read before any journal).
        with contextlib.suppress(OSError):
            remove_journal(self._journal_path(app_name, eval_set_result_id))

    def _read(self, app_name: str, eval_set_result_id: str) -> EvalSetResult:
        path = self._path(app_name, eval_set_result_id)
        try:
            return load_result_file(path)
        except NotFoundError as exc:
            journal = self._journal_path(app_name, eval_set_result_id)
            if not journal.is_file():
                raise NotFoundError(f"eval set result {app_name}.{eval_set_result_id} not found: {exc}") from exc
            if is_being_written(journal):
                raise NotFoundError(
                    f"eval set result {app_name}.{eval_set_result_id} is not saved yet: the evaluation making it is"
                    f" still running (its journal {journal} is being written); wait for it to finish"
                ) from None
            return read_journal(journal)

    def _list(self, app_name: str) -> builtins.list[str]:
        # A symlinked app directory must not expose names from outside the base directory.
        directory = self._base_dir / app_name
        ensure_inside(self._base_dir, directory)
        journals_directory = directory / JOURNAL_DIRECTORY
        try:
            ids = self._locator.list(self._base_dir, app_name)
            journals = sorted(journals_directory.iterdir()) if journals_directory.is_dir() else []
        except OSError as exc:
            raise StorageError(f"list eval set results for app {app_name}: {exc}") from exc
        known = set(ids)
        for journal in journals:
            result_id = journal_result_id(journal)
            if not result_id or result_id in known or is_being_written(journal):
                continue
            with contextlib.suppress(ConfigError):  # a header naming an id that cannot be a file here
                if self._journal_path(app_name, result_id) == journal:
                    known.add(result_id)
                    ids.append(result_id)
        return ids


def load_result_file(path: Path) -> EvalSetResult:
    """Load a result file, in the current form or the legacy double-encoded one.

    Raises:
        NotFoundError: The file does not exist.
        ConfigError: The path is not a regular file (a FIFO, a directory), or the file is malformed
            (the message names it and the field), or holds another kind of document (an eval set,
            metrics) rather than an eval set result.
        StorageError: The file could not be read.
    """
    return _parsed_result(read_data_file(path, _WHAT), path)


def index_result_file(path: Path) -> ResultIndex | EvalSetResult:
    """Read a result file for what a report opens with, leaving each case's turns unread when it can.

    A file as agenteval writes it gives a :class:`ResultIndex`; any other (a legacy one, one edited
    into something the index does not read) is loaded whole, as :func:`load_result_file` loads it,
    with its errors.

    Raises:
        NotFoundError: The file does not exist.
        ConfigError: As :func:`load_result_file`, for a file that is loaded whole.
        StorageError: The file could not be read.
    """
    data = read_data_file(path, _WHAT)
    index = _indexed(data, path)
    return index if index is not None else _parsed_result(data, path)


def _parsed_result(data: bytes, path: Path) -> EvalSetResult:
    """The result a file's ``data`` holds, validated whole (see :func:`load_result_file`)."""
    source = f"{_WHAT} file {path}"
    try:
        result = parse_json(data, EvalSetResult, source)
    except ConfigError as error:
        try:
            inner = parse_json(data, _LEGACY_TEXT, source)
        except ConfigError:
            # Not a legacy file either: the object's error says what is wrong, unless it is no object at all.
            if data.lstrip()[:1] == b"[":
                raise _not_a_result(path, "it is a JSON array, as a metrics file is") from None
            raise error from None
        result = parse_json(inner, EvalSetResult, f"legacy content of {source}")
    # Every other document of the reference parses as a result with unknown keys: tell them apart.
    keys = {_ALIASES.get(name, name) for name in result.__pydantic_fields_set__}  # unknown keys are in it too
    if not {"evalSetResultId", "evalCaseResults"} & keys:
        if "evalCases" in keys:
            raise _not_a_result(path, "it has evalCases, so it is an eval set file, not a result")
        listed = ", ".join(sorted(keys)) or "none"
        raise _not_a_result(path, f"it has neither evalSetResultId nor evalCaseResults (its keys: {listed})")
    return result


def _not_a_result(path: Path, why: str) -> ConfigError:
    return ConfigError(
        f"{_WHAT} file {path} is not an eval set result: {why}; load a result file"
        f" (<app>/<id>{RESULT_FILE_SUFFIX}) written by an evaluation"
    )


class CaseDecision(NamedTuple):
    """What a result's case summary records of a case's decision across runs."""

    overall_status: EvalStatus | None
    overall_score: float | None
    error_message: str


class ResultIndex:
    """A result file read for the outcomes a report opens with; each case's turns are read when asked for.

    It holds each case result as a :class:`~agenteval.evalresult.summarize.RunRow` (statuses, scores,
    errors and what tables show of the metric results; a reason that only the turns hold is
    ``None``), the result's top-level fields and summary without its case summaries (``shell``;
    its provenance without the eval set), the ids of the cases of the eval set the provenance
    records, and, for several runs, the case summaries' decisions. The file's text is kept:
    :meth:`record` and :meth:`metric_results` read one case's part of it,
    :meth:`result` all of it. What the index reads is checked as the full validation checks it;
    what it leaves unread (turns, criteria, the eval set's cases) is checked when read, and a
    problem there raises the error a load of the whole file gives.
    """

    def __init__(self, path: Path, data: bytes, parts: _Parts) -> None:
        self.path = path
        self.shell = parts.shell
        """The result without its case results and case summaries, its provenance without the eval set."""
        self.runs = parts.runs
        """Every case result, in the file's order."""
        self.has_eval_set = parts.eval_set is not None
        """Whether the provenance records the eval set."""
        self.decisions = parts.decisions
        """Each case's recorded decision across runs, by case id (empty for a result of one run)."""
        self._data = data
        self._parts = parts
        self._records: dict[int, EvalCaseResult] = {}
        self._metrics: dict[bytes, list[EvalMetricResult]] = {}
        self._shared: list[Any] = []
        self._failure: ConfigError | None = None

    @property
    def source(self) -> str:
        """How errors name the file."""
        return f"{_WHAT} file {self.path}"

    def eval_case_ids(self) -> list[str] | None:
        """The ids of the cases of the eval set the provenance records, in order (``None``: it records none).

        Raises:
            ConfigError: The file is malformed (the error a load of the whole file gives).
        """
        recorded = self._parts.eval_set
        if recorded is None:
            return None
        try:
            if isinstance(recorded, tuple):
                return _eval_set_case_ids(self._data, *recorded)
            return _case_ids(recorded)
        except (_Unindexable, ValueError, OverflowError):
            return [case.eval_id for case in self._eval_set_cases()]

    def record(self, index: int) -> EvalCaseResult:
        """Case result ``index``, validated (once; later calls return the same object).

        Raises:
            ConfigError: The file is malformed (the error a load of the whole file gives).
        """
        made = self._records.get(index)
        if made is None:
            start, end = self._parts.spans[index]
            made = self._validated(_CASE_RESULT, b"{" + self._data[start:end] + b"}")
            if made is None:
                made = self._whole().eval_case_results[index]
            self._records[index] = made
        return made

    def may_hold(self, index: int, token: str) -> bool:
        r"""Whether case result ``index`` may hold ``token`` (a JSON string such as ``"failed"``), without reading it.

        ``True`` when its text in the file holds ``token`` or a ``\u`` escape (which may spell it), or when it
        was read already (reading it again costs nothing).
        """
        if index in self._records:
            return True
        start, end = self._parts.spans[index]
        data = self._data
        return data.find(token.encode(), start, end) >= 0 or data.find(b"\\u", start, end) >= 0

    def metric_results(self, index: int) -> list[EvalMetricResult]:
        """The overall metric results of case result ``index``, validated; equal ones are one shared object.

        Raises:
            ConfigError: The file is malformed (the error a load of the whole file gives).
        """
        raw = self._parts.metric_sources[index]
        made = self._metrics.get(raw)
        if made is None:
            made = self._validated(_METRIC_LIST, raw)
            if made is None:
                return list(self.record(index).overall_eval_metric_results)
            self._metrics[raw] = made
        return list(made)

    def result(self) -> EvalSetResult:
        """The whole result, validated as :func:`load_result_file` validates it.

        Raises:
            ConfigError: The file is malformed (the message names it and the field).
        """
        # Millions of objects and no cycle: the collector waits until they are made (as parse_json does).
        with no_collections():
            begin, end = self._parts.cases
            rest = self._validated(_RESULT, self._data[:begin] + b"[]" + self._data[end:])
            if rest is None:
                return self._whole()
            return rest.replaced(eval_case_results=[self.record(index) for index in range(len(self.runs))])

    def _validated(self, model: TypeAdapter[_T], text: bytes) -> _T | None:
        """A part of the file validated; ``None`` when it does not validate, for the whole file to say why."""
        context = {"source": self.source, SHARED_VALUES: self._shared}
        try:
            made = model.validate_json(text, strict=True, context=context)
        except ValidationError:
            return None
        # As parse_json: the exact search only when a constant may be in the text.
        if (b"NaN" in text or b"Infinity" in text) and non_finite_path(made) is not None:
            return None
        return made

    def _eval_set_cases(self) -> list[EvalCase]:
        summary = self.result().summary
        provenance = summary.provenance if summary is not None else None
        return provenance.eval_set.eval_cases if provenance is not None and provenance.eval_set is not None else []

    def _whole(self) -> EvalSetResult:
        """The whole file validated at once, as :func:`load_result_file` does: its errors name the field's path."""
        if self._failure is not None:
            raise ConfigError(str(self._failure))
        try:
            with no_collections():
                return _parsed_result(self._data, self.path)
        except ConfigError as exc:
            self._failure = exc
            raise


_T = TypeVar("_T")
_CASE_RESULT: TypeAdapter[EvalCaseResult] = TypeAdapter(EvalCaseResult)
_METRIC_LIST: TypeAdapter[list[EvalMetricResult]] = TypeAdapter(list[EvalMetricResult])
_RESULT: TypeAdapter[EvalSetResult] = TypeAdapter(EvalSetResult)


class _Parts(NamedTuple):
    shell: EvalSetResult
    runs: list[RunRow]
    spans: list[tuple[int, int]]
    """Where each case result's members are in the file (between its braces)."""
    metric_sources: list[bytes]
    """The JSON array of each case result's overall metric results (equal ones one object)."""
    eval_set: tuple[int, int] | object
    """Where the provenance's eval set is in the file, or its value when short (``None``: it records none)."""
    decisions: dict[str, CaseDecision]
    cases: tuple[int, int]
    """Where the array of case results is in the file."""


class _Unindexable(Exception):
    """The file is not in the form the index reads: it is loaded whole, which names any error."""


# The layout agenteval (and the reference framework) writes: two spaces per level. Each part cut
# out of the text is parsed, and so is what is left with a marker in each part's place, which must
# end up where the part belongs: a file laid out otherwise fails to, and is loaded whole.
_CASES = b'\n  "evalCaseResults": '
_CASE_SUMMARIES = (b'\n    "evalCaseSummaries": ', b"\n    ]")
_EVAL_SET = (b'\n      "evalSet": ', b"\n      }")
_METRICS = b'\n      "overallEvalMetricResults": ['
_MEMBER_END = b"\n      ]"
_TURNS = b'\n      "evalMetricResultPerInvocation": ['
_MARKER = "\x00agenteval index: {}"


def _indexed(data: bytes, path: Path) -> ResultIndex | None:
    """The index of a result file's ``data``, or ``None`` when it must be loaded whole."""
    try:
        return ResultIndex(path, data, _parts(data, f"{_WHAT} file {path}"))
    except (_Unindexable, ValueError, OverflowError):
        return None


def _parts(data: bytes, source: str) -> _Parts:
    at = data.find(_CASES)
    if at < 0:
        raise _Unindexable
    spans, cases_end = _element_spans(data, at + len(_CASES), 4)
    cases = (at + len(_CASES), cases_end)
    summaries = _value_span(data, _CASE_SUMMARIES, cases[1])
    eval_set = _value_span(data, _EVAL_SET, summaries[1] if summaries is not None else cases[1])
    cuts = [("cases", cases), ("summaries", summaries), ("eval set", eval_set)]
    document = _rest_document(data, cuts)
    shell = _shell(document, source)
    runs, metric_sources = _case_rows(data, spans)
    # Two cases taken for one (a case's last line indented otherwise, say) would be one row short.
    counted = _counted_cases(shell)
    if counted is not None and counted != len(runs):
        raise _Unindexable
    num_runs = (shell.summary.num_runs if shell.summary is not None else 0) or max(
        (row.run_id for row in runs), default=1
    )
    summary = document.get("summary")
    summary = summary if type(summary) is dict else {}
    decisions: dict[str, CaseDecision] = {}
    if num_runs > 1:
        listed = from_json(data[summaries[0] : summaries[1]]) if summaries else summary.get("evalCaseSummaries", [])
        decisions = _decisions(listed)
    provenance = summary.get("provenance")
    recorded_set = eval_set if eval_set is not None else provenance.get("evalSet") if type(provenance) is dict else None
    return _Parts(shell, runs, spans, metric_sources, recorded_set, decisions, cases)


def _counted_cases(shell: EvalSetResult) -> int | None:
    """How many case results the summary counts, run by run (``None``: it counts none)."""
    counts = [run.case_status_counts for run in shell.summary.run_summaries] if shell.summary is not None else []
    if not any(counts):
        return None
    return sum(count.passed + count.failed + count.not_evaluated for count in counts if count is not None)


def _value_span(data: bytes, layout: tuple[bytes, bytes], start: int) -> tuple[int, int] | None:
    """Where the value of the member ``layout`` names (its key line, its closing line) is, if it is a long one."""
    key, closing = layout
    at = data.find(key, start)
    if at < 0:
        return None
    begin = at + len(key)
    opening = data[begin : begin + 2]
    if opening not in (b"[\n", b"{\n"):
        return None
    end = data.find(closing, begin)
    if end < 0 or data[end + len(closing) - 1 : end + len(closing)] != opening[:1].translate(_CLOSERS):
        raise _Unindexable
    return begin, end + len(closing)


_CLOSERS = bytes.maketrans(b"[{", b"]}")


def _rest_document(data: bytes, cuts: list[tuple[str, tuple[int, int] | None]]) -> dict[str, Any]:
    """The document without the parts cut out; each part's marker must be found in its place."""
    pieces, position = [], 0
    for name, span in cuts:
        if span is not None:
            pieces += [data[position : span[0]], to_json(_MARKER.format(name))]
            position = span[1]
    document = from_json(b"".join([*pieces, data[position:]]), allow_inf_nan=False)
    if type(document) is not dict or document.get("evalCaseResults") != _MARKER.format("cases"):
        raise _Unindexable
    summary = document.get("summary")
    provenance = summary.get("provenance") if type(summary) is dict else None
    for name, span, holder, key in [
        ("summaries", cuts[1][1], summary, "evalCaseSummaries"),
        ("eval set", cuts[2][1], provenance, "evalSet"),
    ]:
        if span is not None and (type(holder) is not dict or holder.get(key) != _MARKER.format(name)):
            raise _Unindexable
    del document["evalCaseResults"]
    return document


def _shell(document: dict[str, Any], source: str) -> EvalSetResult:
    """The result's top-level fields and summary, validated, without the parts that grow with its cases."""
    summary = document.get("summary")
    if type(summary) is dict:
        summary = {key: value for key, value in summary.items() if key != "evalCaseSummaries"}
        provenance = summary.get("provenance")
        if type(provenance) is dict:
            summary["provenance"] = {key: value for key, value in provenance.items() if key != "evalSet"}
        document = {**document, "summary": summary}
    context = {"source": source, SHARED_VALUES: []}
    # A warning (a secret dropped from a criterion) is the whole load's to give, once.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shell = EvalSetResult.model_validate_json(to_json(document), strict=True, context=context)
    if caught:
        raise _Unindexable
    return shell


def _element_spans(data: bytes, begin: int, indent: int) -> tuple[list[tuple[int, int]], int]:
    """Where each object's members are (between its braces) in the array at ``begin``, and where it ends.

    The array's elements are on lines indented ``indent`` spaces; a layout that is not this one
    leaves a part that does not parse, which the caller finds.
    """
    opening = b"[\n" + b" " * indent + b"{"
    if data[begin : begin + len(opening)] != opening:
        raise _Unindexable
    spans, start = [], begin + len(opening)
    for found in _element_end(indent).finditer(data, start):
        spans.append((start, found.start()))
        if found.group(1)[0] == ord("\n"):
            return spans, found.end()
        start = found.end()
    raise _Unindexable


@functools.cache
def _element_end(indent: int) -> re.Pattern[bytes]:
    inner, outer = b" " * indent, b" " * (indent - 2)
    return re.compile(rb"\n" + inner + rb"\}(,\n" + inner + rb"\{|\n" + outer + rb"\])")


def _eval_set_case_ids(data: bytes, begin: int, end: int) -> list[str]:
    """The ids of an eval set's cases, from its text ``data[begin:end]``, each read without its conversation."""
    cases = _member_value(data, b"evalCases", 8, begin, end)
    if cases is None:
        return _case_ids(from_json(data[begin:end], allow_inf_nan=False)) or []
    rest = from_json(data[begin : cases[0]] + b"0" + data[cases[1] : end], allow_inf_nan=False)
    if type(rest) is not dict or rest.get("evalCases") != 0:
        raise _Unindexable
    spans, closing = _element_spans(data, cases[0], 10)
    if closing != cases[1]:
        raise _Unindexable
    ids = []
    for start, stop in spans:
        conversation = _member_value(data, b"conversation", 12, start, stop)
        case = _parsed_without(data, start, stop, [("conversation", conversation)])
        ids.append(_text(case, "evalId"))
    return ids


def _case_rows(data: bytes, spans: list[tuple[int, int]]) -> tuple[list[RunRow], list[bytes]]:
    """Each case result's row, and its metric results' JSON array (equal ones one object).

    A case's scalar members are parsed with ``0`` in place of its metric results and its turns, each
    of which must then be found in its place; the metric results are parsed once per distinct text,
    and the turns not at all (only searched for a reason, which the metrics table then reads).
    """
    rows: dict[tuple[bytes, bool | None], tuple[MetricRow, ...]] = {}
    sources: dict[bytes, bytes] = {}
    runs: list[RunRow] = []
    metric_sources: list[bytes] = []
    for start, end in spans:
        turns = _member_value(data, b"evalMetricResultPerInvocation", 6, start, end)
        metrics = _member_value(data, b"overallEvalMetricResults", 6, start, turns[0] if turns else end)
        case = _parsed_without(
            data, start, end, [("overallEvalMetricResults", metrics), ("evalMetricResultPerInvocation", turns)]
        )
        # A case whose turns hold no reason key (a pass, say) shows none; else the turns are read for it.
        reasons = False if turns is None else None if data.find(b'"reason"', *turns) >= 0 else True
        raw = sources.setdefault(text := data[metrics[0] : metrics[1]] if metrics else b"[]", text)
        made = rows.get((raw, reasons))
        if made is None:
            made = rows[(raw, reasons)] = tuple(_metric_row(metric, reasons) for metric in _parsed_list(raw))
        runs.append(_run_row(case, made))
        metric_sources.append(raw)
    return runs, metric_sources


def _member_value(data: bytes, name: bytes, indent: int, start: int, end: int) -> tuple[int, int] | None:
    """Where the array value of member ``name`` (its line indented ``indent``) is in ``data[start:end]``, if there.

    The array ends at the first closing line of that indent: in the layout, what it holds is indented more.
    """
    key = b"\n" + b" " * indent + b'"' + name + b'": ['
    at = data.find(key, start, end)
    if at < 0:
        return None
    begin, closing_line = at + len(key) - 1, b"\n" + b" " * indent + b"]"
    closing = data.find(closing_line, begin, end)
    if closing < 0:
        raise _Unindexable
    return begin, closing + len(closing_line)


def _parsed_without(
    data: bytes, start: int, end: int, cuts: list[tuple[str, tuple[int, int] | None]]
) -> dict[str, Any]:
    """The object whose members are ``data[start:end]``, parsed with ``0`` for each member's value cut out.

    ``cuts`` are ``(member, span)`` in text order; each ``0`` must be found as its member's value, and a
    member not found in the layout (``None``) must not be there at all: otherwise the layout is not this one.
    """
    pieces, position = [b"{"], start
    for _, span in cuts:
        if span is not None:
            pieces += [data[position : span[0]], b"0"]
            position = span[1]
    parsed = from_json(b"".join([*pieces, data[position:end], b"}"]), allow_inf_nan=False, cache_strings="all")
    if type(parsed) is not dict:
        raise _Unindexable
    for name, span in cuts:
        value = parsed.get(name, _ABSENT)
        if (value is not _ABSENT) if span is None else (type(value) is not int or value != 0):
            raise _Unindexable
    return parsed


_ABSENT = object()


def _parsed_list(raw: bytes) -> list[Any]:
    parsed = from_json(raw, allow_inf_nan=False, cache_strings="all")
    if type(parsed) is not list:
        raise _Unindexable
    return parsed


def _run_row(case: dict[str, Any], metrics: tuple[MetricRow, ...]) -> RunRow:
    get = case.get
    eval_set_id, eval_id, run_id = get("evalSetId", ""), get("evalId", ""), get("runId", 0)
    error_message, error_type = get("errorMessage", ""), get("errorType", "")
    session_id, user_id = get("sessionId", ""), get("userId", "")
    if (
        type(eval_set_id) is not str
        or type(eval_id) is not str
        or type(error_message) is not str
        or type(error_type) is not str
        or type(session_id) is not str
        or type(user_id) is not str
        or type(run_id) is not int
        or run_id not in _GO_INT
    ):
        raise _Unindexable
    return RunRow(
        eval_set_id,
        eval_id,
        run_id,
        _finite(get("score", 0.0)),
        _status(get("finalEvalStatus")),
        error_message,
        error_type,
        session_id,
        user_id,
        metrics,
    )


def _metric_row(metric: object, turn_reasons: bool | None) -> MetricRow:
    """A metric result's row; ``turn_reasons``: whether its case's turns hold reasons (``None``: they may)."""
    if type(metric) is not dict:
        raise _Unindexable
    get = metric.get
    name, details = get("metricName", ""), get("details")
    if type(name) is not str or (details is not None and type(details) is not dict):
        raise _Unindexable
    measure_name, measure = _first_measure(details)
    reason: str | None = "" if turn_reasons else None
    if turn_reasons is False:
        reason = _text(details, "reason") if details is not None else ""
    return MetricRow(
        metric_name=name,
        score=_finite(get("score", 0.0)),
        eval_status=_status(get("evalStatus")),
        threshold=_finite(get("threshold", 0.0)),
        measure_name=measure_name,
        measure=measure,
        reason=reason,
    )


def _first_measure(details: dict[str, Any] | None) -> tuple[str, float]:
    measures = details.get("measures", {}) if details is not None else {}
    if type(measures) is not dict:
        raise _Unindexable
    for name in measures:
        return name, _number(measures, name)
    return "", math.nan


def _case_ids(eval_set: object) -> list[str] | None:
    if eval_set is None:
        return None
    if type(eval_set) is not dict:
        raise _Unindexable
    cases = _list(eval_set, "evalCases")
    if any(type(case) is not dict for case in cases):
        raise _Unindexable
    return [_text(case, "evalId") for case in cases]


def _decisions(summaries: object) -> dict[str, CaseDecision]:
    if type(summaries) is not list:
        raise _Unindexable
    decisions: dict[str, CaseDecision] = {}
    for summary in summaries:
        if type(summary) is not dict:
            raise _Unindexable
        score = summary.get("overallScore")
        decisions[_text(summary, "evalId")] = CaseDecision(
            overall_status=_status(summary.get("overallStatus")),
            overall_score=None if score is None else _number(summary, "overallScore"),
            error_message=_text(summary, "errorMessage"),
        )
    return decisions


# What the index reads is checked as strict validation checks it; anything else is left to it.
_STATUSES = {status.value: status for status in EvalStatus}
_GO_INT = range(-(2**63), 2**63)


def _list(record: dict[str, Any], key: str) -> list[Any]:
    value = record.get(key, [])
    if type(value) is not list:
        raise _Unindexable
    return value


def _text(record: dict[str, Any], key: str) -> str:
    value = record.get(key, "")
    if type(value) is not str:
        raise _Unindexable
    return value


def _number(record: dict[str, Any], key: str) -> float:
    return _finite(record.get(key, 0.0))


def _finite(value: object) -> float:
    """A JSON number as a float (Go writes whole ones without ``.0``); anything else is not for the index."""
    if type(value) is int:
        value = float(value)  # an OverflowError is the caller's to handle
    if type(value) is not float or value - value != 0.0:
        raise _Unindexable
    return value


def _whole(record: dict[str, Any], key: str) -> int:
    value = record.get(key, 0)
    if type(value) is not int or value not in _GO_INT:
        raise _Unindexable
    return value


def _status(value: object) -> EvalStatus | None:
    if value is None:
        return None
    status = _STATUSES.get(value) if type(value) is str else None
    if status is None:
        raise _Unindexable
    return status
