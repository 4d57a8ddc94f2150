"""What the active controller knows: live brokers, assignments, partition states, pending deletions.

A cache of ZooKeeper, rebuilt from scratch by every new controller (and after any ZooKeeper
trouble), so it never holds a decision that is not in ZooKeeper already.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from chaoskit.controller.election import Term
from chaoskit.protocol.extensions import PartitionMode
from chaoskit.protocol.zk_layout import BrokerRegistration, PartitionState, TopicAssignment

TopicPartition = tuple[str, int]


@dataclass
class ControllerContext:
    term: Term
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    broker_czxid: dict[int, int] = field(default_factory=dict)
    assignments: dict[str, TopicAssignment] = field(default_factory=dict)
    assignment_versions: dict[str, int] = field(default_factory=dict)  # topic znode versions
    states: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    versions: dict[TopicPartition, int] = field(default_factory=dict)
    # topic -> brokers that have yet to answer StopReplica(delete)
    deleting: dict[str, set[int]] = field(default_factory=dict)
    broken: set[TopicPartition] = field(default_factory=set)  # state znodes that do not decode
    # partition deletion (KIP-253/694): mode-None partitions -> replicas yet to confirm StopReplica(delete)
    removing: dict[TopicPartition, set[int]] = field(default_factory=dict)
    stops_in_flight: set[tuple[TopicPartition, int]] = field(default_factory=set)
    drain_checks: dict[TopicPartition, float] = field(default_factory=dict)  # ListOffsets in flight, since

    @property
    def epoch(self) -> int:
        return self.term.epoch

    def replicas(self) -> dict[TopicPartition, list[int]]:
        return {(t, p): r for t, a in self.assignments.items() for p, r in a.partitions.items()}

    def partitions(self, topics: set[str] | None = None) -> list[TopicPartition]:
        """Every known partition (of `topics` if given) that is not being deleted, sorted."""
        return sorted((t, p) for t, a in self.assignments.items()
                      if (topics is None or t in topics) and t not in self.deleting
                      for p in a.partitions)

    def live_states(self, tps: set[TopicPartition] | None = None) -> dict[TopicPartition, PartitionState]:
        """States to tell brokers about: existing ones of topics not being deleted."""
        return {tp: s for tp, s in self.states.items()
                if tp[0] not in self.deleting and tp[0] in self.assignments and (tps is None or tp in tps)}

    def partitions_of(self, broker_id: int) -> set[TopicPartition]:
        return {tp for tp, r in self.replicas().items() if broker_id in r and tp[0] not in self.deleting}

    def being_removed(self, tp: TopicPartition) -> bool:
        """Mode None: its replicas are being deleted; no leader elections, no LeaderAndIsr."""
        s = self.states.get(tp)
        return s is not None and s.mode == PartitionMode.NONE

    def topic_states(self, topic: str) -> dict[int, PartitionState]:
        return {p: self.states[(topic, p)] for p in self.assignments[topic].partitions if (topic, p) in self.states}

    def undeleted_counts(self) -> dict[str, int]:
        """KIP-253's undeleted_partition_count per topic that has one."""
        return {t: a.undeleted_partition_count for t, a in self.assignments.items()
                if a.undeleted_partition_count is not None}

    def forget_topic(self, topic: str) -> None:
        self.assignments.pop(topic, None)
        self.deleting.pop(topic, None)
        self.assignment_versions.pop(topic, None)
        self.broken = {tp for tp in self.broken if tp[0] != topic}
        for tp in [tp for tp in self.states if tp[0] == topic]:
            self.forget_partition(tp)

    def forget_partition(self, tp: TopicPartition) -> None:
        self.states.pop(tp, None)
        self.versions.pop(tp, None)
        self.removing.pop(tp, None)
        self.drain_checks.pop(tp, None)
        self.stops_in_flight = {(t, b) for t, b in self.stops_in_flight if t != tp}
