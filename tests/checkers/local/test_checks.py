"""The checks' meanings on small hand-built histories (local engine; Spark agreement is tested
in tests/checkers/spark/test_checks.py)."""
from __future__ import annotations

import pytest

from chaoskit.checkers.catalog import NOT_MOVED, OUT_OF_ORDER
from chaoskit.run.checks import run_checks

T = "t"


def send(i, proc, key, seq, p, off, kind="ok"):
    value = [proc, key, seq]
    done = {"process": proc, "type": kind, "f": "send", "topic": T, "key": key, "value": value}
    if kind == "ok":
        done.update(partition=p, offset=off)
    return [{"index": i, "process": proc, "type": "invoke", "f": "send", "topic": T, "key": key, "value": value},
            {**done, "index": i + 1}]


def poll(i, proc, *records):
    return [{"index": i, "process": proc, "type": "invoke", "f": "poll", "topic": T},
            {"index": i + 1, "process": proc, "type": "ok", "f": "poll", "topic": T,
             "value": [[p, o, key, [pr, key, seq], 0] for p, o, key, pr, seq in records]}]


def result(ops, name):
    return run_checks(ops, [name], engine="local").results[name]


def test_key_order_across_partitions_and_consumers():
    ops = send(0, 0, "k", 1, 0, 0) + send(2, 0, "k", 2, 1, 0) \
        + poll(4, 10, (1, 0, "k", 0, 2)) + poll(6, 11, (0, 0, "k", 0, 1))
    r = result(ops, "key-order")
    assert r.valid is False and r.counts["anomalies"] == 1
    w = r.witnesses[0]
    assert (w["first"], w["second"], w["first_partition"], w["second_partition"]) == \
        ('[0,"k",1]', '[0,"k",2]', 0, 1)
    assert "delivered first" in w["explanation"]
    in_order = send(0, 0, "k", 1, 0, 0) + send(2, 0, "k", 2, 1, 0) \
        + poll(4, 11, (0, 0, "k", 0, 1)) + poll(6, 10, (1, 0, "k", 0, 2))
    assert result(in_order, "key-order").valid is True


def key_cb(i, f, *tps):
    """A key callback op: f "revoked" or "assigned", naming (topic, partition) pairs."""
    name = "on_partition_key_maybe_revoked" if f == "revoked" else "on_partition_key_assigned"
    return {"index": i, "process": 10 if f == "revoked" else 11, "type": "ok", "f": name,
            "value": sorted([t, p] for t, p in tps)}


def removal(i, p, count):
    """Admin ops: partition p marked ReadOnly (op i), then made again by an expansion to count (op
    i + 1), so it had been removed between the two."""
    return [{"index": i, "process": "admin", "type": "ok", "f": "partition-mode", "topic": T, "partition": p,
             "value": {"mode": "ReadOnly"}},
            {"index": i + 1, "process": "admin", "type": "ok", "f": "expand", "topic": T, "value": {"count": count}}]


def removed(i, p):
    """The admin op that saw partition p gone from the topic's assignment (op i)."""
    return {"index": i, "process": "admin", "type": "ok", "f": "partition-removed", "topic": T, "partition": p}


# key k sent by process 0 to p0 then p1 (ops 0-3), A delivered at op 5 by one consumer and B at op 9
# by another unless said otherwise; ops 6 and 7 between them: (ops, anomalies, cross-partition pairs checked)
A_THEN_B = send(0, 0, "k", 1, 0, 0) + send(2, 0, "k", 2, 1, 0)
POLL_A, POLL_B = poll(4, 10, (0, 0, "k", 0, 1)), poll(8, 11, (1, 0, "k", 0, 2))
KEY_MOVES = {
    "revoked-then-assigned": (A_THEN_B + POLL_A + [key_cb(6, "revoked", (T, 0)), key_cb(7, "assigned", (T, 1))]
                              + POLL_B, 0, 1),
    "in-lists-of-partitions": (A_THEN_B + POLL_A + [key_cb(6, "revoked", (T, 0), (T, 2)),
                                                    key_cb(7, "assigned", (T, 3), (T, 1))] + POLL_B, 0, 1),
    "assigned-then-revoked": (A_THEN_B + POLL_A + [key_cb(6, "assigned", (T, 1)), key_cb(7, "revoked", (T, 0))]
                              + POLL_B, 1, 1),
    "revoked-before-a": (A_THEN_B + [key_cb(4, "revoked", (T, 0))] + poll(5, 10, (0, 0, "k", 0, 1))
                         + [key_cb(7, "assigned", (T, 1))] + POLL_B, 1, 1),
    "assigned-after-b": (A_THEN_B + POLL_A + [key_cb(6, "revoked", (T, 0))] + poll(7, 11, (1, 0, "k", 0, 2))
                         + [key_cb(9, "assigned", (T, 1))], 1, 1),
    "revoked-of-another-partition": (A_THEN_B + POLL_A + [key_cb(6, "revoked", (T, 2)),
                                                          key_cb(7, "assigned", (T, 1))] + POLL_B, 1, 1),
    "assigned-on-another-topic": (A_THEN_B + POLL_A + [key_cb(6, "revoked", (T, 0)), key_cb(7, "assigned", ("u", 1))]
                                  + POLL_B, 1, 1),
    "callbacks-only-after-b": (A_THEN_B + POLL_A + POLL_B + [key_cb(10, "revoked", (T, 0)),
                                                             key_cb(11, "assigned", (T, 1))], 1, 1),
    # A's partition removed between the deliveries (KIP-253 removes it once drained): nothing to wait for
    "a-removed-between": (A_THEN_B + POLL_A + removal(6, 0, 2) + POLL_B + [key_cb(10, "assigned", (T, 1))], 0, 1),
    "a-marked-not-removed": (A_THEN_B + POLL_A + removal(6, 0, 2)[:1] + [key_cb(7, "assigned", (T, 1))] + POLL_B,
                             1, 1),
    "a-removed-after-b": (A_THEN_B + POLL_A + POLL_B + removal(10, 0, 2) + [key_cb(12, "assigned", (T, 1))], 1, 1),
    # seen removed (a ZooKeeper watch's `partition-removed`) between them, not made again
    "a-seen-removed-between": (A_THEN_B + POLL_A + removal(6, 0, 2)[:1] + [removed(7, 0)] + POLL_B
                               + [key_cb(10, "assigned", (T, 1))], 0, 1),
    "a-seen-removed-after-b": (A_THEN_B + POLL_A + removal(6, 0, 2)[:1] + POLL_B + [removed(10, 0)]
                               + [key_cb(11, "assigned", (T, 1))], 1, 1),
    # not checked: a topic without key callbacks (a client without KIP-253's key listener)
    "only-another-topic-has-callbacks": (A_THEN_B + POLL_A + [key_cb(6, "revoked", ("u", 0)),
                                                              key_cb(7, "assigned", ("u", 1))] + POLL_B, 0, 0),
    "no-key-callbacks": (A_THEN_B + POLL_A + POLL_B, 0, 0),
    # not checked: one partition
    "same-partition": (send(0, 0, "k", 1, 0, 0) + send(2, 0, "k", 2, 0, 1) + POLL_A + [key_cb(6, "assigned", (T, 1))]
                       + poll(8, 11, (0, 1, "k", 0, 2)), 0, 0),
    # the partitions are the deliveries': an indeterminate send has none of its own
    "indeterminate-a": (send(0, 0, "k", 1, None, None, kind="info") + send(2, 0, "k", 2, 1, 0) + POLL_A
                        + [key_cb(6, "revoked", (T, 0)), key_cb(7, "assigned", (T, 1))] + POLL_B, 0, 1),
    # out of order is reported once, as such, whatever the callbacks
    "out-of-order": (A_THEN_B + poll(4, 11, (1, 0, "k", 0, 2)) + [key_cb(6, "assigned", (T, 1))]
                     + poll(8, 10, (0, 0, "k", 0, 1)), 1, 0),
}


@pytest.mark.parametrize("case", KEY_MOVES)
def test_key_order_between_partitions_needs_key_revoked_then_key_assigned_between_the_deliveries(case):
    ops, anomalies, cross = KEY_MOVES[case]
    r = result(ops, "key-order")
    assert (r.counts["anomalies"], r.counts["cross_partition_pairs"]) == (anomalies, cross)
    if anomalies:
        w = r.witnesses[0]
        assert w["reason"] == (OUT_OF_ORDER if case == "out-of-order" else NOT_MOVED % (0, 1))
        assert w["reason"] in w["explanation"] and (w["first_delivered"], w["second_delivered"]) != (None, None)


def test_a_rebalance_resets_poll_order_but_a_rewind_without_one_is_nonmonotonic():
    base = send(0, 0, "a", 1, 0, 0) + send(2, 0, "a", 2, 0, 1)
    rewind = base + poll(4, 10, (0, 0, "a", 0, 1), (0, 1, "a", 0, 2)) + poll(6, 10, (0, 0, "a", 0, 1))
    assert result(rewind, "nonmonotonic-poll").counts["anomalies"] == 1
    assigned = [{"index": 6, "process": 10, "type": "ok", "f": "on_partitions_assigned", "value": [[T, 0]]}]
    rebalanced = base + poll(4, 10, (0, 0, "a", 0, 1), (0, 1, "a", 0, 2)) + assigned + \
        [{**op, "index": op["index"] + 1} for op in poll(6, 10, (0, 0, "a", 0, 1))]
    assert result(rebalanced, "nonmonotonic-poll").valid is True


def test_lost_write_needs_a_later_offset_read_unseen_does_not():
    ops = send(0, 0, "a", 1, 0, 0) + send(2, 0, "a", 2, 0, 1) + poll(4, 10, (0, 1, "a", 0, 2))
    assert result(ops, "lost-write").counts["anomalies"] == 1
    assert result(ops, "unseen").valid is True
    only = send(0, 0, "a", 1, 0, 0) + poll(2, 10)
    assert result(only, "unseen").counts["anomalies"] == 1
    nothing_read = result(only, "lost-write")  # nothing was read: whether anything is lost is not known
    assert nothing_read.valid == "unknown" and not nothing_read.judged and "was ever read" in nothing_read.error


def test_an_indeterminate_send_never_read_is_no_anomaly():
    ops = (send(0, 0, "a", 1, None, None, kind="info") + send(2, 0, "a", 2, 0, 0) + send(4, 0, "a", 3, 0, 1)
           + poll(6, 10, (0, 0, "a", 0, 2), (0, 1, "a", 0, 3)))
    for name in ("lost-write", "unseen", "key-order"):
        assert result(ops, name).valid is True


def test_write_to_readonly_counts_writes_invoked_after_the_mode_change():
    mode = {"index": 2, "process": "admin", "type": "ok", "f": "partition-mode", "topic": T, "partition": 0,
            "value": {"mode": "ReadOnly"}}
    ops = send(0, 0, "a", 1, 0, 0) + [mode] + send(3, 0, "a", 2, 0, 1) + send(5, 0, "b", 3, 1, 0)
    r = result(ops, "write-to-readonly")
    assert r.counts["anomalies"] == 1 and r.witnesses[0]["offset"] == 1 and r.witnesses[0]["mode"] == "ReadOnly"
    assert r.counts["displaced_sends"] == 1  # "a" was last written to the partition then ReadOnly
    back = {**mode, "index": 7, "value": {"mode": "ReadWrite"}}
    rerouted = send(4, 0, "a", 4, 1, 1)  # while ReadOnly, "a" goes to partition 1: the evidence, no anomaly
    clean = result(ops[:3] + rerouted + [back] + [{**op, "index": op["index"] + 10} for op in ops[3:]],
                   "write-to-readonly")
    assert clean.valid is True and clean.counts["displaced_sends"] == 1
    never_displaced = result(ops[:3] + [back] + [{**op, "index": op["index"] + 10} for op in ops[3:]],
                             "write-to-readonly")
    assert never_displaced.valid == "unknown" and not never_displaced.judged


def test_coordinator_split():
    def coord(i, proc, partition):
        return {"index": i, "process": proc, "type": "ok", "f": "coordinator",
                "value": {"group": "g", "partition": partition, "node": 1}}
    assert result([coord(0, 1, 5), coord(1, 2, 5)], "coordinator-split").valid is True
    r = result([coord(0, 1, 5), coord(1, 2, 9)], "coordinator-split")
    assert r.valid is False and r.witnesses[0]["partitions"] == [5, 9]


def committed(start, group, *reads):
    """A watcher's `committed` reads from op `start` on: each {partition: offset} (-1: none committed)."""
    return [op for n, offsets in enumerate(reads) for op in (
        {"index": start + 2 * n, "process": 9, "type": "invoke", "f": "committed", "topic": T},
        {"index": start + 2 * n + 1, "process": 9, "type": "ok", "f": "committed", "topic": T,
         "value": {"group": group, "offsets": [[p, o] for p, o in sorted(offsets.items())]}})]


# reads of the group's committed offsets: (ops, anomalies, pairs judged)
COMMIT_CASES = {
    "forward": (committed(0, "g", {0: -1, 1: -1}, {0: 5, 1: -1}, {0: 5, 1: 2}, {0: 9, 1: 2}), 0, 3),
    "back": (committed(0, "g", {0: 5}, {0: 3}, {0: 4}), 1, 2),
    "vanished": (committed(0, "g", {0: 5, 1: 6}, {0: -1, 1: 6}), 1, 2),
    # two groups' offsets of one partition are two sequences: one lower than the other is no step back
    "two groups": (committed(0, "g", {0: 8}) + committed(2, "h", {0: 1}) + committed(4, "g", {0: 8}), 0, 1),
    "never committed": (committed(0, "g", {0: -1}, {0: -1}), 0, 0),
    # offset 0 committed: nothing was read, so nothing judged, though its vanishing is still a step back
    "nothing read": (committed(0, "g", {0: 0}, {0: 0}, {0: -1}), 1, 0),
}


@pytest.mark.parametrize("case", COMMIT_CASES)
def test_commit_regressed(case):
    ops, anomalies, pairs = COMMIT_CASES[case]
    r = result(ops, "commit-regressed")
    assert r.counts == {"anomalies": anomalies, "commit_pairs": pairs}
    assert r.valid == (False if anomalies else "unknown" if not pairs else True)  # nothing read: nothing judged
    if case == "vanished":
        assert r.witnesses[0]["explanation"] == \
            "group g: the committed offset of t/0 was 5 (op 1), then -1 (op 3)"


def rebalance(i, proc, f, *partitions):
    return [{"index": i, "process": proc, "type": "ok", "f": f"on_partitions_{f}", "value": [[T, p] for p in partitions]}]


def read(i, proc, offset):
    return poll(i, proc, (0, offset, "k", 0, offset))


# members 10 and 11 of one group and partition 0: (ops, anomalies, handovers)
OWNER_CASES = {
    "handed over": (rebalance(0, 10, "assigned", 0) + read(1, 10, 0) + rebalance(3, 10, "revoked", 0)
                    + rebalance(4, 11, "assigned", 0) + read(5, 11, 1), 0, 1),
    "held by both": (rebalance(0, 10, "assigned", 0) + read(1, 10, 0) + rebalance(3, 11, "assigned", 0)
                     + read(4, 11, 1) + read(6, 10, 2) + rebalance(8, 11, "revoked", 0), 1, 2),
    "given back": (rebalance(0, 10, "assigned", 0) + read(1, 10, 0) + rebalance(3, 10, "revoked", 0)
                   + rebalance(4, 11, "assigned", 0) + read(5, 11, 1) + rebalance(7, 11, "revoked", 0)
                   + rebalance(8, 10, "assigned", 0) + read(9, 10, 2), 0, 2),
    "one member": (rebalance(0, 10, "assigned", 0) + read(1, 10, 0) + read(3, 10, 1)
                   + rebalance(5, 10, "revoked", 0), 0, 0),
}


@pytest.mark.parametrize("case", OWNER_CASES)
def test_double_owner(case):
    ops, anomalies, handovers = OWNER_CASES[case]
    r = result(ops, "double-owner")
    assert r.counts == {"anomalies": anomalies, "handovers": handovers}
    assert r.valid == (False if anomalies else "unknown" if not handovers else True)
    if anomalies:
        assert r.witnesses[0]["explanation"] == ("t/0: process 10 read offset 0 (op 2), process 11 then read offset 1 "
                                                 "(op 5), and process 10 offset 2 (op 7) with no assignment of its "
                                                 "own in between")


def test_double_owner_runs_only_when_named():
    ops = OWNER_CASES["held by both"][0]
    assert "double-owner" not in run_checks(ops, engine="local").results


# --- truncation, judged by what the consumers did -------------------------------------------------
# Producer 0 writes a0..a2 at offsets 0..2 (a1 and a2 indeterminate: the old leader alone had them);
# consumer 10 reads all three; an unclean election truncates offsets 1 and 2, and producer 1's b1..b3
# are acknowledged at offsets 1..3. What consumer 10 (a stock client: it reports nothing) reads next
# decides.
def truncated_then(*after):
    before = (send(0, 0, "a", 0, 0, 0) + send(2, 0, "a", 1, None, None, kind="info")
              + send(4, 0, "a", 2, None, None, kind="info")
              + poll(6, 10, (0, 0, "a", 0, 0), (0, 1, "a", 0, 1), (0, 2, "a", 0, 2)))
    replacements = send(8, 1, "b", 1, 0, 1) + send(10, 1, "b", 2, 0, 2) + send(12, 1, "b", 3, 0, 3)
    return before + replacements + [op for i, ops in enumerate(after) for op in
                                    [{**o, "index": 14 + 2 * i + n} for n, o in enumerate(ops)]]


def test_a_consumer_that_reads_again_from_the_divergence_offset_detected_the_truncation():
    ops = truncated_then(poll(0, 10, (0, 1, "b", 1, 1), (0, 2, "b", 1, 2), (0, 3, "b", 1, 3)))
    r = result(ops, "truncation-undetected")
    assert r.valid is True and r.counts["replaced_reads"] == 2  # it judged the two replaced reads
    assert result(ops, "nonmonotonic-poll").valid is True  # the step back went over the replaced offsets


def test_a_consumer_that_goes_on_past_the_divergence_offset_did_not():
    ops = truncated_then(poll(0, 10, (0, 3, "b", 1, 3)))
    r = result(ops, "truncation-undetected")
    assert r.valid is False and r.counts == {"anomalies": 2, "replaced_reads": 2}
    assert [(w["offset"], w["later"]) for w in r.witnesses] == [(1, ['[1,"b",1]']), (2, ['[1,"b",2]'])]
    assert "that offset later held [1,\"b\",1], and after the read no consumer read the partition again" in \
        r.witnesses[0]["explanation"]
    assert result(ops, "lost-write").counts["anomalies"] == 2  # and it never read what replaced them


def test_reading_again_from_past_the_divergence_offset_misses_what_lies_below():
    ops = truncated_then(poll(0, 10, (0, 2, "b", 1, 2), (0, 3, "b", 1, 3)))
    r = result(ops, "truncation-undetected")
    assert r.counts["anomalies"] == 1 and r.witnesses[0]["offset"] == 1


def test_a_replaced_read_of_a_partition_nobody_read_again_is_not_judged():
    # the consumers stopped (the run ended) before the replacement: they never read past it
    r = result(truncated_then(), "truncation-undetected")
    assert r.valid == "unknown" and r.counts["replaced_reads"] == 0 and not r.judged
    # reads of the partition before the replacement was seen are no reads past it either
    early = (send(0, 0, "a", 0, 0, 0) + send(2, 0, "a", 1, None, None, kind="info")
             + poll(4, 10, (0, 0, "a", 0, 0), (0, 1, "a", 0, 1)) + poll(6, 10, (0, 2, "c", 0, 2))
             + send(8, 1, "b", 1, 0, 1))
    assert result(early, "truncation-undetected").counts["replaced_reads"] == 0


def test_the_group_reading_again_or_a_reported_truncation_counts():
    other = truncated_then(poll(0, 11, (0, 1, "b", 1, 1), (0, 2, "b", 1, 2)))  # the next owner reads from 1
    assert result(other, "truncation-undetected").valid is True
    report = {"process": 10, "type": "ok", "f": "truncation-detected", "topic": T, "partition": 0, "offset": 1}
    reported = truncated_then([report], poll(0, 10, (0, 3, "b", 1, 3)))
    assert result(reported, "truncation-undetected").valid is True


def test_a_read_record_the_truncation_replaced_and_its_producer_wrote_again_is_no_duplicate():
    # a1, read at offset 1 before the truncation replaced it, is sent again and acknowledged at offset 4
    retried = truncated_then(send(0, 0, "a", 1, 0, 4), poll(0, 10, (0, 1, "b", 1, 1), (0, 4, "a", 0, 1)))
    r = result(retried, "duplicate")
    # six values were seen; five are judged: the one the truncation replaced is no offset's last value
    assert r.valid is True and r.counts["values"] == 5
    # a second copy where nothing was replaced is one
    twice = truncated_then(send(0, 0, "a", 1, 0, 4), poll(0, 10, (0, 4, "a", 0, 1), (0, 5, "a", 0, 1)))
    r = result(twice, "duplicate")
    assert r.valid is False and r.witnesses[0]["positions"] == [[T, 0, 4], [T, 0, 5]]


def test_a_history_without_a_truncation_read_into_judges_nothing():
    ops = send(0, 0, "a", 0, 0, 0) + poll(2, 10, (0, 0, "a", 0, 0))
    r = result(ops, "truncation-undetected")
    assert r.valid == "unknown" and not r.judged and "no consumer read a record that a truncation" in r.error
    # by default it is reported as not exercised and does not decide the verdict
    verdict = run_checks(ops, engine="local")
    assert "truncation-undetected" in verdict.not_exercised and verdict.valid is True


def test_a_step_back_over_offsets_nobody_replaced_is_still_nonmonotonic():
    ops = truncated_then(poll(0, 10, (0, 1, "b", 1, 1), (0, 2, "b", 1, 2), (0, 3, "b", 1, 3)),
                         poll(0, 10, (0, 3, "b", 1, 3)))  # then offset 3 again: nothing replaced there
    r = result(ops, "nonmonotonic-poll")
    assert r.counts["anomalies"] == 1 and (r.witnesses[0]["from_offset"], r.witnesses[0]["to_offset"]) == (3, 3)


# --- moved-value-kept (KIP-253 §9), judged by what a restore read found in the log ---------------
def moved_then_restored(restored: set[int], topic: str = T, op_s: float = 1.0) -> list[dict]:
    """Key k written at p0 offset 0, then (it moved) three times at p2; key f five times more at p0,
    offsets 1..5; a restore read then finds `restored` of p0's offsets (and p2's last). One op each
    `op_s`: at 1 s, k's writes at p2 complete at 3, 5 and 7 s, f's sends are invoked at 8..16 s."""
    ops = send(0, 0, "k", 0, 0, 0) + [op for n in range(3) for op in send(2 + 2 * n, 0, "k", 1 + n, 2, n)]
    ops += [op for n in range(5) for op in send(8 + 2 * n, 1, "f", n, 0, 1 + n)]
    ops += [{"index": 18 + n, "process": "restore", "type": "ok", "f": "restore", "topic": T, "partition": p,
             "offset": o, "key": "k" if p == 2 or o == 0 else "f", "value": None}
            for n, (p, o) in enumerate([(0, o) for o in sorted(restored)] + [(2, 2)])]
    return [{**op, "topic": topic, "time_ns": int(op["index"] * op_s * 1e9)} for op in ops]


MOVED_CASES = {  # (restored offsets of p0, seconds an op) -> (anomalies, judged keys)
    "kept": ({0, 5}, 1.0, 1, 1),  # f's 1..4 compacted (the last invoked at 14 s): k's old value should have gone
    "removed": ({5}, 1.0, 0, 1),
    "no compaction seen": ({0, 1, 2, 3, 4, 5}, 1.0, 0, 0),
    # only f's offset 1 (invoked at 4 s) went: one write of k (done at 1.5 s) 2 s before it, not two
    "one chance": ({0, 2, 3, 4, 5}, 0.5, 0, 0),
    "two chances": ({0, 2, 3, 4, 5}, 1.0, 1, 1),  # the same at 1 s an op: writes done at 3 and 5 s, before 8 s
}


@pytest.mark.parametrize("case", MOVED_CASES)
def test_moved_value_kept_fires_on_an_old_value_compaction_left(case):
    restored, op_s, anomalies, judged = MOVED_CASES[case]
    r = result(moved_then_restored(restored, op_s=op_s), "moved-value-kept")
    assert (r.counts["anomalies"], r.counts["moved_keys"]) == (anomalies, judged)
    assert r.valid == (False if anomalies else True if judged else "unknown")
    if anomalies:
        w = r.witnesses[0]
        assert (w["key"], w["partition"], w["offset"], w["moved_to"]) == ("k", 0, 0, 2)
        assert w["writes"] == (3 if case == "kept" else 2)
        assert "still at t/0 offset 0" in w["explanation"]


def test_moved_value_kept_needs_a_restore_read():
    ops = [op for op in moved_then_restored({0, 5}) if op["f"] != "restore"]
    r = result(ops, "moved-value-kept")
    assert r.valid == "unknown"


@pytest.mark.parametrize("fault_at,after", [(None, 0), (1, 2), (4, 1), (8, 0)], ids=["none", "before", "between", "after"])
def test_lost_write_counts_writes_acknowledged_once_the_faults_began(fault_at, after):
    """A durability claim means something only for writes acknowledged after the first fault's
    start (a nemesis op): lost-write and unseen count them (acked_after_fault), for the claim's evidence."""
    ops = send(2, 0, "k", 1, 0, 0) + send(6, 0, "k", 2, 0, 1) + poll(10, 5, (0, 0, "k", 0, 1), (0, 1, "k", 0, 2))
    if fault_at is not None:
        ops.append({"index": fault_at, "process": "nemesis", "type": "info", "f": "start",
                    "value": {"fault": "kill", "window": 1}})
    for name in ("lost-write", "unseen"):
        r = result(ops, name)
        assert r.valid is True and r.counts["acked"] == 2 and r.counts["acked_after_fault"] == after
