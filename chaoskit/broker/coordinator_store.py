"""The group coordinator's storage on `__consumer_offsets`, and its wiring into the broker.

ReplicatedOffsetsStore.append writes as partition leader and returns once the write is replicated to the
ISR (acks=all), so a committed offset survives a leader change; read_all replays a partition when
this broker becomes its leader. attach_coordinator gives the GroupCoordinator this store and tells
it when `__consumer_offsets` partitions are won or lost.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from chaoskit.broker.coordinator import GroupCoordinator
from chaoskit.broker.replica_manager import ReplicaManager
from chaoskit.broker.topic_admin import OFFSETS_TOPIC, offsets_topic_partitions
from chaoskit.protocol.errors import ErrorCode, KafkaError
from chaoskit.protocol.records import Record, build_batch, decode_records

log = logging.getLogger("chaoskit.broker.coordinator_store")

APPEND_TIMEOUT_S = 5.0


class ReplicatedOffsetsStore:
    def __init__(self, replicas: ReplicaManager, timeout_s: float = APPEND_TIMEOUT_S) -> None:
        self.replicas, self.timeout_s = replicas, timeout_s

    async def append(self, partition: int, records: bytes | Iterable[Sequence[Any]]) -> int:
        """Append a batch (bytes) or (key, value[, headers]) records as leader; the first offset once
        the ISR has it. KafkaError (NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, ...) otherwise."""
        p = self.replicas.leader(OFFSETS_TOPIC, partition)
        batch = records if isinstance(records, (bytes, bytearray)) else build_batch(list(records))
        first, last = p.append_as_leader(bytes(batch))
        code = await self.replicas.wait_replicated(p, last + 1, self.timeout_s)
        if code != ErrorCode.NONE:
            raise KafkaError(code, f"{p}: offsets write at {first} not replicated")
        return first

    def read_all(self, partition: int) -> list[Record]:
        """Every data record of the partition from its log start to its log end, in offset order."""
        p = self.replicas.leader(OFFSETS_TOPIC, partition)
        return [r for h, batch in p.batches() if not h.is_control
                for r in decode_records(batch) if r.offset >= p.log_start_offset]


async def sync_partition_count(broker: Any) -> int:
    """`__consumer_offsets`' partition count, handed to the coordinator so both place groups alike."""
    count = await offsets_topic_partitions(broker)
    if broker.coordinator.partition_count != count:
        broker.coordinator.partition_count = count
    return count


def attach_coordinator(broker: Any) -> GroupCoordinator:
    """The GroupCoordinator for this broker, told when `__consumer_offsets` partitions are won or lost."""
    coordinator = GroupCoordinator(
        broker.config.broker_id, ReplicatedOffsetsStore(broker.replicas),
        partition_count=broker.config.offsets_topic_num_partitions,
        initial_rebalance_delay_ms=broker.config.group_initial_rebalance_delay_ms,
        partition_exists=lambda topic, partition: broker.cache.partition(topic, partition) is not None,
        leader_epochs=broker.config.leader_epoch_fencing_enable)

    async def won(partition: int) -> None:
        try:  # groups must be placed with the topic's real partition count before they load
            await sync_partition_count(broker)
        except KafkaError as e:
            log.warning("%s partition count unknown (%s); using %d", OFFSETS_TOPIC, e, coordinator.partition_count)
        await coordinator.on_become_leader(partition)

    def on_leadership(topic: str, partition: int, leader: bool) -> Any:
        if topic != OFFSETS_TOPIC:
            return None
        return won(partition) if leader else coordinator.on_resign(partition)

    broker.replicas.listeners.append(on_leadership)
    return coordinator
