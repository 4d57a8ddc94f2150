"""Event hooks: every client action a checker needs, as history-op-shaped dicts.

    producer.events.subscribe(lambda event: history.append(event))

Event names and fields are the history schema (docs/client.md): `send` invoke/ok/fail/info,
`poll` ok with [[partition, offset, key, value, leader_epoch], ...], the four rebalance/key
callbacks, `truncation-detected` and `coordinator`. Callbacks run on the client's own thread, in
the order the actions happen; a failing callback is logged and never breaks the client.
"""
from __future__ import annotations

import json
import logging
import threading
from typing import Any, Callable

Event = dict[str, Any]
Callback = Callable[[Event], Any]

log = logging.getLogger(__name__)


class EventHooks:
    def __init__(self) -> None:
        self._callbacks: list[Callback] = []
        self._lock = threading.Lock()

    def subscribe(self, callback: Callback) -> Callable[[], None]:
        """Call `callback(event)` for every event from now on; returns a function that unsubscribes."""
        if not callable(callback):
            raise TypeError(f"an event hook must be callable (callback(event: dict)), got {callback!r}")
        with self._lock:
            self._callbacks.append(callback)
        return lambda: self._remove(callback)

    def _remove(self, callback: Callback) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    @property
    def active(self) -> bool:
        """Is anyone listening? (Lets a client skip building costly events.)"""
        return bool(self._callbacks)

    def emit(self, event: Event) -> None:
        with self._lock:
            callbacks = list(self._callbacks)
        for cb in callbacks:
            try:
                cb(dict(event))
            except Exception:  # a checker's bug must not change what the client does
                log.exception("event hook %r failed on %s", cb, event.get("f"))

    def callback_op(self, f: str, partitions: Any) -> None:
        """A rebalance or key callback as one `ok` op with value = sorted [[topic, partition], ...]."""
        self.emit({"f": f, "type": "ok", "value": sorted([tp.topic, tp.partition] for tp in partitions)})


def history_value(data: Any) -> Any:
    """A key or value as the history holds it: bytes are decoded, and parsed when they are JSON."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        return data
    text = bytes(data).decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def history_key(key: Any) -> Any:
    """A key as the history holds it: text (never parsed, so key "12" stays a string)."""
    return bytes(key).decode("utf-8", "replace") if isinstance(key, (bytes, bytearray, memoryview)) else key
