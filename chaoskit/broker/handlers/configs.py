"""DescribeConfigs (v1-4) for TOPIC and BROKER resources, answered as Apache Kafka's ZooKeeper-mode
broker does: a topic must be in the metadata cache (else UNKNOWN_TOPIC_OR_PARTITION) and its
overrides are read from ZooKeeper's `/config/topics/<t>`; a BROKER resource must name this broker
(or "" for the cluster-wide dynamic defaults, of which we have none); any other resource type is
INVALID_REQUEST. The entries themselves are broker/described_configs.py's.
"""
from __future__ import annotations

from typing import Any

from kafka.protocol.admin import DescribeConfigsResponse

from chaoskit.broker.described_configs import Entry, broker_entries, topic_entries
from chaoskit.broker.handlers.registry import handles
from chaoskit.broker.topic_admin import validate_topic_name, zk_call
from chaoskit.protocol.errors import ErrorCode, KafkaError

TOPIC, BROKER = 2, 4  # ConfigResource.Type
Result = DescribeConfigsResponse.DescribeConfigsResult
Config = Result.DescribeConfigsResourceResult
Synonym = Config.DescribeConfigsSynonym


def _config(entry: Entry, synonyms: bool, documentation: bool) -> Any:
    return Config(name=entry.name, value=entry.value, read_only=entry.read_only, config_source=entry.source,
                  is_default=False, is_sensitive=False, config_type=entry.type,
                  documentation=entry.doc if documentation else None,
                  synonyms=[Synonym(name=n, value=v, source=s) for n, v, s in entry.synonyms] if synonyms else [])


async def _entries(broker: Any, resource: Any) -> list[Entry]:
    keys = resource.configuration_keys
    if resource.resource_type == TOPIC:
        validate_topic_name(resource.resource_name)
        if resource.resource_name not in broker.cache.topics:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)  # Kafka sends no message
        overrides = await zk_call(broker.zk.topic_config, resource.resource_name)
        return topic_entries(overrides, broker.config, keys)
    if resource.resource_type == BROKER:
        name = resource.resource_name
        if name == "":
            return []  # the dynamic cluster-wide defaults: this broker takes none
        if not name.lstrip("-").isdigit():
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}")
        if int(name) != broker.config.broker_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {broker.config.broker_id} "
                                                        f"or empty string, but received {name}")
        return broker_entries(broker.config, keys)
    raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {resource.resource_type}")


@handles(32)
async def describe_configs(broker: Any, header: Any, request: Any) -> Any:
    synonyms = bool(request.include_synonyms)
    documentation = bool(getattr(request, "include_documentation", False))
    results = []
    for resource in request.resources:
        try:
            configs = [_config(e, synonyms, documentation) for e in await _entries(broker, resource)]
            code, message = ErrorCode.NONE, None
        except KafkaError as e:
            configs, code, message = [], e.code, e.message or None
        results.append(Result(error_code=code, error_message=message, resource_type=resource.resource_type,
                              resource_name=resource.resource_name, configs=configs))
    return DescribeConfigsResponse(throttle_time_ms=0, results=results)
