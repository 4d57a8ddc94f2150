"""MetadataCache: the controller's view of the cluster as the last UpdateMetadata requests gave it.

Metadata answers from it; a leader asks it whether a replica may join the ISR (KIP-320: not when
the controller marks it offline or not live); CreateTopics/DeleteTopics wait on its `changed` signal.
It also holds what the proposals add (docs/internals.md §3): each topic's KIP-253 counts, each
partition's KIP-694 mode, and whether the controller lets internal coordinator topics grow
(KAFKA-20029; guarded until the controller says otherwise).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chaoskit.broker.waiting import Signal
from chaoskit.protocol.extensions import UNKNOWN_COUNT, PartitionMode


@dataclass(frozen=True)
class BrokerEndpoint:
    broker_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    controller_epoch: int = 0
    partition_epoch: int = 0
    mode: PartitionMode = PartitionMode.READ_WRITE


@dataclass(frozen=True)
class TopicCounts:
    """KIP-253's counts of a topic (UNKNOWN_COUNT when the controller sent none)."""
    initial: int = UNKNOWN_COUNT
    undeleted: int = UNKNOWN_COUNT


@dataclass
class MetadataCache:
    brokers: dict[int, BrokerEndpoint] = field(default_factory=dict)
    topics: dict[str, dict[int, PartitionInfo]] = field(default_factory=dict)
    counts: dict[str, TopicCounts] = field(default_factory=dict)
    allow_internal_partition_increase: bool = False
    heard_from_controller: bool = False  # an UpdateMetadata came: the flag above is the controller's
    changed: Signal = field(default_factory=Signal)

    def apply(self, request: Any) -> None:
        """Apply an UpdateMetadata request (the caller has fenced its controller epoch)."""
        self.brokers = {b.broker_id: BrokerEndpoint(b.broker_id, b.host, b.port, b.rack)
                        for b in request.live_brokers}
        self.allow_internal_partition_increase = bool(request.allow_internal_partition_increase)
        self.heard_from_controller = True
        for name in request.deleted_topics:
            self.topics.pop(name, None)
            self.counts.pop(name, None)
        for topic in request.topics:
            parts = self.topics.setdefault(topic.topic_name, {})
            self.counts[topic.topic_name] = TopicCounts(topic.initial_partition_count, topic.undeleted_partition_count)
            for index in topic.removed_partitions:
                parts.pop(index, None)
            for s in topic.partition_states:
                old = parts.get(s.partition_index)
                if old is not None and s.leader_epoch < old.leader_epoch:
                    continue  # a stale state overtaken by a newer one
                parts[s.partition_index] = PartitionInfo(
                    topic.topic_name, s.partition_index, s.leader, s.leader_epoch, tuple(s.isr),
                    tuple(s.replicas), tuple(s.offline_replicas), s.controller_epoch, s.partition_epoch,
                    PartitionMode.of(s.mode))
        self.changed.fire()

    def topic_counts(self, topic: str) -> TopicCounts:
        return self.counts.get(topic, TopicCounts())

    def marked_for_deletion(self, topic: str) -> list[int]:
        """Partitions of the topic in mode ReadOnly or None, ascending."""
        return sorted(p for p, info in self.topics.get(topic, {}).items() if info.mode != PartitionMode.READ_WRITE)

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        return self.topics.get(topic, {}).get(partition)

    def partition_count(self, topic: str) -> int | None:
        parts = self.topics.get(topic)
        return None if parts is None else len(parts)

    def has_leaders(self, topic: str) -> bool:
        """The topic is known and every partition has a live leader."""
        parts = self.topics.get(topic)
        return bool(parts) and all(p.leader in self.brokers for p in parts.values())

    def live_broker_ids(self) -> list[int]:
        return sorted(self.brokers)

    def controller_id(self) -> int:
        """The lowest live broker id: our controllers are not brokers, and clients send admin
        requests to the broker Metadata names as controller, which must be a broker. -1 when none."""
        return min(self.brokers, default=-1)

    def may_join_isr(self, replica: int, topic: str, partition: int) -> bool:
        """KIP-320 zombie fencing: a replica the controller marks offline or not live stays out of the ISR."""
        if replica not in self.brokers:
            return False
        info = self.partition(topic, partition)
        return info is None or replica not in info.offline_replicas

    def leader_endpoint(self, topic: str, partition: int) -> BrokerEndpoint | None:
        info = self.partition(topic, partition)
        return None if info is None else self.brokers.get(info.leader)
