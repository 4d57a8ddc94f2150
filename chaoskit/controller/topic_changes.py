"""The controller carrying out KIP-253 expansions and deletions (marking) and the KAFKA-20029
guardrail for one topic, step by step, each step written to ZooKeeper before the next.

`settle(ctl, topic)` runs topic_plan's decisions against the controller's cache of ZooKeeper and
writes them: refuse a guarded internal-topic expansion, fill in the counts, create an expansion's
partitions with `leaderEpochAfterCreation`, mark a deletion's partitions ReadOnly with
`leaderEpochBeforeDeletion`, bump the leader epochs those maps name. It is called on every change
of the topic znode and for every topic on failover, so a controller that died anywhere in between
is finished by its successor. The caller then tells the brokers (LeaderAndIsr carries the topic's
undeleted count with the new epochs).
"""
from __future__ import annotations

import logging
import time

from chaoskit.controller import topic_plan as plan
from chaoskit.controller.context import TopicPartition
from chaoskit.controller.core import ControllerCore
from chaoskit.controller.partition_state import initial_state
from chaoskit.controller.zk_store import StateConflict
from chaoskit.protocol.extensions import PartitionMode
from chaoskit.protocol.zk_layout import NO_LEADER, PartitionState, TopicAssignment


log = logging.getLogger("chaoskit.controller.topic_changes")

_ATTEMPTS = 20


def removal_delay(asked: int | None, mutations: frozenset[str]) -> int | None:
    """The delay before marked partitions are removed (KIP-694; None: once drained, KIP-253), unless
    a mutation turns that wait off (chaoskit mutate): then at once."""
    if "delayed-deletion" in mutations and asked is not None and asked >= 0:
        return 0
    if "drained-deletion" in mutations and (asked is None or asked < 0):
        return 0
    return asked


def settle(ctl: ControllerCore, topic: str) -> set[TopicPartition]:
    """Finish whatever change of `topic` ZooKeeper shows; the partitions whose state was written.
    A concurrent write (a leader's ISR change, a broker's new count) makes it re-read and go on."""
    ctx = ctl.ctx
    assert ctx is not None
    for _attempt in range(_ATTEMPTS):
        if topic not in ctx.assignments or topic in ctx.deleting:
            return set()
        try:
            return _settle_once(ctl, topic)
        except StateConflict:
            ctl.reload_topic(topic)
    raise RuntimeError(f"topic {topic}: its znodes keep changing under the controller")


def _settle_once(ctl: ControllerCore, topic: str) -> set[TopicPartition]:
    ctx, cfg = ctl.ctx, ctl.config
    assert ctx is not None
    assignment = ctx.assignments[topic]
    refused = plan.refused_internal_expansion(topic, assignment, ctx.topic_states(topic),
                                              cfg.allow_internal_partition_increase)
    if refused is not None:
        log.error("%s: partitions %s refused: expanding an internal coordinator topic splits its groups "
                  "(controller.unstable.allow.internal.coordinator.partition.increase=false)", topic,
                  sorted(set(assignment.partitions) - set(refused.partitions)))
        ctl.write_assignment(topic, refused)
        return set()
    written: set[TopicPartition] = set()
    if cfg.ordered_delivery_enable:
        fixed = plan.fixed_counts(assignment, ctx.topic_states(topic))
        if fixed is not None:
            log.info("%s: initial_partition_count %s, undeleted_partition_count %s", topic,
                     fixed.initial_partition_count, fixed.undeleted_partition_count)
            assignment = ctl.write_assignment(topic, fixed)
        written |= _create(ctl, topic, assignment)
    if cfg.delete_topic_partition_enable:
        written |= _mark(ctl, topic, assignment)
    if cfg.ordered_delivery_enable:
        written |= _bump(ctl, topic)
    return written


def _create(ctl: ControllerCore, topic: str, assignment: TopicAssignment) -> set[TopicPartition]:
    """An expansion's new partitions, each with the older partitions' epochs before it."""
    ctx = ctl.ctx
    assert ctx is not None
    states = ctx.topic_states(topic)
    todo = plan.partitions_to_create(assignment, states)
    if not todo:
        return set()
    epochs = plan.expansion_epochs(assignment, states)
    for p in todo:
        replicas = assignment.partitions[p]
        first = initial_state(replicas, set(ctx.brokers), ctx.epoch) or PartitionState(
            leader=NO_LEADER, leader_epoch=0, isr=list(replicas), controller_epoch=ctx.epoch)  # led once one is up
        ctl.create_state((topic, p), first.evolve(after_creation=epochs))
    log.info("%s: expansion created partitions %s, leaderEpochAfterCreation %s", topic, todo, epochs)
    ctl.failpoints.hit("expansion.after-create")
    return {(topic, p) for p in todo}


def _mark(ctl: ControllerCore, topic: str, assignment: TopicAssignment) -> set[TopicPartition]:
    """A deletion's partitions become ReadOnly, each with the undeleted partitions' epochs before it."""
    ctx, cfg = ctl.ctx, ctl.config
    assert ctx is not None
    states = ctx.topic_states(topic)
    todo = plan.partitions_to_mark(assignment, states)
    if not todo:
        return set()
    epochs = plan.deletion_epochs(assignment, states) if cfg.ordered_delivery_enable else {}
    delay = removal_delay(assignment.delete_partitions_delay_ms, cfg.mutations)
    delete_at = int(time.time() * 1000) + delay if delay is not None and delay >= 0 else None
    for p in todo:
        ctl.write_state((topic, p), ctl.written(states[p], mode=PartitionMode.READ_ONLY, before_deletion=epochs,
                                                delete_at_ms=delete_at))
    log.info("%s: partitions %s marked for deletion (ReadOnly, %s), leaderEpochBeforeDeletion %s", topic, todo,
             "removed once empty" if delete_at is None else f"removed after {delay} ms", epochs)
    ctl.failpoints.hit("deletion.after-mark")
    if delay == 0:  # immediate_delete: to None now, not at the next check (up to the whole interval away)
        ctl.post("partitions_due", [(topic, p) for p in todo])
    return {(topic, p) for p in todo}


def _bump(ctl: ControllerCore, topic: str) -> set[TopicPartition]:
    """Leader epoch + 1 for each partition an epoch map names at an epoch it has not moved past."""
    ctx = ctl.ctx
    assert ctx is not None
    due = plan.partitions_to_bump(ctx.topic_states(topic))
    for i, p in enumerate(due):
        s = ctx.states[(topic, p)]
        ctl.write_state((topic, p), ctl.written(s, leader_epoch=s.leader_epoch + 1))
        if i == 0:
            ctl.failpoints.hit("bump.after-first")
    if due:
        log.info("%s: leader epochs of %s bumped for undeleted_partition_count %d", topic, due,
                 ctx.assignments[topic].undeleted)
    return {(topic, p) for p in due}
