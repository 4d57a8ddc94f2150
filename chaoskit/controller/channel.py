"""The controller -> broker channel: one sender thread and queue per live broker (Kafka's
ControllerChannelManager).

Requests to one broker go out in the order they were queued; brokers are served in parallel, so a
slow or unreachable broker delays only its own queue. A request is retried (with a growing pause)
until the broker answers or the controller drops the broker because it died or re-registered.
Each request names the broker's registration it is for (its broker epoch, as Kafka's KIP-380), so a
broker restarted under the same id before the controller noticed refuses what was queued for the
one before it.
"""
from __future__ import annotations

import copy
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from kafka.protocol.api_message import ApiMessage

from chaoskit.protocol.errors import ErrorCode
from chaoskit.protocol.wire_client import WireClient, WireError

log = logging.getLogger("chaoskit.controller.channel")

OnResponse = Callable[[int, Any], None]
_STOP = object()


class BrokerSender:
    """Delivers one broker's queued requests, one at a time, retrying until answered or stopped."""

    def __init__(self, broker_id: int, address: tuple[str, int], timeout_s: float, client_id: str,
                 broker_epoch: int = -1) -> None:
        self.broker_id, self.address, self.broker_epoch = broker_id, address, broker_epoch
        self._client = WireClient(address[0], address[1], timeout=timeout_s, client_id=client_id)
        self._queue: queue.Queue[Any] = queue.Queue()
        self._stopped = threading.Event()
        self._pending = 0
        self._done = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=f"send-to-broker-{broker_id}", daemon=True)
        self._thread.start()

    def send(self, request: ApiMessage, on_response: OnResponse | None = None, version: int = 0) -> None:
        with self._done:
            self._pending += 1
        self._queue.put((request, on_response, version))

    def stop(self) -> None:
        self._stopped.set()
        self._queue.put(_STOP)

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def wait_idle(self, timeout: float) -> bool:
        """True once everything queued so far was answered (for tests and orderly shutdown)."""
        with self._done:
            return self._done.wait_for(lambda: self._pending == 0, timeout)

    def _run(self) -> None:
        try:
            while not self._stopped.is_set():
                item = self._queue.get()
                if item is _STOP:
                    break
                request, on_response, version = item
                try:
                    response = self._deliver(request, version)
                except Exception:  # a bug encoding one request must not stop the broker's queue
                    log.exception("sending %s to broker %d", type(request).__name__, self.broker_id)
                    response = None
                if response is not None and on_response is not None:
                    try:
                        on_response(self.broker_id, response)
                    except Exception:  # a callback bug must not kill the broker's queue
                        log.exception("handling %s's answer from broker %d", type(request).__name__, self.broker_id)
                with self._done:
                    self._pending -= 1
                    self._done.notify_all()
        finally:
            self._client.close()

    def _deliver(self, request: ApiMessage, version: int) -> Any | None:
        name, pause = type(request).__name__, 0.05
        if hasattr(request, "broker_epoch"):  # LeaderAndIsr, UpdateMetadata, StopReplica; not ListOffsets
            request = copy.copy(request)  # one request may be queued to several brokers
            request.broker_epoch = self.broker_epoch
        while not self._stopped.is_set():
            try:
                response = self._client.request(request, version=version)
            except WireError as e:
                log.info("%s to broker %d at %s:%d: %s; retrying in %.2fs", name, self.broker_id,
                         *self.address, e, pause)
                self._stopped.wait(pause)
                pause = min(pause * 2, 1.0)
                continue
            code = getattr(response, "error_code", 0)
            if code == ErrorCode.STALE_CONTROLLER_EPOCH:
                log.warning("broker %d refused %s: it has seen a newer controller epoch", self.broker_id, name)
            elif code == ErrorCode.STALE_BROKER_EPOCH:  # a new registration of it gets the whole state
                log.info("broker %d refused %s for its registration %d: a later one answered", self.broker_id,
                         name, self.broker_epoch)
            elif code:
                log.warning("broker %d answered %s with error %d", self.broker_id, name, code)
            return response
        return None


class ControllerChannel:
    """The set of senders, one per live broker."""

    def __init__(self, controller_id: int, timeout_s: float) -> None:
        self.controller_id, self.timeout_s = controller_id, timeout_s
        self._senders: dict[int, BrokerSender] = {}
        self._lock = threading.Lock()

    def add_broker(self, broker_id: int, address: tuple[str, int], broker_epoch: int = -1) -> None:
        """A sender for the broker's registration `broker_epoch` (its znode's czxid; -1 unchecked)."""
        with self._lock:
            old = self._senders.pop(broker_id, None)
            if old is not None:
                old.stop()
            self._senders[broker_id] = BrokerSender(broker_id, address, self.timeout_s,
                                                    f"controller-{self.controller_id}", broker_epoch)

    def remove_broker(self, broker_id: int) -> None:
        with self._lock:
            sender = self._senders.pop(broker_id, None)
        if sender is not None:
            sender.stop()

    def brokers(self) -> list[int]:
        with self._lock:
            return sorted(self._senders)

    def send(self, broker_id: int, request: ApiMessage, on_response: OnResponse | None = None,
             version: int = 0) -> None:
        with self._lock:
            sender = self._senders.get(broker_id)
        if sender is None:
            log.debug("no sender for broker %d (not live); dropping %s", broker_id, type(request).__name__)
            return
        sender.send(request, on_response, version)

    def wait_idle(self, timeout: float) -> bool:
        with self._lock:
            senders = list(self._senders.values())
        return all(s.wait_idle(timeout) for s in senders)

    def stop(self) -> None:
        with self._lock:
            senders, self._senders = list(self._senders.values()), {}
        for s in senders:
            s.stop()
        for s in senders:
            s.join(2.0)
