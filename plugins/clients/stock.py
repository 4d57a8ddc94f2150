"""The stock clients, the baseline the proposals are measured against: kafka-python 3.0 and
librdkafka (through confluent-kafka), used as their users use them.

Producers: acks=all and idempotence on, default partitioner (modulo of murmur2 over the
partitions they see), one synchronous send per op. Consumers: one group, subscribed to the
topic, auto-committing, starting from the earliest offset; their rebalance callbacks are
recorded as `on_partitions_revoked` / `on_partitions_assigned` ops.

One setting differs from the defaults: metadata is refreshed every second, not every five
minutes, so clients see a partition change within a chaos run's length (with the default they
would go on with the old count for longer than the run lasts, and the run would test nothing).

Option `producer` ("kafka-python" or "librdkafka") sends through the other library: a story that
judges one library's consumers needs producers that go on writing where the other's would stop
(librdkafka's idempotent producer fails for good at the sequence gap an unclean election leaves).
"""
from __future__ import annotations

from typing import Any

from chaoskit.run.client_logs import LIBRDKAFKA
from chaoskit_plugins.clients.ops import ClientBase, Op, failed, ok, poll_record, wire

METADATA_MAX_AGE_MS = 1000


class StockClient(ClientBase):
    """A stock library's client; sends go through another's when the `producer` option names it."""

    _sender: ClientBase | None = None

    def invoke(self, test: Any, op: Op) -> Op:
        other = self.options.get("producer", self.name)
        if op["f"] == "send" and other != self.name:
            if self._sender is None:
                from chaoskit.pluginmanager import lookup

                options = {k: v for k, v in self.options.items() if k != "producer"}
                self._sender = lookup("clients", other)(**options).open(test, self.process)
            self.produces = True
            self._sending.wait()  # held sends (hold_sends) hold the other library's too
            return self._sender.invoke(test, op)
        return super().invoke(test, op)

    def close(self, test: Any) -> None:
        try:
            if self._sender is not None:
                self._sender.close(test)
            self.close_reader()
        finally:
            self.close_own()

    def close_own(self) -> None:
        raise NotImplementedError

    def recording_listener(self, base: type) -> Any:
        """A rebalance listener of the library's class `base` that records each revoke and assignment."""
        client = self

        class Listener(base):  # type: ignore[misc, valid-type]
            def on_partitions_revoked(self, revoked: Any) -> None:
                client.record("on_partitions_revoked", revoked)

            def on_partitions_assigned(self, assigned: Any) -> None:
                client.record("on_partitions_assigned", assigned)

        return Listener()

    def group_consumer_settings(self, topic: str) -> dict[str, Any]:
        """The group consumer's settings in the Java client's names (kafka-python and aiokafka share them)."""
        return dict(bootstrap_servers=self.bootstrap, group_id=self.group_for(topic), auto_offset_reset="earliest",
                    enable_auto_commit=True, auto_commit_interval_ms=500, session_timeout_ms=10_000,
                    heartbeat_interval_ms=1_000, metadata_max_age_ms=METADATA_MAX_AGE_MS,
                    client_id=f"chaoskit-{self.process}")


class KafkaPythonClient(StockClient):
    name = "kafka-python"
    library = "kafka-python"
    claims = frozenset({"kip320-truncation-detection"})  # 3.0 validates positions with OffsetsForLeaderEpoch

    def send(self, op: Op) -> Op:
        from kafka import KafkaProducer
        from kafka.errors import BrokerResponseError, KafkaTimeoutError

        if self._producer is None:
            self._producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", enable_idempotence=True,
                                           linger_ms=0, request_timeout_ms=10_000, max_block_ms=10_000,
                                           metadata_max_age_ms=METADATA_MAX_AGE_MS,
                                           client_id=f"chaoskit-{self.process}")
        try:
            md = self._producer.send(op["topic"], key=self.key_bytes(op),
                                     value=wire(op["value"])).get(self.send_timeout_s)
        except KafkaTimeoutError as e:
            return failed(op, e, definite=False)
        except BrokerResponseError as e:  # refused for good (not retriable): it was not written
            return failed(op, e, definite=not e.retriable)
        except Exception as e:  # noqa: BLE001 -- anything else leaves the outcome unknown
            return failed(op, e, definite=False)
        return ok(op, partition=md.partition, offset=md.offset)

    def poll(self, op: Op) -> Op:
        from kafka import ConsumerRebalanceListener, KafkaConsumer

        if self._consumer is None:
            self._consumer = KafkaConsumer(**self.group_consumer_settings(op["topic"]),
                                           max_poll_records=self.max_records)
            self._consumer.subscribe([op["topic"]], listener=self.recording_listener(ConsumerRebalanceListener))
        batches = self._consumer.poll(timeout_ms=self.options.get("poll_ms", 500))
        records = [poll_record(r.partition, r.offset, r.key, r.value, r.leader_epoch)
                   for tp in sorted(batches, key=lambda tp: tp.partition) for r in batches[tp]]
        return ok(op, value=records)

    def close_own(self) -> None:
        try:
            if self._producer is not None:
                _close_producer(self._producer)
        finally:
            if self._consumer is not None:
                self.close_consumer()

    def close_consumer(self) -> None:
        self._consumer.close(timeout_ms=5_000)  # bounded: its last commit may go to a coordinator now gone


def _close_producer(producer: Any) -> None:
    """kafka-python flushes before it closes and raises while a send is still pending (to a leader
    cut off, a partition deleted), leaving the producer open: its __del__ then retries at some
    garbage collection and raises inside whatever runs then (on Python 3.11.7, an ast.parse of
    pytest's assertion rewriting fails with "AST constructor recursion depth mismatch"). Those
    sends were recorded `info` when they timed out, so they are failed here and the close goes on."""
    from kafka.errors import KafkaTimeoutError

    try:
        producer.close(5)
    except KafkaTimeoutError:
        producer._accumulator.abort_incomplete_batches()  # no public way to drop pending sends
        producer.close(0)


class LibrdkafkaClient(StockClient):
    name = "librdkafka"
    library = "confluent-kafka"
    claims = frozenset({"kip320-truncation-detection"})  # validates positions since librdkafka 2.1

    def send(self, op: Op) -> Op:
        from confluent_kafka import KafkaException, Producer

        if self._producer is None:
            self._producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True,
                                       "linger.ms": 0, "message.timeout.ms": 20_000,
                                       "topic.metadata.refresh.interval.ms": METADATA_MAX_AGE_MS,
                                       "client.id": f"chaoskit-{self.process}", "logger": LIBRDKAFKA})
        outcome: dict[str, Any] = {}

        def delivered(err: Any, msg: Any) -> None:
            outcome["err"], outcome["msg"] = err, msg

        try:
            self._producer.produce(op["topic"], key=self.key_bytes(op),
                                   value=wire(op["value"]), on_delivery=delivered)
            self._producer.flush(self.send_timeout_s)
        except (KafkaException, BufferError) as e:
            return failed(op, e, definite=False)
        if "err" not in outcome:
            return failed(op, TimeoutError("no delivery report in time"), definite=False)
        err, msg = outcome["err"], outcome["msg"]
        if err is not None:  # librdkafka says whether a retry could have helped; fatal ones were refused
            return {**op, "type": "fail" if not err.retriable() and not err.txn_requires_abort()
                    and err.code() > 0 else "info", "error": f"{err.name()}: {err.str()}"}
        return ok(op, partition=msg.partition(), offset=msg.offset(), leader_epoch=msg.leader_epoch())

    def poll(self, op: Op) -> Op:
        from confluent_kafka import Consumer

        if self._consumer is None:
            self._consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group_for(op["topic"]),
                                       "auto.offset.reset": "earliest", "enable.auto.commit": True,
                                       "auto.commit.interval.ms": 500, "session.timeout.ms": 10_000,
                                       "topic.metadata.refresh.interval.ms": METADATA_MAX_AGE_MS,
                                       "client.id": f"chaoskit-{self.process}", "logger": LIBRDKAFKA})
            self._consumer.subscribe(
                [op["topic"]],
                on_assign=lambda _c, parts: self.record("on_partitions_assigned", parts),
                on_revoke=lambda _c, parts: self.record("on_partitions_revoked", parts))
        messages = self._consumer.consume(num_messages=self.max_records, timeout=self.options.get("poll_ms", 500) / 1000)
        for m in messages:  # what the library says went wrong is recorded, never judged: checks read deliveries
            if m.error() is not None:
                self.test.record({"process": self.process, "type": "info", "f": "consumer-error",
                                  "topic": m.topic(), "partition": m.partition(), "offset": m.offset(),
                                  "error": f"{m.error().name()}: {m.error().str()}"})
        records = [poll_record(m.partition(), m.offset(), m.key(), m.value(), m.leader_epoch())
                   for m in messages if m.error() is None]
        return ok(op, value=records)

    def hold(self) -> None:
        """librdkafka fetches in its own threads whether or not the application consumes: a held
        consumer also pauses its partitions, as an application that stops consuming would."""
        super().hold()
        if self._consumer is not None:
            self._consumer.pause(self._consumer.assignment())

    def release(self) -> None:
        if self._consumer is not None:
            self._consumer.resume(self._consumer.assignment())
        super().release()

    def close_own(self) -> None:
        if self._producer is not None:
            self._producer.flush(5)
        if self._consumer is not None:
            self._consumer.close()



