"""Topic creation, validation and waits shared by CreateTopics, auto-creation in Metadata and
FindCoordinator's `__consumer_offsets`.

The broker only writes the request into ZooKeeper (docs/internals.md §2); the controller elects
leaders and tells every broker, so a creation is visible once the metadata cache shows it.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from chaoskit.broker.assignment import PlacementError, place_replicas
from chaoskit.broker.waiting import wait_for
from chaoskit.broker.zk import ZkUnavailable
from chaoskit.protocol.errors import ErrorCode, KafkaError
from chaoskit.protocol.topics import COORDINATOR_TOPICS, OFFSETS_TOPIC, legal_topic_name
from chaoskit.protocol.zk_layout import ZkDataError

INTERNAL_TOPICS = COORDINATOR_TOPICS  # Kafka's Topic.isInternal; also KAFKA-20029's guarded topics


def _is_int(v: str) -> bool:
    return v.lstrip("-").isdigit()


def _is_bool(v: str) -> bool:
    return v.lower() in ("true", "false")


# topic config -> (check, what is allowed); other Kafka topic configs are stored unchecked
TOPIC_CONFIGS: dict[str, tuple[Callable[[str], bool], str]] = {
    "min.insync.replicas": (lambda v: v.isdigit() and int(v) >= 1, "an integer >= 1"),
    "unclean.leader.election.enable": (_is_bool, "true or false"),
    "enable.ordered.delivery": (_is_bool, "true or false"),
    "cleanup.policy": (lambda v: set(v.split(",")) <= {"delete", "compact"}, "delete, compact or both"),
    "retention.ms": (_is_int, "an integer (ms, -1 for no limit)"),
    "retention.bytes": (_is_int, "an integer (bytes, -1 for no limit)"),
    "segment.bytes": (lambda v: v.isdigit() and int(v) >= 1024, "an integer >= 1024"),
    "segment.ms": (lambda v: v.isdigit(), "an integer (ms)"),
    "max.message.bytes": (lambda v: v.isdigit(), "an integer (bytes)"),
    "message.timestamp.type": (lambda v: v in ("CreateTime", "LogAppendTime"), "CreateTime or LogAppendTime"),
    "compression.type": (lambda v: v in ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
                         "producer, uncompressed, gzip, snappy, lz4 or zstd"),
    "delete.retention.ms": (_is_int, "an integer (ms)"),
    "min.compaction.lag.ms": (_is_int, "an integer (ms)"),
    "flush.messages": (_is_int, "an integer"),
    "flush.ms": (_is_int, "an integer (ms)"),
}


def validate_topic_name(name: str) -> None:
    if not legal_topic_name(name):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                         f"topic name {name!r} is illegal: use 1-249 of [a-zA-Z0-9._-], not '.' or '..'")


def validate_configs(configs: dict[str, str | None]) -> dict[str, str]:
    out = {}
    for key, value in configs.items():
        if key not in TOPIC_CONFIGS:
            raise KafkaError(ErrorCode.INVALID_CONFIG,
                             f"unknown topic config {key!r}; known: {', '.join(sorted(TOPIC_CONFIGS))}")
        check, allowed = TOPIC_CONFIGS[key]
        if value is None or not check(value):
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"topic config {key}={value!r}: expected {allowed}")
        out[key] = value
    return out


async def zk_call(fn: Callable[..., Any], *args: Any) -> Any:
    """A blocking BrokerZk call off the event loop; ZooKeeper trouble becomes a retriable error."""
    try:
        return await asyncio.to_thread(fn, *args)
    except ZkUnavailable as e:
        raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, str(e)) from e
    except ZkDataError as e:  # a znode in a shape we cannot read: say which
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, str(e)) from e


def check_assignment(assignment: dict[int, list[int]], live: list[int], first_partition: int = 0) -> None:
    sizes = {len(r) for r in assignment.values()}
    if sorted(assignment) != list(range(first_partition, first_partition + len(assignment))):
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"partitions {sorted(assignment)} are not consecutive from {first_partition}")
    for p, replicas in assignment.items():
        if not replicas or len(set(replicas)) != len(replicas) or len(sizes) != 1:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"partition {p}: replicas {replicas} must be non-empty, distinct and as many "
                             "as every other partition's")
        unknown = sorted(set(replicas) - set(live))
        if unknown:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"partition {p}: brokers {unknown} are not live (live: {sorted(live)})")


async def create_topic(broker: Any, name: str, partitions: int, replication_factor: int,
                       assignment: dict[int, list[int]] | None, configs: dict[str, str | None],
                       validate_only: bool = False) -> tuple[int, int]:
    """Validate and (unless validate_only) write a new topic; (partitions, replication factor).
    Raises KafkaError with the code the client should see."""
    validate_topic_name(name)
    checked = validate_configs(configs)
    live = sorted(await zk_call(broker.zk.live_brokers))
    if name in await zk_call(broker.zk.topics):
        raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
    if name in COORDINATOR_TOPICS and partitions == -1 and not assignment:
        partitions = coordinator_topic_partitions(broker.config, name)
    check_coordinator_count(broker.config, name, len(assignment) if assignment else partitions)
    if assignment:
        if partitions != -1 or replication_factor != -1:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             "give either a replica assignment or partitions and replication factor (-1), not both")
        check_assignment(assignment, live)
    else:
        partitions = broker.config.num_partitions if partitions == -1 else partitions
        replication_factor = broker.config.default_replication_factor if replication_factor == -1 else replication_factor
        if partitions < 1:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"number of partitions must be at least 1, got {partitions}")
        try:
            assignment = place_replicas(name, live, partitions, replication_factor)
        except PlacementError as e:
            raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, str(e)) from e
    if not validate_only and not await zk_call(broker.zk.create_topic, name, assignment, checked,
                                               broker.config.ordered_delivery_enable):
        raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
    return len(assignment), len(next(iter(assignment.values())))


def coordinator_topic_partitions(config: Any, topic: str) -> int:
    """The partition count an internal coordinator topic is created with (the broker's config)."""
    return {OFFSETS_TOPIC: config.offsets_topic_num_partitions,
            "__transaction_state": config.transaction_state_log_num_partitions,
            "__share_group_state": config.share_coordinator_state_topic_num_partitions}[topic]


def check_coordinator_count(config: Any, topic: str, partitions: int) -> None:
    """An internal coordinator topic is created with its configured count or not at all: its keys are
    placed by hash mod the count each broker reads, so another count splits them as KAFKA-20029's
    expansion would (Apache Kafka's broker creates it with any count a client asks for: deliberate)."""
    if topic not in COORDINATOR_TOPICS:
        return
    configured = coordinator_topic_partitions(config, topic)
    if partitions != configured:
        raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                         f"{topic} is an internal coordinator topic: it is created with its configured "
                         f"{configured} partitions only (asked {partitions}), as brokers place its keys by "
                         "hash mod that count")


async def wait_for_metadata(broker: Any, condition: Callable[[], bool], timeout_ms: int) -> bool:
    return await wait_for(condition, [broker.cache.changed], max(timeout_ms, 0) / 1000)


async def auto_create(broker: Any, name: str) -> int:
    """Metadata's auto-creation: write the topic with broker defaults; the code to report for it now."""
    try:
        await create_topic(broker, name, -1, -1, None, {})
    except KafkaError as e:
        if e.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            return e.code
    return ErrorCode.LEADER_NOT_AVAILABLE


async def offsets_topic_partitions(broker: Any) -> int:
    """`__consumer_offsets`' partition count as ZooKeeper has it, creating the topic on first use
    (partitions and replication from the broker config). The count never changes once created, so
    it is read once; the metadata cache may not show every partition yet."""
    if broker.offsets_partitions:
        return broker.offsets_partitions
    current = await zk_call(broker.zk.assignment, OFFSETS_TOPIC)
    if current is None:
        live = await zk_call(broker.zk.live_brokers)
        rf = broker.config.offsets_topic_replication_factor or min(3, max(len(live), 1))
        try:
            await create_topic(broker, OFFSETS_TOPIC, broker.config.offsets_topic_num_partitions, rf, None,
                               {"cleanup.policy": "compact"})
        except KafkaError as e:
            if e.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                raise
        current = await zk_call(broker.zk.assignment, OFFSETS_TOPIC)
        if current is None:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{OFFSETS_TOPIC} vanished while created")
    broker.offsets_partitions = len(current[0].partitions)
    return broker.offsets_partitions
