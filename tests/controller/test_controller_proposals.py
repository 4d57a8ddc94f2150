"""The controller's side of the proposals against real ZooKeeper and recording broker endpoints:
KIP-253's counts back-filled into a topic a stock writer created, LeaderAndIsr carrying the count
with the bumped epochs, UpdateMetadata carrying counts, modes and the guardrail flag; each step
also done for a raw ZooKeeper expansion; and with the proposals off, nothing of it."""
from __future__ import annotations

from chaoskit.cluster.waiting import wait_for
from chaoskit.protocol import zk_layout as zl
from chaoskit.protocol.internal import LEADER_AND_ISR, UPDATE_METADATA


def znode(harness, topic: str) -> zl.TopicAssignment:
    return zl.TopicAssignment.decode(topic, harness.zk.get(zl.topic_path(topic))[0])


def test_counts_backfilled_and_sent_with_the_epochs(harness):
    broker = harness.broker(1)
    ctl = harness.controller(1)
    harness.create_topic("legacy", {0: [1], 1: [1], 2: [1]})  # no counts, as a stock tool writes it
    wait_for(lambda: znode(harness, "legacy").undeleted_partition_count == 3, 15, "counts back-filled", ctl.log_path)
    assert znode(harness, "legacy").initial_partition_count == 3
    wait_for(lambda: any(t.topic_name == "legacy" and t.undeleted_partition_count == 3
                         for r in broker.requests(UPDATE_METADATA) for t in r.topics), 10, "counts in UpdateMetadata")
    um = broker.requests(UPDATE_METADATA)[-1]
    assert um.allow_internal_partition_increase is False

    # a stock writer adds two partitions without touching the counts: an expansion all the same
    grown = znode(harness, "legacy")
    harness.zk.set(zl.topic_path("legacy"), grown.evolve(partitions={**grown.partitions, 3: [1], 4: [1]}).encode())
    harness.wait_state("legacy", 0, lambda s: s.leader_epoch == 1, "partition 0 bumped")
    assert znode(harness, "legacy").undeleted_partition_count == 5
    new = harness.wait_state("legacy", 4, lambda s: True, "partition 4 created")
    assert new.after_creation == {0: 0, 1: 0, 2: 0}
    wait_for(lambda: (s := broker.latest("legacy", 0)) is not None and s.leader_epoch == 1, 10, "bumped LeaderAndIsr")
    carrying = [t for r in broker.requests(LEADER_AND_ISR) for t in r.topics
                if t.topic_name == "legacy" and any(s.leader_epoch == 1 and s.partition_index == 0
                                                    for s in t.partition_states)]
    assert carrying and all(t.undeleted_partition_count == 5 for t in carrying)  # the count with the epoch


def test_without_the_proposals_the_controller_writes_none_of_it(harness):
    broker = harness.broker(1)
    ctl = harness.controller(1, **{"ordered.delivery.enable": False, "delete.topic.partition.enable": False})
    harness.create_topic("plain", {0: [1], 1: [1]})
    harness.wait_state("plain", 1, lambda s: True, "created")
    grown = znode(harness, "plain")
    harness.zk.set(zl.topic_path("plain"), grown.evolve(partitions={**grown.partitions, 2: [1]}).encode())
    s2 = harness.wait_state("plain", 2, lambda s: True, "partition 2 created")
    assert not s2.after_creation and harness.state("plain", 0).leader_epoch == 0
    # a lowered count (as DeletePartitions writes it) marks nothing with deletion disabled
    sent = len(broker.requests(UPDATE_METADATA))
    harness.zk.set(zl.topic_path("plain"), znode(harness, "plain").evolve(undeleted_partition_count=2).encode())
    wait_for(lambda: len(broker.requests(UPDATE_METADATA)) > sent, 10, "the change handled", ctl.log_path)
    assert harness.state("plain", 2).mode == 0 and not harness.state("plain", 2).before_deletion
    assert (znode(harness, "plain").initial_partition_count, harness.state("plain", 1).leader_epoch) == (None, 0)
