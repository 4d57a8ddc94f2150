"""KIP-253 §9: tombstones for keys that moved to a new partition of a log-compacted topic.

After an expansion a key K1 that linear hashing now sends to a new partition P1 left older values
behind on P2, the partition P1 was split from (as of the expansion). Per the KIP, when P2's
earliest offset is above `lowerOffsetThreshold` (the end of P2's leader epoch before P1 was
created, from `leaderEpochAfterCreation` and OffsetsForLeaderEpoch), the producer also sends
(K1, null) to P2 with acks=0, so compaction can drop K1 from P2.

The KIP's conditions, as written: the topic's `enable.ordered.delivery` true, the key not null, the
topic log compacted (its `cleanup.policy` has `compact`, read from DescribeConfigs with every
metadata refresh: client/metadata.py), and initial_partition_count < undeleted_partition_count. The
value is no condition, so a delete (K1, null) on P1 sends one too. As written, the tombstone goes only
once P2's log start has passed the threshold (retention with compact,delete, or DeleteRecords):
compaction alone never moves a log start (docs/conformance.md row 49).
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


class CompactionTombstones:
    def __init__(self, view: ClusterView, send_unacked: SendUnacked) -> None:
        self.view, self.send_unacked = view, send_unacked
        self._thresholds: dict[tuple[str, int], tuple[int, int] | None] = {}  # (topic, P1) -> (P2, threshold)

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
        leader = info.partitions[old].leader
        earliest = list_offset(self.view.connection(leader), info.name, old, EARLIEST)
        if earliest.error_code != ErrorCode.NONE or earliest.offset <= threshold:
            return None
        self.send_unacked(info.name, old, key)
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
