"""The controller process against real ZooKeeper and recording broker endpoints: election and
epochs, topic creation, elections on broker loss (clean, unclean, offline), returning brokers,
CreatePartitions, deletion, ISR notifications, failover that finishes a predecessor's work, and
per-broker senders that a hung broker does not block."""
from __future__ import annotations

import json

from kazoo.client import KazooClient

from chaoskit.cluster.waiting import wait_for
from chaoskit.protocol import zk_layout as zl
from chaoskit.protocol.internal import LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA
from chaoskit.protocol.zk_layout import NO_LEADER


def test_election_epochs_and_takeover_after_a_kill(harness):
    b1 = harness.broker(1)
    c1 = harness.controller(1)
    c2 = harness.controller(2)
    assert harness.active() == 1 and harness.epoch() == 1
    assert c1.ready_info == {"controller_id": 1, "active": True, "epoch": 1}
    assert c2.ready_info == {"controller_id": 2, "active": False, "epoch": None}
    wait_for(lambda: b1.requests(UPDATE_METADATA), 10, "UpdateMetadata from controller 1", c1.log_path)
    assert all(r.controller_epoch == 1 for r in b1.requests(UPDATE_METADATA))

    c1.kill()
    wait_for(lambda: harness.active() == 2, 15, "controller 2 taking over", c2.log_path)
    assert harness.epoch() == 2
    # the new controller sends the full state to every live broker, at its epoch
    wait_for(lambda: any(r.controller_epoch == 2 for r in b1.requests(UPDATE_METADATA)), 10,
             "UpdateMetadata at epoch 2", c2.log_path)
    c1.start(clean=False)
    assert c1.ready_info["active"] is False and harness.active() == 2


def test_topic_creation_broker_loss_and_return(harness):
    brokers = {i: harness.broker(i) for i in (1, 2, 3)}
    ctl = harness.controller(1)
    harness.create_topic("orders", {0: [1, 2, 3], 1: [2, 3, 1]})
    s0 = harness.wait_state("orders", 0, lambda s: True, "created")
    assert (s0.leader, s0.leader_epoch, s0.isr, s0.controller_epoch) == (1, 0, [1, 2, 3], 1)
    for b in brokers.values():  # every replica hears is_new; every broker gets metadata
        wait_for(lambda b=b: b.latest("orders", 1), 10, f"LeaderAndIsr at broker {b.broker_id}", ctl.log_path)
        assert b.latest("orders", 1).is_new and b.latest("orders", 1).leader == 2
        wait_for(lambda b=b: b.latest("orders", 0, UPDATE_METADATA), 10, "UpdateMetadata", ctl.log_path)

    brokers[1].die()  # leader of orders-0, follower of orders-1
    s0 = harness.wait_state("orders", 0, lambda s: s.leader != 1, "a new leader")
    assert (s0.leader, s0.leader_epoch, s0.isr) == (2, 1, [2, 3])
    s1 = harness.wait_state("orders", 1, lambda s: 1 not in s.isr, "broker 1 out of the ISR")
    assert (s1.leader, s1.leader_epoch) == (2, 1), "a follower's death keeps the leader at a new epoch"
    wait_for(lambda: (s := brokers[3].latest("orders", 0)) is not None and s.leader_epoch == 1, 10,
             "the new leader epoch reaching broker 3", ctl.log_path)
    um = brokers[2].requests(UPDATE_METADATA)[-1]
    assert {b.broker_id for b in um.live_brokers} == {2, 3}
    assert [s.offline_replicas for t in um.topics for s in t.partition_states] == [[1], [1]]

    before = len(brokers[1].requests(LEADER_AND_ISR))
    brokers[1].register()  # it comes back: told about all its partitions
    wait_for(lambda: len(brokers[1].requests(LEADER_AND_ISR)) > before, 10, "LeaderAndIsr to the returner",
             ctl.log_path)
    got = {s.partition_index: s for t, s in brokers[1].partition_states()[-2:]}
    assert (got[0].leader, got[0].leader_epoch, got[1].leader) == (2, 1, 2)


def test_no_unclean_election_unless_enabled_per_topic(harness):
    brokers = {i: harness.broker(i) for i in (1, 2)}
    ctl = harness.controller(1)
    harness.create_topic("strict", {0: [1, 2]})
    harness.create_topic("loose", {0: [1, 2]}, {"unclean.leader.election.enable": "true"})
    for topic in ("strict", "loose"):
        harness.wait_state(topic, 0, lambda s: s.leader == 1, "leader 1")
        # the leader shrank the ISR to itself (broker 2 fell behind): as a broker would, with notification
        data, stat = harness.zk.get(zl.state_path(topic, 0))
        state = zl.PartitionState.decode(topic, 0, data).evolve(isr=[1], partition_epoch=1)
        harness.zk.set(zl.state_path(topic, 0), state.encode(), version=stat.version)
        harness.zk.create(zl.ISR_CHANGE_PREFIX, zl.encode_isr_change([(topic, 0)]), sequence=True, makepath=True)
    wait_for(lambda: (s := brokers[2].latest("loose", 0, UPDATE_METADATA)) is not None and s.isr == [1], 10,
             "the ISR change reaching the brokers", ctl.log_path)
    wait_for(lambda: not harness.zk.get_children(zl.ISR_CHANGE), 10, "notifications consumed", ctl.log_path)

    brokers[1].die()
    strict = harness.wait_state("strict", 0, lambda s: s.leader == NO_LEADER, "offline")
    assert (strict.leader_epoch, strict.isr) == (1, [1])
    loose = harness.wait_state("loose", 0, lambda s: s.leader == 2, "unclean leader 2")
    assert (loose.leader_epoch, loose.isr) == (1, [2])

    brokers[1].register()  # the last ISR member returns: the strict partition comes back, led by it
    strict = harness.wait_state("strict", 0, lambda s: s.leader == 1, "back online")
    assert strict.leader_epoch == 2


def test_create_partitions_and_delete_topic(harness):
    brokers = {i: harness.broker(i) for i in (1, 2)}
    ctl = harness.controller(1)
    harness.create_topic("grow", {0: [1, 2]})
    harness.wait_state("grow", 0, lambda s: True, "created")
    data, stat = harness.zk.get(zl.topic_path("grow"))
    grown = zl.TopicAssignment({0: [1, 2], 1: [2, 1], 2: [1, 2]}, {"initial_partition_count": 1})
    harness.zk.set(zl.topic_path("grow"), grown.encode(), version=stat.version)
    for p, leader in ((1, 2), (2, 1)):
        s = harness.wait_state("grow", p, lambda s: True, "new partition")
        assert (s.leader, s.leader_epoch) == (leader, 0)
    assert json.loads(harness.zk.get(zl.topic_path("grow"))[0])["initial_partition_count"] == 1

    harness.zk.create(zl.delete_topic_path("grow"), b"", makepath=True)
    wait_for(lambda: harness.zk.exists(zl.topic_path("grow")) is None
             and harness.zk.exists(zl.delete_topic_path("grow")) is None
             and harness.zk.exists(zl.topic_config_path("grow")) is None, 10, "znodes removed", ctl.log_path)
    for b in brokers.values():
        stops = b.requests(STOP_REPLICA)
        assert stops and all(p.delete for r in stops for t in r.topics for p in t.partitions)
        assert sorted(p.partition_index for t in stops[-1].topics for p in t.partitions) == [0, 1, 2]
        assert any("grow" in r.deleted_topics for r in b.requests(UPDATE_METADATA))


def test_successor_finishes_what_a_dead_controller_left(harness):
    """State a dead controller never wrote (new topic), a leader on a dead broker, a pending deletion."""
    harness.broker(1)
    b2 = harness.broker(2)
    harness.create_topic("fresh", {0: [1, 2]})
    harness.create_topic("stale", {0: [3, 2]})  # broker 3 is dead
    harness.zk.create(zl.state_path("stale", 0), zl.PartitionState(3, 4, [3, 2], 1).encode(), makepath=True)
    harness.create_topic("doomed", {0: [1]})
    harness.zk.create(zl.delete_topic_path("doomed"), b"", makepath=True)
    harness.zk.create(zl.CONTROLLER_EPOCH, b"5", makepath=True)

    ctl = harness.controller(1)
    assert harness.epoch() == 6
    s = harness.wait_state("fresh", 0, lambda s: True, "created")
    assert (s.leader, s.controller_epoch) == (1, 6)
    s = harness.wait_state("stale", 0, lambda s: s.leader == 2, "failed over to 2")
    assert (s.leader_epoch, s.isr, s.controller_epoch) == (5, [2], 6)
    wait_for(lambda: harness.zk.exists(zl.topic_path("doomed")) is None, 10, "deletion finished", ctl.log_path)
    wait_for(lambda: b2.latest("stale", 0) is not None, 10, "full state sent", ctl.log_path)
    assert b2.latest("stale", 0).leader_epoch == 5


def test_a_hung_broker_delays_only_its_own_queue_and_gets_its_requests_later(harness):
    b1, b2 = harness.broker(1), harness.broker(2)
    ctl = harness.controller(1)
    wait_for(lambda: b1.requests(UPDATE_METADATA) and b2.requests(UPDATE_METADATA), 10, "first metadata",
             ctl.log_path)
    b2.answering.clear()  # broker 2 hangs (its requests time out and are retried)
    harness.create_topic("t", {0: [1, 2], 1: [2, 1]})
    wait_for(lambda: b1.latest("t", 1) is not None, 10, "broker 1 served while broker 2 hangs", ctl.log_path)
    assert b2.latest("t", 1) is None
    b2.answering.set()
    wait_for(lambda: b2.latest("t", 1) is not None, 15, "broker 2's retried request", ctl.log_path)


def test_a_deposed_controller_cannot_write(harness):
    """Pause the active controller past its session: its successor's epoch fences its writes."""
    b1 = harness.broker(1)
    c1, c2 = harness.controller(1), harness.controller(2)
    harness.create_topic("t", {0: [1]})
    harness.wait_state("t", 0, lambda s: True, "created")
    c1.pause()
    wait_for(lambda: harness.active() == 2, 20, "controller 2 taking over", c2.log_path)
    c1.resume()
    wait_for(lambda: "no longer the controller" in c1.log_path.read_text() or "resigning" in c1.log_path.read_text(),
             20, "controller 1 noticing it lost", c1.log_path)
    b1.die()
    s = harness.wait_state("t", 0, lambda s: s.leader == NO_LEADER, "offline after its only replica died")
    assert s.controller_epoch == 2
    zk = KazooClient(hosts=harness.connect)
    zk.start(10)
    try:
        assert zl.decode_controller(zk.get(zl.CONTROLLER)[0]) == 2
    finally:
        zk.stop()


def test_writes_are_fenced_by_the_controller_epoch_version(harness):
    """The ZooKeeper-side fence on its own: a writer holding an old /controller_epoch version fails."""
    from chaoskit.controller.election import Election
    from chaoskit.controller.zk_store import ControllerFenced, ControllerZk, StateConflict

    term = Election(harness.zk, 9).try_to_win()
    assert term is not None and term.epoch == 1
    store = ControllerZk(harness.zk)
    store.epoch_zk_version = term.epoch_zk_version
    state = zl.PartitionState(1, 0, [1], term.epoch)
    harness.zk.ensure_path(zl.partitions_path("t"))
    assert store.create_state("t", 0, state) == 0
    try:
        store.write_state("t", 0, state.evolve(leader_epoch=1), version=7)
        raise AssertionError("a write at a stale znode version must conflict")
    except StateConflict:
        pass
    harness.zk.set(zl.CONTROLLER_EPOCH, b"2")  # a successor won
    try:
        store.write_state("t", 0, state.evolve(leader_epoch=1), version=0)
        raise AssertionError("a deposed controller's write must be refused")
    except ControllerFenced:
        pass
    assert harness.state("t", 0).leader_epoch == 0


def test_damaged_znodes_are_reported_and_the_rest_goes_on(harness):
    harness.broker(1)
    harness.zk.create(zl.topic_path("garbled"), b"{not json", makepath=True)
    harness.create_topic("bad-state", {0: [1]})
    harness.zk.create(zl.state_path("bad-state", 0), b'{"leader": 1}', makepath=True)
    ctl = harness.controller(1)
    harness.create_topic("fine", {0: [1]})
    assert harness.wait_state("fine", 0, lambda s: True, "created").leader == 1
    log = ctl.log_path.read_text()
    assert "ignoring topic garbled: /brokers/topics/garbled: not JSON" in log
    assert "/brokers/topics/bad-state/partitions/0/state: missing field(s)" in log
    assert harness.zk.get(zl.state_path("bad-state", 0))[0] == b'{"leader": 1}', "a damaged znode is left alone"
    # repaired, the topic is picked up through its watch
    harness.zk.set(zl.topic_path("garbled"), zl.TopicAssignment({0: [1]}).encode())
    assert harness.wait_state("garbled", 0, lambda s: True, "created after repair").leader == 1
