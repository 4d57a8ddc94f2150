"""The fault packs on a proxied docker cluster (3 brokers, 2 controllers, ZooKeeper, the fault proxy
in its own container): the zombie and unclean-election stories run the very tests the local backend
runs (tests/plugins/faults/test_faults_live.py, collected here against a docker cluster), and the
pause fault is `docker pause`: pausing the leader's container makes the controller move leadership;
unpausing brings back a zombie that is fenced (it steps down to the newer epoch) and rejoins."""
from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from chaoskit.cluster.docker import DockerCluster
from chaoskit.cluster.waiting import wait_for

pytestmark = pytest.mark.docker


def _shared(path: Path) -> ModuleType:
    """The local backend's fault tests, loaded as a module so their test functions run here too."""
    spec = importlib.util.spec_from_file_location("faults_live_shared", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


live = _shared(Path(__file__).resolve().parents[1] / "plugins" / "faults" / "test_faults_live.py")
# the same test code as on the local backend; `cluster` below makes them run on containers
test_a_zombie_still_fetches_while_unregistered_and_is_fenced = live.test_a_zombie_still_fetches_while_unregistered_and_is_fenced
test_an_unclean_election_truncates_the_returning_leader = live.test_an_unclean_election_truncates_the_returning_leader


@pytest.fixture(scope="module")
def cluster(make_cluster: Callable[..., DockerCluster]) -> DockerCluster:
    return make_cluster(brokers=3, controllers=2, proxied=True, seed=3, backend="docker")


def test_docker_pause_of_the_leader_moves_leadership_and_the_unpaused_zombie_is_fenced(cluster: DockerCluster,
                                                                                       restore):
    restore(cluster)
    live.create_topic(cluster, "pz", **{"min.insync.replicas": "2"})
    before = cluster.partition_state("pz", 0)
    old = cluster.brokers[before.leader]
    with live.fault(cluster, "pause", "leader-of:pz/0") as paused:
        assert paused["node"] == old.name
        assert old._container.attrs["State"]["Status"] == "paused"  # the engine froze it: docker pause
        after = wait_for(lambda: (s := cluster.partition_state("pz", 0)) and s.leader != old.broker_id and s, 30,
                         "the controller moving leadership off the paused leader",
                         cluster.active_controller().log_path)
        assert after.leader in before.isr and after.leader_epoch > before.leader_epoch
        assert not cluster.view.registered(old.broker_id)  # its session expired while frozen
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", retries=20)
        try:
            acked = {producer.send("pz", value=b"%d" % i, partition=0).get(30).offset for i in range(50)}
        finally:
            producer.close(10)
    # thawed, the old leader still believes in epoch `before.leader_epoch`: it must step down
    assert not old.paused and old.running
    stepped_down = re.compile(r"pz-0: (no longer leading at epoch %d|follower of %d at epoch (\d+))"
                              % (before.leader_epoch, after.leader))
    wait_for(lambda: any(m[1].startswith("no longer") or int(m[2]) >= after.leader_epoch
                         for m in stepped_down.finditer(old.log_path.read_text(errors="replace"))),
             30, "the unpaused zombie stepping down to the newer leader epoch", old.log_path)
    wait_for(lambda: live.metadata_epoch(old, "pz")[1] >= after.leader_epoch, 30,
             "the zombie serving the newer leader epoch", old.log_path)
    replicated = cluster.wait_until_replicated("pz", 60)  # back in the ISR, under the new leader
    assert replicated[0].leader != old.broker_id or replicated[0].leader_epoch > after.leader_epoch
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False)
    try:
        tp = TopicPartition("pz", 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        seen: set[int] = set()
        wait_for(lambda: seen.update(r.offset for rs in consumer.poll(500).values() for r in rs) or acked <= seen,
                 30, "every record acknowledged while the zombie was frozen, readable after it returned")
    finally:
        consumer.close()
