"""`zombie-rejoin`: KAFKA-6880's story, staged step by step with clean elections only.

Target `leader-of:<topic>/<p>` of a partition with three replicas: L (its leader), Z (the zombie,
a follower that leads no other partition of the topic when there is one, else chosen with the
window's pick) and M (the other follower).

1. Z loses ZooKeeper (`bZ-zk*` cut): its session expires, the controller drops it from the ISR at
   a new leader epoch and stops telling it anything; Z keeps fetching from L at the epoch it had.
2. Without KIP-320, L serves those stale fetches and lets Z back into the ISR (`rejoined`); with
   it, L answers FENCED_LEADER_EPOCH and keeps Z out (waited for up to `rejoin_timeout_s`).
3. M's fetches are cut (it stays in the ISR: replica.lag.time.max.ms must exceed the few seconds
   this takes) and the fault writes `in_flight` records to L with acks=1, as any producer that
   does not wait for the ISR would: L holds records M lacks (so the high watermark cannot reach
   them), which Z fetches too. Nobody re-sends them, so the offsets they take on L and Z are
   taken by other records on M (producers' in-flight records alone are re-sent, and may land at
   the very offsets Z kept them at, hiding the story).
4. L is killed: the controller elects M, which lacks those records (clean: M is in the ISR). L
   restarts, truncates them as M's follower and rejoins the ISR. Z hears nothing of this.
5. Once M's acknowledged writes cover Z's whole log (its end is read once L is dead and Z can fetch
   nothing more), M is killed and L leads again. Short of Z's end, L's log would end before Z's:
   Z's next fetch would be out of range and it would truncate to L, hiding the story. Z, still at
   its old epoch, resumes fetching from L at its own log end, with no truncation, so those records
   stay in its log; without KIP-320 L lets it into the ISR again.
6. Z's ZooKeeper links heal; it re-registers and is told to follow L (its latest epoch matches
   L's, so nothing is cut), and is in the ISR either way (patched: after an honest catch-up).
7. L is killed: the controller elects Z, the only live replica in the ISR. Unpatched, Z's log
   holds the old unacknowledged records where M's acknowledged writes were: lost writes, with
   clean elections only. Patched, Z was fenced through all of it and its log is L's.

The stop restarts L and M. Each step waits on the cluster's state (the partition znode, Z's
registration, log ends asked with Kafka's debugging replica id) and records how long it took.
Params: `rejoin_timeout_s` (8), `step_timeout_s` (30), `in_flight` (records the fault writes to
L past M's log end before L is killed, 1), `consumers`: `after` holds the workload's consumers for
the whole story (they leave their group, as `clients leave` does) and lets them go once Z leads,
so they read what the story wrote from Z, as a group started after the outage would (the zombie
suite's group joins at the end of its run for the same reason); absent, they read along.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Mapping

from chaoskit.cluster import capabilities as caps
from chaoskit.cluster.topology import link_name
from chaoskit.cluster.waiting import NotReady, wait_for
from chaoskit.nemesis.base import WindowedFault, check_params
from chaoskit.protocol.records import build_batch
from chaoskit.protocol.requests import DEBUGGING_REPLICA_ID, nemesis_client, produce
from chaoskit_plugins.faults.clients import restartable
from chaoskit_plugins.faults.cluster_faults import answered_offset, led_partition, replica_offset, zookeeper_links
from chaoskit_plugins.faults.zombie_isr import zombie_first


class ZombieRejoinFault(WindowedFault):
    name = "zombie-rejoin"
    needs = frozenset({caps.CONTROLLERS, caps.ZOOKEEPER})
    PARAMS = {"rejoin_timeout_s", "step_timeout_s", "in_flight", "consumers"}

    def start(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        check_params(self.name, params, self.PARAMS)
        ctx, cluster = self.context, self.context.cluster
        topic, partition, leader, followers = led_partition(ctx, self.name, target, pick)
        if len(followers) != 2:
            raise ValueError(f"zombie-rejoin needs {topic}/{partition} with three replicas; it has "
                             f"{[leader.broker_id, *followers]}")
        # a follower leading none of the topic's partitions when there is one: a zombie *leader* of
        # another partition would stall the producers there (the `zombie` fault's story, not this one)
        followers = zombie_first(cluster, topic, partition, followers, pick)
        zombie, other = cluster.brokers[followers[0]], cluster.brokers[followers[1]]
        state: dict[str, Any] = {
            "topic": topic, "partition": partition, "leader": leader.broker_id, "zombie": zombie.broker_id,
            "other": other.broker_id, "steps": [], "zk_links": zookeeper_links(ctx, zombie)}
        if params.get("consumers") not in (None, "after"):
            raise ValueError(f"zombie-rejoin: consumers {params['consumers']!r} is not after")
        held = restartable(ctx.clients) if params.get("consumers") == "after" else []
        for c in held:  # they leave the group now and read again from their commits once Z leads
            c.hold()
            c.restart_consumer()
        try:
            _Story(self, state, params, leader, zombie, other).play()
        except BaseException:
            self.stop(state)  # a story cut short heals here: the executor has no state to stop it with
            raise
        finally:
            for c in held:
                c.release()
        return state

    def stop(self, state: dict[str, Any]) -> dict[str, Any]:
        ctx, cluster = self.context, self.context.cluster
        if state.pop("zk_cut", False):
            ctx.cutter.heal(state["zk_links"])
        for broker_id in (state["leader"], state["other"]):
            node = cluster.brokers[broker_id]
            if not node.running:
                node.start(clean=False)
        return state


class _Story:
    def __init__(self, fault: ZombieRejoinFault, state: dict[str, Any], params: Mapping[str, Any],
                 leader: Any, zombie: Any, other: Any) -> None:
        self.ctx, self.cluster, self.state = fault.context, fault.context.cluster, state
        self.topic, self.partition = state["topic"], state["partition"]
        self.leader, self.zombie, self.other = leader, zombie, other
        self.rejoin_timeout = float(params.get("rejoin_timeout_s", 8))
        self.timeout = float(params.get("step_timeout_s", 30))
        self.in_flight = int(params.get("in_flight", 1))
        self._began = time.monotonic()

    # --- what the story waits on -----------------------------------------------------------------
    def _partition(self) -> Any:
        return self.cluster.partition_state(self.topic, self.partition)

    def _in_isr(self, broker: Any) -> bool:
        s = self._partition()
        return s is not None and broker.broker_id in s.isr

    def _dropped(self, broker: Any, before: Any) -> bool:
        """The controller has taken `broker` out of the ISR since `before`. Its write bumps the leader
        epoch; a leader letting the broker back (unpatched, within milliseconds) does not, so a
        readmitted zombie still counts."""
        s = self._partition()
        return s is not None and (broker.broker_id not in s.isr or
                                  (before is not None and s.leader_epoch > before.leader_epoch))

    def _led_by(self, broker: Any) -> bool:
        s = self._partition()
        return s is not None and s.leader == broker.broker_id

    def _log_end(self, broker: Any) -> int:
        return replica_offset(broker, self.topic, self.partition, DEBUGGING_REPLICA_ID)

    def _high_watermark(self, broker: Any) -> int:
        return replica_offset(broker, self.topic, self.partition)

    def _step(self, name: str, condition: Callable[[], Any], what: str, log: Any = None,
              timeout: float | None = None) -> Any:
        got = wait_for(condition, self.timeout if timeout is None else timeout, what, log)
        self.state["steps"].append([name, round(time.monotonic() - self._began, 2)])
        return got

    def _kill_and_elect(self, victim: Any, heir: Any, why: str) -> None:
        victim.kill()
        self._step(why, lambda: self._led_by(heir),
                   f"the controller electing {heir.name} for {self.topic}/{self.partition} after {victim.name} died",
                   heir.log_path)

    # --- the story ---------------------------------------------------------------------------------
    def play(self) -> None:
        L, Z, M, s = self.leader, self.zombie, self.other, self.state
        before = self._partition()
        self.ctx.cutter.cut(s["zk_links"])
        s["zk_cut"] = True
        self._step("zombie-expired", lambda: not self.cluster.view.registered(Z.broker_id) and self._dropped(Z, before),
                   f"{Z.name}'s session expiring and the controller dropping it from the ISR", Z.log_path)
        try:
            self._step("zombie-rejoined", lambda: self._in_isr(Z), f"{L.name} letting zombie {Z.name} into the ISR",
                       timeout=self.rejoin_timeout)
            s["rejoined"] = True
        except NotReady:
            s["rejoined"] = False  # fenced (KIP-320): the rest still runs, and must lose nothing
        fetch = [link_name(M.name, L.name)]
        self.ctx.cutter.cut(fetch)
        try:
            s["written"] = self._step("written-past-follower", self._write_past_follower,
                                      f"{L.name} taking {self.in_flight} record(s) with acks=1", L.log_path)
            s["diverged_to"] = self._step("records-the-follower-lacks", self._held_past_follower,
                                          f"{L.name} holding {self.in_flight} record(s) {M.name} lacks"
                                          + (f", fetched by {Z.name}" if s["rejoined"] else ""), L.log_path)
            self._kill_and_elect(L, M, "lagging-follower-elected")
        finally:
            self.ctx.cutter.heal(fetch)
        # with L dead Z fetches nothing more; its log also holds what producers sent L after the
        # fault's records (never acknowledged)
        s["zombie_end"] = answered_offset(Z, self.topic, self.partition, DEBUGGING_REPLICA_ID, self.timeout)
        L.start(clean=False)
        self._step("old-leader-back", lambda: self._in_isr(L), f"{L.name} truncating and rejoining the ISR",
                   L.log_path)
        covered = max(s["diverged_to"] + 1, s["zombie_end"])
        self._step("offsets-overwritten", lambda: self._high_watermark(M) >= covered,
                   f"{M.name}'s high watermark reaching {covered}", M.log_path)
        self._kill_and_elect(M, L, "old-leader-elected")
        if s["rejoined"]:
            self._step("zombie-rejoined-again", lambda: self._in_isr(Z),
                       f"{L.name} letting zombie {Z.name} into the ISR again", L.log_path)
        del s["zk_cut"]
        self.ctx.cutter.heal(s["zk_links"])
        self._step("zombie-registered", lambda: self.cluster.view.registered(Z.broker_id) and self._in_isr(Z),
                   f"{Z.name} registering again and in the ISR", Z.log_path)
        self._kill_and_elect(L, Z, "zombie-elected")

    def _write_past_follower(self) -> list[int] | None:
        """`in_flight` records written to L with acks=1: [first, last] offset, or None to retry."""
        # keyed: a compacted topic refuses a record without a key
        batch = build_batch([(b"zombie-rejoin-%d" % n,
                              b'"zombie-rejoin: written to %s with acks=1, %d"' % (self.leader.name.encode(), n))
                             for n in range(self.in_flight)])
        with nemesis_client(self.leader.address) as client:
            answer = produce(client, self.topic, self.partition, batch, acks=1)
        if answer is None or answer.error_code:
            return None
        return [int(answer.base_offset), int(answer.base_offset) + self.in_flight - 1]

    def _held_past_follower(self) -> int | None:
        """L's log end once M's own log is known to end before the fault's records (M may hold more
        than the high watermark says: what its last fetch brought) and, unpatched, Z has fetched
        up to that end; else None."""
        end = self._log_end(self.leader)
        if self._log_end(self.other) > self.state["written"][0]:
            return None
        if self.state["rejoined"] and self._log_end(self.zombie) < end:
            return None
        return end
