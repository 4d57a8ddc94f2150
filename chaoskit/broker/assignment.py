"""Replica placement for CreateTopics and CreatePartitions, as Kafka's AdminUtils places them.

Leaders go round-robin over the live brokers; each partition's followers follow its leader with a
shift that grows every time the leaders wrap around, so replicas spread evenly. Kafka picks the
start and the shift at random; we derive both from the topic name, so a placement is reproducible.
"""
from __future__ import annotations

import zlib


class PlacementError(ValueError):
    """More replicas asked for than there are live brokers."""


def _start(topic: str, n: int) -> int:
    return zlib.crc32(topic.encode()) % n


def place_replicas(topic: str, brokers: list[int], partitions: int, replication_factor: int,
                   first_partition: int = 0, start: int | None = None) -> dict[int, list[int]]:
    """{partition: [replica broker ids, leader first]} for partitions first_partition.. +partitions."""
    brokers = sorted(brokers)
    n = len(brokers)
    if replication_factor < 1:
        raise PlacementError(f"replication factor must be at least 1, got {replication_factor}")
    if replication_factor > n:
        raise PlacementError(f"replication factor {replication_factor} is larger than the "
                             f"{n} live broker(s) {brokers}")
    start_index = _start(topic, n) if start is None else start % n
    shift = start_index
    out: dict[int, list[int]] = {}
    for i in range(partitions):
        p = first_partition + i
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start_index) % n
        replicas = [brokers[first]]
        for j in range(replication_factor - 1):
            replicas.append(brokers[(first + 1 + (shift + j) % (n - 1)) % n])
        out[p] = replicas
    return out


def leader_start(brokers: list[int], partition0_replicas: list[int]) -> int | None:
    """Where placement for appended partitions starts: partition 0's leader position, as Kafka does."""
    ordered = sorted(brokers)
    return ordered.index(partition0_replicas[0]) if partition0_replicas and partition0_replicas[0] in ordered else None
