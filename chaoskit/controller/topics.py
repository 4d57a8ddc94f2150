"""Topic events of the controller: creation, new partitions (CreatePartitions), deletion, and the
ISR changes leaders report.

Brokers write requests into ZooKeeper (docs/internals.md §2); the controller reacts here:
- a new `/brokers/topics/<t>`: create each partition's state znode, then LeaderAndIsr (is_new) to
  its replicas and UpdateMetadata to everyone;
- a changed topic znode: topic_changes.settle carries out KIP-253's expansion or deletion steps (or
  refuses a guarded internal-topic expansion), then the topic's partitions are (re)sent; without
  the proposals, added partitions are created like a new topic's;
- `/admin/delete_topics/<t>`: UpdateMetadata(deleted_topics) to everyone, StopReplica(delete) to
  each live replica, and once they answered, the topic's znodes go, the marker last (so a
  successor finishes an interrupted deletion);
- `/isr_change_notification`: re-read those partitions and UpdateMetadata to everyone.
"""
from __future__ import annotations

import logging
from typing import Any

from kazoo.exceptions import NoNodeError

from chaoskit.controller import requests, topic_changes
from chaoskit.controller.context import TopicPartition
from chaoskit.controller.core import ControllerCore
from chaoskit.protocol import zk_layout as zl


log = logging.getLogger("chaoskit.controller.topics")

# StopReplica's leader epoch for a deletion: applies whatever epoch the replica is at (Kafka's -2)
EPOCH_DURING_DELETE = -2


def bring_up(ctl: ControllerCore, tps: set[TopicPartition]) -> None:
    """Create or fix the states of `tps` and tell their replicas and every broker."""
    ctx = ctl.ctx
    assert ctx is not None
    _, created = ctl.reconcile(sorted(tps))
    replicas = ctx.replicas()
    tps = {tp for tp in tps if tp in replicas}
    ctl.send_leader_and_isr({b: {tp for tp in tps if b in replicas[tp]} for b in ctx.brokers}, created)
    ctl.send_metadata(tps)


def on_topics_change(ctl: ControllerCore, _: Any) -> None:
    ctx = ctl.ctx
    assert ctx is not None
    names = set(ctl.zk.children(zl.TOPICS, ctl.watch("topics_change")))
    for gone in sorted(set(ctx.assignments) - names):
        if gone not in ctx.deleting:
            log.warning("topic %s vanished from ZooKeeper without a deletion request", gone)
            ctl.send_metadata(set(), {gone})
        ctx.forget_topic(gone)
    new: set[TopicPartition] = set()
    for topic in sorted(names - set(ctx.assignments)):
        new |= ctl.load_topic(topic)
        topic_changes.settle(ctl, topic)  # its KIP-253 counts, when the creator did not write them
        log.info("new topic %s with %d partitions", topic, len(ctx.assignments.get(topic, zl.TopicAssignment({})).partitions))
    if new:
        bring_up(ctl, new)


def on_assignment_change(ctl: ControllerCore, topic: str) -> None:
    ctx = ctl.ctx
    assert ctx is not None
    if topic in ctx.deleting:
        return
    old = ctx.assignments.get(topic)
    if old is None:  # it did not decode before; perhaps it does now
        tps = ctl.load_topic(topic)
        if tps:
            bring_up(ctl, tps)
        return
    try:
        got = ctl.zk.assignment(topic, ctl.watch("assignment_change", topic))
    except zl.ZkDataError as e:
        log.error("topic %s: %s; keeping its last good assignment", topic, e)
        return
    if got is None:
        return  # being deleted; the topics watch handles it
    assignment, ctx.assignment_versions[topic] = got
    moved = [p for p in old.partitions if assignment.partitions.get(p) != old.partitions[p]]
    if moved:
        log.error("%s: replicas of existing partitions %s changed; reassignment is not supported, "
                  "keeping the old replicas", topic, moved)
        assignment = assignment.evolve(partitions={**assignment.partitions, **old.partitions})
    added = sorted(set(assignment.partitions) - set(old.partitions))
    ctx.assignments[topic] = assignment
    for p in added:
        ctl.reload_state((topic, p))
    if added:
        log.info("%s: new partitions %s", topic, added)
    touched = topic_changes.settle(ctl, topic)
    counts_moved = (assignment.initial_partition_count, assignment.undeleted_partition_count) != \
        (old.initial_partition_count, old.undeleted_partition_count)
    if added or touched or counts_moved:
        bring_up(ctl, {(topic, p) for p in ctx.assignments.get(topic, assignment).partitions})


def on_delete_topics(ctl: ControllerCore, _: Any) -> None:
    ctx, channel = ctl.ctx, ctl.channel
    assert ctx is not None and channel is not None
    for topic in ctl.zk.children(zl.DELETE_TOPICS, ctl.watch("delete_topics")):
        if topic not in ctx.assignments:
            log.info("deletion of unknown topic %s: removing its leftovers", topic)
            ctl.zk.delete_topic(topic)
            continue
        if topic in ctx.deleting:
            continue  # under way
        pending = {b for r in ctx.assignments[topic].partitions.values() for b in r if b in ctx.brokers}
        ctx.deleting[topic] = pending
        log.info("deleting topic %s; waiting for StopReplica answers from %s", topic, sorted(pending))
        ctl.send_metadata(set(), {topic})
        for bid in sorted(pending):
            send_stop_replica(ctl, topic, bid)
        if not pending:
            finish_deletion(ctl, topic)


def send_stop_replica(ctl: ControllerCore, topic: str, broker_id: int) -> None:
    ctx, channel = ctl.ctx, ctl.channel
    assert ctx is not None and channel is not None
    parts = {(topic, p): EPOCH_DURING_DELETE for p, r in ctx.assignments[topic].partitions.items() if broker_id in r}
    channel.send(broker_id, requests.stop_replica(ctl.config.controller_id, ctx.epoch, parts, delete=True),
                 on_response=lambda bid, _resp: ctl.post("stop_replica_done", (topic, bid)))


def on_stop_replica_done(ctl: ControllerCore, arg: tuple[str, int]) -> None:
    ctx = ctl.ctx
    assert ctx is not None
    topic, bid = arg
    pending = ctx.deleting.get(topic)
    if pending is None or bid not in pending:
        return
    pending.discard(bid)
    if not pending:
        finish_deletion(ctl, topic)


def deletion_brokers_changed(ctl: ControllerCore, dead: set[int], joined: set[int]) -> None:
    """A dead replica cannot answer (its files stay behind); a returning one is told to delete."""
    ctx = ctl.ctx
    assert ctx is not None
    for topic, pending in list(ctx.deleting.items()):
        replicas = {b for r in ctx.assignments[topic].partitions.values() for b in r}
        for bid in sorted(joined & replicas):
            pending.add(bid)
            send_stop_replica(ctl, topic, bid)
        if dead & pending:
            log.warning("topic %s: replicas %s died before deleting their copies", topic, sorted(dead & pending))
            pending -= dead
            if not pending:
                finish_deletion(ctl, topic)


def finish_deletion(ctl: ControllerCore, topic: str) -> None:
    ctx = ctl.ctx
    assert ctx is not None
    ctl.zk.delete_topic(topic)
    ctx.forget_topic(topic)
    log.info("topic %s deleted", topic)


def on_isr_change(ctl: ControllerCore, _: Any) -> None:
    ctx = ctl.ctx
    assert ctx is not None
    names = ctl.zk.children(zl.ISR_CHANGE, ctl.watch("isr_change"))
    tps: set[TopicPartition] = set()
    for name in names:
        tps.update(tp for tp in ctl.zk.isr_change(name) if tp[0] in ctx.assignments and tp[0] not in ctx.deleting)
    for tp in sorted(tps):
        ctl.reload_state(tp)
    if tps:
        log.info("ISR changes of %s", ", ".join(f"{t}-{p}: {ctx.states[(t, p)].isr}" for t, p in sorted(tps)
                                                if (t, p) in ctx.states))
        ctl.send_metadata(tps)
    for name in names:
        try:
            ctl.zk.delete_isr_change(name)
        except NoNodeError:
            pass
