"""Produce (acks 0, 1 and all) and InitProducerId.

acks=all refuses up front when the ISR is smaller than min.insync.replicas (NOT_ENOUGH_REPLICAS),
then waits for the high watermark to pass the appended batches within the request's timeout.
Batches are validated (CRC32C, magic 2) before anything is written: CORRUPT_MESSAGE otherwise.
The proposals' refusals, both INVALID_PARTITION_METADATA (retriable, with a message): a partition
marked for deletion (KIP-694 ReadOnly or None), and a topic's undeleted_partition_count tag that is
not the one the leader learned with its epoch (KIP-253; a request without the tag is not checked).
A Produce without the `mode_aware` tag (a stock client) is refused a marked partition with
LEADER_NOT_AVAILABLE instead: KIP-694's answer to clients that cannot read modes.
A record without a key in a topic whose cleanup.policy has `compact` is refused as Kafka's
LogValidator refuses it: INVALID_RECORD, with each such record's index in `record_errors` (v8+).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from kafka.protocol.producer import InitProducerIdResponse, ProduceResponse

from chaoskit.broker.handlers.registry import handles
from chaoskit.broker.log.partition_log import InvalidAppend
from chaoskit.broker.zk import ZkUnavailable
from chaoskit.protocol.errors import ErrorCode, KafkaError
from chaoskit.protocol.records import InvalidBatch, decode_records, split_batches

log = logging.getLogger("chaoskit.broker.produce")

TopicResponse = ProduceResponse.TopicProduceResponse
PartResponse = ProduceResponse.TopicProduceResponse.PartitionProduceResponse
RecordError = PartResponse.BatchIndexAndErrorMessage


class KeylessRecords(KafkaError):
    def __init__(self, partition: Any, indexes: list[int]) -> None:
        self.indexes = indexes
        super().__init__(ErrorCode.INVALID_RECORD, f"Compacted topic cannot accept message without key in topic "
                                                   f"partition {partition}.")


def _keyless(records: bytes) -> list[int]:
    """Indexes (within the request's batches) of the records without a key."""
    try:
        decoded = [r for b in split_batches(records) for r in decode_records(b)]
    except ValueError:
        return []  # the append refuses the bytes as CORRUPT_MESSAGE
    return [i for i, r in enumerate(decoded) if r.key is None]


def _append(broker: Any, topic: str, index: int, records: bytes | None, acks: int,
            undeleted: int, mode_aware: bool) -> tuple[int, int, Any]:
    """(first offset, last offset, partition) of an append as leader; KafkaError on refusal."""
    p = broker.replicas.leader(topic, index)
    if "readonly-refusal" not in broker.config.mutations:
        p.check_writable(mode_aware)
    if broker.replicas.checks_partition_count(topic):
        p.check_partition_count(undeleted)
    if acks == -1:
        needed = broker.replicas.min_insync_replicas(topic)
        if len(p.isr) < needed:
            raise KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS,
                             f"{p}: ISR {sorted(p.isr)} is smaller than min.insync.replicas={needed}")
    if "compact" in broker.replicas.cleanup_policy(topic):
        keyless = _keyless(records or b"")
        if keyless:
            raise KeylessRecords(p, keyless)
    try:
        first, last = p.append_as_leader(records or b"")
    except (InvalidBatch, InvalidAppend) as e:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"{p}: {e}") from e
    return first, last, p


@handles(0)
async def produce(broker: Any, header: Any, request: Any) -> Any:
    acks = request.acks
    results: dict[tuple[str, int], Any] = {}
    waits: dict[tuple[str, int], Any] = {}
    for topic in request.topic_data:
        for part in topic.partition_data:
            key = (topic.name, part.index)
            result = results[key] = PartResponse(index=part.index, error_code=ErrorCode.NONE, base_offset=-1,
                                                 log_append_time_ms=-1, log_start_offset=-1, record_errors=[])
            try:
                if acks not in (0, 1, -1):
                    raise KafkaError(ErrorCode.INVALID_REQUIRED_ACKS, f"acks={acks}: use 0, 1 or -1 (all)")
                first, last, p = _append(broker, topic.name, part.index, part.records, acks,
                                         topic.undeleted_partition_count, getattr(request, "mode_aware", False))
                result.base_offset, result.log_start_offset = first, p.log_start_offset
                if acks == -1:
                    waits[key] = broker.replicas.wait_replicated(p, last + 1, request.timeout_ms / 1000)
            except KafkaError as e:
                result.error_code, result.error_message = e.code, e.message
                if isinstance(e, KeylessRecords):
                    result.record_errors = [RecordError(batch_index=i, batch_index_error_message=e.message)
                                            for i in e.indexes]
                log.debug("produce to %s-%d: %s", topic.name, part.index, e)
    if waits:
        codes = await asyncio.gather(*waits.values())
        for key, code in zip(waits, codes):
            results[key].error_code = code
    if acks == 0:
        return None
    by_topic: dict[str, list[Any]] = {}
    for (topic_name, _index), r in results.items():
        by_topic.setdefault(topic_name, []).append(r)
    return ProduceResponse(throttle_time_ms=0, responses=[
        TopicResponse(name=t, partition_responses=parts) for t, parts in by_topic.items()])


@handles(22)
async def init_producer_id(broker: Any, header: Any, request: Any) -> Any:
    if request.transactional_id is not None:
        log.info("InitProducerId for transactional id %r refused: transactions are not supported",
                 request.transactional_id)
        return InitProducerIdResponse(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST, producer_id=-1,
                                      producer_epoch=-1)
    try:
        pid = await broker.producer_ids.next_id()
    except ZkUnavailable as e:
        # retriable, and unlike COORDINATOR_NOT_AVAILABLE it does not send an idempotent producer
        # looking for a transaction coordinator
        log.warning("InitProducerId: %s", e)
        return InitProducerIdResponse(throttle_time_ms=0, error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                      producer_id=-1, producer_epoch=-1)
    return InitProducerIdResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, producer_id=pid, producer_epoch=0)
