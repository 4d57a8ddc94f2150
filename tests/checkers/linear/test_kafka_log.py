"""The Kafka partition log model: appends (send) acknowledged at offsets, reads to the end of the
log, polls of some records; one sub-history per topic partition; other Kafka ops ignored."""
from __future__ import annotations

from chaoskit.checkers.linear import check


def op(index, process, kind, f, value=None, partition=0, **extra):
    return {"index": index, "process": process, "type": kind, "f": f, "value": value, "topic": "t",
            "partition": partition, **extra}


def test_concurrent_sends_may_take_offsets_in_either_order():
    ops = [op(0, 0, "invoke", "send", "a"), op(1, 1, "invoke", "send", "b"),
           op(2, 1, "ok", "send", "b", offset=0), op(3, 0, "ok", "send", "a", offset=1)]
    assert check(ops, "kafka").valid is True


def test_a_later_send_cannot_take_an_earlier_offset():
    ops = [op(0, 0, "invoke", "send", "a"), op(1, 0, "ok", "send", "a", offset=1),
           op(2, 1, "invoke", "send", "b"), op(3, 1, "ok", "send", "b", offset=0)]
    result = check(ops, "kafka")
    assert result.valid is False
    assert "partition t-0" in result.witnesses[0]["explanation"]


def test_a_read_to_the_end_must_include_acknowledged_appends():
    base = [op(0, 0, "invoke", "append", "a"), op(1, 0, "ok", "append", 0), op(2, 0, "invoke", "append", "b"),
            op(3, 0, "ok", "append", 1), op(4, 1, "invoke", "read", {"from": 0})]
    assert check(base + [op(5, 1, "ok", "read", [[0, "a"], [1, "b"]])], "kafka").valid is True
    stale = check(base + [op(5, 1, "ok", "read", [[0, "a"]])], "kafka")
    assert stale.valid is False
    assert "op 4 (process 1, read from offset 0 returned [[0, 'a']]) on partition t-0" in stale.witnesses[0]["explanation"]


def test_a_poll_may_stop_early_but_not_see_a_changed_record():
    base = [op(0, 0, "invoke", "send", "a"), op(1, 0, "ok", "send", "a", offset=0),
            op(2, 0, "invoke", "send", "b"), op(3, 0, "ok", "send", "b", offset=1), op(4, 1, "invoke", "poll")]
    assert check(base + [op(5, 1, "ok", "poll", [[0, "a"]])], "kafka").valid is True
    assert check(base + [op(5, 1, "ok", "poll", [[1, "x"]])], "kafka").valid is False


def test_polls_with_full_records_are_split_by_partition_and_other_ops_ignored():
    ops = [op(0, 0, "invoke", "send", "a", partition=0), op(1, 0, "ok", "send", "a", partition=0, offset=0),
           op(2, 0, "invoke", "send", "b", partition=1), op(3, 0, "ok", "send", "b", partition=1, offset=0),
           {"index": 4, "process": 1, "type": "ok", "f": "assigned", "value": [0, 1]},
           op(5, 1, "invoke", "poll", partition=None),
           op(6, 1, "ok", "poll", [[0, 0, "k", "a", 0], [1, 0, "k", "b", 0]], partition=None)]
    result = check(ops, "kafka")
    assert result.valid is True and result.counts["sub-histories"] == 2
    ops[-1]["value"] = [[0, 0, "k", "b", 0]]  # partition 0's record 0 is "a", not "b"
    assert check(ops, "kafka").valid is False


def test_an_info_send_may_or_may_not_be_in_the_log():
    base = [op(0, 0, "invoke", "send", "a"), op(1, 0, "info", "send", "a"), op(2, 1, "invoke", "read", 0)]
    assert check(base + [op(3, 1, "ok", "read", [])], "kafka").valid is True
    assert check(base + [op(3, 1, "ok", "read", [[0, "a"]])], "kafka").valid is True
    assert check(base + [op(3, 1, "ok", "read", [[0, "z"]])], "kafka").valid is False
