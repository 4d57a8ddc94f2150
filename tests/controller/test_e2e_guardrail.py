"""KAFKA-20029's guardrail on a real 3-broker cluster (patched profile): CreatePartitions for
[orders, __consumer_offsets] grows orders and answers INVALID_REQUEST for the internal topic; the
controller also undoes an internal topic's new partitions written straight into ZooKeeper; with
controller.unstable.allow.internal.coordinator.partition.increase=true (controllers restarted,
as the proposal says an operator must) both grow. Stock AdminClients (kafka-python, librdkafka) get
the same per-topic answers; with two controllers set differently, the active one decides.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kafka.protocol.metadata import FindCoordinatorRequest

from chaoskit.client.admin import AdminClient
from chaoskit.cluster.local import LocalCluster
from chaoskit.cluster.waiting import wait_for
from chaoskit.protocol import zk_layout as zl
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.wire_client import WireClient

OFFSETS = "__consumer_offsets"
FLAG = "controller.unstable.allow.internal.coordinator.partition.increase"


@pytest.fixture(scope="module")
def admin(cluster: LocalCluster) -> Any:
    with AdminClient(cluster.bootstrap_servers) as a:
        admin_ready(cluster, a)
        yield a


def admin_ready(cluster: LocalCluster, admin: AdminClient) -> None:
    """`orders` (2 partitions) and `__consumer_offsets` (5, made by the first FindCoordinator)."""
    admin.create_topic("orders", 2, 3)

    def coordinator_found() -> bool:
        with WireClient(*cluster.broker(1).address) as c:
            return c.request(FindCoordinatorRequest(key="g", key_type=0), 1).error_code == ErrorCode.NONE
    wait_for(coordinator_found, 30, "__consumer_offsets created by FindCoordinator")
    cluster.wait_until_replicated(OFFSETS)
    cluster.wait_until_replicated("orders")


def test_the_batch_goes_on_without_the_internal_topic(cluster: LocalCluster, admin: AdminClient, kip: Any):
    results = admin.create_partitions({"orders": 4, OFFSETS: 10, "__transaction_state": 3,
                                       "__share_group_state": 3})
    assert results["orders"].code == ErrorCode.NONE
    for internal in (OFFSETS, "__transaction_state", "__share_group_state"):
        assert results[internal].code == ErrorCode.INVALID_REQUEST, internal
        assert FLAG in results[internal].message
    assert len(admin.topic("orders").partitions) == 4
    assert len(admin.topic(OFFSETS).partitions) == 5 and len(kip.znode(cluster, OFFSETS).partitions) == 5


def test_the_controller_undoes_a_raw_internal_expansion(cluster: LocalCluster, admin: AdminClient, kip: Any):
    """A writer that bypasses the brokers (a stock ZooKeeper tool) is refused by the controller."""
    znode = kip.znode(cluster, OFFSETS)
    grown = znode.evolve(partitions={**znode.partitions, 5: list(znode.partitions[0])})
    cluster.view.client.set(zl.topic_path(OFFSETS), grown.encode())
    wait_for(lambda: sorted(kip.znode(cluster, OFFSETS).partitions) == list(range(5)), 30,
             "the controller restored __consumer_offsets' 5 partitions",
             cluster.active_controller().log_path)
    assert 5 not in kip.state_znodes(cluster, OFFSETS)
    assert "refused" in cluster.active_controller().log_path.read_text()


INTERNAL = ("__transaction_state", "__share_group_state")


def test_stock_admin_clients_get_invalid_request_and_the_batch_goes_on(cluster: LocalCluster, admin: AdminClient):
    """KAFKA-20029: existing AdminClients need no change. kafka-python's and librdkafka's
    CreatePartitions over a mixed batch: INVALID_REQUEST for each internal topic, the other grows."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient as RdAdmin
    from confluent_kafka.admin import NewPartitions
    from kafka.admin import KafkaAdminClient

    admin.create_topic("stock", 2, 3)
    cluster.wait_until_replicated("stock")
    py = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, client_id="guardrail-test")
    try:
        answer = py.create_partitions({"stock": 3, OFFSETS: 10, **{t: 3 for t in INTERNAL}}, raise_errors=False)
    finally:
        py.close()
    codes = {r.name: r.error_code for r in answer.results}
    assert codes == {"stock": ErrorCode.NONE, OFFSETS: ErrorCode.INVALID_REQUEST,
                     **{t: ErrorCode.INVALID_REQUEST for t in INTERNAL}}, answer
    rd = RdAdmin({"bootstrap.servers": cluster.bootstrap_servers})
    futures = rd.create_partitions([NewPartitions("stock", 4), NewPartitions(OFFSETS, 10)], request_timeout=15)
    assert futures["stock"].result(timeout=20) is None
    with pytest.raises(KafkaException) as refused:
        futures[OFFSETS].result(timeout=20)
    assert refused.value.args[0].code() == ErrorCode.INVALID_REQUEST and FLAG in refused.value.args[0].str()
    assert len(admin.topic("stock").partitions) == 4 and len(admin.topic(OFFSETS).partitions) == 5


def test_an_internal_topic_is_deleted_as_kafka_does_and_created_only_with_its_configured_count(
        cluster: LocalCluster, admin: AdminClient, kip: Any):
    """Apache Kafka's broker deletes an internal topic when asked (only its command-line tool
    refuses), and so does chaoskit's. A creation with a count other than the configured one would
    split the groups as KAFKA-20029's expansion does; Kafka's broker takes it, chaoskit's refuses it
    (INVALID_PARTITIONS) for each of the three, from kafka-python and librdkafka alike."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient as RdAdmin
    from confluent_kafka.admin import NewTopic as RdTopic
    from kafka.admin import KafkaAdminClient, NewTopic

    py = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, client_id="guardrail-test")
    try:
        py.delete_topics([OFFSETS])  # raises on an error answer
        wait_for(lambda: kip.znode(cluster, OFFSETS) is None, 30, "__consumer_offsets deleted",
                 cluster.active_controller().log_path)
        answer = py.create_topics([NewTopic(OFFSETS, 1, 3), NewTopic("__transaction_state", 5, 3)],
                                  raise_errors=False)
        assert {t["name"]: t["error_code"] for t in answer["topics"]} == {OFFSETS: ErrorCode.INVALID_PARTITIONS,
                                                       "__transaction_state": ErrorCode.INVALID_PARTITIONS}, answer
        rd = RdAdmin({"bootstrap.servers": cluster.bootstrap_servers})
        with pytest.raises(KafkaException) as refused:
            rd.create_topics([RdTopic("__share_group_state", 1, 3)], request_timeout=15)["__share_group_state"] \
                .result(timeout=20)
        assert refused.value.args[0].code() == ErrorCode.INVALID_PARTITIONS
        assert kip.znode(cluster, OFFSETS) is None and kip.znode(cluster, "__share_group_state") is None
        py.create_topics([NewTopic(OFFSETS, 5, 3)])  # its configured count: created
    finally:
        py.close()
    cluster.wait_until_replicated(OFFSETS)

    def coordinators() -> set[int] | None:
        answers = []
        for broker in cluster.brokers.values():
            with WireClient(*broker.address) as c:
                answers.append(c.request(FindCoordinatorRequest(key="g", key_type=0), 1))
        return {a.node_id for a in answers} if all(a.error_code == ErrorCode.NONE for a in answers) else None
    assert len(wait_for(coordinators, 30, "every broker names g's coordinator")) == 1
    assert len(admin.topic(OFFSETS).partitions) == 5


def test_with_the_flag_both_grow(cluster: LocalCluster, admin: AdminClient, kip: Any):
    cluster.spec.controller_config[FLAG] = True
    for controller in cluster.controllers.values():
        controller.stop()
    for controller in cluster.controllers.values():
        controller.start()
    cluster.wait_for_controller(30)
    # every broker hears the controller's setting in the UpdateMetadata of its failover
    wait_for(lambda: admin.create_partitions({OFFSETS: 8}, validate_only=True)[OFFSETS].ok, 30,
             "brokers learned the controller's flag")
    results = admin.create_partitions({"orders": 6, OFFSETS: 8})
    assert results["orders"].ok and results[OFFSETS].ok, results
    assert len(admin.topic("orders").partitions) == 6 and len(admin.topic(OFFSETS).partitions) == 8
    kip.wait_consistent(cluster, OFFSETS)


def test_controllers_that_disagree_the_active_one_decides(kip_cluster: Callable[..., LocalCluster]):
    """The flag is per controller; the brokers hear the active one's (UpdateMetadata), so with two
    controllers set differently the guardrail follows whichever is active, and flips on failover."""
    split = kip_cluster(overrides={"controller-1": {FLAG: False}, "controller-2": {FLAG: True}})
    allows = {1: False, 2: True}
    with AdminClient(split.bootstrap_servers) as a:
        admin_ready(split, a)

        def guarded_as(allowed: bool) -> Callable[[], bool]:
            return lambda: a.create_partitions({OFFSETS: 8}, validate_only=True)[OFFSETS].ok is allowed

        first = split.wait_for_controller(30)
        wait_for(guarded_as(allows[first]), 30, f"brokers guard as controller-{first} says",
                 split.controllers[first].log_path)
        split.controllers[first].kill()
        second = wait_for(lambda: (c := split.view.controller()) not in (None, first) and c, 30,
                          "the other controller took over", split.controllers[3 - first].log_path)
        wait_for(guarded_as(allows[second]), 30, f"brokers guard as controller-{second} says",
                 split.controllers[second].log_path)
        assert allows[second] is not allows[first]
