"""The built-in faults on a real proxied cluster (3 brokers, 2 controllers, ZooKeeper, our fault
proxy), each test asserting what the fault did to the cluster's state, then healing it:
isolating a leader moves leadership; a zombie is unregistered yet still fetches and is fenced; an
unclean election leaves a truncated log on the returning leader; a broker cut from the controller
serves an older leader epoch than ZooKeeper holds; process faults and toxics do what they say; and
a seeded schedule of faults plays and heals completely."""
from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psutil
import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.waiting import wait_for
from chaoskit.nemesis.compose import ComposedNemesis
from chaoskit.nemesis.executor import run_schedule
from chaoskit.nemesis.ops import fault_op
from chaoskit.nemesis.schedule import ScheduleSpec, Window, generate
from chaoskit.protocol.wire_client import WireClient
from chaoskit.run.live import Run
from chaoskit_plugins.faults import FAULTS


@pytest.fixture(scope="module")
def cluster(make_cluster: Callable[..., LocalCluster]) -> LocalCluster:
    return make_cluster(brokers=3, controllers=2, proxied=True, seed=3)


@contextmanager
def fault(cluster: LocalCluster, name: str, target: str, pick: int = 0, **params: Any) -> Iterator[dict[str, Any]]:
    """One window of a built-in fault: started on entry (yields what it resolved), stopped on exit."""
    nemesis, run = FAULTS[name](), Run.around(cluster)
    nemesis.setup(run)
    window = Window(1, 0.0, 1.0, name, target, params, pick)
    try:
        yield nemesis.invoke(run, fault_op("start", window))["value"]["resolved"]
        nemesis.invoke(run, fault_op("stop", window))
    finally:
        nemesis.teardown(run)


def create_topic(cluster: LocalCluster, name: str, **config: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics([NewTopic(name, 1, 3, topic_configs=config)])
    finally:
        admin.close()
    cluster.wait_until_replicated(name)


def disabled(cluster: LocalCluster) -> set[str]:
    return {name for name, p in cluster.proxies.proxies().items() if not p.enabled}


def metadata_epoch(broker: Any, topic: str) -> tuple[int, int]:
    """(leader, leader epoch) of topic/0 as this broker's metadata cache has it."""
    with WireClient(*broker.address, timeout=5.0) as client:
        response = client.request(MetadataRequest(topics=[topic], allow_auto_topic_creation=False), version=7)
    p = response.topics[0].partitions[0]
    return p.leader_id, p.leader_epoch


class Writer:
    """A kafka-python producer (acks=all) writing numbered records to partition 0 until stopped."""

    def __init__(self, cluster: LocalCluster, topic: str) -> None:
        self.acked: dict[bytes, int] = {}
        self._producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", retries=50,
                                       linger_ms=2, request_timeout_ms=5000)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(topic,), daemon=True)
        self._thread.start()

    def _run(self, topic: str) -> None:
        i = 0
        while not self._stop.is_set():
            value = b"%d" % i
            self._producer.send(topic, value=value, partition=0).add_callback(
                lambda md, v=value: self.acked.__setitem__(v, md.offset))
            i += 1
            self._stop.wait(0.005)  # pacing a producer, not waiting on a condition

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self._producer.close(10)


def test_isolating_a_partition_leader_moves_leadership(cluster: LocalCluster, restore):
    restore(cluster)
    create_topic(cluster, "iso")
    before = cluster.partition_state("iso", 0)
    with fault(cluster, "partition", "leader-of:iso/0") as cut:
        leader = cluster.brokers[before.leader]
        assert cut["node"] == leader.name
        assert disabled(cluster) == {l.name for l in cluster.router.links_of(leader.name)} == set(cut["links"])
        after = wait_for(lambda: (s := cluster.partition_state("iso", 0)) and s.leader != before.leader and s, 30,
                         "the controller moving leadership off the isolated broker", leader.log_path)
        assert after.leader in before.isr and after.leader_epoch > before.leader_epoch
    assert disabled(cluster) == set()
    cluster.wait_until_replicated("iso")  # healed: the isolated broker is back in the ISR


def test_a_zombie_still_fetches_while_unregistered_and_is_fenced(cluster: LocalCluster, restore):
    restore(cluster)
    create_topic(cluster, "zmb")
    before = cluster.partition_state("zmb", 0)
    with fault(cluster, "zombie", "follower-of:zmb/0") as zombie:
        broker = cluster.brokers[zombie["broker"]]
        assert not cluster.view.registered(broker.broker_id) and broker.running
        assert set(zombie["links"]) == {f"b{broker.broker_id}-zk1"}
        # the controller drops it from the ISR at a new epoch, the leader stays
        after = wait_for(lambda: (s := cluster.partition_state("zmb", 0)) and broker.broker_id not in s.isr and s,
                         30, "the zombie leaving the ISR", cluster.active_controller().log_path)
        assert after.leader == before.leader and after.leader_epoch == before.leader_epoch + 1
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all")
        try:
            for i in range(20):
                producer.send("zmb", value=b"%d" % i, partition=0).get(30)
        finally:
            producer.close(10)
        # it keeps fetching from the leader with its old epoch, and the leader refuses (KIP-320)
        wait_for(lambda: re.search(r"zmb-0: Fetch from broker %d answered FENCED_LEADER_EPOCH" % before.leader,
                                   broker.log_path.read_text(errors="replace")), 30,
                 "the zombie's fetches answered FENCED_LEADER_EPOCH", broker.log_path)
        assert broker.broker_id not in cluster.partition_state("zmb", 0).isr
    wait_for(lambda: cluster.view.registered(broker.broker_id), 30, "the zombie registering again", broker.log_path)
    cluster.wait_until_replicated("zmb")


def test_an_unclean_election_truncates_the_returning_leader(cluster: LocalCluster, restore):
    restore(cluster)
    create_topic(cluster, "unc", **{"unclean.leader.election.enable": "true", "min.insync.replicas": "1"})
    for staged in ("unclean-election", "zombie-rejoin"):  # both are told which partition's story to stage
        with pytest.raises(ValueError, match=f"{staged} needs a target leader-of:<topic>/<partition>"):
            with fault(cluster, staged, "broker:1"):
                pass
    writer = Writer(cluster, "unc")
    try:
        wait_for(lambda: len(writer.acked) >= 50, 30, "writes flowing")
        with fault(cluster, "unclean-election", "leader-of:unc/0", solo_writes=20) as story:
            old = cluster.brokers[story["broker"]]
            assert story["unclean"] and story["new_leader"] not in (story["broker"], -1)
            assert story["new_epoch"] > story["solo_epoch"] and story["solo_to"] >= story["solo_from"] + 20
            assert story["steps"] == [["elected-uncleanly", story["new_epoch"]]]  # a suite's evidence of it
            assert not old.running
            solo = {v for v, o in writer.acked.items() if story["solo_from"] <= o < story["solo_to"]}
        # the stop restarted the old leader and waited until it rejoined the ISR
        assert old.broker_id in cluster.partition_state("unc", 0).isr
    finally:
        writer.stop()
    cuts = [(int(a), int(b)) for a, b in re.findall(r"unc-0: truncating from (\d+) to (\d+)",
                                                    old.log_path.read_text(errors="replace"))]
    assert any(frm >= story["solo_to"] and to <= story["solo_from"] for frm, to in cuts), cuts
    assert solo, "writes were acknowledged by the old leader alone"


def test_a_broker_cut_from_the_controller_serves_stale_metadata(cluster: LocalCluster, restore):
    restore(cluster)
    create_topic(cluster, "stl")
    before = cluster.partition_state("stl", 0)
    with fault(cluster, "stale-metadata", "follower-of:stl/0") as cut:
        stale = cluster.brokers[cut["broker"]]
        assert set(cut["links"]) == {f"ctl{c}-b{stale.broker_id}" for c in cluster.controllers}
        cluster.brokers[before.leader].kill()
        now = wait_for(lambda: (s := cluster.partition_state("stl", 0)) and s.leader != before.leader and s, 30,
                       "a new leader for stl/0")
        fresh = next(b for i, b in cluster.brokers.items() if i not in (stale.broker_id, before.leader))
        wait_for(lambda: metadata_epoch(fresh, "stl") == (now.leader, now.leader_epoch), 30,
                 "a reachable broker learning the new leader", fresh.log_path)
        # it still names the dead leader at the old epoch, while ZooKeeper holds a newer one
        assert metadata_epoch(stale, "stl") == (before.leader, before.leader_epoch)
        assert before.leader_epoch < now.leader_epoch
    # healed: the controller's retries reach it and it catches up
    wait_for(lambda: metadata_epoch(stale, "stl")[1] >= now.leader_epoch, 30, "the stale broker catching up",
             stale.log_path)


def test_process_faults_kill_pause_and_restart_and_heal(cluster: LocalCluster, restore):
    restore(cluster)
    with fault(cluster, "kill", "active-controller") as killed:
        old = cluster.controllers[int(killed["node"].split("-")[1])]
        assert not old.running
        wait_for(lambda: (c := cluster.active_controller()) is not None and c is not old, 30, "a new controller")
    assert old.running and old.pid != killed["pid"]
    with fault(cluster, "pause", "broker:2") as paused:
        wait_for(lambda: psutil.Process(paused["pid"]).status() == psutil.STATUS_STOPPED, 10, "SIGSTOP taking hold")
    wait_for(lambda: psutil.Process(paused["pid"]).status() != psutil.STATUS_STOPPED, 10, "SIGCONT taking hold")
    with fault(cluster, "restart", "broker:3") as restarted:
        assert not cluster.brokers[3].running
    assert cluster.brokers[3].running and cluster.brokers[3].pid != restarted["pid"]
    with pytest.raises(ValueError, match="names the clients"):
        with fault(cluster, "kill", "client"):
            pass


def test_latency_on_client_links_and_halves(cluster: LocalCluster, restore):
    restore(cluster)
    listen = cluster.router.links["c-b1"].listen
    host, port = listen.rsplit(":", 1)

    def roundtrip() -> float:
        with WireClient(host, int(port), timeout=10.0) as client:
            t = time.monotonic()
            client.request(ApiVersionsRequest(), version=0)
            return time.monotonic() - t

    with fault(cluster, "latency", "client", latency=300, stream="downstream") as slow:
        assert {link for link, _ in slow["toxics"]} == {"c-b1", "c-b2", "c-b3"}
        assert roundtrip() >= 0.3
    assert roundtrip() < 0.3 and all(cluster.proxies.toxics(l) == [] for l in ("c-b1", "c-b2", "c-b3"))
    with fault(cluster, "partition", "broker:1", pick=4, shape="halves") as halves:
        small, large = (set(g) for g in halves["groups"])
        assert "broker-1" in small and not small & large
        assert disabled(cluster) == set(halves["links"]) and halves["links"]
    assert disabled(cluster) == set()


def test_a_seeded_schedule_plays_and_heals_everything(cluster: LocalCluster, restore):
    restore(cluster)
    spec = ScheduleSpec.from_dict({
        "duration_s": 8, "mean_interval_s": 1, "window_s": [0.5, 1.5],
        "faults": {"partition": {"weight": 2, "targets": ["random-broker"], "overlap": True},
                   "latency": {"weight": 1, "targets": ["client"], "params": {"latency": {"uniform": [10, 50]}}},
                   "pause": {"weight": 1, "targets": ["random-broker"]}}})
    schedule = generate(spec, seed=7)
    nemesis = ComposedNemesis({name: FAULTS[name]() for name in ("partition", "latency", "pause")})
    run = Run.around(cluster)
    nemesis.setup(run)
    ops: list[dict[str, Any]] = []
    try:
        run_schedule(nemesis, schedule.windows, ops.append, test=run)
    finally:
        nemesis.teardown(run)
    assert schedule.windows and len(ops) == 2 * len(schedule.windows)
    assert not [o for o in ops if "error" in o], [o for o in ops if "error" in o]
    assert all(o["value"]["resolved"] for o in ops if o["f"] == "start")
    assert disabled(cluster) == set()
    assert all(cluster.proxies.toxics(name) == [] for name in cluster.router.links)
    assert all(b.running and not b.paused for b in cluster.brokers.values())
