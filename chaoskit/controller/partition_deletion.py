"""Removing partitions marked for deletion (KIP-253 step 3, KIP-694's delayed deletion).

A periodic tick (every `delete.topic.partition.interval.delay.ms`, KIP-694's check interval, by
default 5 minutes) looks at each ReadOnly partition:
- one marked with a delay (`delete_at_ms`, KIP-694) goes to mode None once that time has passed;
  one marked with no delay (`immediate_delete`) does so at once, without waiting for the tick;
- one marked without (KIP-253) is checked with ListOffsets at its leader and goes to None once it
  is empty (log start = log end), whether drained by retention or DeleteRecords.
A None partition gets StopReplica(delete) at every replica, retried on each tick and whenever a
replica comes back, until each has answered without error (a dead replica holds the removal up);
then one ZooKeeper transaction takes it out of the assignment and removes its state znode, and
UpdateMetadata tells every broker it is gone. Each step is in ZooKeeper before the next, so a
successor re-reads the modes and carries on (on failover every None partition is pending again).
"""
from __future__ import annotations

import logging
import time
from typing import Any

from chaoskit.controller import requests
from chaoskit.controller.context import TopicPartition
from chaoskit.controller.core import ControllerCore
from chaoskit.controller.topics import EPOCH_DURING_DELETE
from chaoskit.controller.zk_store import StateConflict
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.extensions import PartitionMode


log = logging.getLogger("chaoskit.controller.partition_deletion")

EARLIEST, LATEST = -2, -1
CHECK_TIMEOUT_S = 10.0  # a ListOffsets unanswered this long (its broker died) may be sent again


def _now_ms() -> int:
    return int(time.time() * 1000)


def on_tick(ctl: ControllerCore) -> None:
    ctx = ctl.ctx
    assert ctx is not None
    now = _now_ms()
    for tp, s in sorted(ctx.states.items()):
        if not _live(ctl, tp):
            continue
        if s.mode == PartitionMode.READ_ONLY:
            if s.delete_at_ms is not None:
                if _delay_passed(s, now):
                    to_none(ctl, tp, f"its deletion delay passed at {s.delete_at_ms}")
            else:
                _check_drained(ctl, tp)
        elif s.mode == PartitionMode.NONE:
            if ctx.removing.setdefault(tp, set(ctx.assignments[tp[0]].partitions.get(tp[1], []))):
                send_deletes(ctl, tp)
            else:  # every replica answered; an earlier removal attempt lost a race with a topic znode write
                remove(ctl, tp)


def on_due(ctl: ControllerCore, tps: list[TopicPartition]) -> None:
    """Partitions just marked with no delay (immediate_delete): to None now if nothing moved them on."""
    ctx = ctl.ctx
    assert ctx is not None
    now = _now_ms()
    for tp in tps:
        s = ctx.states.get(tp)
        if _live(ctl, tp) and s is not None and s.mode == PartitionMode.READ_ONLY and _delay_passed(s, now):
            to_none(ctl, tp, "it was deleted immediately")


def _live(ctl: ControllerCore, tp: TopicPartition) -> bool:
    """The partition's topic is still there and not being deleted as a whole."""
    ctx = ctl.ctx
    assert ctx is not None
    return tp[0] not in ctx.deleting and tp[0] in ctx.assignments


def _delay_passed(s: Any, now: int) -> bool:
    return s.delete_at_ms is not None and now >= s.delete_at_ms


def _check_drained(ctl: ControllerCore, tp: TopicPartition) -> None:
    """Ask the leader for the log start and end; the answer comes back as a drain_checked event."""
    ctx, channel = ctl.ctx, ctl.channel
    assert ctx is not None and channel is not None
    s = ctx.states[tp]
    sent = ctx.drain_checks.get(tp)
    if s.leader not in ctx.brokers or (sent is not None and time.monotonic() - sent < CHECK_TIMEOUT_S):
        return
    ctx.drain_checks[tp] = time.monotonic()
    found: dict[int, int] = {}

    def answered(timestamp: int) -> Any:
        def record(_bid: int, response: Any) -> None:
            part = response.topics[0].partitions[0] if response.topics and response.topics[0].partitions else None
            found[timestamp] = part.offset if part is not None and part.error_code == ErrorCode.NONE else -1
            if len(found) == 2:
                ctl.post("drain_checked", (tp, found[EARLIEST], found[LATEST]))
        return record

    for timestamp in (EARLIEST, LATEST):
        channel.send(s.leader, requests.list_offsets(tp, s.leader_epoch, timestamp), answered(timestamp),
                     version=requests.LIST_OFFSETS_VERSION)


def on_drain_checked(ctl: ControllerCore, arg: tuple[TopicPartition, int, int]) -> None:
    ctx = ctl.ctx
    assert ctx is not None
    tp, start, end = arg
    ctx.drain_checks.pop(tp, None)
    s = ctx.states.get(tp)
    if s is None or s.mode != PartitionMode.READ_ONLY or start < 0 or end < 0:
        return
    if start >= end:
        to_none(ctl, tp, f"it is empty (log start = log end = {end})")
    else:
        log.debug("%s-%d: %d records left before it can be removed", tp[0], tp[1], end - start)


def to_none(ctl: ControllerCore, tp: TopicPartition, why: str) -> None:
    ctx = ctl.ctx
    assert ctx is not None
    ctl.write_state(tp, ctl.written(ctx.states[tp], mode=PartitionMode.NONE))
    ctx.removing[tp] = set(ctx.assignments[tp[0]].partitions[tp[1]])
    log.info("%s-%d: mode None (%s); deleting its replicas %s", tp[0], tp[1], why, sorted(ctx.removing[tp]))
    ctl.failpoints.hit("removal.after-none")
    ctl.send_metadata({tp})
    send_deletes(ctl, tp)


def send_deletes(ctl: ControllerCore, tp: TopicPartition) -> None:
    """StopReplica(delete) to each live replica that has not confirmed and has none in flight."""
    ctx, channel = ctl.ctx, ctl.channel
    assert ctx is not None and channel is not None
    for bid in sorted(ctx.removing.get(tp, set()) & set(ctx.brokers)):
        if (tp, bid) in ctx.stops_in_flight:
            continue
        ctx.stops_in_flight.add((tp, bid))
        request = requests.stop_replica(ctl.config.controller_id, ctx.epoch, {tp: EPOCH_DURING_DELETE}, delete=True)
        channel.send(bid, request, on_response=lambda b, resp, tp=tp: ctl.post(
            "partition_replica_deleted", (tp, b, _stop_error(resp, tp))))


def _stop_error(response: Any, tp: TopicPartition) -> int:
    if response.error_code != ErrorCode.NONE:
        return int(response.error_code)
    for t in response.topics:
        for p in t.partition_errors:
            if (t.topic_name, p.partition_index) == tp:
                return int(p.error_code)
    return ErrorCode.NONE


def on_replica_deleted(ctl: ControllerCore, arg: tuple[TopicPartition, int, int]) -> None:
    ctx = ctl.ctx
    assert ctx is not None
    tp, bid, code = arg
    ctx.stops_in_flight.discard((tp, bid))
    pending = ctx.removing.get(tp)
    if pending is None:
        return
    if code != ErrorCode.NONE:
        log.warning("%s-%d: broker %d answered StopReplica(delete) with error %d; retrying on the next tick",
                    tp[0], tp[1], bid, code)
        return
    pending.discard(bid)
    if pending:
        log.info("%s-%d: broker %d deleted its replica; still waiting on %s", tp[0], tp[1], bid, sorted(pending))
    else:
        remove(ctl, tp)


def remove(ctl: ControllerCore, tp: TopicPartition) -> None:
    """Every replica deleted it: out of the assignment and its state znode gone, in one transaction."""
    ctx = ctl.ctx
    assert ctx is not None
    ctl.failpoints.hit("removal.before-remove")
    topic, p = tp
    a = ctx.assignments[topic]
    rest = a.evolve(partitions={q: r for q, r in a.partitions.items() if q != p})
    try:
        ctx.assignment_versions[topic] = ctl.zk.remove_partition(topic, p, rest, ctx.assignment_versions[topic])
    except StateConflict:  # the topic znode moved on (another DeletePartitions): re-read, retry on the next tick
        log.info("%s-%d: topic znode changed under the removal; retrying", topic, p)
        pending = ctx.removing.get(tp, set())
        ctl.reload_topic(topic)
        ctx.removing[tp] = pending
        return
    ctx.assignments[topic] = rest
    ctx.forget_partition(tp)
    log.info("%s-%d: removed (partitions now %s)", topic, p, sorted(rest.partitions))
    ctl.send_metadata(set(), removed={topic: [p]})


def brokers_changed(ctl: ControllerCore, dead: set[int], joined: set[int]) -> None:
    """A dead replica's request is lost with its sender; a returning one is asked to delete again."""
    ctx = ctl.ctx
    assert ctx is not None
    ctx.stops_in_flight = {(tp, b) for tp, b in ctx.stops_in_flight if b not in dead | joined}
    for tp, pending in sorted(ctx.removing.items()):
        if pending & joined:
            send_deletes(ctl, tp)
