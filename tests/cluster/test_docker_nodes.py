"""A container node's abilities on the real engine, as a local node has them: kill is the engine's
SIGKILL and a start without `clean` keeps the data (the same container); a clean start is a new
container with no data (ZooKeeper still knows the topic, the log is empty) and a log that still holds the old container's; pause freezes the
container (a Metadata request goes unanswered) and resume thaws it."""
from __future__ import annotations

from collections.abc import Callable

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from chaoskit.cluster.docker import DockerCluster
from chaoskit.protocol.requests import LATEST, list_offset
from chaoskit.protocol.wire_client import WireClient, WireTimeout

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def cluster(make_cluster: Callable[..., DockerCluster]) -> DockerCluster:
    return make_cluster(brokers=1, controllers=1, backend="docker")


def end_offset(cluster: DockerCluster, topic: str) -> int:
    with WireClient(*cluster.broker(1).address, timeout=5.0) as client:
        return int(list_offset(client, topic, 0, LATEST).offset)


def write(cluster: DockerCluster, topic: str, n: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
    finally:
        admin.close()
    cluster.wait_until_replicated(topic)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all")
    try:
        for i in range(n):
            producer.send(topic, value=b"%d" % i).get(30)
    finally:
        producer.close(10)


def test_kill_then_start_without_clean_keeps_the_data(cluster: DockerCluster):
    broker = cluster.broker(1)
    write(cluster, "keep", 10)
    first = broker.container_name, broker.pid
    broker.kill()
    assert not broker.running
    assert broker._container.attrs["State"]["ExitCode"] == 137  # SIGKILL, from the engine
    broker.start(clean=False)
    cluster.wait_for_metadata(broker, 30)
    cluster.wait_until_replicated("keep")
    assert broker.container_name == first[0] and broker.pid != first[1]
    assert end_offset(cluster, "keep") == 10


def test_a_clean_start_is_a_new_container_and_the_log_keeps_the_old_one(cluster: DockerCluster):
    broker = cluster.broker(1)
    old_id = broker._container.id
    broker.stop()
    broker.start(clean=True)
    cluster.wait_for_metadata(broker, 30)
    assert broker._container.id != old_id
    cluster.wait_until_replicated("keep")
    assert end_offset(cluster, "keep") == 0  # a new container: the records went with the old one
    log = broker.log_path.read_text()
    assert log.count("READY ") >= 3  # first start, the restart after the kill, this one


def test_pause_freezes_the_container_and_resume_thaws_it(cluster: DockerCluster):
    broker = cluster.broker(1)
    broker.pause()
    try:
        assert broker.paused and broker.running
        with pytest.raises(WireTimeout):  # accepted by the kernel, never answered
            cluster.live_brokers_seen_by(broker)
    finally:
        broker.resume()
    assert not broker.paused
    assert cluster.live_brokers_seen_by(broker) == {1}
