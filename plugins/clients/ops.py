"""What every built-in client shares: values on the wire, poll records, callbacks and outcomes.

A send's value travels as its compact JSON (docs/history.md: a list `[producer, key, seq]`), and
a delivered record's value is parsed back, so a send and its deliveries carry the same value.
An exception becomes `fail` only when it proves the record was not written (the broker refused
it for good); timeouts, lost connections and exhausted retries are `info`: it may have been.
"""
from __future__ import annotations

import json
import threading
from typing import Any, Callable, Iterable

from chaoskit.history.schema import Op
from chaoskit.roles import LiveRun

Record = Callable[[Op], Any]
DEFAULT_MAX_POLL_RECORDS = 50
SEND_TIMEOUT_S = 30.0  # a send not acknowledged by then is `info`


def wire(value: Any) -> bytes:
    return value.encode() if isinstance(value, str) else json.dumps(value, separators=(",", ":")).encode()


def unwire(data: bytes | None) -> Any:
    if data is None:
        return None
    text = data.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def key_text(key: bytes | str | None) -> str | None:
    return key.decode("utf-8", "replace") if isinstance(key, bytes) else key


def poll_record(partition: int, offset: int, key: bytes | None, value: bytes | None,
                leader_epoch: int | None) -> list[Any]:
    """[partition, offset, key, value, leader_epoch]: the history's poll record."""
    epoch = leader_epoch if leader_epoch is not None and leader_epoch >= 0 else None
    return [partition, offset, key_text(key), unwire(value), epoch]


def ok(op: Op, **fields: Any) -> Op:
    """A completed op. An acknowledged send whose answer names no offset (-1: a broker that found the
    batch a duplicate of one it already has may say so) was written at an offset nobody knows: None,
    never -1 (two such sends are not two values at one offset)."""
    if isinstance(fields.get("offset"), int) and fields["offset"] < 0:
        fields["offset"] = None
    return {**op, "type": "ok", **fields}


def failed(op: Op, error: BaseException, definite: bool) -> Op:
    return {**op, "type": "fail" if definite else "info", "error": f"{type(error).__name__}: {error}"}


def callback(record: Record, process: int, f: str, partitions: Iterable[Any]) -> None:
    """Record a rebalance callback as a single `ok` op of this process (no invoke)."""
    value = sorted([tp.topic, tp.partition] if hasattr(tp, "topic") else list(tp) for tp in partitions)
    record({"process": process, "type": "ok", "f": f, "value": value})


HOLD_WAIT_S = 1.0  # a held consumer's poll waits this long for its release, then returns nothing


class ClientBase:
    """One worker process's client: `open` copies the options and binds the process; the
    producer or consumer is made on first use (a process only ever sends or only polls).

    Faults that stage a client's state can `hold()` it: its application stops consuming (polls
    return nothing, its library is not asked) until `release()`, as a consumer busy elsewhere
    would; `hold_sends()` pauses its producing the same way; `restart_consumer()` closes its
    library's consumer (committing, as closing does) so that the next poll starts a new one from the
    group's committed offsets; `delivered_to(topic, partition)` is the highest offset it delivered."""

    name = "client"
    library = ""  # the distribution it drives (reports print its version)
    claims: frozenset[str] = frozenset()  # the guarantees it implements (chaoskit.run.guarantees)

    def __init__(self, **options: Any) -> None:
        self.options = options
        self.process: int | None = None
        self.test: LiveRun | None = None
        self._producer: Any = None  # made by the first send
        self._consumer: Any = None  # made by the first poll
        self._released = threading.Event()
        self._released.set()
        self._sending = threading.Event()
        self._sending.set()
        self._library = threading.Lock()  # one thread at a time in the consumer's library (none is thread-safe)
        self._delivered: dict[tuple[str, int], int] = {}
        self._reader: Any = None  # reads the group's committed offsets (op `committed`), made on first use
        self.produces = self.consumes = False  # has this process sent (polled) yet: its role, once known

    def open(self, test: LiveRun, process: int) -> ClientBase:
        client = type(self)(**self.options)
        client.test, client.process = test, process
        return client

    def setup(self, test: LiveRun) -> None:
        pass

    def teardown(self, test: LiveRun) -> None:
        pass

    def invoke(self, test: LiveRun, op: Op) -> Op:
        if op["f"] == "send":
            self.produces = True
            self._sending.wait()  # held: the application produces nothing until released
            return self.send(op)
        if op["f"] == "poll":
            self.consumes = True
            if not self._released.is_set() and not self._released.wait(HOLD_WAIT_S):
                return ok(op, value=[])  # held: the application consumed nothing
            with self._library:
                done = self.poll(op)
            for r in done.get("value") or () if done.get("type") == "ok" else ():
                key = (op["topic"], r[0])
                self._delivered[key] = max(r[1], self._delivered.get(key, -1))
            return done
        if op["f"] == "committed":  # the group's committed offsets, read from the broker (clients/committed.py)
            from chaoskit_plugins.clients.committed import CommittedReader

            if self._reader is None:
                self._reader = CommittedReader(self.bootstrap, f"chaoskit-{self.process}-committed")
            try:
                return ok(op, value=self._reader.read(op["topic"], self.group_for(op["topic"])))
            except Exception as e:  # noqa: BLE001 -- a read that failed says nothing of the commits
                return failed(op, e, definite=True)
        raise ValueError(f"{self.name} client: no op {op['f']!r} (it does send, poll and committed)")

    def close_reader(self) -> None:
        if self._reader is not None:
            self._reader.close()

    # --- staged consumer states --------------------------------------------------------------
    def hold(self) -> None:
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    def hold_sends(self) -> None:
        self._sending.clear()

    def release_sends(self) -> None:
        self._sending.set()

    def restart_consumer(self) -> None:
        """Close the library's consumer once no poll is in it; the next poll starts a new one."""
        with self._library:
            if self._consumer is not None:
                try:
                    self.close_consumer()
                finally:
                    self._consumer = None

    def close_consumer(self) -> None:
        """Close the library's consumer (each client knows how its library commits and leaves)."""
        self._consumer.close()

    def delivered_to(self, topic: str, partition: int) -> int:
        """The highest offset of the partition this client delivered (-1: none)."""
        return self._delivered.get((topic, partition), -1)

    def record(self, f: str, partitions: Iterable[Any]) -> None:
        assert self.process is not None
        callback(self.test.record, self.process, f, partitions)

    @staticmethod
    def key_bytes(op: Op) -> bytes | None:
        return wire(op["key"]) if op.get("key") else None

    @property
    def send_timeout_s(self) -> float:
        return float(self.options.get("send_timeout_s", SEND_TIMEOUT_S))

    @property
    def max_records(self) -> int:
        """Records one poll returns at most (option `max_poll_records`): small keeps consumers
        realistic, a poll at a time, rather than swallowing the whole backlog at once."""
        return int(self.options.get("max_poll_records", DEFAULT_MAX_POLL_RECORDS))

    @property
    def bootstrap(self) -> str:
        """The brokers a client starts from: all of them; with option `spread`, one, by the process's
        number, so that where each broker names only itself in Metadata (tansu) the processes spread
        over the brokers instead of all writing through the first."""
        cluster = self.test.cluster
        if self.options.get("spread"):
            ids = sorted(cluster.brokers)
            return "%s:%d" % cluster.client_address(ids[self.process % len(ids)])
        return cluster.bootstrap_servers

    @property
    def group(self) -> str:
        return self.test.group_id

    def group_for(self, topic: str) -> str:
        """The consumer group reading `topic`: the run's, or with option `group_per_topic` one per
        topic (`<run's group>-<topic>`), so consumers of different topics share no group."""
        return f"{self.group}-{topic}" if self.options.get("group_per_topic") else self.group

    def send(self, op: Op) -> Op:
        raise NotImplementedError

    def poll(self, op: Op) -> Op:
        raise NotImplementedError
