"""`zombie-isr`: KIP-320's rule that a replica the controller marks offline may not join the ISR,
staged so that breaking it loses acknowledged writes.

KIP-320 says why the rule matters: a zombie in the ISR "contributes to the min.isr requirement,
but is not eligible to become leader". So the story needs a topic with `min.insync.replicas=2`
(acks=all writes need two in-sync replicas) that allows unclean elections. Target
`leader-of:<topic>/<p>` of a partition with three replicas: L (its leader), Z (the zombie: a
follower, chosen with the window's pick) and F (the other follower).

1. Z's fetches from L are cut until L drops it from the ISR (a leader's own ISR change: the leader
   epoch stays).
2. Z loses ZooKeeper: its session expires and the controller marks it offline. Z was not in the
   ISR, so no epoch is bumped: Z's fetches, at the current epoch, are not fenced.
3. Z's fetches heal: it catches up with L. Patched, L keeps it out of the ISR (it is offline);
   without the rule it joins (`rejoined`), waited for up to `rejoin_timeout_s`.
4. F's fetches from L are cut until the ISR no longer holds F. Patched the ISR is L alone, below
   min.insync.replicas: every acks=all write is refused. With the zombie in the ISR, writes are
   acknowledged by L and Z for `solo_s` seconds.
5. L is killed. No live replica is in the ISR (Z is offline), so the controller elects F uncleanly:
   F has every write acknowledged while it was in the ISR, and nothing else was acknowledged,
   unless the zombie counted towards min.insync.replicas. Then the writes L and Z acknowledged are
   lost: `lost-write`, judged (the explore's oracle does not excuse this election's losses: the
   story guarantees none in a system that keeps the rule).

`resolved` holds each step's time, `rejoined`, and `elected` (old and new leader). The stop heals
Z's ZooKeeper links and F's fetches and restarts L. Params: `rejoin_timeout_s` (6), `solo_s` (2),
`step_timeout_s` (20).
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Mapping

from chaoskit.cluster.topology import link_name
from chaoskit.cluster.waiting import NotReady, wait_for
from chaoskit.nemesis.base import WindowedFault, check_params
from chaoskit_plugins.faults.cluster_faults import led_partition, zookeeper_links


class ZombieIsrFault(WindowedFault):
    name = "zombie-isr"
    PARAMS = {"rejoin_timeout_s", "solo_s", "step_timeout_s"}

    def start(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        check_params(self.name, params, self.PARAMS)
        ctx, cluster = self.context, self.context.cluster
        topic, partition, leader, followers = led_partition(ctx, self.name, target, pick)
        if len(followers) != 2:
            raise ValueError(f"zombie-isr needs {topic}/{partition} with three replicas; it has "
                             f"{[leader.broker_id, *followers]}")
        zombie, follower = (cluster.brokers[b] for b in (followers[pick % 2], followers[1 - pick % 2]))
        state: dict[str, Any] = {
            "topic": topic, "partition": partition, "leader": leader.broker_id, "zombie": zombie.broker_id,
            "follower": follower.broker_id, "steps": [], "zk_links": zookeeper_links(ctx, zombie),
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
            cut(state["zk_links"])
            step("zombie-offline", lambda: not cluster.view.registered(zombie.broker_id),
                 f"{zombie.name}'s ZooKeeper session expiring", log=zombie.log_path)
            heal(state["fetch_links"][:1])
            try:
                step("zombie-rejoined", lambda: zombie.broker_id in isr(), f"{zombie.name} joining the ISR while offline",
                     float(params.get("rejoin_timeout_s", 6)))
                state["rejoined"] = True
            except NotReady:
                state["rejoined"] = False  # KIP-320 kept it out: the rest still runs and must lose nothing
            cut(state["fetch_links"][1:])
            step("follower-out-of-isr", lambda: follower.broker_id not in isr(),
                 f"{leader.name} dropping {follower.name} from the ISR", log=leader.log_path)
            threading.Event().wait(float(params.get("solo_s", 2)))  # writes are refused, or acknowledged by L and Z
            leader.kill()
            heal(state["fetch_links"][1:])
            step("follower-elected", lambda: (s := cluster.partition_state(topic, partition)) is not None
                 and s.leader == follower.broker_id, f"the controller electing {follower.name} uncleanly",
                 log=follower.log_path)
            state["elected"] = {"from": leader.broker_id, "to": follower.broker_id}
        except BaseException:
            self.stop(state)  # a story cut short heals here: the executor has no state to stop it with
            raise
        return state

    def stop(self, state: dict[str, Any]) -> dict[str, Any]:
        ctx, cluster = self.context, self.context.cluster
        ctx.cutter.heal(state["cut"])
        state["cut"] = []
        leader = cluster.brokers[state["leader"]]
        if not leader.running:
            leader.start(clean=False)
        return state
