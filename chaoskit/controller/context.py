"""What the active controller knows: live brokers, assignments, partition states, pending deletions.

A cache of ZooKeeper, rebuilt from scratch by every new controller (and after any ZooKeeper
trouble), so it never holds a decision that is not in ZooKeeper already.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from chaoskit.controller.election import Term
from chaoskit.controller.zk_layout import BrokerRegistration, PartitionState, TopicAssignment

TopicPartition = tuple[str, int]


@dataclass
class ControllerContext:
    term: Term
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    broker_czxid: dict[int, int] = field(default_factory=dict)
    assignments: dict[str, TopicAssignment] = field(default_factory=dict)
    states: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    versions: dict[TopicPartition, int] = field(default_factory=dict)
    # topic -> brokers that have yet to answer StopReplica(delete)
    deleting: dict[str, set[int]] = field(default_factory=dict)
    broken: set[TopicPartition] = field(default_factory=set)  # state znodes that do not decode

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

    def forget_topic(self, topic: str) -> None:
        self.assignments.pop(topic, None)
        self.deleting.pop(topic, None)
        self.broken = {tp for tp in self.broken if tp[0] != topic}
        for tp in [tp for tp in self.states if tp[0] == topic]:
            del self.states[tp]
            self.versions.pop(tp, None)
