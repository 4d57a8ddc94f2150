"""Log compaction of one PartitionLog: what stays, what goes, and what never changes."""
from pathlib import Path

from chaoskit.broker.log import PartitionLog
from chaoskit.broker.log.partition_log import CLEANED_CHECKPOINT
from chaoskit.protocol.records import build_batch, decode_records, header, split_batches

DAY = 86_400_000


def one(key: bytes | None, value: bytes | None, ts: int = 1000, pid: int = -1, seq: int = -1) -> bytes:
    return build_batch([(key, value)], producer_id=pid, producer_epoch=0 if pid >= 0 else -1, base_sequence=seq,
                       timestamp_ms=ts)


def contents(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        if not data:
            break
        for b in split_batches(data):
            out += [(r.offset, r.key, r.value) for r in decode_records(b) if r.offset >= offset]
            offset = header(b).next_offset
    return out


def filled(tmp_path: Path, records: list[tuple[bytes | None, bytes | None]], per_segment: int = 2) -> PartitionLog:
    """A log with `per_segment` single-record batches a segment; the last segment is the active one."""
    size = len(one(b"k0", b"v0"))
    log = PartitionLog(tmp_path, segment_bytes=per_segment * size + size // 2, fsync=False)
    for key, value in records:
        log.append_as_leader(one(key, value), leader_epoch=0)
    return log


def test_latest_value_per_key_stays_with_its_offset_and_the_start_does_not_move(tmp_path: Path):
    writes = [(b"a", b"1"), (b"b", b"1"), (b"a", b"2"), (b"c", b"1"), (b"b", b"2"), (b"a", b"3"), (b"d", b"1")]
    with filled(tmp_path, writes) as log:  # segments [0,1] [2,3] [4,5] and the active [6]
        assert log.compact(now_ms=5000, up_to=7, delete_retention_ms=DAY)
        assert contents(log) == [(3, b"c", b"1"), (4, b"b", b"2"), (5, b"a", b"3"), (6, b"d", b"1")]
        assert (log.log_start_offset, log.log_end_offset) == (0, 7)
        assert log.read(1, 1 << 20)[:8] == (3).to_bytes(8, "big")  # a fetch in a gap gets the next batch
        assert not log.compact(now_ms=5000, up_to=7, delete_retention_ms=DAY)  # nothing new: nothing read


def test_the_active_segment_and_the_high_watermark_bound_the_cleaning(tmp_path: Path):
    writes = [(b"a", b"1"), (b"a", b"2"), (b"a", b"3"), (b"a", b"4"), (b"a", b"5")]
    with filled(tmp_path, writes) as log:  # [0,1] [2,3] active [4]
        assert not log.compact(now_ms=5000, up_to=1, delete_retention_ms=DAY)  # [0,1] reaches the HW
        assert log.compact(now_ms=5000, up_to=2, delete_retention_ms=DAY)
        assert [o for o, _k, _v in contents(log)] == [1, 2, 3, 4]  # only [0,1] was cleanable
        assert log.compact(now_ms=5000, up_to=5, delete_retention_ms=DAY)
        # the active segment's a=5 is newer, but Kafka's offset map stops before it: a=4 stays
        assert [o for o, _k, _v in contents(log)] == [3, 4]


def test_tombstones_stay_for_delete_retention_after_their_segment_was_cleaned(tmp_path: Path):
    writes = [(b"a", b"1"), (b"b", b"1"), (b"a", None), (b"c", b"1"), (b"c", b"2")]
    with filled(tmp_path, writes) as log:
        assert log.compact(now_ms=10_000, up_to=5, delete_retention_ms=1000)
        assert contents(log) == [(1, b"b", b"1"), (2, b"a", None), (3, b"c", b"1"), (4, b"c", b"2")]
        assert not log.compact(now_ms=10_999, up_to=5, delete_retention_ms=1000)  # not due yet
        assert log.compact(now_ms=11_000, up_to=5, delete_retention_ms=1000)
        assert contents(log) == [(1, b"b", b"1"), (3, b"c", b"1"), (4, b"c", b"2")]
        assert log.log_start_offset == 0


def test_first_cleaning_time_survives_a_restart(tmp_path: Path):
    with filled(tmp_path, [(b"a", b"1"), (b"a", None), (b"b", b"1")]) as log:
        log.compact(now_ms=10_000, up_to=3, delete_retention_ms=1000)
    assert (tmp_path / CLEANED_CHECKPOINT).read_text() == "0 10000\n"
    with PartitionLog(tmp_path, fsync=False) as log:
        assert not log.compact(now_ms=10_500, up_to=3, delete_retention_ms=1000)
        assert contents(log) == [(1, b"a", None), (2, b"b", b"1")]
        assert log.compact(now_ms=11_000, up_to=3, delete_retention_ms=1000)
        assert contents(log) == [(2, b"b", b"1")]


def test_min_compaction_lag_keeps_recent_segments_dirty(tmp_path: Path):
    with filled(tmp_path, [(b"a", b"1"), (b"a", b"2"), (b"a", b"3")]) as log:  # records at ts 1000
        assert not log.compact(now_ms=1500, up_to=3, delete_retention_ms=DAY, min_lag_ms=1000)
        assert log.compact(now_ms=2000, up_to=3, delete_retention_ms=DAY, min_lag_ms=1000)
        assert [o for o, _k, _v in contents(log)] == [1, 2]


def test_emptied_segments_go_but_the_first_stays_and_offsets_read_back_after_reopening(tmp_path: Path):
    writes = [(b"a", b"1"), (b"a", b"2"), (b"a", b"3"), (b"a", b"4"), (b"a", b"5"), (b"b", b"1"), (b"b", b"2")]
    with filled(tmp_path, writes) as log:  # [0,1] [2,3] [4,5] active [6]
        assert log.compact(now_ms=5000, up_to=7, delete_retention_ms=DAY)
        assert [s.base_offset for s in log.segments] == [0, 4, 6]  # [2,3] emptied and gone; [0,1] kept empty
        assert log.segments[0].size == 0
    with PartitionLog(tmp_path, fsync=False) as log:
        assert (log.log_start_offset, log.log_end_offset) == (0, 7)
        assert contents(log) == [(4, b"a", b"5"), (5, b"b", b"1"), (6, b"b", b"2")]
        log.append_as_leader(one(b"c", b"1"), leader_epoch=1)
        assert log.log_end_offset == 8


def test_a_producers_last_batch_stays_as_an_empty_batch_and_keyless_records_go(tmp_path: Path):
    size = len(one(b"a", b"1", pid=7, seq=0))
    with PartitionLog(tmp_path, segment_bytes=2 * size + size // 2, fsync=False) as log:
        log.append_as_leader(one(b"a", b"1", pid=7, seq=0), leader_epoch=0)
        log.append_as_leader(one(b"a", b"2", pid=7, seq=1), leader_epoch=0)  # pid 7's last batch
        log.append_as_leader(one(None, b"x"), leader_epoch=0)
        log.append_as_leader(one(b"a", b"3"), leader_epoch=0)
        log.append_as_leader(one(b"z", b"1"), leader_epoch=0)  # active
        assert log.compact(now_ms=5000, up_to=5, delete_retention_ms=DAY)
        stored = [header(b) for s in log.segments for _p, h in s.batches() for b in [s.read_batch(_p, h)]]
        assert [(h.base_offset, h.record_count, h.producer_id, h.base_sequence) for h in stored] == [
            (1, 0, 7, 1), (3, 1, -1, -1), (4, 1, -1, -1)]
        assert contents(log) == [(3, b"a", b"3"), (4, b"z", b"1")]


def test_retention_passes_over_segments_compaction_emptied(tmp_path: Path):
    writes = [(b"a", b"1"), (b"a", b"2"), (b"a", b"3"), (b"a", b"4")]
    with filled(tmp_path, writes) as log:  # [0,1] [2,3] written at ts 1000, then the active [4] at 3000
        log.append_as_leader(one(b"b", b"1", ts=3000), leader_epoch=0)
        log.compact(now_ms=5000, up_to=5, delete_retention_ms=DAY)
        assert [s.base_offset for s in log.segments] == [0, 2, 4] and log.segments[0].size == 0
        assert log.delete_segments_older_than(2000, up_to=5) and log.log_start_offset == 4


def test_a_truncation_forgets_the_cleaning_of_the_segments_it_reopens(tmp_path: Path):
    with filled(tmp_path, [(b"a", b"1"), (b"a", None), (b"b", b"1"), (b"b", b"2"), (b"c", b"1")]) as log:
        log.compact(now_ms=10_000, up_to=5, delete_retention_ms=1000)  # [0,1] and [2,3] cleaned at 10000
        log.truncate_to(3)  # b2 and [4] go; [2,3] is the active segment again, empty (b1 was compacted away)
        assert (tmp_path / CLEANED_CHECKPOINT).read_text() == "0 10000\n"
        for key, value in [(b"f", None), (b"g", b"1"), (b"g", b"2")]:
            log.append_as_leader(one(key, value), leader_epoch=1)
        assert [s.base_offset for s in log.segments] == [0, 2, 4]  # f and g1 in the reopened segment
        assert log.compact(now_ms=20_000, up_to=log.log_end_offset, delete_retention_ms=1000)
        # a's tombstone (cleaned at 10000) is due; f's, in the reopened segment first cleaned now, stays
        assert contents(log) == [(2, b"f", None), (3, b"g", b"1"), (4, b"g", b"2")]
