"""The ordered-delivery client (chaoskit.client): KIP-253 producer and consumer with KIP-320
truncation handling, as a chaos client named "ordered".

One synchronous send per op (linear hashing, the undeleted count in every Produce, refusals of a
stale count re-routed); one group of consumers subscribed with both listeners. The consumer's
rebalance and key callbacks, every truncation it detects, every coordinator it finds and every
request a leader refused for its leader epoch (`epoch-refused`, KIP-320) are recorded as ops of
this process; `freeze_metadata()`/`thaw_metadata()` reach the producer and
consumer (also one made while frozen), for the freeze-client-metadata fault.

Options: `truncation_policy` "reset" (default: reset to the divergence offset, KIP-320's reset
policy) or "raise" (LogTruncationError; the client then seeks each truncated partition to its
divergence offset with the leader epoch there, which the next poll validates again),
`send_timeout_s`, `poll_ms`, `max_poll_records`, `mutations` (elements of the proposals turned off,
for `chaoskit mutate`: chaoskit.protocol.mutations), `metadata_max_age_s` (how old the metadata may
get before it is asked again; producer 5, consumer 2 by default: a topic without ordered delivery
learns of new partitions only so, as no broker refuses its stale count), and `group_per_topic`
(as every client: clients/ops.py `group_for`).
"""
from __future__ import annotations

from typing import Any

from chaoskit_plugins.clients.ops import ClientBase, Op, failed, ok, poll_record, wire

# consumer events that are ops of their own (polls and sends are recorded by the worker from the op)
RECORDED = {"on_partitions_revoked", "on_partitions_assigned", "on_partition_key_maybe_revoked",
            "on_partition_key_assigned", "truncation-detected", "coordinator", "epoch-refused", "gate-waiting",
            "gate-opened"}


class OrderedClient(ClientBase):
    name = "ordered"
    library = "chaoskit"
    claims = frozenset({"kip253-key-order", "kip253-compaction", "kip320-truncation-detection",
                        "kip694-mode-awareness"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._frozen = False

    # --- the stale-metadata fault --------------------------------------------------------------
    def freeze_metadata(self) -> None:
        self._frozen = True
        for c in (self._producer, self._consumer):
            if c is not None:
                c.freeze_metadata()

    def thaw_metadata(self) -> None:
        self._frozen = False
        for c in (self._producer, self._consumer):
            if c is not None:
                c.thaw_metadata()

    def _made(self, client: Any) -> Any:
        if self._frozen:
            client.freeze_metadata()
        return client

    def _record_event(self, event: dict[str, Any]) -> None:
        if event.get("f") in RECORDED:
            self.test.record({**event, "process": self.process})

    # --- ops -------------------------------------------------------------------------------
    def send(self, op: Op) -> Op:
        from chaoskit.client.producer import OrderedProducer, ProduceError

        if self._producer is None:
            self._producer = self._made(OrderedProducer(
                self.bootstrap, client_id=f"chaoskit-{self.process}", request_timeout_ms=10_000,
                delivery_timeout_s=self.send_timeout_s, mutations=self.options.get("mutations", ()),
                metadata_max_age_s=float(self.options.get("metadata_max_age_s", 5.0))))
            self._producer.events.subscribe(self._record_event)
        try:
            md = self._producer.send(op["topic"], key=self.key_bytes(op),
                                     value=wire(op["value"]))
        except ProduceError as e:
            return failed(op, e, definite=e.definite)
        except Exception as e:  # noqa: BLE001 -- anything else leaves the outcome unknown
            return failed(op, e, definite=False)
        return ok(op, partition=md.partition, offset=md.offset, leader_epoch=md.leader_epoch)

    def poll(self, op: Op) -> Op:
        from chaoskit.client.consumer import OrderedConsumer
        from chaoskit.client.truncation import LogTruncationError

        if self._consumer is None:
            self._consumer = self._made(OrderedConsumer(
                self.bootstrap, group_id=self.group_for(op["topic"]), client_id=f"chaoskit-{self.process}",
                auto_offset_reset="earliest", session_timeout_ms=10_000, heartbeat_interval_ms=500,
                max_poll_records=self.max_records, truncation_policy=self.options.get("truncation_policy", "reset"),
                mutations=self.options.get("mutations", ()),
                metadata_max_age_s=float(self.options.get("metadata_max_age_s", 2.0))))
            self._consumer.events.subscribe(self._record_event)
            # the callbacks are recorded from the consumer's events, so no listener objects are needed
            self._consumer.subscribe([op["topic"]])
        try:
            records = self._consumer.poll(timeout_ms=self.options.get("poll_ms", 500))
        except LogTruncationError as e:  # recorded (type info) from the events; the application moves on from there
            for tp, divergence in e.truncation_offsets.items():
                self._consumer.seek(tp, divergence)
            return ok(op, value=[])
        return ok(op, value=[poll_record(r.partition, r.offset, r.key, r.value, r.leader_epoch) for r in records])

    def close(self, test: Any) -> None:
        self.close_reader()
        if self._producer is not None:
            self._producer.close()
        if self._consumer is not None:
            self._consumer.close()

