"""`zombie-isr`: KIP-320's rule that a replica the controller marks offline may not join the ISR,
staged so that breaking it loses acknowledged writes.

KIP-320 says why the rule matters: a zombie in the ISR "contributes to the min.isr requirement,
but is not eligible to become leader". So the story needs a topic with `min.insync.replicas=2`
(acks=all writes need two in-sync replicas) that allows unclean elections. Target
`leader-of:<topic>/<p>` of a partition with three replicas: L (its leader), Z (the zombie: a
follower leading no other partition of the topic when there is one, else chosen with the window's
pick) and F (the other follower).

1. Z's fetches from L are cut until L drops it from the ISR (a leader's own ISR change: the leader
   epoch stays).
2. Z loses ZooKeeper: its session expires and the controller marks it offline. Z was not in the
   ISR, so no epoch is bumped: Z's fetches, at the current epoch, are not fenced. A Z that leads
   another partition loses its clients' links too (`client_links`), or the producers' sends there
   would wait on a zombie leader for the rest of the story.
3. Z's fetches heal: it catches up with L. Patched, L keeps it out of the ISR (it is offline);
   without the rule it joins (`rejoined`), waited for up to `rejoin_timeout_s`.
4. The producers pause (a record appended while F is in the ISR but no longer fetching is never
   acknowledged, yet readable once F is dropped: only acknowledged writes are the story's), F's
   fetches from L are cut until the ISR has not held F for `solo_s` seconds in a row, and the
   producers go on. Patched
   the ISR is L alone, below min.insync.replicas: every acks=all write is refused. With the zombie
   in the ISR, L and Z acknowledge writes meanwhile: the story waits up to `solo_timeout_s` for L's
   high watermark to move (`acknowledged_without_follower`; never, patched), then `solo_s` more
   for the acknowledgements to reach the producers.
5. L is killed. No live replica is in the ISR (Z is offline), so the controller elects F uncleanly:
   F has every write acknowledged while it was in the ISR, and nothing else was acknowledged,
   unless the zombie counted towards min.insync.replicas. Then the writes L and Z acknowledged are
   lost: F takes new records at their offsets (`inconsistent-offsets`: an acknowledged offset
   holding another record; `unseen` or `lost-write` when no consumer had read them). The explore's
   oracle does not excuse this election's losses: the story allows none in a system that keeps
   the rule.

`resolved` holds each step's time, `rejoined`, `acknowledged_without_follower` and `elected` (old
and new leader). The stop heals Z's ZooKeeper (and client) links and F's fetches and restarts L. Params:
`rejoin_timeout_s` (6), `solo_s` (2), `solo_timeout_s` (10), `step_timeout_s` (20).
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Mapping

from chaoskit.cluster import capabilities as caps
from chaoskit.cluster.topology import link_name
from chaoskit.cluster.waiting import NotReady, wait_for
from chaoskit.nemesis.base import WindowedFault, check_params
from chaoskit_plugins.faults.cluster_faults import led_partition, replica_offset, zookeeper_links


def leaders_of_others(cluster: Any, topic: str, partition: int) -> set[int]:
    """The brokers leading the topic's other partitions now."""
    states = [cluster.partition_state(topic, p) for p in cluster.view.assignment(topic) or {} if p != partition]
    return {s.leader for s in states if s is not None}


def zombie_first(cluster: Any, topic: str, partition: int, followers: list[int], pick: int) -> list[int]:
    """The two followers, the zombie first: one that leads no other partition of the topic when there
    is one (a zombie *leader* would hold up the producers writing there, synchronous ones altogether,
    until their requests time out), else chosen with the pick."""
    leading = leaders_of_others(cluster, topic, partition)
    order = {r: (i + pick) % 2 for i, r in enumerate(followers)}
    return sorted(followers, key=lambda r: (r in leading, order[r]))


PAUSE_S = 0.5  # how long the producers' sends in flight get to complete before F's fetches are cut


class ZombieIsrFault(WindowedFault):
    name = "zombie-isr"
    needs = frozenset({caps.CONTROLLERS, caps.ZOOKEEPER})
    PARAMS = {"rejoin_timeout_s", "solo_s", "solo_timeout_s", "step_timeout_s"}

    def start(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        check_params(self.name, params, self.PARAMS)
        ctx, cluster = self.context, self.context.cluster
        topic, partition, leader, followers = led_partition(ctx, self.name, target, pick)
        if len(followers) != 2:
            raise ValueError(f"zombie-isr needs {topic}/{partition} with three replicas; it has "
                             f"{[leader.broker_id, *followers]}")
        zombie, follower = (cluster.brokers[b] for b in zombie_first(cluster, topic, partition, followers, pick))
        state: dict[str, Any] = {
            "topic": topic, "partition": partition, "leader": leader.broker_id, "zombie": zombie.broker_id,
            "follower": follower.broker_id, "steps": [], "zk_links": zookeeper_links(ctx, zombie),
            # a zombie that leads another partition (every follower does, with more partitions than
            # brokers) would hold the producers' acks=all sends there until the story ends: the
            # clients lose it with its session, and go to the leaders the controller elects instead
            "client_links": [link_name("client", zombie.name)]
            if zombie.broker_id in leaders_of_others(cluster, topic, partition) else [],
            "fetch_links": [link_name(zombie.name, leader.name), link_name(follower.name, leader.name)], "cut": []}
        began = time.monotonic()
        timeout = float(params.get("step_timeout_s", 20))

        def step(name: str, condition: Callable[[], Any], what: str, within: float = timeout, log: Any = None) -> None:
            wait_for(condition, within, what, log)
            state["steps"].append([name, round(time.monotonic() - began, 2)])

        def isr() -> list[int]:
            s = cluster.partition_state(topic, partition)
            return s.isr if s is not None else []

        def cut(links: list[str]) -> None:
            ctx.cutter.cut(links)
            state["cut"] += links

        def heal(links: list[str]) -> None:
            ctx.cutter.heal(links)
            state["cut"] = [x for x in state["cut"] if x not in links]

        try:
            cut(state["fetch_links"][:1])
            step("zombie-out-of-isr", lambda: zombie.broker_id not in isr(),
                 f"{leader.name} dropping {zombie.name} from the ISR of {topic}/{partition}", log=leader.log_path)
            cut(state["zk_links"] + state["client_links"])
            step("zombie-offline", lambda: not cluster.view.registered(zombie.broker_id),
                 f"{zombie.name}'s ZooKeeper session expiring", log=zombie.log_path)
            heal(state["fetch_links"][:1])
            try:
                step("zombie-rejoined", lambda: zombie.broker_id in isr(), f"{zombie.name} joining the ISR while offline",
                     float(params.get("rejoin_timeout_s", 6)))
                state["rejoined"] = True
            except NotReady:
                state["rejoined"] = False  # KIP-320 kept it out: the rest still runs and must lose nothing
            # the producers pause while F leaves: a record appended while F is in the ISR but not
            # fetching is never acknowledged, yet readable once F is dropped, and the unclean
            # election would replace it; only acknowledged writes are the story's
            producers = [c for c in ctx.clients if hasattr(c, "hold_sends")]
            for c in producers:
                c.hold_sends()
            state["held"] = True
            threading.Event().wait(PAUSE_S)  # the sends in flight complete
            cut(state["fetch_links"][1:])
            # out of the ISR for solo_s in a row (a fetch in flight when its link was cut can add it back
            # once): meanwhile writes are refused, or acknowledged by L and the zombie
            solo, since = float(params.get("solo_s", 2)), [None]

            def out_for_solo() -> bool:
                if follower.broker_id in isr():
                    since[0] = None
                    return False
                since[0] = since[0] or time.monotonic()
                return time.monotonic() - since[0] >= solo
            step("follower-out-of-isr", out_for_solo, f"{leader.name} keeping {follower.name} out of the ISR for {solo} s",
                 timeout + solo, log=leader.log_path)
            self._release(state)
            # then writes acknowledged without the follower, if any come: never patched (the leader
            # alone is below min.insync.replicas), soon with a zombie counted (waited for, up to
            # solo_timeout_s, so that producers held up by the stall before the follower left resume)
            mark = replica_offset(leader, topic, partition)
            try:
                wait_for(lambda: replica_offset(leader, topic, partition) > mark,
                         float(params.get("solo_timeout_s", 10)), f"writes {leader.name} acknowledges without {follower.name}")
                state["acknowledged_without_follower"] = True
                threading.Event().wait(solo)  # their answers reach the producers before the leader dies
            except NotReady:
                state["acknowledged_without_follower"] = False
            leader.kill()
            heal(state["fetch_links"][1:])
            step("follower-elected", lambda: (s := cluster.partition_state(topic, partition)) is not None
                 and s.leader == follower.broker_id, f"the controller electing {follower.name} uncleanly",
                 log=follower.log_path)
            state["elected"] = {"from": leader.broker_id, "to": follower.broker_id}
        except BaseException:
            self.stop(state)  # a story cut short heals here (and lets the producers go)
            raise
        return state

    def _release(self, state: dict[str, Any]) -> None:
        if state.pop("held", False):
            for c in self.context.clients:
                if hasattr(c, "release_sends"):
                    c.release_sends()

    def stop(self, state: dict[str, Any]) -> dict[str, Any]:
        ctx, cluster = self.context, self.context.cluster
        self._release(state)
        ctx.cutter.heal(state["cut"])
        state["cut"] = []
        leader = cluster.brokers[state["leader"]]
        if not leader.running:
            leader.start(clean=False)
        return state
