"""Run each case's inference on a Ray cluster (``pip install 'agenteval[ray]'``); the driver keeps everything else."""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter

from agenteval.context import EvalContext, use_context
from agenteval.errors import CaseFailure, ConfigError, MissingDependencyError, describe_exception
from agenteval.evalresult.models import ErrorType
from agenteval.evalset.models import EvalCase
from agenteval.runner.base import Runner
from agenteval.runner.function import as_runner, plain_agent
from agenteval.service._case import end_sessions
from agenteval.service._inference import CaseInference, infer_case
from agenteval.service.options import ServiceOptions

__all__ = ["RayExecutor"]

AgentFactory = Callable[[], Any]
"""Returns the agent (a :class:`~agenteval.runner.Runner` or an agent function); called once per worker."""

_REPLY = TypeAdapter(tuple[CaseInference, str, str])
"""A case's reply from its worker: its inference; or, on failure, the traces so far, the message and the error type."""
_REPLY_PART = 64 * 1024
"""Most bytes of a reply one call returns. Ray returns up to 100 KiB inside the call's answer; a larger value
goes through the object store of the driver's node, and reading that store once the node's raylet has died
ends the driver at once (``_exit(1)``)."""
_WATCH_SECONDS = 2.0
"""How often a case waiting on the cluster looks whether it can still get an answer: this process is still
connected, and (for a worker that has not started yet) this process's own Ray node is still alive."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Work:
    """What every case of an evaluation shares: sent to each worker once, not with every case."""

    agent: Any
    """The agent as the user gave it (a plain function is sent, not its :class:`FunctionRunner`); ``None``
    for the factory's agent."""
    user_simulator: Any
    expected_runner: Any
    tool_mock_model: Any
    max_simulated_turns: int
    turn_timeout: float | None
    tool_replay: Any

    def same(self, other: _Work) -> bool:
        """Whether ``other`` holds the very same objects (identity: agents need not define equality)."""
        return all(getattr(self, name) is getattr(other, name) for name in self.__slots__)

    def options(self) -> ServiceOptions:
        return ServiceOptions(
            user_simulator=self.user_simulator,
            expected_runner=self.expected_runner,
            tool_mock_model=self.tool_mock_model,
            max_simulated_turns=self.max_simulated_turns,
            turn_timeout=self.turn_timeout,
            tool_replay=self.tool_replay,
        )


def _load_factory(factory: AgentFactory | str) -> AgentFactory:
    if callable(factory):
        return factory
    module_name, _, name = factory.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"agent_factory {factory!r} cannot be loaded on this worker ({describe_exception(exc)}): install the"
            " module on every node of the cluster, or ship it with ray.init(runtime_env={'py_modules': [...]})"
        ) from exc
    if not callable(found):
        raise ConfigError(f"agent_factory {factory!r} names a {type(found).__name__}, not a function")
    return found  # type: ignore[no-any-return]


class _CaseWorker:
    """A Ray actor that runs one case at a time, with the factory's agent loaded once."""

    def __init__(self, factory: AgentFactory | str | None) -> None:
        self._factory = factory
        self._agent: Runner | None = None
        self._work: dict[str, tuple[Runner | None, ServiceOptions]] = {}
        self._reply = b""

    def start(self) -> tuple[str, str, int, str | None]:
        """Load the factory's agent; return where this worker runs and the factory's error, if any."""
        import ray

        error = None
        if self._factory is not None:
            try:
                self._agent = as_runner(_load_factory(self._factory)())
            except Exception as exc:
                error = f"agent_factory {_factory_name(self._factory)} raised {describe_exception(exc)}"
        node_id = ray.get_runtime_context().get_node_id()
        # The address the cluster knows the node by (its --node-ip-address), not a guess from this host's interfaces.
        nodes = ray.nodes()  # type: ignore[no-untyped-call]
        ip = next(
            (str(node["NodeManagerAddress"]) for node in nodes if node["NodeID"] == node_id), "an unknown address"
        )
        return ip, node_id, os.getpid(), error

    def load(self, token: str, work: _Work) -> None:
        """Keep one evaluation's agent and options under ``token``, in place of an earlier evaluation's."""
        agent = as_runner(work.agent) if work.agent is not None else None
        self._work = {token: (agent, work.options())}

    async def infer(
        self, case_json: str, run_id: int, session_id: str, context: EvalContext, token: str
    ) -> tuple[bytes, int]:
        """Run one case; return the first part of its reply (:data:`_REPLY`, as JSON) and the reply's size.

        ``token`` names the evaluation whose work :meth:`load` was given. The rest of the reply comes from
        :meth:`reply_part`.
        """
        self._reply = _REPLY.dump_json(await self._infer(case_json, run_id, session_id, context, token), by_alias=True)
        return self.reply_part(0), len(self._reply)

    def reply_part(self, start: int) -> bytes:
        """The last reply's bytes from ``start``, at most :data:`_REPLY_PART` of them."""
        part = self._reply[start : start + _REPLY_PART]
        if start + _REPLY_PART >= len(self._reply):
            self._reply = b""  # all sent
        return part

    async def _infer(
        self, case_json: str, run_id: int, session_id: str, context: EvalContext, token: str
    ) -> tuple[CaseInference, str, str]:
        """Run one case with agenteval's :func:`infer_case`: its inference, or its failure."""
        agent, options = self._work[token]
        runner = agent if agent is not None else self._agent
        assert runner is not None
        case = EvalCase.model_validate_json(case_json)
        try:
            with use_context(context):
                try:
                    produced = await infer_case(runner, case, options, session_id, context, run_id=run_id)
                finally:
                    end_error = await end_sessions(runner, options, session_id)
            if end_error is not None:
                raise CaseFailure(end_error, error_type=ErrorType.AGENT)
        except CaseFailure as failure:
            return CaseInference(traces=failure.traces), str(failure), failure.error_type
        except Exception as exc:  # a bug in a user-supplied runner or simulator, not in the case
            return CaseInference(), describe_exception(exc), ErrorType.AGENT
        return produced, "", ""


def _factory_name(factory: AgentFactory | str) -> str:
    return factory if isinstance(factory, str) else getattr(factory, "__qualname__", repr(factory))


@dataclass(slots=True, eq=False)
class _Actor:
    handle: Any
    where: str = "a node not yet known"
    token: str = ""
    """The evaluation whose work the actor holds (:meth:`_CaseWorker.load`)."""


@dataclass(slots=True)
class _Pool:
    """The worker actors (one per case in flight), the idle ones and the cases waiting for one."""

    slots: int
    actors: list[_Actor] = field(default_factory=list)
    idle: list[_Actor] = field(default_factory=list)
    waiting: list[asyncio.Future[None]] = field(default_factory=list)
    loop: asyncio.AbstractEventLoop | None = None
    lost_node: str | None = None
    """This process's own Ray node, once the cluster has found it dead: no case can run any more."""
    node_checked_at: float = -float("inf")

    def bind(self) -> asyncio.AbstractEventLoop:
        """The running loop; a new one (an interrupted notebook cell's loop is gone) frees every actor."""
        loop = asyncio.get_running_loop()
        if self.loop is not loop:
            self.loop, self.idle, self.waiting = loop, list(self.actors), []
        return loop

    def wake(self, *, everyone: bool = False) -> None:
        """Let the first waiting case look again: an actor was freed, or a slot; ``everyone``: no case can run."""
        for waiter in self.waiting:
            if not waiter.done():
                waiter.set_result(None)
                if not everyone:
                    return

    def check_own_node(self) -> None:
        """Fail the case if this process's Ray node died (asking the cluster at most once a second).

        Called when a worker died or is slow to start: a driver whose node died can start no worker (the
        cluster takes it for gone), so its cases would wait for ever.

        Raises:
            CaseFailure: The node died, or this process is no longer connected to the cluster.
        """
        _check_connected()
        now = time.monotonic()
        if self.lost_node is None and now - self.node_checked_at >= 1.0:
            self.node_checked_at = now
            self.lost_node = _lost_own_node()
            if self.lost_node is not None:
                self.wake(everyone=True)
        self.fail_if_node_lost()

    def fail_if_node_lost(self) -> None:
        """Fail the case if this process's Ray node was found dead.

        Raises:
            CaseFailure: It was.
        """
        if self.lost_node is not None:
            raise CaseFailure(
                f"this process's Ray node, {self.lost_node}, died (its raylet ended), and a driver cannot use the"
                " cluster without its own node: the case did not run. Run the evaluation from a node that runs no"
                " workers (`ray start --num-cpus=0`), with cache= so that the next evaluation takes every finished"
                " case from the cache; restart this process (the notebook kernel) before using Ray again",
                error_type=ErrorType.OTHER,
            )


class RayExecutor:
    """Runs each case's inference on a Ray cluster: ``Evaluator(..., executor=RayExecutor())``.

    Every case runs agenteval's own inference (turns, simulated user, expected runner, tool mocks,
    ``turn_timeout``, ``tool_replay``) in a Ray actor: one actor per case in flight, each running one
    case at a time. The driver (this process) keeps the rest: callbacks, progress, the cache, scoring
    (judges wait on model APIs, so they stay here, async), aggregation, the report and the save, so a
    Ray run's report equals a local run's for a deterministic agent.

    The agent is either the Evaluator's (pickled with cloudpickle and loaded once per actor, so it
    must be importable on every node) or ``agent_factory``'s, which each actor calls once: a heavy
    agent (a local model, a browser) is loaded once per worker, not once per case. Cases get the
    session id, context and run id the driver gives them; the agent's state lives in its actor.

    A worker process, or a node, that dies mid-case has that case run again on another actor, at most
    ``max_retries`` times, then the case fails with an error naming the node. Cancelling the
    evaluation (Ctrl-C, a cancelled task) cancels the remote work and kills the actors that ran it.

    This process's own node is different: once its raylet has died, the cluster takes the driver for
    dead (it ends the driver's actors and starts no new ones). The cases that finished keep their
    results, and every other case fails at once with an error naming the node, so the evaluation still
    returns its report, saves it and writes the cache. Ray itself ends the driver (exit code 1, no
    exception) when it next touches the dead node's object store; nothing this executor sends or
    receives goes through that store, except a value sent to the workers that pickles to more than
    100 KiB (an agent or option that large, which ``agent_factory`` avoids; a case or context values
    that large). Through the Ray client (a ``ray://`` address) this process runs no node of its own: when
    its connection breaks for good, the cases left fail saying so.

    ``parallelism`` still caps the cases in flight on the driver: set it to at least the number of
    actors.

    Args:
        address: The cluster to connect to, as ``ray.init`` takes it (the head's ``"10.0.0.5:6379"``,
            ``"auto"``); ``None`` uses ``RAY_ADDRESS``, else the cluster ``ray start``
            started on this machine, else a new local one. A Ray connection this process already has is
            used as it is.
        num_cpus: CPUs each actor reserves.
        num_gpus: GPUs each actor reserves.
        resources: Custom resources each actor reserves (``{"sandbox": 1}``).
        max_in_flight: Most cases running at once (the number of actors); ``None``, or more than fit: as
            many as the cluster's CPUs (and GPUs and resources asked for) hold when the evaluation starts.
            Values the evaluation context holds are sent to the workers with each case: keep them picklable.
        max_retries: Times a case whose worker died runs again on another actor.
        agent_factory: A function, or ``"module:function"``, that returns the agent; each actor calls it
            once. Leave the Evaluator's agent out when you give it.
        start_timeout: Seconds a new worker may take to be scheduled and to build its agent; a worker
            that does not start in time counts as one that died (so a case never waits for resources
            that never come).

    Raises:
        ConfigError: An invalid argument.
        MissingDependencyError: Ray is not installed.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: float = 1,
        num_gpus: float = 0,
        resources: Mapping[str, float] | None = None,
        max_in_flight: int | None = None,
        max_retries: int = 2,
        agent_factory: AgentFactory | str | None = None,
        start_timeout: float = 300.0,
    ) -> None:
        try:
            import ray  # noqa: F401
        except ImportError:
            raise MissingDependencyError("RayExecutor", "ray", "ray") from None
        for name, value in (("num_cpus", num_cpus), ("num_gpus", num_gpus)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise ConfigError(f"{name} must be a number, 0 or more, got {type(value).__name__} {value!r}")
        if max_in_flight is not None and (
            isinstance(max_in_flight, bool) or not isinstance(max_in_flight, int) or max_in_flight <= 0
        ):
            raise ConfigError(f"max_in_flight must be a whole number above 0 or None, got {max_in_flight!r}")
        if isinstance(start_timeout, bool) or not isinstance(start_timeout, int | float) or not start_timeout > 0:
            raise ConfigError(f"start_timeout must be a positive number of seconds, got {start_timeout!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ConfigError(f"max_retries must be a whole number, 0 or more, got {max_retries!r}")
        if isinstance(agent_factory, str) and not _is_reference(agent_factory):
            raise ConfigError(
                f"agent_factory must be a function or 'module:function', got {agent_factory!r}:"
                " write it as 'my_package.agents:make_agent'"
            )
        if agent_factory is not None and not isinstance(agent_factory, str) and not callable(agent_factory):
            raise ConfigError(f"agent_factory must be a function or 'module:function', got {agent_factory!r}")
        self.address = address
        self.num_cpus = num_cpus
        self.num_gpus = num_gpus
        self.resources = dict(resources or {})
        self.max_in_flight = max_in_flight
        self.max_retries = max_retries
        self.agent_factory = agent_factory
        self.start_timeout = float(start_timeout)
        self._pool: _Pool | None = None
        self._work: tuple[_Work, str] | None = None

    def __repr__(self) -> str:
        return f"RayExecutor(address={self.address!r}, max_in_flight={self.max_in_flight!r})"

    async def infer_case(
        self,
        runner: Runner,
        case: EvalCase,
        options: ServiceOptions,
        session_id: str,
        context: EvalContext,
        *,
        run_id: int,
    ) -> CaseInference:
        """Run one case's inference, and the runners' ``end_session`` hooks, on the cluster.

        Raises:
            CaseFailure: What fails the case, as the local executor words it, or a worker that died
                ``max_retries + 1`` times (naming the nodes).
        """
        if self._pool is None:
            await self.aconnect()
        pool = self._connected_pool()
        token, work = self._shared_work(runner, options)
        case_json = case.model_dump_json(by_alias=True)
        deaths: list[str] = []
        while len(deaths) <= self.max_retries:
            actor = await self._acquire(pool)
            if actor is None:
                deaths.append(f"a worker that did not start within {self.start_timeout:g} s")
                pool.check_own_node()
                continue
            try:
                if actor.token != token:
                    await self._call(pool, actor, "load", (token, work), _unsendable_work)
                    actor.token = token
                part, size = await self._call(
                    pool, actor, "infer", (case_json, run_id, session_id, context, token), _unsendable_case
                )
                reply = await self._rest_of_reply(pool, actor, part, size)
            except _WorkerDied as died:
                deaths.append(died.where)
                pool.check_own_node()
                continue
            self._release(pool, actor)
            inference, failure, error_type = _REPLY.validate_json(reply)
            if failure:
                raise CaseFailure(failure, inference.traces, error_type=error_type)
            return inference
        raise CaseFailure(
            f"the Ray worker running the case died {len(deaths)} times (max_retries={self.max_retries}), on "
            f"{'; '.join(deaths)}: see the Ray logs of those nodes (out of memory, a crash in native code)",
            error_type=ErrorType.OTHER,
        )

    async def _rest_of_reply(self, pool: _Pool, actor: _Actor, part: bytes, size: int) -> bytes:
        """The whole reply of the case ``actor`` ran, ``part`` being its first part.

        Each part is small enough to come inside a call's answer (:data:`_REPLY_PART`).

        Raises:
            _WorkerDied: The actor died (it is out of the pool).
        """
        parts = [part]
        received = len(part)
        while received < size:
            part = await self._call(pool, actor, "reply_part", (received,))
            parts.append(part)
            received += len(part)
        return b"".join(parts)

    async def _call(
        self,
        pool: _Pool,
        actor: _Actor,
        method: str,
        args: tuple[Any, ...],
        unsendable: Callable[[Exception], Exception] | None = None,
    ) -> Any:
        """Call ``actor``'s ``method`` with ``args`` and wait for its result.

        Raises:
            _WorkerDied: The actor died (it is out of the pool).
            Exception: ``unsendable``'s error, when the call's arguments cannot be sent (the actor stays idle).
        """
        import ray

        try:
            ref = getattr(actor.handle, method).remote(*args)
        except Exception as exc:
            # Nothing was sent: the actor is as it was.
            self._release(pool, actor)
            _check_connected()
            if unsendable is None:
                raise
            raise unsendable(exc) from exc
        try:
            return await _result(ref, _check_connected)
        except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
            self._discard(pool, actor)
            raise _WorkerDied(f"{actor.where} ({type(exc).__name__})") from exc
        except BaseException as exc:
            # Once disconnected, ray.cancel and ray.kill would start a new local cluster (Ray's auto-init).
            if ray.is_initialized():
                ray.cancel(ref, force=False)
            self._discard(pool, actor)
            if isinstance(exc, Exception):
                _check_connected()
            raise

    def shutdown(self) -> None:
        """Kill the worker actors; the next case starts new ones. They also end with this process."""
        import ray

        pool, self._pool, self._work = self._pool, None, None
        for actor in pool.actors if pool is not None and ray.is_initialized() else ():
            ray.kill(actor.handle)

    async def aconnect(self) -> None:
        """Connect to the cluster and size the worker pool; the Evaluator calls it before any case runs.

        Raises:
            ConfigError: The cluster's address does not answer, or no node has what each worker
                reserves (``num_cpus``, ``num_gpus``, ``resources``).
        """
        import ray

        if self._pool is not None and ray.is_initialized():
            return
        if not ray.is_initialized():
            await _check_reachable(self.address)
            ray.init(address=self.address, logging_level=logging.WARNING)
        self._pool = _Pool(self._slots())
        self._work = None

    def _connected_pool(self) -> _Pool:
        if self._pool is None:
            raise ConfigError("RayExecutor is not connected: the Evaluator connects it (await executor.aconnect())")
        return self._pool

    def _slots(self) -> int:
        """How many workers the cluster can hold at once, at most ``max_in_flight``.

        More workers than fit would wait for resources that idle workers never give back.
        """
        import ray

        total = ray.cluster_resources()  # type: ignore[no-untyped-call]
        wanted = {"CPU": self.num_cpus, "GPU": self.num_gpus, **self.resources}
        if min((int(total.get(name, 0) // amount) for name, amount in wanted.items() if amount > 0), default=1) == 0:
            missing = [
                f"{name}={amount}" for name, amount in wanted.items() if amount > 0 and total.get(name, 0) < amount
            ]
            raise ConfigError(
                f"no node of the Ray cluster has what each worker reserves ({', '.join(missing)}; the cluster has"
                f" {dict(total)}): lower num_cpus, num_gpus or resources, or add nodes that have them"
            )
        fits = min((int(total.get(name, 0) // amount) for name, amount in wanted.items() if amount > 0), default=None)
        capacity = max(1, fits if fits is not None else int(total.get("CPU", 1)))
        return min(self.max_in_flight, capacity) if self.max_in_flight is not None else capacity

    def _shared_work(self, runner: Runner, options: ServiceOptions) -> tuple[str, _Work]:
        """The evaluation's work and its token: each actor is given it once (:meth:`_CaseWorker.load`).

        It is sent by value, not kept in the object store with ``ray.put``: an object this process owns on
        its own node is one Ray recovers when that node dies, and that recovery writes to the node's dead
        object store, where Ray ends this process at once (``_exit(1)``) rather than report an error.
        """
        work = _Work(
            agent=None if self.agent_factory is not None else plain_agent(runner),
            user_simulator=options.user_simulator,
            expected_runner=plain_agent(options.expected_runner),
            tool_mock_model=options.tool_mock_model,
            max_simulated_turns=options.max_simulated_turns,
            turn_timeout=options.turn_timeout,
            tool_replay=options.tool_replay,
        )
        if self._work is None or not self._work[0].same(work):
            self._work = (work, uuid.uuid4().hex)
        return self._work[1], self._work[0]

    async def _acquire(self, pool: _Pool) -> _Actor | None:
        """An idle actor, a new one while the pool has room, else the next one freed; ``None``: it died starting."""
        import ray

        loop = pool.bind()
        while not pool.idle and len(pool.actors) >= pool.slots and pool.lost_node is None:
            waiter = loop.create_future()
            pool.waiting.append(waiter)
            try:
                await waiter
            finally:
                pool.waiting.remove(waiter)
        try:
            pool.fail_if_node_lost()
            if pool.idle:
                return pool.idle.pop()
            _check_connected()  # else Ray would start a new local cluster for the new actor
        except CaseFailure:
            pool.wake()  # this case takes no actor: the next one waiting fails (or gets one) in turn
            raise
        actor = _Actor(self._new_actor())
        pool.actors.append(actor)
        try:
            ip, node_id, pid, error = await self._started(pool, actor)
        except (ray.exceptions.RayActorError, TimeoutError):
            # A worker that cannot be scheduled (a node died with the resources it held) never starts.
            self._discard(pool, actor)
            return None
        except BaseException:
            self._discard(pool, actor)
            raise
        actor.where = f"node {ip} (node id {node_id[:12]}, pid {pid})"
        if error is not None:
            self._discard(pool, actor)
            raise CaseFailure(f"{error}, on {actor.where}", error_type=ErrorType.AGENT)
        return actor

    async def _started(self, pool: _Pool, actor: _Actor) -> tuple[str, str, int, str | None]:
        """Wait for a new actor to start, looking every few seconds whether this process's node died.

        Raises:
            TimeoutError: It did not start within ``start_timeout``.
            CaseFailure: This process's node died.
        """
        deadline = asyncio.get_running_loop().time() + self.start_timeout
        started: tuple[str, str, int, str | None] = await _result(
            actor.handle.start.remote(), pool.check_own_node, deadline
        )
        return started

    def _new_actor(self) -> Any:
        import ray

        worker = ray.remote(_CaseWorker).options(
            num_cpus=self.num_cpus,
            num_gpus=self.num_gpus,
            resources=self.resources or None,
            max_concurrency=1,
            max_restarts=0,
            max_task_retries=0,
        )
        return worker.remote(self.agent_factory)

    def _release(self, pool: _Pool, actor: _Actor) -> None:
        if actor in pool.actors:
            pool.idle.append(actor)
            pool.wake()

    def _discard(self, pool: _Pool, actor: _Actor) -> None:
        """Kill ``actor`` and take it out of the pool, so that a waiting case may start a new one."""
        import ray

        if actor in pool.actors:
            pool.actors.remove(actor)
        if ray.is_initialized():  # else ray.kill would start a new local cluster
            ray.kill(actor.handle, no_restart=True)
        pool.wake()


class _WorkerDied(Exception):
    """The actor running a call died; ``where`` names it."""

    def __init__(self, where: str) -> None:
        super().__init__(where)
        self.where = where


def _unsendable_work(exc: Exception) -> Exception:
    return ConfigError(
        f"the agent or an option (user_simulator, expected_runner, tool_mock_model, tool_replay) cannot be sent to"
        f" the Ray workers: {describe_exception(exc)}; pass RayExecutor(agent_factory='module:function') to build"
        " the agent on each worker instead"
    )


def _unsendable_case(exc: Exception) -> Exception:
    return CaseFailure(
        f"the case cannot be sent to the Ray workers: {describe_exception(exc)}; the values callbacks put in the"
        " evaluation context must be picklable",
        error_type=ErrorType.CALLBACK,
    )


def _check_connected() -> None:
    """Fail the case if this process is no longer connected to the cluster (a Ray client whose server died).

    Raises:
        CaseFailure: It is not.
    """
    import ray

    if not ray.is_initialized():
        raise CaseFailure(
            "this process lost its connection to the Ray cluster (with a ray:// address, the Ray client's server on"
            " the head node ended): the case did not run. With cache=, the next evaluation takes every finished case"
            " from the cache",
            error_type=ErrorType.OTHER,
        )


def _lost_own_node() -> str | None:
    """This process's Ray node, named, if the cluster has found it dead; ``None`` while it lives or is not known."""
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    try:
        nodes = ray.nodes()  # type: ignore[no-untyped-call]
    except Exception:  # the cluster does not answer: nothing is known
        return None
    for node in nodes:
        if node["NodeID"] == node_id and not node["Alive"]:
            return f"{node['NodeManagerAddress']} (node id {node_id[:12]})"
    return None


async def _awaited(ref: Any) -> Any:
    return await ref


async def _result(ref: Any, watch: Callable[[], None], deadline: float | None = None) -> Any:
    """``ref``'s result, calling ``watch`` every few seconds meanwhile: it raises to stop waiting.

    A Ray client's reference whose connection broke may never resolve; a new worker may never start.

    Raises:
        TimeoutError: ``deadline`` (the event loop's time) came first.
    """
    loop = asyncio.get_running_loop()
    result = asyncio.ensure_future(_awaited(ref))
    try:
        while not result.done():
            wait = _WATCH_SECONDS if deadline is None else min(_WATCH_SECONDS, deadline - loop.time())
            if wait <= 0:
                raise TimeoutError
            await asyncio.wait({result}, timeout=wait)
            if not result.done():
                watch()
        return result.result()
    finally:
        result.cancel()


async def _check_reachable(address: str | None, timeout: float = 5.0) -> None:
    """A ``host:port`` address that does not accept connections fails at once, not after minutes of retries."""
    if not address or address == "auto" or "://" in address:
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), timeout)
    except (OSError, TimeoutError) as exc:
        raise ConfigError(
            f"the Ray cluster at {address} does not answer ({describe_exception(exc)}): check the head's address"
            " (`ray status` on the head prints it) or RAY_ADDRESS"
        ) from None
    writer.close()


def _is_reference(text: str) -> bool:
    module_name, colon, name = text.partition(":")
    return bool(colon and name.isidentifier() and all(part.isidentifier() for part in module_name.split(".")))
