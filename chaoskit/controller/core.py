"""What the controller's event handlers share: the active controller's state (the context read
from ZooKeeper, the channel to brokers) and the steps every handler takes with it -- queue an event,
read a topic or a partition state, decide partition states, write them fenced by the controller
epoch, tell brokers. The handler modules (topics.py, topic_changes.py, partition_deletion.py) act
on a ControllerCore; controller.py's Controller is one, with the event thread, election and
failover on top, so the handlers never import the file that calls them.
"""
from __future__ import annotations

import logging
import queue
from collections.abc import Callable
from typing import Any

from chaoskit.controller import requests
from chaoskit.controller.channel import ControllerChannel
from chaoskit.controller.config import ControllerConfig
from chaoskit.controller.context import ControllerContext, TopicPartition
from chaoskit.controller.failpoints import Failpoints
from chaoskit.controller.partition_state import initial_state, next_state, unclean_enabled
from chaoskit.controller.zk_store import ControllerZk, StateConflict
from chaoskit.protocol import zk_layout as zl

log = logging.getLogger("chaoskit.controller")


class ControllerCore:
    def __init__(self, config: ControllerConfig, zk: ControllerZk, failpoints: Failpoints) -> None:
        self.config = config
        self.zk = zk
        self.failpoints = failpoints
        self.ctx: ControllerContext | None = None  # set while active
        self.channel: ControllerChannel | None = None
        self._events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._watchers: dict[tuple[str, Any], Callable[[Any], None]] = {}

    # --- events ------------------------------------------------------------------------------
    def post(self, name: str, arg: Any = None) -> None:
        self._events.put((name, arg))

    def watch(self, name: str, arg: Any = None) -> Callable[[Any], None]:
        """One watcher function per event, so kazoo (which keeps a set) calls it once per change."""
        key = (name, arg)
        if key not in self._watchers:
            self._watchers[key] = lambda _event: self.post(name, arg)
        return self._watchers[key]

    def load_topic(self, topic: str, all_states: bool = False) -> set[TopicPartition]:
        """Read a topic's assignment (watching it) and the partition states not yet known (every one
        with all_states); its partitions."""
        ctx = self.ctx
        assert ctx is not None
        try:
            got = self.zk.assignment(topic, self.watch("assignment_change", topic))
        except zl.ZkDataError as e:  # its watch is set: a repaired znode is read again
            log.error("ignoring topic %s: %s", topic, e)
            return set()
        if got is None:
            return set()
        ctx.assignments[topic], ctx.assignment_versions[topic] = got
        tps = {(topic, p) for p in got[0].partitions}
        for tp in sorted(tps if all_states else tps - set(ctx.states)):
            self.reload_state(tp)
        return tps

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
        if self.load_topic(topic, all_states=True):
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
