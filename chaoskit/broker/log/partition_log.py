"""A partition's log on disk: segments, the leader-epoch cache, and the log start offset.

The interface is docs/internals.md §4. Offsets of the log end are derived from the data, so a
truncation inside a batch removes that whole batch. Opening recovers: every segment is scanned;
damage in the last segment (a torn write of a killed process) is cut with a warning, damage in an
older one is cut with an error and the later segments go, since offsets must stay contiguous;
followers fetch the lost suffix back from their leader.
"""
from __future__ import annotations

import bisect
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from chaoskit.broker.log.checkpoint import fsync_dir, read_lines, write_atomically
from chaoskit.broker.log.cleaner import cleanable_count, clean_segment, latest_offsets, producers_last_batches
from chaoskit.broker.log.epochs import LeaderEpochCache
from chaoskit.broker.log.segment import Damage, Segment
from chaoskit.protocol.records import BatchHeader, decode_records, header, restamp, split_batches, validate

log = logging.getLogger(__name__)

LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
CLEANED_CHECKPOINT = "cleaned-segments-checkpoint"  # "<segment base> <first cleaned, ms since the epoch>"
_MAX_RELATIVE_OFFSET = 2**31 - 1


class OffsetOutOfRange(Exception):
    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        self.offset, self.log_start_offset, self.log_end_offset = offset, log_start_offset, log_end_offset
        super().__init__(f"offset {offset} is outside the log [{log_start_offset}, {log_end_offset}]")


class InvalidAppend(ValueError):
    """Batches a follower cannot append where they say they belong."""


Batches = bytes | bytearray | memoryview | Sequence[bytes]


class PartitionLog:
    def __init__(self, directory: str | Path, segment_bytes: int = 16 * 1024 * 1024, fsync: bool = True,
                 index_interval_bytes: int = 4096) -> None:
        """fsync=False makes flush() a no-op: data still reaches the OS on every append (safe against a
        killed process), just not against a lost machine."""
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.segment_bytes, self.fsync, self.index_interval_bytes = segment_bytes, fsync, index_interval_bytes
        self.damage: list[Damage] = []  # what opening found and cut
        self._dirty: set[Segment] = set()
        self.epochs = LeaderEpochCache(self.dir, lambda: self.log_end_offset, fsync)
        self._segments: list[Segment] = []
        self._open_segments()
        self._log_start_offset = self._load_log_start()
        self._cleaned_at = self._read_cleaned_checkpoint()
        self._cleaned_through = -1  # where the cleanable part ended at the last compaction
        self._tombstones_due: int | None = None  # when the earliest kept tombstone may go

    # -- opening -------------------------------------------------------------------------------

    def _open_segments(self) -> None:
        for stray in self.dir.glob("*.tmp"):
            stray.unlink()
        bases = sorted(int(p.stem) for p in self.dir.glob("*.log") if p.stem.isdigit())
        for orphan in self.dir.glob("*.index"):
            if orphan.stem.isdigit() and int(orphan.stem) not in bases:
                orphan.unlink()
        for i, base in enumerate(bases):
            segment = Segment(self.dir, base, self.index_interval_bytes)
            self._segments.append(segment)
            damage = segment.recover()
            is_last = i == len(bases) - 1
            if damage is None and (is_last or segment.next_offset <= bases[i + 1]):
                continue
            if damage is None:  # offsets of this segment run into the next one
                damage = Damage(str(segment.log_path), segment.size, f"next segment starts at {bases[i + 1]}, "
                                f"before this one ends at {segment.next_offset}", 0)
            self._cut(segment, damage, later=[Path(self.dir / f"{b:020d}.log") for b in bases[i + 1:]])
            break
        if not self._segments:
            start = self._read_log_start_checkpoint() or 0
            self._segments.append(Segment(self.dir, start, self.index_interval_bytes))
        self._rebuild_epochs()

    def _cut(self, segment: Segment, damage: Damage, later: list[Path]) -> None:
        self.damage.append(damage)
        if later:
            log.error("%s: corrupt at byte offset %d (%s); keeping the %d valid bytes before it and "
                      "removing %d later segment(s): %s", damage.file, damage.position, damage.reason,
                      damage.position, len(later), ", ".join(p.name for p in later))
        else:
            log.warning("%s: truncating %d bytes of torn or corrupt tail at byte offset %d (%s)",
                        damage.file, damage.dropped_bytes, damage.position, damage.reason)
        segment.truncate_bytes(damage.position)
        for path in later:
            path.unlink(missing_ok=True)
            path.with_suffix(".index").unlink(missing_ok=True)
        fsync_dir(self.dir)

    def _rebuild_epochs(self) -> None:
        """Batches newer than the checkpoint teach it their epochs; entries past the data go."""
        self.epochs.truncate_from_end(self.log_end_offset, inclusive=False)
        for segment in self._segments:
            for epoch, start in segment.epoch_starts:
                if epoch > self.epochs.latest_epoch:
                    self.epochs.assign(epoch, start)

    def _read_log_start_checkpoint(self) -> int | None:
        lines = read_lines(self.dir / LOG_START_CHECKPOINT)
        try:
            return int(lines[0]) if lines else None
        except ValueError:
            log.error("%s is unreadable (%r); using the first segment's base offset",
                      self.dir / LOG_START_CHECKPOINT, lines[0])
            return None

    def _load_log_start(self) -> int:
        start = max(self._read_log_start_checkpoint() or 0, self._segments[0].base_offset)
        if start > self.log_end_offset:
            log.warning("%s: log start offset %d is past the recovered log end %d; using the end",
                        self.dir, start, self.log_end_offset)
            start = self.log_end_offset
        return start

    # -- state ---------------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def segments(self) -> list[Segment]:
        return list(self._segments)

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    # -- appending -----------------------------------------------------------------------------

    def append_as_leader(self, batches: Batches, leader_epoch: int) -> tuple[int, int]:
        """Assign offsets from the log end and stamp the epoch; (first offset, last offset)."""
        validated = _validated(batches)
        next_offset, stamped = self.log_end_offset, []
        for batch, h in validated:
            stamped.append(restamp(batch, next_offset, leader_epoch))
            next_offset += h.last_offset_delta + 1
        return self._append([(b, header(b)) for b in stamped])

    def append_as_follower(self, batches: Batches) -> tuple[int, int]:
        """Append the leader's batches with their offsets and epochs; (first offset, last offset)."""
        validated = _validated(batches)
        expected = self.log_end_offset
        for _batch, h in validated:
            if h.base_offset < expected:
                raise InvalidAppend(f"{self.dir.name}: batch at offset {h.base_offset} is below the log end "
                                    f"{expected}; truncate first")
            expected = h.next_offset
        return self._append(validated)

    def _append(self, validated: list[tuple[bytes, BatchHeader]]) -> tuple[int, int]:
        run: list[tuple[bytes, BatchHeader]] = []
        for batch, h in validated:
            if h.partition_leader_epoch > self.epochs.latest_epoch:
                self._write(run)
                run = []
                self.epochs.assign(h.partition_leader_epoch, h.base_offset)
            active = self._segments[-1]
            planned = active.size + sum(len(b) for b, _ in run)
            if planned > 0 and (planned + len(batch) > self.segment_bytes
                                or h.last_offset - active.base_offset > _MAX_RELATIVE_OFFSET):
                self._write(run)
                run = []
                self._roll(h.base_offset)
            run.append((batch, h))
        self._write(run)
        return validated[0][1].base_offset, validated[-1][1].last_offset

    def _write(self, run: list[tuple[bytes, BatchHeader]]) -> None:
        if run:
            segment = self._segments[-1]
            segment.append([b for b, _ in run], [h for _, h in run])
            self._dirty.add(segment)

    def _roll(self, base_offset: int) -> None:
        self._dirty.add(self._segments[-1])
        self._segments.append(Segment(self.dir, base_offset, self.index_interval_bytes))

    # -- reading -------------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one containing `offset` (b"" at the log end)."""
        if not self.log_start_offset <= offset <= self.log_end_offset:
            raise OffsetOutOfRange(offset, self.log_start_offset, self.log_end_offset)
        for segment in self._segments_from(offset):
            data = segment.read(offset, max_bytes)
            if data:
                return data
        return b""

    def _segments_from(self, offset: int) -> list[Segment]:
        bases = [s.base_offset for s in self._segments]
        i = max(0, _floor_index(bases, offset))
        return self._segments[i:]

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after `timestamp_ms` from the log start, if any."""
        for segment in self._segments:
            if segment.max_timestamp < timestamp_ms:
                continue
            for position, h in segment.batches():
                if h.max_timestamp >= timestamp_ms and h.last_offset >= self.log_start_offset:
                    for r in decode_records(segment.read_batch(position, h)):
                        if r.timestamp >= timestamp_ms and r.offset >= self.log_start_offset:
                            return r.offset, r.timestamp
        return None

    # -- cutting -------------------------------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding an offset >= `offset`; below the log start, start afresh at `offset`."""
        if offset >= self.log_end_offset:
            return
        if offset < self.log_start_offset or offset <= self._segments[0].base_offset:
            self._start_fresh_at(offset)
            return
        while len(self._segments) > 1 and self._segments[-1].base_offset >= offset:
            gone = self._segments.pop()
            self._dirty.discard(gone)
            gone.delete()
        self._segments[-1].truncate_to_offset(offset)
        self._dirty.add(self._segments[-1])
        self.epochs.truncate_from_end(self.log_end_offset)
        active = self._segments[-1].base_offset  # truncated, it takes new records: not cleaned any more
        self._forget_cleaning(lambda base: base < active)
        if self.fsync:
            fsync_dir(self.dir)

    def _start_fresh_at(self, offset: int) -> None:
        for segment in self._segments:
            segment.delete()
        self._dirty.clear()
        self._segments = [Segment(self.dir, offset, self.index_interval_bytes)]
        self.epochs.truncate_from_end(offset)
        self._forget_cleaning(lambda base: False)
        self._set_log_start(offset)

    def delete_records_before(self, offset: int) -> None:
        """Advance the log start to `offset` (at most the log end); whole segments below it go."""
        if offset > self.log_end_offset:
            raise OffsetOutOfRange(offset, self.log_start_offset, self.log_end_offset)
        if offset <= self.log_start_offset:
            return
        self._set_log_start(offset)
        while len(self._segments) > 1 and self._segments[1].base_offset <= offset:
            gone = self._segments.pop(0)
            self._dirty.discard(gone)
            gone.delete()
        self.epochs.truncate_from_start(offset)

    def delete_segments_older_than(self, cutoff_ms: int, up_to: int) -> bool:
        """Time-based retention (`retention.ms`): the leading segments whose newest record is older
        than `cutoff_ms` go, as Kafka deletes them, never past `up_to` (the high watermark: a segment
        goes only when all it holds is below it); the active segment too, leaving the log empty at
        its end. True when the log start moved."""
        start = self.log_start_offset
        for i, segment in enumerate(self._segments):
            end = self._segments[i + 1].base_offset if i + 1 < len(self._segments) else self.log_end_offset
            if end > up_to:
                break
            if segment.size == 0 and i + 1 < len(self._segments):  # emptied by compaction: nothing to keep
                start = end
                continue
            if segment.size == 0 or not 0 <= segment.max_timestamp < cutoff_ms:
                break
            start = end
        if start <= self.log_start_offset:
            return False
        if start == self.log_end_offset:
            self._roll(start)  # as Kafka: a fresh active segment, so the expired one goes with the rest
        self.delete_records_before(start)
        return True

    def compact(self, now_ms: int, up_to: int, delete_retention_ms: int, min_lag_ms: int = 0) -> bool:
        """Log compaction (broker/log/cleaner.py) of the segments below `up_to` (the high watermark)
        and older than min.compaction.lag.ms; `now_ms` is wall-clock time. Nothing is read again
        when neither the cleanable part grew nor a kept tombstone is due. True when records went."""
        cutoff = now_ms - min_lag_ms if min_lag_ms > 0 else 2**63 - 1
        n = cleanable_count(self._segments, up_to, cutoff)
        if n == 0:
            return False
        through = self._segments[n].base_offset
        if through == self._cleaned_through and (self._tombstones_due is None or now_ms < self._tombstones_due):
            return False
        cleanable = self._segments[:n]
        latest = latest_offsets(cleanable, self.log_start_offset)
        producers_last = producers_last_batches(self._segments)
        cleaned_at = {s.base_offset: self._cleaned_at.get(s.base_offset, now_ms) for s in cleanable}
        changed, due = False, None
        for segment in cleanable:
            first_cleaned = cleaned_at[segment.base_offset]
            keep_tombstones = now_ms < first_cleaned + delete_retention_ms
            result = clean_segment(segment, latest, self.log_start_offset, keep_tombstones, producers_last)
            if result.tombstones and keep_tombstones:
                due = min(due or 2**63 - 1, first_cleaned + delete_retention_ms)
            if result.data is None:
                continue
            changed = True
            if result.data or segment is self._segments[0]:
                segment.replace_contents(result.data, self.fsync)
            else:  # an emptied segment goes; its offsets are a gap, like the records it held
                self._segments.remove(segment)
                self._dirty.discard(segment)
                segment.delete()
                del cleaned_at[segment.base_offset]
        self._save_cleaned(cleaned_at)
        self._cleaned_through, self._tombstones_due = through, due
        return changed

    def _forget_cleaning(self, kept: Callable[[int], bool]) -> None:
        """After a truncation: the segments that went or take new records again count as never cleaned."""
        self._cleaned_through, self._tombstones_due = -1, None
        remaining = {b: t for b, t in self._cleaned_at.items() if kept(b)}
        if remaining != self._cleaned_at:
            self._save_cleaned(remaining)

    def _save_cleaned(self, cleaned_at: dict[int, int]) -> None:
        self._cleaned_at = cleaned_at
        write_atomically(self.dir / CLEANED_CHECKPOINT, "".join(f"{b} {t}\n" for b, t in sorted(cleaned_at.items())),
                         self.fsync)

    def _read_cleaned_checkpoint(self) -> dict[int, int]:
        out = {}
        for line in read_lines(self.dir / CLEANED_CHECKPOINT) or []:
            parts = line.split()
            if len(parts) == 2 and all(p.lstrip("-").isdigit() for p in parts):
                out[int(parts[0])] = int(parts[1])
        return out

    def _set_log_start(self, offset: int) -> None:
        self._log_start_offset = offset
        write_atomically(self.dir / LOG_START_CHECKPOINT, f"{offset}\n", self.fsync)

    # -- durability ----------------------------------------------------------------------------

    def flush(self) -> None:
        if self.fsync:
            for segment in self._dirty:
                segment.flush()
        self._dirty.clear()

    def close(self) -> None:
        self.flush()
        for segment in self._segments:
            segment.close()

    def __enter__(self) -> PartitionLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _floor_index(sorted_values: list[int], value: int) -> int:
    return bisect.bisect_right(sorted_values, value) - 1


def _validated(batches: Batches) -> list[tuple[bytes, BatchHeader]]:
    if isinstance(batches, (bytes, bytearray, memoryview)):
        parts = split_batches(batches)
    else:
        parts = [bytes(b) for b in batches]
    if not parts:
        raise InvalidAppend("nothing to append: no record batches")
    return [(b, validate(b)) for b in parts]
