"""Faults that stage a known failure story, step by step, each step waiting on the cluster's state.

- `zombie` (KAFKA-6880): the target broker loses ZooKeeper (its `bN-zkM` links are cut) while its
  replication and client links stay up. Its session expires, the controller moves its leaderships
  and drops it from ISRs at new leader epochs, yet it keeps fetching with the epochs it had:
  patched leaders answer FENCED_LEADER_EPOCH and keep it out of the ISR (KIP-320).
  Params: `wait_expiry` (default true: the start op returns once /brokers/ids/N is gone),
  `timeout_s` (30).
- `unclean-election` (target `leader-of:<topic>/<p>`): cut the followers' fetch links to the
  leader until the ISR shrinks to the leader alone, let acknowledged writes land on it alone
  (`solo_writes`, default 1, waited for up to `solo_timeout_s`), then kill the leader (`mode`
  `kill`, default) or cut it off entirely (`isolate`) and heal the followers' links, so the
  controller elects an out-of-sync replica (with `unclean.leader.election.enable`; without it
  the partition goes offline, which the op records). At the window's end the old leader returns
  and must truncate what it alone had (`wait_rejoin`, default true: until it is back in the ISR).
  `consumers` stages KIP-320's story by the consumers' state when the leader changes:
  `reading`: once a consumer has read the writes the leader alone had (up to `read_timeout_s`,
  10), the consumers stop consuming (`hold()`) until the new leader's log has grown past where
  they stopped (up to `grow_timeout_s`, 20): a consumer that does not validate its position then
  reads on from it, past the records that replaced the ones it read; `lagging`: they stop before
  the leader's solo writes, so they read none of what the election replaces, and go on once the
  new leader has grown; `idle`: they read the solo writes, then the producers stop for `idle_s`
  (5) so the consumers poll empty fetches while the leader changes; `restarted`: they read the
  solo writes, commit and close, and new consumers start from the committed offsets (with
  KIP-320's leader epoch in OffsetCommit and OffsetFetch) once the new leader has grown.
  Each window that elected a leader uncleanly records the step `elected-uncleanly` (with the new
  leader epoch), so a suite can ask for evidence of as many elections as its story stages.
- `stale-metadata`: the controllers cannot reach the target broker (`ctlN-bX` cut), so it keeps
  serving the leaders, epochs and partition counts it last heard while the cluster moves on.
- `freeze-client-metadata`: the workload's clients stop refreshing metadata (each client that
  has `freeze_metadata()`/`thaw_metadata()`; the target is `client`).
- `admin`: a scheduled admin change: `op` `expand` or `shrink`, `topic`, `to` (a count) or `by`
  (a change, e.g. 2 or -2), `delay_ms` (shrink: KIP-694's delay; absent: removed once empty),
  `immediate` (shrink: KIP-694's immediate_delete, removed at once), `written_within_s` (shrink:
  first wait up to that long for `written_records`, default 1, acknowledged records on the
  partitions it removes), `removed_within_s` (expand: first wait for the marked partitions to
  go). It reads the topic from a broker whose Metadata agrees with ZooKeeper (one a fault cut off
  from the controller may still show the count before the last change).
"""
from __future__ import annotations

import threading
from typing import Any, Mapping

from chaoskit.cluster import capabilities as caps
from chaoskit.cluster.topology import link_name
from chaoskit.cluster.waiting import NotReady, wait_for
from chaoskit.nemesis.base import WindowedFault, check_params
from chaoskit.nemesis.link_sets import isolate
from chaoskit.nemesis.resolve import ELECTION_WITHIN_S
from chaoskit.nemesis.targets import parse_target
from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.requests import DEBUGGING_REPLICA_ID, latest_offset
from chaoskit.protocol.wire_client import WireError
from chaoskit.protocol.zk_layout import NO_LEADER


def _broker(ctx: Any, target: str, pick: int) -> Any:
    node = ctx.node(ctx.resolve(target, pick))
    if node.role != "broker":
        raise ValueError(f"target {target!r} names {node.name}, not a broker")
    return node


def replica_offset(broker: Any, topic: str, partition: int, replica_id: int = -1) -> int:
    """The broker's high watermark (replica_id -1) or its own log end (DEBUGGING_REPLICA_ID) for the
    partition; NotReady when it answers with an error (a wait_for condition takes that as "not yet")."""
    answer = latest_offset(broker.address, topic, partition, replica_id)
    if answer.error_code:
        raise NotReady(f"{broker.name} answered ListOffsets with error {answer.error_code}")
    return int(answer.offset)


def answered_offset(broker: Any, topic: str, partition: int, replica_id: int = -1, timeout_s: float = 5.0) -> int:
    """replica_offset, asked again (for up to `timeout_s`) while the broker answers with an error."""
    return wait_for(lambda: [replica_offset(broker, topic, partition, replica_id)], timeout_s,
                    f"{broker.name}'s offset of {topic}/{partition}", broker.log_path)[0]  # listed: 0 is an answer


def zookeeper_links(ctx: Any, broker: Any) -> list[str]:
    """The broker's links to the ZooKeeper ensemble: cut them all and its session expires."""
    return [l.name for l in ctx.links if l.source == broker.name and l.target.startswith("zookeeper-")]


def led_partition(ctx: Any, fault: str, target: str, pick: int) -> tuple[str, int, Any, list[int]]:
    """A `leader-of:<topic>/<p>` target as it stands now: topic, partition, the leading broker and
    the ids of the partition's other replicas. Faults staged around one partition start here."""
    t = parse_target(target)
    if t.kind != "leader-of":
        raise ValueError(f"{fault} needs a target leader-of:<topic>/<partition>, got {target!r}")
    assert t.topic is not None and t.partition is not None
    leader = _broker(ctx, target, pick)
    replicas = (ctx.cluster.view.assignment(t.topic) or {}).get(t.partition, [])
    return t.topic, t.partition, leader, [r for r in replicas if r != leader.broker_id]


class ZombieFault(WindowedFault):
    name = "zombie"
    needs = frozenset({caps.ZOOKEEPER})

    def start(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        check_params(self.name, params, {"wait_expiry", "timeout_s", "how"})
        ctx = self.context
        broker = _broker(ctx, target, pick)
        links = zookeeper_links(ctx, broker)
        how = params.get("how", "refuse")
        ctx.cutter.cut(links, how)
        state: dict[str, Any] = {"broker": broker.broker_id, "node": broker.name, "links": links, "how": how}
        if params.get("wait_expiry", True):
            view = ctx.cluster.view
            wait_for(lambda: not view.registered(broker.broker_id), float(params.get("timeout_s", 30)),
                     f"{broker.name}'s ZooKeeper session expiring after its ZooKeeper links were cut",
                     broker.log_path)
            state["expired"] = True
        return state

    def stop(self, state: dict[str, Any]) -> None:
        self.context.cutter.heal(state["links"], state["how"])


class UncleanElectionFault(WindowedFault):
    name = "unclean-election"
    needs = frozenset({caps.CONTROLLERS, caps.ZOOKEEPER})
    PARAMS = {"mode", "solo_writes", "solo_timeout_s", "isr_timeout_s", "elect_timeout_s", "wait_rejoin",
              "rejoin_timeout_s", "consumers", "read_timeout_s", "grow_timeout_s", "idle_s"}
    STORIES = (None, "reading", "lagging", "idle", "restarted")

    def start(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        try:
            return self._stage(target, params, pick)
        except BaseException:
            self._let_go()  # a story cut short never leaves clients held
            raise

    def _let_go(self) -> None:
        for c in self._consumers():
            c.release()
            c.release_sends()

    def _stage(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        check_params(self.name, params, self.PARAMS)
        mode, story = params.get("mode", "kill"), params.get("consumers")
        if mode not in ("kill", "isolate"):
            raise ValueError(f"unclean-election: mode {mode!r} is not kill or isolate")
        if story not in self.STORIES:
            raise ValueError(f"unclean-election: consumers {story!r} is not one of {', '.join(map(str, self.STORIES))}")
        ctx, cluster = self.context, self.context.cluster
        topic, partition, leader, followers = led_partition(ctx, self.name, target, pick)
        fetch_links = [link_name(cluster.brokers[f].name, leader.name) for f in followers]
        ctx.cutter.cut(fetch_links)
        state: dict[str, Any] = {"topic": topic, "partition": partition, "broker": leader.broker_id,
                                 "node": leader.name, "mode": mode, "isolated": []}
        try:
            shrunk = wait_for(lambda: (s := cluster.partition_state(topic, partition)) and
                              s.leader == leader.broker_id and s.isr == [leader.broker_id] and s,
                              float(params.get("isr_timeout_s", 30)),
                              f"the ISR of {topic}/{partition} shrinking to its leader {leader.name}", leader.log_path)
            state["solo_epoch"] = shrunk.leader_epoch
            state["solo_from"] = base = self._furthest_follower(leader, followers, topic, partition)
            if story == "lagging":
                state["read_to"] = self._hold_consumers(topic, partition, -1, 0)
            want = base + int(params.get("solo_writes", 1))
            try:
                wait_for(lambda: replica_offset(leader, topic, partition) >= want,
                         float(params.get("solo_timeout_s", 15)), f"writes acknowledged by {leader.name} alone")
            except NotReady:
                pass  # no workload wrote meanwhile: the election is still unclean, only nothing diverges
            state["solo_to"] = answered_offset(leader, topic, partition)
            if story in ("reading", "idle", "restarted"):
                state["read_to"] = self._hold_consumers(topic, partition, state["solo_to"],
                                                        float(params.get("read_timeout_s", 10)),
                                                        hold=story != "idle", restart=story == "restarted")
            if story == "idle":  # the consumers go on polling, and get nothing: nothing is written
                for c in self._consumers():
                    c.hold_sends()
                threading.Event().wait(float(params.get("idle_s", 5)))  # the story's idle stretch, by design
            if mode == "kill":
                leader.kill()
            else:
                state["isolated"] = [l.name for l in isolate(ctx.links, leader.name)]
                ctx.cutter.cut(state["isolated"])
        finally:
            ctx.cutter.heal(fetch_links)
        after = wait_for(lambda: (s := cluster.partition_state(topic, partition)) and s.leader != leader.broker_id
                         and s, float(params.get("elect_timeout_s", 30)),
                         f"the controller replacing {leader.name} as leader of {topic}/{partition}")
        state["new_leader"] = after.leader
        state["new_epoch"] = after.leader_epoch
        state["unclean"] = after.leader != NO_LEADER
        # the evidence a suite asks for ({"unclean-election": {"steps": n}}): one step per election that happened
        state["steps"] = [["elected-uncleanly", after.leader_epoch]] if state["unclean"] else []
        if story == "idle":
            for c in self._consumers():
                c.release_sends()
        elif story is not None:
            state["released_at"] = self._release_consumers(topic, partition, after.leader, state["read_to"],
                                                           float(params.get("grow_timeout_s", 20)))
        state["wait_rejoin"] = params.get("wait_rejoin", True)
        state["rejoin_timeout_s"] = float(params.get("rejoin_timeout_s", 60))
        return state

    def _consumers(self) -> list[Any]:
        return [c for c in self.context.clients if hasattr(c, "hold") and hasattr(c, "delivered_to")]

    def _hold_consumers(self, topic: str, partition: int, solo_to: int, timeout_s: float, hold: bool = True,
                        restart: bool = False) -> int:
        """Once a consumer has read the leader's solo writes (or the timeout passed), hold them all
        (`hold`; and close their consumers, `restart`); where they read to (-1: nowhere: nothing was
        read into, which the check's evidence shows)."""
        consumers = self._consumers()
        if not consumers:
            raise ValueError("unclean-election: consumers needs clients that can hold (the built-in ones can)")

        def read_to() -> int:
            return max(c.delivered_to(topic, partition) for c in consumers)
        try:
            wait_for(lambda: read_to() >= solo_to - 1, timeout_s, f"a consumer reading {topic}/{partition} to {solo_to}")
        except NotReady:
            pass  # the election goes on; the run's evidence says nobody read into what it truncates
        for c in consumers if hold else ():
            c.hold()
            if restart:
                c.restart_consumer()
        return read_to()

    def _release_consumers(self, topic: str, partition: int, new_leader: int, read_to: int, timeout_s: float) -> int:
        """Release the held consumers once the new leader's log holds records past where they read
        (or the timeout passed); the new leader's high watermark then."""
        cluster = self.context.cluster
        try:
            if new_leader in cluster.brokers:
                wait_for(lambda: replica_offset(cluster.brokers[new_leader], topic, partition) > read_to + 1,
                         timeout_s, f"{topic}/{partition}'s new leader holding records past offset {read_to}")
        except NotReady:
            pass
        finally:
            for c in self._consumers():
                c.release()
        try:
            return replica_offset(cluster.brokers[new_leader], topic, partition) if new_leader in cluster.brokers else -1
        except (WireError, NotReady):
            return -1

    def _furthest_follower(self, leader: Any, followers: list[int], topic: str, partition: int) -> int:
        """Where the cut followers' logs end (asked as Kafka's debugging replica): past it, the records
        are the leader's alone. Not the leader's high watermark when the ISR shrank: the leader
        raises that only once it has applied the shrink it wrote to ZooKeeper."""
        cluster, ends = self.context.cluster, []
        for f in followers:
            try:
                ends.append(replica_offset(cluster.brokers[f], topic, partition, DEBUGGING_REPLICA_ID))
            except (WireError, NotReady):
                continue  # a follower that is down (or does not have the partition) cannot be elected now
        return max(ends) if ends else replica_offset(leader, topic, partition)

    def stop(self, state: dict[str, Any]) -> dict[str, Any]:
        ctx, cluster = self.context, self.context.cluster
        self._let_go()  # never leave a client held past its window
        leader = cluster.brokers[state["broker"]]
        if state["mode"] == "kill":
            if not leader.running:
                leader.start(clean=False)
        else:
            ctx.cutter.heal(state["isolated"])
        if state["wait_rejoin"] and state["unclean"]:
            wait_for(lambda: (s := cluster.partition_state(state["topic"], state["partition"])) and
                     leader.broker_id in s.isr, state["rejoin_timeout_s"],
                     f"{leader.name} rejoining the ISR of {state['topic']}/{state['partition']}", leader.log_path)
            return {**state, "rejoined": True}
        return state


class StaleMetadataFault(WindowedFault):
    name = "stale-metadata"
    needs = frozenset({caps.CONTROLLERS})

    def start(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        check_params(self.name, params, {"how"})
        ctx = self.context
        broker = _broker(ctx, target, pick)
        links = [l.name for l in ctx.links if l.target == broker.name and l.source.startswith("controller-")]
        how = params.get("how", "refuse")
        ctx.cutter.cut(links, how)
        return {"broker": broker.broker_id, "node": broker.name, "links": links, "how": how}

    def stop(self, state: dict[str, Any]) -> None:
        self.context.cutter.heal(state["links"], state["how"])


FREEZE = ("freeze_metadata", "thaw_metadata")


def freezable(clients: list[Any]) -> list[Any]:
    """The clients that can stop refreshing metadata (`freeze_metadata()`/`thaw_metadata()`)."""
    return [c for c in clients if all(hasattr(c, m) for m in FREEZE)]


class FreezeClientMetadataFault(WindowedFault):
    name = "freeze-client-metadata"
    client_needs = FREEZE

    def _clients(self) -> list[Any]:
        able = freezable(self.context.clients)
        if not able:
            raise ValueError("freeze-client-metadata: none of the run's clients can freeze its metadata "
                             "(it needs freeze_metadata()/thaw_metadata(), as the ordered client has)")
        return able

    def start(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        check_params(self.name, params, set())
        clients = self._clients()
        for c in clients:
            c.freeze_metadata()
        return {"clients": len(clients)}

    def stop(self, state: dict[str, Any]) -> None:
        for c in self._clients():
            c.thaw_metadata()


ADMIN_RETRY_S = 30.0
CURRENT_WITHIN_S = 10.0


def retry_until_refused(attempt: Any, refused: list[Exception], within_s: float, what: str) -> Any:
    """`attempt()` every half second until it returns something (its errors are "not yet"), for up
    to `within_s`; a refusal it appends to `refused` ends the retries at once and is raised."""
    try:
        return wait_for(attempt, within_s, what, interval=0.5, abort=lambda: "refused" if refused else None)
    except NotReady:
        if refused:
            raise refused[0] from None
        raise


def current_topic(admin: Any, cluster: Any, topic: str, within_s: float = CURRENT_WITHIN_S) -> Any:
    """`topic` as Metadata shows it, once the broker asked agrees with ZooKeeper on its partitions,
    undeleted count and marked partitions. A broker a fault cut off from the controller answers from
    what it last heard, as Kafka's does, and an operator acting on that would shrink or drain by a
    count the topic no longer has: each disagreement moves the admin client on to the next broker."""
    view = cluster.view

    def agreed() -> tuple[Any] | None:
        info = admin.topic(topic)
        assignment = view.topic(topic)
        if assignment is None:
            return None
        states = {p: view.state(topic, p) for p in assignment.partitions}
        marked = sorted(p for p, s in states.items() if s is not None and s.marked_for_deletion)
        counted = None in (info.undeleted_partition_count, assignment.undeleted_partition_count) or \
            info.undeleted_partition_count == assignment.undeleted_partition_count
        if set(info.partitions) == set(assignment.partitions) and counted and info.marked_for_deletion == marked:
            return (info,)
        admin.start_from_next_broker()
        return None

    return wait_for(agreed, within_s, f"a broker whose Metadata of {topic} agrees with ZooKeeper", interval=0.25)[0]


def _made(admin: Any, op: str, topic: str, count: int) -> dict[int, Any] | None:
    """The change as the topic shows it made ({} or a shrink's marked partitions and modes); None if not."""
    info = admin.topic(topic)
    if op == "expand":
        return {} if len(info.partitions) >= count else None
    if info.undeleted_partition_count == count:
        return {p: info.partitions[p].mode for p in info.marked_for_deletion}
    return None


# how long a retry refused as already done (INVALID_PARTITIONS) waits for metadata to show the
# change: the refusal read ZooKeeper, so the change is made; after a controller failover the
# brokers' metadata shows it once the new controller is elected and sends it, so as long as a
# target waits for that election (5 s was seen too short in CI); expand_batch.py waits as long
SETTLED_WITHIN_S = ELECTION_WITHIN_S


def _settled(admin: Any, op: str, topic: str, count: int, within_s: float = SETTLED_WITHIN_S) -> dict[int, Any] | None:
    """_made, asked until the brokers' metadata shows a change the controller already answered for
    (a retry refused because an attempt cut short by a controller failover did make it); each miss
    asks the next broker, as one a fault cut off from the controller may not hear of it for long."""
    def shown() -> tuple[dict[int, Any]] | None:
        made = _made(admin, op, topic, count)
        if made is None:
            admin.start_from_next_broker()
            return None
        return (made,)

    try:
        return wait_for(shown, within_s, f"admin: {op} {topic} to {count} shown in metadata", interval=0.25)[0]
    except NotReady:
        return None


class AdminFault(WindowedFault):
    name = "admin"
    needs = frozenset({caps.KIP253})

    def start(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        from chaoskit.client.admin import AdminClient

        check_params(self.name, params, {"op", "topic", "to", "by", "delay_ms", "immediate", "written_within_s",
                                         "written_records", "removed_within_s"})
        op, topic = params.get("op"), params.get("topic")
        if op not in ("expand", "shrink") or not topic:
            raise ValueError(f"admin: needs op expand|shrink and a topic, got op={op!r} topic={topic!r}")
        if ("to" in params) == ("by" in params):
            raise ValueError("admin: give exactly one of to (a partition count) or by (a change)")
        with AdminClient(self.context.cluster.bootstrap_servers) as admin:
            info = current_topic(admin, self.context.cluster, topic)
            before = info.undeleted_partition_count or len(info.partitions) - len(info.marked_for_deletion)
            count = int(params["to"]) if "to" in params else before + int(params["by"])
            if op == "shrink" and "written_within_s" in params:
                self._await_records(topic, range(count, before), float(params["written_within_s"]),
                                    int(params.get("written_records", 1)))
            if op == "expand" and "removed_within_s" in params:
                # KIP-253 grows a topic only once the partitions a shrink marked are gone
                wait_for(lambda: not current_topic(admin, self.context.cluster, topic, 2.0).marked_for_deletion,
                         float(params["removed_within_s"]),
                         f"admin: {topic}'s marked partitions removed before it grows", interval=0.5)
            change = {"process": "admin", "f": op, "topic": topic, "value": {"count": count}}
            self.record({**change, "type": "invoke"})
            try:
                modes = self._change(admin, op, topic, count, params.get("delay_ms"), bool(params.get("immediate")),
                                     before)
            except Exception as e:
                # refused outright: it did not happen; anything else (a timeout): it may have
                definite = getattr(e, "code", None) is not None and not getattr(e, "retriable", True)
                self.record({**change, "type": "fail" if definite else "info", "error": f"{type(e).__name__}: {e}"})
                raise
            self.record({**change, "type": "ok"})
            for partition, mode in sorted(modes.items()):  # KIP-694: the partitions shrink marked
                self.record({"process": "admin", "type": "ok", "f": "partition-mode", "topic": topic,
                              "partition": partition, "value": {"mode": mode.label}})
        return {"op": op, "topic": topic, "from": before, "to": count}

    def _change(self, admin: Any, op: str, topic: str, count: int, delay_ms: int | None,
                immediate: bool = False, before: int | None = None) -> dict[int, Any]:
        """Expand or shrink; KIP-694's modes of the partitions a shrink marked. A retriable refusal or
        no answer is retried from the next broker until ADMIN_RETRY_S, as Kafka's AdminClient retries
        until its API timeout (a broker whose ZooKeeper session a fault expired answers REQUEST_TIMED_OUT
        until it has a new one); a retry first looks whether the earlier attempt made the change.
        INVALID_REPLICATION_FACTOR (fewer live brokers than replicas, while a fault holds one down) is
        retried too, as an operator would once the broker is back."""
        from chaoskit.client.admin import AdminError

        refused: list[Exception] = []  # a definite refusal ends the retries at once
        tried = retried = False
        # the topic was not yet as asked: a refusal saying it is (INVALID_PARTITIONS) may answer a
        # retry -- ours, or the AdminClient's own -- of an attempt a controller failover cut short
        undone = before is not None and (before < count if op == "expand" else before > count)

        def attempt() -> tuple[dict[int, Any]] | None:
            nonlocal tried, retried
            if tried and (made := _made(admin, op, topic, count)) is not None:
                return (made,)
            retried, tried = tried, True
            try:
                if op == "expand":
                    admin.expand(topic, count)
                    return ({},)
                return (admin.shrink(topic, count, delay_ms, immediate, undeleted=before),)
            except AdminError as e:
                if not e.retriable and e.code != ErrorCode.INVALID_REPLICATION_FACTOR:
                    if (retried or undone) and e.code == ErrorCode.INVALID_PARTITIONS and \
                            (made := _settled(admin, op, topic, count)) is not None:
                        return (made,)  # refused as already done: an earlier attempt made it
                    refused.append(e)
                    return None
                admin.start_from_next_broker()
                raise
            except WireError:
                admin.start_from_next_broker()
                raise

        return retry_until_refused(attempt, refused, ADMIN_RETRY_S, f"admin: {op} {topic} to {count} partitions")[0]

    def _await_records(self, topic: str, partitions: range, timeout_s: float, records: int = 1) -> None:
        """At least `records` acknowledged records (high watermarks, summed) on the partitions the
        shrink removes, so the removal has something to lose and the keys written there have to
        go elsewhere; producers held up by another fault make this take a while. Not on every one:
        a workload's keys need not hash to each partition."""
        cluster = self.context.cluster

        def written(partition: int) -> int:
            s = cluster.partition_state(topic, partition)
            try:  # a leader another fault isolated may not know the partition yet: count the others
                return 0 if s is None or s.leader == NO_LEADER else replica_offset(cluster.brokers[s.leader],
                                                                                   topic, partition)
            except (NotReady, WireError):
                return 0

        wait_for(lambda: sum(written(p) for p in partitions) >= records, timeout_s,
                 f"{records} acknowledged records on {topic} partitions {list(partitions)} before they are removed")

    def stop(self, state: dict[str, Any]) -> None:
        return None  # an admin change is not undone; the schedule's next admin window may revert it
