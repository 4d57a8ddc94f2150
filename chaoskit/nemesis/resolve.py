"""Resolving a target spec to concrete node names at the moment a fault starts.

The leader of a partition moves during a run, so `leader-of:orders/0` means whoever leads it when
the window opens, read from ZooKeeper (the truth, not some broker's possibly stale metadata).
Choices among several candidates (which follower, which broker) use the window's seeded `pick`,
over candidates in a sorted order, so a replayed schedule hits the same nodes.
"""
from __future__ import annotations

from typing import Any

from chaoskit.cluster.waiting import NotReady, wait_for
from chaoskit.nemesis.targets import Target, parse_target
from chaoskit.protocol.topics import OFFSETS_TOPIC, partition_for

CLIENT = "client"
# a controller that died or was cut off holds /controller until its ZooKeeper session expires (6 s
# by default), then another is elected: a window that opens in between waits for that election
ELECTION_WITHIN_S = 20.0


class TargetUnavailable(RuntimeError):
    """The target names no node right now (an offline partition, no controller, no live broker)."""


def resolve(target: str | Target, cluster: Any, pick: int = 0, group: str | None = None) -> str:
    """The node name (e.g. "broker-2", "controller-1", "client") that `target` names now
    (`active-controller`: once a controller holds /controller, waiting out an election;
    `coordinator`: the broker coordinating `group`)."""
    t = parse_target(target) if isinstance(target, str) else target
    if t.kind == "client":
        return CLIENT
    if t.kind == "coordinator":
        return coordinator_of(cluster, group)
    if t.kind == "storage":
        named = sorted(n.name for n in cluster.nodes if n.role == "storage")
        if not named:
            raise TargetUnavailable(f"{t}: this cluster keeps no storage apart from its brokers")
        return named[pick % len(named)]
    if t.kind == "broker":
        if t.broker not in cluster.brokers:
            raise TargetUnavailable(f"{t}: the cluster has brokers {sorted(cluster.brokers)}")
        return cluster.brokers[t.broker].name
    if t.kind == "active-controller":
        try:
            return wait_for(cluster.active_controller, ELECTION_WITHIN_S, "a controller", interval=0.1).name
        except NotReady:
            raise TargetUnavailable(f"{t}: no controller held /controller within {ELECTION_WITHIN_S:.0f} s "
                                    "(a failover that elected no one)") from None
    if t.kind == "random-broker":
        live = sorted(i for i, b in cluster.brokers.items() if b.running)
        if not live:
            raise TargetUnavailable(f"{t}: no broker is running")
        return cluster.brokers[live[pick % len(live)]].name
    assert t.topic is not None and t.partition is not None
    state = cluster.partition_state(t.topic, t.partition)
    if state is None:
        raise TargetUnavailable(f"{t}: partition {t.topic}/{t.partition} has no state in ZooKeeper")
    if t.kind == "leader-of":
        if state.leader not in cluster.brokers:
            raise TargetUnavailable(f"{t}: {t.topic}/{t.partition} has no leader (leader {state.leader})")
        return cluster.brokers[state.leader].name
    replicas = (cluster.view.assignment(t.topic) or {}).get(t.partition, [])
    followers = sorted(r for r in replicas if r != state.leader)
    if not followers:
        raise TargetUnavailable(f"{t}: {t.topic}/{t.partition} has no follower (replicas {replicas})")
    return cluster.brokers[followers[pick % len(followers)]].name


def coordinator_of(cluster: Any, group: str | None) -> str:
    """The broker leading the `__consumer_offsets` partition of `group` now (as ZooKeeper says)."""
    if group is None:
        raise TargetUnavailable("coordinator: no consumer group is known here (a run's faults get the run's group)")
    partitions = cluster.view.assignment(OFFSETS_TOPIC) or {}
    if not partitions:
        raise TargetUnavailable(f"coordinator: {OFFSETS_TOPIC} does not exist yet (no group has looked for one)")
    partition = partition_for(group, len(partitions))
    state = cluster.partition_state(OFFSETS_TOPIC, partition)
    if state is None or state.leader not in cluster.brokers:
        raise TargetUnavailable(f"coordinator: {OFFSETS_TOPIC}/{partition} of group {group!r} has no leader now")
    return cluster.brokers[state.leader].name


def node_by_name(cluster: Any, name: str) -> Any:
    """The cluster's node called `name` (broker-N, controller-N, zookeeper-N)."""
    for node in cluster.nodes:
        if node.name == name:
            return node
    raise TargetUnavailable(f"no node {name!r} in this cluster: {', '.join(n.name for n in cluster.nodes)}")


def node_names(cluster: Any, roles: tuple[str, ...] = ("broker", "controller", "zookeeper")) -> list[str]:
    """The names of the cluster's nodes of these roles, in a stable order."""
    return sorted(n.name for n in cluster.nodes if n.role in roles)
