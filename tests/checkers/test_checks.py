"""The checks' meanings on small hand-built histories (local engine; Spark agreement is tested
in test_spark_checks.py)."""
from __future__ import annotations

from chaoskit.checkers.run import run_checks

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
    assert result(only, "lost-write").valid is True


def test_an_indeterminate_send_never_read_is_no_anomaly():
    ops = send(0, 0, "a", 1, None, None, kind="info") + send(2, 0, "a", 2, 0, 0) + poll(4, 10, (0, 0, "a", 0, 2))
    for name in ("lost-write", "unseen", "key-order"):
        assert result(ops, name).valid is True


def test_write_to_readonly_counts_writes_invoked_after_the_mode_change():
    mode = {"index": 2, "process": "admin", "type": "ok", "f": "partition-mode", "topic": T, "partition": 0,
            "value": {"mode": "ReadOnly"}}
    ops = send(0, 0, "a", 1, 0, 0) + [mode] + send(3, 0, "a", 2, 0, 1) + send(5, 0, "b", 3, 1, 0)
    r = result(ops, "write-to-readonly")
    assert r.counts["anomalies"] == 1 and r.witnesses[0]["offset"] == 1 and r.witnesses[0]["mode"] == "ReadOnly"
    back = {**mode, "index": 7, "value": {"mode": "ReadWrite"}}
    assert result(ops[:3] + [back] + [{**op, "index": op["index"] + 10} for op in ops[3:]],
                  "write-to-readonly").valid is True


def test_coordinator_split():
    def coord(i, proc, partition):
        return {"index": i, "process": proc, "type": "ok", "f": "coordinator",
                "value": {"group": "g", "partition": partition, "node": 1}}
    assert result([coord(0, 1, 5), coord(1, 2, 5)], "coordinator-split").valid is True
    r = result([coord(0, 1, 5), coord(1, 2, 9)], "coordinator-split")
    assert r.valid is False and r.witnesses[0]["partitions"] == [5, 9]
