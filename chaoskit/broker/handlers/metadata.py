"""ApiVersions and Metadata, answered from the registry and the metadata cache.

Metadata carries the proposals' tagged fields at its flexible versions (v9+): each topic's KIP-253
`initial_partition_count` and `undeleted_partition_count`, each partition's KIP-694 `mode`
(docs/protocol.md); stock clients skip them. Leader epochs reach clients only with KIP-320 on
(`leader.epoch.fencing.enable`): Kafka before it had no field for them, so the unpatched profile
answers -1, and a stock client that would validate its position has nothing to validate against.

KIP-694's compatibility rule: `mode` needs a Metadata version that carries it (9, where the tag
starts); with `delete.topic.partition.enable` on, an older request gets each ReadOnly or None
partition as LEADER_NOT_AVAILABLE with no leader, so that client neither writes to it nor reads
from it. ReadWrite partitions are answered as always.
"""
from __future__ import annotations

from typing import Any

from chaoskit.broker.handlers.registry import handles
from chaoskit.broker.metadata_cache import MetadataCache
from chaoskit.broker.topic_admin import INTERNAL_TOPICS, auto_create
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.extensions import MODE_METADATA_VERSION, MetadataResponse, PartitionMode
from chaoskit.protocol.registry import api_versions_response

CLUSTER_ID = "chaoskit"
Topic = MetadataResponse.MetadataResponseTopic
Part = MetadataResponse.MetadataResponseTopic.MetadataResponsePartition


@handles(18)
async def api_versions(broker: Any, header: Any, request: Any) -> Any:
    return api_versions_response()


def topic_metadata(cache: MetadataCache, name: str, epochs: bool = True, hide_marked: bool = False) -> Any:
    """One topic's answer; hide_marked: ReadOnly and None partitions as LEADER_NOT_AVAILABLE (KIP-694)."""
    parts = cache.topics.get(name)
    if parts is None:
        return Topic(name=name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, partitions=[])
    out = []
    for index, info in sorted(parts.items()):
        leader_live = info.leader in cache.brokers and not (hide_marked and info.mode != PartitionMode.READ_WRITE)
        out.append(Part(error_code=ErrorCode.NONE if leader_live else ErrorCode.LEADER_NOT_AVAILABLE,
                        partition_index=index, leader_id=info.leader if leader_live else -1,
                        leader_epoch=info.leader_epoch if epochs else -1, replica_nodes=list(info.replicas),
                        isr_nodes=list(info.isr), offline_replicas=list(info.offline_replicas), mode=int(info.mode)))
    counts = cache.topic_counts(name)
    return Topic(name=name, error_code=ErrorCode.NONE, is_internal=name in INTERNAL_TOPICS, partitions=out,
                 initial_partition_count=counts.initial, undeleted_partition_count=counts.undeleted)


@handles(3)
async def metadata(broker: Any, header: Any, request: Any) -> Any:
    cache: MetadataCache = broker.cache
    version = header.request_api_version
    wanted = request.topics
    if wanted is None or (version == 0 and not wanted):
        names = sorted(cache.topics)
    else:
        names = [t.name for t in wanted if t.name is not None]
    topics = []
    hide_marked = broker.config.delete_topic_partition_enable and version < MODE_METADATA_VERSION
    for name in names:
        if name not in cache.topics and request.allow_auto_topic_creation and broker.config.auto_create_topics_enable:
            code = await auto_create(broker, name)
            topics.append(Topic(name=name, error_code=code, partitions=[]))
        else:
            topics.append(topic_metadata(cache, name, broker.config.leader_epoch_fencing_enable, hide_marked))
    brokers = [MetadataResponse.MetadataResponseBroker(node_id=b.broker_id, host=b.host, port=b.port, rack=b.rack)
               for b in sorted(cache.brokers.values(), key=lambda b: b.broker_id)]
    return MetadataResponse(throttle_time_ms=0, brokers=brokers, cluster_id=CLUSTER_ID,
                            controller_id=cache.controller_id(), topics=topics)
