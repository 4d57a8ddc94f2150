"""FindCoordinator and the group APIs (with KIP-253's ConsumerGroupPosition, private key 32003),
answered by the GroupCoordinator (chaoskit.broker.coordinator).

The broker's part of FindCoordinator: create `__consumer_offsets` on the first lookup, make the
coordinator place groups with the topic's real partition count, and tell it where each partition's
leader is (from the metadata cache). While the topic or a leader is missing the answer is
COORDINATOR_NOT_AVAILABLE, which clients retry.
"""
from __future__ import annotations

import logging
from typing import Any

from kafka.protocol.metadata import FindCoordinatorResponse

from chaoskit.broker.coordinator_store import sync_partition_count
from chaoskit.broker.handlers.registry import handles
from chaoskit.broker.server import CLIENT_HOST
from chaoskit.broker.topic_admin import OFFSETS_TOPIC
from chaoskit.protocol.errors import ErrorCode, KafkaError
from chaoskit.protocol.internal import CONSUMER_GROUP_POSITION

log = logging.getLogger("chaoskit.broker.groups")

@handles(10)
async def find_coordinator(broker: Any, header: Any, request: Any) -> Any:
    version = header.request_api_version
    try:
        await sync_partition_count(broker)
    except KafkaError as e:
        log.warning("FindCoordinator(%s): no %s: %s", request.key, OFFSETS_TOPIC, e)
        return FindCoordinatorResponse(version=version, throttle_time_ms=0, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                       error_message=e.message, node_id=-1, host="", port=-1)

    def locate(partition: int) -> tuple[int, str, int] | None:
        node = broker.cache.leader_endpoint(OFFSETS_TOPIC, partition)
        return None if node is None else (node.broker_id, node.host, node.port)

    return await broker.coordinator.find_coordinator(request, version, locate)


@handles(11)
async def join_group(broker: Any, header: Any, request: Any) -> Any:
    return await broker.coordinator.join_group(request, header.request_api_version, client_host=CLIENT_HOST.get())


_ROUTES = {8: "offset_commit", 9: "offset_fetch", 12: "heartbeat", 13: "leave_group", 14: "sync_group",
           15: "describe_groups", 16: "list_groups", CONSUMER_GROUP_POSITION: "consumer_group_position"}


@handles(*_ROUTES)
async def group_request(broker: Any, header: Any, request: Any) -> Any:
    handler = getattr(broker.coordinator, _ROUTES[header.request_api_key])
    return await handler(request, header.request_api_version)
