"""The broker-internal APIs the controller sends (docs/internals.md §3): LeaderAndIsr, UpdateMetadata,
StopReplica on private keys 32000-32002, flexible from v0.

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


class LeaderAndIsrRequest(ApiMessage, load_json=schemas): pass
class LeaderAndIsrResponse(ApiMessage, load_json=schemas): pass
class UpdateMetadataRequest(ApiMessage, load_json=schemas): pass
class UpdateMetadataResponse(ApiMessage, load_json=schemas): pass
class StopReplicaRequest(ApiMessage, load_json=schemas): pass
class StopReplicaResponse(ApiMessage, load_json=schemas): pass


# request class -> response class, by API key
INTERNAL_APIS: dict[int, tuple[type[ApiMessage], type[ApiMessage]]] = {
    LEADER_AND_ISR: (LeaderAndIsrRequest, LeaderAndIsrResponse),
    UPDATE_METADATA: (UpdateMetadataRequest, UpdateMetadataResponse),
    STOP_REPLICA: (StopReplicaRequest, StopReplicaResponse),
}
