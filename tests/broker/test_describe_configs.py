"""DescribeConfigs from stock admin clients against a real cluster (ZooKeeper, a controller, two
brokers): kafka-python's and confluent-kafka's describe_configs read a topic's overrides
(enable.ordered.delivery, retention, cleanup) and defaults with Kafka's sources and synonyms, and
this broker's own configs; an unknown topic and a wrong broker id get Kafka's errors."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient as CKAdmin
from confluent_kafka.admin import ConfigResource as CKResource
from confluent_kafka.admin import ConfigSource
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.protocol.admin import DescribeConfigsRequest

from chaoskit.client.admin import AdminClient
from chaoskit.cluster.local import LocalCluster
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.wire_client import WireClient

OVERRIDES = {"enable.ordered.delivery": "false", "retention.ms": "3600000", "cleanup.policy": "compact"}


@pytest.fixture(scope="module")
def cluster(make_cluster: Callable[..., LocalCluster]) -> LocalCluster:
    cluster = make_cluster(brokers=2, controllers=1, broker_config={"min.insync.replicas": 1,
                                                                    "log.cleaner.delete.retention.ms": 60000})
    with AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topic("configured", 2, 2, config=OVERRIDES)
        admin.create_topic("plain", 1, 2)
    for topic in ("configured", "plain"):
        cluster.wait_until_replicated(topic)
    return cluster


@pytest.fixture
def kp_admin(cluster: LocalCluster) -> Iterator[KafkaAdminClient]:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000)
    try:
        yield admin
    finally:
        admin.close()


def _ck_admin(cluster: LocalCluster) -> CKAdmin:
    return CKAdmin({"bootstrap.servers": cluster.bootstrap_servers})


def test_kafka_python_reads_overrides_and_defaults_with_their_sources(kp_admin: KafkaAdminClient):
    got = kp_admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "configured"),
                                     ConfigResource(ConfigResourceType.TOPIC, "plain")], config_filter="all")
    configured, plain = got["topic"]["configured"], got["topic"]["plain"]
    assert {k: configured[k]["value"] for k in OVERRIDES} == OVERRIDES
    assert {configured[k]["config_source"] for k in OVERRIDES} == {"DYNAMIC_TOPIC_CONFIG"}
    assert plain["enable.ordered.delivery"]["value"] == "true"  # KIP-253's default
    assert plain["enable.ordered.delivery"]["config_source"] == "DEFAULT_CONFIG"
    assert (plain["cleanup.policy"]["value"], plain["retention.ms"]["value"]) == ("delete", "604800000")
    # the broker's config file sets min.insync.replicas: a topic without an override falls back to it
    assert (plain["min.insync.replicas"]["value"], plain["min.insync.replicas"]["config_source"]) == \
        ("1", "STATIC_BROKER_CONFIG")
    assert not any(c["read_only"] for c in plain.values())
    modified = kp_admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "configured")])
    assert set(modified["topic"]["configured"]) == set(OVERRIDES)  # the default filter: overrides only


def test_synonyms_name_the_broker_level_fallbacks(kp_admin: KafkaAdminClient):
    got = kp_admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "configured",
                                                    configs={"retention.ms": None, "segment.bytes": None})],
                                    include_synonyms=True, config_filter="all")["topic"]["configured"]
    assert set(got) == {"retention.ms", "segment.bytes"}  # only the keys asked for
    assert [(s["name"], s["source"]) for s in got["retention.ms"]["synonyms"]] == \
        [("retention.ms", "DYNAMIC_TOPIC_CONFIG"), ("log.retention.ms", "DEFAULT_CONFIG")]
    assert [(s["name"], s["value"], s["source"]) for s in got["segment.bytes"]["synonyms"]] == \
        [("log.segment.bytes", "16777216", "DEFAULT_CONFIG")]


def test_cleanup_configs_fall_back_to_the_brokers_log_cleaner_keys(kp_admin: KafkaAdminClient):
    keys = {"cleanup.policy": None, "delete.retention.ms": None, "min.compaction.lag.ms": None}
    got = kp_admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "configured", configs=keys)],
                                    include_synonyms=True, config_filter="all")["topic"]["configured"]
    assert [(s["name"], s["value"], s["source"]) for s in got["cleanup.policy"]["synonyms"]] == \
        [("cleanup.policy", "compact", "DYNAMIC_TOPIC_CONFIG"), ("log.cleanup.policy", "delete", "DEFAULT_CONFIG")]
    assert (got["delete.retention.ms"]["value"], got["delete.retention.ms"]["config_source"]) == \
        ("60000", "STATIC_BROKER_CONFIG")  # the broker's config file sets log.cleaner.delete.retention.ms
    assert (got["min.compaction.lag.ms"]["value"], got["min.compaction.lag.ms"]["config_source"]) == \
        ("0", "DEFAULT_CONFIG")


def test_confluent_kafka_reads_the_topic_and_broker_configs(cluster: LocalCluster):
    admin = _ck_admin(cluster)
    futures = admin.describe_configs([CKResource("topic", "configured"), CKResource("broker", "1")],
                                     request_timeout=10)
    topic, broker = (f.result(timeout=15) for f in futures.values())
    assert {k: topic[k].value for k in OVERRIDES} == OVERRIDES
    assert topic["enable.ordered.delivery"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert broker["broker.id"].value == "1" and broker["broker.id"].is_read_only
    assert broker["min.insync.replicas"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert broker["auto.create.topics.enable"].source == ConfigSource.DEFAULT_CONFIG.value


def test_an_unknown_topic_gets_unknown_topic_or_partition(cluster: LocalCluster):
    admin = _ck_admin(cluster)  # held: a dropped handle ends its requests
    future = admin.describe_configs([CKResource("topic", "nowhere")], request_timeout=10)
    with pytest.raises(KafkaException) as caught:
        next(iter(future.values())).result(timeout=15)
    assert caught.value.args[0].code() == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize("version", [1, 4])
def test_bad_resources_get_kafkas_errors_and_the_rest_are_answered(cluster: LocalCluster, version: int):
    R = DescribeConfigsRequest.DescribeConfigsResource
    request = DescribeConfigsRequest(include_synonyms=False, include_documentation=False, resources=[
        R(resource_type=2, resource_name="nowhere", configuration_keys=None),
        R(resource_type=2, resource_name="no/slash", configuration_keys=None),
        R(resource_type=4, resource_name="2", configuration_keys=None),  # the other broker, asked here
        R(resource_type=4, resource_name="one", configuration_keys=None),
        R(resource_type=32, resource_name="group", configuration_keys=None),
        R(resource_type=2, resource_name="configured", configuration_keys=["enable.ordered.delivery"])])
    with WireClient(*cluster.broker(1).address, timeout=10) as c:
        response: Any = c.request(request, version)
    assert [r.error_code for r in response.results] == [
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST, ErrorCode.NONE]
    assert [r.resource_name for r in response.results][-1] == "configured"
    assert [(c.name, c.value) for c in response.results[-1].configs] == [("enable.ordered.delivery", "false")]
    assert "expected 1 or empty string" in response.results[2].error_message
