"""ReplicaManager: every partition replica on this broker, and the controller's orders for them.

LeaderAndIsr makes replicas leaders or followers (followers go to the FetcherManager); StopReplica
stops and optionally deletes them. A leader changes its ISR itself: it adds a follower that caught
up (never one the controller marks offline or not live, with KIP-320 fencing on) and drops one that
lagged longer than replica.lag.time.max.ms, each time through a conditional write of the partition
state znode (zk.py). Logs found on disk at start-up are opened (and recovered) at once, but serve
nothing until the controller says what they are.
"""
from __future__ import annotations

import asyncio
import inspect
import logging
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chaoskit.broker.config import BrokerConfig
from chaoskit.broker.fetcher import FetcherManager
from chaoskit.broker.log.checkpoint import read_lines, write_atomically
from chaoskit.broker.log.partition_log import PartitionLog
from chaoskit.broker.metadata_cache import MetadataCache
from chaoskit.broker.partition import Partition
from chaoskit.broker.waiting import wait_for
from chaoskit.broker.zk import BrokerZk, ReplicaNotLive, ZkUnavailable
from chaoskit.protocol.errors import ErrorCode, KafkaError
from chaoskit.protocol.extensions import PartitionMode
from chaoskit.protocol.topics import cleanup_policy, legal_topic_name, ordered_delivery
from chaoskit.protocol.zk_layout import ZkDataError

log = logging.getLogger("chaoskit.broker.replicas")

HW_CHECKPOINT = "replication-offset-checkpoint"
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
TopicPartition = tuple[str, int]
LeadershipListener = Callable[[str, int, bool], Any]  # (topic, partition, now leader?)


class ReplicaManager:
    def __init__(self, config: BrokerConfig, cache: MetadataCache, zk: BrokerZk | None) -> None:
        self.config, self.cache, self.zk = config, cache, zk
        self.broker_id = config.broker_id
        self.log_dir = Path(config.log_dir)
        self.partitions: dict[TopicPartition, Partition] = {}
        self.topic_configs: dict[str, dict[str, str]] = {}
        self._next_due: dict[str, int] = {}  # periodic task -> when it runs next (wall-clock ms)
        self.leader_addresses: dict[int, tuple[str, int]] = {}
        self.fetchers = FetcherManager(self.broker_id, config.replica_fetch_wait_max_ms,
                                       config.replica_fetch_max_bytes, self._address_of)
        self.listeners: list[LeadershipListener] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._saved_hw: dict[TopicPartition, int] = {}
        self._configs_pending: set[str] = set()  # topics whose configs ZooKeeper has not given yet

    # -- start-up and shutdown ----------------------------------------------------------------
    def open_existing_logs(self) -> None:
        """Open every partition directory under log.dirs; recovery reports damage with file and offset."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        saved = self._read_hw_checkpoint()
        for d in sorted(self.log_dir.iterdir()):
            m = _PARTITION_DIR.match(d.name)
            if d.is_dir() and m:
                p = self._open(m["topic"], int(m["partition"]))
                p.high_watermark = max(p.log_start_offset, min(saved.get((p.topic, p.index), 0), p.log_end_offset))

    def _open(self, topic: str, index: int) -> Partition:
        plog = PartitionLog(self.log_dir / f"{topic}-{index}", self._segment_bytes(topic), fsync=False)
        for damage in plog.damage:
            log.error("%s-%d: recovered a corrupt log: %s at byte %d (%s); %d bytes dropped",
                      topic, index, damage.file, damage.position, damage.reason, damage.dropped_bytes)
        p = self.partitions[(topic, index)] = Partition(topic, index, self.broker_id, plog)
        return p

    async def stop(self) -> None:
        await self.fetchers.stop()
        for task in list(self._tasks):
            task.cancel()
        self.checkpoint_high_watermarks()
        for p in self.partitions.values():
            p.log.close()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- lookups ------------------------------------------------------------------------------
    def partition(self, topic: str, index: int) -> Partition | None:
        return self.partitions.get((topic, index))

    def leader(self, topic: str, index: int) -> Partition:
        """The partition if this broker leads it, else the KafkaError a client should see."""
        p = self.partitions.get((topic, index))
        if p is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{index} is not on broker {self.broker_id}")
        p.require_leader()
        return p

    def checks_partition_count(self, topic: str) -> bool:
        """KIP-253's count check applies: ordered.delivery.enable and the topic's enable.ordered.delivery."""
        return self.config.ordered_delivery_enable and ordered_delivery(self.topic_configs.get(topic, {}))

    def min_insync_replicas(self, topic: str) -> int:
        value = self.topic_configs.get(topic, {}).get("min.insync.replicas")
        return int(value) if value and value.isdigit() else self.config.min_insync_replicas

    def _address_of(self, broker_id: int) -> tuple[str, int] | None:
        return self.config.peer_address(broker_id, self.leader_addresses.get(broker_id))

    # -- controller requests ------------------------------------------------------------------
    async def leader_and_isr(self, request: Any) -> dict[TopicPartition, int]:
        """Apply a LeaderAndIsr request (controller epoch already fenced); error code per partition."""
        for b in request.live_leaders:
            self.leader_addresses[b.broker_id] = (b.host, b.port)
        await self._load_topic_configs({t.topic_name for t in request.topics})
        errors: dict[TopicPartition, int] = {}
        for topic in request.topics:
            for s in topic.partition_states:
                key = (topic.topic_name, s.partition_index)
                errors[key] = self._apply_partition_state(topic.topic_name, s, topic.undeleted_partition_count)
        return errors

    def _apply_partition_state(self, topic: str, s: Any, undeleted: int) -> int:
        if not legal_topic_name(topic) or s.partition_index < 0:
            return ErrorCode.INVALID_TOPIC_EXCEPTION  # never a directory name outside log.dirs
        if self.broker_id not in s.replicas:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        p = self.partitions.get((topic, s.partition_index)) or self._open(topic, s.partition_index)
        if s.leader_epoch < p.leader_epoch:
            log.info("%s: ignoring leader epoch %d, older than ours %d", p, s.leader_epoch, p.leader_epoch)
            return ErrorCode.STALE_CONTROLLER_EPOCH
        was_leader = p.is_leader
        moved = p.apply_state(s.leader, s.leader_epoch, list(s.isr), list(s.replicas),
                              s.partition_epoch, s.controller_epoch)
        p.undeleted_partition_count, p.mode = undeleted, PartitionMode.of(s.mode)  # with the epoch (KIP-253)
        if p.is_leader:
            self.fetchers.unfollow(p)
            log.info("%s: leader at epoch %d, ISR %s, log end %d", p, p.leader_epoch, sorted(p.isr), p.log_end_offset)
        elif moved or self.fetchers.following(p) is None:
            if s.leader >= 0:
                self.fetchers.follow(p, s.leader, s.leader_epoch)
                log.info("%s: follower of %d at epoch %d", p, s.leader, s.leader_epoch)
            else:
                self.fetchers.unfollow(p)
        if was_leader != p.is_leader:
            self._tell_listeners(topic, s.partition_index, p.is_leader)
        return ErrorCode.NONE

    def _tell_listeners(self, topic: str, index: int, leader: bool) -> None:
        for listener in self.listeners:
            try:
                result = listener(topic, index, leader)
                if inspect.isawaitable(result):
                    self._spawn(result)
            except Exception:
                log.exception("leadership listener failed for %s-%d", topic, index)

    async def _load_topic_configs(self, topics: set[str]) -> None:
        """Topic configs (min.insync.replicas) from ZooKeeper. A zombie cut from ZooKeeper must not
        stall the controller's request: it uses broker defaults and retries in the background."""
        missing = sorted(t for t in topics | self._configs_pending if t not in self.topic_configs)
        self._configs_pending = set(missing)
        if not missing or self.zk is None:
            return
        if not self.zk.connected:
            log.warning("ZooKeeper is away: topic configs of %s use broker defaults for now", missing)
            return
        try:
            self.topic_configs.update(await asyncio.to_thread(self.zk.topic_configs, missing))
            self._configs_pending.clear()
            for (topic, _index), p in self.partitions.items():  # logs opened before their topic's config came
                if topic in missing:
                    p.log.segment_bytes = self._segment_bytes(topic)
        except (ZkUnavailable, ZkDataError) as e:
            log.warning("topic configs of %s unavailable (%s); broker defaults until ZooKeeper answers", missing, e)

    def stop_replica(self, request: Any) -> dict[TopicPartition, int]:
        errors: dict[TopicPartition, int] = {}
        for topic in request.topics:
            for s in topic.partitions:
                key = (topic.topic_name, s.partition_index)
                p = self.partitions.get(key)
                if p is None:
                    errors[key] = ErrorCode.NONE
                    continue
                if 0 <= s.leader_epoch < p.leader_epoch:
                    errors[key] = ErrorCode.FENCED_LEADER_EPOCH
                    continue
                self.fetchers.unfollow(p)
                if p.is_leader:
                    self._tell_listeners(p.topic, p.index, False)
                p.resign(-1, max(p.leader_epoch, s.leader_epoch), "StopReplica")
                if s.delete:
                    del self.partitions[key]
                    p.log.close()
                    shutil.rmtree(p.log.dir, ignore_errors=True)
                    self._saved_hw.pop(key, None)
                    if not any(t == p.topic for t, _i in self.partitions):
                        self.topic_configs.pop(p.topic, None)  # a re-created topic reads its own
                    log.info("%s: stopped and deleted", p)
                errors[key] = ErrorCode.NONE
        return errors

    # -- produce path -------------------------------------------------------------------------
    async def wait_replicated(self, p: Partition, end_offset: int, timeout_s: float) -> int:
        """acks=all: wait until the high watermark passes end_offset; the error code to answer."""
        epoch = p.leader_epoch
        done = await wait_for(lambda: p.high_watermark >= end_offset or not p.is_leader or p.leader_epoch != epoch,
                              [p.changed], timeout_s)
        if not p.is_leader or p.leader_epoch != epoch:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if not done:
            return ErrorCode.REQUEST_TIMED_OUT
        if len(p.isr) < self.min_insync_replicas(p.topic):
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NONE

    # -- ISR ----------------------------------------------------------------------------------
    def record_follower_fetch(self, p: Partition, replica: int, fetch_offset: int) -> None:
        p.record_follower_fetch(replica, fetch_offset)
        if not self._may_change_isr(p):
            return
        fenced = self.config.leader_epoch_fencing_enable and "offline-replica-isr" not in self.config.mutations
        # only the follower that fetched may join (Kafka's maybeExpandIsr): one whose fetches stopped
        # is not caught up because its last known end still equals a high watermark nothing moved
        joining = [r for r in p.followers_to_add() if r == replica
                   and (not fenced or self.cache.may_join_isr(r, p.topic, p.index))]
        if joining:
            # fenced, the joining replica must still be registered when the ISR is written: this broker's
            # metadata may not yet say the controller marked it offline (Kafka's controller checks an
            # AlterPartition's new ISR against the live brokers for the same reason, KIP-841)
            self._spawn(self._change_isr(p, sorted(p.isr | set(joining)), f"adding caught-up {joining}",
                                         registered=tuple(joining) if fenced else ()))

    def shrink_isrs(self) -> None:
        for p in self.partitions.values():
            if p.is_leader and self._may_change_isr(p):
                lagging = p.followers_to_remove(self.config.replica_lag_time_max_ms)
                if lagging:
                    self._spawn(self._change_isr(p, sorted(p.isr - set(lagging)), f"dropping lagging {lagging}"))

    @staticmethod
    def _may_change_isr(p: Partition) -> bool:
        return not p.isr_change_pending and p.isr_refused_at != p.leader_epoch

    async def _change_isr(self, p: Partition, isr: list[int], why: str, registered: tuple[int, ...] = ()) -> None:
        if self.zk is None or not self.zk.connected:
            return  # cut from ZooKeeper: the ISR stays as it is; the next check tries again
        p.isr_change_pending = True
        epoch = p.leader_epoch
        try:
            written = await asyncio.to_thread(self.zk.update_isr, p.topic, p.index, self.broker_id, epoch, isr,
                                              registered)
            if not p.is_leader or p.leader_epoch != epoch:
                return  # a LeaderAndIsr arrived meanwhile and wins
            if written is not None:
                log.info("%s: ISR %s -> %s (%s)", p, sorted(p.isr), isr, why)
                p.apply_isr(written.isr, written.partition_epoch)
                return
            state = await asyncio.to_thread(self.zk.partition_state, p.topic, p.index)
            if state is None or not p.is_leader or p.leader_epoch != epoch:
                return
            if state.leader != self.broker_id:
                p.resign(state.leader, state.leader_epoch,
                         f"ZooKeeper shows leader {state.leader} at epoch {state.leader_epoch}")
                self._tell_listeners(p.topic, p.index, False)
            elif state.leader_epoch > epoch:
                # Still ours at a newer epoch (the controller changed the ISR): its LeaderAndIsr brings
                # that epoch, which must go through apply_state (epoch start offset, coordinator
                # listeners), so nothing is taken from ZooKeeper here.
                log.info("%s: ZooKeeper has our leadership at epoch %d (ours %d); waiting for the controller",
                         p, state.leader_epoch, epoch)
                p.isr_refused_at = epoch
        except ReplicaNotLive as e:
            log.info("%s: ISR stays %s, not %s (%s): %s", p, sorted(p.isr), isr, why, e)
        except (ZkUnavailable, ZkDataError) as e:
            log.warning("%s: cannot change the ISR to %s (%s): %s", p, isr, why, e)
        finally:
            p.isr_change_pending = False

    # -- periodic work ------------------------------------------------------------------------
    async def run_maintenance(self) -> None:
        """ISR shrink checks every half lag period (as Kafka), high watermark checkpoints."""
        period = max(self.config.replica_lag_time_max_ms / 2000, 0.05)
        while True:
            await asyncio.sleep(period)  # a schedule, not a wait on a condition
            try:
                self.shrink_isrs()
                self.apply_retention()
                self.apply_compaction()
                self.checkpoint_high_watermarks()
                if self._configs_pending and self.zk is not None and self.zk.connected:
                    await self._load_topic_configs(set())
            except Exception:
                log.exception("replica maintenance failed; continuing")

    def apply_retention(self, now_ms: int | None = None) -> None:
        """Time-based retention on the partitions this broker leads, every
        log.retention.check.interval.ms: each topic's retention.ms, else log.retention.ms."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        if not self._due("retention", now_ms, self.config.log_retention_check_interval_ms):
            return
        for topic, index, p in self._partitions_with_policy("delete"):
            retention_ms = self._topic_int(topic, "retention.ms", self.config.log_retention_ms)
            if p.apply_retention(now_ms, retention_ms):
                log.info("%s-%d: retention.ms %d: log start now %d", topic, index, retention_ms, p.log_start_offset)

    def apply_compaction(self, now_ms: int | None = None) -> None:
        """Log compaction every log.cleaner.backoff.ms on every replica of a topic whose cleanup.policy
        has `compact` (each replica cleans its own log, as Kafka's): each topic's delete.retention.ms and
        min.compaction.lag.ms, else the broker's log.cleaner.* values."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        if not self._due("cleaner", now_ms, self.config.log_cleaner_backoff_ms):
            return
        for topic, index, p in self._partitions_with_policy("compact"):
            delete_retention = self._topic_int(topic, "delete.retention.ms", self.config.log_cleaner_delete_retention_ms)
            lag = self._topic_int(topic, "min.compaction.lag.ms", self.config.log_cleaner_min_compaction_lag_ms)
            if p.apply_compaction(now_ms, delete_retention, lag):
                log.info("%s-%d: compacted below %d", topic, index, p.high_watermark)

    def _due(self, task: str, now_ms: int, interval_ms: int) -> bool:
        if now_ms < self._next_due.get(task, 0):
            return False
        self._next_due[task] = now_ms + interval_ms
        return True

    def _partitions_with_policy(self, policy: str) -> list[tuple[str, int, Partition]]:
        return [(t, i, p) for (t, i), p in list(self.partitions.items()) if policy in self.cleanup_policy(t)]

    def cleanup_policy(self, topic: str) -> frozenset[str]:
        return cleanup_policy(self.topic_configs.get(topic, {}), self.config.log_cleanup_policy)

    def _segment_bytes(self, topic: str) -> int:
        """The topic's segment.bytes, else the broker's log.segment.bytes: when a log rolls."""
        return self._topic_int(topic, "segment.bytes", self.config.log_segment_bytes)

    def _topic_int(self, topic: str, key: str, default: int) -> int:
        configured = self.topic_configs.get(topic, {}).get(key)
        return int(configured) if configured is not None else default

    def checkpoint_high_watermarks(self) -> None:
        current = {k: p.high_watermark for k, p in self.partitions.items()}
        if current != self._saved_hw and self.log_dir.is_dir():
            body = "".join(f"{t} {i} {hw}\n" for (t, i), hw in sorted(current.items()))
            write_atomically(self.log_dir / HW_CHECKPOINT, f"0\n{len(current)}\n{body}", fsync=False)
            self._saved_hw = current

    def _read_hw_checkpoint(self) -> dict[TopicPartition, int]:
        lines = read_lines(self.log_dir / HW_CHECKPOINT) or []
        out = {}
        for line in lines[2:]:
            parts = line.rsplit(" ", 2)
            if len(parts) == 3 and parts[1].isdigit() and parts[2].lstrip("-").isdigit():
                out[(parts[0], int(parts[1]))] = int(parts[2])
        return out
