"""v2 record batches: header fields, CRC32C, in-place patches, splitting, control batches."""
import struct

import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from chaoskit.protocol import records
from chaoskit.protocol.records import InvalidBatch


def test_build_and_read_header():
    b = records.build_batch([(b"k", b"v"), (None, b"w", [("h", b"x")])], base_offset=10, producer_id=5,
                            producer_epoch=1, base_sequence=7, leader_epoch=3, timestamp_ms=1000)
    h = records.validate(b)
    assert (h.base_offset, h.last_offset, h.partition_leader_epoch, h.record_count) == (10, 11, 3, 2)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.magic) == (5, 1, 7, 2)
    assert h.size == len(b) and not h.is_control
    assert records.decode_records(b) == [records.Record(10, 1000, b"k", b"v", []),
                                         records.Record(11, 1000, None, b"w", [("h", b"x")])]
    assert DefaultRecordBatch(b).validate_crc()  # kafka-python's own CRC check agrees


def test_patches_leave_crc_valid_and_move_offsets():
    b = records.build_batch([(b"a", b"1"), (b"b", b"2")])
    moved = records.with_leader_epoch(records.with_base_offset(b, 500), 9)
    h = records.validate(moved)
    assert (h.base_offset, h.partition_leader_epoch, h.crc) == (500, 9, records.header(b).crc)
    assert [r.offset for r in records.decode_records(moved)] == [500, 501]
    assert records.restamp(b, 500, 9) == moved


def test_compressed_batch_from_kafka_pythons_builder():
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=1, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i in range(50):
        builder.append(i, timestamp=None, key=b"key", value=b"value-%d" % i, headers=[])
    b = bytes(builder.build())
    assert records.validate(b).attributes & records.COMPRESSION_MASK == 1
    assert [r.value for r in records.decode_records(records.with_base_offset(b, 100))][:2] == [b"value-0", b"value-1"]


@pytest.mark.parametrize("position,reason", [
    (records.MAGIC_OFFSET, "magic 3"),
    (records.ATTRIBUTES_OFFSET + 30, "CRC32C mismatch"),
])
def test_damage_is_detected(position, reason):
    b = bytearray(records.build_batch([(b"k", b"value")]))
    b[position] = 3 if position == records.MAGIC_OFFSET else b[position] ^ 0xFF
    with pytest.raises(InvalidBatch, match=reason):
        records.validate(bytes(b))


def test_length_field_must_match_buffer():
    b = records.build_batch([(b"k", b"v")])
    with pytest.raises(InvalidBatch, match="batch length field says"):
        records.validate(b + b"\x00")


def test_split_batches_names_the_bad_position():
    one, two = records.build_batch([(b"a", b"1")]), records.build_batch([(b"b", b"2")], base_offset=1)
    assert records.split_batches(one + two) == [one, two]
    with pytest.raises(InvalidBatch) as err:
        records.split_batches(one + two[:-4])
    assert err.value.position == len(one)
    corrupt = bytearray(one + two)
    corrupt[len(one) + 40] ^= 1
    with pytest.raises(InvalidBatch, match=f"CRC32C mismatch.*at byte {len(one)}"):
        records.split_batches(bytes(corrupt))
    with pytest.raises(InvalidBatch, match="trailing bytes"):
        records.split_batches(one + b"\x00" * 5)


def test_control_batch_is_a_commit_marker():
    c = records.control_batch(True, producer_id=8, producer_epoch=2, coordinator_epoch=4, base_offset=20)
    h = records.validate(c)
    assert h.is_control and h.is_transactional and (h.producer_id, h.base_offset) == (8, 20)
    [marker] = records.decode_records(c)
    assert struct.unpack(">hh", marker.key) == (0, records.CONTROL_COMMIT)
    assert struct.unpack(">hi", marker.value) == (0, 4)


def test_empty_batch_refused():
    with pytest.raises(ValueError, match="at least one record"):
        records.build_batch([])


def test_a_retained_batch_keeps_its_offsets_producer_fields_and_compression():
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=1, is_transactional=False, producer_id=9,
                                        producer_epoch=2, base_sequence=40, batch_size=1 << 20)
    for i in range(4):
        builder.append(i, timestamp=1000 + i, key=b"k%d" % i, value=b"v%d" % i, headers=[("h", b"x")])
    b = records.restamp(bytes(builder.build()), 100, 7)
    kept = [r for r in records.decode_records(b) if r.offset in (101, 102)]
    out = records.retained_batch(b, kept)
    h, before = records.validate(out), records.header(b)
    assert (h.base_offset, h.last_offset, h.partition_leader_epoch, h.record_count) == (100, 103, 7, 2)
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (9, 2, 40)
    assert h.attributes == before.attributes and DefaultRecordBatch(out).validate_crc()
    assert records.decode_records(out) == kept
    empty = records.retained_batch(b, [])
    e = records.validate(empty)
    assert (e.base_offset, e.last_offset, e.record_count, e.producer_id, e.base_sequence) == (100, 103, 0, 9, 40)
    assert records.decode_records(empty) == []
