"""chaoskit.roles: the contract file. The built-in parts are what the protocols say, and each
no-op does nothing while keeping its role's promise (a no-op checker knows nothing: unknown)."""
from __future__ import annotations

import inspect
from pathlib import Path

from chaoskit.checkers.catalog import CHECKS
from chaoskit.checkers.kafka import KafkaCheck
from chaoskit.checkers.linearizable import Linearizable
from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.spec import ClusterSpec
from chaoskit.history.reader import History
from chaoskit.nemesis.ops import fault_op
from chaoskit.nemesis.schedule import Window
from chaoskit.pluginmanager import collect, get_plugin_manager
from chaoskit.roles import (PENDING, SEED_SPACE, Checker, Client, Cluster, Fault, LiveRun, Nemesis, NoopChecker,
                            NoopClient, NoopNemesis, NoopWorkload, Workload, new_seed)
from chaoskit.run.chaostest import ChaosTest
from chaoskit.run.live import Run

WINDOW = Window(3, 1.0, 2.0, "kill", "broker:2", {"signal": "KILL"}, 99)


def missing_members(obj, protocol) -> list[str]:
    """The protocol's members `obj` lacks, found without evaluating a property (isinstance would)."""
    members = {*protocol.__annotations__, *(n for n in vars(protocol) if not n.startswith("_"))}
    return sorted(m for m in members if not _has(obj, m))


def _has(obj, name: str) -> bool:
    try:
        inspect.getattr_static(obj, name)
        return True
    except AttributeError:
        return False


def test_noop_nemesis_is_a_nemesis_and_changes_nothing():
    noop = NoopNemesis()
    assert isinstance(noop, Nemesis)
    op = fault_op("start", WINDOW)
    assert noop.invoke(None, op) == {**op, "value": {**op["value"], "resolved": None}}


def test_noop_client_and_workload_keep_their_promises():
    client = NoopClient()
    assert isinstance(client, Client) and client.open(None, 0) is client
    assert client.invoke(None, {"f": "send", "type": "invoke", "value": 1})["type"] == "ok"
    workload = NoopWorkload()
    assert isinstance(workload, Workload)
    assert dict(workload.processes) == {} and workload.op(0, 0.0) is None and workload.drain_op(0) is None
    assert repr(PENDING) == "PENDING"


def test_the_noop_checker_knows_nothing_so_its_verdict_is_unknown():
    checker = NoopChecker()
    assert isinstance(checker, Checker)
    found = checker.check(None, History([]))
    assert found.valid == "unknown" and "judges nothing" in found.error


def test_the_built_in_parts_are_what_the_protocols_say(tmp_path):
    pm = get_plugin_manager()
    for name, factory in collect(pm, "clients").items():
        assert isinstance(factory(), Client), name
    for name, factory in collect(pm, "workloads").items():
        assert isinstance(factory(seed=1, duration_s=1), Workload), name
    for name, factory in collect(pm, "faults").items():
        assert isinstance(factory(), Nemesis), name
    for name, factory in collect(pm, "checks").items():
        assert isinstance(factory(engine="local"), Checker), name
    assert isinstance(KafkaCheck(CHECKS["key-order"], engine="local"), Checker)
    assert isinstance(Linearizable(model="kv"), Checker)
    assert isinstance(WINDOW, Fault)
    assert missing_members(LocalCluster(ClusterSpec(run_dir=tmp_path)), Cluster) == []


def test_the_live_run_carries_the_test_and_is_what_every_role_gets():
    test = ChaosTest("y", seed=7)
    live = Run(test, "r1", Path("/tmp/r1"))
    assert missing_members(live, LiveRun) == []
    assert (live.seed, live.group_id, live.clients, live.record) == (7, "chaoskit-y", [], None)


def test_new_seed_draws_from_the_seed_space():
    seeds = {new_seed() for _ in range(20)}
    assert all(0 <= s < SEED_SPACE for s in seeds) and len(seeds) > 1
