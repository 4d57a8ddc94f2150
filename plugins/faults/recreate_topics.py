"""`recreate-topics`: topics deleted and created again by a stock AdminClient (kafka-python's
KafkaAdminClient), as an operator's tooling would, while the run's other faults play.

Aimed at internal coordinator topics: Apache Kafka's broker deletes them on request, and a broker
that then created one with another partition count would place its keys by another modulus, a
way round KAFKA-20029's guardrail; chaoskit's broker creates one only with its configured count.
Params: `topics`, {name: count to ask for}; `delete` (true: each topic is deleted first, and its
deletion waited for up to RETRY_S).

It records an op per topic (process "admin", f "recreate"): invoke, then ok, or fail with the
broker's error. The window's start raises, naming the refused topics, when any was refused, so a
suite says which profile must refuse the step (`refused=`) and reads the per-topic ops for the rest.
"""
from __future__ import annotations

from typing import Any, Mapping

from chaoskit.cluster import capabilities as caps
from chaoskit.cluster.waiting import NotReady, wait_for
from chaoskit.nemesis.base import WindowedFault, check_params
from chaoskit_plugins.faults.expand_batch import has_partitions, topic_counts

RETRY_S = 30.0
# non-retriable answers an operator asks again while the run's faults play: a deleted topic lingers
# until every replica deleted it (Kafka's deletion is asynchronous too), and a broker restarting
# leaves fewer live brokers than the replicas asked
ASKED_AGAIN = frozenset({"TopicAlreadyExistsError", "InvalidReplicationFactorError"})


class RecreateTopicsFault(WindowedFault):
    name = "recreate-topics"
    needs = frozenset({caps.GUARDRAIL})

    def start(self, target: str, params: Mapping[str, Any], pick: int) -> dict[str, Any]:
        from kafka.admin import KafkaAdminClient

        check_params(self.name, params, {"topics", "delete"})
        topics = topic_counts(self.name, params)
        admin = KafkaAdminClient(bootstrap_servers=self.context.cluster.bootstrap_servers,
                                 client_id="chaoskit-recreate-topics", request_timeout_ms=10_000)
        try:
            if params.get("delete", True):
                self._delete(admin, sorted(topics))
            refused = self._create(admin, dict(topics))
        finally:
            admin.close()
        if refused:
            raise RuntimeError(f"{self.name}: refused {', '.join(f'{t} ({w})' for t, w in sorted(refused.items()))}")
        return {"topics": dict(topics)}

    def _delete(self, admin: Any, names: list[str]) -> None:
        """Each topic deleted (one already gone counts), its deletion waited for."""
        admin.delete_topics(names, raise_errors=False)

        def gone() -> bool:
            return not set(names) & set(admin.list_topics())
        try:
            wait_for(gone, RETRY_S, f"{', '.join(names)} deleted", interval=0.5)
        except NotReady:
            pass  # a creation then answers TOPIC_ALREADY_EXISTS, recorded as such

    def _create(self, admin: Any, topics: dict[str, int]) -> dict[str, str]:
        from kafka import errors as Errors
        from kafka.admin import NewTopic

        for topic, count in topics.items():
            self._record({"type": "invoke", "topic": topic, "value": {"count": count}})
        replicas = min(3, len(self.context.cluster.brokers))
        outcome: dict[str, tuple[int | None, str | None]] = {}
        pending = dict(topics)
        cut_short: set[str] = set()  # topics an attempt may have made before its answer timed out

        def attempt() -> bool:
            answer = admin.create_topics([NewTopic(t, c, replicas) for t, c in pending.items()], raise_errors=False)
            for t in answer["topics"]:
                name, error = t["name"], Errors.for_code(t["error_code"])
                outcome[name] = (t["error_code"], t.get("error_message"))
                if error.retriable:  # REQUEST_TIMED_OUT, say: the attempt may complete in the background
                    cut_short.add(name)
                    continue
                if error is Errors.TopicAlreadyExistsError and name in cut_short \
                        and has_partitions(admin, name, pending[name]):
                    outcome[name] = (0, None)  # made by our own earlier attempt
                elif error.__name__ in ASKED_AGAIN:
                    continue
                pending.pop(name, None)
            return not pending
        try:
            wait_for(attempt, RETRY_S, f"{', '.join(sorted(topics))} created again", interval=0.5)
        except NotReady:
            pass  # still pending: recorded with its last answer
        refused = {}
        for topic, count in topics.items():
            code, message = outcome.get(topic, (None, "no answer"))
            if code == 0:
                self._record({"type": "ok", "topic": topic, "value": {"count": count}})
                continue
            why = f"{Errors.for_code(code).__name__}: {message}" if code is not None else message
            refused[topic] = why
            self._record({"type": "fail" if code is not None else "info", "topic": topic, "value": {"count": count},
                          "error": why})
        return refused

    def stop(self, state: dict[str, Any]) -> None:
        return None  # a topic made is not taken back

    def _record(self, op: dict[str, Any]) -> None:
        self.record({"process": "admin", "f": "recreate", **op})
