"""OrderedProducer: KIP-253's producer -- linear hashing, the undeleted count in every Produce,
refresh and re-route on INVALID_PARTITION_METADATA; idempotent, acks=all by default; never writes
to a ReadOnly/None partition (KIP-694).

    with OrderedProducer("127.0.0.1:9092") as producer:
        producer.events.subscribe(history.append)
        md = producer.send("orders", key=b"k1", value=b"v1")   # blocks until acknowledged
        md.partition, md.offset, md.leader_epoch

`send` is synchronous: a record is acknowledged before the next is routed, so a key's records
can never overtake each other, also not when one is refused and re-routed. `send_many` batches
records per partition for throughput and keeps each partition's records in order.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, NamedTuple

from kafka.protocol.producer import InitProducerIdRequest

from chaoskit.client.events import EventHooks, history_key, history_value
from chaoskit.client.metadata import ClusterView, MetadataError
from chaoskit.client.routing import NoWritablePartition, Router, ordered
from chaoskit.client.tombstones import MOVED_HEADER, CompactionTombstones
from chaoskit.protocol.errors import ErrorCode, error_name, retriable
from chaoskit.protocol.extensions import UNKNOWN_COUNT, ProduceRequest
from chaoskit.protocol.mutations import CLIENT, checked
from chaoskit.protocol.records import build_batch
from chaoskit.protocol.wire_client import WireError

log = logging.getLogger(__name__)

PRODUCE_VERSION = 9  # the flexible version: carries undeleted_partition_count
INIT_PRODUCER_ID_VERSION = 4
# refusals after which the metadata is asked again before the retry
_STALE = {ErrorCode.INVALID_PARTITION_METADATA, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
          ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH}
# answers an acks=all leader gives after it appended the batch (its epoch changed while waiting for
# the replicas, or they were slow): the records may be in the log, and committed later
_MAYBE_APPENDED = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REQUEST_TIMED_OUT,
                   ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND}
# the producer id's sequence state is lost or out of step: start a new producer id
_NEW_PRODUCER_ID = {ErrorCode.UNKNOWN_PRODUCER_ID, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    ErrorCode.INVALID_PRODUCER_EPOCH}


class RecordMetadata(NamedTuple):
    topic: str
    partition: int
    offset: int
    leader_epoch: int | None  # the leader epoch the producer's metadata had for the partition


class ProduceError(Exception):
    """A send that did not succeed. `definite` is True when the broker refused it for good (it was
    not written), False when the outcome is unknown (timeouts, lost connections, retries used up)."""

    def __init__(self, message: str, code: int | None, definite: bool) -> None:
        super().__init__(message)
        self.code, self.definite = code, definite


@dataclass
class _Attempt:
    """What the attempts at one delivery learned so far."""
    last: str = "no attempt"
    ambiguous_on: int | None = None  # a partition an attempt may have reached without our knowing
    backoff: bool = True


class OrderedProducer:
    def __init__(self, bootstrap_servers: str | Iterable[str], client_id: str = "chaoskit-ordered", acks: int = -1,
                 enable_idempotence: bool = True, request_timeout_ms: int = 10_000, delivery_timeout_s: float = 30.0,
                 metadata_max_age_s: float = 5.0, retry_backoff_s: float = 0.1, round_robin_start: int = 0,
                 mutations: Iterable[str] = ()) -> None:
        if acks not in (-1, 0, 1):
            raise ValueError(f"acks must be -1 (all), 0 or 1, got {acks!r}")
        if enable_idempotence and acks != -1:
            raise ValueError("an idempotent producer needs acks=-1 (all); pass enable_idempotence=False for acks 0/1")
        self.acks, self.idempotent = acks, enable_idempotence
        self.request_timeout_ms, self.delivery_timeout_s = request_timeout_ms, delivery_timeout_s
        self.metadata_max_age_s, self.retry_backoff_s = metadata_max_age_s, retry_backoff_s
        self.view = ClusterView(bootstrap_servers, client_id, timeout_s=request_timeout_ms / 1000 + 5)
        self.events = EventHooks()
        # elements of the proposals turned off, for `chaoskit mutate` only (chaoskit.protocol.mutations)
        self.mutations = checked(mutations, CLIENT)
        self.router = Router(round_robin_start, linear_hashing="linear-hashing" not in self.mutations)
        self.producer_id, self.producer_epoch = -1, -1
        self._sequences: dict[tuple[str, int], int] = {}
        self.refusals: dict[int, int] = {}  # error code -> how often the broker refused a batch (observability)
        self.tombstones = CompactionTombstones(self.view, self._send_unacked)
        self.tombstones_sent: list[tuple[str, int, bytes]] = []  # (topic, partition, key), KIP-253 §9

    # --- metadata --------------------------------------------------------------------------
    def freeze_metadata(self) -> None:
        """Stop refreshing metadata by age (the chaos "stale metadata" fault); refusals still refresh."""
        self.view.freeze()

    def thaw_metadata(self) -> None:
        self.view.thaw()

    def _topic(self, topic: str) -> Any:
        if not self.view.frozen and time.monotonic() - self.view.refreshed_at > self.metadata_max_age_s:
            self.view.refresh([topic, *self.view.topics])
        return self.view.topic(topic)

    def _refresh(self, topic: str) -> None:
        # a refusal proves the metadata wrong: refresh even while frozen
        frozen, self.view.frozen = self.view.frozen, False
        try:
            self.view.refresh([topic])
        finally:
            self.view.frozen = frozen

    def partition_for(self, topic: str, key: bytes | None) -> int:
        return self.router.partition(self._topic(topic), key)

    # --- idempotence -----------------------------------------------------------------------
    def _init_producer_id(self) -> None:
        request = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000,
                                        producer_id=-1, producer_epoch=-1)
        response = self.view.admin.request(request, INIT_PRODUCER_ID_VERSION)
        if response.error_code != ErrorCode.NONE:
            raise ProduceError(f"InitProducerId refused: {error_name(response.error_code)}", response.error_code,
                               definite=True)
        self.producer_id, self.producer_epoch = response.producer_id, response.producer_epoch
        self._sequences.clear()

    # --- sending ---------------------------------------------------------------------------
    def send(self, topic: str, key: bytes | None = None, value: bytes | None = None,
             headers: Sequence[tuple[str, bytes]] = ()) -> RecordMetadata:
        """Send one record and wait for its acknowledgement; raises ProduceError."""
        base = {"f": "send", "topic": topic, "key": history_key(key), "value": history_value(value)}
        self.events.emit({**base, "type": "invoke"})
        try:
            md = self._deliver(topic, key, [(key, value, list(headers))])[0]
        except ProduceError as e:
            self.events.emit({**base, "type": "fail" if e.definite else "info", "error": str(e)})
            raise
        self.events.emit({**base, "type": "ok", "partition": md.partition, "offset": md.offset,
                          "leader_epoch": md.leader_epoch})
        try:
            self.tombstones.after_send(self.view.topics[topic], md.partition, key)
        except WireError as e:  # best effort, as the KIP's acks=0 tombstone itself
            log.info("compaction tombstone for %r not sent: %s", key, e)
        return md

    def _send_unacked(self, topic: str, partition: int, key: bytes) -> None:
        info = self.view.topics[topic]
        D = ProduceRequest.TopicProduceData
        part = D.PartitionProduceData(index=partition, records=build_batch([(key, None, [(MOVED_HEADER, b"")])]))
        request = ProduceRequest(transactional_id=None, acks=0, timeout_ms=self.request_timeout_ms, mode_aware=True,
                                 topic_data=[D(name=topic, undeleted_partition_count=info.undeleted_partition_count,
                                               partition_data=[part])])
        self.view.connection(info.partitions[partition].leader).request(request, PRODUCE_VERSION)
        self.tombstones_sent.append((topic, partition, key))

    def send_many(self, topic: str, records: Iterable[tuple[bytes | None, bytes | None]],
                  batch_size: int = 500) -> list[RecordMetadata]:
        """Send records in batches per partition (each batch acknowledged before the next goes to
        that partition); results in input order. Emits no per-record events: for throughput, on a
        topic whose partitions do not change meanwhile (a batch is routed by its first key)."""
        records = list(records)
        out: list[RecordMetadata | None] = [None] * len(records)
        info = self._topic(topic)
        by_partition: dict[int | None, list[int]] = {}
        for i, (key, _v) in enumerate(records):
            p = self.router.partition(info, key) if key is not None else -1
            by_partition.setdefault(p, []).append(i)
        for p, idx in by_partition.items():
            for start in range(0, len(idx), batch_size):
                chunk = idx[start:start + batch_size]
                key = records[chunk[0]][0] if p != -1 else None
                mds = self._deliver(topic, key, [(records[i][0], records[i][1], []) for i in chunk],
                                    partition=None if p == -1 else p)
                for i, md in zip(chunk, mds):
                    out[i] = md
        return [md for md in out if md is not None]

    def _deliver(self, topic: str, key: bytes | None, batch: list[tuple[Any, Any, list[Any]]],
                 partition: int | None = None) -> list[RecordMetadata]:
        """Attempts until acknowledged, refused for good (ProduceError) or out of time (ProduceError)."""
        deadline = time.monotonic() + self.delivery_timeout_s
        attempt = _Attempt()
        while True:
            if time.monotonic() >= deadline:
                raise ProduceError(f"not acknowledged within {self.delivery_timeout_s}s (last: {attempt.last})",
                                   None, definite=attempt.ambiguous_on is None)
            try:
                done = self._attempt(topic, key, batch, partition, attempt)
            except (WireError, MetadataError) as e:  # the cluster view itself failed: ask again
                attempt.last = str(e)
                self._refresh_quietly(topic)
                done = None
            if done is not None:
                return done
            if attempt.backoff:
                time.sleep(self.retry_backoff_s)

    def _attempt(self, topic: str, key: bytes | None, batch: list[tuple[Any, Any, list[Any]]],
                 partition: int | None, attempt: _Attempt) -> list[RecordMetadata] | None:
        """One Produce; None when it should be tried again (`attempt` says why and whether to wait)."""
        attempt.backoff = True
        if self.idempotent and self.producer_id < 0:
            self._init_producer_id()
        info = self._topic(topic)
        try:
            p = partition if partition is not None and (key is None or not ordered(info)) \
                else self.router.partition(info, key)
        except NoWritablePartition as e:
            attempt.last = str(e)
            self._refresh(topic)
            return None
        if attempt.ambiguous_on is not None and p != attempt.ambiguous_on:
            # the earlier attempt may be written on the old partition under this sequence. Sending
            # the record again elsewhere could write it twice, so its outcome stays unknown (the
            # caller's `info`); a new producer id keeps the old partition from taking a later
            # record with the same sequence for a duplicate of this one and dropping it
            self.producer_id = -1
            raise ProduceError(f"outcome unknown: an attempt may have been written to {topic}-{attempt.ambiguous_on} "
                               f"({attempt.last}), and the key now belongs to {topic}-{p}; not sent again there",
                               None, definite=False)
        part = info.partitions[p]
        if part.leader < 0:
            attempt.last = f"{topic}-{p} has no leader"
            self._refresh(topic)
            return None
        seq = self._sequences.get((topic, p), 0) if self.idempotent else -1
        data = build_batch(batch, producer_id=self.producer_id, producer_epoch=self.producer_epoch, base_sequence=seq)
        D = ProduceRequest.TopicProduceData
        count = info.undeleted_partition_count if ordered(info) else UNKNOWN_COUNT
        request = ProduceRequest(transactional_id=None, acks=self.acks, timeout_ms=self.request_timeout_ms,
                                 mode_aware=True, topic_data=[D(name=topic, undeleted_partition_count=count, partition_data=[
                                     D.PartitionProduceData(index=p, records=data)])])
        conn = self.view.connection(part.leader)
        try:
            response = conn.request(request, PRODUCE_VERSION, timeout=self.request_timeout_ms / 1000 + 5)
        except WireError as e:
            attempt.last, attempt.ambiguous_on = str(e), p
            self._refresh_quietly(topic)
            return None
        if response is None:  # acks=0
            return [RecordMetadata(topic, p, -1, part.leader_epoch) for _ in batch]
        r = response.responses[0].partition_responses[0]
        code = r.error_code
        if code in (ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER):
            if self.idempotent:
                self._sequences[(topic, p)] = (seq + len(batch)) & 0x7FFFFFFF
            return [RecordMetadata(topic, p, r.base_offset + i, part.leader_epoch) for i in range(len(batch))]
        if code in _MAYBE_APPENDED:
            attempt.ambiguous_on = p  # the leader may have appended it before answering with the error
        self.refusals[code] = self.refusals.get(code, 0) + 1
        attempt.last = f"{topic}-{p}: {error_name(code)}" + (f" ({r.error_message})" if r.error_message else "")
        log.info("produce refused: %s", attempt.last)
        if code in _NEW_PRODUCER_ID:
            self.producer_id = -1
        elif code in _STALE:
            self._refresh(topic)
        elif not retriable(code):
            raise ProduceError(attempt.last, code, definite=attempt.ambiguous_on is None)
        attempt.backoff = code != ErrorCode.INVALID_PARTITION_METADATA  # re-route at once with the fresh counts
        return None

    def _refresh_quietly(self, topic: str) -> None:
        try:
            self._refresh(topic)
        except (WireError, MetadataError) as e:
            log.info("metadata refresh failed: %s", e)

    def close(self) -> None:
        self.view.close()

    def __enter__(self) -> OrderedProducer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
