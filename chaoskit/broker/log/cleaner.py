"""Log compaction (`cleanup.policy=compact`) of one partition log, by Apache Kafka's cleaner rules.

The cleanable part is the run of segments from the log start that are not the active one, hold
nothing at or past the high watermark, and (with min.compaction.lag.ms) nothing newer than the lag.
A record there stays when it is its key's latest within that part: Kafka builds its offset map over
the same range, so a newer value still in the active segment does not remove an older one yet. A
tombstone (null value) that is its key's latest stays until delete.retention.ms after its segment
was first cleaned, long enough for a consumer reading from the start to see the delete.

Offsets never change: dropped records leave gaps; a rewritten batch keeps its base and last offset,
leader epoch and producer fields; a batch left empty is dropped, unless it is its producer's last in
the log (kept as an empty batch, as Kafka does, so the producer's sequence survives a restart).
Keyless records go (Kafka's cleaner drops them as invalid); control batches stay as they are. The
log start offset never moves by compaction: an emptied first segment stays as an empty file.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chaoskit.broker.log.segment import Segment
from chaoskit.protocol.records import BatchHeader, decode_records, retained_batch


def cleanable_count(segments: Sequence[Segment], up_to: int, cutoff_ms: int) -> int:
    """How many leading segments may be cleaned: not the active one, every offset below `up_to`
    (the high watermark), no record newer than `cutoff_ms` (now - min.compaction.lag.ms)."""
    n = 0
    for i in range(len(segments) - 1):
        if segments[i + 1].base_offset > up_to or segments[i].max_timestamp > cutoff_ms:
            break
        n = i + 1
    return n


def latest_offsets(segments: Sequence[Segment], log_start: int) -> dict[bytes, int]:
    """Each key's latest offset in these segments (from the log start; keyless records have none)."""
    latest: dict[bytes, int] = {}
    for segment in segments:
        for position, h in segment.batches():
            if h.is_control or h.last_offset < log_start:
                continue
            for r in decode_records(segment.read_batch(position, h)):
                if r.key is not None and r.offset >= log_start:
                    latest[r.key] = r.offset
    return latest


def producers_last_batches(segments: Sequence[Segment]) -> set[int]:
    """Base offsets of each producer id's last batch in the whole log."""
    last: dict[int, int] = {}
    for segment in segments:
        for _position, h in segment.batches():
            if h.producer_id >= 0:
                last[h.producer_id] = h.base_offset
    return set(last.values())


@dataclass(frozen=True)
class Cleaned:
    data: bytes | None  # the segment's new contents, None when nothing goes
    tombstones: int  # tombstones left in it


def clean_segment(segment: Segment, latest: dict[bytes, int], log_start: int, keep_tombstones: bool,
                  producers_last: set[int]) -> Cleaned:
    parts: list[bytes] = []
    changed, tombstones = False, 0
    for position, h in segment.batches():
        batch = segment.read_batch(position, h)
        if h.is_control:
            parts.append(batch)
            continue
        records = decode_records(batch)
        kept = [r for r in records if r.offset >= log_start and r.key is not None and latest.get(r.key) == r.offset
                and (r.value is not None or keep_tombstones)]
        tombstones += sum(r.value is None for r in kept)
        if len(kept) == len(records):
            parts.append(batch)
            continue
        changed = True
        if kept or _keeps_empty(h, producers_last):
            parts.append(retained_batch(batch, kept))
    return Cleaned(b"".join(parts) if changed else None, tombstones)


def _keeps_empty(h: BatchHeader, producers_last: set[int]) -> bool:
    return h.producer_id >= 0 and h.base_offset in producers_last
