"""Fetch: consumers (replica_id -1) read up to the high watermark, followers (replica_id >= 0) up
to the log end; a follower's fetch offset is its log end, which moves the leader's view of it
(high watermark, ISR expansion). The request long-polls until min_bytes are there or max_wait_ms
passes; after each wait its checks run again (Kafka's DelayedFetch), so a leader epoch or a
partition count that changed meanwhile is answered as an error, never with the newer records.
With leader.epoch.fencing.enable a current_leader_epoch >= 0 is checked (KIP-320), and a
last_fetched_epoch >= 0 (v12+) is checked against our leader-epoch cache as Kafka does (KIP-320,
KIP-595): when the fetcher's (last_fetched_epoch, fetch_offset) is not a point of our log, the
answer is no records, error NONE and `diverging_epoch` = where that epoch (or the largest one below
it) ends here, at once (no long poll); a follower's fetch that diverges does not count as its log
end. Without KIP-320 leader epochs are hidden from clients, so last_fetched_epoch is ignored.
We answer with session id 0, so clients never open incremental fetch sessions. A consumer's
undeleted_partition_count tag that is not the leader's (KIP-253) gets INVALID_PARTITION_METADATA;
a partition being removed (KIP-694 mode None) is no longer served to consumers
(UNKNOWN_TOPIC_OR_PARTITION, which stock clients retry after a metadata refresh).
"""
from __future__ import annotations

import logging
import time
from typing import Any

from kafka.protocol.consumer import FetchResponse

from chaoskit.broker.handlers.registry import handles
from chaoskit.broker.handlers.offsets import epoch_end
from chaoskit.broker.partition import NO_EPOCH, Partition
from chaoskit.broker.waiting import wait_any
from chaoskit.protocol.errors import ErrorCode, KafkaError
from chaoskit.protocol.extensions import PartitionMode

log = logging.getLogger("chaoskit.broker.fetch")

TopicData = FetchResponse.FetchableTopicResponse
PartData = FetchResponse.FetchableTopicResponse.PartitionData


def _serving(broker: Any, topic: str, fp: Any, replica_id: int, undeleted: int) -> Partition:
    """The partition, if this broker may answer this fetch for it; KafkaError otherwise."""
    p = broker.replicas.partition(topic, fp.partition)
    if p is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{fp.partition} is not here")
    # Kafka reads any negative epoch in a Fetch as "none"
    p.check_leader_epoch(max(fp.current_leader_epoch, NO_EPOCH), broker.config.leader_epoch_fencing_enable
                         and "fetch-epoch-fencing" not in broker.config.mutations)
    p.require_leader()
    if replica_id >= 0 and replica_id not in p.replicas:
        raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{p}: broker {replica_id} is not a replica")
    if replica_id < 0:
        if p.mode == PartitionMode.NONE:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{p} is being removed (mode None)")
        if broker.replicas.checks_partition_count(topic):
            p.check_partition_count(undeleted)
    return p


def _still_serving(broker: Any, topic: str, fp: Any, replica_id: int, undeleted: int) -> int:
    """_serving's checks again, for a request that waited: NONE or the error code to answer."""
    try:
        _serving(broker, topic, fp, replica_id, undeleted)
    except KafkaError as e:
        return e.code
    return ErrorCode.NONE


def _diverging(broker: Any, p: Partition, fp: Any, replica_id: int) -> Any | None:
    """The EpochEndOffset to answer when (last_fetched_epoch, fetch_offset) diverges from our log
    (Kafka's Partition.readRecords): the end of that epoch here is below the fetch offset, or the
    epoch is unknown here and the largest one below it is answered. None when consistent or not
    asked. OFFSET_OUT_OF_RANGE when the epoch's end is unknown or the offset precedes our log."""
    fetched = fp.last_fetched_epoch  # -1 below v12 (the schema's default)
    if fetched < 0 or not broker.config.leader_epoch_fencing_enable:
        return None
    epoch, end = epoch_end(broker, p, fetched, replica_id)
    if epoch < 0 or end < 0:
        raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, f"{p}: the end of last fetched epoch {fetched} is not known")
    if fp.fetch_offset < p.log_start_offset:  # out of range whether or not it diverges
        raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                         f"{p}: offset {fp.fetch_offset} is before the log start {p.log_start_offset}")
    if epoch < fetched or end < fp.fetch_offset:
        log.info("%s: a fetch at %d after epoch %d (replica %d) diverges: epoch %d ends at %d here",
                 p, fp.fetch_offset, fetched, replica_id, epoch, end)
        return PartData.EpochEndOffset(epoch=epoch, end_offset=end)
    return None


def _read(p: Partition | None, fp: Any, follower: bool, budget: int, first: bool) -> tuple[int, bytes]:
    """(error code, records) for one partition of the request."""
    if p is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, b""
    if not p.is_leader:  # leadership moved while the request waited
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, b""
    if budget <= 0 and not first:
        return ErrorCode.NONE, b""
    up_to = p.log_end_offset if follower else p.high_watermark
    limit = min(fp.partition_max_bytes, budget) if not first else fp.partition_max_bytes
    try:
        return ErrorCode.NONE, p.read(fp.fetch_offset, max(limit, 1), up_to)
    except KafkaError as e:
        return e.code, b""


@handles(1)
async def fetch(broker: Any, header: Any, request: Any) -> Any:
    replica_id = request.replica_id
    follower = replica_id >= 0
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000
    # (topic, request partition, partition, error, diverging epoch): a leader's epoch cache does not
    # change while it leads, so divergence is judged once, before any waiting
    entries: list[tuple[str, Any, Partition | None, int, Any | None]] = []
    counts: dict[str, int] = {}  # each topic's undeleted_partition_count tag (KIP-253)
    for topic in request.topics:
        counts[topic.topic] = topic.undeleted_partition_count
        for fp in topic.partitions:
            p = None
            try:
                p = _serving(broker, topic.topic, fp, replica_id, topic.undeleted_partition_count)
                diverging = _diverging(broker, p, fp, replica_id)
                if follower and diverging is None and p.log_start_offset <= fp.fetch_offset <= p.log_end_offset:
                    # a fetch offset outside our log, or past a divergence, is not the follower's log end
                    broker.replicas.record_follower_fetch(p, replica_id, fp.fetch_offset)
                entries.append((topic.topic, fp, p, ErrorCode.NONE, diverging))
            except KafkaError as e:  # with p once served: an out-of-range fetch still learns our log start
                entries.append((topic.topic, fp, p, e.code, None))
    waited = False
    while True:
        budget = request.max_bytes
        results = []
        for topic_name, fp, p, code, diverging in entries:
            if code == ErrorCode.NONE and diverging is None and waited:
                # as Kafka's DelayedFetch: a LeaderAndIsr that came while we waited (a new leader
                # epoch, a new partition count) fences the request before it returns newer records
                code = _still_serving(broker, topic_name, fp, replica_id, counts[topic_name])
            if code == ErrorCode.NONE and diverging is None:
                code, records = _read(p, fp, follower, budget, first=budget == request.max_bytes)
                budget -= len(records)
            else:
                records = b""
            results.append((topic_name, fp, p, code, records, diverging))
        size = sum(len(r[4]) for r in results)
        # an error or a divergence is answered at once, as Kafka does
        at_once = any(r[3] != ErrorCode.NONE or r[5] is not None for r in results)
        left = deadline - time.monotonic()
        if size >= max(request.min_bytes, 1) or at_once or left <= 0 or not entries:
            break
        await wait_any([e[2].changed for e in entries if e[2] is not None], left)
        waited = True
    by_topic: dict[str, list[Any]] = {}
    for topic_name, fp, p, code, records, diverging in results:
        hw = p.high_watermark if p is not None else -1
        by_topic.setdefault(topic_name, []).append(PartData(
            partition_index=fp.partition, error_code=code, high_watermark=hw, last_stable_offset=hw,
            log_start_offset=p.log_start_offset if p is not None else -1, diverging_epoch=diverging,
            aborted_transactions=None, preferred_read_replica=-1, records=records))
    return FetchResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=0, responses=[
        TopicData(topic=t, partitions=parts) for t, parts in by_topic.items()])
