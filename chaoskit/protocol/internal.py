"""chaoskit's private APIs, flexible from v0 (docs/protocol.md): the broker-internal ones the
controller sends (docs/internals.md §3: LeaderAndIsr, UpdateMetadata, StopReplica on keys
32000-32002) and the proposals' client-facing ones (KIP-253 ConsumerGroupPosition 32003 and
PartitionLeaderEpochsForPartitions 32004, KIP-694 DeletePartitions 32005).

Their shapes are Kafka-style JSON message definitions in chaoskit/protocol/schemas/, loaded by
kafka-python's ApiMessage machinery, so they encode, decode and carry tagged fields exactly like
the standard APIs.
"""
from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from chaoskit.protocol import schemas

LEADER_AND_ISR = 32000
UPDATE_METADATA = 32001
STOP_REPLICA = 32002
CONSUMER_GROUP_POSITION = 32003
PARTITION_LEADER_EPOCHS = 32004
DELETE_PARTITIONS = 32005


class LeaderAndIsrRequest(ApiMessage, load_json=schemas): pass
class LeaderAndIsrResponse(ApiMessage, load_json=schemas): pass
class UpdateMetadataRequest(ApiMessage, load_json=schemas): pass
class UpdateMetadataResponse(ApiMessage, load_json=schemas): pass
class StopReplicaRequest(ApiMessage, load_json=schemas): pass
class StopReplicaResponse(ApiMessage, load_json=schemas): pass
class ConsumerGroupPositionRequest(ApiMessage, load_json=schemas): pass
class ConsumerGroupPositionResponse(ApiMessage, load_json=schemas): pass
class PartitionLeaderEpochsForPartitionsRequest(ApiMessage, load_json=schemas): pass
class PartitionLeaderEpochsForPartitionsResponse(ApiMessage, load_json=schemas): pass
class DeletePartitionsRequest(ApiMessage, load_json=schemas): pass
class DeletePartitionsResponse(ApiMessage, load_json=schemas): pass


# request class -> response class, by API key
INTERNAL_APIS: dict[int, tuple[type[ApiMessage], type[ApiMessage]]] = {
    LEADER_AND_ISR: (LeaderAndIsrRequest, LeaderAndIsrResponse),
    UPDATE_METADATA: (UpdateMetadataRequest, UpdateMetadataResponse),
    STOP_REPLICA: (StopReplicaRequest, StopReplicaResponse),
    CONSUMER_GROUP_POSITION: (ConsumerGroupPositionRequest, ConsumerGroupPositionResponse),
    PARTITION_LEADER_EPOCHS: (PartitionLeaderEpochsForPartitionsRequest, PartitionLeaderEpochsForPartitionsResponse),
    DELETE_PARTITIONS: (DeletePartitionsRequest, DeletePartitionsResponse),
}
