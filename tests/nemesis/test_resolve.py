"""Target specs resolved against a cluster's state (a stand-in cluster: this tests only the mapping)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from chaoskit.nemesis import resolve as resolving
from chaoskit.nemesis.resolve import TargetUnavailable, node_names, resolve
from chaoskit.protocol.zk_layout import NO_LEADER


def node(name, role, running=True):
    return SimpleNamespace(name=name, role=role, running=running)


def cluster(leader=2, controller=1, running=(1, 2, 3)):
    brokers = {i: node(f"broker-{i}", "broker", i in running) for i in (1, 2, 3)}
    controllers = {1: node("controller-1", "controller"), 2: node("controller-2", "controller")}
    state = SimpleNamespace(leader=leader)
    return SimpleNamespace(
        brokers=brokers, nodes=[node("zookeeper-1", "zookeeper"), *controllers.values(), *brokers.values()],
        active_controller=lambda: controllers.get(controller),
        partition_state=lambda t, p: state if (t, p) == ("orders", 0) else
        SimpleNamespace(leader=1 + p % 3) if t == "__consumer_offsets" else None,
        view=SimpleNamespace(assignment=lambda t: {0: [2, 3, 1]} if t == "orders" else
                             {p: [1, 2, 3] for p in range(5)} if t == "__consumer_offsets" else None))


def test_each_kind_names_the_node_it_means_now():
    c = cluster()
    assert resolve("leader-of:orders/0", c) == "broker-2"
    assert {resolve("follower-of:orders/0", c, pick) for pick in range(4)} == {"broker-1", "broker-3"}
    assert resolve("follower-of:orders/0", c, 0) == resolve("follower-of:orders/0", c, 2)  # pick is the seed's
    assert resolve("active-controller", c) == "controller-1"
    assert resolve("broker:3", c) == "broker-3" and resolve("client", c) == "client"
    assert {resolve("random-broker", cluster(running=(1, 3)), p) for p in range(6)} == {"broker-1", "broker-3"}
    assert node_names(c, ("broker", "zookeeper")) == ["broker-1", "broker-2", "broker-3", "zookeeper-1"]


def test_storage_is_the_storage_node_of_a_broker_that_keeps_its_data_apart():
    c = cluster()
    c.nodes.append(node("storage-1", "storage"))
    assert resolve("storage", c) == "storage-1"
    assert "storage-1" in node_names(c, ("broker", "storage"))


def test_the_coordinator_is_the_leader_of_the_group_s_offsets_partition():
    from chaoskit.protocol.topics import partition_for

    c = cluster()
    for group in ("chaoskit-a", "chaoskit-b", "chaoskit-xp-x7"):
        assert resolve("coordinator", c, group=group) == f"broker-{1 + partition_for(group, 5) % 3}"
    with pytest.raises(TargetUnavailable, match="no consumer group"):
        resolve("coordinator", c)


@pytest.mark.parametrize("target,c,message", [
    ("leader-of:orders/0", cluster(leader=NO_LEADER), "no leader"),
    ("leader-of:orders/9", cluster(), "no state"),
    ("active-controller", cluster(controller=None), "no controller"),
    ("random-broker", cluster(running=()), "no broker"),
    ("broker:7", cluster(), "brokers"),
    ("storage", cluster(), "keeps no storage apart from its brokers"),
])
def test_a_target_naming_nothing_says_why(target, c, message, monkeypatch):
    monkeypatch.setattr(resolving, "ELECTION_WITHIN_S", 0.3)
    with pytest.raises(TargetUnavailable, match=message):
        resolve(target, c)


def test_a_window_opening_during_a_failover_waits_for_the_election():
    # /controller is empty between the old controller's session expiring and the next one's election
    c, answers = cluster(controller=2), iter([None, None, None])
    elected = c.active_controller
    c.active_controller = lambda: next(answers, None) or elected()
    assert resolve("active-controller", c) == "controller-2"
