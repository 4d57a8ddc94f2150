"""KIP-253 §9: tombstones for keys that moved to a new partition of a log-compacted topic.

After an expansion a key K1 that linear hashing now sends to a new partition P1 left older values
behind on P2, the partition P1 was split from (as of the expansion). The producer also sends
(K1, null) to P2 with acks=0, so compaction drops K1's old values from P2: a reader restoring the
topic from its start can then never bring back a value K1 had before it moved (after K1 was
deleted on P1, say, and compaction removed both its value and its tombstone there).

The KIP's conditions: the topic's `enable.ordered.delivery` true, the key not null, the topic log
compacted (its `cleanup.policy` has `compact`, read from DescribeConfigs with every metadata
refresh: client/metadata.py), and initial_partition_count < undeleted_partition_count. The value is
no condition, so a delete (K1, null) on P1 sends one too.

A deliberate difference (docs/conformance.md row 49): the KIP sends the tombstone when P2's earliest
offset is *above* `lowerOffsetThreshold` (the last offset of P2's leader epoch before P1 was
created, from `leaderEpochAfterCreation` and OffsetsForLeaderEpoch). Then the pre-expansion values
it targets are already gone with the log start, and on a pure `compact` topic, whose log start
never moves, it never goes at all, so a moved and deleted key is resurrected from P2. chaoskit
sends it in the opposite case, while P2 still holds records at or below the threshold: exactly
when there is an old value of K1 left to remove. Readers must not take it for a delete of K1
(it may reach them after K1's new value on P1), so it carries the header `MOVED_HEADER`, which the
KIP does not define, and the ordered consumer reads past it without delivering it. A stock reader
sees a delete; a record of the same key on P1 written after it still stands.

At the rate it needs: one tombstone per (key, P2) is enough (compaction keeps a key's latest record,
and nothing writes K1 to P2 again), so it goes again only after its send failed or P2's leader
changed (an acks=0 record a leader took may be lost with it). Once P2's log start has passed the
threshold it never comes back below it, so P2 is not asked again; until then its start is asked
(ListOffsets) only when a tombstone is about to go.
"""
from __future__ import annotations

from collections.abc import Callable

from chaoskit.client.admin import TopicInfo
from chaoskit.client.linear_hash import expansion_blocker
from chaoskit.client.metadata import ClusterView
from chaoskit.client.routing import ordered
from chaoskit.client.truncation import EPOCH_VERSION
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.requests import EARLIEST, epoch_end, list_offset

SendUnacked = Callable[[str, int, bytes], None]  # (topic, partition, key): a (key, null) record with acks=0
MOVED_HEADER = "kip253.moved"  # marks a §9 tombstone: the key moved away, it was not deleted


def moved_tombstone(value: bytes | None, headers: list[tuple[str, bytes | None]]) -> bool:
    """Whether a record read is a §9 tombstone, which a reader skips rather than apply as a delete."""
    return value is None and any(name == MOVED_HEADER for name, _ in headers)


class CompactionTombstones:
    def __init__(self, view: ClusterView, send_unacked: SendUnacked) -> None:
        self.view, self.send_unacked = view, send_unacked
        self._thresholds: dict[tuple[str, int], tuple[int, int] | None] = {}  # (topic, P1) -> (P2, threshold)
        self._sent: dict[tuple[str, int, bytes], int] = {}  # (topic, P2, key) -> P2's leader epoch when sent
        self._cleared: set[tuple[str, int]] = set()  # (topic, P2) whose log start passed the threshold

    def after_send(self, info: TopicInfo, partition: int, key: bytes | None) -> int | None:
        """Called after a record with `key` was acknowledged on `partition`; the P2 a tombstone went to, if any."""
        if not info.compacted or key is None or not ordered(info) \
                or partition < info.initial_partition_count \
                or info.initial_partition_count >= info.undeleted_partition_count:
            return None
        found = self._threshold(info, partition)
        if found is None:
            return None
        old, threshold = found
        part = info.partitions[old]
        if (info.name, old) in self._cleared or self._sent.get((info.name, old, key)) == part.leader_epoch:
            return None  # nothing left there to remove, or this key's tombstone went to this leader
        earliest = list_offset(self.view.connection(part.leader), info.name, old, EARLIEST)
        if earliest.error_code != ErrorCode.NONE:
            return None
        if earliest.offset > threshold:
            self._cleared.add((info.name, old))  # P2 no longer holds anything written before P1 existed
            return None
        self.send_unacked(info.name, old, key)  # a failure raises: not marked sent, tried again next time
        self._sent[(info.name, old, key)] = part.leader_epoch
        return old

    def _threshold(self, info: TopicInfo, partition: int) -> tuple[int, int] | None:
        tp = (info.name, partition)
        if tp not in self._thresholds:
            maps = self.view.admin.epoch_maps(info.name, [partition], missing_ok=True).get(partition)
            if maps is None or not maps.after_creation:
                self._thresholds[tp] = None
                return None
            old = expansion_blocker(partition, info.initial_partition_count, max(maps.after_creation) + 1)
            part = info.partitions[old]
            end = epoch_end(self.view.connection(part.leader), info.name, old, maps.after_creation[old],
                            part.leader_epoch, version=EPOCH_VERSION)
            if end.error != ErrorCode.NONE:
                return None  # asked again next time
            # KIP-253: the *last offset* published under the old epoch (its end offset is one past it)
            self._thresholds[tp] = (old, end.end_offset - 1)
        return self._thresholds[tp]

