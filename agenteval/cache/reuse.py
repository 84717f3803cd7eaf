"""Finished work an evaluation takes instead of doing it again: inferences and scores, by content.

:class:`WorkReuse` is what the service consults for each (run, case): an inference recorded for the
same case, run and agent, and each metric's score recorded for the same inference and metric
definition. Entries come from a :class:`~agenteval.cache.Cache` and, when an evaluation resumes an
interrupted one, from that evaluation's partial report (:meth:`WorkReuse.resuming`); new work is
written to the cache's journal as soon as it is done, before the case is reported finished, and to its
database in batches, so a process killed half-way, even with SIGKILL, loses only what was in flight.
:class:`ReuseLog` records what was taken, for the report.

Only successful work is kept: a failed inference runs again, and so does a metric that raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, TypeVar

from pydantic import ConfigDict, ValidationError

from agenteval._util.terminal import printable
from agenteval._util.trpc_json import CamelModel
from agenteval.cache.keys import definition_score_key, evaluator_version, inference_key, metric_definition
from agenteval.errors import AgentEvalError, ResumeWarning, warn_user
from agenteval.evalresult.inference import InferenceResult
from agenteval.evalresult.models import EvalCaseResult, EvalMetricResultDetails
from agenteval.evalset.models import EvalCase, EvalMode, Invocation
from agenteval.evalset.trace import ExecutionTrace
from agenteval.evaluators.base import EvaluateResult, MetricEvaluator, PerInvocationResult
from agenteval.metric.models import EvalMetric
from agenteval.status import EvalStatus

if TYPE_CHECKING:
    from agenteval.cache.journal import Journal
    from agenteval.cache.store import Cache

__all__ = ["CaseScores", "ReuseLog", "WorkReuse", "metric_definition_hash"]

_log = logging.getLogger("agenteval")

_FLUSH_SECONDS: Final = 0.5
_FLUSH_ENTRIES: Final = 500
"""New entries are written to the database together at most this long after the first of them, or once this
many wait: a transaction per entry would cost more than most agents' turns. Until then they are in the cache's
journal, which the next cache opened takes in when this process is killed."""

_E = TypeVar("_E", bound="_Entry")

_INFERENCE: Final = "inference"
_SCORE: Final = "score"


class _Entry(CamelModel):
    """An entry as the cache keeps it: every field required, no other, types exact (see :func:`_parsed`).

    A change to an entry model must bump :data:`agenteval.cache.keys.ENTRY_FORMAT`: entries of the old
    shape are then never looked up.
    """

    model_config = ConfigDict(extra="forbid")


class _InferenceEntry(_Entry):
    """What the agent did in one run of one case, as the cache keeps it."""

    session_id: str
    user_id: str
    inferences: list[Invocation]
    expected_inferences: list[Invocation]
    execution_traces: list[ExecutionTrace | None]


class _TurnScore(_Entry):
    score: float
    status: EvalStatus
    details: EvalMetricResultDetails | None


class _ScoreEntry(_Entry):
    """What an evaluator returned for one metric of one inference, as the cache keeps it."""

    overall_score: float
    overall_status: EvalStatus
    turns: list[_TurnScore]


@dataclass(slots=True)
class ReuseLog:
    """What an evaluation took instead of doing: (run, case) inferences and (run, case, metric) scores."""

    inferences: set[tuple[int, str]] = field(default_factory=set)
    scores: set[tuple[int, str, str]] = field(default_factory=set)


class CaseScores:
    """The scores of one inference found for its metrics, and where new ones go."""

    def __init__(self, reuse: WorkReuse, run_id: int, eval_case_id: str, keys: dict[str, str], found: dict[str, str]):
        self._reuse = reuse
        self._run_id = run_id
        self._case_id = eval_case_id
        self._keys = keys
        self._found = found
        self._new: dict[str, str] = {}

    def get(self, metric: EvalMetric) -> EvaluateResult | None:
        """The recorded result of ``metric`` (as configured, before the case's rubrics), if any."""
        text = self._found.get(metric.metric_name)
        if text is None:
            return None
        entry = _parsed(_ScoreEntry, text)
        if entry is None:
            return None
        self._reuse.log.scores.add((self._run_id, self._case_id, metric.metric_name))
        return EvaluateResult(
            overall_score=entry.overall_score,
            overall_status=entry.overall_status,
            per_invocation_results=[
                PerInvocationResult(score=turn.score, status=turn.status, details=turn.details) for turn in entry.turns
            ],
        )

    def put(self, metric: EvalMetric, result: EvaluateResult) -> None:
        """Keep the result ``metric``'s evaluator returned; written by :meth:`flush`."""
        key = self._keys.get(metric.metric_name)
        if key is not None:
            self._new[key] = _score_text(result)

    def flush(self) -> None:
        """Write the new results to the cache, in one transaction."""
        if self._new:
            self._reuse.write(_SCORE, self._new)
            self._new = {}


class WorkReuse:
    """Inferences and scores an evaluation takes instead of computing them, and keeps when it computes them.

    Args:
        cache: Where entries are read and new work is written (``None``: only ``seeded`` entries).
        agent: :func:`~agenteval.cache.agent_identity` of what answers the cases (the agent, with the
            user simulator and expected runner that take part in inference and the callbacks that run
            before it).
        scoring: Given a metric and its evaluator, a hash of the settings besides the metric that change its
            scores (the judge override when the evaluator may ask a judge, the named compares and tokenizers
            the metric's criterion names, the callbacks that run between the agent and the scoring).
        case_hashes: The content hash of each case evaluated, by case id.
        evaluators: The evaluator of each metric, by metric name.
    """

    def __init__(
        self,
        cache: Cache | None,
        *,
        agent: str,
        scoring: Callable[[EvalMetric, MetricEvaluator], str],
        case_hashes: Mapping[str, str],
        evaluators: Mapping[str, MetricEvaluator],
    ) -> None:
        self.log = ReuseLog()
        self.location = str(cache.path) if cache is not None else ""
        self._cache = cache
        self._agent = agent
        self._case_hashes = dict(case_hashes)
        self._definitions: dict[str, tuple[EvalMetric, str]] = {}
        self._scoring = scoring
        self._evaluators = dict(evaluators)
        # Entries read ahead (prefetch) or taken from a resumed report; a key asked for ahead and not
        # found is known to be missing.
        self._known: dict[tuple[str, str], str | None] = {}
        self._inference_hashes: dict[tuple[int, str], str] = {}
        self._fresh: set[tuple[int, str]] = set()
        self._inference_keys: dict[tuple[int, str], str] = {}
        self._resumable: set[str] = set()
        self.read_from_cache = False
        """Whether any entry came from the cache (rather than from a resumed report)."""
        self._pending: dict[str, dict[str, str]] = {_INFERENCE: {}, _SCORE: {}}
        self._flushed_at = time.monotonic()
        self._flush_timer: asyncio.TimerHandle | None = None
        self._journal: Journal | None = None
        self._write_failed = False

    def prefetch(self, run_ids: Sequence[int], cases: Sequence[EvalCase]) -> None:
        """Read every entry the evaluation of ``cases`` in ``run_ids`` may take, in two queries.

        One query per entry would each be a transaction (an entry's last use is written when it is
        read), several times the cost of reusing the entry.
        """
        keys = {
            (run_id, case.eval_id): key
            for run_id in run_ids
            for case in cases
            if (key := self._inference_key(run_id, case)) is not None
        }
        self._inference_keys.update(keys)
        inferences = self._read(_INFERENCE, list(keys.values()))
        score_keys: list[str] = []
        for key in keys.values():
            self._known.setdefault((_INFERENCE, key), inferences.get(key))
            text = inferences.get(key)
            if text is not None:
                inference_hash = _text_hash(key, text)
                score_keys += [
                    definition_score_key(inference_hash, definition) for _, definition in self._definitions.values()
                ]
        scores = self._read(_SCORE, score_keys)
        for key in score_keys:
            self._known.setdefault((_SCORE, key), scores.get(key))

    def inference(self, run_id: int, case: EvalCase) -> InferenceResult | None:
        """A successful inference recorded for ``case`` in run ``run_id`` by this agent, if any.

        Its app, eval set and run are left for the caller to set; trace-mode cases, which replay
        recorded turns, are never looked up.
        """
        key = self._inference_key(run_id, case)
        if key is None:
            return None
        text = self._read(_INFERENCE, [key]).get(key)
        if text is None:
            return None
        entry = _parsed(_InferenceEntry, text)
        if entry is None:
            return None
        self._inference_hashes[(run_id, case.eval_id)] = _text_hash(key, text)
        self.log.inferences.add((run_id, case.eval_id))
        return InferenceResult(
            eval_case_id=case.eval_id,
            eval_mode=case.eval_mode,
            session_id=entry.session_id,
            user_id=entry.user_id,
            inferences=entry.inferences,
            expected_inferences=entry.expected_inferences,
            execution_traces=entry.execution_traces,
            status=EvalStatus.PASSED,
        )

    def inferred(self, run_id: int, case: EvalCase, result: InferenceResult) -> None:
        """Keep a successful inference, so that its scores can be found and a later evaluation takes it."""
        key = self._inference_key(run_id, case)
        if key is None or result.status is not EvalStatus.PASSED:
            return
        text = _inference_text(result)
        self._inference_hashes[(run_id, case.eval_id)] = _text_hash(key, text)
        self._fresh.add((run_id, case.eval_id))
        self.write(_INFERENCE, {key: text})

    def scores(self, run_id: int, inference: InferenceResult, metrics: Sequence[EvalMetric]) -> CaseScores:
        """The recorded scores of a successful inference for ``metrics`` (one read for all of them)."""
        case_id = inference.eval_case_id
        inference_hash = self._inference_hashes.get((run_id, case_id))
        if inference_hash is None:
            # A trace-mode case: what is scored is the case's own recorded turns (its session is new each time).
            text = _inference_text(inference.model_copy(update={"session_id": ""}))
            inference_hash = _text_hash(self._case_hashes.get(case_id, case_id), text)
        keys = {
            metric.metric_name: definition_score_key(inference_hash, definition)
            for metric in metrics
            if (definition := self._definition(metric)) is not None
        }
        # A new inference has a new session: nothing can have scored it yet.
        found = {} if (run_id, case_id) in self._fresh else self._read(_SCORE, list(keys.values()))
        by_name = {name: found[key] for name, key in keys.items() if key in found}
        return CaseScores(self, run_id, case_id, keys, by_name)

    def resuming(
        self,
        partial: Sequence[Sequence[InferenceResult]],
        cases: Sequence[EvalCaseResult],
        metrics: Sequence[EvalMetric],
        definitions: Mapping[str, str],
    ) -> None:
        """Take the finished work of an interrupted evaluation: its successful inferences and their scores.

        Args:
            partial: The partial report's inferences, per run (index 0 is run 1).
            cases: The partial report's case results.
            metrics: The metrics the partial report was scored with.
            definitions: Their :func:`metric_definition_hash` then, by name, as its provenance records them:
                a metric's scores are taken only when its hash is the same now. Empty for a report saved
                before they were recorded: its scores are then taken when the metric's configuration is
                the same, and a warning says what is not compared.
        """
        self._resumable = self._unchanged_metrics(metrics, definitions)
        scored = {(case.run_id or 1, case.eval_id): case for case in cases}
        for run_id, inferences in enumerate(partial, start=1):
            for inference in inferences:
                case_hash = self._case_hashes.get(inference.eval_case_id)
                if inference.status is not EvalStatus.PASSED or case_hash is None:
                    continue
                key = inference_key(case_hash, run_id, self._agent)
                text = _inference_text(inference)
                self._known[(_INFERENCE, key)] = text
                case = scored.get((run_id, inference.eval_case_id))
                if case is not None:
                    self._seed_scores(_text_hash(key, text), case)

    def _unchanged_metrics(self, metrics: Sequence[EvalMetric], definitions: Mapping[str, str]) -> set[str]:
        """The names of the metrics defined now as they were when the partial report was scored."""
        if definitions:
            return {name for name, (_, definition) in self._definitions.items() if definitions.get(name) == definition}
        then = {metric.metric_name: metric.to_dict() for metric in metrics}
        unchanged = {name for name, (metric, _) in self._definitions.items() if then.get(name) == metric.to_dict()}
        if unchanged:
            warn_user(
                "resume: the report does not record its metrics' definition hashes (an older agenteval saved it), so"
                " its finished scores are taken when the metric's configuration is unchanged; judge= and the"
                " evaluators' code are not compared: if either changed since, run again without resume=",
                ResumeWarning,
            )
        return unchanged

    def write(self, kind: str, entries: dict[str, str]) -> None:
        """Keep entries for the cache: in its journal at once, in its database with others later.

        The database is written every :data:`_FLUSH_SECONDS` or :data:`_FLUSH_ENTRIES`; the journal, before
        this returns, so that the case is reported finished only once its work survives a SIGKILL.
        """
        if self._cache is None or self._write_failed:
            return
        try:
            if self._journal is None:
                self._journal = self._cache.journal()
            if self._journal is not None:
                self._journal.append(kind, entries)
        except AgentEvalError as exc:
            self._give_up_writing(exc)
            return
        self._pending[kind].update(entries)
        waiting = sum(len(pending) for pending in self._pending.values())
        if waiting >= _FLUSH_ENTRIES or time.monotonic() - self._flushed_at >= _FLUSH_SECONDS:
            self.flush()
        elif self._flush_timer is None:
            # Written in time even when no other case finishes for a while, so that the journal stays short
            # and other processes sharing the cache see the work soon.
            with contextlib.suppress(RuntimeError):  # no loop in this thread: the next write or the end flushes
                self._flush_timer = asyncio.get_running_loop().call_later(_FLUSH_SECONDS, self.flush)

    def flush(self) -> None:
        """Write the entries kept so far, one transaction per kind; a failure is logged once and the work goes on."""
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        self._flushed_at = time.monotonic()
        pending, self._pending = self._pending, {_INFERENCE: {}, _SCORE: {}}
        journal, self._journal = self._journal, None
        if self._cache is None or self._write_failed:
            return
        try:
            for kind, entries in pending.items():
                self._cache.put_many(kind, entries)
        except AgentEvalError as exc:
            if journal is not None:
                journal.close()  # kept: the next cache opened takes its entries in, should the cache recover
            self._give_up_writing(exc)
            return
        if journal is not None:
            journal.discard()

    def _give_up_writing(self, exc: AgentEvalError) -> None:
        """Stop writing to a cache that failed a write, saying so once."""
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        self._write_failed = True
        _log.warning(
            "the cache at %s cannot be written, so this evaluation's work is not kept: %s",
            printable(self.location),
            printable(str(exc)),
        )

    def _seed_scores(self, inference_hash: str, case: EvalCaseResult) -> None:
        turns = case.eval_metric_result_per_invocation
        for overall in case.overall_eval_metric_results:
            metric = self._metric_named(overall.metric_name) if overall.metric_name in self._resumable else None
            definition = self._definition(metric) if metric is not None else None
            per_turn = [
                next((result for result in turn.eval_metric_results if result.metric_name == overall.metric_name), None)
                for turn in turns
            ]
            if definition is None or any(result is None or result.eval_status is None for result in per_turn):
                continue
            entry = _ScoreEntry(
                overall_score=overall.score or 0.0,
                overall_status=overall.eval_status or EvalStatus.NOT_EVALUATED,
                turns=[
                    _TurnScore(score=result.score or 0.0, status=result.eval_status, details=result.details)
                    for result in per_turn
                    if result is not None and result.eval_status is not None
                ],
            )
            self._known[(_SCORE, definition_score_key(inference_hash, definition))] = entry.to_json(indent=None)

    def _metric_named(self, name: str) -> EvalMetric | None:
        known = self._definitions.get(name)
        return known[0] if known is not None else None

    def remember_metrics(self, metrics: Sequence[EvalMetric], known: Mapping[str, str]) -> None:
        """Work out each metric's definition hash once (before :meth:`resuming` and scoring).

        Args:
            metrics: The metrics of the evaluation.
            known: Definition hashes already worked out (:func:`metric_definition_hash`), by metric name.
        """
        for metric in metrics:
            if metric.metric_name in known:
                self._definitions[metric.metric_name] = (metric, known[metric.metric_name])
            else:
                self._definition(metric)

    def _definition(self, metric: EvalMetric) -> str | None:
        known = self._definitions.get(metric.metric_name)
        if known is not None and known[0] is metric:
            return known[1]
        evaluator = self._evaluators.get(metric.metric_name)
        if evaluator is None:
            return None
        definition = metric_definition_hash(metric, evaluator, self._scoring(metric, evaluator))
        self._definitions[metric.metric_name] = (metric, definition)
        return definition

    def _inference_key(self, run_id: int, case: EvalCase) -> str | None:
        known = self._inference_keys.get((run_id, case.eval_id))
        if known is not None:
            return known
        case_hash = self._case_hashes.get(case.eval_id)
        if case_hash is None or case.eval_mode == EvalMode.TRACE:
            return None
        return inference_key(case_hash, run_id, self._agent)

    def _read(self, kind: str, keys: list[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        wanted: list[str] = []
        for key in keys:
            if (kind, key) not in self._known:
                wanted.append(key)
            elif (text := self._known[(kind, key)]) is not None:
                found[key] = text
        if self._cache is not None and wanted:
            try:
                from_cache = self._cache.get_many(kind, wanted)
            except AgentEvalError as exc:
                _log.warning("the cache at %s cannot be read: %s", printable(self.location), printable(str(exc)))
            else:
                found.update(from_cache)
                self.read_from_cache = self.read_from_cache or bool(from_cache)
        return found


def _parsed(model: type[_E], text: str) -> _E | None:
    """The entry ``text`` holds, or ``None`` (a miss: the work is done again and replaces it) for another shape.

    Strictly: an entry of the other kind, or a damaged one, must not be taken for an empty one.
    """
    try:
        return model.from_json(text)
    except ValidationError:
        return None


def metric_definition_hash(metric: EvalMetric, evaluator: MetricEvaluator, scoring: str) -> str:
    """What a metric's score keys hold of it: its :func:`~agenteval.cache.keys.metric_definition` with its evaluator.

    Args:
        metric: The metric, as configured (before a case's rubrics).
        evaluator: Its evaluator: its code and settings count (:func:`~agenteval.cache.keys.evaluator_version`).
        scoring: A hash of what else decides the metric's scores (a judge override, the named compares it uses).
    """
    version = hashlib.sha256(f"{evaluator_version(evaluator)}\n{scoring}".encode()).hexdigest()
    return metric_definition(metric, version)


def _inference_text(result: InferenceResult) -> str:
    return _InferenceEntry(
        session_id=result.session_id,
        user_id=result.user_id,
        inferences=result.inferences,
        expected_inferences=result.expected_inferences,
        execution_traces=result.execution_traces,
    ).to_json(indent=None)


def _score_text(result: EvaluateResult) -> str:
    return _ScoreEntry(
        overall_score=result.overall_score,
        overall_status=result.overall_status,
        turns=[
            _TurnScore(score=turn.score, status=turn.status, details=turn.details)
            for turn in result.per_invocation_results
        ],
    ).to_json(indent=None)


def _text_hash(key: str, text: str) -> str:
    """What a score is of: the inference's key (the case, run and agent) and what the agent did."""
    digest = hashlib.sha256(key.encode())
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()
