"""The Ray executor on a real two-node cluster: same report as local, factory once per worker, faults, cancel."""

from __future__ import annotations

import asyncio
import functools
import os
import re
import signal
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

import agenteval as ae
from tests.ray import agents
from tests.ray.cluster import Cluster
from tests.test_evaluation import final_response, make_case, turn

ray = pytest.importorskip("ray")


def numbered_cases(count: int) -> ae.EvalSet:
    # Every third case has two turns, so sessions of several turns run remotely too.
    cases = [make_case(f"c{n}", *([turn(f"say {n}", str(n))] * (2 if n % 3 == 1 else 1))) for n in range(1, count + 1)]
    return ae.EvalSet(eval_set_id="numbers", eval_cases=cases)


def case_table(report: ae.EvaluationReport) -> pd.DataFrame:
    table = report.cases[["run_id", "eval_id", "status", "score", "error_type", "error_message"]].copy()
    # Session ids are new UUIDs in every evaluation; where the agent raised is named relative to the working
    # directory, which differs on a worker.
    table["error_message"] = (
        table["error_message"]
        .str.replace(r"sessionID=[-0-9a-f]+", "sessionID=…", regex=True)
        .str.replace(r" \(raised at .*\)$", "", regex=True)
    )
    return table


def alive_workers(cluster: Cluster) -> list[int]:
    from ray.util.state import list_actors

    actors = list_actors(
        address=cluster.dashboard,
        filters=[("class_name", "=", "_CaseWorker"), ("state", "=", "ALIVE")],
        detail=True,
        raise_on_missing_output=False,
    )
    return [actor.pid for actor in actors if actor.pid]


def test_a_ray_run_gives_the_statuses_and_scores_of_a_local_run(ray_cluster: Cluster) -> None:
    eval_set = numbered_cases(200)
    metrics = [final_response()]

    local = ae.Evaluator("app", agents.graded, progress=False).evaluate(eval_set, metrics=metrics)
    executor = ae.RayExecutor(ray_cluster.address)
    remote = ae.Evaluator("app", agents.graded, executor=executor, progress=False).evaluate(eval_set, metrics=metrics)

    assert set(local.cases["status"]) == {"passed", "failed"}
    assert local.cases["error_type"].eq("agent").any()  # the agent raised on some cases
    pd.testing.assert_frame_equal(case_table(remote), case_table(local))
    assert remote.metrics.equals(local.metrics)
    assert [len(inference.inferences) for inference in remote.inference_results[0]] == [
        len(inference.inferences) for inference in local.inference_results[0]
    ]
    executor.shutdown()


def test_an_agent_factory_is_called_once_per_worker_not_once_per_case(ray_cluster: Cluster, tmp_path: Path) -> None:
    pid_file = tmp_path / "factory-calls"
    executor = ae.RayExecutor(
        ray_cluster.address, agent_factory=functools.partial(agents.counting_factory, str(pid_file))
    )
    ev = ae.Evaluator("app", executor=executor, progress=False)

    first = ev.evaluate(numbered_cases(30), metrics=[final_response(threshold=0.0)])
    second = ev.evaluate(numbered_cases(30), metrics=[final_response(threshold=0.0)])

    assert set(first.cases["status"]) == set(second.cases["status"]) == {"passed"}
    calls = pid_file.read_text().split()
    assert len(calls) == len(set(calls)) == 2  # two workers (one CPU on each node), each calling it once
    executor.shutdown()


def test_an_agent_factory_is_refused_next_to_an_agent() -> None:
    executor = ae.RayExecutor(agent_factory="tests.ray.agents:counting_factory")

    with pytest.raises(ae.ConfigError, match="has an agent and its RayExecutor an agent_factory: leave"):
        ae.Evaluator("app", agents.echo, executor=executor, progress=False).evaluate(
            numbered_cases(1), metrics=[final_response()]
        )


def test_a_case_whose_worker_always_dies_fails_naming_the_node_and_the_others_finish(ray_cluster: Cluster) -> None:
    eval_set = numbered_cases(6)
    eval_set.eval_cases.insert(2, make_case("boom", turn("say boom", "boom")))
    executor = ae.RayExecutor(ray_cluster.address, max_retries=1)

    report = ae.Evaluator("app", agents.dies_on_boom, executor=executor, progress=False).evaluate(
        eval_set, metrics=[final_response()]
    )

    statuses = dict(zip(report.cases["eval_id"], report.cases["status"], strict=True))
    assert statuses.pop("boom") == "failed"
    assert set(statuses.values()) == {"passed"} and len(statuses) == 6
    message = str(report.cases.set_index("eval_id").loc["boom", "error_message"])
    assert message.startswith("the Ray worker running the case died 2 times (max_retries=1), on node "), message
    named = re.findall(r"node (\S+) \(node id ([0-9a-f]{12}), pid \d+\) \(ActorDiedError\)", message)
    nodes = {(node["NodeManagerAddress"], node["NodeID"][:12]) for node in ray.nodes()}
    assert len(named) == 2 and set(named) <= nodes, message
    executor.shutdown()


def test_a_worker_killed_mid_run_loses_no_case(ray_cluster: Cluster, tmp_path: Path) -> None:
    ticks = tmp_path / "ticks"
    eval_set = ae.EvalSet(
        eval_set_id="slow", eval_cases=[make_case(f"slow{n}", turn(f"say slow{n}", f"slow{n}")) for n in range(8)]
    )
    executor = ae.RayExecutor(ray_cluster.address)
    killed: list[int] = []

    def kill_one_worker() -> None:
        deadline = time.monotonic() + 60
        while not killed and time.monotonic() < deadline:
            workers = alive_workers(ray_cluster) if ticks.exists() else []
            if workers:
                os.kill(workers[0], signal.SIGKILL)
                killed.append(workers[0])
            time.sleep(0.1)

    killer = threading.Thread(target=kill_one_worker)
    killer.start()
    report = ae.Evaluator("app", agents.Slow(0.3, str(ticks)), executor=executor, progress=False).evaluate(
        eval_set, metrics=[final_response()]
    )
    killer.join()

    assert killed
    assert sorted(report.cases["eval_id"]) == sorted(case.eval_id for case in eval_set.eval_cases)
    # The case on the killed worker ran again on another one.
    assert set(report.cases["status"]) == {"passed"}
    executor.shutdown()


@pytest.mark.asyncio
async def test_a_cancelled_run_stops_its_remote_work_and_keeps_the_finished_cases(
    ray_cluster: Cluster, tmp_path: Path
) -> None:
    ticks = tmp_path / "ticks"
    cases = [make_case("quick1"), make_case("quick2")] + [
        make_case(f"slow{n}", turn(f"say slow{n}", f"slow{n}")) for n in range(4)
    ]
    executor = ae.RayExecutor(ray_cluster.address)
    ev = ae.Evaluator("app", agents.Slow(60, str(ticks)), executor=executor)
    run = ev.start(ae.EvalSet(eval_set_id="mixed", eval_cases=cases), metrics=[final_response()])
    for _ in range(600):
        if ticks.exists() and len(alive_workers(ray_cluster)) == 2 and len(ticks.read_text().splitlines()) > 4:
            break
        await asyncio.sleep(0.1)

    assert run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run

    assert run.report is not None
    assert {"quick1", "quick2"} <= set(run.report.cases["eval_id"])
    for _ in range(100):
        if not alive_workers(ray_cluster):
            break
        await asyncio.sleep(0.1)
    assert alive_workers(ray_cluster) == []
    # The state API reports an actor dead while ray.kill is still taking its process down: give that
    # process a moment to go, then the agent must not run on.
    before = ticks.read_text()
    for _ in range(50):
        await asyncio.sleep(0.5)
        if ticks.read_text() == before:
            break
        before = ticks.read_text()
    await asyncio.sleep(0.5)
    assert ticks.read_text() == before  # no agent runs on any more


def test_a_factory_that_raises_fails_the_cases_naming_it_and_the_node(ray_cluster: Cluster) -> None:
    executor = ae.RayExecutor(ray_cluster.address, max_in_flight=1, agent_factory="tests.ray.agents:broken_factory")

    report = ae.Evaluator("app", executor=executor, progress=False).evaluate(
        numbered_cases(2), metrics=[final_response()]
    )

    assert set(report.cases["status"]) == {"failed"}
    assert (
        report.cases["error_message"]
        .str.contains(
            r"agent_factory tests\.ray\.agents:broken_factory raised RuntimeError: the model file is missing, on node "
        )
        .all()
    )


def test_an_agent_that_cannot_be_sent_fails_its_cases_saying_to_use_a_factory(ray_cluster: Cluster) -> None:
    executor = ae.RayExecutor(ray_cluster.address)

    report = ae.Evaluator("app", agents.Locked(), executor=executor, progress=False).evaluate(
        numbered_cases(2), metrics=[final_response()]
    )

    assert set(report.cases["status"]) == {"failed"}
    assert report.cases["error_message"].str.contains("cannot be sent to the Ray workers: ").all()
    assert report.cases["error_message"].str.contains(r"pass RayExecutor\(agent_factory='module:function'\)").all()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"max_in_flight": 0}, r"^max_in_flight must be a whole number above 0 or None, got 0$"),
        ({"max_retries": -1}, r"^max_retries must be a whole number, 0 or more, got -1$"),
        ({"num_cpus": "1"}, r"^num_cpus must be a number, 0 or more, got str '1'$"),
        (
            {"agent_factory": "agents.make"},
            r"^agent_factory must be a function or 'module:function', got 'agents.make'",
        ),
    ],
)
def test_bad_arguments_are_refused(arguments: dict[str, object], message: str) -> None:
    with pytest.raises(ae.ConfigError, match=message):
        ae.RayExecutor(**arguments)  # type: ignore[arg-type]


def test_the_executor_option_is_checked() -> None:
    with pytest.raises(ae.ConfigError, match=r"^executor must be 'local' or an ae.RayExecutor, got 'ray'$"):
        ae.Evaluator("app", agents.echo, executor="ray")
    with pytest.raises(ae.ConfigError, match=r"^cassette records the HTTP traffic of this process"):
        ae.Evaluator("app", agents.echo, executor=ae.RayExecutor(), cassette="cassettes")


def test_a_context_value_that_cannot_be_sent_fails_its_case_and_frees_the_worker(ray_cluster: Cluster) -> None:
    def hand_a_lock(context: ae.EvalContext, args: object) -> ae.EvalContext:
        return context.with_values(client=threading.Lock())

    executor = ae.RayExecutor(ray_cluster.address, max_in_flight=1)
    callbacks = ae.Callbacks().register_before_inference_case("lock", hand_a_lock)

    report = ae.Evaluator("app", agents.echo, executor=executor, callbacks=callbacks, progress=False).evaluate(
        numbered_cases(3), metrics=[final_response()]
    )

    assert list(report.cases["status"]) == ["failed"] * 3  # every case ends: the one worker was given back
    message = str(report.cases.loc[0, "error_message"])
    assert "cannot be sent to the Ray workers" in message and "must be picklable" in message
    assert set(report.cases["error_type"]) == {"callback"}
    executor.shutdown()


def test_more_workers_than_the_cluster_holds_are_not_started(ray_cluster: Cluster) -> None:
    executor = ae.RayExecutor(ray_cluster.address, max_in_flight=10)

    report = ae.Evaluator("app", agents.echo, executor=executor, parallelism=10, progress=False).evaluate(
        numbered_cases(6), metrics=[final_response()]
    )

    assert report.passed
    assert executor._connected_pool().slots == 2  # two nodes of one CPU each
    executor.shutdown()


def test_resources_no_node_has_and_an_address_that_does_not_answer_are_clear_errors(ray_cluster: Cluster) -> None:
    needs_gpu = ae.RayExecutor(ray_cluster.address, num_gpus=1)
    with pytest.raises(ae.ConfigError, match=r"no node of the Ray cluster has what each worker reserves \(GPU=1"):
        ae.Evaluator("app", agents.echo, executor=needs_gpu, progress=False).evaluate(
            numbered_cases(1), metrics=[final_response()]
        )

    # This process is already connected (a connection is used as it is), so the check that runs before
    # connecting is called as the first connection would call it.
    from agenteval._util.sync_bridge import run_sync
    from agenteval.service.ray_executor import _check_reachable

    started = time.monotonic()
    with pytest.raises(ae.ConfigError, match=r"the Ray cluster at 127.0.0.1:1 does not answer"):
        run_sync(_check_reachable("127.0.0.1:1"))
    assert time.monotonic() - started < 10
