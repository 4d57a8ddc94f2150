"""KIP-253: deleting partitions (the undeleted count lowered; marked partitions drain, then go)
keeps every acknowledged record and per-key order, under leader isolation, broker kills and
controller failover (the active controller killed as the topic grows, paused as the shrink marks
partitions, cut off past its ZooKeeper session there in the long run, and killed again while
drained partitions are removed). The
consumer group joins late, so a backlog waits for it. Without KIP-253 (deletion by KIP-694's timer
alone with a delay of 0, ordered delivery off, a stock client) the marked partitions go at once
with records the group has not read: caught as `unseen` acknowledged writes.

Marked partitions that hold records are drained by an operator's DeleteRecords once the
group has committed them (`delete-records`), removed (StopReplica deletes every copy) while a leader
and the active controller are killed, and the topic grows back to 8: every acknowledged write is
read and every key keeps its order through marking, draining, removal and growth (the partitions
made again under the removed numbers are other partitions for the checks, history/incarnations.py,
and the group reads them from the start: the coordinators dropped their offsets of the removed
ones). Another case tells the same story with the marked partitions drained by time-based
retention (`retention.ms`) instead, as KIP-253 step 8 has it. Patched only: without KIP-253 a
shrink removes at once, so there is nothing marked to drain (the first case is that profile's catch).
"""
from __future__ import annotations

import pytest

from chaoskit.cluster import capabilities as caps
from chaoskit import Topic, admin_step, mix
from chaoskit.history.incarnations import recreations
from chaoskit.history.reader import History
from chaoskit.run.mixes import (BROKER_KILLS, CONTROLLER_FAULTS, LEADER_ISOLATION, SLOW_GROUP, SMALL_POLLS, TOPIC,
                                combine, controller_failover)

pytestmark = pytest.mark.chaos_needs(caps.KIP253)  # skipped, with the reason, on a broker without it

# created with 4: KIP-253 never goes below the initial count, so the topic grows to 8 first; then
# partitions 6 and 7 are deleted (patched: marked, drained, then gone) once one of them holds
# acknowledged records (producers held up at an isolated leader may not have reached them yet):
# at 30% of the run plus at most 6 s, still before the group joins at 70%
SHRINK = [admin_step(0.1, "expand", 8), admin_step(0.3, "shrink", 6, written_within_s=6)]
# the controller fails while each step is carried out: growth, marking, removal once drained (the
# group joins at 70%). In the short run the marking gets a pause: a failover there (4 s until the
# session expires) would hold the unpatched side's immediate removal until the group had read the
# partitions, and nothing would be lost to catch; the long run has the room for a real one
FAILOVER = [controller_failover(0.1), controller_failover(0.3, "pause"), controller_failover(0.8)]
FAILOVER_LONG = [controller_failover(0.1), controller_failover(0.3, "partition"), controller_failover(0.8)]


def at_once(steps: list) -> list:
    """The unpatched side's deletions: KIP-694's timer with a delay of 0."""
    return [{**s, "params": {**s["params"], "delay_ms": 0}} if s.get("params", {}).get("op") == "shrink" else s
            for s in steps]


# the unpatched side of deletion: KIP-694's removal without KIP-253's ordering
DELETION_WITHOUT_ORDER = {"delete.topic.partition.enable": True}
# what the claim needs: acknowledged writes read back, and (patched) keys that went on in another
# partition. Unpatched, every producer soon waits out a send to a partition removed at once, so
# keys move only between a growth the controller failover holds up and the shrink: a seed can leave
# none delivered; the catch, records of a removed partition never read, is the proof there
READ_BACK = {"lost-write": {"acked_read": 50}}
EVIDENCE = {**READ_BACK, "key-order": {"moved_pairs": 1}}


def _run(chaos, keys: int, producers: int):
    test = chaos.test()
    unordered = chaos.pick(patched={}, unpatched=DELETION_WITHOUT_ORDER)
    scripted = chaos.pick(patched=test.faults["scripted"], unpatched=at_once(test.faults["scripted"]))
    return chaos.run(topics=[Topic(TOPIC, 4)],
                     broker_config=unordered, controller_config=unordered,
                     # unpatched, writes on partitions deleted at once never come: the rest drains in seconds
                     drain_timeout_s=chaos.pick(patched=20, unpatched=8),
                     faults={**test.faults, "scripted": scripted},
                     workload_options={**SLOW_GROUP, "keys": keys, "producers": producers,
                                       "consumer_start_s": test.duration_s * 0.7},
                     # unpatched, a send to a partition deleted at once never completes: do not wait long
                     client_options={**SMALL_POLLS, "send_timeout_s": chaos.pick(patched=30, unpatched=10)})


@pytest.mark.chaos(faults=mix(SHRINK + FAILOVER, LEADER_ISOLATION), workload="keyed-sequences", duration=16,
                   epic="KIP-253", feature="deletion under leader isolation and controller failover", severity="critical",
                   guarantee="kip253-key-order")
def test_key_order_across_deletion(chaos):
    chaos.expect(_run(chaos, 60, 3), unpatched={"unseen"}, evidence=chaos.pick(patched=EVIDENCE, unpatched=READ_BACK))


@pytest.mark.nightly
@pytest.mark.chaos(faults=mix(SHRINK + FAILOVER_LONG + [admin_step(0.6, "shrink", 4)],
                              combine(LEADER_ISOLATION, BROKER_KILLS, CONTROLLER_FAULTS)),
                   workload="keyed-sequences", duration=120, epic="KIP-253", guarantee="kip253-key-order",
                   feature="deletion under isolation, broker kills and controller faults", severity="critical")
def test_key_order_across_deletion_long(chaos):
    chaos.expect(_run(chaos, 200, 4), unpatched={"unseen"}, evidence=chaos.pick(patched=EVIDENCE, unpatched=READ_BACK))


# grow to 8, shrink to 6 once a marked partition holds records, kill a leader, drain the marked ones
# by DeleteRecords once the group committed them, fail the controller while it removes them, grow again
DRAIN = [admin_step(0.1, "expand", 8), admin_step(0.25, "shrink", 6, written_within_s=8),
         {"at": 0.3, "fault": "kill", "target": f"leader-of:{TOPIC}/0", "window_s": 1.5},
         {"at": 0.35, "fault": "delete-records", "target": "client", "window_s": 0.5,
          "params": {"topic": TOPIC, "committed_within_s": 14}},
         controller_failover(0.5), admin_step(0.75, "expand", 8, removed_within_s=12)]


def drained_then_regrown(history: str) -> tuple[dict[int, int], list[tuple[str, int, int, int]]]:
    """({partition: log start} of each marked partition DeleteRecords drained, the partitions made
    again after their removal), from the run's history."""
    ops = History.from_path(history).ops
    deleted = {op["partition"]: op["offset"] for op in ops
               if op.get("process") == "admin" and op.get("f") == "delete-records" and op.get("type") == "ok"}
    return deleted, recreations(ops)


@pytest.mark.chaos(faults=mix(DRAIN, LEADER_ISOLATION), workload="keyed-sequences", duration=24,
                   epic="KIP-253", severity="critical", guarantee="kip253-key-order", profiles=("patched",),
                   feature="marked partitions drained by DeleteRecords, removed under leader and controller kills, made again")
def test_drained_partitions_go_and_come_back_under_faults(chaos):
    result = chaos.run(topics=[Topic(TOPIC, 4)], workload_options={"keys": 60, "producers": 3},
                       client_options=SMALL_POLLS)
    chaos.expect(result, evidence=EVIDENCE)
    deleted, regrown = drained_then_regrown(result.history)
    # the story happened: records of a marked partition deleted (its log start moved past 0), and
    # that partition made again by the growth, which KIP-253 allows only once it is gone
    assert any(start > 0 and any(p == drained for _t, p, _i, _k in regrown) for drained, start in deleted.items()), \
        f"drained {deleted}, made again {regrown}: the story did not happen; replay: {result.replay}"


# the same story drained by retention instead: the topic keeps records 10 s (checked every 0.5 s),
# so a marked partition, written no more, empties 10 s after its last record and goes; partitions
# still written keep theirs (a segment goes only once its newest record is that old, and the
# active segment of a written partition is never that old), and the group, reading from the start,
# has read what a quiet spell lets expire
RETENTION = {"retention.ms": "10000"}
RETENTION_CHECKS = {"log.retention.check.interval.ms": 500}
RETAINED = [admin_step(0.1, "expand", 8), admin_step(0.25, "shrink", 6, written_within_s=8),
            {"at": 0.3, "fault": "kill", "target": f"leader-of:{TOPIC}/0", "window_s": 1.5},
            controller_failover(0.55), admin_step(0.8, "expand", 8, removed_within_s=10)]


def written_then_regrown(history: str) -> tuple[set[int], list[tuple[str, int, int, int]]]:
    """(the partitions at or above 6 that took acknowledged records before any was made again,
    the partitions made again after their removal), from the run's history."""
    ops = History.from_path(history).ops
    regrown = recreations(ops)
    before = regrown[0][2] if regrown else float("inf")
    written = {op["partition"] for op in ops if op.get("f") == "send" and op.get("type") == "ok"
               and op.get("partition") is not None and op["partition"] >= 6 and op["index"] < before}
    return written, regrown


@pytest.mark.nightly  # about 40 s; CI drains by DeleteRecords (the case above), the same removal and growth
@pytest.mark.chaos(faults=mix(RETAINED, LEADER_ISOLATION), workload="keyed-sequences", duration=30,
                   epic="KIP-253", severity="critical", guarantee="kip253-key-order", profiles=("patched",),
                   feature="marked partitions drained by retention, removed under leader and controller kills, made again")
def test_partitions_drained_by_retention_go_and_come_back_under_faults(chaos):
    result = chaos.run(topics=[Topic(TOPIC, 4, config=RETENTION)], broker_config=RETENTION_CHECKS,
                       workload_options={"keys": 60, "producers": 3}, client_options=SMALL_POLLS)
    chaos.expect(result, evidence=EVIDENCE)
    written, regrown = written_then_regrown(result.history)
    # the story happened: a marked partition that held acknowledged records (so only retention
    # could empty it) was removed and made again by the growth, which KIP-253 allows only once it is gone
    assert written & {p for _t, p, _i, _k in regrown}, \
        f"written {sorted(written)}, made again {regrown}: the story did not happen; replay: {result.replay}"
