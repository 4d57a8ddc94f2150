"""`expand-batch`: one CreatePartitions request for several topics, sent by a stock AdminClient.

KAFKA-20029 says existing admin clients need no change: a batch that names an internal coordinator
topic beside ordinary ones gets INVALID_REQUEST for the internal topic while the others grow. This
fault sends such a batch the way an operator's tooling does, with kafka-python's KafkaAdminClient,
while the run's other faults play. Params: `topics`, {name: new partition count}.

It records an `expand` op per topic (process "admin"): invoke, then ok, or fail with the broker's
error. A retriable answer (a broker between sessions, a moved controller) is retried for the topics
it named until RETRY_S; a retry that finds a topic already at its count (the earlier attempt made
it) counts it as grown. The window's start raises, naming the refused topics, when any was refused,
so a suite says which profile must refuse the step (`refused=`) and reads the per-topic ops for the rest.
"""
from __future__ import annotations

from typing import Any, Mapping

from chaoskit.cluster.waiting import NotReady, wait_for
from chaoskit.nemesis.base import WindowedFault, check_params
from chaoskit_plugins.faults.cluster_faults import SETTLED_WITHIN_S

RETRY_S = 30.0


class ExpandBatchFault(WindowedFault):
    name = "expand-batch"

    def start(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        check_params(self.name, params, {"topics"})
        topics = params.get("topics")
        if not isinstance(topics, Mapping) or not topics or \
                not all(isinstance(n, str) and isinstance(c, int) and c > 0 for n, c in topics.items()):
            raise ValueError(f"{self.name}: topics must map topic names to new partition counts, got {topics!r}")
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
        if refused:
            raise RuntimeError(f"{self.name}: refused {', '.join(f'{t} ({w})' for t, w in sorted(refused.items()))}")
        return {"topics": dict(topics)}

    def stop(self, state: dict[str, Any]) -> None:
        return None  # partitions are never taken back

    def _record(self, op: dict[str, Any]) -> None:
        self.record({"process": "admin", "f": "expand", **op})


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
                                           and _grown(admin, result.name, pending[result.name])):
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


def _grown(admin: Any, topic: str, count: int, within_s: float = SETTLED_WITHIN_S) -> bool:
    """Does the topic have `count` partitions? Asked until metadata shows it (a broker's may lag
    the controller that refused a retry because an attempt cut short had already grown it)."""
    try:
        return wait_for(lambda: _partitions(admin, topic) >= count, within_s, f"{topic} at {count} partitions",
                        interval=0.25)
    except NotReady:
        return False
