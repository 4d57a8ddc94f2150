"""The partition state machine: pure decisions about leaders and ISRs, no I/O.

Given a partition's assignment, its current state and the live brokers, these functions say what
the next state is (or None when nothing needs to change). The controller writes that state to
ZooKeeper before telling any broker. Rules, as ZooKeeper-era Kafka:
- a new partition is led by the first live replica in assignment order, at leader epoch 0, with
  every live replica in the ISR;
- when the leader is gone, the first live ISR member (assignment order) leads; with none, and
  unclean election allowed, the first live replica leads with an ISR of itself; otherwise the
  partition goes offline (leader -1) and keeps its ISR, so its last leader can come back cleanly;
- every leader change (going offline included) bumps the leader epoch, which fences the old leader;
- a dead follower leaves the ISR with the same leader at leader epoch + 1 (ZooKeeper-era Kafka's
  removeReplicasFromIsr went through newLeaderAndIsr, which bumps it): the leader then fences
  the lost replica's fetches at the old epoch, so a zombie cannot creep back (KIP-320).
Every written state gets partition_epoch + 1 and the writing controller's epoch.
"""
from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from chaoskit.protocol.zk_layout import NO_LEADER, PartitionState


@dataclass(frozen=True)
class Decision:
    state: PartitionState
    leader_changed: bool
    unclean: bool = False


def initial_state(replicas: list[int], live: Collection[int], controller_epoch: int) -> PartitionState | None:
    """The first state of a new partition; None while none of its replicas is live."""
    live_replicas = [r for r in replicas if r in live]
    if not live_replicas:
        return None
    return PartitionState(leader=live_replicas[0], leader_epoch=0, isr=live_replicas,
                          controller_epoch=controller_epoch, partition_epoch=0)


def next_state(state: PartitionState, replicas: list[int], live: Collection[int],
               unclean_allowed: bool, controller_epoch: int) -> Decision | None:
    """What the partition becomes with `live` brokers; None when the current state still holds."""
    if state.leader in live:
        isr = [b for b in state.isr if b in live]
        if isr == state.isr:
            return None
        return Decision(_written(state, controller_epoch, isr=isr, leader_epoch=state.leader_epoch + 1),
                        leader_changed=False)
    live_isr = [r for r in replicas if r in state.isr and r in live]
    if live_isr:
        leader = live_isr[0]
        isr = [b for b in state.isr if b in live]
        return Decision(_leader(state, controller_epoch, leader, isr), leader_changed=True)
    live_replicas = [r for r in replicas if r in live]
    if unclean_allowed and live_replicas:
        leader = live_replicas[0]
        return Decision(_leader(state, controller_epoch, leader, [leader]), leader_changed=True, unclean=True)
    if state.leader == NO_LEADER:
        return None  # already offline; waits for an ISR member (or unclean election) to come back
    return Decision(_leader(state, controller_epoch, NO_LEADER, state.isr), leader_changed=True)


def _leader(state: PartitionState, controller_epoch: int, leader: int, isr: list[int]) -> PartitionState:
    return _written(state, controller_epoch, leader=leader, leader_epoch=state.leader_epoch + 1, isr=isr)


def _written(state: PartitionState, controller_epoch: int, **changes: object) -> PartitionState:
    return state.evolve(controller_epoch=controller_epoch, partition_epoch=state.partition_epoch + 1, **changes)


def unclean_enabled(topic_config: dict[str, str], cluster_default: bool) -> bool:
    """The topic's `unclean.leader.election.enable` override, else the controller's default."""
    value = topic_config.get("unclean.leader.election.enable")
    return cluster_default if value is None else value.strip().lower() == "true"
