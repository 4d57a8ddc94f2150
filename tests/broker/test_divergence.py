"""KIP-320/595 on the leader: a Fetch (v12, as kafka-python and librdkafka send it) whose
last_fetched_epoch and fetch_offset are not a point of the leader's log is answered with no records,
error NONE and `diverging_epoch` (the epoch, or the largest one below it, and where it ends in the
leader's log), at once; a consistent one is served as before; without KIP-320 the field is ignored.

The divergence is real: broker 1 leads at epoch 0 with broker 2 in sync (offsets 0-2), broker 2
stops, broker 1 leads alone at epoch 1 (offsets 3-6), then broker 2 is made leader at epoch 2 and
takes offsets 3-4 (its ISR: itself, or with broker 1, which stays silent). A consumer that read up to 6 from broker 1 fetches at 7 after epoch 1; epoch 1 is
unknown to broker 2, whose largest epoch below it, 0, ends at 3.
"""
from __future__ import annotations

import time
from typing import Any

import pytest

from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.records import build_batch, decode_records, split_batches

TOPIC = "diverge"
FETCH_V = 12  # what kafka-python 3.0 and librdkafka 2.x send (docs/protocol.md)


def values_in(records: bytes | None) -> list[bytes]:
    return [r.value for batch in split_batches(records or b"") for r in decode_records(batch)]


def diverged(start_brokers: Any, wire: Any, isr: list[int] | None = None, **config: Any) -> tuple[Any, dict[int, Any]]:
    """The cluster above; broker 2 leads at epoch 2 with this ISR (default [2])."""
    controller, brokers = start_brokers(2, **{"replica.lag.time.max.ms": 60000, **config})
    controller.create_topic(TOPIC, {0: [1, 2]})  # epoch 0: broker 1 leads, broker 2 follows
    with brokers[1].client() as c:
        for i in range(3):  # acks=all: broker 2 has each before the next is sent
            assert wire.produce(c, TOPIC, 0, build_batch([(None, b"common-%d" % i)])).error_code == ErrorCode.NONE
    assert controller.stop_replicas(2, [(TOPIC, 0)], delete=False).error_code == ErrorCode.NONE
    assert controller.elect(TOPIC, 0, leader=1, replicas=[1, 2], isr=[1], send_to=[1]) == 1
    with brokers[1].client() as c:
        assert wire.produce(c, TOPIC, 0, build_batch([(None, b"lost-%d" % i) for i in range(4)])).base_offset == 3
    assert controller.elect(TOPIC, 0, leader=2, replicas=[1, 2], isr=isr or [2], send_to=[2]) == 2
    with brokers[2].client() as c:
        for i in range(2):  # a batch each, so a fetch at 4 returns only the second
            assert wire.produce(c, TOPIC, 0, build_batch([(None, b"after-%d" % i)]), acks=1).base_offset == 3 + i
    return controller, brokers


def test_fetch_after_a_divergence_gets_the_diverging_epoch(start_brokers, wire):
    _controller, brokers = diverged(start_brokers, wire)
    with brokers[2].client() as c:
        def fetch(offset: int, last_epoch: int, **kw: Any) -> Any:
            return wire.fetch(c, TOPIC, 0, offset, current_leader_epoch=2, last_fetched_epoch=last_epoch,
                              version=FETCH_V, **kw)

        # what OffsetsForLeaderEpoch answers for epoch 1, as kafka-python asks it (v4)
        assert wire.epoch_end(c, TOPIC, 0, 1, current_leader_epoch=2, version=4) == (ErrorCode.NONE, 0, 3)
        # consistent: a fresh consumer, one that read epoch 0 to its end, one at the log end of epoch 2
        for offset, last_epoch, want in ((0, -1, [b"common-0", b"common-1", b"common-2", b"after-0", b"after-1"]),
                                         (3, 0, [b"after-0", b"after-1"]), (5, 2, [])):
            r = fetch(offset, last_epoch)
            assert (r.error_code, r.diverging_epoch, values_in(r.records)) == (ErrorCode.NONE, None, want)

        # read 3-6 at epoch 1 elsewhere: epoch 0 (the largest <= 1 here) ends at 3; answered at once
        started = time.monotonic()
        r = fetch(7, 1, max_wait_ms=5000)
        assert time.monotonic() - started < 2.5, "a divergence is answered without the long poll"
        assert (r.error_code, r.records or b"") == (ErrorCode.NONE, b"")
        assert (r.diverging_epoch.epoch, r.diverging_epoch.end_offset) == (0, 3)
        assert r.high_watermark >= 0 and r.log_start_offset == 0
        # within the leader's log but after a record it does not have under that epoch
        r = fetch(4, 1)
        assert (r.diverging_epoch.epoch, r.diverging_epoch.end_offset, values_in(r.records)) == (0, 3, [])
        # the current epoch ends at the log end: a fetch past it diverges there
        r = fetch(7, 2)
        assert (r.diverging_epoch.epoch, r.diverging_epoch.end_offset) == (2, 5)
        # an epoch above every one here has no end: out of range, as in Kafka
        assert fetch(3, 3).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        # the field is v12's: v11 carries no last fetched epoch and reads as before
        r = wire.fetch(c, TOPIC, 0, 4, current_leader_epoch=2, version=11)
        assert (r.error_code, values_in(r.records)) == (ErrorCode.NONE, [b"after-1"])


def test_a_diverging_follower_fetch_is_not_its_log_end(start_brokers, wire):
    _controller, brokers = diverged(start_brokers, wire, isr=[2, 1])
    with brokers[2].client() as c:
        before = wire.list_offset(c, TOPIC, 0, -1, version=7).offset  # the high watermark
        assert before <= 3  # broker 1 is in the ISR and has fetched nothing at epoch 2
        # broker 1's own log end is 7 after epoch 1: divergent, so not taken as how far it has replicated
        r = wire.fetch(c, TOPIC, 0, 4, replica_id=1, current_leader_epoch=2, last_fetched_epoch=1, version=FETCH_V)
        assert (r.diverging_epoch.epoch, r.diverging_epoch.end_offset) == (0, 3)
        assert wire.list_offset(c, TOPIC, 0, -1, version=7).offset == before
        # a consistent fetch at 4 is: the high watermark follows it
        r = wire.fetch(c, TOPIC, 0, 4, replica_id=1, current_leader_epoch=2, last_fetched_epoch=2, version=FETCH_V)
        assert r.diverging_epoch is None and values_in(r.records) == [b"after-1"]
        assert wire.list_offset(c, TOPIC, 0, -1, version=7).offset == 4


def test_without_kip320_last_fetched_epoch_is_ignored(start_brokers, wire):
    _controller, brokers = diverged(start_brokers, wire, **{"leader.epoch.fencing.enable": False})
    with brokers[2].client() as c:
        past = wire.fetch(c, TOPIC, 0, 7, last_fetched_epoch=1, version=FETCH_V)
        assert (past.error_code, past.diverging_epoch) == (ErrorCode.OFFSET_OUT_OF_RANGE, None)
        within = wire.fetch(c, TOPIC, 0, 4, last_fetched_epoch=1, version=FETCH_V)
        assert (within.error_code, within.diverging_epoch, values_in(within.records)) == \
            (ErrorCode.NONE, None, [b"after-1"])


@pytest.mark.parametrize("mutation", ["epoch-end-offsets", "fetch-epoch-fencing"])
def test_mutations_turn_off_their_element_only(start_brokers, wire, mutation):
    _controller, brokers = diverged(start_brokers, wire, mutations=[mutation])
    with brokers[2].client() as c:
        consumer = wire.fetch(c, TOPIC, 0, 4, current_leader_epoch=2, last_fetched_epoch=1, version=FETCH_V)
        follower = wire.fetch(c, TOPIC, 0, 4, replica_id=1, current_leader_epoch=2, last_fetched_epoch=1,
                              version=FETCH_V)
        stale = wire.fetch(c, TOPIC, 0, 3, current_leader_epoch=0, last_fetched_epoch=0, version=FETCH_V)
    assert (follower.diverging_epoch.epoch, follower.diverging_epoch.end_offset) == (0, 3)
    if mutation == "epoch-end-offsets":
        # a consumer is told the log end for any epoch, here as in OffsetsForLeaderEpoch: nothing diverges
        assert (consumer.diverging_epoch, values_in(consumer.records)) == (None, [b"after-1"])
        assert stale.error_code == ErrorCode.FENCED_LEADER_EPOCH
    else:
        assert (consumer.diverging_epoch.epoch, consumer.diverging_epoch.end_offset) == (0, 3)
        assert (stale.error_code, values_in(stale.records)) == (ErrorCode.NONE, [b"after-0", b"after-1"])
