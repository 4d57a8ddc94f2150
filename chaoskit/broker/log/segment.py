"""One log segment: `<base offset, 20 digits>.log` holding whole v2 batches back to back, and
`<base>.index`, a sparse index of (offset relative to base int32, byte position int32) pairs,
one entry per `index_interval_bytes` of log.

Opening scans the .log (CRC of every batch, offsets increasing) and stops at the first damage;
the caller decides what to cut. Writes go straight to the OS (unbuffered), so a killed process
loses nothing it wrote; fsync makes them survive the machine.
"""
from __future__ import annotations

import bisect
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from chaoskit.protocol.records import LOG_OVERHEAD, BatchHeader, InvalidBatch, header, iter_batches

_ENTRY = struct.Struct(">ii")
_LENGTH = struct.Struct(">i")


def segment_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


@dataclass
class Damage:
    """Where a segment stops being valid, and why."""
    file: str
    position: int
    reason: str
    dropped_bytes: int


class Segment:
    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int = 4096) -> None:
        self.base_offset = base_offset
        self.log_path = directory / segment_name(base_offset, ".log")
        self.index_path = directory / segment_name(base_offset, ".index")
        self.index_interval_bytes = index_interval_bytes
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND
        self._log_fd = os.open(self.log_path, flags, 0o644)
        self._index_fd = os.open(self.index_path, flags, 0o644)
        self.size = os.fstat(self._log_fd).st_size
        self.next_offset = base_offset
        self.max_timestamp = -1
        self._index_offsets: list[int] = []  # absolute offsets, for bisect
        self._index_positions: list[int] = []
        self._since_index = 0
        self.epoch_starts: list[tuple[int, int]] = []  # (epoch, first offset) where the scan saw it change

    # -- opening -------------------------------------------------------------------------------

    def recover(self) -> Damage | None:
        """Scan every batch, rebuild the in-memory state and the index; the first damage, if any.

        The scan stops at the damage without cutting anything: see truncate_bytes.
        """
        data = os.pread(self._log_fd, self.size, 0)
        self._reset_index()
        damage = None
        expected = self.base_offset
        try:
            for pos, batch in iter_batches(data):
                h = header(batch)
                if h.base_offset < expected:
                    raise InvalidBatch(f"offset {h.base_offset} goes back (expected at least {expected})", pos)
                self._note_batch(h, pos)
                if not self.epoch_starts or self.epoch_starts[-1][0] != h.partition_leader_epoch:
                    self.epoch_starts.append((h.partition_leader_epoch, h.base_offset))
                expected = h.next_offset
        except InvalidBatch as e:
            damage = Damage(str(self.log_path), e.position, e.reason, len(data) - e.position)
        self._write_index_from_memory()
        return damage

    def _reset_index(self) -> None:
        self._index_offsets, self._index_positions = [], []
        self._since_index = 0
        self.next_offset, self.max_timestamp = self.base_offset, -1
        self.epoch_starts = []

    def _note_batch(self, h: BatchHeader, position: int) -> bool:
        """Track a batch at `position`; True when it gets an index entry."""
        self.next_offset = h.next_offset
        self.max_timestamp = max(self.max_timestamp, h.max_timestamp)
        indexed = not self._index_offsets or self._since_index >= self.index_interval_bytes
        if indexed:
            self._index_offsets.append(h.base_offset)
            self._index_positions.append(position)
            self._since_index = 0
        self._since_index += h.size
        return indexed

    def _write_index_from_memory(self) -> None:
        """Rewrite the .index when it disagrees with the scan (missing, stale, torn)."""
        entries = b"".join(_ENTRY.pack(o - self.base_offset, p)
                           for o, p in zip(self._index_offsets, self._index_positions))
        on_disk = os.pread(self._index_fd, os.fstat(self._index_fd).st_size, 0)
        if on_disk != entries:
            os.ftruncate(self._index_fd, 0)
            _write_all(self._index_fd, entries)

    # -- writing -------------------------------------------------------------------------------

    def append(self, batches: list[bytes], headers: list[BatchHeader]) -> None:
        """Append whole, already-offset batches with one write; index entries follow the data."""
        position, entries = self.size, []
        for batch, h in zip(batches, headers):
            if self._note_batch(h, position):
                entries.append(_ENTRY.pack(h.base_offset - self.base_offset, position))
            position += len(batch)
        _write_all(self._log_fd, b"".join(batches))
        self.size = position
        if entries:
            os.write(self._index_fd, b"".join(entries))

    def truncate_bytes(self, position: int) -> None:
        """Cut the .log at a batch boundary and rescan (the index is rebuilt)."""
        os.ftruncate(self._log_fd, position)
        self.size = position
        self.recover()

    def truncate_to_offset(self, offset: int) -> None:
        """Remove every batch holding an offset >= `offset` (the batch containing it, too)."""
        position = self._position_of_batch_containing(offset)
        if position is not None:
            self.truncate_bytes(position)

    def replace_contents(self, data: bytes, fsync: bool) -> None:
        """Swap the .log for `data` (whole batches, as a log cleaner writes them) by one rename, so a
        crash leaves the old or the new file, and a stray .tmp that opening removes; then rescan."""
        tmp = self.log_path.with_name(self.log_path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, data)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.log_path)
        os.close(self._log_fd)
        self._log_fd = os.open(self.log_path, os.O_RDWR | os.O_APPEND)
        self.size = len(data)
        self.recover()

    def flush(self) -> None:
        os.fsync(self._log_fd)
        os.fsync(self._index_fd)

    def close(self) -> None:
        for fd in (self._log_fd, self._index_fd):
            try:
                os.close(fd)
            except OSError:
                pass

    def delete(self) -> None:
        self.close()
        for path in (self.log_path, self.index_path):
            path.unlink(missing_ok=True)

    # -- reading -------------------------------------------------------------------------------

    def _headers_from(self, position: int):
        """(position, header) for batches from a batch boundary to the end."""
        while position + LOG_OVERHEAD <= self.size:
            h = header(os.pread(self._log_fd, 61, position))
            yield position, h
            position += h.size

    def _position_of_batch_containing(self, offset: int) -> int | None:
        """Byte position of the first batch whose last offset is >= offset, None when none is."""
        i = bisect.bisect_right(self._index_offsets, offset) - 1
        start = self._index_positions[i] if i >= 0 else 0
        for position, h in self._headers_from(start):
            if h.last_offset >= offset:
                return position
        return None

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding `offset`: the first in full, then as many as fit max_bytes."""
        start = self._position_of_batch_containing(offset)
        if start is None:
            return b""
        end = start
        for position, h in self._headers_from(start):
            if position > start and position + h.size - start > max_bytes:
                break
            end = position + h.size
        return os.pread(self._log_fd, end - start, start)

    def batches(self):
        """(position, header) for every batch."""
        return self._headers_from(0)

    def read_batch(self, position: int, h: BatchHeader) -> bytes:
        return os.pread(self._log_fd, h.size, position)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
