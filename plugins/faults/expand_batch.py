"""`expand-batch`: one CreatePartitions request for several topics, sent by a stock AdminClient.

KAFKA-20029 says existing admin clients need no change: a batch that names an internal coordinator
topic beside ordinary ones gets INVALID_REQUEST for the internal topic while the others grow. This
fault sends such a batch the way an operator's tooling does, with kafka-python's KafkaAdminClient,
while the run's other faults play. Params: `topics`, {name: new partition count}; `restart`
(true: after the batch, one broker, chosen with the window's pick, restarts cleanly and so reads
`__consumer_offsets`' count anew, as brokers rolled after an operator's change do); `probe_s`
(seconds: every broker is asked FindCoordinator for groups g0..g7 once before the batch and again
for that long after it and the restart, recorded as the coordinator-probe workload records them,
so the `coordinator-split` check sees which partition each broker places a group on).

It records an `expand` op per topic (process "admin"): invoke, then ok, or fail with the broker's
error. A retriable answer (a broker between sessions, a moved controller) is retried for the topics
it named until RETRY_S; a retry that finds a topic already at its count (the earlier attempt made
it) counts it as grown. The window's start raises, naming the refused topics, when any was refused,
so a suite says which profile must refuse the step (`refused=`) and reads the per-topic ops for the rest.
"""
from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any, Mapping

from chaoskit.cluster import capabilities as caps
from chaoskit.cluster.waiting import NotReady, wait_for
from chaoskit.nemesis.base import WindowedFault, check_params
from chaoskit_plugins.clients.probe import ProbeClient
from chaoskit_plugins.faults.cluster_faults import SETTLED_WITHIN_S

RETRY_S = 30.0
PROBE_GROUPS = 8  # groups on 8 partitions of 5 or more: most land elsewhere when the count changes


def topic_counts(fault: str, params: Mapping[str, Any]) -> Mapping[str, int]:
    """A fault's `topics` param, {name: partition count}; ValueError saying the form."""
    topics = params.get("topics")
    if not isinstance(topics, Mapping) or not topics or \
            not all(isinstance(n, str) and isinstance(c, int) and c > 0 for n, c in topics.items()):
        raise ValueError(f"{fault}: topics must map topic names to partition counts, got {topics!r}")
    return topics


class ExpandBatchFault(WindowedFault):
    name = "expand-batch"
    needs = frozenset({caps.GUARDRAIL})

    def start(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        check_params(self.name, params, {"topics", "restart", "probe_s"})
        topics = topic_counts(self.name, params)
        probe_s = params.get("probe_s", 0)
        if not isinstance(probe_s, (int, float)) or probe_s < 0:
            raise ValueError(f"{self.name}: probe_s must be a number of seconds >= 0, got {probe_s!r}")
        probe = Prober(self) if probe_s else None
        try:
            if probe:
                probe.ask_all()  # each broker's placement before the batch: the count it read then
            refused = self._expand(topics)
            if params.get("restart"):
                node = self.context.node(self.context.resolve("random-broker", pick))
                if node.running:  # one another fault holds down restarts at that fault's end
                    node.stop()
                    node.start(clean=False, wait=True)
            if probe:
                probe.ask_for(probe_s)
        finally:
            if probe:
                probe.close()
        if refused:
            raise RuntimeError(f"{self.name}: refused {', '.join(f'{t} ({w})' for t, w in sorted(refused.items()))}")
        return {"topics": dict(topics)}

    def _expand(self, topics: Mapping[str, int]) -> dict[str, str]:
        """The batch, sent and recorded: the topics refused, with why."""
        from kafka.admin import KafkaAdminClient

        for topic, count in topics.items():
            self._record({"type": "invoke", "topic": topic, "value": {"count": count}})
        admin = KafkaAdminClient(bootstrap_servers=self.context.cluster.bootstrap_servers,
                                 client_id="chaoskit-expand-batch", request_timeout_ms=10_000)
        try:
            outcome = _send(admin, dict(topics))
        finally:
            admin.close()
        refused = {t: why for t, why in outcome.items() if why is not None}
        for topic, count in topics.items():
            why = outcome.get(topic, "no answer")
            self._record({"type": "ok" if why is None else ("info" if topic not in outcome else "fail"),
                          "topic": topic, "value": {"count": count}, **({} if why is None else {"error": why})})
        return refused

    def stop(self, state: dict[str, Any]) -> None:
        return None  # partitions are never taken back

    def _record(self, op: dict[str, Any]) -> None:
        self.record({"process": "admin", "f": "expand", **op})


class Prober:
    """FindCoordinator asked of every broker for PROBE_GROUPS groups, through the probe client (which
    names the partition behind each answer), each question and answer recorded as process "probe"."""

    def __init__(self, fault: ExpandBatchFault) -> None:
        self.fault, self.client = fault, ProbeClient()
        self.test = SimpleNamespace(cluster=fault.context.cluster)
        self.brokers = sorted(fault.context.cluster.brokers)

    def ask_all(self) -> None:
        unreachable: set[int] = set()  # asked no more this round: each question would wait out its timeout
        for group in range(PROBE_GROUPS):
            for broker in self.brokers:
                if broker in unreachable:
                    continue
                op = {"process": "probe", "f": "coordinator", "node": broker, "value": {"group": f"g{group}"}}
                self.fault.record({**op, "type": "invoke"})
                answer = self.client.invoke(self.test, op)
                self.fault.record(answer)
                if answer["type"] == "info":
                    unreachable.add(broker)

    def ask_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while True:
            self.ask_all()
            if time.monotonic() >= end:
                return

    def close(self) -> None:
        self.client.close(self.test)


def _send(admin: Any, topics: dict[str, int]) -> dict[str, str | None]:
    """Each topic's outcome: None (grown) or the broker's refusal ("ErrorName: message"); a topic
    still retriable at RETRY_S is left out (its outcome is unknown)."""
    from kafka import errors as Errors

    outcome: dict[str, str | None] = {}
    pending = dict(topics)

    def attempt() -> bool:
        answer = admin.create_partitions(pending, raise_errors=False)
        for result in answer.results:
            error = Errors.for_code(result.error_code)
            if error is Errors.NoError or (error is Errors.InvalidPartitionsError
                                           and has_partitions(admin, result.name, pending[result.name])):
                outcome[result.name] = None
            elif not error.retriable:
                outcome[result.name] = f"{error.__name__}: {result.error_message}"
            else:
                continue
            pending.pop(result.name)
        return not pending

    try:
        wait_for(attempt, RETRY_S, f"CreatePartitions of {sorted(topics)}", interval=0.5)
    except NotReady:
        pass  # the topics still pending are left out: their outcome is unknown
    return outcome


def _partitions(admin: Any, topic: str) -> int:
    described = admin.describe_topics([topic])
    return len(described[0]["partitions"]) if described else 0


def has_partitions(admin: Any, topic: str, count: int, within_s: float = SETTLED_WITHIN_S) -> bool:
    """Does the topic have `count` partitions? Asked until metadata shows it (a broker's may lag
    the controller that refused a retry because an attempt cut short had already grown it)."""
    try:
        return wait_for(lambda: _partitions(admin, topic) >= count, within_s, f"{topic} at {count} partitions",
                        interval=0.25)
    except NotReady:
        return False
