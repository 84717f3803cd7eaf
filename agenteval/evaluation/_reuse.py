"""How ``Evaluator.evaluate`` finds finished work: the ``cache=`` option and ``resume=``.

It resolves the option to a :class:`~agenteval.cache.Cache`, works out who answers the cases and what
else decides their scores (the keys of :mod:`agenteval.cache.keys`), and takes the finished work of an
interrupted evaluation when one is resumed. With a cache, it says once what the agent's identity cannot
see, and, when the evaluation ends, what of the agent's data changed while it ran
(:class:`~agenteval.errors.CacheIdentityWarning`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from agenteval.analysis.report import EvaluationReport
from agenteval.cache.identity import AgentIdentity, describe_agent, warn_changed, warn_unseen
from agenteval.cache.keys import settings_hash, value_hash
from agenteval.cache.reuse import WorkReuse, metric_definition_hash
from agenteval.cache.store import Cache
from agenteval.errors import ConfigError, NotFoundError
from agenteval.evalresult.provenance import ReusedWork
from agenteval.evalset.identity import changed_cases
from agenteval.evalset.models import EvalSet
from agenteval.evaluators.base import MetricEvaluator, TurnMatchingEvaluator
from agenteval.evaluators.llm.base import LLMJudgeEvaluator
from agenteval.metric.models import EvalMetric
from agenteval.metric.registry import MetricRegistry, active_metric_registry
from agenteval.service.callbacks import Callbacks
from agenteval.service.options import ServiceOptions

__all__ = [
    "DEFAULT_CACHE_DIRECTORY",
    "CacheOption",
    "Resumed",
    "check_cache_option",
    "metric_definitions",
    "open_cache",
    "reused_work",
    "work_reuse",
]

DEFAULT_CACHE_DIRECTORY: Final = ".agenteval-cache"
"""Where ``cache=True`` keeps entries: this directory in the working directory."""

CacheOption = bool | str | os.PathLike[str] | Cache | None
"""``cache=``: off (``None``, ``False``), :data:`DEFAULT_CACHE_DIRECTORY` (``True``), a directory, or a cache."""


def check_cache_option(value: object) -> None:
    """Refuse a ``cache=`` value that is none of :data:`CacheOption`."""
    if not isinstance(value, bool | str | os.PathLike | Cache) and value is not None:
        raise ConfigError(
            f"cache must be True, False, a directory or an ae.Cache, got {type(value).__name__} {value!r:.60}"
        )
    if isinstance(value, str) and not value:
        raise ConfigError("cache must be True, False, a directory or an ae.Cache, got an empty string")


def open_cache(value: CacheOption, opened: dict[Path, Cache]) -> Cache | None:
    """The cache ``cache=`` names, opened once per directory and kept in ``opened``."""
    if value is None or value is False:
        return None
    if isinstance(value, Cache):
        return value
    path = Path(DEFAULT_CACHE_DIRECTORY if value is True else os.fspath(value)).expanduser().resolve()
    cache = opened.get(path)
    if cache is None:
        cache = opened[path] = Cache(path)
    return cache


def work_reuse(
    cache: Cache | None,
    options: ServiceOptions,
    agent: object,
    identity: AgentIdentity,
    hashes: Mapping[str, str],
    metrics: Sequence[EvalMetric],
    definitions: Mapping[str, str],
) -> WorkReuse:
    """What the service consults for finished work of this evaluation (cases as evaluated, session inputs filled).

    ``agent`` is what answers the cases (:func:`agenteval.runner.function.plain_agent`) and ``identity`` its
    :func:`~agenteval.cache.identity.describe_agent`, made once per evaluation; ``hashes`` the
    :func:`~agenteval.evalset.identity.case_hashes` of the eval set's cases (as evaluated, session inputs filled);
    ``definitions`` the :func:`metric_definitions` the provenance holds, so the metrics are not hashed twice.
    """
    evaluators = _evaluators(options, metrics)
    if cache is not None:
        warn_unseen(identity)
    reuse = _AgentWorkReuse(
        cache,
        agent=_answering(options, identity),
        scoring=_scoring(options),
        case_hashes=hashes,
        evaluators=evaluators,
        answering=agent,
        identity=identity,
    )
    reuse.remember_metrics(metrics, definitions)
    return reuse


def metric_definitions(options: ServiceOptions, metrics: Sequence[EvalMetric]) -> dict[str, str]:
    """Each metric's definition hash, by name, as the cache's score keys hold it: for the provenance.

    ``resume=`` takes a finished score only when its metric's hash is the same then and now. Made before
    agenteval adds its own callbacks (progress, recording) to ``options``, as :func:`work_reuse` is.
    """
    evaluators = _evaluators(options, metrics)
    scoring = _scoring(options)
    return {
        metric.metric_name: metric_definition_hash(metric, evaluator, scoring(metric, evaluator))
        for metric in metrics
        if (evaluator := evaluators.get(metric.metric_name)) is not None
    }


class _AgentWorkReuse(WorkReuse):
    """:class:`WorkReuse` that knows the agent, to tell what of its data changed while it ran."""

    def __init__(self, cache: Cache | None, *, answering: object, identity: AgentIdentity, **keys: Any) -> None:
        super().__init__(cache, **keys)
        self._answering = answering
        self._identity = identity
        self._checked = cache is None

    def check_agent(self) -> None:
        """With a cache, warn once about the agent's data that changed since the evaluation started."""
        if self._checked:
            return
        self._checked = True
        warn_changed(self._identity, describe_agent(self._answering, self._identity.version))


class Resumed:
    """An interrupted evaluation being resumed: its report, and the id the final result takes from it."""

    def __init__(self, report: EvaluationReport) -> None:
        self.report = report
        self.result_id = report.result.eval_set_result_id

    @classmethod
    async def of(cls, partial: object, options_result_manager: object, app_name: str) -> Resumed:
        """``resume=``: a report (``exc.report`` of an interrupted call) or the id of a stored result."""
        if isinstance(partial, EvaluationReport):
            return cls(partial)
        if not isinstance(partial, str) or not partial:
            raise ConfigError(
                "resume must be the report an interrupted evaluation left (exc.report) or the id of its saved result,"
                f" got {type(partial).__name__} {partial!r:.60}"
            )
        try:
            report = await EvaluationReport.aload(options_result_manager, app_name, partial)  # type: ignore[arg-type]
        except NotFoundError:
            raise ConfigError(
                f"resume={partial!r}: no such result of app {app_name!r} in the result store; give the id the"
                " interrupted evaluation printed, or its report (exc.report)"
            ) from None
        return cls(report)

    def take(self, reuse: WorkReuse, eval_set: EvalSet, eval_set_hash: str) -> None:
        """Give ``reuse`` the finished work of the cases whose content is unchanged.

        Raises:
            ConfigError: The report is of another eval set, or it holds no eval set and the eval set changed.
        """
        report = self.report
        if report.eval_set_id != eval_set.eval_set_id:
            raise ConfigError(f"resume: the report is of eval set {report.eval_set_id!r}, not {eval_set.eval_set_id!r}")
        unchanged = {case.eval_id for case in eval_set.eval_cases}
        if report.eval_set is not None:
            unchanged -= set(changed_cases(report.eval_set.eval_cases, eval_set.eval_cases))
        elif report.provenance is None or report.provenance.eval_set_hash != eval_set_hash:
            raise ConfigError(
                f"resume: eval set {eval_set.eval_set_id!r} changed since result {self.result_id!r} was saved, and the"
                " result does not hold the cases it ran; resume with the report itself (exc.report), or run again"
            )
        inferences = [[item for item in run if item.eval_case_id in unchanged] for run in report.inference_results]
        definitions = report.provenance.metric_definitions if report.provenance is not None else {}
        reuse.resuming(inferences, report.result.eval_case_results, report.eval_metrics, definitions)


def reused_work(reuse: WorkReuse, resumed: Resumed | None) -> ReusedWork | None:
    """What the evaluation took, for its provenance (``None`` when it took nothing).

    Called when the evaluation ends: it also says what of the agent's data changed while it ran.
    """
    if isinstance(reuse, _AgentWorkReuse):
        reuse.check_agent()
    log = reuse.log
    if not log.inferences and not log.scores:
        return None
    sources = []
    if reuse.read_from_cache:
        sources.append("cache")
    if resumed is not None:
        sources.append(f"resume of {resumed.result_id or 'an unsaved report'}")
    return ReusedWork(sources=sources, inferences=sorted(log.inferences), scores=sorted(log.scores))


def _evaluators(options: ServiceOptions, metrics: Sequence[EvalMetric]) -> dict[str, MetricEvaluator]:
    """The registered evaluator of each metric, by metric name (none for a metric whose evaluator is not)."""
    return {
        metric.metric_name: options.registry.get(metric.evaluator)
        for metric in metrics
        if metric.evaluator in options.registry
    }


def _answering(options: ServiceOptions, identity: AgentIdentity) -> str:
    """Who answers the cases: the agent (or what makes it), and the simulator and expected runner that take part.

    And the callbacks that run before the agent: what they put in the context is what it reads.
    """
    helpers = (options.user_simulator, options.expected_runner, options.tool_mock_model)
    return value_hash(
        {
            "agent": identity.digest,
            "helpers": [settings_hash(helper) if helper is not None else None for helper in helpers],
            "max simulated turns": options.max_simulated_turns,
            # Replayed tool results change what the agent sees.
            "tool replay": value_hash(vars(options.tool_replay)) if options.tool_replay is not None else None,
            "callbacks": _callbacks(options.callbacks, _BEFORE_THE_AGENT),
        }
    )


def _scoring(options: ServiceOptions) -> Callable[[EvalMetric, MetricEvaluator], str]:
    """What decides a metric's scores besides the metric and its evaluator, as a hash per metric.

    The judge override counts for a metric only if its evaluator may ask a judge, and of the named compares and
    tokenizers only those its criterion names (all of them for an evaluator whose lookups cannot be told): a
    changed matcher never scores the judged metrics again, nor a changed judge the others. The callbacks that can
    change the result scored or what the evaluators read in the context count for every metric.
    """
    judge = options.judge
    judging = value_hash(
        {"judge": settings_hash(judge) if judge is not None else None, "judge samples": options.judge_num_samples}
    )
    registry = options.metric_registry or active_metric_registry()
    callbacks = _callbacks(options.callbacks, _BEFORE_SCORING)

    def scoring(metric: EvalMetric, evaluator: MetricEvaluator) -> str:
        return value_hash(
            {
                "judge": judging if _may_judge(evaluator) else None,
                "named compares": _registry_entries(registry, _looked_up_names(metric, evaluator)),
                "callbacks": callbacks,
            }
        )

    return scoring


def _builtin(evaluator: MetricEvaluator) -> bool:
    """Whether the evaluator is one of agenteval's matchers or judges, whose lookups are known.

    Not a subclass of the user's, nor a plain function (its wrapper is agenteval's, its code is not).
    """
    return isinstance(evaluator, TurnMatchingEvaluator | LLMJudgeEvaluator) and _in_agenteval(type(evaluator))


def _may_judge(evaluator: MetricEvaluator) -> bool:
    """Whether the evaluator may ask the judge override: all but agenteval's deterministic matchers."""
    return not (_builtin(evaluator) and isinstance(evaluator, TurnMatchingEvaluator))


def _looked_up_names(metric: EvalMetric, evaluator: MetricEvaluator) -> frozenset[str] | None:
    """The compare and tokenizer names the evaluator may look up for ``metric``; ``None``: any."""
    if not _builtin(evaluator):
        return None
    if metric.criterion is None:
        return frozenset()
    return frozenset(_names_in(metric.criterion.to_dict()))


_NAME_KEYS: Final = ("compareName", "tokenizerName")
"""The criterion keys that name a registry entry, at whatever depth."""


def _names_in(value: object) -> Iterator[str]:
    """Every ``compareName`` and ``tokenizerName`` in a criterion's JSON form."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key in _NAME_KEYS and isinstance(item, str):
                yield item
            else:
                yield from _names_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _names_in(item)


def _registry_entries(registry: MetricRegistry, names: frozenset[str] | None) -> dict[str, object]:
    """The registry's tables with the entries of ``names`` only (``None``: every entry)."""
    tables = vars(registry)
    if names is None:
        return dict(tables)
    return {
        table: {name: entry for name, entry in entries.items() if name in names}
        if isinstance(entries, dict)
        else entries
        for table, entries in tables.items()
    }


_BEFORE_THE_AGENT: Final = ("before_inference_set", "before_inference_case")
"""The callbacks whose context the agent runs under."""

_BEFORE_SCORING: Final = ("after_inference_case", "before_evaluate_set", "before_evaluate_case")
"""The callbacks that run between the agent and the case's scoring: they may change the result scored, and the
evaluators run under their context. The others run after what they could change (``after_evaluate_*``) or
alongside it (``after_inference_set``, while cases are scored), and their contexts reach only later ``after_*``
callbacks."""


def _callbacks(callbacks: Callbacks, points: tuple[str, ...]) -> str:
    """A hash of the code and settings of the callbacks of ``points``, counted as the agent's code is.

    The state they write counts by its type, so a callback that counts or logs keeps the hash; agenteval's
    own callbacks only watch, and do not count.
    """
    chains: dict[str, list[object]] = {
        point: [named.callback for named in getattr(callbacks, point) if not _in_agenteval(named.callback)]
        for point in points
    }
    return value_hash(chains)


def _in_agenteval(obj: object) -> bool:
    """Whether a function, class or object is agenteval's own (a progress display, a built-in evaluator's class)."""
    module = getattr(obj, "__module__", None)
    return isinstance(module, str) and (module == "agenteval" or module.startswith("agenteval."))
