"""The ordered client's pure parts, without a cluster: the KIP-253 gates, KIP-320 divergence,
producer routing (linear hashing, never a ReadOnly/None partition) and the event hooks."""
from __future__ import annotations

import pytest

from chaoskit.client.admin import PartitionInfo, TopicInfo
from chaoskit.client.events import EventHooks, history_key, history_value
from chaoskit.client.gates import DeletionGate, ExpansionGate, keys_leaving
from chaoskit.client.linear_hash import linear_partition
from chaoskit.client.routing import NoWritablePartition, Router, writable
from chaoskit.client.truncation import EpochEnd, divergence
from chaoskit.protocol.extensions import PartitionMode


def topic(modes: dict[int, PartitionMode], initial: int | None, undeleted: int | None) -> TopicInfo:
    return TopicInfo("t", 0, {p: PartitionInfo(p, 1, 0, (1,), (1,), m) for p, m in modes.items()}, initial, undeleted)


def test_expansion_gate_opens_once_the_blocker_passed_its_old_epoch():
    gate = ExpansionGate(blocker=0, threshold=10)
    assert not gate.open(-1) and not gate.open(9)
    assert gate.open(10) and gate.open(11)


def test_deletion_gate_limits_until_every_marked_partition_drained_and_announced():
    gate = DeletionGate(upper={6: 40, 7: 25})
    assert gate.limit() == 25 and gate.waiting_on == [6, 7]
    assert gate.due(30) is None  # 7's keys are due at 25, but 7 is not drained
    gate.drained.add(7)
    assert gate.limit() == 25 and gate.waiting_on == [6]  # drained, not yet announced
    assert gate.due(24) is None and gate.due(25) == {7}
    gate.announced |= {7}
    assert gate.limit() == 40
    gate.drained.add(6)
    assert gate.due(40) == {6}
    gate.announced |= {6}
    assert gate.limit() is None and gate.waiting_on == []


def test_a_marked_partition_removed_before_the_threshold_is_still_announced_there():
    # removed (so drained) while P1 was below its threshold: P1 stops there once, to say key-assigned
    gate = DeletionGate(upper={6: 40})
    gate.drained.add(6)
    assert gate.limit() == 40 and gate.due(39) is None and gate.due(40) == {6}


def test_divergence_when_the_leader_ends_our_epoch_below_our_position():
    assert divergence(EpochEnd(0, 0, 10), position=20, last_epoch=1) == 10  # epoch 1 unknown there: ends at 10
    assert divergence(EpochEnd(0, 1, 20), position=20, last_epoch=1) is None  # same history
    assert divergence(EpochEnd(0, 1, 35), position=20, last_epoch=1) is None  # the epoch went on
    assert divergence(EpochEnd(74, -1, -1), position=20, last_epoch=1) is None  # fenced: ask again later


def test_routing_uses_linear_hashing_and_skips_marked_partitions():
    info = topic({p: PartitionMode.READ_WRITE for p in range(6)} | {6: PartitionMode.READ_ONLY,
                                                                     7: PartitionMode.NONE}, 4, 6)
    assert writable(info) == [0, 1, 2, 3, 4, 5]
    router = Router()
    for i in range(200):
        key = b"k%d" % i
        assert router.partition(info, key) == linear_partition(key, 4, 6)
    assert {router.partition(info, None) for _ in range(12)} == set(range(6))


def test_routing_without_counts_is_the_stock_rule_and_a_non_writable_target_is_refused():
    stock = topic({p: PartitionMode.READ_WRITE for p in range(3)}, None, None)
    from chaoskit.client.linear_hash import modulo_partition
    assert Router().partition(stock, b"x") == modulo_partition(b"x", 3)
    odd = topic({0: PartitionMode.READ_ONLY, 1: PartitionMode.READ_WRITE}, 2, 2)  # stale or odd metadata
    key = next(b"k%d" % i for i in range(100) if linear_partition(b"k%d" % i, 2, 2) == 0)
    with pytest.raises(NoWritablePartition, match="not ReadWrite"):
        Router().partition(odd, key)
    with pytest.raises(NoWritablePartition, match="no ReadWrite"):
        Router().partition(topic({0: PartitionMode.NONE}, 1, 1), None)


def test_event_hooks_copy_events_and_survive_a_failing_callback():
    hooks, seen = EventHooks(), []

    def broken(_event: dict) -> None:
        raise RuntimeError("checker bug")
    hooks.subscribe(broken)
    stop = hooks.subscribe(seen.append)
    hooks.emit({"f": "send", "type": "invoke"})
    seen[0]["type"] = "changed"
    stop()
    hooks.emit({"f": "send", "type": "ok"})
    assert seen == [{"f": "send", "type": "changed"}]
    with pytest.raises(TypeError, match="callable"):
        hooks.subscribe("not a function")  # type: ignore[arg-type]


def test_history_values_parse_json_and_keys_stay_text():
    assert history_value(b'[1, "k", 2]') == [1, "k", 2] and history_value(b"plain") == "plain"
    assert history_key(b"12") == "12" and history_key(None) is None


def test_truncation_policy_follows_the_reset_policy_unless_given():
    from chaoskit.client.consumer import OrderedConsumer
    assert OrderedConsumer("127.0.0.1:1").truncation_reset
    assert not OrderedConsumer("127.0.0.1:1", auto_offset_reset="none").truncation_reset
    assert not OrderedConsumer("127.0.0.1:1", truncation_policy="raise").truncation_reset
    assert OrderedConsumer("127.0.0.1:1", auto_offset_reset="none", truncation_policy="reset").truncation_reset
    with pytest.raises(ValueError, match="truncation_policy"):
        OrderedConsumer("127.0.0.1:1", truncation_policy="ignore")


def test_keys_leave_a_marked_or_removed_partition_of_an_ordered_topic_only():
    shrunk = topic({0: PartitionMode.READ_WRITE, 1: PartitionMode.READ_WRITE, 2: PartitionMode.READ_ONLY}, 4, 2)
    stock = TopicInfo("s", 0, {0: PartitionInfo(0, 1, 0, (1,), (1,), PartitionMode.READ_WRITE)}, None, None)
    owned = [("t", 0), ("t", 2), ("t", 3), ("s", 0), ("s", 5), ("gone", 1)]
    # 2 is marked, 3 was removed before this member's rebalance: both lose their keys to 0 and 1;
    # a stock topic has no key moves, and a topic deleted whole has no keys left to move
    assert keys_leaving(owned, {"t": shrunk, "s": stock}) == [("t", 2), ("t", 3)]
