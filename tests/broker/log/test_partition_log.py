"""PartitionLog: offsets, reads, truncation, log start, segments, and recovery after damage."""
from pathlib import Path

import pytest

from chaoskit.broker.log import InvalidAppend, OffsetOutOfRange, PartitionLog
from chaoskit.broker.log.epochs import EpochEntry
from chaoskit.protocol.records import InvalidBatch, build_batch, decode_records, header, split_batches


def batch(n: int, tag: str = "v", base_offset: int = 0, epoch: int = -1, ts: int | None = None) -> bytes:
    return build_batch([(b"k%d" % i, f"{tag}{i}".encode()) for i in range(n)], base_offset=base_offset,
                       leader_epoch=epoch, timestamp_ms=ts)


def offsets(data: bytes) -> list[int]:
    return [r.offset for b in split_batches(data) for r in decode_records(b)]


def test_leader_append_assigns_offsets_and_stamps_epochs(tmp_path: Path):
    with PartitionLog(tmp_path) as log:
        assert log.append_as_leader(batch(3), leader_epoch=0) == (0, 2)
        assert log.append_as_leader([batch(2), batch(1)], leader_epoch=4) == (3, 5)
        assert (log.log_start_offset, log.log_end_offset) == (0, 6)
        stored = split_batches(log.read(0, 1 << 20))
        assert [(header(b).base_offset, header(b).partition_leader_epoch) for b in stored] == [(0, 0), (3, 4), (5, 4)]
        assert log.epochs.entries == [EpochEntry(0, 0), EpochEntry(4, 3)]


def test_read_returns_whole_batches_from_the_one_holding_the_offset(tmp_path: Path):
    with PartitionLog(tmp_path) as log:
        for _ in range(4):
            log.append_as_leader(batch(3), leader_epoch=0)
        assert offsets(log.read(4, 1 << 20)) == list(range(3, 12))
        one = len(batch(3))
        assert offsets(log.read(4, one + 1)) == [3, 4, 5]  # whole batches that fit
        assert offsets(log.read(4, 1)) == [3, 4, 5]        # but always the first one
        assert log.read(12, 100) == b""
        with pytest.raises(OffsetOutOfRange, match=r"offset 13 is outside the log \[0, 12\]"):
            log.read(13, 100)


def test_bad_batches_are_refused_and_nothing_is_written(tmp_path: Path):
    with PartitionLog(tmp_path) as log:
        damaged = bytearray(batch(2))
        damaged[-1] ^= 1
        with pytest.raises(InvalidBatch, match="CRC32C"):
            log.append_as_leader([batch(1), bytes(damaged)], leader_epoch=0)
        with pytest.raises(InvalidAppend, match="no record batches"):
            log.append_as_leader([], leader_epoch=0)
        assert log.log_end_offset == 0 and log.size_bytes == 0


def test_follower_append_keeps_offsets_and_learns_epochs(tmp_path: Path):
    with PartitionLog(tmp_path) as log:
        assert log.append_as_follower(batch(2, base_offset=0, epoch=1) + batch(2, base_offset=2, epoch=3)) == (0, 3)
        assert log.epochs.entries == [EpochEntry(1, 0), EpochEntry(3, 2)]
        with pytest.raises(InvalidAppend, match="batch at offset 2 is below the log end 4; truncate first"):
            log.append_as_follower(batch(1, base_offset=2, epoch=3))


def test_truncate_removes_the_batch_holding_the_offset_and_later_epochs(tmp_path: Path):
    with PartitionLog(tmp_path) as log:
        log.append_as_leader(batch(3), leader_epoch=1)
        log.append_as_leader(batch(3), leader_epoch=2)
        log.append_as_leader(batch(3), leader_epoch=3)
        log.truncate_to(4)  # inside the epoch-2 batch [3, 5]
        assert log.log_end_offset == 3 and log.epochs.entries == [EpochEntry(1, 0)]
        log.truncate_to(10)  # beyond the end: nothing
        assert log.log_end_offset == 3
        log.append_as_leader(batch(1), leader_epoch=4)
    with PartitionLog(tmp_path) as log:
        assert offsets(log.read(0, 1 << 20)) == [0, 1, 2, 3]
        assert log.epochs.entries == [EpochEntry(1, 0), EpochEntry(4, 3)]


def test_offsets_for_leader_epoch_through_the_log(tmp_path: Path):
    # a follower with epochs 1 and 2 asks a leader that has 1, 3: it must truncate to 6
    with PartitionLog(tmp_path) as leader:
        leader.append_as_leader(batch(6), leader_epoch=1)
        leader.append_as_leader(batch(4), leader_epoch=3)
        assert leader.epochs.end_offset_for(2) == (1, 6)
        assert leader.epochs.end_offset_for(3) == (3, 10)
        leader.epochs.assign(5, leader.log_end_offset)  # became leader again, nothing written yet
        assert leader.epochs.end_offset_for(3) == (3, 10) and leader.epochs.end_offset_for(5) == (5, 10)


def test_delete_records_moves_the_start_and_drops_whole_segments(tmp_path: Path):
    one = len(batch(2))
    with PartitionLog(tmp_path, segment_bytes=2 * one) as log:
        for e in range(5):
            log.append_as_leader(batch(2), leader_epoch=e)
        assert [s.base_offset for s in log.segments] == [0, 4, 8]
        log.delete_records_before(5)
        assert [s.base_offset for s in log.segments] == [4, 8]
        assert log.epochs.entries[0] == EpochEntry(2, 5)
        with pytest.raises(OffsetOutOfRange):
            log.read(4, 100)
        assert offsets(log.read(5, 1 << 20))[:2] == [4, 5]  # the batch holding 5 comes whole
        with pytest.raises(OffsetOutOfRange):
            log.delete_records_before(11)
    with PartitionLog(tmp_path, segment_bytes=2 * one) as log:
        assert (log.log_start_offset, log.log_end_offset) == (5, 10)


def test_truncate_below_the_start_starts_afresh(tmp_path: Path):
    with PartitionLog(tmp_path) as log:
        log.append_as_leader(batch(4), leader_epoch=0)
        log.delete_records_before(3)
        log.truncate_to(2)
        assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (2, 2, 0)
        assert log.append_as_leader(batch(1), leader_epoch=1) == (2, 2)


def test_segments_roll_with_sparse_indexes_and_reopen(tmp_path: Path):
    one = len(batch(1, "x" * 100))
    with PartitionLog(tmp_path, segment_bytes=10 * one, index_interval_bytes=3 * one) as log:
        for _ in range(35):
            log.append_as_leader(batch(1, "x" * 100), leader_epoch=0)
    names = sorted(p.name for p in tmp_path.glob("*.log"))
    assert names == [f"{b:020d}.log" for b in (0, 10, 20, 30)]
    assert (tmp_path / "00000000000000000010.index").stat().st_size == 4 * 8  # entries at 10, 13, 16, 19
    (tmp_path / "00000000000000000020.index").write_bytes(b"\xff" * 13)  # garbage: rebuilt on open
    (tmp_path / "00000000000000000030.index").unlink()
    with PartitionLog(tmp_path, segment_bytes=10 * one, index_interval_bytes=3 * one) as log:
        assert log.log_end_offset == 35 and log.damage == []
        assert offsets(log.read(0, 1 << 20))[:1] == [0]
        assert [offsets(log.read(o, 1))[0] for o in (9, 10, 24, 34)] == [9, 10, 24, 34]
    assert (tmp_path / "00000000000000000020.index").stat().st_size == 4 * 8
    assert (tmp_path / "00000000000000000030.index").stat().st_size == 2 * 8


def test_corrupt_batch_in_an_older_segment_is_reported_and_the_valid_prefix_kept(tmp_path: Path, caplog):
    one = len(batch(1))
    with PartitionLog(tmp_path, segment_bytes=4 * one) as log:
        for _ in range(12):
            log.append_as_leader(batch(1), leader_epoch=0)
    middle = tmp_path / "00000000000000000004.log"
    data = bytearray(middle.read_bytes())
    data[2 * one + 30] ^= 0x55  # inside the third batch: offset 6, byte position 2*one
    middle.write_bytes(bytes(data))
    with PartitionLog(tmp_path, segment_bytes=4 * one) as log:
        assert log.log_end_offset == 6
        [damage] = log.damage
        assert (Path(damage.file), damage.position) == (middle, 2 * one) and "CRC32C" in damage.reason
        assert [s.base_offset for s in log.segments] == [0, 4]
    assert f"{middle}: corrupt at byte offset {2 * one}" in caplog.text
    assert "00000000000000000008.log" in caplog.text and not (tmp_path / "00000000000000000008.log").exists()


def test_offset_for_timestamp(tmp_path: Path):
    with PartitionLog(tmp_path) as log:
        log.append_as_leader(batch(2, ts=1000), leader_epoch=0)
        log.append_as_leader(batch(2, ts=2000), leader_epoch=0)
        assert log.offset_for_timestamp(1500) == (2, 2000)
        assert log.offset_for_timestamp(0) == (0, 1000)
        assert log.offset_for_timestamp(3000) is None


def test_retention_drops_expired_segments_up_to_the_high_watermark_then_the_active_one(tmp_path: Path):
    one = len(batch(2, ts=1000))
    with PartitionLog(tmp_path, segment_bytes=2 * one) as log:
        for ts in (1000, 1000, 2000, 2000, 3000):  # segments [0-3] at 1000, [4-7] at 2000, [8-9] at 3000 (active)
            log.append_as_leader(batch(2, ts=ts), leader_epoch=0)
        assert not log.delete_segments_older_than(1000, up_to=10)  # nothing older than 1000
        assert not log.delete_segments_older_than(2500, up_to=3)  # expired, but above the high watermark
        assert log.delete_segments_older_than(2500, up_to=10) and log.log_start_offset == 8
        assert log.delete_segments_older_than(3001, up_to=10)  # the active segment too: the log is empty
        assert (log.log_start_offset, log.log_end_offset) == (10, 10)
        assert not log.delete_segments_older_than(10_000, up_to=10)  # nothing left to expire
        log.append_as_leader(batch(1, ts=-1), leader_epoch=0)
        assert not log.delete_segments_older_than(10_000, up_to=11)  # no timestamp: kept


def test_without_fsync_data_still_reaches_the_files(tmp_path: Path):
    with PartitionLog(tmp_path, fsync=False) as log:
        log.append_as_leader(batch(2), leader_epoch=0)
        log.flush()
    with PartitionLog(tmp_path) as log:
        assert log.log_end_offset == 2
