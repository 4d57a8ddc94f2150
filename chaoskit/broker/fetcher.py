"""Follower replication: one LeaderFetcher task per leader this broker follows.

A partition that just became follower first truncates (KIP-101/279 with KIP-320's fencing): it
asks the leader, with its new leader epoch, where its own latest epoch ends, and cuts its log to
the smaller of that and its own end of the epoch. Then it long-polls Fetch with replica_id and
current_leader_epoch, appends what comes back and follows the leader's high watermark. Fencing
errors (the leader has not seen our epoch yet, or has moved past it) are retried after a pause;
a zombie that the controller no longer reaches keeps fetching exactly like this.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from kafka.protocol.consumer import FetchRequest, OffsetForLeaderEpochRequest

from chaoskit.broker.log.partition_log import OffsetOutOfRange
from chaoskit.broker.partition import Partition
from chaoskit.broker.peer_client import PeerClient, PeerError
from chaoskit.broker.waiting import Signal, wait_any
from chaoskit.protocol.errors import ErrorCode, error_name

log = logging.getLogger("chaoskit.broker.fetcher")

FETCH_VERSION = 11  # has current_leader_epoch (v9+); not flexible, so no tagged fields to mind
EPOCH_VERSION = 3   # OffsetForLeaderEpoch with replica_id and current_leader_epoch
RETRY_PAUSE_S = 0.2


@dataclass
class FetchTarget:
    partition: Partition
    leader_epoch: int
    needs_truncation: bool = True
    retry_after: float = 0.0  # monotonic time before which it sits out

    def ready(self, now: float) -> bool:
        return now >= self.retry_after

    def pause(self) -> None:
        self.retry_after = time.monotonic() + RETRY_PAUSE_S


class LeaderFetcher:
    def __init__(self, broker_id: int, leader_id: int, address: tuple[str, int], wait_max_ms: int,
                 max_bytes: int) -> None:
        self.broker_id, self.leader_id, self.address = broker_id, leader_id, address
        self.wait_max_ms, self.max_bytes = wait_max_ms, max_bytes
        self.targets: dict[tuple[str, int], FetchTarget] = {}
        self.client = PeerClient(address, client_id=f"broker-{broker_id}-fetcher-{leader_id}")
        self.wakeup = Signal()
        self._task: asyncio.Task[None] | None = None
        self._error_logged = ""

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"fetcher-{self.leader_id}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
        await self.client.close()

    def add(self, partition: Partition, leader_epoch: int) -> None:
        self.targets[(partition.topic, partition.index)] = FetchTarget(partition, leader_epoch)
        self.wakeup.fire()

    def remove(self, key: tuple[str, int]) -> None:
        self.targets.pop(key, None)

    async def _run(self) -> None:
        timeout = max(self.wait_max_ms / 1000, 0.1) + 5.0
        while True:
            now = time.monotonic()
            ready = {k: t for k, t in self.targets.items() if t.ready(now)}
            if not ready:
                await wait_any([self.wakeup], RETRY_PAUSE_S)
                continue
            try:
                to_truncate = {k: t for k, t in ready.items() if t.needs_truncation}
                if to_truncate:
                    await self._truncate(to_truncate, timeout)
                to_fetch = {k: t for k, t in ready.items() if not t.needs_truncation}
                if to_fetch:
                    await self._fetch(to_fetch, timeout)
                self._error_logged = ""
            except PeerError as e:
                if str(e) != self._error_logged:  # one line per distinct failure, not one per retry
                    log.warning("fetching from broker %d: %s; retrying", self.leader_id, e)
                    self._error_logged = str(e)
                await wait_any([self.wakeup], RETRY_PAUSE_S * 2)
            except Exception:  # a bug or a surprise must not end replication from this leader
                log.exception("fetcher for broker %d failed; retrying", self.leader_id)
                await self.client.close()
                await wait_any([self.wakeup], RETRY_PAUSE_S * 2)

    def _current(self, key: tuple[str, int], target: FetchTarget) -> bool:
        """The target is still ours: no LeaderAndIsr replaced it while a request was out."""
        return self.targets.get(key) is target

    async def _truncate(self, targets: dict[tuple[str, int], FetchTarget], timeout: float) -> None:
        asks: dict[str, list] = {}
        for (topic, index), t in targets.items():
            latest = t.partition.log.epochs.latest()
            if latest is None:  # nothing written under any epoch: nothing to cut
                t.needs_truncation = False
                continue
            asks.setdefault(topic, []).append(OffsetForLeaderEpochRequest.OffsetForLeaderTopic.OffsetForLeaderPartition(
                partition=index, current_leader_epoch=t.leader_epoch, leader_epoch=latest.epoch))
        if not asks:
            return
        request = OffsetForLeaderEpochRequest(replica_id=self.broker_id, topics=[
            OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=topic, partitions=parts)
            for topic, parts in asks.items()])
        response = await self.client.request(request, EPOCH_VERSION, timeout)
        for topic in response.topics:
            for r in topic.partitions:
                key = (topic.topic, r.partition)
                t = targets.get(key)
                if t is None or not self._current(key, t):
                    continue
                if r.error_code != ErrorCode.NONE:
                    self._note_error(t, r.error_code, "OffsetsForLeaderEpoch")
                    continue
                self._cut(t, r.leader_epoch, r.end_offset)

    @staticmethod
    def _cut(t: FetchTarget, leader_epoch: int, end_offset: int) -> None:
        p = t.partition
        if end_offset < 0:  # the leader knows no epoch at or below ours: fall back to the HW
            target = p.high_watermark
        else:
            _own_epoch, own_end = p.log.epochs.end_offset_for(leader_epoch)
            target = end_offset if own_end < 0 else min(end_offset, own_end)
        p.truncate_to(min(target, p.log_end_offset))
        t.needs_truncation = False

    def _note_error(self, t: FetchTarget, code: int, what: str) -> None:
        log.info("%s: %s from broker %d answered %s; retrying", t.partition, what, self.leader_id, error_name(code))
        t.pause()

    async def _fetch(self, targets: dict[tuple[str, int], FetchTarget], timeout: float) -> None:
        topics: dict[str, list] = {}
        sent: dict[tuple[str, int], int] = {}
        for (topic, index), t in targets.items():
            sent[(topic, index)] = t.partition.log_end_offset
            topics.setdefault(topic, []).append(FetchRequest.FetchTopic.FetchPartition(
                partition=index, current_leader_epoch=t.leader_epoch, fetch_offset=t.partition.log_end_offset,
                log_start_offset=t.partition.log_start_offset, partition_max_bytes=self.max_bytes))
        request = FetchRequest(
            replica_id=self.broker_id, max_wait_ms=self.wait_max_ms, min_bytes=1, max_bytes=self.max_bytes,
            isolation_level=0, session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
            topics=[FetchRequest.FetchTopic(topic=topic, partitions=parts) for topic, parts in topics.items()])
        response = await self.client.request(request, FETCH_VERSION, timeout)
        for topic in response.responses:
            for r in topic.partitions:
                key = (topic.topic, r.partition_index)
                t = targets.get(key)
                if t is None or not self._current(key, t) or t.partition.log_end_offset != sent[key]:
                    continue  # replaced, or truncated while the request was out
                self._apply(t, r)

    def _apply(self, t: FetchTarget, r: object) -> None:
        p = t.partition
        code = r.error_code  # type: ignore[attr-defined]
        if code == ErrorCode.NONE:
            try:
                p.append_as_follower(r.records or b"", r.high_watermark, r.log_start_offset)  # type: ignore[attr-defined]
            except (ValueError, OffsetOutOfRange) as e:  # InvalidBatch, InvalidAppend: find our place again
                log.error("%s: cannot append what broker %d sent (%s); truncating again", p, self.leader_id, e)
                t.needs_truncation = True
                t.pause()
        elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
            leader_start = r.log_start_offset  # type: ignore[attr-defined]
            if 0 <= p.log_end_offset < leader_start:
                log.warning("%s: our log end %d is below the leader's log start %d; starting over there",
                            p, p.log_end_offset, leader_start)
                p.restart_at(leader_start)
            else:
                t.needs_truncation = True
        else:
            self._note_error(t, code, "Fetch")


class FetcherManager:
    """Which leader each followed partition fetches from; one LeaderFetcher per (leader, address)."""

    def __init__(self, broker_id: int, wait_max_ms: int, max_bytes: int,
                 address_of: Callable[[int], tuple[str, int] | None]) -> None:
        self.broker_id, self.wait_max_ms, self.max_bytes = broker_id, wait_max_ms, max_bytes
        self.address_of = address_of
        self.fetchers: dict[int, LeaderFetcher] = {}
        self._retiring: set[asyncio.Task[None]] = set()

    def follow(self, partition: Partition, leader_id: int, leader_epoch: int) -> bool:
        """Fetch partition from leader_id (after truncating); False when the leader's address is unknown."""
        self.unfollow(partition)
        address = self.address_of(leader_id)
        if address is None:
            log.warning("%s: no address for leader %d; not fetching until the controller sends one",
                        partition, leader_id)
            return False
        fetcher = self.fetchers.get(leader_id)
        if fetcher is not None and fetcher.address != address:
            self._retire(fetcher)
            fetcher = None
        if fetcher is None:
            fetcher = self.fetchers[leader_id] = LeaderFetcher(self.broker_id, leader_id, address,
                                                               self.wait_max_ms, self.max_bytes)
            fetcher.start()
        fetcher.add(partition, leader_epoch)
        return True

    def unfollow(self, partition: Partition) -> None:
        for leader_id, fetcher in list(self.fetchers.items()):
            fetcher.remove((partition.topic, partition.index))
            if not fetcher.targets:  # nothing left to fetch from that leader
                del self.fetchers[leader_id]
                self._retire(fetcher)

    def _retire(self, fetcher: LeaderFetcher) -> None:
        task = asyncio.create_task(fetcher.stop())
        self._retiring.add(task)  # asyncio keeps only weak references to tasks
        task.add_done_callback(self._retiring.discard)

    def following(self, partition: Partition) -> int | None:
        for leader_id, fetcher in self.fetchers.items():
            if (partition.topic, partition.index) in fetcher.targets:
                return leader_id
        return None

    async def stop(self) -> None:
        for fetcher in self.fetchers.values():
            await fetcher.stop()
        self.fetchers.clear()
