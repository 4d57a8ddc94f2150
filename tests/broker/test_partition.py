"""Partition and ProducerStateTable on a real on-disk PartitionLog, without a network: offsets,
de-duplication, the high watermark as the ISR's smallest log end, ISR candidates, KIP-320 checks."""
from __future__ import annotations

import pytest

from chaoskit.broker.log.partition_log import PartitionLog
from chaoskit.broker.partition import Partition
from chaoskit.protocol.errors import ErrorCode, KafkaError
from chaoskit.protocol.records import build_batch, header


@pytest.fixture
def leader(tmp_path):
    p = Partition("t", 0, 1, PartitionLog(tmp_path / "t-0", fsync=False))
    p.apply_state(leader=1, leader_epoch=3, isr=[1, 2], replicas=[1, 2, 3], partition_epoch=0, controller_epoch=1)
    yield p
    p.log.close()


def test_high_watermark_is_the_smallest_log_end_in_the_isr(leader):
    assert leader.append_as_leader(build_batch([(None, b"a"), (None, b"b")])) == (0, 1)
    assert leader.high_watermark == 0  # follower 2 has not fetched yet
    assert leader.read(0, 1 << 20, up_to=leader.high_watermark) == b""
    leader.record_follower_fetch(2, 2)
    assert leader.high_watermark == 2
    assert header(leader.read(0, 1 << 20, up_to=leader.high_watermark)).record_count == 2
    leader.record_follower_fetch(3, 2)  # not in the ISR: does not hold the HW back, but may join
    assert leader.followers_to_add() == [3]
    leader.apply_isr([1, 2, 3], 1)
    leader.append_as_leader(build_batch([(None, b"c")]))
    assert leader.high_watermark == 2
    leader.record_follower_fetch(2, 3)
    leader.record_follower_fetch(3, 3)
    assert leader.high_watermark == 3
    assert leader.log.epochs.latest().epoch == 3


def test_lagging_followers_are_named_for_removal(leader):
    leader.append_as_leader(build_batch([(None, b"a")]))
    assert leader.followers_to_remove(lag_ms=60_000) == []
    assert leader.followers_to_remove(lag_ms=-1) == [2]  # nothing caught up "within -1 ms"


def test_retries_are_deduplicated_and_gaps_refused(leader):
    first = build_batch([(None, b"a")], producer_id=5, producer_epoch=0, base_sequence=0)
    assert leader.append_as_leader(first) == (0, 0)
    assert leader.append_as_leader(first) == (0, 0)
    assert leader.log_end_offset == 1
    with pytest.raises(KafkaError) as e:
        leader.append_as_leader(build_batch([(None, b"x")], producer_id=5, producer_epoch=0, base_sequence=3))
    assert e.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_producer_state_survives_a_reopen_and_a_truncation(tmp_path):
    log = PartitionLog(tmp_path / "t-0", fsync=False)
    p = Partition("t", 0, 1, log)
    p.apply_state(1, 0, [1], [1], 0, 1)
    for seq in range(3):
        p.append_as_leader(build_batch([(None, b"%d" % seq)], producer_id=9, producer_epoch=0, base_sequence=seq))
    log.close()
    p = Partition("t", 0, 1, PartitionLog(tmp_path / "t-0", fsync=False))
    p.apply_state(1, 1, [1], [1], 0, 1)
    retry = build_batch([(None, b"2")], producer_id=9, producer_epoch=0, base_sequence=2)
    assert p.append_as_leader(retry) == (2, 2)  # known from the log after a restart
    p.truncate_to(1)
    assert p.append_as_leader(build_batch([(None, b"1")], producer_id=9, producer_epoch=0, base_sequence=1)) == (1, 1)
    p.log.close()


def test_leader_epoch_checks(leader):
    leader.check_leader_epoch(3, fencing=True)
    leader.check_leader_epoch(-1, fencing=True)
    # only -1 means "no epoch" (Kafka's ListOffsets and OffsetsForLeaderEpoch): -2 is older than ours
    for epoch, code in ((2, ErrorCode.FENCED_LEADER_EPOCH), (-2, ErrorCode.FENCED_LEADER_EPOCH),
                        (4, ErrorCode.UNKNOWN_LEADER_EPOCH)):
        with pytest.raises(KafkaError) as e:
            leader.check_leader_epoch(epoch, fencing=True)
        assert e.value.code == code
        leader.check_leader_epoch(epoch, fencing=False)


def test_a_follower_appends_the_leaders_batches_and_takes_its_high_watermark(tmp_path):
    follower = Partition("t", 0, 2, PartitionLog(tmp_path / "t-0", fsync=False))
    follower.apply_state(leader=1, leader_epoch=0, isr=[1, 2], replicas=[1, 2], partition_epoch=0, controller_epoch=1)
    batch = build_batch([(None, b"a"), (None, b"b")], leader_epoch=0)
    follower.append_as_follower(batch, leader_hw=5, leader_log_start=0)
    assert (follower.log_end_offset, follower.high_watermark) == (2, 2)  # capped at its own end
    with pytest.raises(KafkaError) as e:
        follower.append_as_leader(build_batch([(None, b"c")]))
    assert e.value.code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    follower.restart_at(10)
    assert (follower.log_start_offset, follower.log_end_offset) == (10, 10)
    follower.log.close()


def test_kip253_count_and_kip694_mode_checks(leader):
    from chaoskit.protocol.extensions import PartitionMode
    leader.check_partition_count(6)  # nothing learned yet: unchecked
    leader.undeleted_partition_count = 8
    leader.check_partition_count(8)
    leader.check_partition_count(-1)  # a stock client sends no count
    with pytest.raises(KafkaError) as err:
        leader.check_partition_count(6)
    assert err.value.code == ErrorCode.INVALID_PARTITION_METADATA and err.value.retriable
    assert "6 is stale" in err.value.message and "8" in err.value.message
    leader.check_writable()
    leader.check_writable(mode_aware=False)
    for mode in (PartitionMode.READ_ONLY, PartitionMode.NONE):
        leader.mode = mode
        with pytest.raises(KafkaError) as err:
            leader.check_writable()
        assert err.value.code == ErrorCode.INVALID_PARTITION_METADATA and mode.label in err.value.message
        with pytest.raises(KafkaError) as err:  # a client that cannot read modes: never our private code
            leader.check_writable(mode_aware=False)
        assert err.value.code == ErrorCode.LEADER_NOT_AVAILABLE and mode.label in err.value.message
