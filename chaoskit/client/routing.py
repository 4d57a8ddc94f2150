"""Where a producer sends a record: linear hashing over the topic's undeleted partitions (KIP-253),
never a ReadOnly or None partition (KIP-694).

A topic without the KIP counts (an unpatched cluster), or whose topic config
`enable.ordered.delivery` is false (read by client/metadata.py), falls back to the stock rule:
keyed records by murmur2 modulo the partition count, unkeyed round-robin.

KIP-253 places unkeyed records by linear hashing too. With no key to hash, the hash is the
producer's running count of unkeyed records: they spread over the undeleted partitions as linear
hashing weighs them (a bucket not yet split takes the share of two) and never land on a
partition the layout has not reached; one that is not ReadWrite is passed over for the next.
"""
from __future__ import annotations

import itertools

from chaoskit.client.admin import TopicInfo
from chaoskit.client.linear_hash import linear_partition, modulo_partition, partition_for_hash
from chaoskit.protocol.extensions import PartitionMode


class NoWritablePartition(Exception):
    """Every partition the rule allows is ReadOnly, None or unknown: metadata must be refreshed."""


def ordered(info: TopicInfo) -> bool:
    """Do KIP-253's client steps apply to the topic: does it carry the counts, with ordered delivery on?"""
    return info.ordered_delivery and info.initial_partition_count is not None \
        and info.undeleted_partition_count is not None


def writable(info: TopicInfo) -> list[int]:
    """The partitions a producer may write to: ReadWrite, below the undeleted count when known."""
    limit = info.undeleted_partition_count if ordered(info) else None
    return sorted(p for p, i in info.partitions.items()
                  if i.mode == PartitionMode.READ_WRITE and (limit is None or p < limit))


class Router:
    def __init__(self, start: int = 0, linear_hashing: bool = True) -> None:
        self._round_robin = itertools.count(start)
        self.linear_hashing = linear_hashing  # off only for `chaoskit mutate` (linear-hashing)

    def partition(self, info: TopicInfo, key: bytes | None) -> int:
        """The partition for a record with this key (None: unkeyed)."""
        choices = writable(info)
        if not choices:
            raise NoWritablePartition(f"topic {info.name!r} has no ReadWrite partition in the client's metadata")
        if key is None:
            return self._unkeyed(info, choices)
        if ordered(info) and self.linear_hashing:
            p = linear_partition(key, info.initial_partition_count, info.undeleted_partition_count)
        elif ordered(info):
            p = modulo_partition(key, info.undeleted_partition_count)
        else:
            p = modulo_partition(key, len(info.partitions))
        if p not in choices:
            raise NoWritablePartition(f"{info.name}-{p} (for key {key!r}) is not ReadWrite in the client's metadata")
        return p

    def _unkeyed(self, info: TopicInfo, choices: list[int]) -> int:
        if not (ordered(info) and self.linear_hashing):
            return choices[next(self._round_robin) % len(choices)]
        allowed = set(choices)
        for _ in range(2 * info.undeleted_partition_count):  # every partition of the layout comes up within that
            p = partition_for_hash(next(self._round_robin), info.initial_partition_count, info.undeleted_partition_count)
            if p in allowed:
                return p
        return choices[0]
