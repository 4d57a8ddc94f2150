"""The `aiokafka` client: aiokafka's asyncio producer and consumer, used as its users use them.

Each worker process's client runs its own event loop on a thread of its own; an op is a coroutine
run on that loop, waited for from the worker (`send_and_wait`; `getmany` for a poll). Settings as
the other stock clients: acks=all with idempotence, the default partitioner, one group subscribed
to the topic, auto-committing, from the earliest offset, metadata refreshed every second; its
rebalance listener's callbacks are recorded as ops.
"""
from __future__ import annotations

import asyncio
import threading
from typing import Any, Coroutine

from chaoskit_plugins.clients.ops import Op, failed, ok, poll_record, wire
from chaoskit_plugins.clients.stock import METADATA_MAX_AGE_MS, StockClient

CLOSE_S = 5.0
CALL_TIMEOUT_S = 30.0  # the longest a consumer call may take (a start, a poll, a pause) before its op is unknown


class AiokafkaClient(StockClient):
    name = "aiokafka"
    library = "aiokafka"
    claims: frozenset[str] = frozenset()  # no KIP-320 position validation, no KIP-253/694 awareness

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def _run(self, coro: Coroutine[Any, Any, Any], timeout: float = CALL_TIMEOUT_S) -> Any:
        """Run `coro` on this client's loop (started on first use) and wait for it, at most `timeout`:
        then it is cancelled and TimeoutError raised (the op's outcome is unknown). aiokafka retries
        some calls for ever (a consumer's start while no coordinator answers): an op never hangs a run."""
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever, name=f"aiokafka-{self.process}",
                                            daemon=True)
            self._thread.start()
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    def send(self, op: Op) -> Op:
        from aiokafka.errors import KafkaError, KafkaTimeoutError

        try:
            if self._producer is None:
                self._producer = self._run(self._start_producer(), self.send_timeout_s)
            md = self._run(self._producer.send_and_wait(op["topic"], key=self.key_bytes(op), value=wire(op["value"])),
                           self.send_timeout_s)
        except (KafkaTimeoutError, TimeoutError) as e:
            return failed(op, e, definite=False)
        except KafkaError as e:  # refused for good (not retriable): it was not written
            return failed(op, e, definite=not e.retriable)
        except Exception as e:  # noqa: BLE001 -- anything else leaves the outcome unknown
            return failed(op, e, definite=False)
        return ok(op, partition=md.partition, offset=md.offset)

    async def _start_producer(self) -> Any:
        from aiokafka import AIOKafkaProducer

        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all", enable_idempotence=True,
                                    linger_ms=0, request_timeout_ms=10_000, metadata_max_age_ms=METADATA_MAX_AGE_MS,
                                    client_id=f"chaoskit-{self.process}")
        await producer.start()
        return producer

    def poll(self, op: Op) -> Op:
        if self._consumer is None:
            self._consumer = self._run(self._start_consumer(op["topic"]))
        batches = self._run(self._consumer.getmany(timeout_ms=self.options.get("poll_ms", 500),
                                                   max_records=self.max_records))
        records = [poll_record(r.partition, r.offset, r.key, r.value, getattr(r, "leader_epoch", None))
                   for tp in sorted(batches, key=lambda tp: tp.partition) for r in batches[tp]]
        return ok(op, value=records)

    async def _start_consumer(self, topic: str) -> Any:
        from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener

        consumer = AIOKafkaConsumer(**self.group_consumer_settings(topic))
        consumer.subscribe([topic], listener=self.recording_listener(ConsumerRebalanceListener))
        await consumer.start()
        return consumer

    def hold(self) -> None:
        """aiokafka prefetches on its loop whether or not the application consumes: pause there too."""
        super().hold()
        if self._consumer is not None:
            self._run(self._paused(True))

    def release(self) -> None:
        if self._consumer is not None:
            self._run(self._paused(False))
        super().release()

    async def _paused(self, paused: bool) -> None:
        parts = self._consumer.assignment()
        self._consumer.pause(*parts) if paused else self._consumer.resume(*parts)

    def close_consumer(self) -> None:
        self._stop(self._consumer)

    def _stop(self, part: Any) -> None:
        try:
            self._run(part.stop(), CLOSE_S)
        except Exception:  # noqa: BLE001 -- a stop that hangs on a dead broker: leave it to the loop's end
            pass

    def close_own(self) -> None:
        try:
            for part in (self._producer, self._consumer):
                if part is not None:
                    self._stop(part)
        finally:
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self._loop.stop)
                if self._thread is not None:
                    self._thread.join(CLOSE_S)
