"""Admin requests from kafka-python's KafkaAdminClient against three real brokers: CreateTopics,
CreatePartitions and DeleteTopics are validated, written into ZooKeeper and answered once the
metadata shows them (a hand-played controller elects leaders); FindCoordinator creates
`__consumer_offsets` and names the leader of the group's partition."""
from __future__ import annotations

import json

import pytest
from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic
from kafka.errors import (InvalidConfigurationError, InvalidReplicationFactorError, InvalidTopicError,
                          TopicAlreadyExistsError)
from kafka.protocol.metadata import FindCoordinatorRequest

from chaoskit.cluster.waiting import wait_for
from chaoskit.protocol.errors import ErrorCode


@pytest.fixture
def admin_cluster(start_brokers):
    controller, brokers = start_brokers(3)
    admin = KafkaAdminClient(bootstrap_servers="127.0.0.1:%d" % brokers[1].port, request_timeout_ms=10000)
    try:
        with controller.following_zookeeper():
            yield controller, brokers, admin
    finally:
        admin.close()


def assignment(controller, topic):
    raw, _ = controller.zk.get(f"/brokers/topics/{topic}")
    return {int(p): r for p, r in json.loads(raw)["partitions"].items()}


def test_create_grow_and_delete_a_topic(admin_cluster):
    controller, brokers, admin = admin_cluster
    admin.create_topics([NewTopic("orders", 3, 2, topic_configs={"min.insync.replicas": "2"})])
    placed = assignment(controller, "orders")
    assert sorted(placed) == [0, 1, 2] and all(len(set(r)) == 2 for r in placed.values())
    assert len({r[0] for r in placed.values()}) == 3  # leaders spread over the brokers
    raw, _ = controller.zk.get("/config/topics/orders")
    assert json.loads(raw)["config"] == {"min.insync.replicas": "2"}
    described = {p["partition_index"]: p for p in admin.describe_topics(["orders"])[0]["partitions"]}
    assert {p: (d["leader_id"], d["replica_nodes"]) for p, d in described.items()} == \
        {p: (r[0], r) for p, r in placed.items()}
    admin.create_partitions({"orders": NewPartitions(5)})
    assert sorted(assignment(controller, "orders")) == [0, 1, 2, 3, 4]
    assert assignment(controller, "orders")[0] == placed[0]  # existing partitions stay put
    admin.delete_topics(["orders"])
    # The answer waits for the receiving broker's metadata; list_topics may ask another broker, whose
    # UpdateMetadata can land a moment later (as in Kafka), so the others get a bounded wait.
    wait_for(lambda: "orders" not in admin.list_topics(), 10, "every broker's metadata dropping 'orders'")
    wait_for(lambda: not [d for b in brokers.values() for d in b.log_dir.glob("orders-*")], 10,
             "StopReplica deleting the replicas' log directories")


def test_bad_create_requests_are_refused_and_write_nothing(admin_cluster):
    controller, brokers, admin = admin_cluster
    admin.create_topics([NewTopic("dry", 1, 1)], validate_only=True)
    assert controller.zk.exists("/brokers/topics/dry") is None
    admin.create_topics([NewTopic("once", 1, 1)])
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topics([NewTopic("once", 1, 1)])
    with pytest.raises(InvalidReplicationFactorError):
        admin.create_topics([NewTopic("wide", 1, 4)])
    with pytest.raises(InvalidConfigurationError):
        admin.create_topics([NewTopic("cfg", 1, 1, topic_configs={"min.insync.replicas": "zero"})])
    with pytest.raises(InvalidTopicError):
        admin.create_topics([NewTopic("no/slashes", 1, 1)])
    assert sorted(controller.zk.get_children("/brokers/topics")) == ["once"]


def test_find_coordinator_creates_the_offsets_topic_and_names_the_partition_leader(admin_cluster):
    controller, brokers, admin = admin_cluster

    def lookup():
        with brokers[2].client() as c:
            return c.request(FindCoordinatorRequest(key="g1", key_type=0), 1)

    first = lookup()
    assert first.error_code in (ErrorCode.NONE, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    answer = wait_for(lambda: (a := lookup()).error_code == ErrorCode.NONE and a, 10, "coordinator found")
    # "g1".hashCode() is 3242, and 3242 % 5 partitions is 2
    leader = assignment(controller, "__consumer_offsets")[2][0]
    assert (answer.node_id, answer.port) == (leader, brokers[leader].port)


def test_a_broker_that_has_not_heard_from_the_controller_does_not_judge_the_guardrail():
    """Just restarted, a broker holds no UpdateMetadata yet, so not the controller's guardrail
    setting: it answers NOT_CONTROLLER (retriable) for an internal topic, not its own default."""
    from types import SimpleNamespace

    from chaoskit.broker.handlers.admin import _check_guardrail
    from chaoskit.broker.metadata_cache import MetadataCache
    from chaoskit.protocol.errors import ErrorCode, KafkaError

    broker = SimpleNamespace(cache=MetadataCache())
    with pytest.raises(KafkaError) as fresh:
        _check_guardrail(broker, "__consumer_offsets")
    assert fresh.value.code == ErrorCode.NOT_CONTROLLER
    _check_guardrail(broker, "orders")  # an ordinary topic is no question
    broker.cache.heard_from_controller = True  # as an UpdateMetadata without the flag leaves it
    with pytest.raises(KafkaError) as guarded:
        _check_guardrail(broker, "__consumer_offsets")
    assert guarded.value.code == ErrorCode.INVALID_REQUEST
