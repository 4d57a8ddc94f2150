"""The controller process's core: one event thread, ZooKeeper watches feeding it, election, failover
and broker liveness.

ZooKeeper watch callbacks only queue events; one thread handles them in order (Kafka's
ControllerEventManager), so no two decisions race. Each handler re-reads what it needs from
ZooKeeper (re-arming its watch), decides with partition_state, writes the decision to ZooKeeper
(fenced by the controller epoch) and only then queues requests to brokers. A new controller
(failover) re-reads everything, finishes what its predecessor left half done and sends the full
state to every live broker. Topic events live in topics.py, the proposals' topic changes in
topic_changes.py (KIP-253 expansion and deletion marking, the KAFKA-20029 guardrail) and
partition_deletion.py (removing marked partitions, on a periodic tick).
"""
from __future__ import annotations

import logging
import threading
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from chaoskit.controller import partition_deletion, topic_changes, topics
from chaoskit.controller.channel import ControllerChannel
from chaoskit.controller.config import ControllerConfig
from chaoskit.controller.context import ControllerContext, TopicPartition
from chaoskit.controller.election import Election, Term
from chaoskit.controller.failpoints import Failpoints
from chaoskit.controller.core import ControllerCore
from chaoskit.controller.zk_store import ControllerFenced, ControllerZk
from chaoskit.protocol import zk_layout as zl

log = logging.getLogger("chaoskit.controller")

_STOP = ("stop", None)


class ZkUnreachable(Exception):
    """ZooKeeper did not answer at startup; the message names the connect string."""


class Controller(ControllerCore):
    def __init__(self, config: ControllerConfig) -> None:
        self.client = KazooClient(hosts=config.zookeeper_connect,
                                  timeout=config.zookeeper_session_timeout_ms / 1000,
                                  connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0))
        self._stopping = threading.Event()
        super().__init__(config, ControllerZk(self.client), Failpoints(config.failpoints, self._stopping))
        self.election = Election(self.client, config.controller_id)
        self._connected = threading.Event()
        self._session_lost = False
        self.first_round = threading.Event()  # the first election attempt is done (READY)
        self._thread = threading.Thread(target=self._run, name="controller-events", daemon=True)
        self._ticker = threading.Thread(target=self._tick, name="controller-ticks", daemon=True)

    # --- life cycle --------------------------------------------------------------------------
    def start(self, timeout: float) -> None:
        try:
            self.client.start(timeout=timeout)
        except KazooTimeoutError as e:
            raise ZkUnreachable(f"cannot reach ZooKeeper at {self.config.zookeeper_connect} within "
                                f"{timeout:.0f}s; is it running and is zookeeper.connect right?") from e
        self._connected.set()
        self.client.add_listener(self._on_zk_state)
        self._thread.start()
        self._ticker.start()
        self.post("elect")

    def stop(self) -> None:
        self._stopping.set()
        self._events.put(_STOP)
        if self._thread.is_alive():
            self._thread.join(10)
        if self.ctx is not None:
            try:
                self.election.resign()  # hand over now, not after the session timeout
            except KazooException as e:
                log.warning("could not give /controller up: %r", e)
        self._drop_state()
        self.client.stop()
        self.client.close()

    @property
    def active(self) -> bool:
        return self.ctx is not None

    def _tick(self) -> None:
        """The periodic partition-deletion check (a schedule, not a wait on a condition)."""
        period = self.config.delete_topic_partition_interval_delay_ms / 1000
        while not self._stopping.wait(period):
            if self.ctx is not None:
                self.post("partition_deletion_tick")

    def _on_zk_state(self, state: str) -> None:  # kazoo's thread: only flags and events
        if state == KazooState.LOST:
            self._connected.clear()
            self._session_lost = True
            self.post("session_lost")
        elif state == KazooState.SUSPENDED:
            self._connected.clear()
        elif state == KazooState.CONNECTED:
            self._connected.set()
            if self._session_lost:
                self._session_lost = False
                self.post("elect")  # watches died with the old session: start over

    def _run(self) -> None:
        while True:
            name, arg = self._events.get()
            if name == "stop":
                return
            if self.ctx is None and name not in ("elect", "controller_change", "session_lost"):
                continue  # a standby ignores data events; a failover re-reads everything
            try:
                getattr(self, f"on_{name}")(arg)
            except ControllerFenced as e:
                log.warning("fenced: %s; resigning", e)
                self._resign()
            except (KazooException, KazooTimeoutError) as e:
                log.warning("ZooKeeper trouble while handling %s: %r; will re-read everything", name, e)
                self._recover()
            except Exception:
                log.exception("handling %s(%r) failed; will re-read everything", name, arg)
                self._recover()
            finally:
                if name == "elect":
                    self.first_round.set()

    def _recover(self) -> None:
        """After a failed step: once connected again (and a pause, so a persistent fault does not
        spin), redo the election or the whole failover."""
        while not self._connected.wait(0.5) or self._stopping.wait(0.5):
            if self._stopping.is_set():
                return
        if self.ctx is not None:
            self.post("failover", self.ctx.term)
        else:
            self.post("elect")

    # --- election and failover ---------------------------------------------------------------
    def on_elect(self, _: Any) -> None:
        if self.ctx is not None:
            return
        term = self.election.try_to_win(self.watch("controller_change"))
        if term is None:
            log.info("controller %d is standing by; active: %s", self.config.controller_id,
                     self.election.active_controller())
            return
        self.on_failover(term)

    def on_controller_change(self, _: Any) -> None:
        active = self.election.active_controller(self.watch("controller_change"))
        if self.ctx is not None and active != self.config.controller_id:
            log.warning("controller %s took over; resigning", active)
            self._resign()
        if active is None:
            self.on_elect(None)

    def on_session_lost(self, _: Any) -> None:
        if self.ctx is not None:
            log.warning("ZooKeeper session lost: no longer the controller")
            self._resign()

    def _resign(self) -> None:
        self._drop_state()

    def _drop_state(self) -> None:
        self.ctx = None
        self.zk.epoch_zk_version = None
        if self.channel is not None:
            self.channel.stop()
            self.channel = None

    def on_failover(self, term: Term) -> None:
        """Become (or re-become) the active controller at `term`: rebuild everything from ZooKeeper."""
        self._drop_state()
        if self.election.active_controller(self.watch("controller_change")) != self.config.controller_id:
            log.warning("/controller is no longer ours; standing by")
            return
        self.zk.epoch_zk_version = term.epoch_zk_version
        ctx = ControllerContext(term)
        self.channel = ControllerChannel(self.config.controller_id, self.config.request_timeout_ms / 1000)
        self.ctx = ctx
        for bid, (reg, czxid) in self.zk.brokers(self.watch("broker_change")).items():
            self._add_broker(bid, reg, czxid)
        for topic in self.zk.children(zl.TOPICS, self.watch("topics_change")):
            self.load_topic(topic)
        self.on_delete_topics(None)  # first, so that no partition of a deleted topic comes back
        for topic in sorted(ctx.assignments):  # finish expansions and deletions a predecessor began
            topic_changes.settle(self, topic)
        ctx.removing = {tp: set(ctx.replicas()[tp]) for tp in ctx.states if ctx.being_removed(tp)}
        changed, created = self.reconcile(ctx.partitions())
        log.info("controller %d active at epoch %d: brokers %s, %d partitions (%d changed, %d created)",
                 self.config.controller_id, ctx.epoch, sorted(ctx.brokers), len(ctx.partitions()),
                 len(changed), len(created))
        self.send_leader_and_isr({b: ctx.partitions_of(b) for b in ctx.brokers}, created)
        self.send_metadata()
        self.on_isr_change(None)
        for tp in sorted(ctx.removing):
            partition_deletion.send_deletes(self, tp)

    # --- brokers -----------------------------------------------------------------------------
    def _add_broker(self, bid: int, reg: zl.BrokerRegistration, czxid: int) -> None:
        assert self.ctx is not None and self.channel is not None
        self.ctx.brokers[bid], self.ctx.broker_czxid[bid] = reg, czxid
        self.channel.add_broker(bid, self.config.broker_address(bid, reg.internal), czxid)

    def _remove_broker(self, bid: int) -> None:
        assert self.ctx is not None and self.channel is not None
        self.ctx.brokers.pop(bid, None)
        self.ctx.broker_czxid.pop(bid, None)
        self.channel.remove_broker(bid)

    def on_broker_change(self, _: Any) -> None:
        ctx = self.ctx
        assert ctx is not None
        current = self.zk.brokers(self.watch("broker_change"))
        dead = set(ctx.brokers) - set(current)
        # the same id under a new session: it crashed and came back between two looks
        bounced = {b for b in set(ctx.brokers) & set(current) if ctx.broker_czxid[b] != current[b][1]}
        joined = (set(current) - set(ctx.brokers)) | bounced
        if not (dead or joined):
            return
        log.info("brokers: died %s, joined %s (bounced %s)", sorted(dead), sorted(joined - bounced), sorted(bounced))
        for bid in dead | bounced:
            self._remove_broker(bid)
        changed: set[TopicPartition] = set()
        if bounced:  # their partitions fail over first, as after a death
            changed, _ = self.reconcile(ctx.partitions())
        for bid in joined:
            self._add_broker(bid, *current[bid])
        more, created = self.reconcile(ctx.partitions())
        changed |= more
        targets = {b: {tp for tp in changed | created if b in ctx.replicas()[tp]} for b in ctx.brokers}
        for bid in joined:
            targets[bid] = ctx.partitions_of(bid)
        self.send_metadata()  # the live broker set changed: everyone hears about it
        self.send_leader_and_isr(targets, created)
        topics.deletion_brokers_changed(self, dead, joined)
        partition_deletion.brokers_changed(self, dead, joined)

    # re-exported handlers for topic events (the event loop looks them up by name)
    def on_topics_change(self, arg: Any) -> None:
        topics.on_topics_change(self, arg)

    def on_assignment_change(self, topic: str) -> None:
        topics.on_assignment_change(self, topic)

    def on_delete_topics(self, arg: Any) -> None:
        topics.on_delete_topics(self, arg)

    def on_stop_replica_done(self, arg: tuple[str, int]) -> None:
        topics.on_stop_replica_done(self, arg)

    def on_isr_change(self, arg: Any) -> None:
        topics.on_isr_change(self, arg)

    def on_partition_deletion_tick(self, _: Any) -> None:
        partition_deletion.on_tick(self)

    def on_partitions_due(self, arg: list[TopicPartition]) -> None:
        partition_deletion.on_due(self, arg)

    def on_drain_checked(self, arg: tuple[TopicPartition, int, int]) -> None:
        partition_deletion.on_drain_checked(self, arg)

    def on_partition_replica_deleted(self, arg: tuple[TopicPartition, int, int]) -> None:
        partition_deletion.on_replica_deleted(self, arg)
