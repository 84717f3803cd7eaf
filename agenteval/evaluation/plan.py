"""The plan of one evaluation: what it will run and how, decided and checked once, before any case runs.

:func:`plan_evaluation` reads the eval set and the metrics, chooses the cases, checks everything that can be
checked up front, walks the agent's code once (its hash is recorded and keys the cache), describes the
provenance, and opens the cache, resume and cassettes. The runs and the report then read the frozen
:class:`EvaluationPlan`; none of them chooses a case or checks a metric again.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from agenteval._util.callable_names import agent_label, did_you_mean, qualified_name
from agenteval._util.files import refuse_unknown_fields, unknown_fields_refused
from agenteval._util.trpc_json import limited_depth
from agenteval.analysis.report import EvaluationReport, ReportPlan
from agenteval.cache.cassettes import Cassettes
from agenteval.cache.identity import AgentIdentity, describe_agent
from agenteval.cache.reuse import WorkReuse
from agenteval.cache.store import Cache
from agenteval.errors import ConfigError, NoMetricsWarning, NotFoundError, rewrap, warn_user
from agenteval.evalresult._prepare import check_new_result_id, value_depth_limit
from agenteval.evalresult.provenance import Provenance
from agenteval.evalset.identity import case_hashes
from agenteval.evalset.models import EvalCase, EvalMode, EvalSet, SessionInput
from agenteval.evaluation._reuse import Resumed, metric_definitions, open_cache, reused_work, work_reuse
from agenteval.evaluation.options import EvaluationOptions
from agenteval.metric.manager import all_metrics
from agenteval.metric.models import EvalMetric
from agenteval.runner.base import Runner
from agenteval.runner.function import plain_agent
from agenteval.service._metric_checks import check_metrics, check_registered

__all__ = ["EvaluationPlan", "agent_name", "describe", "metric_list", "plan_evaluation", "strict_reading"]


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationPlan:
    """What one evaluation runs and how: built once by :func:`plan_evaluation`, read by the runs and the report.

    Attributes:
        app_name: The app.
        options: The evaluation's options, per-call overrides applied.
        eval_set: The eval set as evaluated (a case without a session input has the default one).
        cases: The cases to run, in eval-set order.
        metrics: The metrics, checked.
        provenance: What produced the evaluation, described before the runs.
        reuse: Work already done that the runs take (``cache=``, ``resume=``), if any.
        resumed: The partial result this evaluation carries on, if any.
        cassettes: Where each case-run's HTTP traffic is recorded and replayed, if anywhere.
        depth_limit: The deepest JSON the result store takes (``None``: no limit).
        started: When the evaluation began (``time.perf_counter()``).
    """

    app_name: str
    options: EvaluationOptions
    eval_set: EvalSet
    cases: list[EvalCase]
    metrics: list[EvalMetric]
    provenance: Provenance
    reuse: WorkReuse | None
    resumed: Resumed | None
    cassettes: Cassettes | None
    depth_limit: int | None
    started: float

    def report_plan(self, *, num_runs: int | None = None, provenance: Provenance | None = None) -> ReportPlan:
        """What the report is built from (``num_runs`` and ``provenance`` for a partial report)."""
        return ReportPlan(
            app_name=self.app_name,
            eval_set_id=self.eval_set.eval_set_id,
            eval_set=self.eval_set,
            metrics=self.metrics,
            num_runs=self.options.num_runs if num_runs is None else num_runs,
            aggregator=self.options.aggregator,
            provenance=provenance or self.provenance,
        )

    def provenance_after_runs(self) -> Provenance:
        """The provenance saying what the evaluation took from finished work, once the runs ended."""
        reused = reused_work(self.reuse, self.resumed) if self.reuse is not None else None
        return self.provenance.model_copy(update={"reused": reused}) if reused is not None else self.provenance


async def plan_evaluation(
    app_name: str,
    runner: Runner | None,
    eval_set: str | EvalSet,
    metrics: Sequence[EvalMetric] | None,
    resume: EvaluationReport | str | None,
    options: EvaluationOptions,
    caches: dict[Path, Cache],
) -> EvaluationPlan:
    """Decide and check what an evaluation will do, in the order its errors are reported.

    Raises:
        ConfigError: Bad options, eval set, metrics or case selection.
        NotFoundError: The eval set does not exist.
    """
    started = time.perf_counter()
    started_at = time.time()
    if not isinstance(eval_set, str | EvalSet):
        raise ConfigError(
            f"eval_set must be an eval-set id or an ae.EvalSet, got {type(eval_set).__name__}"
            " (for a list of cases, ae.EvalSet.of('my-set', cases))"
        )
    if isinstance(eval_set, EvalSet):
        if not eval_set.eval_set_id:
            raise ConfigError("the eval set has no evalSetId: give it one to evaluate it")
        eval_set_id, ordering = eval_set.eval_set_id, eval_set.deep_copy()
    else:
        eval_set_id, ordering = eval_set, await _stored_eval_set(app_name, options, eval_set)
    selected = _selected_cases(runner, options, ordering)
    eval_metrics = metric_list(metrics) if metrics is not None else await _load_metrics(app_name, options, eval_set_id)
    check_metrics(eval_metrics, options)
    if options.strict:
        refuse_unknown_fields_in(ordering, eval_metrics)
    check_new_result_id(options.result_manager, app_name, ordering.eval_set_id)
    try:
        depth_limit = await value_depth_limit(options.result_manager)
    except Exception as exc:
        raise rewrap("read the result store's JSON nesting limit", exc) from exc
    check_registered(eval_metrics, options.registry, strict=options.strict)
    if selected and not eval_metrics:
        _no_metrics(eval_set_id, options)
    ordering = _with_session_inputs(ordering, app_name)
    wanted = {case.eval_id for case in selected}
    selected = [case for case in ordering.eval_cases if case.eval_id in wanted]
    # Walked once: the result records its code hash, and the cache keys inferences by it.
    agent = plain_agent(_answering(runner, options))
    identity = describe_agent(agent, options.agent_version)
    # Hashed once too: for the provenance's eval-set hash and the cache's keys.
    hashes = case_hashes(ordering.eval_cases)
    # Described before the runs, of the eval set as evaluated, whatever the agent does.
    with limited_depth(depth_limit):
        provenance = describe(
            app_name, runner, options, ordering, eval_metrics, started_at, selected, agent, identity, hashes
        )
    cassettes = _cassettes(options)
    reuse, resumed = await _finished_work(
        app_name, options, caches, selected, eval_metrics, provenance, resume, agent, identity, hashes, ordering
    )
    return EvaluationPlan(
        app_name=app_name,
        options=options,
        eval_set=ordering,
        cases=selected,
        metrics=eval_metrics,
        provenance=provenance,
        reuse=reuse,
        resumed=resumed,
        cassettes=cassettes,
        depth_limit=depth_limit,
        started=started,
    )


def describe(
    app_name: str,
    runner: Runner | None,
    options: EvaluationOptions,
    eval_set: EvalSet,
    metrics: list[EvalMetric],
    started_at: float,
    selected: Sequence[EvalCase] | None = None,
    agent: object = None,
    identity: AgentIdentity | None = None,
    hashes: Mapping[str, str] | None = None,
) -> Provenance:
    """What produced the evaluation; ``agent`` and its ``identity`` are left out (``None``) when re-scoring."""
    return Provenance.describe(
        eval_set,
        metrics,
        evaluated=None if selected is None else [case.eval_id for case in selected],
        hashes=hashes,
        app_name=app_name,
        eval_set_id=eval_set.eval_set_id,
        agent=agent_name(runner) if runner is not None else "",
        agent_label=agent_label(agent, options.agent_version) if agent is not None else "",
        agent_version=options.agent_version,
        agent_code_hash=identity.code_hash if agent is not None and identity is not None else "",
        turn_timeout=options.turn_timeout,
        cache_enabled=options.cache not in (None, False),
        cassette=_cassette_path(options.cassette),
        metric_definitions=metric_definitions(options, metrics),
        aggregator=qualified_name(options.aggregator),
        judge=qualified_name(options.judge) if options.judge is not None else "",
        num_runs=options.num_runs,
        parallel_inference=options.parallel_inference,
        parallel_evaluation=options.parallel_evaluation,
        parallel_runs=options.parallel_runs,
        parallelism=options.parallelism,
        eval_case_ids=list(options.eval_case_ids),
        started_at=started_at,
        finished_at=time.time(),
    )


async def _finished_work(
    app_name: str,
    options: EvaluationOptions,
    caches: dict[Path, Cache],
    selected: list[EvalCase],
    metrics: list[EvalMetric],
    provenance: Provenance,
    resume: EvaluationReport | str | None,
    agent: object,
    identity: AgentIdentity,
    hashes: Mapping[str, str],
    eval_set: EvalSet,
) -> tuple[WorkReuse | None, Resumed | None]:
    """What the service consults for work already done (``cache=``, ``resume=``), if anything."""
    resumed = await Resumed.of(resume, options.result_manager, app_name) if resume is not None else None
    cache = open_cache(options.cache, caches)
    if cache is None and resumed is None:
        return None, None
    reuse = work_reuse(cache, options, agent, identity, hashes, metrics, provenance.metric_definitions)
    if resumed is not None:
        resumed.take(reuse, eval_set, provenance.eval_set_hash)
    reuse.prefetch(range(1, options.num_runs + 1), selected)
    return reuse, resumed


async def _stored_eval_set(app_name: str, options: EvaluationOptions, eval_set_id: str) -> EvalSet:
    """The eval set ``eval_set_id`` read from the eval-set manager."""
    if not eval_set_id:
        raise ConfigError("eval set id is not configured")
    try:
        with strict_reading(options):
            eval_set = await options.eval_set_manager.get(app_name, eval_set_id)
    except NotFoundError as exc:
        raise NotFoundError(f"get eval set: {exc}{await _known_sets(app_name, options, eval_set_id)}") from exc
    except Exception as exc:
        raise rewrap("get eval set", exc) from exc
    if not eval_set.eval_set_id:
        # A file without evalSetId is found by its name; the result needs the id to be saved.
        eval_set = eval_set.model_copy(update={"eval_set_id": eval_set_id})
    return eval_set


async def _known_sets(app_name: str, options: EvaluationOptions, eval_set_id: str) -> str:
    """After ``eval_set_id`` was not found: the app's eval sets and the closest id, or that it has none."""
    try:
        known = await options.eval_set_manager.list(app_name)
    except Exception:
        return ""  # only a hint: the lookup's own error is what matters
    if not known:
        return f"; app {app_name!r} has no eval sets in this {type(options.eval_set_manager).__name__}"
    listed = ", ".join(map(repr, known[:10])) + (f" and {len(known) - 10} more" if len(known) > 10 else "")
    closest = did_you_mean(eval_set_id, known)
    return f"; app {app_name!r} has {len(known)} eval set{'s' if len(known) != 1 else ''}: {listed}{closest}"


def _answering(runner: Runner | None, options: EvaluationOptions) -> object:
    """What answers the cases: the agent, or with a RayExecutor's agent_factory and no agent, the factory."""
    return runner if runner is not None or options.executor == "local" else options.executor.agent_factory


def _selected_cases(runner: Runner | None, options: EvaluationOptions, eval_set: EvalSet) -> list[EvalCase]:
    """The cases to run.

    A case without an id, a repeated or unknown case id, or a case that needs the missing agent,
    is an error.
    """
    without_id = [index for index, case in enumerate(eval_set.eval_cases) if not case.eval_id]
    if without_id:
        # Results are matched to cases by id: the run could not be summarized or saved.
        raise ConfigError(
            f"eval set {eval_set.eval_set_id} has cases without an evalId at positions {without_id}: "
            "give each case an evalId"
        )
    counts = Counter(case.eval_id for case in eval_set.eval_cases)
    repeated = sorted(eval_id for eval_id, count in counts.items() if count > 1)
    if repeated:
        # Results are matched to cases by id: a repeated id would be scored against the wrong case.
        raise ConfigError(
            f"eval set {eval_set.eval_set_id} has several cases with the evalId {', '.join(map(repr, repeated))}: "
            "give each case its own evalId"
        )
    wanted = set(options.eval_case_ids)
    unknown = sorted(wanted - {case.eval_id for case in eval_set.eval_cases})
    if unknown:
        raise ConfigError(
            f"eval_case_ids {unknown} are not in eval set {eval_set.eval_set_id}; "
            f"its cases are {[case.eval_id for case in eval_set.eval_cases]}"
        )
    selected = [case for case in eval_set.eval_cases if not wanted or case.eval_id in wanted]
    if runner is not None and options.executor != "local" and options.executor.agent_factory is not None:
        raise ConfigError(
            "this Evaluator has an agent and its RayExecutor an agent_factory: leave the agent out,"
            " ae.Evaluator(app_name, executor=...), or the agent_factory"
        )
    if runner is None and (options.executor == "local" or options.executor.agent_factory is None):
        need_agent = [case.eval_id for case in selected if case.eval_mode != EvalMode.TRACE]
        if need_agent:
            raise ConfigError(
                f"this Evaluator has no agent, and cases {need_agent} run one: pass the agent, "
                "ae.Evaluator(app_name, agent), or evaluate only trace-mode cases"
            )
    return selected


async def _load_metrics(app_name: str, options: EvaluationOptions, eval_set_id: str) -> list[EvalMetric]:
    # One read of the set's metrics (a file parsed once, one query), not a list and a get of each.
    with strict_reading(options):
        return await all_metrics(options.metric_manager, app_name, eval_set_id)


def _no_metrics(eval_set_id: str, options: EvaluationOptions) -> None:
    """Cases to run and no metric to score them: refused with ``strict``, else warned about."""
    no_metrics = (
        f"eval set {eval_set_id} has no metrics (none stored for it in the metric manager, none given with"
        " metrics=[...])"
    )
    fix = "pass metrics=[ae.EvalMetric.final_response()] or add metrics to the metric manager"
    if options.strict:
        raise ConfigError(f"{no_metrics}: strict=True refuses to run without them; {fix}")
    warn_user(f"{no_metrics}, so every case will be not_evaluated; {fix}", NoMetricsWarning)


def metric_list(metrics: object) -> list[EvalMetric]:
    """``metrics`` as a list, refusing what is not a collection of metrics (a lone metric, names)."""
    # A pydantic model iterates over its fields, so a lone metric must be refused by type.
    if isinstance(metrics, BaseModel | str | bytes | Mapping) or not isinstance(metrics, Iterable):
        raise ConfigError(
            f"metrics must be a list of ae.EvalMetric, got {type(metrics).__name__}: wrap it, metrics=[...]"
        )
    listed = list(metrics)
    for index, metric in enumerate(listed):
        # None is left to check_metrics, which words it as the reference does.
        if metric is not None and not isinstance(metric, EvalMetric):
            raise ConfigError(f"metrics[{index}] must be an ae.EvalMetric, got {type(metric).__name__} {metric!r:.60}")
    return listed


def strict_reading(options: EvaluationOptions) -> contextlib.AbstractContextManager[None]:
    """With ``strict``, a store's read refuses keys no field takes (naming its file) instead of warning."""
    return unknown_fields_refused() if options.strict else contextlib.nullcontext()


def refuse_unknown_fields_in(eval_set: EvalSet, metrics: Sequence[EvalMetric | None]) -> None:
    """``strict``: refuse keys no field takes in what is evaluated, however it was read or built.

    A store that read the files first refused them already; this also covers an eval set a store kept
    from an earlier read (warned about then), a store that does not check, and objects built in code.
    """
    refuse_unknown_fields(eval_set, f"eval set {eval_set.eval_set_id!r}")
    for metric in metrics:
        if metric is not None:
            refuse_unknown_fields(metric, f"metric {metric.metric_name!r}")


def _with_session_inputs(eval_set: EvalSet, app_name: str) -> EvalSet:
    """``eval_set`` with a session input for every case that has none (user ``user``, no state).

    The reference fails such cases ("session input is nil"); a case written in code rarely needs more.
    """
    if all(case.session_input is not None for case in eval_set.eval_cases):
        return eval_set
    default = SessionInput(app_name=app_name, user_id="user")
    cases = [
        case if case.session_input is not None else case.model_copy(update={"session_input": default.model_copy()})
        for case in eval_set.eval_cases
    ]
    return eval_set.model_copy(update={"eval_cases": cases})


def _cassettes(options: EvaluationOptions) -> Cassettes | None:
    """The cassettes ``cassette=`` names: a directory, in ``cassette_mode``, or the object given."""
    if options.cassette is None or isinstance(options.cassette, Cassettes):
        return options.cassette
    return Cassettes(Path(options.cassette).expanduser(), options.cassette_mode)


def _cassette_path(cassette: str | os.PathLike[str] | Cassettes | None) -> str:
    if cassette is None:
        return ""
    return str((cassette.path if isinstance(cassette, Cassettes) else Path(cassette).expanduser()).resolve())


def agent_name(runner: Runner) -> str:
    """A readable name for the agent: its function's for a plain agent function, else its class's."""
    return qualified_name(plain_agent(runner))
