"""v2 record batches (magic 2) as the broker handles them: bytes in, bytes out.

The broker never re-encodes a producer's records. It reads the 61-byte batch header, checks the
CRC32C (which covers everything from `attributes` to the end, so neither the base offset nor the
partition leader epoch is under it), and patches those two fields in place. Building and decoding
records is here only for tests, internal writes (group offsets, control batches) and consumers.
"""
from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

import crc32c
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # base_offset + batch_length: the bytes not counted in batch_length
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")

COMPRESSION_MASK = 0x07
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
CONTROL_ABORT, CONTROL_COMMIT = 0, 1


class InvalidBatch(ValueError):
    """Bytes that are not a whole, intact v2 batch. `position` is the byte offset in the buffer examined."""

    def __init__(self, reason: str, position: int = 0) -> None:
        self.reason, self.position = reason, position
        super().__init__(f"{reason} (at byte {position})")


class BatchHeader(NamedTuple):
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def size(self) -> int:
        """Bytes of the whole batch, header included."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def header(batch: bytes | memoryview, position: int = 0) -> BatchHeader:
    """The header of the batch starting at `position`."""
    if len(batch) - position < HEADER_SIZE:
        raise InvalidBatch(f"{len(batch) - position} bytes is shorter than a batch header ({HEADER_SIZE})", position)
    return BatchHeader(*HEADER.unpack_from(batch, position))


def compute_crc(batch: bytes | memoryview) -> int:
    return crc32c.crc32c(memoryview(batch)[ATTRIBUTES_OFFSET:])


def validate(batch: bytes | memoryview, position: int = 0) -> BatchHeader:
    """The header of an intact v2 batch that is exactly `batch` (a single whole batch), else InvalidBatch."""
    h = header(batch, position)
    if h.magic != 2:
        raise InvalidBatch(f"magic {h.magic}: only v2 record batches (magic 2) are accepted", position)
    if h.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise InvalidBatch(f"batch length {h.batch_length} is shorter than the header", position)
    if h.size != len(batch):
        raise InvalidBatch(f"batch length field says {h.size} bytes, buffer has {len(batch)}", position)
    if h.record_count < 0 or h.last_offset_delta < 0:
        raise InvalidBatch(f"negative record count {h.record_count} or last offset delta {h.last_offset_delta}",
                           position)
    actual = compute_crc(batch)
    if actual != h.crc:
        raise InvalidBatch(f"CRC32C mismatch: header says {h.crc:#010x}, content gives {actual:#010x}", position)
    return h


def iter_batches(buf: bytes | memoryview, validate_each: bool = True) -> Iterator[tuple[int, memoryview]]:
    """(byte position, batch view) for each whole batch in buf; InvalidBatch names the first bad position."""
    view = memoryview(buf)
    pos = 0
    while pos < len(view):
        if len(view) - pos < LOG_OVERHEAD:
            raise InvalidBatch(f"{len(view) - pos} trailing bytes are not a batch", pos)
        (length,) = _INT32.unpack_from(view, pos + 8)
        end = pos + LOG_OVERHEAD + length
        if length < HEADER_SIZE - LOG_OVERHEAD or end > len(view):
            raise InvalidBatch(f"batch length {length} does not fit the {len(view) - pos} bytes left", pos)
        batch = view[pos:end]
        if validate_each:
            try:
                validate(batch)
            except InvalidBatch as e:
                raise InvalidBatch(e.reason, pos) from None
        yield pos, batch
        pos = end


def split_batches(buf: bytes | memoryview) -> list[bytes]:
    """Every batch of a Produce or Fetch records field, each validated."""
    return [bytes(b) for _pos, b in iter_batches(buf)]


def _patched(batch: bytes | memoryview, position: int, packer: struct.Struct, value: int) -> bytes:
    out = bytearray(batch)
    packer.pack_into(out, position, value)
    return bytes(out)


def with_base_offset(batch: bytes | memoryview, base_offset: int) -> bytes:
    """The batch with a new base offset (outside the CRC, so the CRC stays valid)."""
    return _patched(batch, 0, _INT64, base_offset)


def with_leader_epoch(batch: bytes | memoryview, epoch: int) -> bytes:
    """The batch stamped with a partition leader epoch (outside the CRC)."""
    return _patched(batch, PARTITION_LEADER_EPOCH_OFFSET, _INT32, epoch)


def restamp(batch: bytes | memoryview, base_offset: int, epoch: int) -> bytes:
    """Both patches with one copy: what a leader does to each appended batch."""
    out = bytearray(batch)
    _INT64.pack_into(out, 0, base_offset)
    _INT32.pack_into(out, PARTITION_LEADER_EPOCH_OFFSET, epoch)
    return bytes(out)


def _reseal(buf: bytearray) -> bytes:
    _UINT32.pack_into(buf, CRC_OFFSET, compute_crc(buf))
    return bytes(buf)


def build_batch(records: Iterable[Sequence], base_offset: int = 0, producer_id: int = -1,
                producer_epoch: int = -1, base_sequence: int = -1, leader_epoch: int = -1,
                timestamp_ms: int | None = None, transactional: bool = False) -> bytes:
    """An uncompressed batch of (key, value) or (key, value, headers) records, offsets consecutive."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=transactional,
                                        producer_id=producer_id, producer_epoch=producer_epoch,
                                        base_sequence=base_sequence, batch_size=2**31 - 1)
    count = 0
    for delta, rec in enumerate(records):
        key, value = rec[0], rec[1]
        headers = list(rec[2]) if len(rec) > 2 else []
        builder.append(delta, timestamp=timestamp_ms, key=key, value=value, headers=headers)
        count += 1
    if count == 0:
        raise ValueError("a record batch needs at least one record")
    return restamp(builder.build(), base_offset, leader_epoch)


def control_batch(commit: bool, producer_id: int, producer_epoch: int, coordinator_epoch: int = 0,
                  base_offset: int = 0, leader_epoch: int = -1, timestamp_ms: int | None = None) -> bytes:
    """A transaction marker: one control record, key (version 0, type), value (version 0, coordinator epoch)."""
    key = struct.pack(">hh", 0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = struct.pack(">hi", 0, coordinator_epoch)
    plain = build_batch([(key, value)], base_offset, producer_id, producer_epoch, -1, leader_epoch,
                        timestamp_ms, transactional=True)
    buf = bytearray(plain)
    (attributes,) = struct.unpack_from(">h", buf, ATTRIBUTES_OFFSET)
    struct.pack_into(">h", buf, ATTRIBUTES_OFFSET, attributes | CONTROL_FLAG)
    return _reseal(buf)


def decode_records(batch: bytes | memoryview) -> list[Record]:
    """The records of one batch (decompressed as needed); control records come back as raw key/value."""
    parsed = DefaultRecordBatch(bytes(batch))
    out = []
    for r in parsed:
        out.append(Record(r.offset, r.timestamp, r.key if r.key is None else bytes(r.key),
                          r.value if r.value is None else bytes(r.value), list(r.headers)))
    return out


TIMESTAMP_TYPE_FLAG = 0x08
_LAST_OFFSET_DELTA_OFFSET = 23
_RECORD_COUNT_OFFSET = 57


def retained_batch(batch: bytes | memoryview, kept: Sequence[Record]) -> bytes:
    """The batch holding only `kept` (some of its records, offsets unchanged), as a log cleaner
    writes it: same base offset, last offset delta, leader epoch, producer fields and compression,
    so the log's offsets and the producer's sequences read as before; no records gives an empty batch."""
    h = header(batch)
    if not kept:
        buf = bytearray(batch[:HEADER_SIZE])
        _INT32.pack_into(buf, 8, HEADER_SIZE - LOG_OVERHEAD)
        struct.pack_into(">h", buf, ATTRIBUTES_OFFSET, h.attributes & ~COMPRESSION_MASK)
        _INT32.pack_into(buf, _RECORD_COUNT_OFFSET, 0)
        return _reseal(buf)
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=h.attributes & COMPRESSION_MASK,
                                        is_transactional=h.is_transactional, producer_id=h.producer_id,
                                        producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
                                        batch_size=2**31 - 1)
    for r in kept:
        builder.append(r.offset - h.base_offset, timestamp=r.timestamp, key=r.key, value=r.value, headers=r.headers)
    buf = bytearray(restamp(builder.build(), h.base_offset, h.partition_leader_epoch))
    attributes = h.attributes & (TIMESTAMP_TYPE_FLAG | CONTROL_FLAG) | struct.unpack_from(">h", buf, ATTRIBUTES_OFFSET)[0]
    struct.pack_into(">h", buf, ATTRIBUTES_OFFSET, attributes)
    _INT32.pack_into(buf, _LAST_OFFSET_DELTA_OFFSET, h.last_offset_delta)
    return _reseal(buf)
