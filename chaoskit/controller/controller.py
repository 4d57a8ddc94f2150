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
import queue
import threading
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from chaoskit.controller import partition_deletion, requests, topic_changes, topics
from chaoskit.controller.channel import ControllerChannel
from chaoskit.controller.config import ControllerConfig
from chaoskit.controller.context import ControllerContext, TopicPartition
from chaoskit.controller.election import Election, Term
from chaoskit.controller.failpoints import Failpoints
from chaoskit.controller.partition_state import initial_state, next_state, unclean_enabled
from chaoskit.controller.zk_store import ControllerFenced, ControllerZk, StateConflict
from chaoskit.protocol import zk_layout as zl

log = logging.getLogger("chaoskit.controller")

_STOP = ("stop", None)


class ZkUnreachable(Exception):
    """ZooKeeper did not answer at startup; the message names the connect string."""


class Controller:
    def __init__(self, config: ControllerConfig) -> None:
        self.config = config
        self.client = KazooClient(hosts=config.zookeeper_connect,
                                  timeout=config.zookeeper_session_timeout_ms / 1000,
                                  connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0))
        self.zk = ControllerZk(self.client)
        self.election = Election(self.client, config.controller_id)
        self.ctx: ControllerContext | None = None
        self.channel: ControllerChannel | None = None
        self._events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._watchers: dict[tuple[str, Any], Callable[[Any], None]] = {}
        self._connected = threading.Event()
        self._stopping = threading.Event()
        self._session_lost = False
        self.first_round = threading.Event()  # the first election attempt is done (READY)
        self.failpoints = Failpoints(config.failpoints, self._stopping)
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

    # --- events ------------------------------------------------------------------------------
    def post(self, name: str, arg: Any = None) -> None:
        self._events.put((name, arg))

    def watch(self, name: str, arg: Any = None) -> Callable[[Any], None]:
        """One watcher function per event, so kazoo (which keeps a set) calls it once per change."""
        key = (name, arg)
        if key not in self._watchers:
            self._watchers[key] = lambda _event: self.post(name, arg)
        return self._watchers[key]

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
            topics.load_topic(self, topic)
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

    # --- deciding and writing partition states -----------------------------------------------
    def reconcile(self, tps: list[TopicPartition]) -> tuple[set[TopicPartition], set[TopicPartition]]:
        """Bring each partition's state in line with the live brokers; written to ZooKeeper.

        Returns (changed, created). A conflicting concurrent write (a leader's ISR change, a
        predecessor's creation) makes us re-read that partition and decide again.
        """
        ctx = self.ctx
        assert ctx is not None
        changed: set[TopicPartition] = set()
        created: set[TopicPartition] = set()
        configs: dict[str, bool] = {}
        replicas = ctx.replicas()
        for tp in tps:
            if tp in ctx.broken or ctx.being_removed(tp):
                continue
            for _attempt in range(20):
                try:
                    outcome = self._reconcile_one(tp, replicas[tp], configs)
                    break
                except StateConflict:
                    self.reload_state(tp)
            else:
                raise RuntimeError(f"{tp}: the partition state keeps changing under the controller")
            if outcome == "created":
                created.add(tp)
            elif outcome == "changed":
                changed.add(tp)
        return changed, created

    def _reconcile_one(self, tp: TopicPartition, replicas: list[int], configs: dict[str, bool]) -> str | None:
        ctx = self.ctx
        assert ctx is not None
        state = ctx.states.get(tp)
        live = set(ctx.brokers)
        if state is None:
            first = initial_state(replicas, live, ctx.epoch)
            if first is None:
                return None  # no replica alive yet: created when one joins
            ctx.versions[tp] = self.zk.create_state(tp[0], tp[1], first)
            ctx.states[tp] = first
            log.info("%s-%d created: leader %d, isr %s", tp[0], tp[1], first.leader, first.isr)
            return "created"
        if state.leader not in live and tp[0] not in configs:
            configs[tp[0]] = unclean_enabled(self.zk.topic_config(tp[0]),
                                             self.config.unclean_leader_election_enable)
        decision = next_state(state, replicas, live, configs.get(tp[0], False), ctx.epoch)
        if decision is None:
            return None
        ctx.versions[tp] = self.zk.write_state(tp[0], tp[1], decision.state, ctx.versions[tp])
        ctx.states[tp] = decision.state
        new = decision.state
        if decision.leader_changed:
            log.log(logging.WARNING if decision.unclean or not new.online else logging.INFO,
                    "%s-%d: leader %d -> %d at epoch %d, isr %s%s", tp[0], tp[1], state.leader, new.leader,
                    new.leader_epoch, new.isr, " (UNCLEAN)" if decision.unclean else "")
        else:
            log.info("%s-%d: isr %s -> %s", tp[0], tp[1], state.isr, new.isr)
        return "changed"

    # --- writes of the proposals' steps (topic_changes, partition_deletion) ----------------------
    def written(self, state: zl.PartitionState, **changes: Any) -> zl.PartitionState:
        """`state` with `changes`, as this controller writes it (its epoch, partition epoch + 1)."""
        assert self.ctx is not None
        return state.evolve(controller_epoch=self.ctx.epoch, partition_epoch=state.partition_epoch + 1, **changes)

    def write_state(self, tp: TopicPartition, state: zl.PartitionState) -> None:
        """Conditional on the version we read (StateConflict otherwise); the cache follows."""
        ctx = self.ctx
        assert ctx is not None
        ctx.versions[tp] = self.zk.write_state(tp[0], tp[1], state, ctx.versions[tp])
        ctx.states[tp] = state

    def create_state(self, tp: TopicPartition, state: zl.PartitionState) -> None:
        ctx = self.ctx
        assert ctx is not None
        ctx.versions[tp] = self.zk.create_state(tp[0], tp[1], state)
        ctx.states[tp] = state

    def write_assignment(self, topic: str, assignment: zl.TopicAssignment) -> zl.TopicAssignment:
        ctx = self.ctx
        assert ctx is not None
        ctx.assignment_versions[topic] = self.zk.write_assignment(topic, assignment, ctx.assignment_versions[topic])
        ctx.assignments[topic] = assignment
        return assignment

    def reload_topic(self, topic: str) -> None:
        """Re-read a topic's znode and every partition state it names (after a conflicting write)."""
        assert self.ctx is not None
        if topics.load_topic(self, topic, all_states=True):
            return
        self.ctx.forget_topic(topic)

    def reload_state(self, tp: TopicPartition) -> None:
        assert self.ctx is not None
        try:
            got = self.zk.state(*tp)
        except zl.ZkDataError as e:  # leave a damaged znode alone rather than guess its content
            log.error("%s; the partition is left as it is until the znode is repaired", e)
            self.ctx.broken.add(tp)
            return
        self.ctx.broken.discard(tp)
        if got is None:
            self.ctx.states.pop(tp, None)
            self.ctx.versions.pop(tp, None)
        else:
            self.ctx.states[tp], self.ctx.versions[tp] = got

    # --- telling brokers ---------------------------------------------------------------------
    def send_leader_and_isr(self, targets: dict[int, set[TopicPartition]], new: set[TopicPartition]) -> None:
        """LeaderAndIsr for `targets` (never for partitions being removed), with each topic's
        undeleted count, so a leader learns it together with the leader epoch (KIP-253)."""
        ctx, channel = self.ctx, self.channel
        assert ctx is not None and channel is not None
        replicas = ctx.replicas()
        counts = ctx.undeleted_counts()
        for bid, tps in sorted(targets.items()):
            states = {tp: s for tp, s in ctx.live_states(tps).items() if not ctx.being_removed(tp)}
            if states and bid in ctx.brokers:
                channel.send(bid, requests.leader_and_isr(self.config.controller_id, ctx.epoch, states,
                                                          replicas, ctx.brokers, new, counts))

    def send_metadata(self, tps: set[TopicPartition] | None = None, deleted: set[str] | None = None,
                      removed: dict[str, list[int]] | None = None) -> None:
        """UpdateMetadata to every live broker: `tps` (all when None), topics being deleted and
        partitions removed."""
        ctx, channel = self.ctx, self.channel
        assert ctx is not None and channel is not None
        replicas = ctx.replicas()
        states = ctx.live_states(tps)
        for bid in sorted(ctx.brokers):
            channel.send(bid, requests.update_metadata(
                self.config.controller_id, ctx.epoch, states, replicas, ctx.brokers, deleted or (),
                ctx.assignments, removed, self.config.allow_internal_partition_increase))

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
