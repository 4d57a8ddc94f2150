"""BrokerZk: the broker's ZooKeeper session (kazoo) and every znode it reads or writes
(docs/internals.md §2).

Registration: `/brokers/ids/<id>` is ephemeral, so it vanishes when the session expires; on the next
session it is created again. A broker cut off from ZooKeeper (a zombie) keeps serving and fetching as
before: nothing here stops it, it only cannot change ISRs until it is reachable again.

Every call blocks (kazoo runs its own threads) and gives up after `op_timeout` with ZkUnavailable;
the asyncio side calls them through asyncio.to_thread.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (BadVersionError, ConnectionLoss, NodeExistsError, NoNodeError,
                              SessionExpiredError)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from chaoskit.broker.config import BrokerConfig
from chaoskit.protocol.zk_layout import (BROKER_IDS, ISR_CHANGE, ISR_CHANGE_PREFIX, TOPICS, BrokerRegistration,
                                          PartitionState, TopicAssignment, broker_path,
                                          decode_topic_config, delete_topic_path, dumps, encode_isr_change,
                                          encode_topic_config, loads, state_path, topic_config_path, topic_path)

log = logging.getLogger("chaoskit.broker.zk")

PRODUCER_ID_BLOCK = "/latest_producer_id_block"
PRODUCER_ID_BLOCK_SIZE = 1000


class ZkUnavailable(Exception):
    """ZooKeeper did not answer in time (disconnected, session expired, or a partitioned link)."""


class ReplicaNotLive(Exception):
    """An ISR change refused because a replica joining it is not registered in ZooKeeper."""


class BrokerZk:
    def __init__(self, config: BrokerConfig, op_timeout: float = 5.0) -> None:
        self.config = config
        self.op_timeout = op_timeout
        self.client = KazooClient(
            hosts=config.zookeeper_connect, timeout=config.zookeeper_session_timeout_ms / 1000,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0))
        self.registered = threading.Event()
        self.broker_epoch: int | None = None  # the registration's czxid, once registered
        self._session_lost = False
        self._stopping = False

    # -- session and registration -------------------------------------------------------------
    def start(self, timeout: float) -> None:
        """Connect and register; raises ZkUnavailable with the address when that takes longer than timeout."""
        try:
            self.client.start(timeout=timeout)
        except KazooTimeoutError as e:
            raise ZkUnavailable(f"cannot reach ZooKeeper at {self.config.zookeeper_connect} within "
                                f"{timeout:.0f}s; is it running and is zookeeper.connect right?") from e
        self.client.add_listener(self._on_state)
        self._register(time.monotonic() + timeout)

    def stop(self) -> None:
        self._stopping = True
        try:
            self.client.stop()
            self.client.close()
        except Exception as e:  # shutting down: nothing left to save
            log.warning("closing the ZooKeeper client: %r", e)

    def registration(self) -> bytes:
        host, port = self.config.advertised
        return BrokerRegistration(self.config.broker_id, host, port, self.config.listener).encode()

    def _register(self, deadline: float) -> None:
        path = broker_path(self.config.broker_id)
        while not self._stopping:
            try:
                try:
                    self._wait(self.client.create_async(path, self.registration(), ephemeral=True, makepath=True))
                except NodeExistsError:
                    pass  # ours (a create retried after a lost answer), or a previous session's
                _, stat = self._wait(self.client.get_async(path))
                if stat.ephemeralOwner == self.client.client_id[0]:
                    self.broker_epoch = stat.czxid  # as Kafka's (KIP-380): the controller's requests name it
                    self.registered.set()
                    log.info("registered %s in session %#x (broker epoch %d)", path, self.client.client_id[0],
                             stat.czxid)
                    return
                # a previous session's node: it goes when that session expires
            except NoNodeError:
                continue
            except ZkUnavailable as e:
                log.warning("registering %s: %s; retrying", path, e)
            if time.monotonic() > deadline:
                raise ZkUnavailable(f"{path} is still held by another session; is broker.id "
                                    f"{self.config.broker_id} used by another running broker?")
            time.sleep(0.2)

    def _on_state(self, state: str) -> None:
        # kazoo calls this on its own thread; it must not block
        if self._stopping:
            return
        if state == KazooState.LOST:
            self._session_lost = True
            self.registered.clear()
            log.warning("ZooKeeper session lost; will register again on the next session")
        elif state == KazooState.SUSPENDED:
            log.warning("ZooKeeper connection suspended; serving on")
        elif state == KazooState.CONNECTED and self._session_lost:
            self._session_lost = False
            threading.Thread(target=self._reregister, name="zk-register", daemon=True).start()

    def _reregister(self) -> None:
        try:
            self._register(time.monotonic() + 10 * self.config.zookeeper_session_timeout_ms / 1000)
        except ZkUnavailable as e:
            log.error("re-registration failed: %s", e)

    # -- helpers ------------------------------------------------------------------------------
    def _wait(self, result: Any) -> Any:
        try:
            return result.get(timeout=self.op_timeout)
        except (KazooTimeoutError, ConnectionLoss, SessionExpiredError) as e:
            raise ZkUnavailable(f"ZooKeeper at {self.config.zookeeper_connect}: {type(e).__name__}") from e

    def get(self, path: str) -> tuple[bytes, Any] | None:
        """(data, stat), or None when the znode does not exist."""
        try:
            return self._wait(self.client.get_async(path))
        except NoNodeError:
            return None

    def children(self, path: str) -> list[str]:
        try:
            return self._wait(self.client.get_children_async(path))
        except NoNodeError:
            return []

    # -- brokers and topics -------------------------------------------------------------------
    def live_brokers(self) -> dict[int, BrokerRegistration]:
        out = {}
        for child in self.children(BROKER_IDS):
            got = self.get(broker_path(int(child))) if child.isdigit() else None
            if got is not None:
                out[int(child)] = BrokerRegistration.decode(int(child), got[0])
        return out

    def topics(self) -> list[str]:
        return self.children(TOPICS)

    def assignment(self, topic: str) -> tuple[TopicAssignment, int] | None:
        """(assignment, znode version), or None for an unknown topic."""
        got = self.get(topic_path(topic))
        return None if got is None else (TopicAssignment.decode(topic, got[0]), got[1].version)

    def topic_config(self, topic: str) -> dict[str, str]:
        got = self.get(topic_config_path(topic))
        return decode_topic_config(topic, got[0]) if got else {}

    def topic_configs(self, topics: list[str]) -> dict[str, dict[str, str]]:
        return {t: self.topic_config(t) for t in topics}

    @property
    def connected(self) -> bool:
        """The session is up right now (a call may still time out if the link drops meanwhile)."""
        return bool(self.client.connected)

    def create_topic(self, topic: str, assignment: dict[int, list[int]], config: dict[str, str],
                     counts: bool = False) -> bool:
        """Write the config then the assignment (with KIP-253's initial and undeleted counts when
        `counts`); False when the topic already exists."""
        if self.get(topic_path(topic)) is not None:
            return False
        cfg = encode_topic_config(config)
        try:
            self._wait(self.client.create_async(topic_config_path(topic), cfg, makepath=True))
        except NodeExistsError:  # left over from a deleted topic
            self._wait(self.client.set_async(topic_config_path(topic), cfg))
        try:
            n = len(assignment) if counts else None
            body = TopicAssignment(assignment, initial_partition_count=n, undeleted_partition_count=n).encode()
            self._wait(self.client.create_async(topic_path(topic), body, makepath=True))
        except NodeExistsError:
            return False
        return True

    def set_assignment(self, topic: str, assignment: TopicAssignment, version: int) -> bool:
        """Rewrite a topic's assignment if the znode is still at version; False if it moved on."""
        try:
            self._wait(self.client.set_async(topic_path(topic), assignment.encode(), version=version))
        except (BadVersionError, NoNodeError):
            return False
        return True

    def mark_for_deletion(self, topic: str) -> None:
        try:
            self._wait(self.client.create_async(delete_topic_path(topic), b"", makepath=True))
        except NodeExistsError:
            pass

    # -- partition leaders --------------------------------------------------------------------
    def update_isr(self, topic: str, partition: int, leader: int, leader_epoch: int,
                   isr: list[int], registered: tuple[int, ...] = ()) -> PartitionState | None:
        """Write a new ISR into the partition state if this broker still leads at leader_epoch, and
        each broker of `registered` (those joining it) is registered in the same transaction.

        Returns the state written, or None when the controller has moved leadership on (the caller
        stops acting as leader when the state's epoch is newer). Retries a concurrent ISR-only change.
        ReplicaNotLive when a broker of `registered` is not registered: its session ended, so the
        controller takes it as offline, whatever this broker's metadata says yet.
        """
        path = state_path(topic, partition)
        self._ensure(ISR_CHANGE)
        while True:
            got = self.get(path)
            if got is None:
                return None
            state = PartitionState.decode(topic, partition, got[0])
            if state.leader != leader or state.leader_epoch != leader_epoch:
                return None
            new = state.evolve(isr=sorted(isr), partition_epoch=state.partition_epoch + 1)
            # one transaction: the controller never sees the new ISR without its notification
            txn = self.client.transaction()
            for broker in registered:  # exists, at any version
                txn.check(broker_path(broker), -1)
            txn.set_data(path, new.encode(), version=got[1].version)
            txn.create(ISR_CHANGE_PREFIX, encode_isr_change([(topic, partition)]), sequence=True)
            results = self._wait(txn.commit_async())
            gone = [b for b, r in zip(registered, results) if isinstance(r, NoNodeError)]
            if gone:
                raise ReplicaNotLive(f"broker(s) {gone} not registered in ZooKeeper (offline)")
            results = results[len(registered):]
            if isinstance(results[0], BadVersionError):
                continue  # changed under us: re-read and re-check the epoch
            failed = next((r for r in results if isinstance(r, Exception)), None)
            if isinstance(failed, NoNodeError):
                return None
            if failed is not None:
                raise ZkUnavailable(f"ISR change of {topic}-{partition} failed: {failed!r}")
            return new

    def _ensure(self, path: str) -> None:
        try:
            self._wait(self.client.create_async(path, b"", makepath=True))
        except NodeExistsError:
            pass

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        got = self.get(state_path(topic, partition))
        return None if got is None else PartitionState.decode(topic, partition, got[0])

    # -- producer ids -------------------------------------------------------------------------
    def allocate_producer_ids(self, block_size: int = PRODUCER_ID_BLOCK_SIZE) -> tuple[int, int]:
        """Claim the next block [start, end] of producer ids; conditional writes keep blocks disjoint
        across brokers."""
        while True:
            got = self.get(PRODUCER_ID_BLOCK)
            last = loads(PRODUCER_ID_BLOCK, got[0]) if got else None
            end = int(last["block_end"]) if last else -1
            block = dumps({"version": 1, "broker": self.config.broker_id,
                           "block_start": str(end + 1), "block_end": str(end + block_size)})
            try:
                if got is None:
                    self._wait(self.client.create_async(PRODUCER_ID_BLOCK, block, makepath=True))
                else:
                    self._wait(self.client.set_async(PRODUCER_ID_BLOCK, block, version=got[1].version))
            except (NodeExistsError, BadVersionError):
                continue  # another broker claimed a block first
            return end + 1, end + block_size
