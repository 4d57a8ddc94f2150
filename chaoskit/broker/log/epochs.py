"""The leader-epoch cache: which offset each leader epoch started at (KIP-101/279), kept in
`leader-epoch-checkpoint` in Kafka's format (version line, count line, then `epoch start_offset`).

end_offset_for answers OffsetsForLeaderEpoch with Kafka's semantics, which a follower uses to find
where its log diverged from the leader's.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from chaoskit.broker.log.checkpoint import read_lines, write_atomically

log = logging.getLogger(__name__)

CHECKPOINT_NAME = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class LeaderEpochCache:
    def __init__(self, directory: Path, log_end_offset: Callable[[], int], fsync: bool = True) -> None:
        self.path = directory / CHECKPOINT_NAME
        self._log_end_offset = log_end_offset
        self._fsync = fsync
        self._entries: list[EpochEntry] = self._load()

    def _load(self) -> list[EpochEntry]:
        lines = read_lines(self.path)
        if lines is None:
            return []
        try:
            version, count = int(lines[0]), int(lines[1])
            entries = [EpochEntry(*map(int, line.split())) for line in lines[2:]]
            if version != 0 or count != len(entries):
                raise ValueError(f"version {version}, count {count} for {len(entries)} entries")
        except (ValueError, IndexError, TypeError) as e:
            # the log's batches carry their epochs, so the cache is rebuilt from them on open
            log.error("%s is unreadable (%s); rebuilding leader epochs from the log", self.path, e)
            return []
        return entries

    def _save(self) -> None:
        body = "".join(f"{e.epoch} {e.start_offset}\n" for e in self._entries)
        write_atomically(self.path, f"0\n{len(self._entries)}\n{body}", self._fsync)

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    def latest(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that `epoch` starts at `start_offset`; entries it contradicts (a later or equal epoch,
        or a start at or after this one) are dropped, as Kafka does."""
        if epoch < 0 or start_offset < 0:
            return
        latest = self.latest()
        if latest is not None and latest.epoch == epoch and latest.start_offset <= start_offset:
            return
        kept = [e for e in self._entries if e.epoch < epoch and e.start_offset < start_offset]
        if len(kept) < len(self._entries):
            log.warning("%s: epoch %d at %d replaces %s", self.path, epoch, start_offset, self._entries[len(kept):])
        self._entries = kept + [EpochEntry(epoch, start_offset)]
        self._save()

    def end_offset_for(self, requested_epoch: int) -> tuple[int, int]:
        """(epoch, end offset): the largest epoch <= requested and the offset where it ended.

        The latest epoch ends at the log end offset. An epoch above every known one, or -1,
        gives (-1, -1). An epoch below every known one gives (requested, start of the first).
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self._entries[-1].epoch:
            return requested_epoch, self._log_end_offset()
        higher = next((e for e in self._entries if e.epoch > requested_epoch), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = [e for e in self._entries if e.epoch <= requested_epoch]
        return (floor[-1].epoch if floor else requested_epoch), higher.start_offset

    def truncate_from_end(self, end_offset: int, inclusive: bool = True) -> None:
        """Drop entries starting at or after end_offset (after it, when not inclusive): the log was cut there."""
        kept = [e for e in self._entries
                if e.start_offset < end_offset or (not inclusive and e.start_offset == end_offset)]
        if len(kept) != len(self._entries):
            self._entries = kept
            self._save()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at start_offset: the epoch covering it starts there, earlier ones go."""
        before = [e for e in self._entries if e.start_offset < start_offset]
        if not before:
            return
        after = self._entries[len(before):]
        first_kept = [] if after and after[0].start_offset == start_offset else [EpochEntry(before[-1].epoch, start_offset)]
        self._entries = first_kept + after
        self._save()
