"""Which groups this coordinator serves: the `__consumer_offsets` partitions it leads, their groups,
and every read and write of those partitions through the broker's store.

A partition is LOADING from `on_become_leader` until its records are replayed (its groups answer
COORDINATOR_LOAD_IN_PROGRESS), then LOADED; after `on_resign` it is gone (NOT_COORDINATOR). Each
leadership gets a fresh token, so a load or a write that finishes after a resign (or after a resign
and a new election) changes nothing.
"""
from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from chaoskit.broker.coordinator import codec
from chaoskit.broker.coordinator.group import Group
from chaoskit.protocol.errors import ErrorCode, KafkaError
from chaoskit.protocol.topics import partition_for

log = logging.getLogger("chaoskit.broker.coordinator")

KeyValue = tuple[bytes, bytes | None]


class OffsetsStore(Protocol):
    """The broker's side: appends go through the partition leader with acks=all."""

    def append(self, partition: int, records: list[KeyValue]) -> Awaitable[int]:
        """Append (key, value) records as one batch; the first offset, or raise KafkaError."""

    def read_all(self, partition: int) -> Any:
        """Every record of the partition in log order: (key, value) pairs or objects with .key and
        .value (chaoskit.protocol.records.Record); may be an awaitable of that."""


# What a failed append means to the client (Kafka's GroupMetadataManager mapping).
_APPEND_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.LEADER_NOT_AVAILABLE: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.NOT_COORDINATOR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
}


@dataclass(eq=False)
class _Leadership:
    partition: int
    loaded: bool = False


def _key_value(item: Any) -> KeyValue:
    if hasattr(item, "key") and hasattr(item, "value"):
        return item.key, item.value
    key, value = item
    return key, value


class GroupTable:
    def __init__(self, store: OffsetsStore, partition_count: int) -> None:
        partition_for("", partition_count)  # validates the count
        self.store = store
        self.partition_count = partition_count
        self.groups: dict[str, Group] = {}
        self._owned: dict[int, _Leadership] = {}

    def partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self.partition_count)

    def status(self, group_id: str) -> ErrorCode:
        """NONE when this coordinator serves the group now."""
        lead = self._owned.get(self.partition_of(group_id))
        if lead is None:
            return ErrorCode.NOT_COORDINATOR
        return ErrorCode.NONE if lead.loaded else ErrorCode.COORDINATOR_LOAD_IN_PROGRESS

    def lookup(self, group_id: str) -> tuple[ErrorCode, Group | None]:
        err = self.status(group_id)
        return err, (self.groups.get(group_id) if err == ErrorCode.NONE else None)

    def create(self, group_id: str) -> Group:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = Group(group_id, self.partition_of(group_id))
        return group

    def serving(self) -> tuple[bool, list[Group]]:
        """(whether some partition is still loading, the groups of loaded partitions)."""
        loaded = {p for p, lead in self._owned.items() if lead.loaded}
        return len(loaded) < len(self._owned), [g for g in self.groups.values() if g.partition in loaded]

    def is_current(self, group: Group) -> bool:
        """The group is still the one this coordinator serves (not unloaded or replaced meanwhile)."""
        lead = self._owned.get(group.partition)
        return lead is not None and lead.loaded and self.groups.get(group.group_id) is group

    # -- leadership ----------------------------------------------------------------------------
    async def load(self, partition: int) -> list[Group] | None:
        """Replay a partition into groups; None when it was already served or was resigned meanwhile."""
        if partition in self._owned:
            return None
        lead = self._owned[partition] = _Leadership(partition)
        try:
            result = self.store.read_all(partition)
            items = await result if inspect.isawaitable(result) else result
            groups = self._replay(partition, items)
        except Exception:
            if self._owned.get(partition) is lead:
                del self._owned[partition]
            raise
        if self._owned.get(partition) is not lead:
            log.info("__consumer_offsets-%d: resigned while loading; load discarded", partition)
            return None
        self.groups.update({g.group_id: g for g in groups})
        lead.loaded = True
        log.info("__consumer_offsets-%d: loaded %d groups", partition, len(groups))
        return groups

    def _replay(self, partition: int, items: Iterable[Any]) -> list[Group]:
        records: dict[str, codec.GroupRecord | None] = {}
        offsets: dict[str, dict[tuple[str, int], codec.CommittedOffset]] = {}
        for n, item in enumerate(items):
            key, value = _key_value(item)
            if key is None:
                log.warning("__consumer_offsets-%d: record %d has no key; skipped", partition, n)
                continue
            try:
                entry = codec.decode(key, value)
            except codec.CorruptRecord as e:
                log.warning("__consumer_offsets-%d: record %d skipped: %s", partition, n, e)
                continue
            if isinstance(entry, codec.GroupEntry):
                records[entry.group] = entry.record
                if entry.record is None:  # a deleted group loses its offsets too
                    offsets.pop(entry.group, None)
            elif entry.committed is None:
                offsets.get(entry.group, {}).pop((entry.topic, entry.partition), None)
            else:
                offsets.setdefault(entry.group, {})[(entry.topic, entry.partition)] = entry.committed
        groups = []
        for group_id in dict.fromkeys([*records, *offsets]):
            record = records.get(group_id)
            if record is None and not offsets.get(group_id):
                continue
            group = (Group.from_record(group_id, partition, record) if record is not None
                     else Group(group_id, partition))
            group.offsets = offsets.get(group_id, {})
            groups.append(group)
        return groups

    def resign(self, partition: int) -> list[Group]:
        """Stop serving a partition; its groups, removed from the table, for the caller to fail."""
        self._owned.pop(partition, None)
        gone = [g for g in self.groups.values() if g.partition == partition]
        for g in gone:
            del self.groups[g.group_id]
        return gone

    def partitions(self) -> list[int]:
        return sorted(self._owned)

    # -- writes ----------------------------------------------------------------------------------
    async def write(self, group: Group, records: list[KeyValue], for_offsets: bool) -> ErrorCode:
        """Append records for a group; the error code to answer with (NONE when durable)."""
        lead = self._owned.get(group.partition)
        if lead is None or not lead.loaded:
            return ErrorCode.NOT_COORDINATOR
        try:
            await self.store.append(group.partition, records)
        except KafkaError as e:
            mapped = _APPEND_ERRORS.get(e.code, ErrorCode.UNKNOWN_SERVER_ERROR)
            if mapped == ErrorCode.INVALID_COMMIT_OFFSET_SIZE and not for_offsets:
                mapped = ErrorCode.UNKNOWN_SERVER_ERROR
            log.warning("__consumer_offsets-%d: append for group %r failed: %s -> %s",
                        group.partition, group.group_id, e, mapped.name)
            return mapped
        except Exception:
            log.exception("__consumer_offsets-%d: append for group %r failed", group.partition, group.group_id)
            return ErrorCode.UNKNOWN_SERVER_ERROR
        if self._owned.get(group.partition) is not lead:
            return ErrorCode.NOT_COORDINATOR
        return ErrorCode.NONE
