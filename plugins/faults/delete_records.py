"""`delete-records`: an operator drains the partitions a shrink marked, with DeleteRecords.

KIP-253 removes a marked partition once it is empty (log start = log end). Waiting for retention is
one way there; the other is what an operator does once the consumers are done with a partition:
delete its records up to what the group has committed. This fault does that while the run's other
faults play: it waits (up to `marked_within_s`, default 10) for partitions marked for deletion,
as a broker that agrees with ZooKeeper shows them, then (up to `committed_within_s`, default 20)
until the run's consumer group has committed each marked partition of `topic` to its high
watermark (read with kafka-python's KafkaAdminClient, as an operator's tooling would), then
deletes each one's records before the committed offset. It never deletes what the group has not committed, so nothing unread is lost.

A partition the group has not committed to its end in time is left as it is (named in the op's
`resolved.waiting`): its records stay until the group reads them. The start raises when no
partition was marked, so a suite whose step found nothing to drain does not pass for one that did.
A partition whose leader is away (killed, cut off, moving) is retried for up to 10 s. It records a
`delete-records` op (process "admin") per partition deleted: ok with the new log start, or info with
the error (the deletion may have happened).

It then watches ZooKeeper's assignment of the topic until the run ends, and records a
`partition-removed` op (process "admin", ok) the moment a marked partition leaves it. The controller
writes that before it tells any broker, so the op comes before any client could have seen the
partition gone: the checks take it as the removal's time (history/incarnations.py), for a key that
went on in another partition once the one it was in was removed.
"""
from __future__ import annotations

import threading
from typing import Any, Mapping

from chaoskit.cluster import capabilities as caps
from chaoskit.cluster.waiting import NotReady, wait_for
from chaoskit.nemesis.base import WindowedFault, check_params
from chaoskit_plugins.faults.cluster_faults import current_topic, replica_offset, retry_until_refused
from chaoskit.protocol.zk_layout import NO_LEADER, TopicAssignment, topic_path

RETRY_S = 10.0  # how long one partition's DeleteRecords is retried while its leader is away


class DeleteRecordsFault(WindowedFault):
    name = "delete-records"
    needs = frozenset({caps.KIP253})

    def setup(self, test: Any) -> None:
        super().setup(test)
        self._ended = threading.Event()  # this run's removal watches stop recording once it is set

    def teardown(self, test: Any) -> None:
        self._ended.set()
        super().teardown(test)

    def start(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        from chaoskit.client.admin import AdminClient

        check_params(self.name, params, {"topic", "committed_within_s", "marked_within_s"})
        topic = params.get("topic")
        if not topic:
            raise ValueError(f"{self.name}: needs the topic whose marked partitions it drains")
        within = float(params.get("committed_within_s", 20))
        cluster = self.context.cluster
        with AdminClient(cluster.bootstrap_servers) as admin:
            # the shrink before it may still be waiting for records to remove (its written_within_s)
            try:
                marked = wait_for(lambda: current_topic(admin, cluster, topic, 2.0).marked_for_deletion,
                                  float(params.get("marked_within_s", 10)),
                                  f"a partition of {topic} marked for deletion", interval=0.5)
            except NotReady:
                raise RuntimeError(f"{self.name}: {topic} has no partition marked for deletion to drain") from None
            committed, why = self._await_commits(topic, marked, within)
            deleted: dict[int, int] = {}
            for partition, offset in sorted(committed.items()):
                op = {"process": "admin", "f": self.name, "topic": topic, "partition": partition,
                      "value": {"before": offset}}
                self.record({**op, "type": "invoke"})
                try:
                    deleted[partition] = self._delete(admin, topic, partition, offset)
                except Exception as e:  # noqa: BLE001 -- recorded; the others are still drained
                    self.record({**op, "type": "info", "error": f"{type(e).__name__}: {e}"})
                    continue
                self.record({**op, "type": "ok", "offset": deleted[partition]})
        self._watch_removal(topic, marked)
        waiting = [p for p in marked if p not in committed]
        return {"topic": topic, "marked": marked, "deleted": deleted, "waiting": waiting,
                **({"why": why} if waiting else {})}

    def _watch_removal(self, topic: str, partitions: list[int]) -> None:
        """A `partition-removed` op for each of `partitions` once ZooKeeper's assignment of `topic`
        no longer has it (at once for one already gone); the watch ends when all are recorded, the
        topic itself is gone, or the run ends."""
        from kazoo.recipe.watchers import DataWatch

        view, ended, left = self.context.cluster.view, self._ended, set(partitions)
        if view is None:
            return

        def changed(data: bytes | None, _stat: Any) -> bool:
            if ended.is_set() or data is None:
                return False
            for p in sorted(left - set(TopicAssignment.decode(topic, data).partitions)):
                self.record({"process": "admin", "type": "ok", "f": "partition-removed", "topic": topic,
                             "partition": p})
                left.discard(p)
            return bool(left)

        DataWatch(view.client, topic_path(topic), changed)

    @staticmethod
    def _delete(admin: Any, topic: str, partition: int, offset: int) -> int:
        """DeleteRecords on one partition, retried while its leader is away (killed, cut off, moving:
        a closed connection or a retriable error); the new log start. A definite refusal raises."""
        from chaoskit.client.admin import AdminError
        from chaoskit.protocol.wire_client import WireError

        refused: list[Exception] = []

        def attempt() -> tuple[int] | None:
            try:
                return (admin.delete_records(topic, {partition: offset})[partition],)
            except AdminError as e:
                if not e.retriable:
                    refused.append(e)
                    return None
            except WireError:
                pass
            admin.metadata([topic])  # the leader may have moved: ask again before the next try
            return None

        return retry_until_refused(attempt, refused, RETRY_S, f"DeleteRecords on {topic}-{partition}")[0]

    def _await_commits(self, topic: str, partitions: list[int], timeout_s: float) -> tuple[dict[int, int], str]:
        """{partition: committed offset} for each partition the group committed to its high
        watermark within `timeout_s` (all of them, or those done when the time ran out), and why
        the others were not."""
        from kafka import TopicPartition
        from kafka.admin import KafkaAdminClient

        group, cluster = self.context.group_id, self.context.cluster
        done: dict[int, int] = {}
        admin: list[Any] = []  # kafka-python caches the coordinator it found: a new client after an error

        def drained() -> bool:
            if not admin:
                admin.append(KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers,
                                              client_id="chaoskit-delete-records", request_timeout_ms=5_000))
            try:
                offsets = admin[0].list_group_offsets({group: [TopicPartition(topic, p) for p in partitions]})[group]
            except Exception:
                admin.pop().close()
                raise
            for p in partitions:
                state = cluster.partition_state(topic, p)
                meta = offsets.get(TopicPartition(topic, p))
                if state is None or state.leader == NO_LEADER or meta is None or meta.offset < 0:
                    continue
                if meta.offset >= replica_offset(cluster.brokers[state.leader], topic, p):
                    done[p] = meta.offset
            return len(done) == len(partitions)

        why = ""
        try:
            wait_for(drained, timeout_s, f"group {group} committing {topic} {partitions} to their ends", interval=0.5)
        except NotReady as e:
            why = str(e).splitlines()[0]  # drain what is done; the rest waits for its readers
        finally:
            for a in admin:
                a.close()
        return done, why

    def stop(self, state: dict[str, Any]) -> None:
        return None  # deleted records are gone
